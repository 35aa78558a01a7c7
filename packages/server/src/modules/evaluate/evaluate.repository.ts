import { toPrerequisiteDefinitions } from '../flags/prerequisites.js';
import type { Condition, FlagDefinition, RuleDefinition, RuleType, VariantDefinition } from '@guidon/engine';
import type { Db } from '../../db/database.js';
import { toBool } from '../../db/values.js';
import { toConditions } from '../segments/segments.repository.js';

export interface StoredEnvironment {
  id: string;
  key: string;
  flags: StoredFlag[];
}

export interface StoredFlag extends FlagDefinition {
  id: string;
  /** Evaluation order: highest priority first, ties oldest first. */
  rules: RuleDefinition[];
}

/** Everything evaluate needs of the project that owns an SDK key, in five queries; null for an unknown key. */
export async function loadProjectBySdkKey(db: Db, sdkKey: string): Promise<{ id: string; revision: number; environments: StoredEnvironment[]; segments: Map<string, Condition[]> } | null> {
  const project = await db.selectFrom('projects').select(['id', 'revision']).where('sdk_key', '=', sdkKey).executeTakeFirst();
  if (!project) return null;

  const [environments, flags, rules, segments] = await Promise.all([
    db.selectFrom('environments').select(['id', 'key']).where('project_id', '=', project.id).execute(),
    db
      .selectFrom('flags')
      .select(['id', 'environment_id', 'key', 'enabled', 'rollout_percentage', 'everyone_else', 'variants', 'off_variant', 'prerequisites', 'bucketing_key'])
      .where('project_id', '=', project.id)
      .orderBy('created_at')
      .orderBy('id')
      .execute(),
    db
      .selectFrom('rules')
      .innerJoin('flags', 'flags.id', 'rules.flag_id')
      .select(['rules.flag_id', 'rules.rule_type', 'rules.rule_value', 'rules.enabled', 'rules.conditions', 'rules.rollout_percentage', 'rules.serve', 'rules.variant'])
      .where('flags.project_id', '=', project.id)
      .orderBy('rules.priority', 'desc')
      .orderBy('rules.created_at')
      .orderBy('rules.id')
      .execute(),
    db.selectFrom('segments').select(['key', 'conditions']).where('project_id', '=', project.id).execute(),
  ]);

  const byEnvironment = new Map<string, StoredEnvironment>(environments.map((env) => [env.id, { ...env, flags: [] }]));
  const byFlag = new Map<string, StoredFlag>();
  for (const row of flags) {
    const flag: StoredFlag = {
      id: row.id,
      key: row.key,
      enabled: toBool(row.enabled),
      rolloutPercentage: row.rollout_percentage,
      everyoneElse: row.everyone_else === 'off' ? 'off' : 'rollout',
      rules: [],
      variants: toVariants(row.variants),
      offVariant: row.off_variant,
      prerequisites: toPrerequisiteDefinitions(row.prerequisites),
      bucketingKey: row.bucketing_key,
    };
    byFlag.set(row.id, flag);
    byEnvironment.get(row.environment_id)?.flags.push(flag);
  }
  for (const rule of rules) {
    byFlag.get(rule.flag_id)?.rules.push({
      type: rule.rule_type as RuleType,
      value: rule.rule_value,
      enabled: toBool(rule.enabled),
      conditions: toConditions(rule.conditions),
      rolloutPercentage: rule.rollout_percentage,
      serve: toBool(rule.serve),
      variant: rule.variant,
    });
  }
  return {
    id: project.id,
    revision: Number(project.revision),
    environments: [...byEnvironment.values()],
    segments: new Map(segments.map((segment) => [segment.key, toConditions(segment.conditions) ?? []])),
  };
}

/** A flag's stored variants (JSON text on SQLite, parsed jsonb on PostgreSQL); null: none. */
export function toVariants(value: string | object[] | null): VariantDefinition[] | null {
  if (value === null) return null;
  const variants = (typeof value === 'string' ? JSON.parse(value) : value) as VariantDefinition[];
  return variants.length === 0 ? null : variants;
}

/** The project's current SDK key; null when the project no longer exists. */
export async function currentSdkKey(db: Db, projectId: string): Promise<string | null> {
  const row = await db.selectFrom('projects').select('sdk_key').where('id', '=', projectId).executeTakeFirst();
  return row?.sdk_key ?? null;
}
