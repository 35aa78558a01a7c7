/**
 * A flag's prerequisites as the API shows them and the flags.prerequisites column stores them
 * (docs/prerequisites.md), and the checks every save runs: the engine's prerequisiteProblems over
 * the environment's flags as they will be, and the 409s of a flag that others name.
 */
import { prerequisiteProblems, type PrerequisiteDefinition, type PrerequisiteFlag } from '@guidon/engine';
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

/** The keys of the other flags of `graph` that name `key` as a prerequisite, sorted. */
const namersOf = (graph: readonly Graph[], key: string): string[] =>
  graph.filter((flag) => flag.key !== key && flag.prerequisites.some((p) => p.flag_key === key)).map((flag) => flag.key).sort();

/** "Flag k cannot be deleted: …": a key that other flags name, removed. */
function namedRefusal(key: string, dependents: readonly string[], what: 'deleted' | 're-keyed'): Conflict {
  const action = what === 'deleted' ? 'deleted' : 'given another key';
  return new Conflict(`Flag ${key} cannot be ${action}: ${dependents.join(', ')} ${dependents.length === 1 ? 'names it' : 'name it'} as a prerequisite (remove it from their prerequisites first)`);
}

/**
 * The refusal, if any, of an environment's flags as a write leaves them (`graph`): a key it
 * removed (`removed`: deleted, or a flag's old key) that flags still name (409); a flag it saved
 * (`saved`) whose prerequisites name itself, close a cycle, chain deeper than 5 or name variants
 * their parent lacks; or a saved flag without a variant that flags naming it need (400). Linear in
 * the environment's flags and links.
 */
function graphRefusal(graph: readonly Graph[], saved: readonly string[], removed: ReadonlyMap<string, 'deleted' | 're-keyed'>): Conflict | Invalid | null {
  const present = new Set(graph.map((flag) => flag.key));
  for (const [key, what] of removed) {
    if (present.has(key)) continue;
    const dependents = namersOf(graph, key);
    if (dependents.length > 0) return namedRefusal(key, dependents, what);
  }
  const [problem] = prerequisiteProblems(graph.map(asEngine), saved).values();
  if (problem !== undefined) return new Invalid(problem);
  const savedFlags = new Map(graph.filter((flag) => saved.includes(flag.key)).map((flag) => [flag.key, new Set(flag.variants.map((variant) => variant.key))]));
  for (const other of graph) {
    for (const p of other.prerequisites) {
      const keys = savedFlags.get(p.flag_key);
      if (keys === undefined || p.variants === undefined || other.key === p.flag_key) continue;
      const gone = p.variants.find((key) => !keys.has(key));
      if (gone !== undefined) return new Invalid(`Flag ${other.key} needs variant "${gone}" of ${p.flag_key} (prerequisites of ${other.key}): change that prerequisite first`);
    }
  }
  return null;
}

/**
 * Invalid unless `flag` (as it will be saved; `id` null when new) fits among the environment's
 * other flags: no self, no cycle, no chain deeper than 5, variants its parents have; and the flags
 * that name it still name variants it has. In a batch (`batch` given: an import), the check waits
 * for the batch's end, over the environment as the whole batch leaves it.
 */
export async function checkPrerequisites(db: Db, envId: string, flag: Graph & { id: string | null }, batch?: PrerequisiteBatch): Promise<void> {
  if (batch) return batch.saved(envId, flag.key);
  const others = (await environmentGraph(db, envId)).filter((other) => other.id !== flag.id);
  const refusal = graphRefusal([...others, flag], [flag.key], new Map());
  if (refusal !== null) throw refusal;
}

/** The keys of the environment's flags that name `key` as a prerequisite. */
export async function dependentsOf(db: Db, envId: string, key: string): Promise<string[]> {
  return namersOf(await environmentGraph(db, envId), key);
}

/** Conflict when other flags name `key`: deleting it or changing its key would leave them needing a flag that is not there. In a batch, checked at its end: a flag that still names it then. */
export async function refuseIfNamed(db: Db, envId: string, key: string, what: 'deleted' | 're-keyed', batch?: PrerequisiteBatch): Promise<void> {
  if (batch) return batch.removed(envId, key, what);
  const dependents = await dependentsOf(db, envId, key);
  if (dependents.length > 0) throw namedRefusal(key, dependents, what);
}

/**
 * The prerequisite checks of many writes in one transaction (an import), run once per environment
 * when they are done (`check`), over the environment as they leave it: what the checks of each
 * write would refuse in the end state is refused, in time linear in the environment's flags
 * instead of reading them all at every write.
 */
export class PrerequisiteBatch {
  private readonly environments = new Map<string, { saved: Set<string>; removed: Map<string, 'deleted' | 're-keyed'> }>();

  private of(envId: string) {
    let entry = this.environments.get(envId);
    if (!entry) this.environments.set(envId, (entry = { saved: new Set(), removed: new Map() }));
    return entry;
  }

  saved(envId: string, key: string): void {
    this.of(envId).saved.add(key);
  }

  removed(envId: string, key: string, what: 'deleted' | 're-keyed'): void {
    this.of(envId).removed.set(key, what);
  }

  /** Throws the first refusal of any environment, in the order they were written to. */
  async check(db: Db): Promise<void> {
    for (const [envId, { saved, removed }] of this.environments) {
      const refusal = graphRefusal(await environmentGraph(db, envId), [...saved], removed);
      if (refusal !== null) throw refusal;
    }
    this.environments.clear();
  }
}
