import { Type } from 'typebox';
import type { ApiPlugin } from '../../http/plugin.js';
import type { Db } from '../../db/database.js';
import { AlreadySettled, Conflict } from '../../errors.js';
import type { ProjectWrites } from '../changes/project-writes.js';
import { errorResponses, ProjectParams } from '../../http/schemas.js';
import { approvalsNeeded, approvalsRequiredOf, describeRequest, listChangeRequests, requireRequestRow } from './change-requests.repository.js';
import { applyRequest, cancelRequestWrite, createRequestWrite, reviewWrite, updateRequestWrite } from './change-requests.writes.js';
import { ChangeRequestPage, ChangeRequestParams, ChangeRequestQuery, CreateChangeRequestBody, CreateChangeRequestParams, ReviewBody, UpdateChangeRequestBody } from './change-requests.schemas.js';

/** Change requests (docs/change-management.md): open, list, read with the diff, edit, review, apply, cancel. */
export const changeRequestRoutes: ApiPlugin<{ db: Db; writes: ProjectWrites }> = async (app, { db, writes }) => {
  const tags = ['change requests'];
  const RequestRef = Type.Ref('ChangeRequest');
  const one = '/projects/:project_id/change-requests/:cr_id';
  const scopeOf = (request: { params: { project_id: string; cr_id: string } }) => ({ projectId: request.params.project_id, requestId: request.params.cr_id });

  app.post('/projects/:project_id/environments/:env_id/change-requests', {
    config: { role: 'editor' },
    schema: { tags, params: CreateChangeRequestParams, body: CreateChangeRequestBody, response: { 201: RequestRef, ...errorResponses(400, 401, 403, 404) } },
  }, async (request, reply) => {
    const scope = { projectId: request.params.project_id, envId: request.params.env_id };
    const created = await writes.apply(request.actor, scope.projectId, (trx, record) => createRequestWrite(trx, record, scope, request.body, request.actor));
    return reply.code(201).send(created);
  });

  app.get('/projects/:project_id/change-requests', {
    config: { role: 'viewer' },
    schema: { tags, params: ProjectParams, querystring: ChangeRequestQuery, response: { 200: ChangeRequestPage, ...errorResponses(400, 401, 404) } },
  }, async (request) => listChangeRequests(db, request.params.project_id, { ...request.query, limit: request.query.limit ?? 50 }));

  app.get(one, {
    config: { role: 'viewer' },
    schema: { tags, params: ChangeRequestParams, response: { 200: RequestRef, ...errorResponses(401, 404) } },
  }, async (request) => describeRequest(db, await requireRequestRow(db, scopeOf(request))));

  app.put(one, {
    config: { role: 'editor' },
    schema: { tags, params: ChangeRequestParams, body: UpdateChangeRequestBody, response: { 200: RequestRef, ...errorResponses(400, 401, 403, 404, 409) } },
  }, async (request) => writes.apply(request.actor, request.params.project_id, (trx, record) => updateRequestWrite(trx, record, scopeOf(request), request.body, request.actor)));

  app.post(`${one}/reviews`, {
    config: { role: 'editor' },
    schema: { tags, params: ChangeRequestParams, body: ReviewBody, response: { 201: RequestRef, ...errorResponses(400, 401, 403, 404, 409) } },
  }, async (request, reply) => {
    const reviewed = await writes.apply(request.actor, request.params.project_id, (trx, record) => reviewWrite(trx, record, scopeOf(request), request.body, request.actor));
    return reply.code(201).send(reviewed);
  });

  app.post(`${one}/apply`, {
    config: { role: 'editor' },
    schema: { tags, params: ChangeRequestParams, response: { 200: RequestRef, ...errorResponses(401, 403, 404, 409) } },
  }, async (request) => {
    try {
      return await applyRequest(writes, db, scopeOf(request), request.actor, 'approved');
    } catch (error) {
      if (error instanceof AlreadySettled) throw new Conflict(await whyNotApplicable(db, scopeOf(request)));
      throw error;
    }
  });

  app.post(`${one}/cancel`, {
    config: { role: 'editor' },
    schema: { tags, params: ChangeRequestParams, response: { 200: RequestRef, ...errorResponses(401, 403, 404, 409) } },
  }, async (request) => writes.apply(request.actor, request.params.project_id, (trx, record) => cancelRequestWrite(trx, record, scopeOf(request), request.actor, request.projectRole)));
};

/** Why an apply was refused, from the request as it is now. */
async function whyNotApplicable(db: Db, scope: { projectId: string; requestId: string }): Promise<string> {
  const request = await describeRequest(db, await requireRequestRow(db, scope));
  switch (request.status) {
    case 'open': {
      // Approvals of its content by reviewers who no longer stand (removed, demoted, token revoked) are named: they no longer count.
      const latest = new Map(request.reviews.filter((review) => review.version === request.version).map((review) => [review.user_id, review]));
      const voided = [...latest.values()].filter((review) => review.decision === 'approve' && !request.approved_by.some((approver) => approver.user_id === review.user_id)).map((review) => review.email);
      const why = voided.length > 0 ? `; the approval(s) of ${voided.join(', ')} no longer count (no longer an editor of the project, or approved with a token since revoked)` : '';
      return `Not applied: it needs ${approvalsNeeded(await approvalsRequiredOf(db, request.environment_id))} approval(s) of its current content from editors of the project other than its author; it has ${request.approved_by.length}${why}`;
    }
    case 'scheduled':
      return `Not applied now: it is scheduled to apply at ${request.apply_at}`;
    case 'outdated':
      return 'Not applied: a flag it changes has changed since; its author updates it';
    default:
      return `Not applied: this change request is ${request.status}`;
  }
}
