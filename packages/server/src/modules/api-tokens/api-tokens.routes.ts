import { Type } from 'typebox';
import type { ApiPlugin } from '../../http/plugin.js';
import type { Db } from '../../db/database.js';
import type { ProjectWrites } from '../changes/project-writes.js';
import { settleReviewedWith } from '../change-requests/change-requests.writes.js';
import { Forbidden, Invalid, NotFound } from '../../errors.js';
import { errorResponses } from '../../http/schemas.js';
import { atLeast } from '../members/access.js';
import { findMemberRole } from '../members/members.repository.js';
import { createApiToken, deleteApiToken, listApiTokens } from './api-tokens.repository.js';
import { ApiTokenParams, CreateApiTokenBody, CreatedApiToken } from './api-tokens.schemas.js';

/** /api/tokens (docs/api.md, API tokens): only a signed-in user with a verified address manages tokens, never a token. */
export const apiTokenRoutes: ApiPlugin<{ db: Db; writes: ProjectWrites }> = async (app, { db, writes }) => {
  const tags = ['tokens'];

  app.post('/tokens', {
    config: { role: 'login' },
    schema: { tags, body: CreateApiTokenBody, response: { 201: CreatedApiToken, ...errorResponses(400, 401, 403, 404) } },
  }, async (request, reply) => {
    const { name, project_id = null, expires_in_days = null } = request.body;
    let role = request.body.role ?? null;
    if (role !== null && project_id === null) throw new Invalid('role caps a project token: give project_id with it');
    if (project_id !== null) {
      const mine = await findMemberRole(db, project_id, request.userId);
      if (!mine) throw new NotFound('Project not found');
      if (role !== null && !atLeast(mine, role)) throw new Forbidden(`A token cannot have more than your role (${mine})`);
      // Without a role, the creator's role now: a later promotion does not widen a token made before it.
      role ??= mine;
    }
    return reply.code(201).send(await createApiToken(db, request.userId, { name, project_id, role, expires_in_days }));
  });

  app.get('/tokens', {
    config: { role: 'login' },
    schema: { tags, response: { 200: Type.Array(Type.Ref('ApiToken')), ...errorResponses(401, 403) } },
  }, async (request) => listApiTokens(db, request.userId));

  app.delete('/tokens/:token_id', {
    config: { role: 'login' },
    schema: { tags, params: ApiTokenParams, response: { 204: Type.Null(), ...errorResponses(401, 403, 404) } },
  }, async (request, reply) => {
    await deleteApiToken(db, request.userId, request.params.token_id);
    // Its approvals no longer count (docs/change-management.md): the requests it approved show it at once.
    await settleReviewedWith(writes, db, request.actor, request.params.token_id);
    return reply.code(204).send(null);
  });
};
