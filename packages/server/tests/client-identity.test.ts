/**
 * Who a client is, for the per-IP limits (contract §4), and counters that cannot be dodged:
 * X-Forwarded-For is believed from loopback only unless TRUST_PROXY names more (issue 18, finding
 * 3: a client in a private range chose its own address and never met the failed-login lockout).
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { newUser, startServer, type TestServer, type TestUser } from './harness.js';
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
