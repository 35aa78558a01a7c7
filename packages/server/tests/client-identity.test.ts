/**
 * Who a client is, for the per-IP limits (docs/api.md), and counters that cannot be dodged:
 * X-Forwarded-For is believed from loopback only unless TRUST_PROXY names more (docs/security.md,
 * Client addresses and rate limits: a client in a private range chose its own address and never met the failed-login lockout);
 * and a flood of new client addresses cannot make the in-memory counters forget a key that is
 * being refused.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { MAX_KEYS_IN_MEMORY, createRateLimits } from '../src/rate-limits.js';
import { newProject, newUser, request, startServer, type TestServer, type TestUser } from './harness.js';
import { privateHostUnavailable, startPrivateHost, type ClientRequest, type PrivateHost } from './private-host.js';

const unavailable = privateHostUnavailable();

describe('a client in a private range', { skip: unavailable ?? false }, () => {
  let host: PrivateHost;
  before(() => {
    host = startPrivateHost();
  });
  after(() => host?.close());

  /** 70 wrong passwords, each naming another client address, then the right one: their statuses. */
  async function guessFromPrivateHost(server: TestServer, user: TestUser): Promise<number[]> {
    const guesses: ClientRequest[] = Array.from({ length: 70 }, (_, i) => ({
      method: 'POST',
      path: '/auth/login',
      headers: { 'x-forwarded-for': `198.51.100.${i + 1}` },
      body: { email: user.email, password: `wrong guess ${i}` },
    }));
    return host.send(server.url, [...guesses, { method: 'POST', path: '/auth/login', headers: { 'x-forwarded-for': '198.51.100.200' }, body: { email: user.email, password: user.password } }]);
  }

  test('by default its X-Forwarded-For is ignored: 70 wrong passwords meet the lockout (429), and so does the right one', async () => {
    const server = await startServer({ RATE_LIMIT_AUTH: '0' }, { host: host.hostAddress });
    try {
      const user = await newUser(server, 'private-range');
      const statuses = await guessFromPrivateHost(server, user);
      assert.deepEqual(statuses.slice(0, 10), Array(10).fill(401), 'ten guesses are checked');
      assert.deepEqual(statuses.slice(10), Array(61).fill(429), 'then every attempt from that address is refused, whatever it claims');
    } finally {
      await server.close();
    }
  });

  test('named in TRUST_PROXY (a proxy in a private range), its X-Forwarded-For is believed', async () => {
    const server = await startServer({ RATE_LIMIT_AUTH: '0', TRUST_PROXY: `loopback, ${host.clientAddress}` }, { host: host.hostAddress });
    try {
      const user = await newUser(server, 'named-proxy');
      const statuses = await guessFromPrivateHost(server, user);
      assert.deepEqual(statuses, [...Array(70).fill(401), 200], 'each forwarded address has its own budget');
    } finally {
      await server.close();
    }
  });
});

describe('in-memory counters under a flood of client addresses', () => {
  let server: TestServer;
  before(async () => {
    server = await startServer({ RATE_LIMIT_EVALUATE: '3' });
  });
  after(() => server?.close());

  test(`${MAX_KEYS_IN_MEMORY + 500} other addresses (X-Forwarded-For through loopback) do not reset an address over its limit`, { timeout: 300_000 }, async () => {
    const user = await newUser(server, 'flooded');
    const project = await newProject(server, user);
    const evaluateFrom = (address: string) =>
      request(server, 'POST', '/sdk/v1/evaluate', { sdkKey: project.sdk_key, headers: { 'x-forwarded-for': address }, body: { environment: 'production' } }).then((answer) => answer.status);
    const attacked = '203.0.113.66';
    assert.deepEqual([await evaluateFrom(attacked), await evaluateFrom(attacked), await evaluateFrom(attacked), await evaluateFrom(attacked)], [200, 200, 200, 429]);

    // Addresses in 2001:db8::/32 (documentation), a few requests in flight at a time.
    let next = 0;
    const flood = async () => {
      while (next < MAX_KEYS_IN_MEMORY + 500) assert.equal(await evaluateFrom(`2001:db8::${(next++).toString(16)}`), 200);
    };
    await Promise.all(Array.from({ length: 8 }, flood));

    assert.equal(await evaluateFrom(attacked), 429, 'still refused: its count was kept');
  });
});

describe('in-memory counters (the failed-login lockout)', () => {
  const silent = { error: () => undefined, info: () => undefined } as never;

  test('a key that used its budget stays refused through a flood of new keys; the number of keys stays bounded', async () => {
    const limits = createRateLimits({ evaluatePerMinute: 0, authPerMinute: 0, eventsPerMinute: 0 }, silent);
    const locked = '203.0.113.5|victim@example.com';
    for (let i = 0; i < 10; i++) await limits.failedLogin.hit(locked);
    await assert.rejects(limits.failedLogin.hit(locked), { statusCode: 429 });
    for (let i = 0; i < 2 * MAX_KEYS_IN_MEMORY; i++) await limits.failedLogin.hit(`198.51.100.${i % 256}|someone-${i}@example.com`);
    await assert.rejects(limits.failedLogin.hit(locked), { statusCode: 429 }, 'still locked');
    assert.equal(limits.failedLogin.trackedKeys, MAX_KEYS_IN_MEMORY + 1, 'the counting keys, and the one held');
  });

  test('keys over their budget are bounded too: past that many, the one held longest is released', async () => {
    const limits = createRateLimits({ evaluatePerMinute: 0, authPerMinute: 0, eventsPerMinute: 0 }, silent);
    const lock = async (key: string) => {
      for (let i = 0; i < 5; i++) assert.equal(await limits.forgotPassword.tryHit(key), true);
      assert.equal(await limits.forgotPassword.tryHit(key), false);
    };
    for (let i = 0; i <= MAX_KEYS_IN_MEMORY; i++) await lock(`held-${i}@example.com`);
    assert.equal(limits.forgotPassword.trackedKeys, MAX_KEYS_IN_MEMORY);
    assert.equal(await limits.forgotPassword.tryHit('held-0@example.com'), true, 'the first held key was released');
    assert.equal(await limits.forgotPassword.tryHit(`held-${MAX_KEYS_IN_MEMORY}@example.com`), false);
  });
});
