/**
 * @guidon/sdk against the real server: answers, fallbacks (server down, 401, 404, 429, 500,
 * timeout), bootstrap, stored answers, changes over the stream, the stream resuming after a
 * restart or a cut, forContext's cache, a process that ends without close(), and two instances
 * on PostgreSQL.
 */
import { after, before, describe, test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createRequire } from 'node:module';
import { createClient, REASON_BOOTSTRAP, REASON_FALLBACK, REASON_NOT_FOUND, type ClientOptions, type GuidonClient, type GuidonError } from '@guidon/sdk';
import { eventually, flagsPath, freePort, newFlag, newProject, newUser, request, startServer, storedRevision, type TestProject, type TestServer, type TestUser } from '@guidon/server/dist/tests/harness.js';
import { createTestDatabase, onPostgres } from '@guidon/server/dist/tests/test-database.js';
import { startCuttingProxy } from '@guidon/server/dist/tests/cutting-proxy.js';

/** Real fetch, with a note of each call (what it sent and the status it got). */
function countingFetch() {
  const calls: { url: string; body: string; ifNoneMatch: string | null; status: number }[] = [];
  const counted: typeof fetch = async (input, init) => {
    const response = await fetch(input, init);
    calls.push({ url: String(input), body: String(init?.body ?? ''), ifNoneMatch: new Headers(init?.headers).get('if-none-match'), status: response.status });
    return response;
  };
  return { calls, fetch: counted, evaluations: () => calls.filter((call) => call.url.endsWith('/sdk/v1/evaluate')) };
}

/** A tiny HTTP server of the test's own, answering as `handler` says (a real 500, a request that never gets an answer). */
async function tinyServer(handler: Parameters<typeof createServer>[1]): Promise<{ url: string; server: Server }> {
  const server = createServer(handler);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server };
}

const clients: GuidonClient[] = [];
function client(options: ClientOptions): GuidonClient {
  const made = createClient(options);
  clients.push(made);
  return made;
}
after(() => clients.forEach((c) => c.close()));

function errors(c: GuidonClient): GuidonError[] {
  const seen: GuidonError[] = [];
  c.on('error', (error) => seen.push(error));
  return seen;
}

describe('@guidon/sdk against a running Guidon', () => {
  let server: TestServer;
  let user: TestUser;
  let project: TestProject;
  let flagId: string;

  before(async () => {
    server = await startServer();
    user = await newUser(server);
    project = await newProject(server, user);
    flagId = (await newFlag(server, user, project, { key: 'checkout', enabled: false })).id;
    const targeted = await newFlag(server, user, project, { key: 'beta', enabled: true });
    await request(server, 'POST', `${flagsPath(project)}/${targeted.id}/rules`, { token: user.token, body: { rule_type: 'user_id', rule_value: 'vip' } });
  });
  after(() => server.close());

  const options = (extra: Partial<ClientOptions> = {}): ClientOptions => ({ baseUrl: server.url, sdkKey: project.sdk_key, environment: 'production', ...extra });
  const toggle = () => request(server, 'POST', `${flagsPath(project)}/${flagId}/toggle`, { token: user.token });

  test('ready() says it has flags; isEnabled, reason and allFlags read them; a flag Guidon did not return reads false', async () => {
    const c = client(options({ context: { user_id: 'vip' } }));
    assert.equal(await c.ready(), true);
    assert.equal(c.isEnabled('beta'), true);
    assert.equal(c.reason('beta'), 'Matched user_id targeting rule');
    assert.equal(c.isEnabled('checkout'), false);
    assert.deepEqual(Object.keys(c.allFlags()).sort(), ['beta', 'checkout']);
    assert.equal(c.isEnabled('nope'), false);
    assert.equal(c.reason('nope'), REASON_NOT_FOUND);
    assert.equal(await c.identify({ user_id: 'someone' }), true);
    assert.equal(c.reason('beta'), 'Flag enabled globally');
  });

  test('a toggle reaches the change event, with the changed key', async () => {
    const c = client(options());
    await c.ready();
    const changes: string[][] = [];
    c.on('change', ({ keys }) => changes.push(keys));
    const before = c.isEnabled('checkout');
    // Let the stream connect before the change (the first answer does not wait for it).
    await new Promise((resolve) => setTimeout(resolve, 300));
    await toggle();
    await eventually(() => changes.length > 0, 'the change event');
    assert.deepEqual(changes[0], ['checkout']);
    assert.equal(c.isEnabled('checkout'), !before);
  });

  test('bootstrap values hold before the first answer and when Guidon cannot be reached; other flags read false', async () => {
    const c = client(options({ bootstrap: { checkout: true }, baseUrl: `http://127.0.0.1:${await freePort()}`, stream: false }));
    assert.equal(c.isEnabled('checkout'), true, 'before any answer');
    assert.equal(c.reason('checkout'), REASON_BOOTSTRAP);
    assert.equal(await c.ready(), false);
    assert.equal(c.isEnabled('checkout'), true);
    assert.equal(c.isEnabled('beta'), false);
    assert.equal(c.reason('beta'), REASON_FALLBACK);
  });

  test('once Guidon answers, its values replace the bootstrap, and a flag it did not return reads false', async () => {
    const c = client(options({ bootstrap: { checkout: true, nope: true }, stream: false }));
    assert.equal(c.isEnabled('nope'), true, 'before the answer');
    assert.equal(await c.ready(), true);
    assert.equal(c.isEnabled('nope'), false);
    assert.equal(c.reason('nope'), REASON_NOT_FOUND);
    assert.notEqual(c.reason('checkout'), REASON_BOOTSTRAP);
    assert.equal((await c.forContext({ user_id: 'x' })).isEnabled('nope'), false);
  });

  test('server down: ready() resolves false, flags read false, an error event says why, nothing throws', async () => {
    const c = client(options({ baseUrl: `http://127.0.0.1:${await freePort()}` }));
    const seen = errors(c);
    c.on('error', () => {
      throw new Error('a listener that throws does not stop the client');
    });
    assert.equal(await c.ready(), false);
    assert.equal(c.isEnabled('checkout'), false);
    assert.ok(seen.some((error) => error.kind === 'network'), JSON.stringify(seen));
    const broken = client({ baseUrl: 'not a url', sdkKey: '', environment: '' });
    assert.equal(await broken.ready(), false);
    assert.equal(broken.isEnabled('x'), false);
    assert.equal((await broken.forContext({ user_id: 'u' })).isEnabled('x'), false);
  });

  test('401 (wrong key) and 404 (unknown environment) fall back to false', async () => {
    const wrongKey = client(options({ sdkKey: 'sdk_wrong', bootstrap: { checkout: true } }));
    const keyErrors = errors(wrongKey);
    assert.equal(await wrongKey.ready(), false);
    assert.equal(keyErrors[0]?.status, 401);
    assert.equal(wrongKey.isEnabled('checkout'), true, 'the bootstrap value');
    assert.equal(wrongKey.isEnabled('beta'), false);
    const unknownEnvironment = client(options({ environment: 'nope' }));
    const environmentErrors = errors(unknownEnvironment);
    assert.equal(await unknownEnvironment.ready(), false);
    assert.equal(environmentErrors[0]?.status, 404);
    assert.equal(unknownEnvironment.isEnabled('checkout'), false);
  });

  test('500 and a timeout fall back to false (a small server of the test answers 500, or never)', async (t) => {
    const failing = await tinyServer((_request, response) => {
      response.writeHead(500, { 'content-type': 'application/json' });
      response.end('{"statusCode":500,"error":"Internal Server Error","message":"Internal server error"}');
    });
    const silent = await tinyServer(() => undefined);
    t.after(() => {
      failing.server.closeAllConnections();
      failing.server.close();
      silent.server.closeAllConnections();
      silent.server.close();
    });
    const c500 = client(options({ baseUrl: failing.url }));
    const seen500 = errors(c500);
    assert.equal(await c500.ready(), false);
    assert.equal(seen500[0]?.status, 500);
    assert.equal(c500.isEnabled('checkout'), false);

    const slow = client(options({ baseUrl: silent.url, timeoutMs: 200, stream: false }));
    const seenTimeout = errors(slow);
    assert.equal(await slow.ready(), false);
    assert.equal(seenTimeout[0]?.kind, 'timeout');
    assert.equal(slow.isEnabled('checkout'), false);
  });

  test('keepLastKnownOnError keeps the last set when Guidon goes away; without it flags fall back', async (t) => {
    const database = await createTestDatabase();
    const own = await startServer({}, { database });
    t.after(async () => {
      await own.close().catch(() => undefined);
      await database.drop();
    });
    const ownUser = await newUser(own);
    const p = await newProject(own, ownUser);
    await newFlag(own, ownUser, p, { key: 'on', enabled: true });
    const keeping = client({ baseUrl: own.url, sdkKey: p.sdk_key, environment: 'production', keepLastKnownOnError: true, pollIntervalMs: 100 });
    const dropping = client({ baseUrl: own.url, sdkKey: p.sdk_key, environment: 'production', pollIntervalMs: 100 });
    let stale = false;
    keeping.on('stale', () => (stale = true));
    assert.equal(await keeping.ready(), true);
    assert.equal(await dropping.ready(), true);
    await own.close();
    await eventually(() => !dropping.isEnabled('on'), 'the client without keepLastKnownOnError to fall back');
    await eventually(() => stale, 'the keeping client to say it is stale');
    assert.equal(keeping.isEnabled('on'), true);
    assert.equal(keeping.reason('on'), 'Flag enabled globally');
  });

  test('429: the error carries Retry-After, and no request is sent before it is over', async (t) => {
    const limited = await startServer({ RATE_LIMIT_EVALUATE: '2' });
    t.after(() => limited.close());
    const u = await newUser(limited);
    const p = await newProject(limited, u);
    await newFlag(limited, u, p, { key: 'on', enabled: true });
    const counting = countingFetch();
    const c = client({ baseUrl: limited.url, sdkKey: p.sdk_key, environment: 'production', stream: false, fetch: counting.fetch });
    const seen = errors(c);
    assert.equal(await c.ready(), true);
    await c.forContext({ user_id: 'a' }); // the second request of the budget
    const refused = await c.forContext({ user_id: 'b' });
    assert.equal(refused.isEnabled('on'), false);
    const rateLimited = seen.find((error) => error.status === 429);
    assert.ok(rateLimited && rateLimited.retryAfterMs! >= 1000, JSON.stringify(seen));
    const sent = counting.calls.length;
    await c.forContext({ user_id: 'c' });
    assert.equal(await c.identify({ user_id: 'd' }), false);
    assert.equal(counting.calls.length, sent, 'nothing sent while Retry-After runs');
  });

  test('forContext: one request per distinct context until a change arrives over the stream', async () => {
    const counting = countingFetch();
    const c = client(options({ fetch: counting.fetch }));
    await c.ready();
    await new Promise((resolve) => setTimeout(resolve, 300)); // the stream connects
    const answers = await Promise.all([c.forContext({ user_id: 'vip' }), c.forContext({ user_id: 'vip' }), c.forContext({ user_id: 'other' })]);
    for (let i = 0; i < 5; i++) await c.forContext({ user_id: 'vip' });
    const sentFor = (userId: string) => counting.evaluations().filter((call) => call.body.includes(`"user_id":"${userId}"`)).length;
    // One each; a stream message that lands among these calls (the revision check's echo of an
    // earlier test's toggle) may cost one more: never the seven an uncached client would send.
    assert.ok(sentFor('vip') >= 1 && sentFor('vip') <= 2, `vip: ${sentFor('vip')} requests for 7 calls`);
    assert.equal(sentFor('other'), 1);
    assert.equal(answers[0]!.reason('beta'), 'Matched user_id targeting rule');
    assert.equal(answers[2]!.reason('beta'), 'Flag enabled globally');
    const checkout = answers[0]!.isEnabled('checkout');

    await toggle();
    await eventually(async () => (await c.forContext({ user_id: 'vip' })).isEnabled('checkout') !== checkout, 'the cache to be invalidated by the change');
  });

  test("a change's answer travels in the stream message: no evaluate request, the flags evaluate answers; after identify() the messages answer for the new user", async () => {
    const counting = countingFetch();
    const c = client(options({ fetch: counting.fetch, context: { user_id: 'someone' }, storage: false }));
    assert.equal(await c.ready(), true);
    await eventually(() => counting.calls.some((call) => call.url.includes('/sdk/v1/stream')), 'the stream open');
    await new Promise((resolve) => setTimeout(resolve, 300)); // the server follows the stream
    const asked = counting.evaluations().length;
    const changes: string[][] = [];
    c.on('change', ({ keys }) => changes.push(keys));
    for (let i = 0; i < 2; i++) {
      const before = c.isEnabled('checkout');
      await toggle();
      await eventually(() => c.isEnabled('checkout') !== before, `toggle ${i} seen`);
    }
    assert.equal(counting.evaluations().length, asked, 'no evaluate request: the messages carried the answers');
    assert.deepEqual(changes, [['checkout'], ['checkout']]);
    const fresh = await request(server, 'POST', '/sdk/v1/evaluate', { sdkKey: project.sdk_key, headers: { 'x-guidon-answer': 'kind' }, body: { environment: 'production', context: { user_id: 'someone', user_email: null } } });
    assert.deepEqual(c.allFlags(), fresh.body.flags, 'what evaluate answers, kinds included');

    // identify(): one request for the new user, and the stream opened again with its context.
    const streamsBefore = counting.calls.filter((call) => call.url.includes('/sdk/v1/stream')).length;
    assert.equal(await c.identify({ user_id: 'vip' }), true);
    assert.equal(c.reason('beta'), 'Matched user_id targeting rule');
    await eventually(() => counting.calls.filter((call) => call.url.includes('/sdk/v1/stream')).length === streamsBefore + 1, 'the stream opened again');
    await new Promise((resolve) => setTimeout(resolve, 300));
    const afterIdentify = counting.evaluations().length;
    const before = c.isEnabled('checkout');
    await toggle();
    await eventually(() => c.isEnabled('checkout') !== before, 'the toggle seen as vip');
    assert.equal(c.reason('beta'), 'Matched user_id targeting rule', "the message's answer is vip's");
    assert.equal(counting.evaluations().length, afterIdentify, 'no evaluate request');
  });

  test('polling with ETag: unchanged flags come back 304', async () => {
    const counting = countingFetch();
    const c = client(options({ stream: false, pollIntervalMs: 50, fetch: counting.fetch }));
    await c.ready();
    await eventually(() => counting.evaluations().some((call) => call.status === 304 && call.ifNoneMatch), 'a poll answered 304');
  });

  test('a stored answer shows at once on the next start, and is revalidated with its ETag', async () => {
    const saved = new Map<string, string>();
    const storage = { getItem: (key: string) => saved.get(key) ?? null, setItem: (key: string, value: string) => void saved.set(key, value) };
    const first = client(options({ storage, context: { user_id: 'vip' }, stream: false }));
    await first.ready();
    first.close();
    const counting = countingFetch();
    const second = client(options({ storage, context: { user_id: 'vip' }, stream: false, fetch: counting.fetch }));
    assert.equal(second.isEnabled('beta'), true, 'before any answer');
    assert.equal(await second.ready(), true);
    assert.equal(counting.evaluations()[0]?.status, 304);
  });

  test('a stream cut: the remote and the local client say stale, then ready again once caught up, and changes follow again', async (t) => {
    const proxy = await startCuttingProxy(server.url);
    t.after(() => proxy.close());
    const token = (await request(server, 'POST', '/api/tokens', { token: user.token, body: { name: 'local', project_id: project.id } })).body.token as string;
    const remote = client(options({ baseUrl: proxy.url, pollIntervalMs: 60_000 }));
    const local = createClient({ baseUrl: proxy.url, apiToken: token, environment: 'production', mode: 'local', pollIntervalMs: 60_000, sendUsage: false });
    t.after(() => local.close());
    const events = { remote: [] as string[], local: [] as string[] };
    for (const event of ['ready', 'stale'] as const) {
      remote.on(event, () => events.remote.push(event));
      local.on(event, () => events.local.push(event));
    }
    assert.deepEqual([await remote.ready(), await local.ready()], [true, true]);
    await eventually(() => proxy.forwarded.filter((path) => path === '/sdk/v1/stream').length === 2, 'both streams open');
    proxy.cutStreams();
    await eventually(() => events.remote.join() === 'ready,stale,ready' && events.local.join() === 'ready,stale,ready', 'both ready again');
    const before = remote.isEnabled('checkout');
    await toggle();
    await eventually(() => remote.isEnabled('checkout') !== before && local.evaluate().isEnabled('checkout') !== before, 'a change over the streams opened again');
  });

  /** A remote client through a cutting proxy, ready, its stream open, its ready and stale events noted. */
  const behindProxy = async (t: TestContext, extra: Partial<ClientOptions> = {}) => {
    const proxy = await startCuttingProxy(server.url);
    t.after(() => proxy.close());
    const remote = client(options({ baseUrl: proxy.url, pollIntervalMs: 60_000, ...extra }));
    const events: string[] = [];
    for (const event of ['ready', 'stale'] as const) remote.on(event, () => events.push(event));
    assert.equal(await remote.ready(), true);
    await eventually(() => proxy.forwarded.includes('/sdk/v1/stream'), 'the stream open');
    return { proxy, remote, events };
  };

  /** A context too long for X-Guidon-Context (8 KiB encoded): the change messages carry no answer, so the client asks. */
  const long = Object.fromEntries(Array.from({ length: 10 }, (_, i) => [`note${i}`, 'x'.repeat(1000)]));
  const evaluations = (proxy: { forwarded: string[] }) => proxy.forwarded.filter((path) => path === '/sdk/v1/evaluate').length;

  test("an answer asked before the stream broke does not make the client ready again; the reconnect's catch-up does", async (t) => {
    const { proxy, remote, events } = await behindProxy(t, { context: { custom_attributes: long } });
    // The stream's opening read: within 10 s of an earlier test's change it asks for a fetch, which must not be the one held.
    await new Promise((resolve) => setTimeout(resolve, 300));
    const before = remote.isEnabled('checkout');
    const held = proxy.holdNextAnswer('/sdk/v1/evaluate');
    await toggle(); // announced over the stream: the client asks, and its answer is held
    await held.reached;
    proxy.cutStreams(true);
    await eventually(() => events.join() === 'ready,stale', 'stale once the stream broke');
    held.release();
    await eventually(() => remote.isEnabled('checkout') !== before, 'the held answer applied');
    assert.deepEqual(events, ['ready', 'stale'], 'its answer predates the cut: changes since may be missed');
    proxy.releaseStreams();
    await eventually(() => events.join() === 'ready,stale,ready', 'ready after the reconnect caught up');
  });

  test('a message that comes while a fetch is under way is not taken over it: the fetch, asked before the change, would undo it (identify() during a change)', async (t) => {
    const { proxy, remote } = await behindProxy(t);
    await new Promise((resolve) => setTimeout(resolve, 300)); // the stream's first bytes read: the revision it starts from
    const before = remote.isEnabled('checkout');
    const streams = () => proxy.forwarded.filter((path) => path === '/sdk/v1/stream').length;
    const opened = streams();
    const held = proxy.holdNextAnswer('/sdk/v1/evaluate');
    const identified = remote.identify({ user_id: 'someone-new' });
    await held.reached; // the new user's answer, from before the change, held
    await eventually(() => streams() > opened, 'the stream reopened for the new user');
    await new Promise((resolve) => setTimeout(resolve, 300));
    await toggle(); // its message carries the new user's answer, while the fetch is held
    await new Promise((resolve) => setTimeout(resolve, 500));
    held.release();
    await identified;
    await eventually(() => remote.isEnabled('checkout') !== before, 'the change held once the older answer arrived');
    await new Promise((resolve) => setTimeout(resolve, 300));
    assert.notEqual(remote.isEnabled('checkout'), before, 'and kept');
  });

  test('a catch-up request that fails after the stream is back is tried again: the client does not stay stale while the stream is open', async (t) => {
    // A change while the stream was away, for a context whose answer cannot travel in the message: the client asks.
    const { proxy, remote, events } = await behindProxy(t, { context: { custom_attributes: long } });
    const before = remote.isEnabled('checkout');
    proxy.cutStreams(true);
    await eventually(() => events.join() === 'ready,stale', 'stale once the stream broke');
    await toggle();
    const lost = proxy.loseNextAnswer('/sdk/v1/evaluate'); // the reconnect's catch-up fails
    proxy.releaseStreams();
    await lost;
    await eventually(() => events.join() === 'ready,stale,ready', 'ready after the catch-up was tried again');
    assert.notEqual(remote.isEnabled('checkout'), before);
  });

  test('a reconnect that missed nothing asks nothing: Guidon says so at once (an id line), and the client is ready again (docs/sdk.md, "Reconnecting")', async (t) => {
    const { proxy, events } = await behindProxy(t);
    await new Promise((resolve) => setTimeout(resolve, 200)); // the stream's first bytes read: the revision it starts from
    const asked = evaluations(proxy);
    proxy.cutStreams(true);
    await eventually(() => events.join() === 'ready,stale', 'stale once the stream broke');
    proxy.releaseStreams();
    await eventually(() => events.join() === 'ready,stale,ready', 'ready again once the stream is back');
    await new Promise((resolve) => setTimeout(resolve, 1500)); // past the wait for Guidon's word (CATCH_UP_WAIT_MS)
    assert.equal(evaluations(proxy), asked, 'no evaluate request');
  });

  test('a change made while the stream was away comes with the reconnect, its answer in the message: no request', async (t) => {
    const { proxy, remote, events } = await behindProxy(t);
    await new Promise((resolve) => setTimeout(resolve, 200));
    const before = remote.isEnabled('checkout');
    const asked = evaluations(proxy);
    proxy.cutStreams(true);
    await eventually(() => events.join() === 'ready,stale', 'stale once the stream broke');
    await toggle();
    proxy.releaseStreams();
    await eventually(() => events.join() === 'ready,stale,ready' && remote.isEnabled('checkout') !== before, 'the change held, ready again');
    await new Promise((resolve) => setTimeout(resolve, 1500));
    assert.equal(evaluations(proxy), asked, 'no evaluate request');
  });

  test('a stream that starts from a revision (an id line without data) is reopened with it as Last-Event-ID', { timeout: 30_000 }, async (t) => {
    // 10 s after the project's last change a stream opens with an id line, not a message (docs/sdk.md).
    await toggle();
    const changedAt = Date.now();
    const stored = await storedRevision(server, project.id);
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, changedAt + 10_500 - Date.now())));
    const proxy = await startCuttingProxy(server.url);
    t.after(() => proxy.close());
    const sent: (string | null)[] = [];
    const noting: typeof fetch = async (input, init) => {
      if (String(input).includes('/sdk/v1/stream')) sent.push(new Headers(init?.headers).get('last-event-id'));
      return fetch(input, init);
    };
    const remote = client(options({ baseUrl: proxy.url, pollIntervalMs: 60_000, fetch: noting }));
    assert.equal(await remote.ready(), true);
    await eventually(() => sent.length === 1, 'the stream open');
    await new Promise((resolve) => setTimeout(resolve, 200)); // its first bytes read
    proxy.cutStreams();
    await eventually(() => sent.length === 2, 'the stream opened again');
    assert.deepEqual(sent, [null, String(stored)]);
  });

  test('a process that never calls close() still ends: no timer of the SDK holds it', async (t) => {
    const child = spawn(process.execPath, [new URL('./exit-child.js', import.meta.url).pathname, server.url, project.sdk_key], { stdio: ['ignore', 'pipe', 'inherit'] });
    t.after(() => child.kill());
    let out = '';
    child.stdout!.on('data', (chunk) => (out += chunk));
    let code: number | null | undefined;
    child.once('exit', (exited) => (code = exited));
    await eventually(() => code !== undefined, 'the child process to end by itself', 20_000);
    assert.equal(code, 0);
    assert.equal(out.trim(), '[true,false]');
  });

  test('CommonJS: require() gets the same API', () => {
    const required = createRequire(import.meta.url)('@guidon/sdk') as typeof import('@guidon/sdk');
    assert.equal(typeof required.createClient, 'function');
    assert.equal(required.REASON_FALLBACK, REASON_FALLBACK);
  });
});

describe('the stream resumes after a server restart', () => {
  test('a client keeps following changes once the server is back on its address', async (t) => {
    const database = await createTestDatabase();
    const port = await freePort();
    let server = await startServer({}, { database, port });
    t.after(async () => {
      await server.close().catch(() => undefined);
      await database.drop();
    });
    const user = await newUser(server);
    const project = await newProject(server, user);
    const flag = await newFlag(server, user, project, { key: 'f', enabled: false });
    const c = client({ baseUrl: server.url, sdkKey: project.sdk_key, environment: 'production', pollIntervalMs: 60_000 });
    assert.equal(await c.ready(), true);

    await server.close();
    server = await startServer({}, { database, port });
    const login = await request(server, 'POST', '/auth/login', { body: { email: user.email, password: user.password } });
    await request(server, 'POST', `${flagsPath(project)}/${flag.id}/toggle`, { token: login.body.token });
    // Backoff reconnects within a few seconds; polling is a minute away, so this came over the stream.
    await eventually(() => c.isEnabled('f'), 'the change made after the restart', 15_000);
  });
});

describe('two instances on PostgreSQL', { skip: onPostgres ? false : 'runs in the PostgreSQL pass of npm test' }, () => {
  test('a toggle on A reaches a client streaming from B', async (t) => {
    const database = await createTestDatabase();
    // No periodic revision check: the change travels by PostgreSQL LISTEN/NOTIFY.
    const a = await startServer({}, { database, revisionCheckIntervalMs: 3_600_000 });
    const b = await startServer({}, { database, revisionCheckIntervalMs: 3_600_000 });
    t.after(async () => {
      await a.close();
      await b.close();
      await database.drop();
    });
    const user = await newUser(a);
    const project = await newProject(a, user);
    const flag = await newFlag(a, user, project, { key: 'f', enabled: false });
    const c = client({ baseUrl: b.url, sdkKey: project.sdk_key, environment: 'production' });
    assert.equal(await c.ready(), true);
    let changed = false;
    c.on('change', () => (changed = true));
    await new Promise((resolve) => setTimeout(resolve, 300)); // the stream connects
    await request(a, 'POST', `${flagsPath(project)}/${flag.id}/toggle`, { token: user.token });
    await eventually(() => changed, 'the change on B');
    assert.equal(c.isEnabled('f'), true);
  });
});
