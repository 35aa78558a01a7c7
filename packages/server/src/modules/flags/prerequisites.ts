/**
 * A flag's prerequisites as the API shows them and the flags.prerequisites column stores them
 * (docs/prerequisites.md), and the checks every save runs: the engine's prerequisitesProblem over
 * the environment's flags as they will be, and the 409s of a flag that others name.
 */
import { prerequisitesProblem, type PrerequisiteDefinition, type PrerequisiteFlag } from '@guidon/engine';
import type { Db } from '../../db/database.js';
import { Conflict, Invalid } from '../../errors.js';
import { toVariants, type Variant } from './variants.js';

export interface Prerequisite {
  flag_key: string;
  enabled: boolean;
  variants?: string[];
}

/** As a request sends it (the schema has checked the shape). */
export interface PrerequisiteBody {
  flag_key: string;
  enabled?: boolean;
  variants?: string[] | null;
}

/** The column as read: text on SQLite, already parsed by pg for jsonb; null (none) is []. */
export function toPrerequisites(stored: string | object[] | null | undefined): Prerequisite[] {
  if (stored === null || stored === undefined) return [];
  return (typeof stored === 'string' ? JSON.parse(stored) : stored) as Prerequisite[];
}

export const storedPrerequisites = (list: readonly Prerequisite[]): string | null => (list.length === 0 ? null : JSON.stringify(list));

/** As stored: enabled written out, variants only when given. */
export function normalizedPrerequisites(sent: readonly PrerequisiteBody[]): Prerequisite[] {
  return sent.map((p) => {
    const kept: Prerequisite = { flag_key: p.flag_key, enabled: p.enabled !== false };
    if (p.variants !== undefined && p.variants !== null) kept.variants = [...p.variants];
    return kept;
  });
}

/** For the engine: flagKey instead of flag_key. */
export const toDefinitions = (list: readonly Prerequisite[]): PrerequisiteDefinition[] => list.map((p) => ({ flagKey: p.flag_key, enabled: p.enabled, variants: p.variants ?? null }));

/** The column as the engine takes it; null: none. */
export function toPrerequisiteDefinitions(stored: string | object[] | null): PrerequisiteDefinition[] | null {
  const list = toPrerequisites(stored);
  return list.length === 0 ? null : toDefinitions(list);
}

interface Graph {
  key: string;
  variants: readonly Pick<Variant, 'key'>[];
  prerequisites: readonly Prerequisite[];
}

const asEngine = (flag: Graph): PrerequisiteFlag => ({ key: flag.key, variants: flag.variants, prerequisites: toDefinitions(flag.prerequisites) });

/** The environment's flags as the checks read them: key, variant keys and prerequisites. */
export async function environmentGraph(db: Db, envId: string): Promise<(Graph & { id: string })[]> {
  const rows = await db.selectFrom('flags').select(['id', 'key', 'variants', 'prerequisites']).where('environment_id', '=', envId).execute();
  return rows.map((row) => ({ id: row.id, key: row.key, variants: toVariants(row.variants), prerequisites: toPrerequisites(row.prerequisites) }));
}

/**
 * Invalid unless `flag` (as it will be saved; `id` null when new) fits among the environment's
 * other flags: no self, no cycle, no chain deeper than 5, variants its parents have; and the flags
 * that name it still name variants it has.
 */
export async function checkPrerequisites(db: Db, envId: string, flag: Graph & { id: string | null }): Promise<void> {
  const others = (await environmentGraph(db, envId)).filter((other) => other.id !== flag.id);
  const problem = prerequisitesProblem(asEngine(flag), others.map(asEngine));
  if (problem !== null) throw new Invalid(problem);
  const keys = new Set(flag.variants.map((variant) => variant.key));
  for (const other of others) {
    for (const p of other.prerequisites) {
      if (p.flag_key !== flag.key || p.variants === undefined) continue;
      const gone = p.variants.find((key) => !keys.has(key));
      if (gone !== undefined) throw new Invalid(`Flag ${other.key} needs variant "${gone}" of ${flag.key} (prerequisites of ${other.key}): change that prerequisite first`);
    }
  }
}

/** The keys of the environment's flags that name `key` as a prerequisite. */
export async function dependentsOf(db: Db, envId: string, key: string): Promise<string[]> {
  const graph = await environmentGraph(db, envId);
  return graph.filter((flag) => flag.key !== key && flag.prerequisites.some((p) => p.flag_key === key)).map((flag) => flag.key).sort();
}

/** Conflict when other flags name `key`: deleting it or changing its key would leave them needing a flag that is not there. */
export async function refuseIfNamed(db: Db, envId: string, key: string, what: 'deleted' | 're-keyed'): Promise<void> {
  const dependents = await dependentsOf(db, envId, key);
  if (dependents.length === 0) return;
  const action = what === 'deleted' ? 'deleted' : 'given another key';
  throw new Conflict(`Flag ${key} cannot be ${action}: ${dependents.join(', ')} ${dependents.length === 1 ? 'names it' : 'name it'} as a prerequisite (remove it from their prerequisites first)`);
}
