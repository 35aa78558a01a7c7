import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { Redis } from 'ioredis';
import { buildApp } from '../src/app.js';
import { loadConfig } from '../src/config.js';
import { openDatabase } from '../src/db/database.js';
import Fastify, { type FastifyServerOptions } from 'fastify';
import { routeMeta } from '../src/http/direct-path.js';
import { hooksTheDirectPathWouldSkip } from '../src/modules/evaluate/evaluate.direct.js';
import { createTestDatabase } from './test-database.js';
import { eventually, fastifyHandled, freePort, newFlag, newProject, newUser, request, startServer, type Answer, type TestProject, type TestServer } from './harness.js';

/**
 * Evaluate's direct path (evaluate.direct.ts) answers plain `application/json` requests without
 * Fastify's pipeline; the same request declared as `application/json; charset=UTF-8` goes through
 * Fastify. Whatever the path, the answer must be the same: status, body and headers.
 */
describe('evaluate: the direct path answers as Fastify does', () => {
  let server: TestServer;
  let project: TestProject;

  before(async () => {
    server = await startServer();
    const user = await newUser(server);
    project = await newProject(server, user);
    await newFlag(server, user, project, { key: 'on', enabled: true });
    await newFlag(server, user, project, { key: 'half', enabled: true, rollout_percentage: 50 });
  });
  after(() => server.close());

  const send = (body: string, type: string, headers: Record<string, string> = {}) =>
    request(server, 'POST', '/sdk/v1/evaluate', { sdkKey: project.sdk_key, body, headers: { 'content-type': type, ...headers } });
  const direct = (body: string, headers?: Record<string, string>) => send(body, 'application/json', headers);
  const throughFastify = (body: string, headers?: Record<string, string>) => send(body, 'application/json; charset=UTF-8', headers);
  const headerNames = (answer: Answer) => [...answer.headers.keys()].filter((name) => name !== 'date').sort();

  test('is on: every hook that applies to the route is one it does itself', async () => {
    assert.deepEqual(hooksTheDirectPathWouldSkip(server.app), []);
  });

  test('a hook added to the app that it would skip stops the start, naming the hook', async () => {
    const database = await createTestDatabase();
    const config = loadConfig({ DATABASE_URL: database.url, LOG_LEVEL: 'silent' });
    const opened = await openDatabase(config.database, { poolSize: 1 });
    const app = await buildApp(config, opened, { changeNotifications: false });
    app.addHook('onRequest', function auditEveryRequest(_request, _reply, done) {
      done();
    });
    app.addHook('preHandler', async function checkSomething() {});
    try {
      await assert.rejects(async () => app.ready(), /direct path .* would skip onRequest auditEveryRequest, preHandler checkSomething/);
    } finally {
      await app.close().catch(() => undefined);
      await opened.close();
      await database.drop();
    }
  });

  test('a hook of any kind that reaches the route, from a plugin that shares the app\'s context too, stops the start', async () => {
    const database = await createTestDatabase();
    const config = loadConfig({ DATABASE_URL: database.url, LOG_LEVEL: 'silent' });
    const opened = await openDatabase(config.database, { poolSize: 1 });
    const app = await buildApp(config, opened, { changeNotifications: false });
    // As @fastify/cors or @fastify/helmet are: a plugin marked skip-override adds its hooks to the app itself.
    const shared = Object.assign(
      async (instance: typeof app) => {
        instance.addHook('preValidation', async function sharedCheck() {});
        instance.addHook('onSend', async function addHeader(_request, _reply, payload) {
          return payload;
        });
        instance.addHook('preSerialization', async function reshape(_request, _reply, payload) {
          return payload;
        });
        instance.addHook('onError', async function noteError() {});
      },
      { [Symbol.for('skip-override')]: true },
    );
    await app.register(shared);
    // Encapsulated elsewhere: not the evaluate route's, so not named.
    await app.register(async (other) => {
      other.addHook('preHandler', async function elsewhere() {});
    });
    try {
      await assert.rejects(async () => app.ready(), (error: Error) => {
        for (const hook of ['preValidation sharedCheck', 'onSend addHeader', 'preSerialization reshape', 'onError noteError']) assert.ok(error.message.includes(hook), `${hook} in ${error.message}`);
        assert.ok(!error.message.includes('elsewhere'), error.message);
        return true;
      });
    } finally {
      await app.close().catch(() => undefined);
      await opened.close();
      await database.drop();
    }
  });

  test('a read of the hooks that finds nothing is an error, not an empty list', async () => {
    // Fastify without routeMeta (app.ts): nothing to read from.
    const bare = Fastify();
    bare.post('/sdk/v1/evaluate', { onRequest: function sdkProject(_request, _reply, done) {
      done();
    } }, async () => ({}));
    await bare.ready();
    assert.throws(() => hooksTheDirectPathWouldSkip(bare), /could not be read/);
    await bare.close();
    // With it, but the route lacks a hook the direct path names: the read is not trusted.
    const lacking = Fastify({ routerOptions: { buildPrettyMeta: routeMeta } as FastifyServerOptions['routerOptions'] });
    lacking.post('/sdk/v1/evaluate', async () => ({}));
    await lacking.ready();
    assert.throws(() => hooksTheDirectPathWouldSkip(lacking), /lack onRequest requestHeaders/);
    await lacking.close();
  });

  test('the same answer and headers; the request id is the caller\'s or a new one', async () => {
    for (const context of [{ user_id: 'user-1' }, { user_id: 'user-2', user_email: 'a@b.c' }, {}]) {
      const body = JSON.stringify({ environment: 'production', context });
      const [a, b] = [await direct(body), await throughFastify(body)];
      assert.equal(a.status, 200);
      assert.equal(b.status, 200);
      assert.equal(a.text, b.text);
      assert.deepEqual(headerNames(a), headerNames(b));
      for (const name of headerNames(a)) if (name !== 'x-request-id') assert.equal(a.headers.get(name), b.headers.get(name), name);
      assert.match(a.headers.get('x-request-id') ?? '', /^[0-9a-f-]{36}$/);
    }
    const given = await direct('{"environment":"production"}', { 'x-request-id': 'caller-id.1' });
    assert.equal(given.headers.get('x-request-id'), 'caller-id.1');

  });

  test('every request it does not answer 200 gets what Fastify answers', async () => {
    const bodies = [
      '{"environment":"production"', // not JSON
      '{"environment":7}', // invalid
      '{"environment":"production","context":"x"}',
      '{"environment":"production","context":{"user_id":5}}',
      `{"environment":"${'e'.repeat(65)}"}`,
      '{"environment":"nowhere"}', // unknown environment: 404
      '{"environment":"production","__proto__":{"x":1}}', // Fastify's JSON parser refuses it
      '{"environment":"production","constructor":{"prototype":{"x":1}}}', // refused too
      '{"environment":"production","\\u005f_proto__":{"x":1}}', // the same key, escaped
      '{"environment":"production","context":{"user_id":"\\u00e9"}}', // escapes: parsed by both, 200
      '[]',
      'null',
    ];
    for (const body of bodies) {
      const [a, b] = [await direct(body), await throughFastify(body)];
      assert.equal(a.status, b.status, body);
      assert.equal(a.text, b.text, body);
      assert.deepEqual(headerNames(a), headerNames(b), body);
    }
    const unknownKey = await request(server, 'POST', '/sdk/v1/evaluate', { sdkKey: 'sdk_unknown', body: '{"environment":"production"}' });
    assert.equal(unknownKey.status, 401);
  });

  test('requests recorded by both paths are in history', async () => {
    const owner = await newUser(server, 'owner');
    const own = await newProject(server, owner);
    await newFlag(server, owner, own, { key: 'f', enabled: true });
    const body = (id: string) => JSON.stringify({ environment: 'production', context: { user_id: id } });
    const send2 = (id: string, type: string) => request(server, 'POST', '/sdk/v1/evaluate', { sdkKey: own.sdk_key, body: body(id), headers: { 'content-type': type } });
    assert.equal((await send2('by-direct', 'application/json')).status, 200);
    assert.equal((await send2('by-fastify', 'application/json; charset=UTF-8')).status, 200);
    await eventually(async () => {
      const items = await request(server, 'GET', `/api/projects/${own.id}/evaluations`, { token: owner.token });
      const users = new Set((items.body.items as { user_id: string }[]).map((item) => item.user_id));
      return users.has('by-direct') && users.has('by-fastify');
    }, 'both evaluations in history');
  });

  test('its answers are counted in the metrics like the route\'s', async () => {
    const counted = await startServer({ METRICS_TOKEN: 'metrics-secret' });
    try {
      const owner = await newUser(counted);
      const own = await newProject(counted, owner);
      const body = '{"environment":"production","context":{"user_id":"u"}}';
      for (const type of ['application/json', 'application/json', 'application/json; charset=UTF-8']) {
        const answer = await request(counted, 'POST', '/sdk/v1/evaluate', { sdkKey: own.sdk_key, body, headers: { 'content-type': type } });
        assert.equal(answer.status, 200);
      }
      const metrics = await request(counted, 'GET', '/metrics', { headers: { authorization: 'Bearer metrics-secret' } });
      assert.match(metrics.text, /^guidon_evaluate_requests_total\{status="200"\} 3$/m);
      assert.match(metrics.text, /^guidon_http_request_duration_seconds_count\{method="POST",route="\/sdk\/v1\/evaluate",status="200"\} 3$/m);
    } finally {
      await counted.close();
    }
  });
});

describe('evaluate: the direct path with the rate limit on', () => {
  const LIMIT = 5;
  let server: TestServer;
  let project: TestProject;
  const handled = fastifyHandled();
  let sent = 0;

  before(async () => {
    server = await startServer({ RATE_LIMIT_EVALUATE: String(LIMIT), METRICS_TOKEN: 'metrics-secret' });
    const user = await newUser(server);
    project = await newProject(server, user);
    await newFlag(server, user, project, { key: 'on', enabled: true });
    await newFlag(server, user, project, { key: 'half', enabled: true, rollout_percentage: 50 });
    // Compiles the project (the direct path takes only compiled keys); counted for an address of its own.
    await request(server, 'POST', '/sdk/v1/evaluate', { sdkKey: project.sdk_key, body: '{"environment":"production"}', headers: { 'x-forwarded-for': '198.51.100.1' } });
  });
  after(async () => {
    handled.stop();
    await server.close();
  });

  /** One evaluate request from `ip` (X-Forwarded-For; the test server trusts its loopback proxy); its own request id. */
  const send = (ip: string, path: 'direct' | 'fastify', body = '{"environment":"production","context":{"user_id":"u1"}}', sdkKey = project.sdk_key) => {
    const id = `limit-test-${++sent}`;
    const type = path === 'direct' ? 'application/json' : 'application/json; charset=UTF-8';
    return request(server, 'POST', '/sdk/v1/evaluate', { sdkKey, body, headers: { 'content-type': type, 'x-forwarded-for': ip, 'x-request-id': id } }).then((answer) => ({ ...answer, id }));
  };
  const headerNames = (answer: Answer) => [...answer.headers.keys()].filter((name) => name !== 'date').sort();
  /** Status, body, header names, and each header's value but the request id's (and those named). */
  const assertSame = (a: Answer, b: Answer, except: string[] = []) => {
    assert.equal(a.status, b.status);
    assert.equal(a.text, b.text);
    assert.deepEqual(headerNames(a), headerNames(b));
    for (const name of headerNames(a)) if (name !== 'x-request-id' && !except.includes(name)) assert.equal(a.headers.get(name), b.headers.get(name), name);
  };

  test('takes the requests under the limit and answers them as the route does', async () => {
    assert.ok(!server.logs.some((line) => line.includes('its direct path would skip')), server.logs.join(''));
    for (const context of [{ user_id: 'user-1' }, { user_id: 'user-2', user_email: 'a@b.c' }, {}]) {
      const body = JSON.stringify({ environment: 'production', context });
      const [a, b] = [await send('203.0.113.1', 'direct', body), await send('203.0.113.2', 'fastify', body)];
      assert.equal(a.status, 200);
      assertSame(a, b);
      assert.equal(a.headers.get('x-request-id'), a.id);
      assert.ok(!handled.ids.has(a.id), 'answered by the direct path');
      assert.ok(handled.ids.has(b.id), 'answered by the route');
    }
  });

  test('over the limit: the same 429 as the route, with Retry-After, in the error shape of docs/api.md', async () => {
    const answers = { direct: [] as (Answer & { id: string })[], fastify: [] as (Answer & { id: string })[] };
    for (const [ip, path] of [['203.0.113.3', 'direct'], ['203.0.113.4', 'fastify']] as const) {
      for (let i = 1; i <= LIMIT + 2; i++) answers[path].push(await send(ip, path));
    }
    for (const path of ['direct', 'fastify'] as const) {
      assert.deepEqual(answers[path].map((answer) => answer.status), [200, 200, 200, 200, 200, 429, 429], path);
    }
    const [a, b] = [answers.direct[LIMIT]!, answers.fastify[LIMIT]!];
    assert.deepEqual(a.body, { statusCode: 429, error: 'Too Many Requests', message: 'Too many requests, try again later' });
    const retryAfter = Number(a.headers.get('retry-after'));
    assert.ok(Number.isInteger(retryAfter) && retryAfter >= 1 && retryAfter <= 60, `Retry-After ${retryAfter}`);
    assert.equal(a.headers.get('x-content-type-options'), 'nosniff');
    assert.equal(a.headers.get('x-request-id'), a.id);
    // Retry-After counts down in whole seconds: the two windows started a few milliseconds apart.
    assert.ok(Math.abs(retryAfter - Number(b.headers.get('retry-after'))) <= 1);
    assertSame(a, b, ['retry-after']);
    assert.ok(answers.direct.slice(0, LIMIT).every((answer) => !handled.ids.has(answer.id)), 'the 200s were the direct path\'s');
  });

  test('one hit per request, whichever path answers and whoever hands it over', async () => {
    const ip = '203.0.113.5';
    const statuses = [
      (await send(ip, 'direct')).status, // 1: answered directly
      (await send(ip, 'direct', '{"environment":7}')).status, // 2: counted, then handed over: 400
      (await send(ip, 'direct', '{"environment":"nowhere"}')).status, // 3: counted, then handed over: 404
      (await send(ip, 'fastify')).status, // 4: counted by the route
      (await send(ip, 'direct', '{"environment":"production","__proto__":{"x":1}}')).status, // 5: counted, handed over: 400
      (await send(ip, 'direct')).status, // 6: the first 429
      (await send(ip, 'fastify')).status, // 7
      (await send(ip, 'direct', '{"environment":"production"}', 'sdk_unknown')).status, // 8: the limit before the key (docs/api.md, Evaluate: the order of errors)
    ];
    assert.deepEqual(statuses, [200, 400, 404, 200, 400, 429, 429, 429]);
    // Both paths count under one key: the route's request.ip (X-Forwarded-For through a trusted proxy).
    const other = '203.0.113.6';
    for (let i = 0; i < LIMIT; i++) assert.equal((await send(other, i % 2 === 0 ? 'direct' : 'fastify')).status, 200);
    assert.equal((await send(other, 'fastify')).status, 429);
    assert.equal((await send(other, 'direct')).status, 429);
  });

  test('the metrics count each answer once, 429s included', async () => {
    const scrape = async () => (await request(server, 'GET', '/metrics', { headers: { authorization: 'Bearer metrics-secret' } })).text;
    const value = (text: string, series: string) => Number(new RegExp(`^${series.replace(/[{}()[\].*+?^$|\\/]/g, '\\$&')} (\\d+)$`, 'm').exec(text)?.[1] ?? 0);
    const before = await scrape();
    const ip = '203.0.113.7';
    for (let i = 0; i < LIMIT + 3; i++) await send(ip, i % 2 === 0 ? 'direct' : 'fastify');
    const after = await scrape();
    for (const [status, count] of [['200', LIMIT], ['429', 3]] as const) {
      assert.equal(value(after, `guidon_evaluate_requests_total{status="${status}"}`) - value(before, `guidon_evaluate_requests_total{status="${status}"}`), count, status);
      const series = `guidon_http_request_duration_seconds_count{method="POST",route="/sdk/v1/evaluate",status="${status}"}`;
      assert.equal(value(after, series) - value(before, series), count, series);
    }
  });
});

describe('evaluate: the direct path keys the rate limit by the route\'s client address', () => {
  // Per TRUST_PROXY: X-Forwarded-For values the route counts under one key (then refused), and one under another.
  const cases = [
    { TRUST_PROXY: 'false', same: ['203.0.113.31', '203.0.113.30', ''], other: null }, // the socket's address, 127.0.0.1
    { TRUST_PROXY: 'true', same: ['203.0.113.30', '203.0.113.30, 198.51.100.9', '203.0.113.30, 10.0.0.1, 198.51.100.7'], other: '198.51.100.9' }, // the first
    { TRUST_PROXY: '', same: ['198.51.100.9', '203.0.113.30, 198.51.100.9', '10.1.1.1, 198.51.100.9'], other: '203.0.113.30' }, // the default: the last untrusted
  ];
  for (const { TRUST_PROXY, same, other } of cases) {
    test(`TRUST_PROXY=${TRUST_PROXY || '(default)'}`, async () => {
      const server = await startServer({ RATE_LIMIT_EVALUATE: '2', TRUST_PROXY });
      const handled = fastifyHandled();
      try {
        const user = await newUser(server);
        const project = await newProject(server, user);
        const send = (forwardedFor: string, type: string, id: string) =>
          request(server, 'POST', '/sdk/v1/evaluate', { sdkKey: project.sdk_key, body: '{"environment":"production"}', headers: { 'content-type': type, 'x-request-id': id, ...(forwardedFor ? { 'x-forwarded-for': forwardedFor } : {}) } });
        assert.equal((await send(same[0]!, 'application/json; charset=UTF-8', 'first')).status, 200); // the route's; compiles the key
        assert.equal((await send(same[1]!, 'application/json', 'second')).status, 200);
        assert.ok(!handled.ids.has('second'), 'answered by the direct path');
        assert.equal((await send(same[2]!, 'application/json', 'third')).status, 429);
        if (other !== null) assert.equal((await send(other, 'application/json', 'other')).status, 200);
      } finally {
        handled.stop();
        await server.close();
      }
    });
  }
});

const hasRedisServer = spawnSync('redis-server', ['--version']).status === 0;

describe('evaluate: the direct path counts one hit per request in Redis', { skip: hasRedisServer ? false : 'redis-server is not installed' }, () => {
  test('the shared counter holds exactly the number of requests, refused ones included', async () => {
    const port = await freePort();
    const redisServer = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
    const redis = new Redis({ port, host: '127.0.0.1', lazyConnect: true, maxRetriesPerRequest: 1 });
    redis.on('error', () => undefined); // refused until redis-server listens
    let server: TestServer | undefined;
    try {
      await eventually(() => redis.connect().then(() => true, () => false), 'redis-server up');
      server = await startServer({ REDIS_URL: `redis://127.0.0.1:${port}`, RATE_LIMIT_EVALUATE: '3' });
      const user = await newUser(server);
      const project = await newProject(server, user);
      await newFlag(server, user, project, { key: 'f', enabled: true });
      const ip = '203.0.113.9';
      const handled = fastifyHandled();
      const statuses: number[] = [];
      try {
        for (const [type, body] of [
          ['application/json; charset=UTF-8', '{"environment":"production"}'], // through the route: compiles the key
          ['application/json', '{"environment":"production"}'], // the direct path's 200
          ['application/json', '{"environment":"nowhere"}'], // counted, handed over: 404
          ['application/json', '{"environment":"production"}'], // refused: handed over, answered by the route
          ['application/json', '{"environment":"production"}'],
          ['application/json; charset=UTF-8', '{"environment":"production"}'],
        ]) {
          const answer = await request(server, 'POST', '/sdk/v1/evaluate', { sdkKey: project.sdk_key, body, headers: { 'content-type': type!, 'x-forwarded-for': ip, 'x-request-id': `redis-${statuses.length}` } });
          statuses.push(answer.status);
        }
      } finally {
        handled.stop();
      }
      assert.deepEqual(statuses, [200, 200, 404, 429, 429, 429]);
      assert.ok(!handled.ids.has('redis-1'), 'the second 200 was the direct path\'s');
      assert.equal(await redis.get(`guidon:evaluate:${ip}`), '6', 'six requests, six hits');
    } finally {
      await server?.close();
      redis.disconnect();
      const exited = new Promise((resolve) => redisServer.once('exit', resolve));
      redisServer.kill('SIGKILL');
      await exited;
    }
  });
});
