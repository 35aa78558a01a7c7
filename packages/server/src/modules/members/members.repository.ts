import type { Selectable } from 'kysely';
import type { Db } from '../../db/database.js';
import { conflictOnDuplicate } from '../../db/errors.js';
import type { ProjectMembersTable, Role } from '../../db/schema.js';
import { newId, nowIso, toIso } from '../../db/values.js';
import { Conflict, NotFound } from '../../errors.js';

const COLUMNS = ['id', 'project_id', 'user_id', 'email', 'role', 'created_at'] as const;

export function toMember(row: Pick<Selectable<ProjectMembersTable>, (typeof COLUMNS)[number]>) {
  return {
    id: row.id,
    user_id: row.user_id,
    email: row.email,
    role: row.role,
    status: row.user_id === null ? ('invited' as const) : ('active' as const),
    created_at: toIso(row.created_at),
  };
}
export type Member = ReturnType<typeof toMember>;

/** The user's role in the project, if an active member. */
export async function findMemberRole(db: Db, projectId: string, userId: string): Promise<Role | undefined> {
  const row = await db.selectFrom('project_members').select('role').where('project_id', '=', projectId).where('user_id', '=', userId).executeTakeFirst();
  return row?.role;
}

/** Owners first, then the others; each group by email. */
export async function listMembers(db: Db, projectId: string): Promise<Member[]> {
  const rows = await db.selectFrom('project_members').select(COLUMNS).where('project_id', '=', projectId).execute();
  return rows
    .map(toMember)
    .sort((a, b) => Number(b.role === 'owner') - Number(a.role === 'owner') || (a.email < b.email ? -1 : a.email > b.email ? 1 : 0));
}

export async function requireMember(db: Db, projectId: string, memberId: string): Promise<Member> {
  const row = await db.selectFrom('project_members').select(COLUMNS).where('id', '=', memberId).where('project_id', '=', projectId).executeTakeFirst();
  if (!row) throw new NotFound('Member not found');
  return toMember(row);
}

/** An invitation to the address (docs/api.md, Members: adding a member always invites). */
export async function addInvitation(trx: Db, projectId: string, email: string, role: Role, invitedBy: string): Promise<Member> {
  const row = { id: newId(), project_id: projectId, user_id: null, email, role, invited_by: invitedBy, created_at: nowIso() };
  await conflictOnDuplicate(trx.insertInto('project_members').values(row).execute(), `${email} is already a member of this project or invited to it`);
  return toMember(row);
}

/** A project keeps at least one active owner: demoting or removing the last one is refused. */
async function keepAnOwner(trx: Db, projectId: string, member: Member): Promise<void> {
  if (member.role !== 'owner' || member.status !== 'active') return;
  const owners = await trx
    .selectFrom('project_members')
    .select((eb) => eb.fn.countAll<number | string>().as('count'))
    .where('project_id', '=', projectId)
    .where('role', '=', 'owner')
    .where('user_id', 'is not', null)
    .executeTakeFirstOrThrow();
  if (Number(owners.count) <= 1) throw new Conflict('A project needs an owner: make someone else owner first');
}

export async function changeMemberRole(trx: Db, projectId: string, member: Member, role: Role): Promise<Member> {
  if (role !== member.role) await keepAnOwner(trx, projectId, member);
  const row = await trx.updateTable('project_members').set({ role }).where('id', '=', member.id).returning(COLUMNS).executeTakeFirstOrThrow();
  return toMember(row);
}

export async function removeMember(trx: Db, projectId: string, member: Member): Promise<void> {
  await keepAnOwner(trx, projectId, member);
  await trx.deleteFrom('project_members').where('id', '=', member.id).execute();
}

export async function hasPendingInvitation(db: Db, email: string): Promise<boolean> {
  const row = await db.selectFrom('project_members').select('id').where('email', '=', email).where('user_id', 'is', null).executeTakeFirst();
  return row !== undefined;
}

/** The project's name, for the invitation email (the route's authorization found the project). */
export async function projectName(db: Db, projectId: string): Promise<string> {
  const row = await db.selectFrom('projects').select('name').where('id', '=', projectId).executeTakeFirst();
  return row?.name ?? '';
}

/** The invitation to this address, if it still waits: what only its invitee may accept or decline. */
export async function findPendingInvitation(db: Db, memberId: string, email: string): Promise<(Member & { project_id: string }) | undefined> {
  const row = await db.selectFrom('project_members').select(COLUMNS).where('id', '=', memberId).where('email', '=', email).where('user_id', 'is', null).executeTakeFirst();
  return row && { ...toMember(row), project_id: row.project_id };
}

/** The invitations waiting for this address, newest first, as their invitee sees them. */
export async function invitationsTo(db: Db, email: string) {
  const rows = await db
    .selectFrom('project_members')
    .innerJoin('projects', 'projects.id', 'project_members.project_id')
    .select(['project_members.id', 'project_members.project_id', 'projects.name', 'project_members.role', 'project_members.invited_by', 'project_members.created_at'])
    .where('project_members.email', '=', email)
    .where('project_members.user_id', 'is', null)
    .orderBy('project_members.created_at', 'desc')
    .orderBy('project_members.id')
    .execute();
  return rows.map((row) => ({
    id: row.id,
    project: { id: row.project_id, name: row.name },
    role: row.role,
    invited_by: { email: row.invited_by ?? '' },
    created_at: toIso(row.created_at),
  }));
}

/** The invitation becomes the user's membership; undefined when it is gone or was answered meanwhile. */
export async function acceptInvitation(trx: Db, memberId: string, userId: string): Promise<Member | undefined> {
  const row = await trx.updateTable('project_members').set({ user_id: userId }).where('id', '=', memberId).where('user_id', 'is', null).returning(COLUMNS).executeTakeFirst();
  return row && toMember(row);
}
