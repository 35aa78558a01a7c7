import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { evaluate, eventually, flagsPath, newFlag, newProject, newUser, request, startServer, type TestProject, type TestServer, type TestUser } from './harness.js';

describe('POST /sdk/v1/evaluate', () => {
  let server: TestServer;
  let user: TestUser;
  let project: TestProject;

  before(async () => {
    server = await startServer();
    user = await newUser(server);
    project = await newProject(server, user);
  });
  after(() => server.close());

  test('answers 200 with every flag of the environment and every reason string', async () => {
    const p = await newProject(server, user, 'reasons');
    await newFlag(server, user, p, { key: 'off', enabled: false, rollout_percentage: 100 });
    await newFlag(server, user, p, { key: 'on', enabled: true });
    await newFlag(server, user, p, { key: 'zero', enabled: true, rollout_percentage: 0 });
    // docs/api.md vector: (dark_mode, user_1) → bucket 47.
    await newFlag(server, user, p, { key: 'dark_mode', enabled: true, rollout_percentage: 48 });
    await newFlag(server, user, p, { key: 'dark_mode', enabled: true, rollout_percentage: 47 }, p.staging);
    const targeted = await newFlag(server, user, p, { key: 'targeted', enabled: true });
    const rules = `${flagsPath(p)}/${targeted.id}/rules`;
    await request(server, 'POST', rules, { token: user.token, body: { rule_type: 'user_id', rule_value: 'u-id' } });
    await request(server, 'POST', rules, { token: user.token, body: { rule_type: 'user_email', rule_value: 'Alice@Example.com' } });
    await request(server, 'POST', rules, { token: user.token, body: { rule_type: 'email_domain', rule_value: 'corp.com' } });
    await newFlag(server, user, p, { key: 'staging_only', enabled: true }, p.staging);

    const answer = await evaluate(server, p.sdk_key, 'production', { user_id: 'user_1' });
    assert.equal(answer.status, 200);
    assert.match(answer.headers.get('content-type') ?? '', /application\/json/);
    assert.deepEqual(Object.keys(answer.body), ['flags']);
    assert.deepEqual(answer.body.flags, {
      off: { enabled: false, reason: 'Flag is globally disabled' },
      on: { enabled: true, reason: 'Flag enabled globally' },
      zero: { enabled: true, reason: 'Flag enabled globally' },
      dark_mode: { enabled: true, reason: 'User in 48% rollout' },
      targeted: { enabled: true, reason: 'Flag enabled globally' },
    });

    const byId = await evaluate(server, p.sdk_key, 'production', { user_id: 'u-id' });
    assert.deepEqual(byId.body.flags.targeted, { enabled: true, reason: 'Matched user_id targeting rule' });
    const byEmail = await evaluate(server, p.sdk_key, 'production', { user_id: 'x', user_email: 'ALICE@example.COM' });
    assert.deepEqual(byEmail.body.flags.targeted, { enabled: true, reason: 'Matched user_email targeting rule' });
    const byDomain = await evaluate(server, p.sdk_key, 'production', { user_email: 'bob@corp.com' });
    assert.deepEqual(byDomain.body.flags.targeted, { enabled: true, reason: 'Matched email_domain targeting rule' });

    const staging = await evaluate(server, p.sdk_key, 'staging', { user_id: 'user_1' });
    assert.deepEqual(staging.body.flags, {
      dark_mode: { enabled: false, reason: 'User not in 47% rollout' },
      staging_only: { enabled: true, reason: 'Flag enabled globally' },
    });
  });

  test('an environment without flags answers an empty map', async () => {
    const p = await newProject(server, user, 'empty');
    const answer = await evaluate(server, p.sdk_key, 'staging', { user_id: 'u' });
    assert.equal(answer.status, 200);
    assert.deepEqual(answer.body, { flags: {} });
  });

  test('bucketing follows the vectors of docs/api.md and falls back to user_email, then "anonymous"', async () => {
    const p = await newProject(server, user, 'buckets');
    // (new_checkout, alice@example.com) → 13; (f, anonymous) → 71; (beta-ui, u-123) → 25; (flag, user123) → 78
    await newFlag(server, user, p, { key: 'new_checkout', enabled: true, rollout_percentage: 14 });
    await newFlag(server, user, p, { key: 'f', enabled: true, rollout_percentage: 71 });
    await newFlag(server, user, p, { key: 'beta-ui', enabled: true, rollout_percentage: 26 });
    await newFlag(server, user, p, { key: 'flag', enabled: true, rollout_percentage: 78 });

    const byEmail = await evaluate(server, p.sdk_key, 'production', { user_email: 'alice@example.com' });
    assert.deepEqual(byEmail.body.flags.new_checkout, { enabled: true, reason: 'User in 14% rollout' });
    const anonymous = await evaluate(server, p.sdk_key, 'production', {});
    assert.deepEqual(anonymous.body.flags.f, { enabled: false, reason: 'User not in 71% rollout' });
    const emptyId = await evaluate(server, p.sdk_key, 'production', { user_id: '' });
    assert.deepEqual(emptyId.body.flags.f, { enabled: false, reason: 'User not in 71% rollout' });
    const u123 = await evaluate(server, p.sdk_key, 'production', { user_id: 'u-123' });
    assert.deepEqual(u123.body.flags['beta-ui'], { enabled: true, reason: 'User in 26% rollout' });
    const user123 = await evaluate(server, p.sdk_key, 'production', { user_id: 'user123' });
    assert.deepEqual(user123.body.flags.flag, { enabled: false, reason: 'User not in 78% rollout' });
    // The same user always lands in the same bucket.
    const again = await evaluate(server, p.sdk_key, 'production', { user_id: 'user123' });
    assert.deepEqual(again.body, user123.body);
  });

  test('targeting rules win over rollout, higher priority first, and never apply to a disabled flag', async () => {
    const p = await newProject(server, user, 'priority');
    const flag = await newFlag(server, user, p, { key: 'checkout', enabled: true, rollout_percentage: 1 });
    const rules = `${flagsPath(p)}/${flag.id}/rules`;
    await request(server, 'POST', rules, { token: user.token, body: { rule_type: 'user_email', rule_value: 'a@corp.com', priority: 1 } });
    await request(server, 'POST', rules, { token: user.token, body: { rule_type: 'email_domain', rule_value: '@corp.com', priority: 5 } });
    const context = { user_id: 'someone', user_email: 'a@corp.com' };
    let answer = await evaluate(server, p.sdk_key, 'production', context);
    assert.deepEqual(answer.body.flags.checkout, { enabled: true, reason: 'Matched email_domain targeting rule' });

    await request(server, 'POST', `${flagsPath(p)}/${flag.id}/toggle`, { token: user.token });
    answer = await evaluate(server, p.sdk_key, 'production', context);
    assert.deepEqual(answer.body.flags.checkout, { enabled: false, reason: 'Flag is globally disabled' });
  });

  test('context: absent, user_id only, and null members are accepted', async () => {
    await newFlag(server, user, project, { key: 'ctx', enabled: true });
    for (const body of [{ environment: 'production' }, { environment: 'production', context: { user_id: 'only' } }, { environment: 'production', context: { user_id: null, user_email: null, custom_attributes: { plan: 'pro' } } }]) {
      const answer = await request(server, 'POST', '/sdk/v1/evaluate', { sdkKey: project.sdk_key, body });
      assert.equal(answer.status, 200, JSON.stringify(body));
      assert.deepEqual(answer.body.flags.ctx, { enabled: true, reason: 'Flag enabled globally' });
    }
  });

  test('400 for a missing or malformed body', async () => {
    const bodies: unknown[] = [
      '',
      '{"environment":',
      'null',
      '[]',
      '"production"',
      {},
      { environment: 5 },
      { environment: '' },
      { environment: 'production', context: 'user' },
      { environment: 'production', context: [] },
      { environment: 'production', context: { user_id: 42 } },
      { environment: 'production', context: { user_email: true } },
    ];
    for (const body of bodies) {
      const answer = await request(server, 'POST', '/sdk/v1/evaluate', { sdkKey: project.sdk_key, body });
      assert.equal(answer.status, 400, `body ${JSON.stringify(body)}: ${answer.text}`);
      assert.deepEqual(Object.keys(answer.body).sort(), ['error', 'message', 'statusCode']);
      assert.equal(answer.body.statusCode, 400);
    }
    const noBody = await request(server, 'POST', '/sdk/v1/evaluate', { sdkKey: project.sdk_key });
    assert.equal(noBody.status, 400);
  });

  test('a custom attribute number that is not finite (1e400, which JSON.parse reads as Infinity) is 400: evaluate and OFREP, single and bulk', async () => {
    await newFlag(server, user, project, { key: 'finite', enabled: true });
    for (const number of ['1e400', '-1e400']) {
      const answer = await request(server, 'POST', '/sdk/v1/evaluate', { sdkKey: project.sdk_key, body: `{"environment":"production","context":{"custom_attributes":{"seats":${number}}}}` });
      assert.equal(answer.status, 400, answer.text);
      assert.deepEqual(Object.keys(answer.body).sort(), ['error', 'message', 'statusCode']);
      const single = await request(server, 'POST', '/ofrep/v1/evaluate/flags/finite', { sdkKey: project.sdk_key, body: `{"context":{"targetingKey":"u","seats":${number}}}` });
      assert.equal(single.status, 400, single.text);
      assert.deepEqual([single.body.key, single.body.errorCode], ['finite', 'INVALID_CONTEXT']);
      const bulk = await request(server, 'POST', '/ofrep/v1/evaluate/flags', { sdkKey: project.sdk_key, body: `{"context":{"targetingKey":"u","seats":${number}}}` });
      assert.equal(bulk.status, 400, bulk.text);
      assert.equal(bulk.body.errorCode, 'INVALID_CONTEXT');
    }
    // The largest finite numbers still pass.
    const largest = await request(server, 'POST', '/sdk/v1/evaluate', { sdkKey: project.sdk_key, body: '{"environment":"production","context":{"custom_attributes":{"seats":1.7976931348623157e308,"debt":-1.7976931348623157e308}}}' });
    assert.equal(largest.status, 200, largest.text);
  });

  test('401 for a missing or unknown SDK key, checked before the body', async () => {
    const missing = await request(server, 'POST', '/sdk/v1/evaluate', { body: { environment: 'production' } });
    assert.equal(missing.status, 401);
    assert.deepEqual(missing.body, { statusCode: 401, error: 'Unauthorized', message: 'Missing or invalid SDK key' });
    const unknown = await evaluate(server, 'sdk_not-a-real-key', 'production');
    assert.equal(unknown.status, 401);
    const badBody = await request(server, 'POST', '/sdk/v1/evaluate', { sdkKey: 'sdk_nope', body: '{"environment":' });
    assert.equal(badBody.status, 401);
    // A bearer token is not an SDK key.
    const bearer = await request(server, 'POST', '/sdk/v1/evaluate', { token: user.token, body: { environment: 'production' } });
    assert.equal(bearer.status, 401);
  });

  test('404 for an environment key that is not in the project of the SDK key', async () => {
    const other = await newProject(server, user, 'other');
    await request(server, 'POST', `/api/projects/${other.id}/environments`, { token: user.token, body: { name: 'QA', key: 'qa' } });
    const answer = await request(server, 'POST', '/sdk/v1/evaluate', { sdkKey: project.sdk_key, body: { environment: 'qa' } });
    assert.equal(answer.status, 404);
    assert.equal(answer.body.statusCode, 404);
    assert.equal((await evaluate(server, other.sdk_key, 'qa')).status, 200);
    // Environment keys are exact: no case folding.
    assert.equal((await evaluate(server, project.sdk_key, 'Production')).status, 404);
  });

  test('every write is served on the very next request', async () => {
    const p = await newProject(server, user, 'live');
    const flag = await newFlag(server, user, p, { key: 'live', enabled: false });
    const flagPath = `${flagsPath(p)}/${flag.id}`;
    const live = async (context: Record<string, unknown> = { user_id: 'u1', user_email: 'u1@live.com' }) =>
      (await evaluate(server, p.sdk_key, 'production', context)).body.flags?.live;

    assert.equal((await live())?.reason, 'Flag is globally disabled'); // now cached
    await request(server, 'POST', `${flagPath}/toggle`, { token: user.token });
    assert.deepEqual(await live(), { enabled: true, reason: 'Flag enabled globally' });

    await request(server, 'PUT', flagPath, { token: user.token, body: { rollout_percentage: 100 } });
    assert.deepEqual(await live(), { enabled: true, reason: 'User in 100% rollout' });

    const rule = await request(server, 'POST', `${flagPath}/rules`, { token: user.token, body: { rule_type: 'user_id', rule_value: 'u1' } });
    assert.equal((await live())?.reason, 'Matched user_id targeting rule');
    await request(server, 'PUT', `${flagPath}/rules/${rule.body.id}`, { token: user.token, body: { rule_type: 'email_domain', rule_value: 'live.com' } });
    assert.equal((await live())?.reason, 'Matched email_domain targeting rule');
    await request(server, 'PUT', `${flagPath}/rules/${rule.body.id}`, { token: user.token, body: { enabled: false } });
    assert.equal((await live())?.reason, 'User in 100% rollout');
    await request(server, 'PUT', `${flagPath}/rules/${rule.body.id}`, { token: user.token, body: { enabled: true } });
    await request(server, 'DELETE', `${flagPath}/rules/${rule.body.id}`, { token: user.token });
    assert.equal((await live())?.reason, 'User in 100% rollout');

    await request(server, 'PUT', flagPath, { token: user.token, body: { key: 'renamed' } });
    let flags = (await evaluate(server, p.sdk_key, 'production')).body.flags;
    assert.deepEqual(Object.keys(flags), ['renamed']);
    await newFlag(server, user, p, { key: 'added', enabled: true });
    flags = (await evaluate(server, p.sdk_key, 'production')).body.flags;
    assert.deepEqual(Object.keys(flags).sort(), ['added', 'renamed']);
    await request(server, 'DELETE', flagPath, { token: user.token });
    flags = (await evaluate(server, p.sdk_key, 'production')).body.flags;
    assert.deepEqual(Object.keys(flags), ['added']);

    assert.equal((await evaluate(server, p.sdk_key, 'qa')).status, 404);
    const qa = await request(server, 'POST', `/api/projects/${p.id}/environments`, { token: user.token, body: { name: 'QA', key: 'qa' } });
    assert.equal((await evaluate(server, p.sdk_key, 'qa')).status, 200);
    await request(server, 'DELETE', `/api/projects/${p.id}/environments/${qa.body.id}`, { token: user.token });
    assert.equal((await evaluate(server, p.sdk_key, 'qa')).status, 404);

    const rotated = await request(server, 'POST', `/api/projects/${p.id}/regenerate-key`, { token: user.token });
    assert.equal((await evaluate(server, p.sdk_key, 'production')).status, 401);
    assert.equal((await evaluate(server, rotated.body.sdk_key, 'production')).status, 200);

    await request(server, 'DELETE', `/api/projects/${p.id}`, { token: user.token });
    assert.equal((await evaluate(server, rotated.body.sdk_key, 'production')).status, 401);
  });

  test('a rotated-out key fails even when requests race the rotation', async () => {
    const p = await newProject(server, user, 'race');
    await newFlag(server, user, p, { key: 'x', enabled: true });
    // Cold cache: many concurrent loads are in flight while the key rotates.
    const inFlight = Array.from({ length: 20 }, () => evaluate(server, p.sdk_key, 'production'));
    const rotated = await request(server, 'POST', `/api/projects/${p.id}/regenerate-key`, { token: user.token });
    await Promise.all(inFlight);
    assert.equal((await evaluate(server, p.sdk_key, 'production')).status, 401);
    assert.equal((await evaluate(server, rotated.body.sdk_key, 'production')).status, 200);
  });

  test('each evaluation is recorded after the answer: one item per flag, user_id kept, email not', async () => {
    const p = await newProject(server, user, 'history');
    const a = await newFlag(server, user, p, { key: 'a', enabled: true });
    const b = await newFlag(server, user, p, { key: 'b', enabled: false });
    await evaluate(server, p.sdk_key, 'production', { user_id: 'hist-user', user_email: 'secret@example.com' });
    await evaluate(server, p.sdk_key, 'production', { user_email: 'secret@example.com' });

    const history = () => request(server, 'GET', `/api/projects/${p.id}/evaluations`, { token: user.token });
    await eventually(async () => (await history()).body.items.length === 4, 'four history items');
    const { body } = await history();
    assert.equal(body.next_cursor, null);
    // Newest first: the second request's flags, then the first's.
    assert.deepEqual(
      body.items.map((item: Record<string, unknown>) => [item.flag_key, item.flag_id, item.user_id, item.enabled, item.reason, item.environment_id]),
      [
        ['a', a.id, null, true, 'Flag enabled globally', p.production],
        ['b', b.id, null, false, 'Flag is globally disabled', p.production],
        ['a', a.id, 'hist-user', true, 'Flag enabled globally', p.production],
        ['b', b.id, 'hist-user', false, 'Flag is globally disabled', p.production],
      ],
    );
    assert.equal(new Set(body.items.map((item: { id: string }) => item.id)).size, 4);
    for (const item of body.items) assert.match(item.evaluated_at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    assert.ok(!JSON.stringify(body).includes('secret@example.com'), 'emails are not stored');
  });

  test('history of an environment deleted before it is written is discarded without losing the rest of the batch', async () => {
    const p = await newProject(server, user, 'batch');
    await newFlag(server, user, p, { key: 'kept', enabled: true });
    await newFlag(server, user, p, { key: 'gone', enabled: true }, p.staging);
    await evaluate(server, p.sdk_key, 'staging', { user_id: 'batch-user' });
    await evaluate(server, p.sdk_key, 'production', { user_id: 'batch-user' });
    await request(server, 'DELETE', `/api/projects/${p.id}/environments/${p.staging}`, { token: user.token });

    const history = () => request(server, 'GET', `/api/projects/${p.id}/evaluations`, { token: user.token });
    await eventually(async () => (await history()).body.items.length > 0, 'the production item');
    assert.deepEqual((await history()).body.items.map((item: { flag_key: string }) => item.flag_key), ['kept']);
  });
});

describe('evaluate on a compiled project', () => {
  test('answers without the database: nothing is read when nothing changed', async () => {
    const server = await startServer();
    const user = await newUser(server);
    const project = await newProject(server, user);
    await newFlag(server, user, project, { key: 'cached', enabled: true });
    assert.equal((await evaluate(server, project.sdk_key, 'production', { user_id: 'a' })).status, 200); // compiles it
    await server.database.close(); // from here on, any query of this process fails
    try {
      for (const userId of ['b', 'c', 'd']) {
        const answer = await evaluate(server, project.sdk_key, 'production', { user_id: userId });
        assert.equal(answer.status, 200);
        assert.deepEqual(answer.body.flags.cached, { enabled: true, reason: 'Flag enabled globally' });
      }
      assert.equal((await evaluate(server, project.sdk_key, 'nope')).status, 404);
      assert.equal((await request(server, 'GET', '/health')).status, 503, 'the database really is gone');
    } finally {
      await server.close();
    }
  });
});

describe('evaluate rate limit', () => {
  let server: TestServer;
  before(async () => {
    server = await startServer({ RATE_LIMIT_EVALUATE: '200' });
  });
  after(() => server.close());

  test('200 per minute per client IP: the 201st answers 429 with Retry-After, checked before the SDK key', async () => {
    const user = await newUser(server);
    const project = await newProject(server, user);
    const ip = { 'x-forwarded-for': '203.0.113.7' };
    for (let i = 1; i <= 200; i++) {
      const answer = await request(server, 'POST', '/sdk/v1/evaluate', { sdkKey: project.sdk_key, headers: ip, body: { environment: 'production' } });
      assert.equal(answer.status, 200, `request ${i}`);
    }
    const limited = await request(server, 'POST', '/sdk/v1/evaluate', { sdkKey: project.sdk_key, headers: ip, body: { environment: 'production' } });
    assert.equal(limited.status, 429);
    assert.equal(limited.body.statusCode, 429);
    const retryAfter = Number(limited.headers.get('retry-after'));
    assert.ok(Number.isInteger(retryAfter) && retryAfter >= 1 && retryAfter <= 60, `Retry-After ${retryAfter}`);
    // Rate limit comes before the SDK key check.
    const badKey = await request(server, 'POST', '/sdk/v1/evaluate', { sdkKey: 'sdk_wrong', headers: ip, body: { environment: 'production' } });
    assert.equal(badKey.status, 429);
    // Another client is not limited.
    const other = await request(server, 'POST', '/sdk/v1/evaluate', { sdkKey: project.sdk_key, headers: { 'x-forwarded-for': '203.0.113.8' }, body: { environment: 'production' } });
    assert.equal(other.status, 200);
  });
});

describe('evaluate service error', () => {
  test('500 with the error shape and no internals when the database is gone', async () => {
    const server = await startServer();
    const user = await newUser(server);
    const project = await newProject(server, user);
    await server.database.close();
    try {
      const answer = await evaluate(server, project.sdk_key, 'production'); // not cached yet: needs the database
      assert.equal(answer.status, 500);
      assert.deepEqual(answer.body, { statusCode: 500, error: 'Internal Server Error', message: 'Internal server error' });
      const health = await request(server, 'GET', '/health');
      assert.equal(health.status, 503);
    } finally {
      await server.close();
    }
  });
});
