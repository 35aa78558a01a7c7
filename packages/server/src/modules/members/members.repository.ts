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

/** The account with this address, when its address is verified: only such an account is added as an active member (contract §8). */
export async function findVerifiedUserId(db: Db, email: string): Promise<string | undefined> {
  const user = await db.selectFrom('users').select('id').where('email', '=', email).where('email_verified_at', 'is not', null).executeTakeFirst();
  return user?.id;
}

/** An active membership of the verified account userId, or (userId null) an invitation to the address. */
export async function addMember(trx: Db, projectId: string, email: string, role: Role, userId: string | null): Promise<Member> {
  const row = { id: newId(), project_id: projectId, user_id: userId, email, role, created_at: nowIso() };
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

export async function pendingInvitations(db: Db, email: string): Promise<(Member & { project_id: string })[]> {
  const rows = await db.selectFrom('project_members').select(COLUMNS).where('email', '=', email).where('user_id', 'is', null).execute();
  return rows.map((row) => ({ ...toMember(row), project_id: row.project_id }));
}

/** The invitation becomes the user's membership; undefined when it is gone or was accepted meanwhile. */
export async function acceptInvitation(trx: Db, memberId: string, userId: string): Promise<Member | undefined> {
  const row = await trx.updateTable('project_members').set({ user_id: userId }).where('id', '=', memberId).where('user_id', 'is', null).returning(COLUMNS).executeTakeFirst();
  return row && toMember(row);
}
