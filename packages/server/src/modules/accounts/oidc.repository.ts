import type { Db } from '../../db/database.js';
import { isUniqueViolation } from '../../db/errors.js';
import { newId, nowIso } from '../../db/values.js';
import { markVerified } from './accounts.repository.js';

/** Who signed in at the provider: its `sub`, and the email it vouches for (only when verified). */
export interface ProviderAccount {
  issuer: string;
  subject: string;
  /** Lower-cased and trimmed; null when the provider gave none or did not verify it. */
  verifiedEmail: string | null;
}

export interface SignedInUser {
  id: string;
  email: string;
  token_version: number;
  /** Its email is the provider's verified one: its waiting invitations may be accepted. */
  addressProven: boolean;
  created: boolean;
}

export type OidcSignIn = SignedInUser | { refused: 'unverified' | 'domain' };

/**
 * The user this provider account signs in as (docs/api.md, Account): the one linked to its `sub`; else the
 * account with its verified email, linked now; else a new account for the verified email, when
 * `mayCreate` allows its domain. All in one transaction: a refusal writes nothing.
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
    const columns = ['users.id', 'users.email', 'users.token_version', 'users.email_verified_at'] as const;
    const linked = await trx
      .selectFrom('oidc_identities')
      .innerJoin('users', 'users.id', 'oidc_identities.user_id')
      .select(columns)
      .where('oidc_identities.issuer', '=', account.issuer)
      .where('oidc_identities.subject', '=', account.subject)
      .executeTakeFirst();
    const email = account.verifiedEmail;
    if (linked) {
      await trx.updateTable('oidc_identities').set({ last_sign_in_at: now }).where('issuer', '=', account.issuer).where('subject', '=', account.subject).execute();
      const proven = email !== null && email === linked.email;
      if (proven) await markVerified(trx, linked.id, now);
      return { id: linked.id, email: linked.email, token_version: linked.token_version, addressProven: proven, created: false };
    }
    if (email === null) return { refused: 'unverified' };
    const link = (userId: string) =>
      trx.insertInto('oidc_identities').values({ issuer: account.issuer, subject: account.subject, user_id: userId, email, created_at: now, last_sign_in_at: now }).execute();
    const existing = await trx.selectFrom('users').select(['id', 'email', 'token_version', 'email_verified_at']).where('email', '=', email).executeTakeFirst();
    if (existing) {
      await link(existing.id);
      if (existing.email_verified_at === null) {
        // Nobody proved this address when the account was made: its password (and sessions) may be
        // someone else's who registered it first. The provider proves it now; theirs end here.
        await trx.updateTable('users').set({ password_hash: NO_PASSWORD, token_version: existing.token_version + 1, email_verified_at: now }).where('id', '=', existing.id).execute();
        return { id: existing.id, email, token_version: existing.token_version + 1, addressProven: true, created: false };
      }
      return { id: existing.id, email, token_version: existing.token_version, addressProven: true, created: false };
    }
    if (!mayCreate(email)) return { refused: 'domain' };
    const user = { id: newId(), email, password_hash: NO_PASSWORD, created_at: now, email_verified_at: now };
    await trx.insertInto('users').values(user).execute();
    await link(user.id);
    return { id: user.id, email, token_version: 0, addressProven: true, created: true };
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
