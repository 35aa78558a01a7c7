import { Type } from 'typebox';
import { looksLikeEmail } from '@guidon/engine';
import type { ApiPlugin } from '../../http/plugin.js';
import type { Db } from '../../db/database.js';
import type { ProjectWrites } from '../changes/project-writes.js';
import type { Mailer } from '../accounts/mailer.js';
import type { Config } from '../../config.js';
import { Forbidden, Invalid } from '../../errors.js';
import { errorResponses, ProjectParams } from '../../http/schemas.js';
import type { Limit, RateLimits } from '../../rate-limits.js';
import { dropInvitationToken, newInvitationToken } from '../accounts/invitation-tokens.js';
import { addInvitation, changeMemberRole, hasPendingInvitation, listMembers, projectName, removeMember, requireMember } from './members.repository.js';
import { AddMemberBody, ChangeMemberBody, MemberParams } from './members.schemas.js';

export const normalizeEmail = (email: string) => email.trim().toLowerCase();
const DAY_MS = 24 * 60 * 60 * 1000;

/** /api/projects/{project_id}/members (docs/api.md, Members) */
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
    // Invitations are emails to anyone: only an account that proved its own address sends them.
    if (!request.emailVerified) throw new Forbidden('Verify your email address before inviting anyone: open the link we emailed you (or ask for a new one)');
    const email = normalizeEmail(request.body.email);
    if (!looksLikeEmail(email)) throw new Invalid('email must be a valid email address');
    const projectId = request.params.project_id;
    // Always an invitation, with the same answer whether or not the address has an account (no
    // lookup of who has one); nobody joins before accepting it (docs/api.md, Members).
    const counted = invitationCounts(projectId, request.userId, email);
    await hitAll(counted);
    let invitationToken = '';
    const member = await writes
      .apply(request.actor, projectId, async (trx, record) => {
        const added = await addInvitation(trx, projectId, email, request.body.role, request.actor.email!);
        invitationToken = await newInvitationToken(trx, email, added.id);
        record({ action: 'member.added', resource_type: 'member', resource_id: added.id, before: null, after: added });
        return added;
      })
      .catch(async (error: unknown) => {
        for (const [limit, key] of counted) await limit.giveBack(key); // nothing was sent
        throw error;
      });
    const link = `${config.publicUrl}/register?invitation=${invitationToken}`;
    mailer.sendInvitation(email, link, await projectName(db, projectId)).catch((error: unknown) => request.log.error({ err: error }, 'could not send the invitation email'));
    return reply.code(201).send(member);
  });

  /**
   * What one invitation counts against (docs/api.md, Members): 50 an hour a project and an
   * inviter, 3 a day to one address from one project; and, so that inviting and cancelling again
   * and again cannot flood one address, 10 a day from one inviter to it (docs/adr/0011-proven-addresses.md).
   */
  const invitationCounts = (projectId: string, inviterId: string, email: string): [Limit, string][] => [
    [limits.invitationsPerProject, projectId],
    [limits.invitationsPerInviter, inviterId],
    [limits.invitationsPerInviterAddress, `${inviterId} ${email}`],
    [limits.invitationsPerProjectAddress, `${projectId} ${email}`],
  ];

  /** Counts a hit on each, or none: a refused one (429) gives back those counted before it. */
  async function hitAll(counts: [Limit, string][]): Promise<void> {
    for (const [index, [limit, key]] of counts.entries()) {
      await limit.hit(key).catch(async (error: unknown) => {
        for (const [counted, countedKey] of counts.slice(0, index)) await counted.giveBack(countedKey);
        throw error;
      });
    }
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
    const removed = await writes.apply(request.actor, projectId, async (trx, record) => {
      const member = await requireMember(trx, projectId, request.params.member_id);
      const leaving = member.user_id === request.userId;
      if (!leaving && request.projectRole !== 'owner') throw new Forbidden('Only an owner can remove another member');
      if (leaving && request.apiToken && request.projectRole !== 'owner') throw new Forbidden('Leaving a project needs a login, or an API token with the owner role there');
      await removeMember(trx, projectId, member);
      // The last invitation to the address is gone: its emailed link must not prove it any more.
      if (member.status === 'invited' && !(await hasPendingInvitation(trx, member.email))) await dropInvitationToken(trx, member.email);
      record({ action: 'member.removed', resource_type: 'member', resource_id: member.id, before: member, after: null });
      return member;
    });
    // A cancelled invitation of the day gives its count back to the project's 3 a day to that address.
    if (removed.status === 'invited' && Date.parse(removed.created_at) > Date.now() - DAY_MS) await limits.invitationsPerProjectAddress.giveBack(`${projectId} ${removed.email}`);
    return reply.code(204).send(null);
  });
};
