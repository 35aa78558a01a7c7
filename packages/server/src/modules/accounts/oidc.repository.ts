import type { Db } from '../../db/database.js';
import { isUniqueViolation } from '../../db/errors.js';
import { newId, nowIso } from '../../db/values.js';
import { markVerified } from './accounts.repository.js';

/** Who signed in at the provider: its `sub`, and the email it vouches for (only when verified). */
export interface ProviderAccount {
  issuer: string;
  subject: string;
  /** Trimmed, lower-cased in ASCII only (asciiLower); null when the provider gave none or did not verify it. */
  verifiedEmail: string | null;
}

export interface SignedInUser {
  id: string;
  email: string;
  token_version: number;
}

export type OidcSignIn =
  | SignedInUser
  | { refused: 'unverified' | 'domain' | 'lookalike' }
  /** The address belongs to an account that never proved it: the caller removes it, then signs in again. */
  | { unproven: { id: string; email: string } };

/**
 * An email as the provider's is compared: A–Z lower-cased, nothing else changed. Unicode case
 * folding would make the Kelvin sign (U+212A) a "k", and "\u212Aim@corp.com" someone else's
 * kim@corp.com (docs/security.md, Sign-in with OpenID Connect).
 */
export const asciiLower = (email: string) => email.trim().replace(/[A-Z]/g, (letter) => letter.toLowerCase());

/** What an address folds to for the look-alike check: compatibility-normalised, then lower-cased in full. */
const folded = (email: string) => email.normalize('NFKC').toLowerCase();

/**
 * The user this provider account signs in as (docs/api.md, Account): the one linked to its `sub`;
 * else the account whose email is the verified email byte for byte, if that account proved its
 * address (an account that never did is `unproven`: not taken over); else a new account for the
 * verified email, when `mayCreate` allows its domain and no account's address is a look-alike of
 * it. All in one transaction: a refusal writes nothing.
 */
export async function signInWithProvider(db: Db, account: ProviderAccount, mayCreate: (email: string) => boolean): Promise<OidcSignIn> {
  try {
    return await signInOnce(db, account, mayCreate);
  } catch (error) {
    // The same person signing in twice at once (two tabs): the other one created or linked first; now it is found.
    if (isUniqueViolation(error)) return signInOnce(db, account, mayCreate);
    throw error;
  }
}

function signInOnce(db: Db, account: ProviderAccount, mayCreate: (email: string) => boolean): Promise<OidcSignIn> {
  return db.transaction().execute(async (trx): Promise<OidcSignIn> => {
    const now = nowIso();
    const linked = await trx
      .selectFrom('oidc_identities')
      .innerJoin('users', 'users.id', 'oidc_identities.user_id')
      .select(['users.id', 'users.email', 'users.token_version'])
      .where('oidc_identities.issuer', '=', account.issuer)
      .where('oidc_identities.subject', '=', account.subject)
      .executeTakeFirst();
    const email = account.verifiedEmail;
    if (linked) {
      await trx.updateTable('oidc_identities').set({ last_sign_in_at: now }).where('issuer', '=', account.issuer).where('subject', '=', account.subject).execute();
      if (email !== null && email === linked.email) await markVerified(trx, linked.id, now);
      return { id: linked.id, email: linked.email, token_version: linked.token_version };
    }
    if (email === null) return { refused: 'unverified' };
    const link = (userId: string) =>
      trx.insertInto('oidc_identities').values({ issuer: account.issuer, subject: account.subject, user_id: userId, email, created_at: now, last_sign_in_at: now }).execute();
    const existing = await trx.selectFrom('users').select(['id', 'email', 'token_version', 'email_verified_at']).where('email', '=', email).executeTakeFirst();
    if (existing && existing.email_verified_at !== null) {
      await link(existing.id);
      return { id: existing.id, email, token_version: existing.token_version };
    }
    if (!mayCreate(email)) return { refused: 'domain' };
    if (existing) return { unproven: { id: existing.id, email } };
    if (folded(email) !== email && (await trx.selectFrom('users').select('id').where('email', '=', folded(email)).executeTakeFirst())) return { refused: 'lookalike' };
    const user = { id: newId(), email, password_hash: NO_PASSWORD, created_at: now, email_verified_at: now };
    await trx.insertInto('users').values(user).execute();
    await link(user.id);
    return { id: user.id, email, token_version: 0 };
  });
}

/** The password hash of an account made by OpenID sign-in: no password matches it (passwords.ts). */
export const NO_PASSWORD = '';

/** How the account may sign in: with a password (it has one), with the OpenID provider (it is linked). */
export async function signInMethods(db: Db, userId: string): Promise<Array<'password' | 'oidc'>> {
  const user = await db.selectFrom('users').select('password_hash').where('id', '=', userId).executeTakeFirst();
  const identity = await db.selectFrom('oidc_identities').select('subject').where('user_id', '=', userId).executeTakeFirst();
  return [...(user && user.password_hash !== NO_PASSWORD ? ['password' as const] : []), ...(identity ? ['oidc' as const] : [])];
}
