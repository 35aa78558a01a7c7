import { toPrerequisiteDefinitions } from '../flags/prerequisites.js';
import type { Condition, FlagDefinition, RuleDefinition, RuleType } from '@guidon/engine';
import type { Db } from '../../db/database.js';
import { toBool } from '../../db/values.js';
import { toVariants } from '../evaluate/evaluate.repository.js';
import { toConditions } from '../segments/segments.repository.js';

/** A rule as explain names it: what the rules editor shows of it. */
export interface ExplainedRule {
  id: string;
  /** 1-based, in evaluation order among all of the flag's rules (as the rules editor numbers them). */
  position: number;
  priority: number;
  rule_type: RuleType;
  rule_value: string | null;
  conditions: Condition[] | null;
  rollout_percentage: number;
  serve: boolean;
}

export interface ExplainFlag extends FlagDefinition {
  rules: RuleDefinition[];
  /** Beside `rules`, index for index. */
  stored: ExplainedRule[];
}

/**
 * One environment's flags with their rules (ids included) and the project's segments, read from
 * the database: the dashboard asks seldom, so it reads the current state rather than the SDK
 * surfaces' compiled view, which knows no rule ids.
 */
export async function loadEnvironmentForExplain(db: Db, projectId: string, environmentId: string): Promise<{ flags: ExplainFlag[]; segments: Map<string, Condition[]> }> {
  const [flags, rules, segments] = await Promise.all([
    db
      .selectFrom('flags')
      .select(['id', 'key', 'enabled', 'rollout_percentage', 'everyone_else', 'variants', 'off_variant', 'prerequisites', 'bucketing_key'])
      .where('environment_id', '=', environmentId)
      .orderBy('created_at')
      .orderBy('id')
      .execute(),
    db
      .selectFrom('rules')
      .innerJoin('flags', 'flags.id', 'rules.flag_id')
      .select(['rules.id', 'rules.flag_id', 'rules.rule_type', 'rules.rule_value', 'rules.enabled', 'rules.priority', 'rules.conditions', 'rules.rollout_percentage', 'rules.serve', 'rules.variant'])
      .where('flags.environment_id', '=', environmentId)
      .orderBy('rules.priority', 'desc')
      .orderBy('rules.created_at')
      .orderBy('rules.id')
      .execute(),
    db.selectFrom('segments').select(['key', 'conditions']).where('project_id', '=', projectId).execute(),
  ]);
  const byId = new Map<string, ExplainFlag>();
  for (const row of flags) {
    byId.set(row.id, {
      key: row.key,
      enabled: toBool(row.enabled),
      rolloutPercentage: row.rollout_percentage,
      everyoneElse: row.everyone_else === 'off' ? 'off' : 'rollout',
      variants: toVariants(row.variants),
      offVariant: row.off_variant,
      prerequisites: toPrerequisiteDefinitions(row.prerequisites),
      bucketingKey: row.bucketing_key,
      rules: [],
      stored: [],
    });
  }
  for (const rule of rules) {
    const flag = byId.get(rule.flag_id);
    if (!flag) continue;
    const type = rule.rule_type as RuleType;
    const conditions = toConditions(rule.conditions);
    const serve = toBool(rule.serve);
    flag.rules.push({ type, value: rule.rule_value, enabled: toBool(rule.enabled), conditions, rolloutPercentage: rule.rollout_percentage, serve, variant: rule.variant });
    flag.stored.push({
      id: rule.id,
      position: flag.stored.length + 1,
      priority: rule.priority,
      rule_type: type,
      rule_value: type === 'conditions' ? null : rule.rule_value,
      conditions: type === 'conditions' ? conditions : null,
      rollout_percentage: rule.rollout_percentage,
      serve,
    });
  }
  return { flags: [...byId.values()], segments: new Map(segments.map((segment) => [segment.key, toConditions(segment.conditions) ?? []])) };
}
