import type { Db } from '../../db/database.js';
import { conflictOnDuplicate } from '../../db/errors.js';
import { newId, nowIso } from '../../db/values.js';

export async function createUser(db: Db, email: string, passwordHash: string): Promise<{ id: string; email: string }> {
  const user = { id: newId(), email, password_hash: passwordHash, created_at: nowIso() };
  await conflictOnDuplicate(db.insertInto('users').values(user).execute(), 'Email already registered');
  return { id: user.id, email };
}

export function findUserByEmail(db: Db, email: string) {
  return db.selectFrom('users').select(['id', 'password_hash', 'token_version']).where('email', '=', email).executeTakeFirst();
}

export function findUserById(db: Db, id: string) {
  return db.selectFrom('users').select(['id', 'email', 'token_version']).where('id', '=', id).executeTakeFirst();
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

/**
 * Uses the reset token (once, before it expires) to set a new password and revoke every login
 * token issued so far; the user's other reset tokens are used up with it. False when the token is
 * unknown, used or expired.
 */
export function resetPassword(db: Db, tokenHash: string, passwordHash: string): Promise<boolean> {
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
    if (!used) return false;
    await trx.updateTable('password_resets').set({ used_at: now }).where('user_id', '=', used.user_id).where('used_at', 'is', null).execute();
    await trx
      .updateTable('users')
      .set((eb) => ({ password_hash: passwordHash, token_version: eb('token_version', '+', 1) }))
      .where('id', '=', used.user_id)
      .execute();
    return true;
  });
}
