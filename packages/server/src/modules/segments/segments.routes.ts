import { Type } from 'typebox';
import type { ApiPlugin } from '../../http/plugin.js';
import type { Db } from '../../db/database.js';
import { errorResponses, ProjectParams } from '../../http/schemas.js';
import type { ProjectWrites } from '../changes/project-writes.js';
import { listSegments, requireSegment } from './segments.repository.js';
import { CreateSegmentBody, SegmentParams, UpdateSegmentBody } from './segments.schemas.js';
import { createSegmentWrite, deleteSegmentWrite, updateSegmentWrite } from './segment-writes.js';

/** /api/projects/{project_id}/segments (docs/targeting.md): named condition sets shared by the project's flags. */
export const segmentRoutes: ApiPlugin<{ db: Db; writes: ProjectWrites }> = async (app, { db, writes }) => {
  const tags = ['segments'];
  const SegmentRef = Type.Ref('Segment');
  const base = '/projects/:project_id/segments';

  app.post(base, {
    config: { role: 'editor' },
    schema: { tags, params: ProjectParams, body: CreateSegmentBody, response: { 201: SegmentRef, ...errorResponses(400, 401, 403, 404, 409) } },
  }, async (request, reply) => {
    const { key, name, description = null, conditions } = request.body;
    const segment = await writes.apply(request.actor, request.params.project_id, (trx, record) => createSegmentWrite(trx, record, request.params.project_id, { key, name, description, conditions }));
    return reply.code(201).send(segment);
  });

  app.get(base, {
    config: { role: 'viewer' },
    schema: { tags, params: ProjectParams, response: { 200: Type.Array(SegmentRef), ...errorResponses(401, 404) } },
  }, async (request) => listSegments(db, request.params.project_id));

  app.get(`${base}/:segment_id`, {
    config: { role: 'viewer' },
    schema: { tags, params: SegmentParams, response: { 200: SegmentRef, ...errorResponses(401, 404) } },
  }, async (request) => requireSegment(db, request.params.project_id, request.params.segment_id));

  app.put(`${base}/:segment_id`, {
    config: { role: 'editor' },
    schema: { tags, params: SegmentParams, body: UpdateSegmentBody, response: { 200: SegmentRef, ...errorResponses(400, 401, 403, 404, 409) } },
  }, async (request) => {
    const scope = { projectId: request.params.project_id, segmentId: request.params.segment_id };
    return writes.apply(request.actor, scope.projectId, (trx, record) => updateSegmentWrite(trx, record, scope, request.body));
  });

  app.delete(`${base}/:segment_id`, {
    config: { role: 'editor' },
    schema: { tags, params: SegmentParams, response: { 204: Type.Null(), ...errorResponses(401, 403, 404, 409) } },
  }, async (request, reply) => {
    const scope = { projectId: request.params.project_id, segmentId: request.params.segment_id };
    await writes.apply(request.actor, scope.projectId, (trx, record) => deleteSegmentWrite(trx, record, scope));
    return reply.code(204).send(null);
  });
};
