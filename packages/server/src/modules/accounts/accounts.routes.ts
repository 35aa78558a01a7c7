import { createHash, randomBytes } from 'node:crypto';
import type { FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import { looksLikeEmail } from '@guidon/engine';
import type { Config } from '../../config.js';
import type { Db } from '../../db/database.js';
import type { ApiPlugin } from '../../http/plugin.js';
import type { RateLimits } from '../../rate-limits.js';
import type { Mailer } from './mailer.js';
import type { LoginTokens } from './tokens.js';
import { Forbidden, Invalid, Unauthorized } from '../../errors.js';
import { errorResponses } from '../../http/schemas.js';
import { hashPassword, verifyPassword } from './passwords.js';
import {
  createUser,
  findUserByEmail,
  isUsableResetToken,
  resetPassword,
  revokeLoginToken,
  storeResetToken,
  storeVerificationToken,
  verifyEmail,
  type NewUser,
} from './accounts.repository.js';
import { loginSession } from './sessions.js';
import { isUsableInvitation, useInvitationToken } from './invitation-tokens.js';
import {
  CurrentUser,
  ForgotPasswordBody,
  LoginBody,
  LoginResult,
  MessageResult,
  RegisterBody,
  RegisteredUser,
  ResetPasswordBody,
  SignInMethods,
  SignInOptions,
  VerifyEmailBody,
} from './accounts.schemas.js';
import { signInMethods } from './oidc.repository.js';

const RESET_TOKEN_LIFETIME_MS = 30 * 60 * 1000;
const VERIFICATION_LIFETIME_MS = 24 * 60 * 60 * 1000;
const FORGOT_PASSWORD_ANSWER = { message: 'If an account exists for that email, a password reset link has been sent.' };
/** Every refusal of a closed sign-up: the same words whether or not the address was invited (no oracle). */
const SIGN_UP_CLOSED = 'Sign-up is closed: open the invitation link you were emailed, or ask a project owner for one';

const normalizeEmail = (email: string) => email.trim().toLowerCase();
const hashSecret = (token: string) => createHash('sha256').update(token).digest('hex');

export interface AccountOptions {
  db: Db;
  limits: RateLimits;
  tokens: LoginTokens;
  mailer: Mailer;
  config: Readonly<Config>;
  /**
   * A new account signed up through an invitation's emailed link: app.ts accepts the invitation
   * the link was sent for (members/). Its other invitations wait for it to accept them.
   */
  invitationLinkUsed: (user: NewUser, memberId: string | null) => Promise<void>;
}

/** /auth/*: no bearer token, except log out and resend-verification (a login token). */
export const accountRoutes: ApiPlugin<AccountOptions> = async (app, { db, limits, tokens, mailer, config, invitationLinkUsed }) => {
  const tags = ['account'];

  /** Emails a new single-use verification link (24 h); the email goes out after the answer. */
  function sendVerificationLink(request: FastifyRequest, user: NewUser): void {
    const token = randomBytes(32).toString('base64url');
    storeVerificationToken(db, hashSecret(token), user.id, new Date(Date.now() + VERIFICATION_LIFETIME_MS).toISOString())
      .then(() => mailer.sendVerification(user.email, `${config.publicUrl}/verify-email?token=${token}`))
      .catch((error: unknown) => request.log.error({ err: error }, 'could not send the verification email'));
  }

  // PASSWORD_LOGIN=false (with OIDC configured): the provider is the only way in (docs/api.md, Account).
  const passwordsOff = async () => {
    if (!config.passwordLogin) throw new Forbidden(`Password sign-in is turned off here: sign in with ${config.oidc?.name ?? 'SSO'}`);
  };

  app.get('/auth/methods', {
    schema: { tags, summary: 'How one may sign in here (the login page reads it)', response: { 200: SignInOptions } },
  }, async () => ({ password: config.passwordLogin, oidc: config.oidc ? { name: config.oidc.name, login_url: '/auth/oidc/login' } : null }));

  app.post('/auth/register', {
    onRequest: [passwordsOff, async (request) => limits.register?.hit(request.ip)],
    schema: { tags, body: RegisterBody, response: { 201: RegisteredUser, ...errorResponses(400, 403, 409, 429) } },
  }, async (request, reply) => {
    const email = normalizeEmail(request.body.email);
    if (!looksLikeEmail(email)) throw new Invalid('email must be a valid email address');
    const invitation = request.body.invitation_token;
    // Only the invitation's secret (emailed to the address) proves it; being invited proves nothing.
    const proven = invitation !== undefined && (await isUsableInvitation(db, email, invitation));
    if (!config.allowRegistration && !proven) throw new Forbidden(SIGN_UP_CLOSED);
    if (invitation !== undefined && !proven) throw new Invalid('This invitation link does not work for this address: it expired, was used, or a newer invitation replaced it');
    const passwordHash = await hashPassword(request.body.password);
    if (!proven) {
      const user = await createUser(db, email, passwordHash);
      sendVerificationLink(request, user); // its invitations wait for the address to be verified
      return reply.code(201).send(user);
    }
    const { user, memberId } = await db.transaction().execute(async (trx) => {
      const created = await createUser(trx, email, passwordHash, true);
      const used = await useInvitationToken(trx, email, invitation!);
      if (!used) throw config.allowRegistration ? new Invalid('This invitation link was used meanwhile') : new Forbidden(SIGN_UP_CLOSED);
      return { user: created, memberId: used.memberId };
    });
    await invitationLinkUsed(user, memberId); // opening the link was accepting its invitation
    return reply.code(201).send(user);
  });

  app.post('/auth/verify-email', {
    schema: { tags, body: VerifyEmailBody, response: { 200: MessageResult, ...errorResponses(400) } },
  }, async (request) => {
    const user = await verifyEmail(db, hashSecret(request.body.token));
    if (!user) throw new Invalid('Verification link is invalid, expired or already used');
    return { message: 'Email address verified' };
  });

  app.post('/auth/resend-verification', {
    schema: { tags, security: [{ bearer: [] }], response: { 202: MessageResult, ...errorResponses(401, 429) } },
  }, async (request, reply) => {
    const { user } = await loginSession({ db, tokens }, request);
    if (user.email_verified_at === null) {
      await limits.resendVerification.hit(user.id);
      sendVerificationLink(request, user);
    }
    return reply.code(202).send({ message: user.email_verified_at === null ? 'A new verification link is on its way' : 'Your email address is already verified' });
  });

  app.post('/auth/logout', {
    schema: { tags, security: [{ bearer: [] }], response: { 204: Type.Null({ description: 'this login token no longer works, on any instance' }), ...errorResponses(401) } },
  }, async (request, reply) => {
    const { user, claims } = await loginSession({ db, tokens }, request);
    await revokeLoginToken(db, user.id, claims.jti, claims.expiresAt);
    return reply.code(204).send(null);
  });

  app.post('/auth/login', {
    onRequest: [passwordsOff, async (request) => limits.login?.hit(request.ip)],
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

  const passwordResetLimit = [passwordsOff, async (request: FastifyRequest) => limits.passwordReset?.hit(request.ip)];

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
    await storeResetToken(db, hashSecret(token), user.id, new Date(Date.now() + RESET_TOKEN_LIFETIME_MS).toISOString());
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
    const tokenHash = hashSecret(request.body.token);
    const user = (await isUsableResetToken(db, tokenHash)) ? await resetPassword(db, tokenHash, await hashPassword(request.body.newPassword)) : undefined;
    if (!user) throw new Invalid('Reset token is invalid, expired or already used');
    return reply.type('text/plain; charset=utf-8').send('Password reset successful');
  });
};

/** GET /api/me */
export const currentUserRoutes: ApiPlugin<{ db: Db }> = async (app, { db }) => {
  app.get('/me', { config: { role: 'user' }, schema: { tags: ['account'], response: { 200: CurrentUser, ...errorResponses(401) } } }, async (request) => ({
    user_id: request.userId,
    email: request.actor.email!,
    email_verified: request.emailVerified,
  }));
  app.get('/me/sign-in-methods', { config: { role: 'user' }, schema: { tags: ['account'], response: { 200: SignInMethods, ...errorResponses(401) } } }, async (request) => ({
    methods: await signInMethods(db, request.userId),
  }));
};
