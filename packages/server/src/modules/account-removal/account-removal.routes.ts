import { Type } from 'typebox';
import type { ApiPlugin } from '../../http/plugin.js';
import type { RateLimits } from '../../rate-limits.js';
import type { LoginTokens } from '../accounts/tokens.js';
import { Conflict, Forbidden, Invalid } from '../../errors.js';
import { errorResponses } from '../../http/schemas.js';
import { NO_PASSWORD } from '../accounts/oidc.repository.js';
import { verifyPassword } from '../accounts/passwords.js';
import { loginSession } from '../accounts/sessions.js';
import { projectsLeftWithoutOwner, removeAccount, type AccountRemoval } from './account-removal.js';

/** How recent a login must be to delete an account that has no password to confirm with. */
const RECENT_LOGIN_MS = 10 * 60 * 1000;

const DeleteAccountBody = Type.Object({
  password: Type.Optional(Type.String({ maxLength: 1024, description: "the account's password; an account without one (OpenID) needs a login less than 10 minutes old instead" })),
});

/** DELETE /api/me (docs/api.md, Account): one's own account, confirmed by its password or a fresh login. */
export const accountRemovalRoutes: ApiPlugin<AccountRemoval & { tokens: LoginTokens; limits: RateLimits }> = async (app, deps) => {
  app.delete('/me', {
    config: { role: 'session' },
    // A DELETE often has no body: an account without a password needs none.
    preValidation: async (request) => {
      request.body ??= {};
    },
    schema: {
      tags: ['account'],
      summary: 'Deletes your account: its tokens, sessions and memberships end, projects only you belong to are deleted',
      body: DeleteAccountBody,
      response: { 204: Type.Null(), ...errorResponses(400, 401, 403, 409, 429) },
    },
  }, async (request, reply) => {
    const { user, claims } = await loginSession(deps, request);
    const account = await deps.db.selectFrom('users').select('password_hash').where('id', '=', user.id).executeTakeFirstOrThrow();
    const password = request.body.password;
    if (account.password_hash !== NO_PASSWORD) {
      if (password === undefined) throw new Invalid('password is required: enter your password to delete your account');
      // Counted like a failed login: a stolen session must not guess the password here either.
      const failureKey = `${request.ip}|${user.email}`;
      await deps.limits.failedLogin.hit(failureKey);
      if (!(await verifyPassword(account.password_hash, password))) throw new Forbidden('Wrong password: the account was not deleted');
      await deps.limits.failedLogin.giveBack(failureKey);
    } else if (claims.issuedAt.getTime() < Date.now() - RECENT_LOGIN_MS) {
      throw new Forbidden('Sign in again (within the last 10 minutes) to delete your account');
    }
    const ownerless = await projectsLeftWithoutOwner(deps.db, user.id);
    if (ownerless.length > 0) {
      throw new Conflict(`You are the last owner of ${ownerless.map((name) => `"${name}"`).join(', ')}, which ${ownerless.length === 1 ? 'has' : 'have'} other members: make one of them owner first (or remove them)`);
    }
    // Invitations to the address go only when its owner leaves: an unproven account may be someone else's.
    await removeAccount(deps, user, { withdrawInvitations: user.email_verified_at !== null });
    return reply.code(204).send(null);
  });
};
