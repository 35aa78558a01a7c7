import type { Db } from '../../db/database.js';
import type { Actor } from '../changes/changes.schemas.js';
import type { ProjectWrites } from '../changes/project-writes.js';
import type { HistoryRecorder } from '../history/history.recorder.js';
import { dropInvitationToken } from '../accounts/invitation-tokens.js';
import { tokensRevoked } from '../api-tokens/api-tokens.repository.js';
import { withdrawInvitation } from '../members/invitations.js';
import { removeMember, requireMember } from '../members/members.repository.js';
import { deleteProject } from '../projects/projects.repository.js';

export interface AccountRemoval {
  db: Db;
  writes: ProjectWrites;
  history: HistoryRecorder;
}

/** The account's active memberships, each with how many other active members its project has. */
async function membershipsOf(db: Db, userId: string) {
  return db
    .selectFrom('project_members as mine')
    .innerJoin('projects', 'projects.id', 'mine.project_id')
    .select((eb) => [
      'mine.id',
      'mine.project_id',
      'mine.role',
      'projects.name',
      eb
        .selectFrom('project_members as others')
        .select(eb.fn.countAll<number | string>().as('count'))
        .whereRef('others.project_id', '=', 'mine.project_id')
        .where('others.user_id', 'is not', null)
        .where('others.user_id', '<>', userId)
        .as('others'),
      eb
        .selectFrom('project_members as owners')
        .select(eb.fn.countAll<number | string>().as('count'))
        .whereRef('owners.project_id', '=', 'mine.project_id')
        .where('owners.user_id', 'is not', null)
        .where('owners.user_id', '<>', userId)
        .where('owners.role', '=', 'owner')
        .as('other_owners'),
    ])
    .where('mine.user_id', '=', userId)
    .orderBy('projects.name')
    .execute();
}

/** Projects the account is the last owner of while others are members: it may not leave them ownerless (409). */
export async function projectsLeftWithoutOwner(db: Db, userId: string): Promise<string[]> {
  return (await membershipsOf(db, userId)).filter((m) => m.role === 'owner' && Number(m.others) > 0 && Number(m.other_owners) === 0).map((m) => m.name);
}

/**
 * Deletes an account (docs/api.md, Account, "Deleting an account"). In this order, so that nothing
 * it held outlives it: its API tokens and login tokens end (the first write, at once on every
 * instance); each project it alone belongs to is deleted with everything in it; its memberships
 * elsewhere end (`member.removed`, by the account itself; the project's creator, if it was, becomes
 * another member); with `withdrawInvitations`, the invitations waiting for its address are
 * withdrawn; then the account itself, so its address may register again. Audit events keep its id
 * and email. `onlyUnverified`: nothing happens (false) unless its address was never verified (an
 * OpenID sign-in that proves the address replaces such an account instead of taking it over).
 * A shared project it is the last owner of keeps its other members and no owner: callers that
 * must not allow that ask projectsLeftWithoutOwner first (removeMember refuses it again, in the write).
 */
export async function removeAccount(deps: AccountRemoval, user: { id: string; email: string }, options: { withdrawInvitations: boolean; onlyUnverified?: boolean }): Promise<boolean> {
  const { db, writes } = deps;
  const ended = await db.transaction().execute(async (trx) => {
    let end = trx.updateTable('users').set((eb) => ({ token_version: eb('token_version', '+', 1) })).where('id', '=', user.id);
    if (options.onlyUnverified) end = end.where('email_verified_at', 'is', null);
    if ((await end.executeTakeFirst()).numUpdatedRows === 0n) return false;
    await trx.deleteFrom('api_tokens').where('user_id', '=', user.id).execute();
    return true;
  });
  if (!ended) return false;
  tokensRevoked();
  const actor: Actor = { user_id: user.id, email: user.email, token_id: null };
  for (const membership of await membershipsOf(db, user.id)) {
    if (Number(membership.others) === 0) {
      await deleteProject(deps, actor, membership.project_id);
      continue;
    }
    await writes.apply(actor, membership.project_id, async (trx, record) => {
      const member = await requireMember(trx, membership.project_id, membership.id);
      if (options.onlyUnverified) await trx.deleteFrom('project_members').where('id', '=', member.id).execute();
      else await removeMember(trx, membership.project_id, member);
      // projects.owner_id names the creator; it must name an account that still exists.
      const successor = await trx
        .selectFrom('project_members')
        .select('user_id')
        .where('project_id', '=', membership.project_id)
        .where('user_id', 'is not', null)
        .orderBy((eb) => eb.case().when('role', '=', 'owner').then(0).else(1).end())
        .orderBy('created_at')
        .executeTakeFirst();
      if (successor) await trx.updateTable('projects').set({ owner_id: successor.user_id! }).where('id', '=', membership.project_id).where('owner_id', '=', user.id).execute();
      record({ action: 'member.removed', resource_type: 'member', resource_id: member.id, before: member, after: null });
    });
  }
  if (options.withdrawInvitations) {
    const waiting = await db.selectFrom('project_members').select(['id', 'project_id']).where('email', '=', user.email).where('user_id', 'is', null).execute();
    for (const invitation of waiting) await writes.apply(actor, invitation.project_id, (trx, record) => withdrawInvitation(trx, record, invitation.id, user.email));
    await dropInvitationToken(db, user.email);
  }
  await db.deleteFrom('users').where('id', '=', user.id).execute();
  return true;
}
