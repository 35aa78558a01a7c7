import { Type } from 'typebox';
import type { ApiPlugin } from '../../services.js';
import { onlyProvided } from '../../db/values.js';
import { errorResponses } from '../../http/schemas.js';
import { requireEnvironment } from '../environments/environments.repository.js';
import { EnvironmentParams } from '../environments/environments.schemas.js';
import { createFlag, deleteFlag, listFlags, requireFlag, toggleFlag, updateFlag } from './flags.repository.js';
import { CreateFlagBody, FlagParams, UpdateFlagBody } from './flags.schemas.js';

type FlagRequest = { userId: string; params: { project_id: string; env_id: string; flag_id: string } };
export const flagScopeOf = (request: FlagRequest) => ({
  ownerId: request.userId,
  projectId: request.params.project_id,
  envId: request.params.env_id,
  flagId: request.params.flag_id,
});

/** /api/projects/{project_id}/environments/{env_id}/flags */
export const flagRoutes: ApiPlugin = async (app, { db }) => {
  const tags = ['flags'];
  const FlagRef = Type.Ref('Flag');
  const base = '/projects/:project_id/environments/:env_id/flags';
  const environmentOf = (request: { userId: string; params: { project_id: string; env_id: string } }) =>
    requireEnvironment(db, { ownerId: request.userId, projectId: request.params.project_id, envId: request.params.env_id });

  app.post(base, {
    schema: { tags, params: EnvironmentParams, body: CreateFlagBody, response: { 201: FlagRef, ...errorResponses(400, 401, 404, 409) } },
  }, async (request, reply) => {
    const environment = await environmentOf(request);
    const { name, key, description = null, enabled = false, rollout_percentage = 0 } = request.body;
    return reply.code(201).send(await createFlag(db, environment, { name, key, description, enabled, rollout_percentage }));
  });

  app.get(base, {
    schema: { tags, params: EnvironmentParams, response: { 200: Type.Array(FlagRef), ...errorResponses(401, 404) } },
  }, async (request) => listFlags(db, (await environmentOf(request)).id));

  app.get(`${base}/:flag_id`, {
    schema: { tags, params: FlagParams, response: { 200: FlagRef, ...errorResponses(401, 404) } },
  }, async (request) => requireFlag(db, flagScopeOf(request)));

  app.put(`${base}/:flag_id`, {
    schema: { tags, params: FlagParams, body: UpdateFlagBody, response: { 200: FlagRef, ...errorResponses(400, 401, 404, 409) } },
  }, async (request) => {
    const flag = await requireFlag(db, flagScopeOf(request));
    const { name, key, description, enabled, rollout_percentage } = request.body;
    return updateFlag(db, flag.id, onlyProvided({ name, key, description, enabled, rollout_percentage }));
  });

  app.post(`${base}/:flag_id/toggle`, {
    schema: { tags, params: FlagParams, response: { 200: FlagRef, ...errorResponses(401, 404) } },
  }, async (request) => toggleFlag(db, (await requireFlag(db, flagScopeOf(request))).id));

  app.delete(`${base}/:flag_id`, {
    schema: { tags, params: FlagParams, response: { 204: Type.Null(), ...errorResponses(401, 404) } },
  }, async (request, reply) => {
    await deleteFlag(db, (await requireFlag(db, flagScopeOf(request))).id);
    return reply.code(204).send(null);
  });
};
