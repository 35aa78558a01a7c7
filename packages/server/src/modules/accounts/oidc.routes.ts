import cookie from '@fastify/cookie';
import type { FastifyReply } from 'fastify';
import type { Config } from '../../config.js';
import type { Db } from '../../db/database.js';
import type { ApiPlugin } from '../../http/plugin.js';
import type { RateLimits } from '../../rate-limits.js';
import type { LoginTokens } from './tokens.js';
import { AppError, Forbidden, Invalid, RateLimited, Unauthorized, Unavailable } from '../../errors.js';
import { pageHeaders } from '../../http/page-headers.js';
import { errorResponses } from '../../http/schemas.js';
import { LoginResult } from './accounts.schemas.js';
import { OidcClient } from './oidc.client.js';
import { signInWithProvider } from './oidc.repository.js';

/** The sealed flow (state, nonce, PKCE verifier), sent back only to the callback. */
const FLOW_COOKIE = 'guidon_oidc_flow';
/** The new login token, handed to the dashboard once by POST /auth/oidc/session. */
const SESSION_COOKIE = 'guidon_oidc_session';
/** The provider's ID token, for its end-session endpoint at log out (id_token_hint). */
const ID_TOKEN_COOKIE = 'guidon_oidc_id';

export interface OidcOptions {
  db: Db;
  limits: RateLimits;
  tokens: LoginTokens;
  config: Readonly<Config>;
}

const escapeHtml = (text: string) => text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/** A page that says what happened (docs/api.md, Account: every failure is a page, not a JSON error nor a 500). */
function failurePage(reply: FastifyReply, status: number, message: string) {
  const html = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Sign-in failed · Guidon</title>
<style>body{font-family:system-ui,sans-serif;max-width:36rem;margin:4rem auto;padding:0 1rem;color:#1d2330;line-height:1.5}a{color:#1f5fbf}</style>
</head><body><main><h1>Sign-in failed</h1><p>${escapeHtml(message)}</p><p><a href="/login">Back to sign in</a></p></main></body></html>`;
  return reply.code(status).type('text/html; charset=utf-8').header('cache-control', 'no-store').send(html);
}

/** Only a path on this origin (never //host or a scheme), so the return address cannot send the browser elsewhere. */
const safeNext = (next: unknown) => (typeof next === 'string' && /^\/(?![/\\])[^\s]*$/.test(next) && next.length <= 2048 ? next : '/');

/**
 * Sign-in with OpenID Connect (docs/api.md, Account): /auth/oidc/login sends the browser to the provider,
 * /auth/oidc/callback signs the person in (or shows a page saying why not), the dashboard then
 * takes the login token with POST /auth/oidc/session; /auth/oidc/logout ends the provider's session.
 * Registered only when OIDC is configured, except the hand-off.
 */
export const oidcRoutes: ApiPlugin<OidcOptions> = async (app, { db, limits, tokens, config }) => {
  const tags = ['account'];
  await app.register(cookie);

  // Always there (the API document does not depend on settings); without OIDC nothing waits: 401.
  app.post('/auth/oidc/session', {
    schema: {
      tags,
      summary: 'Takes the login token a finished OpenID sign-in left for this browser (once)',
      response: { 200: LoginResult, ...errorResponses(401) },
    },
  }, async (request, reply) => {
    const token = request.cookies[SESSION_COOKIE];
    reply.clearCookie(SESSION_COOKIE, { path: '/auth/oidc/session' });
    if (!token || !(await tokens.verify(token))) throw new Unauthorized('No finished sign-in waits for this browser');
    return { token };
  });

  const settings = config.oidc;
  if (!settings) return;
  const oidc = new OidcClient(settings, config.publicUrl, tokens.keyFor('oidc sign-in flow'), app.log);
  const secure = config.publicUrl.startsWith('https:');
  const cookieOptions = (path: string, maxAge: number) => ({ path, maxAge, httpOnly: true, sameSite: 'lax' as const, secure });

  app.get('/auth/oidc/login', { onSend: pageHeaders, schema: { hide: true } }, async (request, reply) => {
    try {
      const { url, sealed } = await oidc.start(safeNext((request.query as { next?: unknown }).next));
      reply.setCookie(FLOW_COOKIE, sealed, cookieOptions('/auth/oidc/callback', 10 * 60));
      return reply.header('cache-control', 'no-store').redirect(url);
    } catch (error) {
      if (!(error instanceof AppError)) throw error;
      return failurePage(reply, error.statusCode, error.message);
    }
  });

  app.get('/auth/oidc/callback', { onSend: pageHeaders, schema: { hide: true } }, async (request, reply) => {
    reply.clearCookie(FLOW_COOKIE, { path: '/auth/oidc/callback' }); // one callback per flow
    try {
      await limits.login?.hit(request.ip);
      const flow = await oidc.unseal(request.cookies[FLOW_COOKIE]);
      if (!flow) throw new Invalid('This sign-in was not started in this browser, or took longer than 10 minutes. Start again from the sign-in page.');
      const query = request.url.includes('?') ? request.url.slice(request.url.indexOf('?')) : '';
      const { account, idToken } = await oidc.finish(query, flow);
      const mayCreate = (email: string) => settings.allowedDomains.length === 0 || settings.allowedDomains.includes(email.slice(email.lastIndexOf('@') + 1));
      const user = await signInWithProvider(db, account, mayCreate);
      if ('refused' in user) {
        throw new Forbidden(
          user.refused === 'unverified'
            ? `${settings.name} has not verified the email address of your account, so Guidon cannot tell which account is yours. Verify it at ${settings.name}, then sign in again.`
            : `Accounts can be created here only for email addresses at ${settings.allowedDomains.join(', ')}. Ask the person who runs Guidon if you should have access.`,
        );
      }
      reply.setCookie(SESSION_COOKIE, await tokens.issue({ userId: user.id, tokenVersion: user.token_version }), cookieOptions('/auth/oidc/session', 5 * 60));
      // A browser drops a cookie over 4 KB (an ID token full of groups): log out then names the client only.
      if (idToken && idToken.length < 3800) reply.setCookie(ID_TOKEN_COOKIE, idToken, cookieOptions('/auth/oidc/logout', 24 * 60 * 60));
      return reply.header('cache-control', 'no-store').redirect(`/login?sso=done&next=${encodeURIComponent(flow.next)}`);
    } catch (error) {
      if (!(error instanceof AppError)) {
        request.log.error({ err: error }, 'OpenID sign-in failed');
        return failurePage(reply, 503, 'Guidon could not finish signing you in, and changed nothing. Try again in a moment; if it keeps failing, tell the person who runs Guidon.');
      }
      if (error instanceof RateLimited || error instanceof Unavailable) reply.header('retry-after', String(error.retryAfterSeconds));
      return failurePage(reply, error.statusCode, error.message);
    }
  });

  // Reached after POST /auth/logout ended the Guidon session: ends the provider's too, when it can.
  app.get('/auth/oidc/logout', { schema: { hide: true } }, async (request, reply) => {
    reply.clearCookie(ID_TOKEN_COOKIE, { path: '/auth/oidc/logout' });
    const after = `${config.publicUrl}/login`;
    try {
      return reply.redirect((await oidc.endSessionUrl(request.cookies[ID_TOKEN_COOKIE], after)) ?? '/login');
    } catch (error) {
      if (!(error instanceof AppError)) throw error;
      return reply.redirect('/login'); // the provider is away: the Guidon session has ended already
    }
  });
};
