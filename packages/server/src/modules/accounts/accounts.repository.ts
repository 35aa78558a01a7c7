import type { Db } from '../../db/database.js';
import { conflictOnDuplicate } from '../../db/errors.js';
import { newId, nowIso } from '../../db/values.js';

export interface NewUser {
  id: string;
  email: string;
}

/** A verified account when the address was proven at sign-up (an invitation's token), else unverified. */
export async function createUser(db: Db, email: string, passwordHash: string, verified = false): Promise<NewUser> {
  const now = nowIso();
  const user = { id: newId(), email, password_hash: passwordHash, created_at: now, email_verified_at: verified ? now : null };
  await conflictOnDuplicate(db.insertInto('users').values(user).execute(), 'Email already registered');
  return { id: user.id, email };
}

export function findUserByEmail(db: Db, email: string) {
  return db.selectFrom('users').select(['id', 'password_hash', 'token_version', 'email_verified_at']).where('email', '=', email).executeTakeFirst();
}

/**
 * The login token's user, and whether log out revoked this very token (jti): one indexed read per
 * request, as before log out existed, so every instance sees a log out on the token's next use.
 */
export function findSessionUser(db: Db, userId: string, jti: string | null) {
  return db
    .selectFrom('users')
    .leftJoin('revoked_login_tokens', (join) => join.onRef('revoked_login_tokens.user_id', '=', 'users.id').on('revoked_login_tokens.jti', '=', jti ?? ''))
    .select(['users.id', 'users.email', 'users.token_version', 'users.email_verified_at', 'revoked_login_tokens.jti as revoked'])
    .where('users.id', '=', userId)
    .executeTakeFirst();
}

/**
 * Log out: this login token fails from its next use. Kept until it would have expired anyway
 * (expired ones are pruned here). A token from before log out existed has no id: then every login
 * token of the user ends, as a password reset does.
 */
export async function revokeLoginToken(db: Db, userId: string, jti: string | null, expiresAt: Date): Promise<void> {
  if (jti === null) {
    await db.updateTable('users').set((eb) => ({ token_version: eb('token_version', '+', 1) })).where('id', '=', userId).execute();
    return;
  }
  await db.insertInto('revoked_login_tokens').values({ jti, user_id: userId, expires_at: expiresAt.toISOString() }).onConflict((c) => c.column('jti').doNothing()).execute();
  await db.deleteFrom('revoked_login_tokens').where('expires_at', '<', nowIso()).execute();
}

export async function storeResetToken(db: Db, tokenHash: string, userId: string, expiresAt: string): Promise<void> {
  await db.insertInto('password_resets').values({ token_hash: tokenHash, user_id: userId, expires_at: expiresAt, created_at: nowIso() }).execute();
}

/** Whether the reset token exists, is unused and has not expired (resetPassword checks again, atomically). */
export async function isUsableResetToken(db: Db, tokenHash: string): Promise<boolean> {
  const found = await db
    .selectFrom('password_resets')
    .select('user_id')
    .where('token_hash', '=', tokenHash)
    .where('used_at', 'is', null)
    .where('expires_at', '>', nowIso())
    .executeTakeFirst();
  return found !== undefined;
}

/** The address is proven (once; a later proof keeps the first date). */
export async function markVerified(trx: Db, userId: string, now: string): Promise<void> {
  await trx.updateTable('users').set({ email_verified_at: now }).where('id', '=', userId).where('email_verified_at', 'is', null).execute();
}

/**
 * Uses the reset token (once, before it expires) to set a new password and revoke every login
 * token issued so far; the user's other reset tokens are used up with it. The emailed link proves
 * the address, so it also verifies it (docs/api.md, Account). The user, or undefined when the token is
 * unknown, used or expired.
 */
export function resetPassword(db: Db, tokenHash: string, passwordHash: string): Promise<NewUser | undefined> {
  return db.transaction().execute(async (trx) => {
    const now = nowIso();
    const used = await trx
      .updateTable('password_resets')
      .set({ used_at: now })
      .where('token_hash', '=', tokenHash)
      .where('used_at', 'is', null)
      .where('expires_at', '>', now)
      .returning('user_id')
      .executeTakeFirst();
    if (!used) return undefined;
    await trx.updateTable('password_resets').set({ used_at: now }).where('user_id', '=', used.user_id).where('used_at', 'is', null).execute();
    const user = await trx
      .updateTable('users')
      .set((eb) => ({ password_hash: passwordHash, token_version: eb('token_version', '+', 1) }))
      .where('id', '=', used.user_id)
      .returning(['id', 'email'])
      .executeTakeFirstOrThrow();
    await markVerified(trx, user.id, now);
    return user;
  });
}

export async function storeVerificationToken(db: Db, tokenHash: string, userId: string, expiresAt: string): Promise<void> {
  await db.insertInto('email_verifications').values({ token_hash: tokenHash, user_id: userId, expires_at: expiresAt, created_at: nowIso() }).execute();
}

/**
 * Uses the verification token (once, before it expires; the user's other ones with it) and marks
 * the address verified. The user, or undefined when the token is unknown, used or expired.
 */
export function verifyEmail(db: Db, tokenHash: string): Promise<NewUser | undefined> {
  return db.transaction().execute(async (trx) => {
    const now = nowIso();
    const used = await trx
      .updateTable('email_verifications')
      .set({ used_at: now })
      .where('token_hash', '=', tokenHash)
      .where('used_at', 'is', null)
      .where('expires_at', '>', now)
      .returning('user_id')
      .executeTakeFirst();
    if (!used) return undefined;
    await trx.updateTable('email_verifications').set({ used_at: now }).where('user_id', '=', used.user_id).where('used_at', 'is', null).execute();
    await markVerified(trx, used.user_id, now);
    return trx.selectFrom('users').select(['id', 'email']).where('id', '=', used.user_id).executeTakeFirstOrThrow();
  });
}
