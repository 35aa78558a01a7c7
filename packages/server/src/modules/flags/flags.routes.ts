import { Type } from 'typebox';
import type { AuditAction } from '../changes/changes.schemas.js';
import type { ApiPlugin } from '../../http/plugin.js';
import type { Db } from '../../db/database.js';
import type { ProjectWrites } from '../changes/project-writes.js';
import { onlyProvided } from '../../db/values.js';
import { errorResponses, EnvironmentParams } from '../../http/schemas.js';
import { requireEnvironment } from '../environments/environments.repository.js';
import { createFlag, deleteFlag, listFlags, requireFlag, toggleFlag, updateFlag } from './flags.repository.js';
import { CreateFlagBody, FlagParams, UpdateFlagBody } from './flags.schemas.js';

type FlagRequest = { params: { project_id: string; env_id: string; flag_id: string } };
export const flagScopeOf = (request: FlagRequest) => ({
  projectId: request.params.project_id,
  envId: request.params.env_id,
  flagId: request.params.flag_id,
});

type Flag = Awaited<ReturnType<typeof requireFlag>>;
/** The audit record of a change to a flag. */
export const flagChange = (action: AuditAction, before: Flag | null, after: Flag | null) => {
  const flag = (after ?? before)!;
  return { action, resource_type: 'flag' as const, resource_id: flag.id, resource_key: flag.key, environment_id: flag.environment_id, before, after };
};

/** /api/projects/{project_id}/environments/{env_id}/flags */
export const flagRoutes: ApiPlugin<{ db: Db; writes: ProjectWrites }> = async (app, { db, writes }) => {
  const tags = ['flags'];
  const FlagRef = Type.Ref('Flag');
  const base = '/projects/:project_id/environments/:env_id/flags';
  const environmentOf = (trx: typeof db, request: { params: { project_id: string; env_id: string } }) =>
    requireEnvironment(trx, { projectId: request.params.project_id, envId: request.params.env_id });

  app.post(base, {
    config: { role: 'editor' },
    schema: { tags, params: EnvironmentParams, body: CreateFlagBody, response: { 201: FlagRef, ...errorResponses(400, 401, 403, 404, 409) } },
  }, async (request, reply) => {
    const { name, key, description = null, enabled = false, rollout_percentage = 0, everyone_else = 'rollout' } = request.body;
    const flag = await writes.apply(request.actor, request.params.project_id, async (trx, record) => {
      const created = await createFlag(trx, await environmentOf(trx, request), { name, key, description, enabled, rollout_percentage, everyone_else });
      record(flagChange('flag.created', null, created));
      return created;
    });
    return reply.code(201).send(flag);
  });

  app.get(base, {
    config: { role: 'viewer' },
    schema: { tags, params: EnvironmentParams, response: { 200: Type.Array(FlagRef), ...errorResponses(401, 404) } },
  }, async (request) => listFlags(db, (await environmentOf(db, request)).id));

  app.get(`${base}/:flag_id`, {
    config: { role: 'viewer' },
    schema: { tags, params: FlagParams, response: { 200: FlagRef, ...errorResponses(401, 404) } },
  }, async (request) => requireFlag(db, flagScopeOf(request)));

  app.put(`${base}/:flag_id`, {
    config: { role: 'editor' },
    schema: { tags, params: FlagParams, body: UpdateFlagBody, response: { 200: FlagRef, ...errorResponses(400, 401, 403, 404, 409) } },
  }, async (request) => {
    const { name, key, description, enabled, rollout_percentage, everyone_else } = request.body;
    return writes.apply(request.actor, request.params.project_id, async (trx, record) => {
      const before = await requireFlag(trx, flagScopeOf(request));
      const after = await updateFlag(trx, before.id, onlyProvided({ name, key, description, enabled, rollout_percentage, everyone_else }));
      // Switching it on or off is a toggle however it is sent (the dashboard's switch sets the
      // state with PUT): a webhook for flag.toggled hears every flip.
      const onlySwitched = before.enabled !== after.enabled && [name, key, description, rollout_percentage, everyone_else].every((value, i) => value === undefined || value === [before.name, before.key, before.description, before.rollout_percentage, before.everyone_else][i]);
      record(flagChange(onlySwitched ? 'flag.toggled' : 'flag.updated', before, after));
      return after;
    });
  });

  app.post(`${base}/:flag_id/toggle`, {
    config: { role: 'editor' },
    schema: { tags, params: FlagParams, response: { 200: FlagRef, ...errorResponses(401, 403, 404) } },
  }, async (request) =>
    writes.apply(request.actor, request.params.project_id, async (trx, record) => {
      const before = await requireFlag(trx, flagScopeOf(request));
      const after = await toggleFlag(trx, before.id);
      record(flagChange('flag.toggled', before, after));
      return after;
    }),
  );

  app.delete(`${base}/:flag_id`, {
    config: { role: 'editor' },
    schema: { tags, params: FlagParams, response: { 204: Type.Null(), ...errorResponses(401, 403, 404) } },
  }, async (request, reply) => {
    await writes.apply(request.actor, request.params.project_id, async (trx, record) => {
      const flag = await requireFlag(trx, flagScopeOf(request));
      await deleteFlag(trx, flag.id);
      record(flagChange('flag.deleted', flag, null));
    });
    return reply.code(204).send(null);
  });
};
