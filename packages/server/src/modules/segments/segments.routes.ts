import { Type } from 'typebox';
import type { ApiPlugin } from '../../http/plugin.js';
import type { Db } from '../../db/database.js';
import { onlyProvided } from '../../db/values.js';
import { Conflict } from '../../errors.js';
import { errorResponses, ProjectParams } from '../../http/schemas.js';
import type { AuditAction } from '../changes/changes.schemas.js';
import type { ProjectWrites } from '../changes/project-writes.js';
import { listEnvironments } from '../environments/environments.repository.js';
import { checkFlagRules, checkSegmentConditions, createSegment, deleteSegment, listSegments, requireSegment, updateSegment, type Segment } from './segments.repository.js';
import { CreateSegmentBody, SegmentParams, UpdateSegmentBody } from './segments.schemas.js';

/** The audit record of a change to it. */
export const segmentChange = (action: AuditAction, before: Segment | null, after: Segment | null) => {
  const segment = (after ?? before)!;
  return { action, resource_type: 'segment' as const, resource_id: segment.id, resource_key: segment.key, before, after };
};

/** "flag "checkout" in production, …": where a segment is used, for a 409. */
async function whereUsed(db: Db, segment: Segment): Promise<string> {
  const environments = new Map((await listEnvironments(db, segment.project_id)).map((env) => [env.id, env.key]));
  return segment.used_by.map((use) => `flag "${use.flag_key}" in ${environments.get(use.environment_id) ?? use.environment_id}`).join(', ');
}

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
    const segment = await writes.apply(request.actor, request.params.project_id, async (trx, record) => {
      const created = await createSegment(trx, request.params.project_id, { key, name, description, conditions: checkSegmentConditions(conditions) });
      record(segmentChange('segment.created', null, created));
      return created;
    });
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
    const { key, name, description, conditions } = request.body;
    return writes.apply(request.actor, request.params.project_id, async (trx, record) => {
      const before = await requireSegment(trx, request.params.project_id, request.params.segment_id);
      if (key !== undefined && key !== before.key && before.used_by.length > 0) {
        throw new Conflict(`Segment "${before.key}" is used by ${await whereUsed(trx, before)}: its key cannot change while it is in use`);
      }
      const checked = conditions === undefined ? undefined : checkSegmentConditions(conditions);
      const after = await updateSegment(trx, before.id, onlyProvided({ key, name, description, conditions: checked }), before.used_by);
      // The flags that name it must stay within their limits with its new conditions.
      if (checked !== undefined) {
        const users = before.used_by.map((use) => ({ id: use.flag_id, key: use.flag_key }));
        await checkFlagRules(trx, request.params.project_id, users, (flagKey) => `Segment "${before.key}" would take flag "${flagKey}" over its limits`);
      }
      record(segmentChange('segment.updated', before, after));
      return after;
    });
  });

  app.delete(`${base}/:segment_id`, {
    config: { role: 'editor' },
    schema: { tags, params: SegmentParams, response: { 204: Type.Null(), ...errorResponses(401, 403, 404, 409) } },
  }, async (request, reply) => {
    await writes.apply(request.actor, request.params.project_id, async (trx, record) => {
      const segment = await requireSegment(trx, request.params.project_id, request.params.segment_id);
      if (segment.used_by.length > 0) throw new Conflict(`Segment "${segment.key}" is used by ${await whereUsed(trx, segment)}: remove it from those rules first`);
      await deleteSegment(trx, segment.id);
      record(segmentChange('segment.deleted', segment, null));
    });
    return reply.code(204).send(null);
  });
};
