import { createHash, randomBytes } from 'node:crypto';
import type { Db } from '../../db/database.js';
import { nowIso } from '../../db/values.js';
import type { ProjectWrites } from '../audit/project-writes.js';
import { acceptInvitation, pendingInvitations } from './members.repository.js';

const INVITATION_LIFETIME_MS = 7 * 24 * 60 * 60 * 1000;

export const hashInvitationToken = (token: string) => createHash('sha256').update(token).digest('hex');

/**
 * A new secret for the address's invitations (contract §8): it replaces the one sent before, so
 * only the newest emailed link works. Returns the secret (for the email); only its hash is kept.
 */
export async function newInvitationToken(trx: Db, email: string): Promise<string> {
  const token = randomBytes(32).toString('base64url');
  const now = nowIso();
  const row = { email, token_hash: hashInvitationToken(token), expires_at: new Date(Date.parse(now) + INVITATION_LIFETIME_MS).toISOString(), created_at: now };
  await trx.deleteFrom('invitation_tokens').where('expires_at', '<', now).execute();
  await trx
    .insertInto('invitation_tokens')
    .values(row)
    .onConflict((c) => c.column('email').doUpdateSet({ token_hash: row.token_hash, expires_at: row.expires_at, created_at: row.created_at }))
    .execute();
  return token;
}

/** Whether the token is the address's current, unexpired invitation secret and an invitation still waits for it. */
export async function isUsableInvitation(db: Db, email: string, token: string): Promise<boolean> {
  const found = await db
    .selectFrom('invitation_tokens')
    .select('email')
    .where('token_hash', '=', hashInvitationToken(token))
    .where('email', '=', email)
    .where('expires_at', '>', nowIso())
    .where((eb) => eb.exists(eb.selectFrom('project_members').select('id').where('project_members.email', '=', email).where('project_members.user_id', 'is', null)))
    .executeTakeFirst();
  return found !== undefined;
}

/** Uses the token up (single use); false when it was not usable any more (used by a concurrent sign-up, expired). */
export async function useInvitationToken(trx: Db, email: string, token: string): Promise<boolean> {
  const used = await trx
    .deleteFrom('invitation_tokens')
    .where('token_hash', '=', hashInvitationToken(token))
    .where('email', '=', email)
    .where('expires_at', '>', nowIso())
    .returning('email')
    .executeTakeFirst();
  return used !== undefined;
}

/**
 * The address is proven (registration with the invitation's token, a verification link, a
 * password reset): every invitation for it becomes the user's membership, one audit event
 * (`member.joined`) in each project. Never called for an address that is not proven.
 */
export async function joinInvitedProjects(writes: ProjectWrites, db: Db, user: { id: string; email: string }): Promise<void> {
  for (const invitation of await pendingInvitations(db, user.email)) {
    await writes.apply({ user_id: user.id, email: user.email, token_id: null }, invitation.project_id, async (trx, record) => {
      const { project_id: _project, ...before } = invitation;
      const after = await acceptInvitation(trx, invitation.id, user.id);
      if (after) record({ action: 'member.joined', resource_type: 'member', resource_id: after.id, before, after });
    });
  }
}
