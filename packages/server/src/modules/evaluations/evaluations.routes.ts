import type { ApiPlugin } from '../../http/plugin.js';
import type { Db } from '../../db/database.js';
import { errorResponses, ProjectParams, EnvironmentParams } from '../../http/schemas.js';
import { requireEnvironment } from '../environments/environments.repository.js';
import { listEnvironments } from '../environments/environments.repository.js';
import { requireFlag } from '../flags/flags.repository.js';
import { flagScopeOf } from '../flags/flags.routes.js';
import { FlagParams } from '../flags/flags.schemas.js';
import { flagMetrics, listEvaluations } from './evaluations.repository.js';
import { EvaluationPage, EvaluationQuery, FlagKeyMetricsQuery, FlagMetrics, MetricsQuery } from './evaluations.schemas.js';

/** Reading evaluation history (docs/api.md) and per-flag counts; history/ writes them. */
export const evaluationRoutes: ApiPlugin<{ db: Db }> = async (app, { db }) => {
  const tags = ['history'];

  app.get('/projects/:project_id/evaluations', {
    config: { role: 'viewer' },
    schema: { tags, params: ProjectParams, querystring: EvaluationQuery, response: { 200: EvaluationPage, ...errorResponses(400, 401, 404) } },
  }, async (request) => {
    const environmentIds = (await listEnvironments(db, request.params.project_id)).map((env) => env.id);
    return listEvaluations(db, { ...request.query, limit: request.query.limit ?? 50, flagKey: request.query.flag_key, userId: request.query.user_id, environmentIds });
  });

  app.get('/projects/:project_id/environments/:env_id/evaluations', {
    config: { role: 'viewer' },
    schema: { tags, params: EnvironmentParams, querystring: EvaluationQuery, response: { 200: EvaluationPage, ...errorResponses(400, 401, 404) } },
  }, async (request) => {
    const environment = await requireEnvironment(db, { projectId: request.params.project_id, envId: request.params.env_id });
    return listEvaluations(db, { ...request.query, limit: request.query.limit ?? 50, flagKey: request.query.flag_key, userId: request.query.user_id, environmentIds: [environment.id] });
  });

  app.get('/projects/:project_id/environments/:env_id/flags/:flag_id/metrics', {
    config: { role: 'viewer' },
    schema: { tags, params: FlagParams, querystring: MetricsQuery, response: { 200: FlagMetrics, ...errorResponses(400, 401, 404) } },
  }, async (request) => flagMetrics(db, await requireFlag(db, flagScopeOf(request)), request.query.hours ?? 24));

  app.get('/projects/:project_id/environments/:env_id/metrics', {
    config: { role: 'viewer' },
    schema: {
      tags,
      description: 'Per-hour counts of a flag by key in this environment; readable after the flag is deleted, while its counts are kept.',
      params: EnvironmentParams,
      querystring: FlagKeyMetricsQuery,
      response: { 200: FlagMetrics, ...errorResponses(400, 401, 404) },
    },
  }, async (request) => {
    const environment = await requireEnvironment(db, { projectId: request.params.project_id, envId: request.params.env_id });
    return flagMetrics(db, { environmentId: environment.id, key: request.query.flag_key }, request.query.hours ?? 24);
  });
};
