import { Type } from 'typebox';
import type { ApiPlugin } from '../../http/plugin.js';
import type { Db } from '../../db/database.js';
import type { ProjectWrites } from '../changes/project-writes.js';
import { errorResponses } from '../../http/schemas.js';
import { requireFlag } from './flags.repository.js';
import { flagScopeOf } from './flags.routes.js';
import { listRules, requireRule } from './rules.repository.js';
import { createRuleWrite, deleteRuleWrite, updateRuleWrite } from './rule-writes.js';
import { CreateRuleBody, FlagParams, RuleParams, UpdateRuleBody } from './flags.schemas.js';

/** /api/projects/{project_id}/environments/{env_id}/flags/{flag_id}/rules */
export const ruleRoutes: ApiPlugin<{ db: Db; writes: ProjectWrites }> = async (app, { db, writes }) => {
  const tags = ['rules'];
  const RuleRef = Type.Ref('Rule');
  const base = '/projects/:project_id/environments/:env_id/flags/:flag_id/rules';
  const ruleScopeOf = (request: { params: { project_id: string; env_id: string; flag_id: string; rule_id: string } }) => ({ ...flagScopeOf(request), ruleId: request.params.rule_id });

  app.post(base, {
    config: { role: 'editor' },
    schema: { tags, params: FlagParams, body: CreateRuleBody, response: { 201: RuleRef, ...errorResponses(400, 401, 403, 404, 409) } },
  }, async (request, reply) => {
    const rule = await writes.apply(request.actor, request.params.project_id, (trx, record) => createRuleWrite(trx, record, flagScopeOf(request), request.body));
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
    schema: { tags, params: RuleParams, body: UpdateRuleBody, response: { 200: RuleRef, ...errorResponses(400, 401, 403, 404, 409) } },
  }, async (request) => writes.apply(request.actor, request.params.project_id, (trx, record) => updateRuleWrite(trx, record, ruleScopeOf(request), request.body)));

  app.delete(`${base}/:rule_id`, {
    config: { role: 'editor' },
    schema: { tags, params: RuleParams, response: { 204: Type.Null(), ...errorResponses(401, 403, 404, 409) } },
  }, async (request, reply) => {
    await writes.apply(request.actor, request.params.project_id, (trx, record) => deleteRuleWrite(trx, record, ruleScopeOf(request)));
    return reply.code(204).send(null);
  });
};
