/**
 * The writes to a flag's targeting rules, each with its checks (docs/api.md, docs/targeting.md),
 * as the routes, scheduled changes and change requests run them inside ProjectWrites.apply.
 */
import type { Static } from 'typebox';
import type { RuleType } from '@guidon/engine';
import type { AuditAction } from '../changes/changes.schemas.js';
import type { RecordChange } from '../changes/project-writes.js';
import type { Db } from '../../db/database.js';
import { onlyProvided } from '../../db/values.js';
import { checkFlagRules, segmentKeys } from '../segments/segments.repository.js';
import { checkedRuleTarget, type SentConditions } from './rules.checks.js';
import { requireFlag, type FlagScope } from './flags.repository.js';
import { checkRuleVariant } from './variants.js';
import { createRule, deleteRule, requireRule, updateRule } from './rules.repository.js';
import type { CreateRuleBody, UpdateRuleBody } from './flags.schemas.js';

export type RuleCreate = Static<typeof CreateRuleBody>;
export type RulePut = Static<typeof UpdateRuleBody>;
export interface RuleScope extends FlagScope {
  ruleId: string;
}

/** What a rule targets, as stored, with the project's segment keys read only for a conditions rule. */
async function checkedTarget(db: Db, projectId: string, type: RuleType, value: string | null | undefined, conditions: SentConditions | null | undefined) {
  return checkedRuleTarget(type, value, conditions, type === 'conditions' && conditions ? await segmentKeys(db, projectId) : new Set());
}

type Rule = Awaited<ReturnType<typeof requireRule>>;
/** A rule's events carry its flag's key and environment. */
export const ruleChange = (action: AuditAction, flag: { key: string; environment_id: string }, before: Rule | null, after: Rule | null) => ({
  action,
  resource_type: 'rule' as const,
  resource_id: (after ?? before)!.id,
  resource_key: flag.key,
  environment_id: flag.environment_id,
  before,
  after,
});

export async function createRuleWrite(trx: Db, record: RecordChange, scope: FlagScope, body: RuleCreate) {
  const { rule_type, rule_value, conditions, enabled = true, priority = 0, rollout_percentage = 100, serve = true } = body;
  const flag = await requireFlag(trx, scope);
  const target = await checkedTarget(trx, flag.project_id, rule_type, rule_value, conditions);
  const variant = checkRuleVariant(flag, body.variant ?? null, serve);
  const created = await createRule(trx, flag.id, { rule_type, ...target, enabled, priority, rollout_percentage, serve, variant });
  await checkFlagRules(trx, flag.project_id, [flag]); // at most 100 rules, and what they may cost together
  record(ruleChange('rule.created', flag, null, created));
  return created;
}

/** A PUT of the rule: only the fields sent change. */
export async function updateRuleWrite(trx: Db, record: RecordChange, scope: RuleScope, body: RulePut) {
  const { rule_type, rule_value, conditions, enabled, priority, rollout_percentage, serve, variant } = body;
  const flag = await requireFlag(trx, scope);
  const before = await requireRule(trx, flag.id, scope.ruleId);
  // A new type re-checks what it keeps, and a new value or new conditions are checked against the resulting type.
  const type = rule_type ?? before.rule_type;
  const typeChanged = type !== before.rule_type;
  const target =
    rule_type !== undefined || rule_value !== undefined || conditions !== undefined
      ? await checkedTarget(trx, flag.project_id, type, rule_value !== undefined ? rule_value : typeChanged ? undefined : before.rule_value, conditions !== undefined ? conditions : typeChanged ? undefined : before.conditions)
      : {};
  // The variant as it will be is checked whenever it or serve is sent.
  if (variant !== undefined || serve !== undefined) checkRuleVariant(flag, variant !== undefined ? variant : before.variant, serve ?? before.serve);
  const after = await updateRule(trx, before.id, onlyProvided({ rule_type, ...target, enabled, priority, rollout_percentage, serve, variant }));
  if ('conditions' in target) await checkFlagRules(trx, flag.project_id, [flag]);
  record(ruleChange('rule.updated', flag, before, after));
  return after;
}

export async function deleteRuleWrite(trx: Db, record: RecordChange, scope: RuleScope): Promise<void> {
  const flag = await requireFlag(trx, scope);
  const rule = await requireRule(trx, flag.id, scope.ruleId);
  await deleteRule(trx, rule.id);
  record(ruleChange('rule.deleted', flag, rule, null));
}
