import cookie from '@fastify/cookie';
import type { FastifyReply } from 'fastify';
import type { Config } from '../../config.js';
import type { Db } from '../../db/database.js';
import type { ApiPlugin } from '../../http/plugin.js';
import type { RateLimits } from '../../rate-limits.js';
import type { LoginTokens } from './tokens.js';
import { AppError, Forbidden, Invalid, setRetryAfter, Unauthorized } from '../../errors.js';
import { pageHeaders } from '../../http/page-headers.js';
import { errorResponses } from '../../http/schemas.js';
import { LoginResult, RETURN_PATH } from './accounts.schemas.js';
import { signInWithProvider } from './oidc.repository.js';

/** The sealed flow (state, nonce, PKCE verifier), read only by the callback. */
const FLOW_COOKIE = 'guidon_oidc_flow';
/** The new login token, handed to the dashboard once by POST /auth/oidc/session. */
const SESSION_COOKIE = 'guidon_oidc_session';
/** The provider's ID token, for its end-session endpoint at log out (id_token_hint). */
const ID_TOKEN_COOKIE = 'guidon_oidc_id';

/**
 * How the cookies are named and scoped. Under https they take the `__Host-` prefix: the browser
 * then keeps them only if set Secure, for this host alone (no Domain) and Path=/, so a sibling
 * subdomain or a plain-http page cannot set or replace them. The prefix demands Path=/: each is
 * still read by its one route only. Under http (a test, a private network) they keep the path
 * of the route that reads them.
 */
function cookieJar(secure: boolean) {
  const name = (cookie: string) => (secure ? `__Host-${cookie}` : cookie);
  const options = (path: string) => ({ path: secure ? '/' : path, httpOnly: true, sameSite: 'lax' as const, secure });
  return {
    name,
    set: (reply: FastifyReply, cookie: string, value: string, path: string, maxAge: number) => reply.setCookie(name(cookie), value, { ...options(path), maxAge }),
    clear: (reply: FastifyReply, cookie: string, path: string) => reply.clearCookie(name(cookie), options(path)),
  };
}

export interface OidcOptions {
  db: Db;
  limits: RateLimits;
  tokens: LoginTokens;
  config: Readonly<Config>;
  /**
   * An account holds the provider's verified address but never proved it itself: app.ts deletes
   * it with what it alone belongs to, so that the sign-in gets a fresh account (docs/security.md).
   */
  replaceUnprovenAccount: (user: { id: string; email: string }) => Promise<void>;
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

/** Only a path on this origin (ReturnPath: never //host, /\\host or a scheme), so the return address cannot send the browser elsewhere. */
const returnPath = new RegExp(RETURN_PATH.pattern);
const safeNext = (next: unknown) => (typeof next === 'string' && next.length <= RETURN_PATH.maxLength && returnPath.test(next) ? next : '/');

/**
 * Sign-in with OpenID Connect (docs/api.md, Account): /auth/oidc/login sends the browser to the provider,
 * /auth/oidc/callback signs the person in (or shows a page saying why not), the dashboard then
 * takes the login token with POST /auth/oidc/session; /auth/oidc/logout ends the provider's session.
 * Registered only when OIDC is configured, except the hand-off.
 */
export const oidcRoutes: ApiPlugin<OidcOptions> = async (app, { db, limits, tokens, config, replaceUnprovenAccount }) => {
  const tags = ['account'];
  await app.register(cookie);
  const cookies = cookieJar(config.publicUrl.startsWith('https:'));

  // Always there (the API document does not depend on settings); without OIDC nothing waits: 401.
  app.post('/auth/oidc/session', {
    schema: {
      tags,
      summary: 'Takes the login token a finished OpenID sign-in left for this browser (once)',
      response: { 200: LoginResult, ...errorResponses(401) },
    },
  }, async (request, reply) => {
    const token = request.cookies[cookies.name(SESSION_COOKIE)];
    cookies.clear(reply, SESSION_COOKIE, '/auth/oidc/session');
    if (!token || !(await tokens.verify(token))) throw new Unauthorized('No finished sign-in waits for this browser');
    return { token };
  });

  const settings = config.oidc;
  if (!settings) return;
  // openid-client is loaded only when a provider is configured (start-up time: docs/performance.md).
  const { OidcClient } = await import('./oidc.client.js');
  const oidc = new OidcClient(settings, config.publicUrl, tokens.keyFor('oidc sign-in flow'), app.log);

  app.get('/auth/oidc/login', { onSend: pageHeaders, schema: { hide: true } }, async (request, reply) => {
    try {
      const { url, sealed } = await oidc.start(safeNext((request.query as { next?: unknown }).next));
      cookies.set(reply, FLOW_COOKIE, sealed, '/auth/oidc/callback', 10 * 60);
      return reply.header('cache-control', 'no-store').redirect(url);
    } catch (error) {
      if (!(error instanceof AppError)) throw error;
      return failurePage(reply, error.statusCode, error.message);
    }
  });

  app.get('/auth/oidc/callback', { onSend: pageHeaders, schema: { hide: true } }, async (request, reply) => {
    cookies.clear(reply, FLOW_COOKIE, '/auth/oidc/callback'); // one callback per flow
    try {
      await limits.login?.hit(request.ip);
      const flow = await oidc.unseal(request.cookies[cookies.name(FLOW_COOKIE)]);
      if (!flow) throw new Invalid('This sign-in was not started in this browser, or took longer than 10 minutes. Start again from the sign-in page.');
      const query = request.url.includes('?') ? request.url.slice(request.url.indexOf('?')) : '';
      const { account, idToken } = await oidc.finish(query, flow);
      const mayCreate = (email: string) => settings.allowedDomains.length === 0 || settings.allowedDomains.includes(email.slice(email.lastIndexOf('@') + 1));
      let user = await signInWithProvider(db, account, mayCreate);
      if ('unproven' in user) {
        // Someone registered this address and never proved it: not taken over, replaced.
        await replaceUnprovenAccount(user.unproven);
        user = await signInWithProvider(db, account, mayCreate);
      }
      if ('unproven' in user) throw new Error('the unproven account was still there after its removal'); // a 503 page
      if ('refused' in user) throw new Forbidden(refusal(user.refused, account.verifiedEmail ?? ''));
      cookies.set(reply, SESSION_COOKIE, await tokens.issue({ userId: user.id, tokenVersion: user.token_version }), '/auth/oidc/session', 5 * 60);
      // A browser drops a cookie over 4 KB (an ID token full of groups): log out then names the client only.
      if (idToken && idToken.length < 3800) cookies.set(reply, ID_TOKEN_COOKIE, idToken, '/auth/oidc/logout', 24 * 60 * 60);
      return reply.header('cache-control', 'no-store').redirect(`/login?sso=done&next=${encodeURIComponent(flow.next)}`);
    } catch (error) {
      if (!(error instanceof AppError)) {
        request.log.error({ err: error }, 'OpenID sign-in failed');
        return failurePage(reply, 503, 'Guidon could not finish signing you in, and changed nothing. Try again in a moment; if it keeps failing, tell the person who runs Guidon.');
      }
      setRetryAfter(error, reply);
      return failurePage(reply, error.statusCode, error.message);
    }
  });

  /** What a refused sign-in's page says. */
  function refusal(reason: 'unverified' | 'domain' | 'lookalike', email: string): string {
    switch (reason) {
      case 'unverified':
        return `${settings!.name} has not verified the email address of your account, so Guidon cannot tell which account is yours. Verify it at ${settings!.name}, then sign in again.`;
      case 'domain':
        return `Accounts can be created here only for email addresses at ${settings!.allowedDomains.join(', ')}. Ask the person who runs Guidon if you should have access.`;
      case 'lookalike':
        return `${settings!.name} gave the address ${email}, which differs from the address of an account here only in characters that look alike. Guidon links an account only to the very same address, so you were not signed in. Ask the person who runs Guidon, or your ${settings!.name} administrator, to correct the address.`;
    }
  }

  // Reached after POST /auth/logout ended the Guidon session: ends the provider's too, when it can.
  app.get('/auth/oidc/logout', { schema: { hide: true } }, async (request, reply) => {
    cookies.clear(reply, ID_TOKEN_COOKIE, '/auth/oidc/logout');
    const after = `${config.publicUrl}/login`;
    try {
      return reply.redirect((await oidc.endSessionUrl(request.cookies[cookies.name(ID_TOKEN_COOKIE)], after)) ?? '/login');
    } catch (error) {
      if (!(error instanceof AppError)) throw error;
      return reply.redirect('/login'); // the provider is away: the Guidon session has ended already
    }
  });
};
