import type { FastifyRequest } from 'fastify';
import type { Db } from '../../db/database.js';
import { Unauthorized } from '../../errors.js';
import { findSessionUser } from './accounts.repository.js';
import type { LoginTokens } from './tokens.js';

/** The credential of `Authorization: Bearer <credential>`, if the header has that shape. */
export const bearerOf = (request: FastifyRequest): string | undefined => /^Bearer\s+(\S+)\s*$/i.exec(request.headers.authorization ?? '')?.[1];

/**
 * The bearer's login token, valid, of the user's current token version and not logged out, with
 * its user; else 401 (an API token is not a login token).
 */
export async function loginSession({ db, tokens }: { db: Db; tokens: LoginTokens }, request: FastifyRequest) {
  const secret = bearerOf(request);
  const claims = secret ? await tokens.verify(secret) : null;
  const user = claims ? await findSessionUser(db, claims.userId, claims.jti) : undefined;
  if (!claims || !user || user.token_version !== claims.tokenVersion || user.revoked !== null) throw new Unauthorized();
  return { user, claims };
}
