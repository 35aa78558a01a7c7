import { createHash, randomBytes } from 'node:crypto';
import type { Db } from '../../db/database.js';
import { nowIso } from '../../db/values.js';

const INVITATION_LIFETIME_MS = 7 * 24 * 60 * 60 * 1000;

const hashOf = (token: string) => createHash('sha256').update(token).digest('hex');

/**
 * The secret of an address's invitations (docs/api.md, Members): emailed to the address, it proves
 * the address at sign-up and accepts the invitation `memberId` whose email carried it. One per
 * address: a new invitation (from any project) replaces it, so only the newest emailed link works.
 * Returns the secret (for the email); only its hash is kept.
 */
export async function newInvitationToken(trx: Db, email: string, memberId: string): Promise<string> {
  const token = randomBytes(32).toString('base64url');
  const now = nowIso();
  const row = { email, token_hash: hashOf(token), member_id: memberId, expires_at: new Date(Date.parse(now) + INVITATION_LIFETIME_MS).toISOString(), created_at: now };
  await trx.deleteFrom('invitation_tokens').where('expires_at', '<', now).execute();
  await trx
    .insertInto('invitation_tokens')
    .values(row)
    .onConflict((c) => c.column('email').doUpdateSet({ token_hash: row.token_hash, member_id: memberId, expires_at: row.expires_at, created_at: row.created_at }))
    .execute();
  return token;
}

/** No invitation waits for the address any more (the last one was cancelled or accepted): its link stops working. */
export async function dropInvitationToken(trx: Db, email: string): Promise<void> {
  await trx.deleteFrom('invitation_tokens').where('email', '=', email).execute();
}

/** Whether the token is the address's current, unexpired invitation secret. */
export async function isUsableInvitation(db: Db, email: string, token: string): Promise<boolean> {
  const found = await db
    .selectFrom('invitation_tokens')
    .select('email')
    .where('token_hash', '=', hashOf(token))
    .where('email', '=', email)
    .where('expires_at', '>', nowIso())
    .executeTakeFirst();
  return found !== undefined;
}

/**
 * Uses the token up (single use): the invitation its email was sent for (null: none known), or
 * undefined when it was not usable any more (used by a concurrent sign-up, expired).
 */
export async function useInvitationToken(trx: Db, email: string, token: string): Promise<{ memberId: string | null } | undefined> {
  const used = await trx
    .deleteFrom('invitation_tokens')
    .where('token_hash', '=', hashOf(token))
    .where('email', '=', email)
    .where('expires_at', '>', nowIso())
    .returning('member_id')
    .executeTakeFirst();
  return used && { memberId: used.member_id };
}
