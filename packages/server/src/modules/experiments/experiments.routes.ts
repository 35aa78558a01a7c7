import { Type } from 'typebox';
import type { ApiPlugin } from '../../http/plugin.js';
import type { Db } from '../../db/database.js';
import { EnvironmentParams, errorResponses } from '../../http/schemas.js';
import type { ProjectWrites } from '../changes/project-writes.js';
import { requireEnvironment } from '../environments/environments.repository.js';
import { createExperimentWrite, deleteExperimentWrite, startExperimentWrite, stopExperimentWrite } from './experiment-writes.js';
import { listExperiments, requireExperiment } from './experiments.repository.js';
import { CreateExperimentBody, ExperimentParams, StopExperimentBody } from './experiments.schemas.js';

/** /api/projects/{project_id}/environments/{env_id}/experiments (docs/experiments.md): draft → running → stopped. */
export const experimentRoutes: ApiPlugin<{ db: Db; writes: ProjectWrites }> = async (app, { db, writes }) => {
  const tags = ['experiments'];
  const ExperimentRef = Type.Ref('Experiment');
  const base = '/projects/:project_id/environments/:env_id/experiments';
  const scopeOf = (params: { project_id: string; env_id: string; experiment_id: string }) => ({ projectId: params.project_id, envId: params.env_id, experimentId: params.experiment_id });

  app.post(base, {
    config: { role: 'editor' },
    schema: { tags, params: EnvironmentParams, body: CreateExperimentBody, response: { 201: ExperimentRef, ...errorResponses(400, 401, 403, 404, 409) } },
  }, async (request, reply) => {
    const scope = { projectId: request.params.project_id, envId: request.params.env_id };
    const experiment = await writes.apply(request.actor, scope.projectId, (trx, record) => createExperimentWrite(trx, record, scope, request.body));
    return reply.code(201).send(experiment);
  });

  app.get(base, {
    config: { role: 'viewer' },
    schema: { tags, params: EnvironmentParams, response: { 200: Type.Array(ExperimentRef), ...errorResponses(401, 404) } },
  }, async (request) => {
    const scope = { projectId: request.params.project_id, envId: request.params.env_id };
    await requireEnvironment(db, scope);
    return listExperiments(db, scope);
  });

  app.get(`${base}/:experiment_id`, {
    config: { role: 'viewer' },
    schema: { tags, params: ExperimentParams, response: { 200: ExperimentRef, ...errorResponses(401, 404) } },
  }, async (request) => requireExperiment(db, scopeOf(request.params)));

  app.post(`${base}/:experiment_id/start`, {
    config: { role: 'editor' },
    schema: { tags, params: ExperimentParams, response: { 200: ExperimentRef, ...errorResponses(401, 403, 404, 409) } },
  }, async (request) => writes.apply(request.actor, request.params.project_id, (trx, record) => startExperimentWrite(trx, record, scopeOf(request.params))));

  app.post(`${base}/:experiment_id/stop`, {
    config: { role: 'editor' },
    schema: { tags, params: ExperimentParams, body: StopExperimentBody, response: { 200: ExperimentRef, ...errorResponses(400, 401, 403, 404, 409) } },
  }, async (request) => writes.apply(request.actor, request.params.project_id, (trx, record) => stopExperimentWrite(trx, record, scopeOf(request.params), request.body)));

  app.delete(`${base}/:experiment_id`, {
    config: { role: 'editor' },
    schema: { tags, params: ExperimentParams, response: { 204: Type.Null(), ...errorResponses(401, 403, 404, 409) } },
  }, async (request, reply) => {
    await writes.apply(request.actor, request.params.project_id, (trx, record) => deleteExperimentWrite(trx, record, scopeOf(request.params)));
    return reply.code(204).send(null);
  });
};
