import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { eventually, newFlag, newProject, newUser, request, startServer, type Answer, type TestProject, type TestServer } from './harness.js';

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

  test('is on: no hook it would skip applies to the route', async () => {
    await direct('{"environment":"production"}');
    assert.ok(!server.logs.some((line) => line.includes('its direct path would skip')), server.logs.join(''));
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
      '{"environment":"production","context":{"user_id":"\\u00e9"}}', // escapes: Fastify's parser decides, and answers 200
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
