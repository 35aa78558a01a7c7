import { Type } from 'typebox';
import type { RuleType } from '@guidon/engine';
import type { AuditAction } from '../changes/changes.schemas.js';
import type { ApiPlugin } from '../../http/plugin.js';
import type { Db } from '../../db/database.js';
import type { ProjectWrites } from '../changes/project-writes.js';
import { onlyProvided } from '../../db/values.js';
import { errorResponses } from '../../http/schemas.js';
import { checkFlagRules, segmentKeys } from '../segments/segments.repository.js';
import { checkedRuleTarget, type SentConditions } from './rules.checks.js';
import { requireFlag } from './flags.repository.js';
import { flagScopeOf } from './flags.routes.js';
import { checkRuleVariant } from './variants.js';
import { createRule, deleteRule, listRules, requireRule, updateRule } from './rules.repository.js';
import { CreateRuleBody, FlagParams, RuleParams, UpdateRuleBody } from './flags.schemas.js';

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

/** /api/projects/{project_id}/environments/{env_id}/flags/{flag_id}/rules */
export const ruleRoutes: ApiPlugin<{ db: Db; writes: ProjectWrites }> = async (app, { db, writes }) => {
  const tags = ['rules'];
  const RuleRef = Type.Ref('Rule');
  const base = '/projects/:project_id/environments/:env_id/flags/:flag_id/rules';

  app.post(base, {
    config: { role: 'editor' },
    schema: { tags, params: FlagParams, body: CreateRuleBody, response: { 201: RuleRef, ...errorResponses(400, 401, 403, 404) } },
  }, async (request, reply) => {
    const { rule_type, rule_value, conditions, enabled = true, priority = 0, rollout_percentage = 100, serve = true } = request.body;
    const rule = await writes.apply(request.actor, request.params.project_id, async (trx, record) => {
      const flag = await requireFlag(trx, flagScopeOf(request));
      const target = await checkedTarget(trx, flag.project_id, rule_type, rule_value, conditions);
      const variant = checkRuleVariant(flag, request.body.variant ?? null, serve);
      const created = await createRule(trx, flag.id, { rule_type, ...target, enabled, priority, rollout_percentage, serve, variant });
      await checkFlagRules(trx, flag.project_id, [flag]); // at most 100 rules, and what they may cost together
      record(ruleChange('rule.created', flag, null, created));
      return created;
    });
    return reply.code(201).send(rule);
  });

  app.get(base, {
    config: { role: 'viewer' },
    schema: { tags, params: FlagParams, response: { 200: Type.Array(RuleRef), ...errorResponses(401, 404) } },
  }, async (request) => listRules(db, [(await requireFlag(db, flagScopeOf(request))).id]));

  app.get(`${base}/:rule_id`, {
    config: { role: 'viewer' },
    schema: { tags, params: RuleParams, response: { 200: RuleRef, ...errorResponses(401, 404) } },
  }, async (request) => requireRule(db, (await requireFlag(db, flagScopeOf(request))).id, request.params.rule_id));

  app.put(`${base}/:rule_id`, {
    config: { role: 'editor' },
    schema: { tags, params: RuleParams, body: UpdateRuleBody, response: { 200: RuleRef, ...errorResponses(400, 401, 403, 404) } },
  }, async (request) => {
    const { rule_type, rule_value, conditions, enabled, priority, rollout_percentage, serve, variant } = request.body;
    return writes.apply(request.actor, request.params.project_id, async (trx, record) => {
      const flag = await requireFlag(trx, flagScopeOf(request));
      const before = await requireRule(trx, flag.id, request.params.rule_id);
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
    });
  });

  app.delete(`${base}/:rule_id`, {
    config: { role: 'editor' },
    schema: { tags, params: RuleParams, response: { 204: Type.Null(), ...errorResponses(401, 403, 404) } },
  }, async (request, reply) => {
    await writes.apply(request.actor, request.params.project_id, async (trx, record) => {
      const flag = await requireFlag(trx, flagScopeOf(request));
      const rule = await requireRule(trx, flag.id, request.params.rule_id);
      await deleteRule(trx, rule.id);
      record(ruleChange('rule.deleted', flag, rule, null));
    });
    return reply.code(204).send(null);
  });
};
