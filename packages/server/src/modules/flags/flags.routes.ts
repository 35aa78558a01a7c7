import { Type } from 'typebox';
import type { ApiPlugin } from '../../http/plugin.js';
import type { Db } from '../../db/database.js';
import type { ProjectWrites } from '../changes/project-writes.js';
import { errorResponses, EnvironmentParams } from '../../http/schemas.js';
import { requireEnvironment } from '../environments/environments.repository.js';
import { createFlagWrite, deleteFlagWrite, toggleFlagWrite, updateFlagWrite } from './flag-writes.js';
import { listFlags, requireFlag } from './flags.repository.js';
import { CreateFlagBody, FlagParams, UpdateFlagBody } from './flags.schemas.js';

type FlagRequest = { params: { project_id: string; env_id: string; flag_id: string } };
export const flagScopeOf = (request: FlagRequest) => ({
  projectId: request.params.project_id,
  envId: request.params.env_id,
  flagId: request.params.flag_id,
});

/** /api/projects/{project_id}/environments/{env_id}/flags */
export const flagRoutes: ApiPlugin<{ db: Db; writes: ProjectWrites }> = async (app, { db, writes }) => {
  const tags = ['flags'];
  const FlagRef = Type.Ref('Flag');
  const base = '/projects/:project_id/environments/:env_id/flags';
  const envScopeOf = (request: { params: { project_id: string; env_id: string } }) => ({ projectId: request.params.project_id, envId: request.params.env_id });

  app.post(base, {
    config: { role: 'editor' },
    schema: { tags, params: EnvironmentParams, body: CreateFlagBody, response: { 201: FlagRef, ...errorResponses(400, 401, 403, 404, 409) } },
  }, async (request, reply) => {
    const flag = await writes.apply(request.actor, request.params.project_id, (trx, record) => createFlagWrite(trx, record, envScopeOf(request), request.body));
    return reply.code(201).send(flag);
  });

  app.get(base, {
    config: { role: 'viewer' },
    schema: { tags, params: EnvironmentParams, response: { 200: Type.Array(FlagRef), ...errorResponses(401, 404) } },
  }, async (request) => listFlags(db, (await requireEnvironment(db, envScopeOf(request))).id));

  app.get(`${base}/:flag_id`, {
    config: { role: 'viewer' },
    schema: { tags, params: FlagParams, response: { 200: FlagRef, ...errorResponses(401, 404) } },
  }, async (request) => requireFlag(db, flagScopeOf(request)));

  app.put(`${base}/:flag_id`, {
    config: { role: 'editor' },
    schema: { tags, params: FlagParams, body: UpdateFlagBody, response: { 200: FlagRef, ...errorResponses(400, 401, 403, 404, 409) } },
  }, async (request) => writes.apply(request.actor, request.params.project_id, (trx, record) => updateFlagWrite(trx, record, flagScopeOf(request), request.body)));

  app.post(`${base}/:flag_id/toggle`, {
    config: { role: 'editor' },
    schema: { tags, params: FlagParams, response: { 200: FlagRef, ...errorResponses(401, 403, 404, 409) } },
  }, async (request) => writes.apply(request.actor, request.params.project_id, (trx, record) => toggleFlagWrite(trx, record, flagScopeOf(request))));

  app.delete(`${base}/:flag_id`, {
    config: { role: 'editor' },
    schema: { tags, params: FlagParams, response: { 204: Type.Null(), ...errorResponses(401, 403, 404, 409) } },
  }, async (request, reply) => {
    await writes.apply(request.actor, request.params.project_id, (trx, record) => deleteFlagWrite(trx, record, flagScopeOf(request)));
    return reply.code(204).send(null);
  });
};
