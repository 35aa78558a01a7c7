import { createHash, randomBytes } from 'node:crypto';
import type { Selectable } from 'kysely';
import type { Db } from '../../db/database.js';
import type { ApiTokensTable, Role } from '../../db/schema.js';
import { newId, nowIso, toIso, toIsoOrNull } from '../../db/values.js';
import { NotFound } from '../../errors.js';

export const TOKEN_PREFIX = 'gdn_';
const LAST_USED_PRECISION_MS = 60_000;

const hashOf = (secret: string) => createHash('sha256').update(secret).digest('hex');
const COLUMNS = ['id', 'name', 'project_id', 'role', 'created_at', 'expires_at', 'last_used_at'] as const;

function toToken(row: Pick<Selectable<ApiTokensTable>, (typeof COLUMNS)[number]>) {
  return { ...row, created_at: toIso(row.created_at), expires_at: toIsoOrNull(row.expires_at), last_used_at: toIsoOrNull(row.last_used_at) };
}

/** The secret (gdn_ + 32 random bytes) is returned here only; the database keeps its SHA-256. */
export async function createApiToken(db: Db, userId: string, fields: { name: string; project_id: string | null; role: Role | null; expires_in_days: number | null }) {
  const secret = `${TOKEN_PREFIX}${randomBytes(32).toString('base64url')}`;
  const now = new Date(nowIso());
  const row = {
    id: newId(),
    user_id: userId,
    name: fields.name,
    token_hash: hashOf(secret),
    project_id: fields.project_id,
    role: fields.role,
    created_at: now.toISOString(),
    expires_at: fields.expires_in_days === null ? null : new Date(now.getTime() + fields.expires_in_days * 86_400_000).toISOString(),
    last_used_at: null,
  };
  await db.insertInto('api_tokens').values(row).execute();
  return { ...toToken(row), token: secret };
}

export async function listApiTokens(db: Db, userId: string) {
  const rows = await db.selectFrom('api_tokens').select(COLUMNS).where('user_id', '=', userId).orderBy('created_at').orderBy('id').execute();
  return rows.map(toToken);
}

let revocations = 0;

/**
 * Counts the revocations made by this process (a token deleted, an account removed): the SDK
 * surfaces' token cache (local-evaluation/token-auth.ts) drops what it holds when it moves.
 */
export const tokenRevocations = (): number => revocations;

/** Called after a write that ends tokens (deleteApiToken, account removal). */
export function tokensRevoked(): void {
  revocations++;
}

/**
 * Gone at once: /api reads the token on every request, and the SDK surfaces of this instance drop
 * their cache (tokensRevoked); those of other instances re-read it within a second (token-auth.ts).
 */
export async function deleteApiToken(db: Db, userId: string, tokenId: string): Promise<void> {
  const result = await db.deleteFrom('api_tokens').where('id', '=', tokenId).where('user_id', '=', userId).executeTakeFirst();
  if (result.numDeletedRows === 0n) throw new NotFound('Token not found');
  tokensRevoked();
}

/**
 * The token's holder and scope when the secret names an unexpired token, else undefined. One
 * indexed read per call (/api calls it on every request, so a revoked token fails there on its next
 * use everywhere; the SDK surfaces keep its answer a second, token-auth.ts); last_used_at is
 * written on first use and then at most once a minute (the condition holds across instances).
 */
export async function authenticateApiToken(db: Db, secret: string) {
  const row = await db
    .selectFrom('api_tokens')
    .innerJoin('users', 'users.id', 'api_tokens.user_id')
    .select(['api_tokens.id', 'api_tokens.user_id', 'users.email', 'api_tokens.project_id', 'api_tokens.role', 'api_tokens.expires_at', 'api_tokens.last_used_at'])
    .where('api_tokens.token_hash', '=', hashOf(secret))
    .where('users.email_verified_at', 'is not', null) // tokens act only for verified accounts (docs/api.md, API tokens)
    .executeTakeFirst();
  const now = Date.now();
  if (!row || (row.expires_at !== null && Date.parse(toIso(row.expires_at)) <= now)) return undefined;
  if (row.last_used_at === null || Date.parse(toIso(row.last_used_at)) <= now - LAST_USED_PRECISION_MS) {
    const stale = new Date(now - LAST_USED_PRECISION_MS).toISOString();
    await db
      .updateTable('api_tokens')
      .set({ last_used_at: new Date(now).toISOString() })
      .where('id', '=', row.id)
      .where((eb) => eb.or([eb('last_used_at', 'is', null), eb('last_used_at', '<=', stale)]))
      .execute();
  }
  return { id: row.id, user_id: row.user_id, email: row.email, project_id: row.project_id, role: row.role, expiresAt: row.expires_at === null ? null : Date.parse(toIso(row.expires_at)) };
}
