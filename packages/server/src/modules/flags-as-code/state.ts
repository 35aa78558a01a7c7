/**
 * A project's state as the flags-as-code document describes it (docs/flags-as-code.md): read from
 * the database, turned into the document (export), made from a checked document (import), and
 * written as deterministic text: every object's keys sorted, arrays in their meaningful order.
 */
import type { Condition } from '@guidon/engine';
import { stringify as yamlStringify } from 'yaml';
import type { Db } from '../../db/database.js';
import { listEnvironments } from '../environments/environments.repository.js';
import { toFlag, type EveryoneElse } from '../flags/flags.repository.js';
import { toRule, type RuleFields } from '../flags/rules.repository.js';
import type { Variant } from '../flags/variants.js';
import { requireProject } from '../projects/projects.repository.js';
import { listSegments, type Usage } from '../segments/segments.repository.js';
import { DOCUMENT_VERSION, type GuidonDocument } from './document.schemas.js';

export interface Prerequisite {
  flag_key: string;
  enabled?: boolean;
  variants?: string[];
}

/** A rule as the document writes it: the API's fields, rule_value null for a conditions rule. */
export type RuleState = Omit<RuleFields, 'rule_value'> & { rule_value: string | null };

export interface FlagState {
  /** The stored flag's (current state only). */
  id?: string;
  name: string;
  description: string | null;
  enabled: boolean;
  rollout_percentage: number;
  everyone_else: EveryoneElse;
  bucketing_key: string | null;
  variants: Variant[];
  off_variant: string | null;
  prerequisites: Prerequisite[];
  rules: RuleState[];
}

/** A flag's own columns that the document carries (its key is its identity, its id none of the document's). */
export const STORED_FLAG_FIELDS = ['name', 'description', 'enabled', 'rollout_percentage', 'everyone_else', 'bucketing_key', 'variants', 'off_variant'] as const;
/** The fields of a flag in one environment that an import compares and sets. */
export const FLAG_FIELDS = [...STORED_FLAG_FIELDS, 'prerequisites', 'rules'] as const;

/** Those of the fields that the object has. */
export const pick = <T extends object, K extends keyof T>(value: T, fields: readonly K[]) => Object.fromEntries(fields.map((field) => [field, value[field]])) as Pick<T, K>;
export type FlagField = (typeof FLAG_FIELDS)[number];

export interface EnvironmentState {
  id?: string;
  key: string;
  name: string;
  approvals_required: number;
}

export interface SegmentState {
  id?: string;
  key: string;
  name: string;
  description: string | null;
  conditions: Condition[];
  /** Current state only: the flags whose rules name it. */
  used_by?: Usage[];
}

export interface ProjectState {
  project: { name: string; description: string | null };
  /** By key. */
  environments: EnvironmentState[];
  /** By key. */
  segments: SegmentState[];
  /** Environment key → flag key → the flag there. */
  flags: Map<string, Map<string, FlagState>>;
}

const byKey = <T extends { key: string }>(a: T, b: T) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0);

/** The project as it is: five reads, no per-flag queries. */
export async function readProjectState(db: Db, projectId: string): Promise<ProjectState> {
  const [project, environments, segments, flagRows, ruleRows] = await Promise.all([
    requireProject(db, projectId),
    listEnvironments(db, projectId),
    listSegments(db, projectId),
    db.selectFrom('flags').selectAll().where('project_id', '=', projectId).execute(),
    db
      .selectFrom('rules')
      .innerJoin('flags', 'flags.id', 'rules.flag_id')
      .select(['rules.id', 'rules.flag_id', 'rules.rule_type', 'rules.rule_value', 'rules.conditions', 'rules.enabled', 'rules.priority', 'rules.rollout_percentage', 'rules.serve', 'rules.variant', 'rules.created_at', 'rules.updated_at'])
      .where('flags.project_id', '=', projectId)
      .orderBy('rules.priority', 'desc')
      .orderBy('rules.created_at')
      .orderBy('rules.id')
      .execute(),
  ]);
  const envKeyOf = new Map(environments.map((env) => [env.id, env.key]));
  const flags = new Map<string, Map<string, FlagState>>(environments.map((env) => [env.key, new Map()]));
  const flagById = new Map<string, FlagState>();
  for (const row of flagRows) {
    const flag = toFlag(row);
    const state: FlagState = { id: flag.id, ...pick(flag, STORED_FLAG_FIELDS), prerequisites: flag.prerequisites, rules: [] };
    flags.get(envKeyOf.get(flag.environment_id)!)?.set(flag.key, state);
    flagById.set(flag.id, state);
  }
  for (const row of ruleRows) {
    const { id: _id, flag_id, created_at: _c, updated_at: _u, ...rule } = toRule(row);
    flagById.get(flag_id)?.rules.push(rule);
  }
  return {
    project: { name: project.name, description: project.description },
    environments: environments.map((env) => ({ id: env.id, key: env.key, name: env.name, approvals_required: env.approvals_required })).sort(byKey),
    segments: segments.map(({ id, key, name, description, conditions, used_by }) => ({ id, key, name, description, conditions, used_by })).sort(byKey),
    flags,
  };
}

/** A flag's fields in one environment as the document writes them (all of them, no ids). */
function flagEntry(flag: FlagState) {
  return {
    enabled: flag.enabled,
    rollout_percentage: flag.rollout_percentage,
    everyone_else: flag.everyone_else,
    bucketing_key: flag.bucketing_key,
    variants: flag.variants,
    off_variant: flag.off_variant,
    prerequisites: flag.prerequisites,
    rules: flag.rules,
  };
}

/**
 * The document of a state. A flag's name and description are the ones of its first environment
 * by key; an environment where they differ says so in its own entry, so nothing is lost.
 */
export function toDocument(state: ProjectState): GuidonDocument {
  const flagKeys = new Set<string>();
  for (const flags of state.flags.values()) for (const key of flags.keys()) flagKeys.add(key);
  const envKeys = state.environments.map((env) => env.key);
  const flags = [...flagKeys].sort().map((key) => {
    let first: FlagState | null = null;
    const environments: Record<string, Record<string, unknown>> = {};
    for (const envKey of envKeys) {
      const flag = state.flags.get(envKey)?.get(key);
      if (!flag) continue;
      first ??= flag;
      environments[envKey] = {
        ...(flag.name !== first.name ? { name: flag.name } : {}),
        ...(flag.description !== first.description ? { description: flag.description } : {}),
        ...flagEntry(flag),
      };
    }
    return { key, name: first!.name, description: first!.description, environments };
  });
  return {
    guidon: DOCUMENT_VERSION,
    project: state.project,
    environments: state.environments.map(({ key, name, approvals_required }) => ({ key, name, approvals_required })),
    segments: state.segments.map(({ key, name, description, conditions }) => ({ key, name, description, conditions })),
    flags,
  } as GuidonDocument;
}

/** The value with every object's keys sorted (arrays keep their order): the same state, the same bytes. */
export function canonical(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(canonical);
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(
      Object.keys(value)
        .sort()
        .map((key) => [key, canonical((value as Record<string, unknown>)[key])]),
    );
  }
  return value;
}

export type DocumentFormat = 'json' | 'yaml';

/**
 * The document as text. YAML is written for YAML 1.1 readers too: a string such as `off` or `yes`
 * is quoted, so no reader takes it for a boolean.
 */
export function documentText(document: GuidonDocument, format: DocumentFormat): string {
  const sorted = canonical(document);
  if (format === 'json') return `${JSON.stringify(sorted, null, 2)}\n`;
  return yamlStringify(sorted, { version: '1.1', lineWidth: 0, aliasDuplicateObjects: false });
}

/** Whether two values are the same JSON, whatever the order of object members. */
export const sameJson = (a: unknown, b: unknown): boolean => JSON.stringify(canonical(a)) === JSON.stringify(canonical(b));
