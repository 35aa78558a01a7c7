import { Type } from 'typebox';
import { Conflict } from '../../errors.js';
import type { ApiPlugin } from '../../http/plugin.js';
import type { Db } from '../../db/database.js';
import { EnvironmentParams, errorResponses } from '../../http/schemas.js';
import type { ProjectWrites } from '../changes/project-writes.js';
import { requireEnvironment } from '../environments/environments.repository.js';
import { createExperimentWrite, deleteExperimentWrite, startExperimentWrite, stopExperimentWrite } from './experiment-writes.js';
import { listExperiments, requireExperiment } from './experiments.repository.js';
import { CreateExperimentBody, ExperimentParams, StopExperimentBody } from './experiments.schemas.js';
import type { ResultsService } from './results.service.js';

/** /api/projects/{project_id}/environments/{env_id}/experiments (docs/experiments.md): draft → running → stopped. */
export const experimentRoutes: ApiPlugin<{ db: Db; writes: ProjectWrites; results: ResultsService }> = async (app, { db, writes, results }) => {
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

  app.get(`${base}/:experiment_id/results`, {
    config: { role: 'viewer' },
    schema: {
      tags,
      description: 'The latest computation, at once (a running experiment is computed again within seconds of new exposures or events); computed when asked for the first time or after a stop. 409 for a draft.',
      params: ExperimentParams,
      response: { 200: Type.Ref('ExperimentResults'), ...errorResponses(401, 404, 409) },
    },
  }, async (request) => {
    const experiment = await requireExperiment(db, scopeOf(request.params));
    const answer = await results.resultsOf(experiment);
    if (!answer) throw new Conflict('A draft has no results: start the experiment first');
    return answer;
  });

  app.get(`${base}/:experiment_id/units.csv`, {
    config: { role: 'editor' },
    schema: {
      tags,
      description: "One row per exposed unit: unit, arm (`multiple` for a unit exposed to more than one), first exposure, then each metric's value (and, with CUPED, its pre-exposure value), for analysis elsewhere.",
      params: ExperimentParams,
      produces: ['text/csv'],
      response: { 200: Type.String({ description: 'text/csv' }), ...errorResponses(401, 403, 404, 409) },
    },
  }, async (request, reply) => {
    const experiment = await requireExperiment(db, scopeOf(request.params));
    if (experiment.started_at === null) throw new Conflict('A draft has no exposed units: start the experiment first');
    reply.type('text/csv; charset=utf-8').header('content-disposition', `attachment; filename="experiment-${experiment.id}-units.csv"`);
    return reply.send((await results.unitsCsv(experiment)) as never); // streamed; the schema documents text
  });
};
