import { Type } from 'typebox';
import type { ApiPlugin } from '../../http/plugin.js';
import type { Db } from '../../db/database.js';
import type { ProjectWrites } from '../changes/project-writes.js';
import type { FastifyRequest } from 'fastify';
import { NotFound } from '../../errors.js';
import { errorResponses } from '../../http/schemas.js';
import { answerInvitation } from './invitations.js';
import { invitationsTo } from './members.repository.js';
import { Invitation, InvitationParams } from './members.schemas.js';

/**
 * /api/invitations (docs/api.md, Members): the caller's own pending invitations, which only they
 * accept or decline. An account whose address is not verified has none to see (its holder may not
 * be the address's owner), and a project token reaches only its own project.
 */
export const invitationRoutes: ApiPlugin<{ db: Db; writes: ProjectWrites }> = async (app, { db, writes }) => {
  const tags = ['members'];
  const seesInvitations = (request: FastifyRequest) => request.emailVerified && !request.apiToken?.project_id;

  app.get('/invitations', {
    config: { role: 'user' },
    schema: { tags, summary: 'Your pending invitations, newest first', response: { 200: Type.Array(Invitation), ...errorResponses(401) } },
  }, async (request) => (seesInvitations(request) ? invitationsTo(db, request.actor.email!) : []));

  async function answer(request: FastifyRequest, invitationId: string, accept: boolean) {
    const invitee = { ...request.actor, user_id: request.userId, email: request.actor.email! };
    const answered = seesInvitations(request) ? await answerInvitation(writes, db, invitee, invitationId, accept) : undefined;
    if (!answered) throw new NotFound('Invitation not found');
    return answered;
  }

  app.post('/invitations/:invitation_id/accept', {
    config: { role: 'user' },
    schema: { tags, summary: 'Join the project: the invitation becomes your membership', params: InvitationParams, response: { 200: Type.Ref('Member'), ...errorResponses(401, 403, 404) } },
  }, async (request) => answer(request, request.params.invitation_id, true));

  app.post('/invitations/:invitation_id/decline', {
    config: { role: 'user' },
    schema: { tags, summary: 'Refuse the invitation: it is removed', params: InvitationParams, response: { 204: Type.Null(), ...errorResponses(401, 403, 404) } },
  }, async (request, reply) => {
    await answer(request, request.params.invitation_id, false);
    return reply.code(204).send(null);
  });
};
