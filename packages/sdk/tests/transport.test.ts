/**
 * The one transport of both clients (packages/sdk/src/transport.ts) against the real server:
 * Retry-After, the stream's and the requests' apart. One server: at most one open stream per
 * client address and credential (STREAMS_PER_CLIENT=1), 100 requests a minute per address, and
 * X-Forwarded-For trusted from 127.0.0.1, so that a test can use an address of its own.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createClient, type ClientOptions, type GuidonClient, type GuidonError, type LocalClient, type LocalClientOptions } from '@guidon/sdk';
import { eventually, flagsPath, newFlag, newProject, newUser, request, startServer, type TestProject, type TestServer, type TestUser } from '@guidon/server/dist/tests/harness.js';
import { openStream } from '@guidon/server/dist/tests/stream-client.js';

/** Real fetch, noting each call when it is made (its path, and its status once answered), optionally from another client address. */
function recordingFetch(forwardedFor?: string) {
  const calls: { path: string; status?: number }[] = [];
  const recorded: typeof fetch = async (input, init) => {
    const call: { path: string; status?: number } = { path: new URL(String(input)).pathname };
    calls.push(call);
    const headers = new Headers(init?.headers);
    if (forwardedFor) headers.set('x-forwarded-for', forwardedFor);
    const response = await fetch(input, { ...init, headers });
    call.status = response.status;
    return response;
  };
  return { fetch: recorded, to: (path: string) => calls.filter((call) => call.path === path) };
}

const closers: (() => unknown)[] = [];
after(() => Promise.all(closers.map((close) => close())));
function remote(options: ClientOptions): GuidonClient {
  const made = createClient(options);
  closers.push(() => made.close());
  return made;
}
function local(options: Omit<LocalClientOptions, 'mode'>): LocalClient {
  const made = createClient({ ...options, mode: 'local' });
  closers.push(() => made.close());
  return made;
}
function errorsOf(client: { on(event: 'error', listener: (error: GuidonError) => void): unknown }): GuidonError[] {
  const seen: GuidonError[] = [];
  client.on('error', (error) => seen.push(error));
  return seen;
}

describe('Retry-After through both clients', () => {
  let server: TestServer;
  before(async () => {
    server = await startServer({ STREAMS_PER_CLIENT: '1', RATE_LIMIT_EVALUATE: '100', TRUST_PROXY: '127.0.0.1' });
  });
  after(() => server.close());

  /** A project of its own with flag `f` (off), and an API token. */
  async function project(): Promise<{ user: TestUser; project: TestProject; token: string; toggle: () => Promise<unknown> }> {
    const user = await newUser(server);
    const made = await newProject(server, user);
    const flag = await newFlag(server, user, made, { key: 'f', enabled: false });
    const token = (await request(server, 'POST', '/api/tokens', { token: user.token, body: { name: 'local', project_id: made.id } })).body.token as string;
    return { user, project: made, token, toggle: () => request(server, 'POST', `${flagsPath(made)}/${flag.id}/toggle`, { token: user.token }) };
  }

  test('local client: a stream refused with 429 waits for its Retry-After (30 s), and polls meanwhile', async (t) => {
    const { token } = await project();
    const held = await openStream(`${server.url}/sdk/v1/stream?environment=production`, { authorization: `Bearer ${token}` });
    t.after(() => held.close());
    assert.equal(held.status, 200, 'the one place for this address and token');
    const calls = recordingFetch();
    const c = local({ baseUrl: server.url, apiToken: token, environment: 'production', pollIntervalMs: 100, sendUsage: false, fetch: calls.fetch });
    const seen = errorsOf(c);
    assert.equal(await c.ready(), true);
    await eventually(() => calls.to('/sdk/v1/stream').some((call) => call.status === 429), 'the stream refused');
    held.close(); // the place is free: only the Retry-After keeps the client from taking it
    // 20 polls at 100 ms: 2 s, past the first reconnect that the back-off alone allows (0.5–1 s).
    const polls = calls.to('/sdk/v1/ruleset').length;
    await eventually(() => calls.to('/sdk/v1/ruleset').length >= polls + 20 || calls.to('/sdk/v1/stream').length > 1, '20 more polls, or a second attempt');
    assert.equal(calls.to('/sdk/v1/stream').length, 1, 'no second attempt before the Retry-After');
    assert.equal(seen.find((error) => error.kind === 'stream')?.retryAfterMs, 30_000);
  });

  test("remote client: a stream refused with 429 holds back only the stream: polls go on and bring a change", async (t) => {
    const { project: p, toggle } = await project();
    const held = await openStream(`${server.url}/sdk/v1/stream?environment=production`, { 'x-sdk-key': p.sdk_key });
    t.after(() => held.close());
    assert.equal(held.status, 200);
    const calls = recordingFetch();
    const c = remote({ baseUrl: server.url, sdkKey: p.sdk_key, environment: 'production', pollIntervalMs: 100, fetch: calls.fetch });
    await eventually(() => calls.to('/sdk/v1/stream').some((call) => call.status === 429), 'the stream refused');
    assert.equal(await c.ready(), true);
    assert.equal(c.isEnabled('f'), false);
    await toggle();
    await eventually(() => c.isEnabled('f'), 'the change, polled while the stream waits');
  });

  test("local client: a request's 429 holds every request until its Retry-After, a fetch the stream asks for included", async () => {
    const { user, project: p, token } = await project();
    // A change too large for the stream message to carry, as a patch (over 16 KiB) or whole (a
    // ruleset over 64 KiB, docs/local-evaluation.md), so that the client must fetch it.
    let made = 0;
    const largeChange = () =>
      request(server, 'POST', flagsPath(p), {
        token: user.token,
        body: { key: `large_${++made}`, name: 'large', enabled: true, variants: Array.from({ length: 10 }, (_, i) => ({ key: `v${i}`, value: String(i).repeat(7000), weight: 100 })), off_variant: 'v0' },
      });
    // An address of its own: its budget of 100 a minute is this test's alone.
    const address = '10.9.9.9';
    const calls = recordingFetch(address);
    const c = local({ baseUrl: server.url, apiToken: token, environment: 'production', pollIntervalMs: 60_000, sendUsage: false, fetch: calls.fetch });
    const seen = errorsOf(c);
    assert.equal(await c.ready(), true);
    await eventually(() => calls.to('/sdk/v1/stream').some((call) => call.status === 200), 'the stream open');
    // The rest of the address's budget, spent here.
    for (let i = 0; i < 100; i++) {
      if ((await request(server, 'GET', '/sdk/v1/ruleset?environment=production', { headers: { authorization: `Bearer ${token}`, 'x-forwarded-for': address } })).status === 429) break;
    }
    assert.equal((await largeChange()).status, 201);
    await eventually(() => seen.some((error) => error.status === 429), 'the fetch the first change asked for, refused');
    const sent = calls.to('/sdk/v1/ruleset').length;
    assert.equal((await largeChange()).status, 201);
    await eventually(() => seen.filter((error) => error.status === 429).length >= 2, 'the second change, read from the stream');
    assert.equal(calls.to('/sdk/v1/ruleset').length, sent, 'nothing sent while the Retry-After runs');
    assert.ok(seen.at(-1)!.retryAfterMs! > 0, seen.at(-1)!.message);
  });
});
