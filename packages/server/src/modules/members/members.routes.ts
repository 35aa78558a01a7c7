import { Type } from 'typebox';
import { looksLikeEmail } from '@guidon/engine';
import type { ApiPlugin } from '../../http/plugin.js';
import type { Db } from '../../db/database.js';
import type { ProjectWrites } from '../changes/project-writes.js';
import type { Mailer } from '../accounts/mailer.js';
import type { Config } from '../../config.js';
import { Forbidden, Invalid } from '../../errors.js';
import { errorResponses, ProjectParams } from '../../http/schemas.js';
import { requireProject } from '../projects/projects.repository.js';
import { addMember, changeMemberRole, listMembers, removeMember, requireMember } from './members.repository.js';
import { AddMemberBody, ChangeMemberBody, MemberParams } from './members.schemas.js';

export const normalizeEmail = (email: string) => email.trim().toLowerCase();

/** /api/projects/{project_id}/members (contract §8) */
export const memberRoutes: ApiPlugin<{ db: Db; writes: ProjectWrites; mailer: Mailer; config: Readonly<Config> }> = async (app, { db, writes, mailer, config }) => {
  const tags = ['members'];
  const MemberRef = Type.Ref('Member');
  const base = '/projects/:project_id/members';

  app.get(base, {
    config: { role: 'viewer' },
    schema: { tags, params: ProjectParams, response: { 200: Type.Array(MemberRef), ...errorResponses(401, 404) } },
  }, async (request) => listMembers(db, request.params.project_id));

  app.post(base, {
    config: { role: 'owner' },
    schema: { tags, params: ProjectParams, body: AddMemberBody, response: { 201: MemberRef, ...errorResponses(400, 401, 403, 404, 409) } },
  }, async (request, reply) => {
    const email = normalizeEmail(request.body.email);
    if (!looksLikeEmail(email)) throw new Invalid('email must be a valid email address');
    const projectId = request.params.project_id;
    const member = await writes.apply(request.actor, projectId, async (trx, record) => {
      const added = await addMember(trx, projectId, email, request.body.role);
      record({ action: 'member.added', resource_type: 'member', resource_id: added.id, before: null, after: added });
      return added;
    });
    if (member.status === 'invited') {
      const project = await requireProject(db, projectId);
      const link = `${config.publicUrl}/register?email=${encodeURIComponent(email)}`;
      mailer.sendInvitation(email, link, project.name).catch((error: unknown) => request.log.error({ err: error }, 'could not send the invitation email'));
    }
    return reply.code(201).send(member);
  });

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

  // Viewer: any member may leave; removing someone else needs the owner role.
  app.delete(`${base}/:member_id`, {
    config: { role: 'viewer' },
    schema: { tags, params: MemberParams, response: { 204: Type.Null(), ...errorResponses(401, 403, 404, 409) } },
  }, async (request, reply) => {
    const projectId = request.params.project_id;
    await writes.apply(request.actor, projectId, async (trx, record) => {
      const member = await requireMember(trx, projectId, request.params.member_id);
      if (member.user_id !== request.userId && request.projectRole !== 'owner') throw new Forbidden('Only an owner can remove another member');
      await removeMember(trx, projectId, member);
      record({ action: 'member.removed', resource_type: 'member', resource_id: member.id, before: member, after: null });
    });
    return reply.code(204).send(null);
  });
};
