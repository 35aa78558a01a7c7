import { createHash, randomBytes } from 'node:crypto';
import type { FastifyRequest } from 'fastify';
import { looksLikeEmail } from '@guidon/engine';
import type { Config } from '../../config.js';
import type { Db } from '../../db/database.js';
import type { ApiPlugin } from '../../http/plugin.js';
import type { RateLimits } from '../../rate-limits.js';
import type { ProjectWrites } from '../changes/project-writes.js';
import type { Mailer } from './mailer.js';
import type { LoginTokens } from './tokens.js';
import { Forbidden, Invalid, Unauthorized } from '../../errors.js';
import { errorResponses } from '../../http/schemas.js';
import { hashPassword, verifyPassword } from './passwords.js';
import { createUser, findUserByEmail, findUserById, isUsableResetToken, resetPassword, storeResetToken } from './accounts.repository.js';
import { authenticateApiToken, TOKEN_PREFIX } from '../api-tokens/api-tokens.repository.js';
import { acceptInvitation, hasPendingInvitation, pendingInvitations } from '../members/members.repository.js';
import { CurrentUser, ForgotPasswordBody, LoginBody, LoginResult, MessageResult, RegisterBody, RegisteredUser, ResetPasswordBody } from './accounts.schemas.js';

const RESET_TOKEN_LIFETIME_MS = 30 * 60 * 1000;
const FORGOT_PASSWORD_ANSWER = { message: 'If an account exists for that email, a password reset link has been sent.' };

const normalizeEmail = (email: string) => email.trim().toLowerCase();
const hashResetToken = (token: string) => createHash('sha256').update(token).digest('hex');

/** /auth/*: no bearer token. */
export const accountRoutes: ApiPlugin<{ db: Db; limits: RateLimits; tokens: LoginTokens; mailer: Mailer; config: Readonly<Config>; writes: ProjectWrites }> = async (
  app,
  { db, limits, tokens, mailer, config, writes },
) => {
  const tags = ['account'];

  app.post('/auth/register', {
    onRequest: async (request) => limits.register?.hit(request.ip),
    schema: { tags, body: RegisterBody, response: { 201: RegisteredUser, ...errorResponses(400, 403, 409, 429) } },
  }, async (request, reply) => {
    const email = normalizeEmail(request.body.email);
    if (!looksLikeEmail(email)) throw new Invalid('email must be a valid email address');
    if (!config.allowRegistration && !(await hasPendingInvitation(db, email))) throw new Forbidden('Sign-up is closed: ask a project owner for an invitation');
    const user = await createUser(db, email, await hashPassword(request.body.password));
    // Every invitation for the address becomes a membership (one audit event in each project).
    for (const invitation of await pendingInvitations(db, email)) {
      await writes.apply({ user_id: user.id, email, token_id: null }, invitation.project_id, async (trx, record) => {
        const { project_id: _project, ...before } = invitation;
        const after = await acceptInvitation(trx, invitation.id, user.id);
        record({ action: 'member.joined', resource_type: 'member', resource_id: after.id, before, after });
      });
    }
    return reply.code(201).send(user);
  });

  app.post('/auth/login', {
    onRequest: async (request) => limits.login?.hit(request.ip),
    schema: { tags, body: LoginBody, response: { 200: LoginResult, ...errorResponses(400, 401, 429) } },
  }, async (request) => {
    const email = normalizeEmail(request.body.email);
    const failureKey = `${request.ip}|${email}`;
    // Counted before the password check, so parallel guesses cannot all slip under the limit; a right password gives it back.
    await limits.failedLogin.hit(failureKey);
    const user = await findUserByEmail(db, email);
    if (!(await verifyPassword(user?.password_hash, request.body.password)) || !user) throw new Unauthorized('Invalid email or password');
    await limits.failedLogin.giveBack(failureKey);
    return { token: await tokens.issue({ userId: user.id, tokenVersion: user.token_version }) };
  });

  const passwordResetLimit = async (request: FastifyRequest) => limits.passwordReset?.hit(request.ip);

  app.post('/auth/forgot-password', {
    onRequest: passwordResetLimit,
    schema: { tags, body: ForgotPasswordBody, response: { 200: MessageResult, ...errorResponses(400, 429) } },
  }, async (request) => {
    // The answer, and its timing, must not tell whether the account exists: the work runs after it.
    const email = normalizeEmail(request.body.email);
    void sendResetLink(email).catch((error) => request.log.error({ err: error }, 'could not send the password reset email'));
    return FORGOT_PASSWORD_ANSWER;
  });

  async function sendResetLink(email: string): Promise<void> {
    if (!(await limits.forgotPassword.tryHit(email))) return;
    const user = await findUserByEmail(db, email);
    if (!user) return;
    const token = randomBytes(32).toString('base64url');
    await storeResetToken(db, hashResetToken(token), user.id, new Date(Date.now() + RESET_TOKEN_LIFETIME_MS).toISOString());
    await mailer.sendPasswordReset(email, `${config.publicUrl}/reset-password?token=${token}`);
  }

  app.post('/auth/reset-password', {
    onRequest: passwordResetLimit,
    schema: {
      tags,
      body: ResetPasswordBody,
      response: { 200: { description: 'Password reset successful', content: { 'text/plain': { schema: { type: 'string' } } } }, ...errorResponses(400, 429) },
    },
  }, async (request, reply) => {
    // The token first: a bogus one must not cost an argon2 hash (memory-hard, on the shared thread pool).
    const tokenHash = hashResetToken(request.body.token);
    const done = (await isUsableResetToken(db, tokenHash)) && (await resetPassword(db, tokenHash, await hashPassword(request.body.newPassword)));
    if (!done) throw new Invalid('Reset token is invalid, expired or already used');
    return reply.type('text/plain; charset=utf-8').send('Password reset successful');
  });
};

/**
 * onRequest hook for /api/*: a valid, unexpired, unrevoked login token (JWT) or API token
 * (gdn_…, contract §9), else 401. Sets who is calling; what they may do is members/access.ts.
 */
export function requireUser({ db, tokens }: { db: Db; tokens: LoginTokens }) {
  return async (request: FastifyRequest): Promise<void> => {
    const secret = /^Bearer\s+(\S+)\s*$/i.exec(request.headers.authorization ?? '')?.[1];
    if (!secret) throw new Unauthorized();
    if (secret.startsWith(TOKEN_PREFIX)) {
      const token = await authenticateApiToken(db, secret);
      if (!token) throw new Unauthorized();
      request.userId = token.user_id;
      request.actor = { user_id: token.user_id, email: token.email, token_id: token.id };
      request.apiToken = { id: token.id, project_id: token.project_id, role: token.role };
      return;
    }
    const claims = await tokens.verify(secret);
    const user = claims ? await findUserById(db, claims.userId) : undefined;
    if (!claims || !user || user.token_version !== claims.tokenVersion) throw new Unauthorized();
    request.userId = user.id;
    request.actor = { user_id: user.id, email: user.email, token_id: null };
    request.apiToken = null;
  };
}

/** GET /api/me */
export const currentUserRoutes: ApiPlugin = async (app) => {
  app.get('/me', { config: { role: 'user' }, schema: { tags: ['account'], response: { 200: CurrentUser, ...errorResponses(401) } } }, async (request) => ({
    user_id: request.userId,
  }));
};
