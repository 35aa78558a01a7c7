/**
 * A real OpenID provider started in the test (oidc-provider, panva) with one confidential client
 * for Guidon, and a tiny browser (a cookie jar that follows redirects and fills the provider's
 * development login and consent forms) to walk the sign-in through HTTP.
 */
import type { Server } from 'node:http';
import Provider from 'oidc-provider';
import { freePort } from './harness.js';

export const CLIENT_ID = 'guidon';
export const CLIENT_SECRET = 'guidon-test-client-secret';

export interface ProviderAccountClaims {
  email: string;
  email_verified: boolean;
}

export interface TestProvider {
  issuer: string;
  /** The people who can sign in at the provider, by login (their `sub`); change them at will. */
  accounts: Map<string, ProviderAccountClaims>;
  /** How many times a session ended at the provider's end-session endpoint. */
  endedSessions: number;
  /** Settings for Guidon's environment. */
  env: Record<string, string>;
  close(): Promise<void>;
}

/** Starts the provider for a Guidon reachable at `publicUrl` (its redirect and post-logout addresses). */
export async function startProvider(publicUrl: string, { port }: { port?: number } = {}): Promise<TestProvider> {
  const listenPort = port ?? (await freePort());
  const issuer = `http://127.0.0.1:${listenPort}`;
  const accounts = new Map<string, ProviderAccountClaims>();
  const provider = new Provider(issuer, {
    clients: [
      {
        client_id: CLIENT_ID,
        client_secret: CLIENT_SECRET,
        redirect_uris: [`${publicUrl}/auth/oidc/callback`],
        post_logout_redirect_uris: [`${publicUrl}/login`],
        grant_types: ['authorization_code'],
        response_types: ['code'],
      },
    ],
    async findAccount(_ctx, id) {
      if (!accounts.has(id)) return undefined;
      return { accountId: id, claims: async () => ({ sub: id, ...accounts.get(id)! }) };
    },
    claims: { openid: ['sub'], email: ['email', 'email_verified'] },
    features: { devInteractions: { enabled: true }, rpInitiatedLogout: { enabled: true } },
    pkce: { required: () => true },
    cookies: { keys: ['a test key for the provider cookies'] },
  });
  const state: TestProvider = {
    issuer,
    accounts,
    endedSessions: 0,
    env: { OIDC_ISSUER: issuer, OIDC_CLIENT_ID: CLIENT_ID, OIDC_CLIENT_SECRET: CLIENT_SECRET },
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
  provider.on('end_session.success', () => state.endedSessions++);
  const server: Server = provider.listen(listenPort);
  await new Promise<void>((resolve) => (server.listening ? resolve() : server.once('listening', () => resolve())));
  return state;
}

export interface Visit {
  url: string;
  status: number;
  headers: Headers;
  text: string;
}

/** A browser's part that matters here: cookies per host (as browsers do, whatever the port), and redirects. */
export class Browser {
  readonly cookies = new Map<string, Map<string, string>>();

  private jar(url: string): Map<string, string> {
    const host = new URL(url).hostname;
    if (!this.cookies.has(host)) this.cookies.set(host, new Map());
    return this.cookies.get(host)!;
  }

  cookie(url: string, name: string): string | undefined {
    return this.jar(url).get(name);
  }

  setCookie(url: string, name: string, value: string): void {
    this.jar(url).set(name, value);
  }

  /** One request, no redirect followed. */
  async request(url: string, init: { method?: string; form?: Record<string, string>; headers?: Record<string, string> } = {}): Promise<Visit> {
    const jar = this.jar(url);
    const headers: Record<string, string> = { accept: 'text/html', ...init.headers };
    if (jar.size > 0) headers.cookie = [...jar].map(([name, value]) => `${name}=${value}`).join('; ');
    const body = init.form ? new URLSearchParams(init.form).toString() : undefined;
    if (body) headers['content-type'] = 'application/x-www-form-urlencoded';
    const response = await fetch(url, { method: init.method ?? (body ? 'POST' : 'GET'), headers, body, redirect: 'manual' });
    for (const line of response.headers.getSetCookie()) {
      const [pair, ...attributes] = line.split(';');
      const name = pair!.slice(0, pair!.indexOf('=')).trim();
      const value = pair!.slice(pair!.indexOf('=') + 1).trim();
      const expired = attributes.some((a) => /^\s*max-age=0\s*$/i.test(a) || (/^\s*expires=/i.test(a) && Date.parse(a.split('=')[1]!) < Date.now()));
      if (expired || value === '') jar.delete(name);
      else jar.set(name, value);
    }
    return { url, status: response.status, headers: response.headers, text: await response.text() };
  }

  /**
   * Follows redirects from `url`, signing in at the provider as `login` when it asks (its
   * development login and consent forms), until an answer that is not a redirect, or until
   * `stop(next)` holds for the next address (then that address is returned unvisited).
   */
  async walk(url: string, login: string, stop?: (next: string) => boolean): Promise<Visit & { stoppedAt?: string }> {
    let visit = await this.request(url);
    for (let hops = 0; hops < 30; hops++) {
      const location = visit.headers.get('location');
      if (visit.status >= 300 && visit.status < 400 && location) {
        const next = new URL(location, visit.url).href;
        if (stop?.(next)) return { ...visit, stoppedAt: next };
        visit = await this.request(next);
        continue;
      }
      const form = /<form[^>]*action="([^"]+)"[^>]*method="post"[\s\S]*?name="prompt" value="(login|consent)"/.exec(visit.text);
      if (visit.status !== 200 || !form) return visit;
      const action = new URL(form[1]!.replace(/&amp;/g, '&'), visit.url).href;
      visit = await this.request(action, { form: form[2] === 'login' ? { prompt: 'login', login, password: 'any' } : { prompt: 'consent' } });
    }
    throw new Error(`too many redirects from ${url}`);
  }
}
