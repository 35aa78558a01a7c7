import { Type } from 'typebox';
import { looksLikeEmail, normalizeEmailDomain, type RuleType } from '@guidon/engine';
import type { ApiPlugin } from '../../services.js';
import { onlyProvided } from '../../db/values.js';
import { Invalid } from '../../errors.js';
import { errorResponses } from '../../http/schemas.js';
import { requireFlag } from './flags.repository.js';
import { flagScopeOf } from './flags.routes.js';
import { createRule, deleteRule, listRules, requireRule, updateRule } from './rules.repository.js';
import { CreateRuleBody, FlagParams, RuleParams, UpdateRuleBody } from './flags.schemas.js';

const MAX_RULE_VALUE_LENGTH = 320;

/** Contract §1: the stored form of a rule value, or Invalid. */
export function checkedRuleValue(type: RuleType, raw: string): string {
  const value = raw.trim();
  if (value === '') throw new Invalid('rule_value must not be empty');
  if ([...value].length > MAX_RULE_VALUE_LENGTH) throw new Invalid(`rule_value must be at most ${MAX_RULE_VALUE_LENGTH} characters`);
  if (type === 'user_email' && !looksLikeEmail(value)) throw new Invalid('rule_value must be an email address for a user_email rule');
  if (type === 'email_domain') {
    const domain = normalizeEmailDomain(value);
    if (domain === null) throw new Invalid('rule_value must be a domain such as example.com or @example.com for an email_domain rule');
    return domain;
  }
  return value;
}

/** /api/projects/{project_id}/environments/{env_id}/flags/{flag_id}/rules */
export const ruleRoutes: ApiPlugin = async (app, { db }) => {
  const tags = ['rules'];
  const RuleRef = Type.Ref('Rule');
  const base = '/projects/:project_id/environments/:env_id/flags/:flag_id/rules';

  app.post(base, {
    schema: { tags, params: FlagParams, body: CreateRuleBody, response: { 201: RuleRef, ...errorResponses(400, 401, 404) } },
  }, async (request, reply) => {
    const flag = await requireFlag(db, flagScopeOf(request));
    const { rule_type, rule_value, enabled = true, priority = 0 } = request.body;
    const rule = await createRule(db, flag.id, { rule_type, rule_value: checkedRuleValue(rule_type, rule_value), enabled, priority });
    return reply.code(201).send(rule);
  });

  app.get(base, {
    schema: { tags, params: FlagParams, response: { 200: Type.Array(RuleRef), ...errorResponses(401, 404) } },
  }, async (request) => listRules(db, [(await requireFlag(db, flagScopeOf(request))).id]));

  app.get(`${base}/:rule_id`, {
    schema: { tags, params: RuleParams, response: { 200: RuleRef, ...errorResponses(401, 404) } },
  }, async (request) => requireRule(db, (await requireFlag(db, flagScopeOf(request))).id, request.params.rule_id));

  app.put(`${base}/:rule_id`, {
    schema: { tags, params: RuleParams, body: UpdateRuleBody, response: { 200: RuleRef, ...errorResponses(400, 401, 404) } },
  }, async (request) => {
    const flag = await requireFlag(db, flagScopeOf(request));
    const rule = await requireRule(db, flag.id, request.params.rule_id);
    const { rule_type, rule_value, enabled, priority } = request.body;
    // A new type re-checks the kept value, and a new value is checked against the resulting type.
    const type = rule_type ?? rule.rule_type;
    const value = rule_type !== undefined || rule_value !== undefined ? checkedRuleValue(type, rule_value ?? rule.rule_value) : undefined;
    return updateRule(db, rule.id, onlyProvided({ rule_type, rule_value: value, enabled, priority }));
  });

  app.delete(`${base}/:rule_id`, {
    schema: { tags, params: RuleParams, response: { 204: Type.Null(), ...errorResponses(401, 404) } },
  }, async (request, reply) => {
    const flag = await requireFlag(db, flagScopeOf(request));
    await deleteRule(db, (await requireRule(db, flag.id, request.params.rule_id)).id);
    return reply.code(204).send(null);
  });
};
