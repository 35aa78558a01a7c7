import type { FastifyRequest } from 'fastify';
import type { Db } from '../../db/database.js';
import { Unauthorized } from '../../errors.js';
import { bearerOf, loginSession } from '../accounts/sessions.js';
import type { LoginTokens } from '../accounts/tokens.js';
import { authenticateApiToken, TOKEN_PREFIX } from './api-tokens.repository.js';

/**
 * onRequest hook for /api/*: a valid, unexpired, unrevoked login token (JWT) or API token
 * (gdn_…, docs/api.md, API tokens), else 401. Sets who is calling; what they may do is members/access.ts.
 */
export function requireUser(services: { db: Db; tokens: LoginTokens }) {
  return async (request: FastifyRequest): Promise<void> => {
    const secret = bearerOf(request);
    if (!secret) throw new Unauthorized();
    if (secret.startsWith(TOKEN_PREFIX)) {
      const token = await authenticateApiToken(services.db, secret);
      if (!token) throw new Unauthorized();
      request.userId = token.user_id;
      request.actor = { user_id: token.user_id, email: token.email, token_id: token.id };
      request.apiToken = { id: token.id, project_id: token.project_id, role: token.role };
      request.emailVerified = true; // only verified accounts hold API tokens
      return;
    }
    const { user } = await loginSession(services, request);
    request.userId = user.id;
    request.actor = { user_id: user.id, email: user.email, token_id: null };
    request.apiToken = null;
    request.emailVerified = user.email_verified_at !== null;
  };
}
