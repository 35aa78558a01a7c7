import type { Db } from '../../db/database.js';
import { conflictOnDuplicate } from '../../db/errors.js';
import { newId, nowIso, toBool, toIso } from '../../db/values.js';
import { Conflict, Invalid } from '../../errors.js';
import { listEnvironments } from '../environments/environments.repository.js';
import { toFlag, type EveryoneElse } from './flags.repository.js';
import { storedVariants, toVariants, type Variant } from './variants.js';
import { checkPrerequisites, environmentGraph, storedPrerequisites, toPrerequisites, type Prerequisite } from './prerequisites.js';

/**
 * Every flag key of the project with its state in each environment (docs/api.md): four reads,
 * no per-flag queries. last_evaluated_at comes from the hourly counts, so it is the start of
 * the latest hour with an evaluation.
 */
export async function listProjectFlags(db: Db, projectId: string) {
  const environments = await listEnvironments(db, projectId);
  const flags = await db
    .selectFrom('flags')
    .select(['id', 'environment_id', 'key', 'name', 'enabled', 'rollout_percentage', 'variants', 'off_variant', 'prerequisites', 'updated_at'])
    .where('project_id', '=', projectId)
    .orderBy('key')
    .execute();
  const ruleCounts = await db
    .selectFrom('rules')
    .innerJoin('flags', 'flags.id', 'rules.flag_id')
    .select(['rules.flag_id', (eb) => eb.fn.countAll<number | string>().as('count')])
    .where('flags.project_id', '=', projectId)
    .groupBy('rules.flag_id')
    .execute();
  const lastHours = await db
    .selectFrom('evaluation_counts')
    .innerJoin('flags', 'flags.id', 'evaluation_counts.flag_id')
    .select(['evaluation_counts.flag_id', (eb) => eb.fn.max('evaluation_counts.hour_start').as('last')])
    .where('flags.project_id', '=', projectId)
    .groupBy('evaluation_counts.flag_id')
    .execute();
  const rulesOf = new Map(ruleCounts.map((row) => [row.flag_id, Number(row.count)]));
  const lastOf = new Map(lastHours.map((row) => [row.flag_id, row.last === null ? null : toIso(row.last)]));
  const envKeyOf = new Map(environments.map((env) => [env.id, env.key]));
  const envOrder = new Map(environments.map((env, i) => [env.id, i]));

  const byKey = new Map<string, { key: string; name: string; nameFrom: number; environments: Record<string, unknown> }>();
  for (const flag of flags) {
    const order = envOrder.get(flag.environment_id) ?? Infinity;
    let entry = byKey.get(flag.key);
    if (!entry) byKey.set(flag.key, (entry = { key: flag.key, name: flag.name, nameFrom: order, environments: {} }));
    if (order < entry.nameFrom) Object.assign(entry, { name: flag.name, nameFrom: order });
    entry.environments[envKeyOf.get(flag.environment_id) ?? flag.environment_id] = {
      flag_id: flag.id,
      enabled: toBool(flag.enabled),
      rollout_percentage: flag.rollout_percentage,
      rules_count: rulesOf.get(flag.id) ?? 0,
      last_evaluated_at: lastOf.get(flag.id) ?? null,
      // The distribution, not the values (up to 50 × 8 KiB each): those are on the flag itself.
      variants: toVariants(flag.variants).map(({ key, weight }) => ({ key, weight })),
      off_variant: flag.off_variant,
      prerequisites: toPrerequisites(flag.prerequisites),
      updated_at: toIso(flag.updated_at),
    };
  }
  return [...byKey.values()].map(({ key, name, environments: states }) => ({ key, name, environments: states }));
}

interface CopySource {
  id: string;
  environment_id: string;
  key: string;
  name: string;
  description: string | null;
  enabled: boolean;
  rollout_percentage: number;
  everyone_else: EveryoneElse;
  variants: Variant[];
  off_variant: string | null;
  bucketing_key: string | null;
  prerequisites: Prerequisite[];
}

/**
 * Copies the flag (its variants and off_variant too) and its rules (same order, new ids, each with its variant) into another environment of its project,
 * inside the caller's transaction (docs/api.md). With overwrite, a flag with the same key there is replaced
 * in place: its id and history stay, its rules are replaced (`replaced` is it as it was).
 */
export async function copyFlag(trx: Db, source: CopySource, target: { id: string; project_id: string }, overwrite: boolean) {
  if (target.id === source.environment_id) throw new Invalid('The target environment is the one the flag is in');
  {
    // Its prerequisites name flags of the target by key: each must be there (docs/prerequisites.md).
    const there = new Set((await environmentGraph(trx, target.id)).map((flag) => flag.key));
    const missing = source.prerequisites.map((p) => p.flag_key).filter((key) => !there.has(key));
    if (missing.length > 0) throw new Conflict(`Flag ${source.key} needs ${missing.join(', ')}, which the target environment does not have: create or copy ${missing.length === 1 ? 'it' : 'them'} there first`);
    const rules = await trx
      .selectFrom('rules')
      .select(['rule_type', 'rule_value', 'conditions', 'enabled', 'priority', 'rollout_percentage', 'serve', 'variant'])
      .where('flag_id', '=', source.id)
      .orderBy('priority', 'desc')
      .orderBy('created_at')
      .orderBy('id')
      .execute();
    const fields = { name: source.name, description: source.description, enabled: source.enabled, rollout_percentage: source.rollout_percentage, everyone_else: source.everyone_else, variants: storedVariants(source.variants), off_variant: source.off_variant, bucketing_key: source.bucketing_key, prerequisites: storedPrerequisites(source.prerequisites) };
    const existing = await trx.selectFrom('flags').select(FLAG_COLUMNS).where('environment_id', '=', target.id).where('key', '=', source.key).executeTakeFirst();
    if (existing && !overwrite) throw new Conflict(`A flag with key "${source.key}" already exists in the target environment (send overwrite: true to replace it)`);
    await checkPrerequisites(trx, target.id, { id: existing?.id ?? null, key: source.key, variants: source.variants, prerequisites: source.prerequisites });

    const now = nowIso();
    let flagId: string;
    if (existing) {
      flagId = existing.id;
      await trx.updateTable('flags').set({ ...fields, updated_at: now }).where('id', '=', flagId).execute();
      await trx.deleteFrom('rules').where('flag_id', '=', flagId).execute();
    } else {
      flagId = newId();
      const insert = trx
        .insertInto('flags')
        .values({ id: flagId, project_id: target.project_id, environment_id: target.id, key: source.key, ...fields, created_at: now, updated_at: now })
        .execute();
      await conflictOnDuplicate(insert, `A flag with key "${source.key}" already exists in the target environment`);
    }
    if (rules.length > 0) {
      // Rising created_at keeps the order among rules of equal priority.
      const stamps = rules.map(() => nowIso());
      await trx
        .insertInto('rules')
        .values(rules.map((rule, i) => ({ id: newId(), flag_id: flagId, ...rule, conditions: rule.conditions === null || typeof rule.conditions === 'string' ? rule.conditions : JSON.stringify(rule.conditions), enabled: toBool(rule.enabled), serve: toBool(rule.serve), created_at: stamps[i]!, updated_at: stamps[i]! })))
        .execute();
    }
    const row = await trx
      .selectFrom('flags')
      .select(FLAG_COLUMNS)
      .where('id', '=', flagId)
      .executeTakeFirstOrThrow();
    return { flag: toFlag(row), replaced: existing ? toFlag(existing) : null };
  }
}

const FLAG_COLUMNS = ['id', 'project_id', 'environment_id', 'name', 'key', 'description', 'enabled', 'rollout_percentage', 'everyone_else', 'variants', 'off_variant', 'bucketing_key', 'prerequisites', 'created_at', 'updated_at'] as const;
