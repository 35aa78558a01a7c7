import { Type } from 'typebox';
import type { ApiPlugin } from '../../http/plugin.js';
import type { Db } from '../../db/database.js';
import { errorResponses, ProjectParams } from '../../http/schemas.js';
import type { ProjectWrites } from '../changes/project-writes.js';
import { createMetricWrite, deleteMetricWrite, updateMetricWrite } from './metric-writes.js';
import { listMetrics, requireMetric } from './metrics.repository.js';
import { CreateMetricBody, MetricParams, UpdateMetricBody } from './metrics.schemas.js';

/** /api/projects/{project_id}/metrics (docs/experiments.md): what the project's experiments measure. */
export const metricRoutes: ApiPlugin<{ db: Db; writes: ProjectWrites }> = async (app, { db, writes }) => {
  const tags = ['experiments'];
  const MetricRef = Type.Ref('Metric');
  const base = '/projects/:project_id/metrics';

  app.post(base, {
    config: { role: 'editor' },
    schema: { tags, params: ProjectParams, body: CreateMetricBody, response: { 201: MetricRef, ...errorResponses(400, 401, 403, 404, 409) } },
  }, async (request, reply) => {
    const { key, name, event, kind, better, window_hours = null } = request.body;
    const metric = await writes.apply(request.actor, request.params.project_id, (trx, record) => createMetricWrite(trx, record, request.params.project_id, { key, name, event, kind, better, window_hours }));
    return reply.code(201).send(metric);
  });

  app.get(base, {
    config: { role: 'viewer' },
    schema: { tags, params: ProjectParams, response: { 200: Type.Array(MetricRef), ...errorResponses(401, 404) } },
  }, async (request) => listMetrics(db, request.params.project_id));

  app.get(`${base}/:metric_id`, {
    config: { role: 'viewer' },
    schema: { tags, params: MetricParams, response: { 200: MetricRef, ...errorResponses(401, 404) } },
  }, async (request) => requireMetric(db, request.params.project_id, request.params.metric_id));

  app.put(`${base}/:metric_id`, {
    config: { role: 'editor' },
    schema: { tags, params: MetricParams, body: UpdateMetricBody, response: { 200: MetricRef, ...errorResponses(400, 401, 403, 404, 409) } },
  }, async (request) => {
    const scope = { projectId: request.params.project_id, metricId: request.params.metric_id };
    return writes.apply(request.actor, scope.projectId, (trx, record) => updateMetricWrite(trx, record, scope, request.body));
  });

  app.delete(`${base}/:metric_id`, {
    config: { role: 'editor' },
    schema: { tags, params: MetricParams, response: { 204: Type.Null(), ...errorResponses(401, 403, 404, 409) } },
  }, async (request, reply) => {
    const scope = { projectId: request.params.project_id, metricId: request.params.metric_id };
    await writes.apply(request.actor, scope.projectId, (trx, record) => deleteMetricWrite(trx, record, scope));
    return reply.code(204).send(null);
  });
};
