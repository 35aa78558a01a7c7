import { Type } from 'typebox';
import type { ApiPlugin } from '../../http/plugin.js';
import type { Db } from '../../db/database.js';
import type { ProjectWrites } from '../changes/project-writes.js';
import type { HistoryRecorder } from '../history/history.recorder.js';
import { Conflict } from '../../errors.js';
import { errorResponses, ProjectParams, EnvironmentParams } from '../../http/schemas.js';
import { deleteEnvironment, listEnvironments, requireEnvironment } from './environments.repository.js';
import { createEnvironmentWrite, environmentChange, updateEnvironmentWrite } from './environment-writes.js';
import { CreateEnvironmentBody, UpdateEnvironmentBody } from './environments.schemas.js';

type Environment = Awaited<ReturnType<typeof requireEnvironment>>;

/** Its flags go with it: not while changes to them need review (docs/change-management.md). */
function refuseDeletingReviewed(environment: Environment): void {
  if (environment.approvals_required > 0) throw new Conflict(`${environment.key} needs approved change requests: an owner sets approvals_required to 0 before it can be deleted`);
}

/** /api/projects/{project_id}/environments */
export const environmentRoutes: ApiPlugin<{ db: Db; writes: ProjectWrites; history: HistoryRecorder }> = async (app, { db, writes, history }) => {
  const tags = ['environments'];
  const EnvironmentRef = Type.Ref('Environment');
  const base = '/projects/:project_id/environments';
  const scopeOf = (request: { params: { project_id: string; env_id: string } }) => ({ projectId: request.params.project_id, envId: request.params.env_id });

  app.post(base, {
    config: { role: 'editor' },
    schema: { tags, params: ProjectParams, body: CreateEnvironmentBody, response: { 201: EnvironmentRef, ...errorResponses(400, 401, 403, 404, 409) } },
  }, async (request, reply) => {
    const environment = await writes.apply(request.actor, request.params.project_id, (trx, record) => createEnvironmentWrite(trx, record, request.params.project_id, request.body));
    return reply.code(201).send(environment);
  });

  app.get(base, {
    config: { role: 'viewer' },
    schema: { tags, params: ProjectParams, response: { 200: Type.Array(EnvironmentRef), ...errorResponses(401, 404) } },
  }, async (request) => listEnvironments(db, request.params.project_id));

  app.get(`${base}/:env_id`, {
    config: { role: 'viewer' },
    schema: { tags, params: EnvironmentParams, response: { 200: EnvironmentRef, ...errorResponses(401, 404) } },
  }, async (request) => requireEnvironment(db, scopeOf(request)));

  app.put(`${base}/:env_id`, {
    config: { role: 'editor' },
    schema: { tags, params: EnvironmentParams, body: UpdateEnvironmentBody, response: { 200: EnvironmentRef, ...errorResponses(400, 401, 403, 404) } },
  }, async (request) => {
    return writes.apply(request.actor, request.params.project_id, (trx, record) => updateEnvironmentWrite(trx, record, scopeOf(request), request.body, request.projectRole));
  });

  app.delete(`${base}/:env_id`, {
    config: { role: 'editor' },
    schema: { tags, params: EnvironmentParams, response: { 204: Type.Null(), ...errorResponses(401, 403, 404, 409) } },
  }, async (request, reply) => {
    const environment = await requireEnvironment(db, scopeOf(request));
    refuseDeletingReviewed(environment); // before its history goes
    await history.deleteHistory([environment.id]); // in bounded steps, before the cascade would do it in one
    await writes.apply(request.actor, request.params.project_id, async (trx, record) => {
      const current = await requireEnvironment(trx, scopeOf(request));
      refuseDeletingReviewed(current);
      await deleteEnvironment(trx, current.id);
      record(environmentChange('environment.deleted', current, null));
    });
    return reply.code(204).send(null);
  });
};
