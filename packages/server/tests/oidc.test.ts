/**
 * Sign-in with OpenID Connect (docs/api.md, Account) through HTTP, against a real OpenID provider started
 * here (oidc-provider): JIT accounts, invitations, linking, every refusal a page that creates
 * nothing, log out at the provider, PASSWORD_LOGIN=false, and two instances behind one address.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { createServer, request as httpRequest, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ConfigError, loadConfig } from '../src/config.js';
import { freePort, newProject, newUser, request, startServer, type TestServer } from './harness.js';
import { createTestDatabase } from './test-database.js';
import { Browser, startProvider, type TestProvider } from './oidc-provider.js';

/** Signs in at `server` as the provider's `login`; the dashboard's last step takes the token. */
async function signIn(server: { url: string }, login: string, browser = new Browser()) {
  const end = await browser.walk(`${server.url}/auth/oidc/login?next=/projects`, login, (next) => new URL(next).pathname === '/login');
  assert.equal(end.status, 302, `the callback signs in and sends the browser to the dashboard: ${end.status} ${end.text}`);
  assert.equal(end.headers.get('location'), '/login?sso=done&next=%2Fprojects');
  const session = await browser.request(`${server.url}/auth/oidc/session`, { method: 'POST' });
  assert.equal(session.status, 200, session.text);
  return { token: JSON.parse(session.text).token as string, browser };
}

/** Walks to the provider's redirect back to Guidon's callback, and returns that address unvisited. */
async function toCallback(server: { url: string }, login: string, browser: Browser, rewriteAuthorization?: (url: URL) => void) {
  const start = await browser.request(`${server.url}/auth/oidc/login`);
  assert.equal(start.status, 302);
  const authorization = new URL(start.headers.get('location')!);
  rewriteAuthorization?.(authorization);
  const stopped = await browser.walk(authorization.href, login, (next) => next.includes('/auth/oidc/callback'));
  assert.ok(stopped.stoppedAt, `the provider sends the browser back: ${stopped.status} ${stopped.text.slice(0, 300)}`);
  return stopped.stoppedAt;
}

async function usersWithEmail(server: TestServer, email: string) {
  return server.database.db.selectFrom('users').select('id').where('email', '=', email).execute();
}

function assertPage(visit: { status: number; headers: Headers; text: string }, status: number, words: RegExp) {
  assert.equal(visit.status, status, visit.text);
  assert.match(visit.headers.get('content-type') ?? '', /text\/html/);
  assert.match(visit.text, /<h1>Sign-in failed<\/h1>/);
  assert.match(visit.text, words);
  assert.match(visit.headers.get('content-security-policy') ?? '', /frame-ancestors 'none'/);
}

describe('OpenID sign-in', () => {
  let provider: TestProvider;
  let server: TestServer;

  before(async () => {
    const port = await freePort();
    const publicUrl = `http://127.0.0.1:${port}`;
    provider = await startProvider(publicUrl);
    server = await startServer({ ...provider.env, PUBLIC_URL: publicUrl, OIDC_ALLOWED_DOMAINS: 'corp.test, Example.com', OIDC_NAME: 'Acme SSO' }, { port });
  });
  after(async () => {
    await server?.close();
    await provider?.close();
  });

  test('the login page learns how one may sign in', async () => {
    const methods = await request(server, 'GET', '/auth/methods');
    assert.equal(methods.status, 200);
    assert.deepEqual(methods.body, { password: true, oidc: { name: 'Acme SSO', login_url: '/auth/oidc/login' } });
  });

  test('the first sign-in of a verified email creates the account, whose invitations wait for its answer; a later one finds it by sub', async () => {
    const owner = await newUser(server, 'owner');
    const project = await newProject(server, owner, 'Invited to');
    const invited = await request(server, 'POST', `/api/projects/${project.id}/members`, { token: owner.token, body: { email: 'alice@corp.test', role: 'editor' } });
    assert.equal(invited.status, 201);
    assert.equal(invited.body.status, 'invited');
    provider.accounts.set('alice-sub', { email: 'Alice@corp.test', email_verified: true });

    const first = await signIn(server, 'alice-sub');
    const me = await request(server, 'GET', '/api/me', { token: first.token });
    assert.equal(me.status, 200);
    assert.equal(me.body.email, 'alice@corp.test');
    assert.equal(me.body.email_verified, true);
    assert.deepEqual((await request(server, 'GET', '/api/me/sign-in-methods', { token: first.token })).body, { methods: ['oidc'] });
    assert.deepEqual((await request(server, 'GET', '/api/projects', { token: first.token })).body, [], 'nobody joins without accepting');
    const waiting = await request(server, 'GET', '/api/invitations', { token: first.token });
    assert.deepEqual(waiting.body.map((i: { id: string; role: string }) => [i.id, i.role]), [[invited.body.id, 'editor']]);
    assert.equal((await request(server, 'POST', `/api/invitations/${invited.body.id}/accept`, { token: first.token })).status, 200);
    const projects = await request(server, 'GET', '/api/projects', { token: first.token });
    assert.deepEqual(projects.body.map((p: { id: string; role: string }) => [p.id, p.role]), [[project.id, 'editor']], 'accepted, the invitation is a membership');

    // The provider's email changes; the sub still names the same Guidon account.
    provider.accounts.set('alice-sub', { email: 'alice.renamed@corp.test', email_verified: true });
    const second = await signIn(server, 'alice-sub');
    const again = await request(server, 'GET', '/api/me', { token: second.token });
    assert.equal(again.body.user_id, me.body.user_id);
    assert.equal(again.body.email, 'alice@corp.test');
    assert.equal((await usersWithEmail(server, 'alice.renamed@corp.test')).length, 0);

    const password = await request(server, 'POST', '/auth/login', { body: { email: 'alice@corp.test', password: '' } });
    assert.equal(password.status, 401, 'an account made by OpenID sign-in has no password');
  });

  test('a later sign-in links an existing account by its verified email', async () => {
    const verified = await newUser(server, 'linked');
    provider.accounts.set('linked-sub', { email: verified.email, email_verified: true });
    const { token } = await signIn(server, 'linked-sub');
    const me = await request(server, 'GET', '/api/me', { token });
    assert.equal(me.body.user_id, verified.id);
    assert.deepEqual((await request(server, 'GET', '/api/me/sign-in-methods', { token })).body, { methods: ['password', 'oidc'] });
    assert.equal((await request(server, 'POST', '/auth/login', { body: { email: verified.email, password: verified.password } })).status, 200, 'a proven account keeps its password');
  });

  test('an account that never proved the address is not taken over: it goes with what it alone belongs to, and the sign-in gets a fresh account', async () => {
    // Someone registered the address first, never proved it, made projects, and gave an accomplice the owner role in one.
    const claimer = await newUser(server, 'preclaimed', { verified: false });
    const accomplice = await newUser(server, 'accomplice');
    const alone = await newProject(server, claimer, 'Only theirs');
    const trap = await newProject(server, claimer, 'Security notice');
    // As an older version let an unproven account enrol members: straight in the database.
    await server.database.db.insertInto('project_members').values({ id: randomUUID(), project_id: trap.id, user_id: accomplice.id, email: accomplice.email, role: 'owner', created_at: new Date().toISOString() }).execute();

    provider.accounts.set('owner-of-address', { email: claimer.email, email_verified: true });
    const owner = await signIn(server, 'owner-of-address');
    const me = (await request(server, 'GET', '/api/me', { token: owner.token })).body;
    assert.notEqual(me.user_id, claimer.id, 'a fresh account, not the pre-claimed one (before, it was taken over with its projects)');
    assert.deepEqual([me.email, me.email_verified], [claimer.email, true]);
    assert.deepEqual((await request(server, 'GET', '/api/projects', { token: owner.token })).body, [], 'none of the pre-claimer\'s projects');
    assert.deepEqual((await request(server, 'GET', '/api/me/sign-in-methods', { token: owner.token })).body, { methods: ['oidc'] });
    assert.equal((await usersWithEmail(server, claimer.email)).length, 1);

    // The pre-claimed account is gone: its sessions, its password, the project it alone belonged to.
    assert.equal((await request(server, 'GET', '/api/me', { token: claimer.token })).status, 401);
    assert.equal((await request(server, 'POST', '/auth/login', { body: { email: claimer.email, password: claimer.password } })).status, 401);
    assert.equal((await request(server, 'POST', '/sdk/v1/evaluate', { sdkKey: alone.sdk_key, body: { environment: 'production', context: {} } })).status, 401);
    // A project with another member stays theirs, without it; its log keeps who left.
    const members = await request(server, 'GET', `/api/projects/${trap.id}/members`, { token: accomplice.token });
    assert.deepEqual(members.body.map((m: { email: string }) => m.email), [accomplice.email]);
    const audit = await request(server, 'GET', `/api/projects/${trap.id}/audit?resource_type=member`, { token: accomplice.token });
    assert.deepEqual(audit.body.items[0].actor, { user_id: claimer.id, email: claimer.email, token_id: null });
    assert.equal(audit.body.items[0].action, 'member.removed');
  });

  test('an address that only looks like an account\'s (Unicode case folding) links nothing: a page says why', async () => {
    const kim = await newUser(server, 'kim');
    const lookalike = `\u212A${kim.email.slice(1)}`; // KELVIN SIGN: lower-cased in full, it is a "k"
    provider.accounts.set('kelvin-sub', { email: lookalike, email_verified: true });
    const end = await new Browser().walk(`${server.url}/auth/oidc/login`, 'kelvin-sub');
    assertPage(end, 403, /look alike/);
    const identities = await server.database.db.selectFrom('oidc_identities').select('user_id').where('subject', '=', 'kelvin-sub').execute();
    assert.deepEqual(identities, [], 'not linked to kim (before, it signed in as kim)');
    assert.equal((await usersWithEmail(server, lookalike)).length, 0, 'and no look-alike account made');
    assert.equal((await request(server, 'GET', '/api/me', { token: kim.token })).status, 200);
  });

  test('an email outside OIDC_ALLOWED_DOMAINS is refused with a page, and nothing is created', async () => {
    provider.accounts.set('mallory-sub', { email: 'mallory@elsewhere.test', email_verified: true });
    const end = await new Browser().walk(`${server.url}/auth/oidc/login`, 'mallory-sub');
    assertPage(end, 403, /corp\.test, example\.com/);
    assert.equal((await usersWithEmail(server, 'mallory@elsewhere.test')).length, 0);
    const identities = await server.database.db.selectFrom('oidc_identities').select('subject').where('subject', '=', 'mallory-sub').execute();
    assert.equal(identities.length, 0);
  });

  test('an unverified email is refused with a page, and nothing is created', async () => {
    provider.accounts.set('carol-sub', { email: 'carol@corp.test', email_verified: false });
    const end = await new Browser().walk(`${server.url}/auth/oidc/login`, 'carol-sub');
    assertPage(end, 403, /has not verified the email address/);
    assert.equal((await usersWithEmail(server, 'carol@corp.test')).length, 0);
  });

  test('a tampered state is refused', async () => {
    provider.accounts.set('dave-sub', { email: 'dave@corp.test', email_verified: true });
    const browser = new Browser();
    const callback = new URL(await toCallback(server, 'dave-sub', browser));
    callback.searchParams.set('state', 'forged-state');
    assertPage(await browser.request(callback.href), 400, /state mismatch/);
    assert.equal((await usersWithEmail(server, 'dave@corp.test')).length, 0);
  });

  test('a callback without the flow this browser started is refused', async () => {
    const callback = await toCallback(server, 'dave-sub', new Browser());
    assertPage(await new Browser().request(callback), 400, /not started in this browser/);
    assert.equal((await usersWithEmail(server, 'dave@corp.test')).length, 0);
  });

  test('a replayed code is refused', async () => {
    provider.accounts.set('erin-sub', { email: 'erin@corp.test', email_verified: true });
    const browser = new Browser();
    const callback = await toCallback(server, 'erin-sub', browser);
    const flowCookie = browser.cookie(server.url, 'guidon_oidc_flow')!;
    assert.equal((await browser.request(callback)).status, 302, 'the first use signs in');
    browser.setCookie(server.url, 'guidon_oidc_flow', flowCookie); // an attacker holding both
    assertPage(await browser.request(callback), 400, /already used or has expired/);
    const code = new URL(callback).searchParams.get('code')!;
    assert.ok(server.logs.some((line) => line.includes('/auth/oidc/callback?')), 'the callback was logged');
    assert.ok(!server.logs.some((line) => line.includes(code)), 'the code is redacted from the logs');
  });

  test('an ID token whose nonce is not the flow\'s is refused', async () => {
    provider.accounts.set('frank-sub', { email: 'frank@corp.test', email_verified: true });
    const browser = new Browser();
    const callback = await toCallback(server, 'frank-sub', browser, (authorization) => authorization.searchParams.set('nonce', 'another-nonce'));
    assertPage(await browser.request(callback), 400, /nonce mismatch/);
    assert.equal((await usersWithEmail(server, 'frank@corp.test')).length, 0);
  });

  test('two first sign-ins of one person at once make one account', async () => {
    provider.accounts.set('kim-sub', { email: 'kim@corp.test', email_verified: true });
    const [one, two] = [new Browser(), new Browser()];
    const callbacks = [await toCallback(server, 'kim-sub', one), await toCallback(server, 'kim-sub', two)];
    const answers = await Promise.all([one.request(callbacks[0]!), two.request(callbacks[1]!)]);
    assert.deepEqual(answers.map((answer) => answer.status), [302, 302], answers.map((answer) => answer.text).join('\n'));
    assert.equal((await usersWithEmail(server, 'kim@corp.test')).length, 1);
  });

  test('log out ends the Guidon session and the provider\'s', async () => {
    provider.accounts.set('gina-sub', { email: 'gina@corp.test', email_verified: true });
    const { token, browser } = await signIn(server, 'gina-sub');
    assert.equal((await request(server, 'POST', '/auth/logout', { token })).status, 204);
    assert.equal((await request(server, 'GET', '/api/me', { token })).status, 401);
    const ended = provider.endedSessions;
    const out = await browser.request(`${server.url}/auth/oidc/logout`);
    assert.equal(out.status, 302);
    const endSession = new URL(out.headers.get('location')!);
    assert.equal(endSession.origin, provider.issuer);
    assert.ok(endSession.searchParams.get('id_token_hint'), 'the provider is told whose session ends');
    assert.equal(endSession.searchParams.get('post_logout_redirect_uri'), `${server.url}/login`);
    const confirm = await browser.request(endSession.href);
    const form = /<form[^>]*action="([^"]+)"[\s\S]*?name="xsrf" value="([^"]+)"/.exec(confirm.text);
    assert.ok(form, confirm.text);
    const done = await browser.request(new URL(form[1]!, endSession).href, { form: { xsrf: form[2]!, logout: 'yes' } });
    assert.equal(done.status, 303);
    assert.equal(done.headers.get('location'), `${server.url}/login`);
    assert.equal(provider.endedSessions, ended + 1);
    // The provider asks who signs in again: its session is gone.
    const next = await browser.request(`${server.url}/auth/oidc/login`);
    const atProvider = await browser.request(next.headers.get('location')!);
    assert.match(atProvider.headers.get('location') ?? '', /\/interaction\//);
    const prompt = await browser.request(new URL(atProvider.headers.get('location')!, provider.issuer).href);
    assert.match(prompt.text, /name="prompt" value="login"/);
  });

  test('the address to come back to is a path on this site, never another site', async () => {
    provider.accounts.set('nick-sub', { email: 'nick@corp.test', email_verified: true });
    for (const next of ['//evil.test/x', 'https://evil.test/', '/\\evil.test']) {
      const browser = new Browser();
      const end = await browser.walk(`${server.url}/auth/oidc/login?next=${encodeURIComponent(next)}`, 'nick-sub', (to) => new URL(to).pathname === '/login');
      assert.equal(end.headers.get('location'), '/login?sso=done&next=%2F', next);
    }
  });

  test('the dashboard\'s token hand-off works once', async () => {
    provider.accounts.set('hank-sub', { email: 'hank@corp.test', email_verified: true });
    const { browser } = await signIn(server, 'hank-sub');
    const again = await browser.request(`${server.url}/auth/oidc/session`, { method: 'POST' });
    assert.equal(again.status, 401);
  });
});

describe('OpenID settings', () => {
  test('issuer, client id and secret go together; PASSWORD_LOGIN=false needs OIDC', () => {
    assert.throws(() => loadConfig({ OIDC_ISSUER: 'https://sso.example.com' }), (error: Error) => error instanceof ConfigError && /OIDC_CLIENT_ID/.test(error.message));
    assert.throws(() => loadConfig({ OIDC_ISSUER: 'sso.example.com', OIDC_CLIENT_ID: 'g', OIDC_CLIENT_SECRET: 's' }), ConfigError);
    const config = loadConfig({ OIDC_ISSUER: 'https://sso.example.com/realms/acme', OIDC_CLIENT_ID: 'g', OIDC_CLIENT_SECRET: 's', OIDC_ALLOWED_DOMAINS: ' Acme.com,@corp.test ', PASSWORD_LOGIN: 'false' });
    assert.deepEqual(config.oidc, { issuer: 'https://sso.example.com/realms/acme', clientId: 'g', clientSecret: 's', name: 'SSO', allowedDomains: ['acme.com', 'corp.test'] });
    assert.equal(config.passwordLogin, false);
    assert.equal(loadConfig({ PASSWORD_LOGIN: 'false' }).passwordLogin, true, 'without OIDC, passwords stay the way in');
    assert.equal(loadConfig({}).oidc, null);
  });

  test('PASSWORD_LOGIN=false refuses password login, registration and reset with 403', async () => {
    const port = await freePort();
    const provider = await startProvider(`http://127.0.0.1:${port}`);
    const server = await startServer({ ...provider.env, PUBLIC_URL: `http://127.0.0.1:${port}`, PASSWORD_LOGIN: 'false' }, { port });
    try {
      const methods = await request(server, 'GET', '/auth/methods');
      assert.deepEqual(methods.body, { password: false, oidc: { name: 'SSO', login_url: '/auth/oidc/login' } });
      const body = { email: 'ivy@corp.test', password: 'correct horse battery' };
      for (const [path, sent] of [['/auth/login', body], ['/auth/register', body], ['/auth/forgot-password', { email: body.email }], ['/auth/reset-password', { token: 'x', newPassword: body.password }]] as const) {
        const answer = await request(server, 'POST', path, { body: sent });
        assert.equal(answer.status, 403, path);
        assert.match(answer.body.message, /sign in with SSO/);
      }
      assert.equal((await usersWithEmail(server, body.email)).length, 0);
      provider.accounts.set('ivy-sub', { email: body.email, email_verified: true });
      const { token } = await signIn(server, 'ivy-sub');
      assert.equal((await request(server, 'GET', '/api/me', { token })).status, 200, 'the provider is the way in');
    } finally {
      await server.close();
      await provider.close();
    }
  });

  test('under https the cookies take the __Host- prefix (Secure, Path=/, no Domain) and a sign-in works with them', async () => {
    const publicUrl = 'https://guidon.test';
    const provider = await startProvider(publicUrl);
    const server = await startServer({ ...provider.env, PUBLIC_URL: publicUrl });
    try {
      provider.accounts.set('tls-sub', { email: 'tls@corp.test', email_verified: true });
      const browser = new Browser();
      const login = await fetch(`${server.url}/auth/oidc/login`, { redirect: 'manual' });
      const flow = login.headers.getSetCookie().find((line) => line.includes('guidon_oidc_flow'));
      assert.match(flow ?? '', /^__Host-guidon_oidc_flow=[^;]+;/, 'before, the cookie had no prefix');
      assert.match(flow!, /; Path=\/(;|$)/);
      assert.match(flow!, /; Secure/);
      assert.match(flow!, /; HttpOnly/);
      assert.doesNotMatch(flow!, /Domain=/i);
      // The provider sends the browser back to https://guidon.test; this test is that address.
      const callback = new URL(await toCallback(server, 'tls-sub', browser));
      assert.equal(callback.origin, publicUrl);
      const back = await browser.request(`${server.url}${callback.pathname}${callback.search}`);
      assert.equal(back.status, 302, back.text);
      assert.ok(back.headers.getSetCookie().some((line) => /^__Host-guidon_oidc_session=[^;]+;.*Path=\/.*Secure/.test(line)));
      const session = await browser.request(`${server.url}/auth/oidc/session`, { method: 'POST' });
      assert.equal(session.status, 200, session.text);
      assert.equal((await request(server, 'GET', '/api/me', { token: JSON.parse(session.text).token })).body.email, 'tls@corp.test');
    } finally {
      await server.close();
      await provider.close();
    }
  });

  test('a provider that is away is a page that says so', async () => {
    const server = await startServer({ OIDC_ISSUER: `http://127.0.0.1:${await freePort()}`, OIDC_CLIENT_ID: 'guidon', OIDC_CLIENT_SECRET: 'secret' });
    try {
      assertPage(await new Browser().request(`${server.url}/auth/oidc/login`), 502, /Could not reach the identity provider \(SSO\)/);
    } finally {
      await server.close();
    }
  });

  test('a provider that goes away during the sign-in is a page that says so, and nothing is created', async () => {
    const port = await freePort();
    const provider = await startProvider(`http://127.0.0.1:${port}`);
    const server = await startServer({ ...provider.env, PUBLIC_URL: `http://127.0.0.1:${port}` }, { port });
    try {
      provider.accounts.set('lou-sub', { email: 'lou@corp.test', email_verified: true });
      const browser = new Browser();
      const callback = await toCallback(server, 'lou-sub', browser);
      await provider.close();
      assertPage(await browser.request(callback), 502, /Could not reach the identity provider \(SSO\) to finish signing you in/);
      assert.equal((await usersWithEmail(server, 'lou@corp.test')).length, 0);
    } finally {
      await server.close();
    }
  });

  test('without OIDC settings the routes do not exist', async () => {
    const server = await startServer();
    try {
      assert.equal((await request(server, 'GET', '/auth/oidc/login')).status, 404);
      assert.deepEqual((await request(server, 'GET', '/auth/methods')).body, { password: true, oidc: null });
    } finally {
      await server.close();
    }
  });
});

/** One address in front of two instances, each request to the next one in turn (a load balancer without affinity). */
/** A proxy listening at once (on a port of its own), sending requests in turn to `targets` (filled in later). */
async function roundRobin(targets: string[]): Promise<{ url: string; hits: number[]; close(): Promise<void> }> {
  const hits = [0, 0];
  let turn = 0;
  const proxy: Server = createServer((incoming, outgoing) => {
    const index = turn++ % targets.length;
    hits[index]!++;
    const target = new URL(targets[index]!);
    const forward = httpRequest({ host: target.hostname, port: target.port, method: incoming.method, path: incoming.url, headers: incoming.headers }, (answer) => {
      outgoing.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(outgoing);
    });
    forward.on('error', () => outgoing.writeHead(502).end());
    incoming.pipe(forward);
  });
  await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
  const { port } = proxy.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}`, hits, close: () => new Promise((resolve) => proxy.close(() => resolve())) };
}

describe('two instances behind one address', () => {
  test('a sign-in started on one instance finishes on the other', async () => {
    const database = await createTestDatabase();
    // The one address is bound first (a port only probed as free could be taken before it listens).
    const targets: string[] = [];
    const proxy = await roundRobin(targets);
    let provider: TestProvider | undefined;
    let a: TestServer | undefined;
    let b: TestServer | undefined;
    try {
      provider = await startProvider(proxy.url);
      const env = { ...provider.env, PUBLIC_URL: proxy.url };
      a = await startServer(env, { database });
      b = await startServer(env, { database });
      targets.push(a.url, b.url);
      const front = { url: proxy.url };
      provider.accounts.set('jo-sub', { email: 'jo@corp.test', email_verified: true });
      const { token } = await signIn(front, 'jo-sub');
      assert.deepEqual(proxy.hits, [2, 1], 'login on A, the callback on B, the hand-off on A');
      for (const instance of [a, b]) assert.equal((await request(instance, 'GET', '/api/me', { token })).body.email, 'jo@corp.test');
    } finally {
      await proxy.close();
      await a?.close();
      await b?.close();
      await provider?.close();
      await database.drop();
    }
  });
});
