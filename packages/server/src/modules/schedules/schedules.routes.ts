import { Type } from 'typebox';
import type { ApiPlugin } from '../../http/plugin.js';
import type { Db } from '../../db/database.js';
import type { ProjectWrites } from '../changes/project-writes.js';
import { errorResponses, ProjectParams } from '../../http/schemas.js';
import { requireFlag } from '../flags/flags.repository.js';
import { flagScopeOf } from '../flags/flags.routes.js';
import { FlagParams } from '../flags/flags.schemas.js';
import { cancelScheduleWrite, createScheduleWrite } from './schedule-writes.js';
import { listSchedules } from './schedules.repository.js';
import { CreateScheduleBody, ScheduleParams, ScheduleQuery } from './schedules.schemas.js';

/** Scheduled changes of a flag, and of a whole project (docs/change-management.md). */
export const scheduleRoutes: ApiPlugin<{ db: Db; writes: ProjectWrites }> = async (app, { db, writes }) => {
  const tags = ['schedules'];
  const ScheduleRef = Type.Ref('Schedule');
  const base = '/projects/:project_id/environments/:env_id/flags/:flag_id/schedules';

  app.post(base, {
    config: { role: 'editor' },
    schema: { tags, params: FlagParams, body: CreateScheduleBody, response: { 201: ScheduleRef, ...errorResponses(400, 401, 403, 404, 409) } },
  }, async (request, reply) => {
    const schedule = await writes.apply(request.actor, request.params.project_id, (trx, record) => createScheduleWrite(trx, record, flagScopeOf(request), request.body, request.actor));
    return reply.code(201).send(schedule);
  });

  app.get(base, {
    config: { role: 'viewer' },
    schema: { tags, params: FlagParams, response: { 200: Type.Array(ScheduleRef), ...errorResponses(401, 404) } },
  }, async (request) => {
    const flag = await requireFlag(db, flagScopeOf(request));
    return listSchedules(db, { projectId: flag.project_id, flagId: flag.id });
  });

  app.delete(`${base}/:schedule_id`, {
    config: { role: 'editor' },
    schema: { tags, params: ScheduleParams, response: { 204: Type.Null(), ...errorResponses(401, 403, 404, 409) } },
  }, async (request, reply) => {
    const { project_id, env_id, flag_id, schedule_id } = request.params;
    await writes.apply(request.actor, project_id, (trx, record) => cancelScheduleWrite(trx, record, { projectId: project_id, envId: env_id, flagId: flag_id, scheduleId: schedule_id }));
    return reply.code(204).send(null);
  });

  app.get('/projects/:project_id/schedules', {
    config: { role: 'viewer' },
    schema: { tags, params: ProjectParams, querystring: ScheduleQuery, response: { 200: Type.Array(ScheduleRef), ...errorResponses(400, 401, 404) } },
  }, async (request) => listSchedules(db, { projectId: request.params.project_id, status: request.query.status, environmentId: request.query.environment_id }));
};
