import { Type } from 'typebox';
import { looksLikeEmail } from '@guidon/engine';
import type { ApiPlugin } from '../../http/plugin.js';
import type { Db } from '../../db/database.js';
import type { ProjectWrites } from '../changes/project-writes.js';
import type { Mailer } from '../accounts/mailer.js';
import type { Config } from '../../config.js';
import { Forbidden, Invalid } from '../../errors.js';
import { errorResponses, ProjectParams } from '../../http/schemas.js';
import type { RateLimits } from '../../rate-limits.js';
import { dropInvitationToken, newInvitationToken } from '../accounts/invitation-tokens.js';
import { addMember, changeMemberRole, findVerifiedUserId, hasPendingInvitation, listMembers, projectName, removeMember, requireMember } from './members.repository.js';
import { AddMemberBody, ChangeMemberBody, MemberParams } from './members.schemas.js';

export const normalizeEmail = (email: string) => email.trim().toLowerCase();

/** /api/projects/{project_id}/members (contract §8) */
export const memberRoutes: ApiPlugin<{ db: Db; writes: ProjectWrites; mailer: Mailer; config: Readonly<Config>; limits: RateLimits }> = async (
  app,
  { db, writes, mailer, config, limits },
) => {
  const tags = ['members'];
  const MemberRef = Type.Ref('Member');
  const base = '/projects/:project_id/members';

  app.get(base, {
    config: { role: 'viewer' },
    schema: { tags, params: ProjectParams, response: { 200: Type.Array(MemberRef), ...errorResponses(401, 404) } },
  }, async (request) => listMembers(db, request.params.project_id));

  app.post(base, {
    config: { role: 'owner' },
    schema: { tags, params: ProjectParams, body: AddMemberBody, response: { 201: MemberRef, ...errorResponses(400, 401, 403, 404, 409, 429) } },
  }, async (request, reply) => {
    const email = normalizeEmail(request.body.email);
    if (!looksLikeEmail(email)) throw new Invalid('email must be a valid email address');
    const projectId = request.params.project_id;
    // A verified account joins at once; any other address (an account or not: the same answer) is
    // invited by an email whose secret link proves the address (contract §8).
    const userId = (await findVerifiedUserId(db, email)) ?? null;
    if (userId === null) await countInvitation(projectId, email);
    let invitationToken: string | null = null;
    const member = await writes
      .apply(request.actor, projectId, async (trx, record) => {
        const added = await addMember(trx, projectId, email, request.body.role, userId);
        if (userId === null) invitationToken = await newInvitationToken(trx, email);
        record({ action: 'member.added', resource_type: 'member', resource_id: added.id, before: null, after: added });
        return added;
      })
      .catch(async (error: unknown) => {
        if (userId === null) await uncountInvitation(projectId, email); // nothing was sent
        throw error;
      });
    if (invitationToken !== null) {
      const link = `${config.publicUrl}/register?invitation=${invitationToken}`;
      mailer.sendInvitation(email, link, await projectName(db, projectId)).catch((error: unknown) => request.log.error({ err: error }, 'could not send the invitation email'));
    }
    return reply.code(201).send(member);
  });

  /** Invitation emails: at most 50 a project an hour and 3 an address a day (contract §8), else 429. */
  async function countInvitation(projectId: string, email: string): Promise<void> {
    await limits.invitationsPerProject.hit(projectId);
    await limits.invitationsPerAddress.hit(email).catch(async (error: unknown) => {
      await limits.invitationsPerProject.giveBack(projectId);
      throw error;
    });
  }

  async function uncountInvitation(projectId: string, email: string): Promise<void> {
    await limits.invitationsPerProject.giveBack(projectId);
    await limits.invitationsPerAddress.giveBack(email);
  }

  app.put(`${base}/:member_id`, {
    config: { role: 'owner' },
    schema: { tags, params: MemberParams, body: ChangeMemberBody, response: { 200: MemberRef, ...errorResponses(400, 401, 403, 404, 409) } },
  }, async (request) => {
    const projectId = request.params.project_id;
    return writes.apply(request.actor, projectId, async (trx, record) => {
      const before = await requireMember(trx, projectId, request.params.member_id);
      const after = await changeMemberRole(trx, projectId, before, request.body.role);
      record({ action: 'member.updated', resource_type: 'member', resource_id: after.id, before, after });
      return after;
    });
  });

  // Viewer: any member may leave, with a login or a token that is owner there (a capped token
  // must not undo its owner's membership); removing someone else needs the owner role.
  app.delete(`${base}/:member_id`, {
    config: { role: 'viewer' },
    schema: { tags, params: MemberParams, response: { 204: Type.Null(), ...errorResponses(401, 403, 404, 409) } },
  }, async (request, reply) => {
    const projectId = request.params.project_id;
    await writes.apply(request.actor, projectId, async (trx, record) => {
      const member = await requireMember(trx, projectId, request.params.member_id);
      const leaving = member.user_id === request.userId;
      if (!leaving && request.projectRole !== 'owner') throw new Forbidden('Only an owner can remove another member');
      if (leaving && request.apiToken && request.projectRole !== 'owner') throw new Forbidden('Leaving a project needs a login, or an API token with the owner role there');
      await removeMember(trx, projectId, member);
      // The last invitation to the address is gone: its emailed link must not prove it any more.
      if (member.status === 'invited' && !(await hasPendingInvitation(trx, member.email))) await dropInvitationToken(trx, member.email);
      record({ action: 'member.removed', resource_type: 'member', resource_id: member.id, before: member, after: null });
    });
    return reply.code(204).send(null);
  });
};
