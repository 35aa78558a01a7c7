/**
 * Black-box tests: one user never reaches another user's data (always 404, never 403, never the
 * data), every /api route needs a valid token (401), and hostile or malformed input never gives a
 * 500 and never changes anything (docs/api.md).
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import {
  evaluate,
  flagsPath,
  newFlag,
  newProject,
  newUser,
  request,
  startServer,
  type Answer,
  type TestProject,
  type TestServer,
  type TestUser,
} from './harness.js';

const STATUS_TEXT: Record<number, string> = {
  400: 'Bad Request',
  401: 'Unauthorized',
  404: 'Not Found',
  409: 'Conflict',
  413: 'Payload Too Large',
  415: 'Unsupported Media Type',
};

/** An error answer: the status, JSON, exactly {statusCode, error, message}, and no internals (docs/api.md). */
function assertError(answer: Answer, status: number, what = ''): void {
  assert.equal(answer.status, status, `${what}: got ${answer.status} ${answer.text.slice(0, 300)}`);
  assert.match(answer.headers.get('content-type') ?? '', /^application\/json/, `${what}: JSON error body`);
  assert.equal(typeof answer.body, 'object', `${what}: JSON object`);
  assert.deepEqual(Object.keys(answer.body).sort(), ['error', 'message', 'statusCode'], `${what}: error body keys`);
  assert.equal(answer.body.statusCode, status, what);
  if (STATUS_TEXT[status]) assert.equal(answer.body.error, STATUS_TEXT[status], what);
  assert.equal(typeof answer.body.message, 'string', what);
  assert.ok(answer.body.message.length > 0, what);
  assert.doesNotMatch(answer.body.message, /SQLITE|sqlite|\n\s+at |node_modules|INSERT INTO|SELECT /, `${what}: no internals in the message`);
}

let server: TestServer;

before(async () => {
  server = await startServer();
});
after(() => server.close());

const as = (user: TestUser) => (method: string, path: string, body?: unknown) =>
  request(server, method, path, { token: user.token, ...(body === undefined ? {} : { body }) });

interface Fixture {
  project: TestProject;
  name: string;
  envId: string;
  flagId: string;
  ruleId: string;
  projectPath: string;
  envsPath: string;
  envPath: string;
  flagsPath: string;
  flagPath: string;
  rulesPath: string;
  rulePath: string;
}

/** A project with a custom environment, a flag in it, and a rule on the flag. */
async function fixture(owner: TestUser, name: string): Promise<Fixture> {
  const project = await newProject(server, owner, name);
  const call = as(owner);
  await call('PUT', `/api/projects/${project.id}`, { description: `${name} description` });
  const env = await call('POST', `/api/projects/${project.id}/environments`, { name: `${name} env`, key: 'custom' });
  assert.equal(env.status, 201, env.text);
  const flag = await newFlag(server, owner, project, { key: 'secret_flag', name: `${name} flag`, description: 'd', enabled: true, rollout_percentage: 30 }, env.body.id);
  const flags = flagsPath(project, env.body.id);
  const rule = await call('POST', `${flags}/${flag.id}/rules`, { rule_type: 'user_email', rule_value: 'ceo@example.com', priority: 3 });
  assert.equal(rule.status, 201, rule.text);
  return {
    project,
    name,
    envId: env.body.id,
    flagId: flag.id,
    ruleId: rule.body.id,
    projectPath: `/api/projects/${project.id}`,
    envsPath: `/api/projects/${project.id}/environments`,
    envPath: `/api/projects/${project.id}/environments/${env.body.id}`,
    flagsPath: flags,
    flagPath: `${flags}/${flag.id}`,
    rulesPath: `${flags}/${flag.id}/rules`,
    rulePath: `${flags}/${flag.id}/rules/${rule.body.id}`,
  };
}

/** Everything the user's account holds, as the API shows it. */
async function snapshot(owner: TestUser): Promise<unknown> {
  const call = as(owner);
  const projects = await call('GET', '/api/projects');
  assert.equal(projects.status, 200);
  const result = [];
  for (const project of projects.body) {
    const envs = await call('GET', `/api/projects/${project.id}/environments`);
    const envStates = [];
    for (const env of envs.body) {
      const flags = await call('GET', `/api/projects/${project.id}/environments/${env.id}/flags`);
      const flagStates = [];
      for (const flag of flags.body) {
        const rules = await call('GET', `/api/projects/${project.id}/environments/${env.id}/flags/${flag.id}/rules`);
        flagStates.push({ flag, rules: rules.body });
      }
      envStates.push({ env, flags: flagStates });
    }
    result.push({ project, envs: envStates });
  }
  return result;
}

interface Route {
  method: string;
  path: string;
  body?: unknown;
}

/** Every /api route that names the fixture's resources, in an order where the deletes come last. */
function routesOf(f: Fixture): Route[] {
  return [
    { method: 'GET', path: f.projectPath },
    { method: 'PUT', path: f.projectPath, body: { name: 'pwned', description: 'pwned' } },
    { method: 'POST', path: `${f.projectPath}/regenerate-key` },
    { method: 'GET', path: f.envsPath },
    { method: 'POST', path: f.envsPath, body: { name: 'intruder', key: 'intruder' } },
    { method: 'GET', path: f.envPath },
    { method: 'PUT', path: f.envPath, body: { name: 'pwned' } },
    { method: 'GET', path: f.flagsPath },
    { method: 'POST', path: f.flagsPath, body: { name: 'intruder', key: 'intruder', enabled: true } },
    { method: 'GET', path: f.flagPath },
    { method: 'PUT', path: f.flagPath, body: { enabled: false, rollout_percentage: 100, name: 'pwned' } },
    { method: 'POST', path: `${f.flagPath}/toggle` },
    { method: 'GET', path: f.rulesPath },
    { method: 'POST', path: f.rulesPath, body: { rule_type: 'user_id', rule_value: 'intruder' } },
    { method: 'GET', path: f.rulePath },
    { method: 'PUT', path: f.rulePath, body: { rule_value: 'intruder@example.com', enabled: false } },
    { method: 'DELETE', path: f.rulePath },
    { method: 'DELETE', path: f.flagPath },
    { method: 'DELETE', path: f.envPath },
    { method: 'DELETE', path: f.projectPath },
  ];
}

/** The fixture's flag, as evaluate reports it for a targeted user. */
async function targetedResult(f: Fixture) {
  const answer = await evaluate(server, f.project.sdk_key, 'custom', { user_id: 'x', user_email: 'CEO@example.com' });
  assert.equal(answer.status, 200, answer.text);
  return answer.body.flags.secret_flag;
}

// ───────────────────────────────────────────────────────────────────────────── isolation

describe('user isolation', () => {
  let alice: TestUser;
  let bob: TestUser;
  let aliceData: Fixture;
  let bobData: Fixture;

  before(async () => {
    alice = await newUser(server, 'alice');
    bob = await newUser(server, 'bob');
    aliceData = await fixture(alice, 'Alice secret');
    bobData = await fixture(bob, 'Bob own');
  });

  test("user B gets 404 (never 403, never the data) on every route of user A's resources, and A's data is unchanged", async () => {
    const snapshotBefore = await snapshot(alice);
    assert.deepEqual(await targetedResult(aliceData), { enabled: true, reason: 'Matched user_email targeting rule' });
    const secrets = [aliceData.name, aliceData.project.sdk_key, 'ceo@example.com', 'secret_flag'];
    for (const route of routesOf(aliceData)) {
      const answer = await as(bob)(route.method, route.path, route.body);
      assertError(answer, 404, `bob ${route.method} ${route.path}`);
      for (const secret of secrets) assert.ok(!answer.text.includes(secret), `bob ${route.method} ${route.path} leaks ${secret}`);
    }
    assert.deepEqual(await snapshot(alice), snapshotBefore, "alice's data unchanged");
    assert.deepEqual(await targetedResult(aliceData), { enabled: true, reason: 'Matched user_email targeting rule' }, "alice's SDK key and rule still work");
  });

  test("B's project list does not contain A's project; each sees only their own", async () => {
    const bobList = await as(bob)('GET', '/api/projects');
    assert.equal(bobList.status, 200);
    assert.ok(!bobList.body.some((p: { id: string }) => p.id === aliceData.project.id));
    assert.ok(!bobList.text.includes(aliceData.project.sdk_key));
    assert.deepEqual(bobList.body.map((p: { id: string }) => p.id), [bobData.project.id]);
    const aliceList = await as(alice)('GET', '/api/projects?owner_id=' + bob.id + '&user_id=' + bob.id);
    assert.deepEqual(aliceList.body.map((p: { id: string }) => p.id), [aliceData.project.id], 'query strings do not widen the list');
  });

  test("A's child ids under B's own parents are 404 too (no id mixing across users)", async () => {
    const snapshotBefore = await snapshot(alice);
    const bobBefore = await snapshot(bob);
    const b = bobData;
    const a = aliceData;
    const mixed: Route[] = [
      // B's project, A's environment
      { method: 'GET', path: `${b.envsPath}/${a.envId}` },
      { method: 'PUT', path: `${b.envsPath}/${a.envId}`, body: { name: 'pwned' } },
      { method: 'GET', path: `${b.envsPath}/${a.envId}/flags` },
      { method: 'POST', path: `${b.envsPath}/${a.envId}/flags`, body: { name: 'intruder', key: 'intruder' } },
      // B's environment, A's flag
      { method: 'GET', path: `${b.flagsPath}/${a.flagId}` },
      { method: 'PUT', path: `${b.flagsPath}/${a.flagId}`, body: { enabled: false } },
      { method: 'POST', path: `${b.flagsPath}/${a.flagId}/toggle` },
      { method: 'GET', path: `${b.flagsPath}/${a.flagId}/rules` },
      { method: 'POST', path: `${b.flagsPath}/${a.flagId}/rules`, body: { rule_type: 'user_id', rule_value: 'x' } },
      // B's flag, A's rule
      { method: 'GET', path: `${b.rulesPath}/${a.ruleId}` },
      { method: 'PUT', path: `${b.rulesPath}/${a.ruleId}`, body: { enabled: false } },
      // A's project, B's environment (B is the caller, but the path names A's project)
      { method: 'GET', path: `${a.envsPath}/${b.envId}` },
      { method: 'GET', path: `${a.envsPath}/${b.envId}/flags/${b.flagId}` },
      // deletes last
      { method: 'DELETE', path: `${b.rulesPath}/${a.ruleId}` },
      { method: 'DELETE', path: `${b.flagsPath}/${a.flagId}` },
      { method: 'DELETE', path: `${b.envsPath}/${a.envId}` },
    ];
    for (const route of mixed) assertError(await as(bob)(route.method, route.path, route.body), 404, `bob ${route.method} ${route.path}`);
    assert.deepEqual(await snapshot(alice), snapshotBefore, "alice's data unchanged");
    assert.deepEqual(await snapshot(bob), bobBefore, "bob's data unchanged (nothing created by the refused writes)");
  });

  test("B's SDK key cannot evaluate A's environments", async () => {
    const other = await as(alice)('POST', `/api/projects/${aliceData.project.id}/environments`, { name: 'Only alice', key: 'only-alice' });
    assert.equal(other.status, 201);
    assertError(await evaluate(server, bobData.project.sdk_key, 'only-alice'), 404, "bob's key, alice's environment key");
    const answer = await evaluate(server, bobData.project.sdk_key, 'custom', { user_email: 'ceo@example.com' });
    assert.deepEqual(answer.body.flags, { secret_flag: { enabled: true, reason: 'Matched user_email targeting rule' } }, "bob's own flag only");
  });
});

// ───────────────────────────────────────────────────────────────────────────── authentication

describe('401 on every /api route without a valid token', () => {
  let carol: TestUser;
  let dave: TestUser;
  let data: Fixture;

  before(async () => {
    carol = await newUser(server, 'carol');
    dave = await newUser(server, 'dave');
    data = await fixture(carol, 'Carol');
  });

  const b64url = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');

  test('no token, malformed, forged or tampered tokens → 401 on every route, and nothing changes', async () => {
    const snapshotBefore = await snapshot(carol);
    const [header = '', , signature = ''] = carol.token.split('.');
    const now = Math.floor(Date.now() / 1000);
    const credentials: Array<[string, Record<string, string>]> = [
      ['no Authorization header', {}],
      ['empty header', { authorization: '' }],
      ['Bearer with nothing', { authorization: 'Bearer ' }],
      ['Bearer garbage', { authorization: 'Bearer not-a-token' }],
      ['three empty segments', { authorization: 'Bearer ..' }],
      ['Basic scheme', { authorization: `Basic ${Buffer.from(`${carol.email}:${carol.password}`).toString('base64')}` }],
      ['token without scheme', { authorization: carol.token }],
      ['token with trailing junk', { authorization: `Bearer ${carol.token} extra` }],
      ['signature altered', { authorization: `Bearer ${carol.token.slice(0, -4)}${carol.token.slice(-4) === 'AAAA' ? 'BBBB' : 'AAAA'}` }],
      ['payload swapped to another user, original signature', { authorization: `Bearer ${header}.${b64url({ sub: dave.id, iat: now, exp: now + 3600 })}.${signature}` }],
      ['alg none', { authorization: `Bearer ${b64url({ alg: 'none', typ: 'JWT' })}.${b64url({ sub: carol.id, iat: now, exp: now + 3600 })}.` }],
      ['SDK key instead of a token', { authorization: `Bearer ${data.project.sdk_key}` }],
      ['SDK key header only', { 'x-sdk-key': data.project.sdk_key }],
    ];
    const routes: Route[] = [
      { method: 'GET', path: '/api/me' },
      { method: 'GET', path: '/api/projects' },
      { method: 'POST', path: '/api/projects', body: { name: 'anonymous' } },
      ...routesOf(data),
      { method: 'GET', path: '/api/projects/not-a-uuid' },
    ];
    for (const [label, headers] of credentials) {
      for (const route of routes) {
        const answer = await request(server, route.method, route.path, { headers, ...(route.body === undefined ? {} : { body: route.body }) });
        assertError(answer, 401, `${label}: ${route.method} ${route.path}`);
        assert.ok(!answer.text.includes('Carol'), 'no data in a 401');
      }
    }
    assert.deepEqual(await snapshot(carol), snapshotBefore, 'nothing changed');
    assert.equal((await as(carol)('GET', '/api/me')).body.user_id, carol.id, 'the real token still works');
  });
});

// ───────────────────────────────────────────────────────────────────────────── bad input

describe('bad input never gives 500 and never changes data', () => {
  let erin: TestUser;
  let data: Fixture;
  let baseline: unknown;

  /** A write that must be refused with `status`, leaving the account exactly as it was. */
  async function refused(status: number, method: string, path: string, options: { body?: unknown; headers?: Record<string, string> }, what: string) {
    const answer = await request(server, method, path, { token: erin.token, ...options });
    assertError(answer, status, what);
    assert.deepEqual(await snapshot(erin), baseline, `${what}: nothing changed`);
  }

  before(async () => {
    erin = await newUser(server, 'erin');
    data = await fixture(erin, 'Erin');
    baseline = await snapshot(erin);
  });

  /** The write routes, each with a valid body to start from. */
  const writeRoutes = (): Array<{ label: string; method: string; path: string; valid: Record<string, unknown> }> => [
    { label: 'POST project', method: 'POST', path: '/api/projects', valid: { name: 'New', description: 'd' } },
    { label: 'PUT project', method: 'PUT', path: data.projectPath, valid: { name: 'Changed', description: 'changed' } },
    { label: 'POST environment', method: 'POST', path: data.envsPath, valid: { name: 'New env', key: 'new-env' } },
    { label: 'PUT environment', method: 'PUT', path: data.envPath, valid: { name: 'Changed env' } },
    { label: 'POST flag', method: 'POST', path: data.flagsPath, valid: { name: 'New flag', key: 'new_flag', description: 'd', enabled: true, rollout_percentage: 5 } },
    { label: 'PUT flag', method: 'PUT', path: data.flagPath, valid: { name: 'Changed flag', enabled: false, rollout_percentage: 99 } },
    { label: 'POST rule', method: 'POST', path: data.rulesPath, valid: { rule_type: 'user_id', rule_value: 'new', enabled: true, priority: 1 } },
    { label: 'PUT rule', method: 'PUT', path: data.rulePath, valid: { rule_value: 'changed@example.com', priority: 9 } },
  ];

  test('wrong types for every field → 400, even next to valid fields', async () => {
    const notString = [42, true, null, [], ['x'], { a: 1 }];
    const notBoolean = ['yes', 'true', 'false', 1, 0, null, [], {}];
    const notPercentage = ['50', '', 50.5, -1, 101, Infinity, null, true, [], [50], {}];
    const badName = [...notString, '', '   ', '\t\n'];
    const badFlagKey = [...notString, '', 'Upper', '1abc', '_x', 'a b', 'a.b'];
    const badEnvKey = [...notString, '', 'Upper', 'a b', 'a.b'];
    const badDescription = [42, true, [], { a: 1 }];
    const badRuleType = [...notString, '', 'country', 'USER_ID'];
    const badPriority = ['1', 1.5, null, true, [], {}];
    const fields: Record<string, Record<string, unknown[]>> = {
      'POST project': { name: badName, description: badDescription },
      'PUT project': { name: badName, description: badDescription },
      'POST environment': { name: badName, key: badEnvKey },
      'PUT environment': { name: badName, key: [42, true, null, [], {}, 'other-key'] },
      'POST flag': { name: badName, key: badFlagKey, description: badDescription, enabled: notBoolean, rollout_percentage: notPercentage },
      'PUT flag': { name: badName, key: badFlagKey, description: badDescription, enabled: notBoolean, rollout_percentage: notPercentage },
      'POST rule': { rule_type: badRuleType, rule_value: [...notString, '', '   '], enabled: notBoolean, priority: badPriority },
      'PUT rule': { rule_type: badRuleType, rule_value: [...notString, '', '   ', 'not-an-email'], enabled: notBoolean, priority: badPriority },
    };
    for (const route of writeRoutes()) {
      for (const [field, values] of Object.entries(fields[route.label] ?? {})) {
        for (const value of values) {
          // 1e400 is not representable in JS: send it as raw JSON text.
          const body = value === Infinity ? JSON.stringify({ ...route.valid, [field]: 0 }).replace(`"${field}":0`, `"${field}":1e400`) : { ...route.valid, [field]: value };
          await refused(400, route.method, route.path, { body }, `${route.label} ${field}=${JSON.stringify(value)}`);
        }
      }
    }
  });

  test('missing required fields → 400', async () => {
    const cases: Array<[string, string, Record<string, unknown>]> = [
      ['POST', '/api/projects', {}],
      ['POST', '/api/projects', { description: 'no name' }],
      ['POST', data.envsPath, {}],
      ['POST', data.envsPath, { name: 'no key' }],
      ['POST', data.envsPath, { key: 'no-name' }],
      ['POST', data.flagsPath, {}],
      ['POST', data.flagsPath, { name: 'no key', enabled: true }],
      ['POST', data.flagsPath, { key: 'no_name', enabled: true }],
      ['POST', data.rulesPath, {}],
      ['POST', data.rulesPath, { rule_type: 'user_id' }],
      ['POST', data.rulesPath, { rule_value: 'u1' }],
    ];
    for (const [method, path, body] of cases) await refused(400, method, path, { body }, `${method} ${path} ${JSON.stringify(body)}`);
  });

  test('malformed JSON, empty body, and null / array / string / number bodies → 400 on every write route', async () => {
    const raw = ['{"name": ', '{', 'not json', '{"name":"x",}', "{'name':'x'}", '{"name":"x"}}', '', ' ', 'null', '[]', '[{"name":"x","key":"x","rule_type":"user_id","rule_value":"x"}]', '"a string"', '42', 'true'];
    for (const route of writeRoutes()) {
      for (const body of raw) await refused(400, route.method, route.path, { body }, `${route.label} raw ${JSON.stringify(body)}`);
    }
    // Routes without a body do nothing when sent a malformed one.
    for (const path of [`${data.flagPath}/toggle`, `${data.projectPath}/regenerate-key`]) {
      for (const body of ['{"x": ', '', 'nope']) await refused(400, 'POST', path, { body }, `POST ${path} raw ${JSON.stringify(body)}`);
    }
  });

  test('bodies over 1 MiB → 413 on every write route, nothing changes', async () => {
    const huge = 'x'.repeat(1024 * 1024 + 1);
    for (const route of writeRoutes()) {
      await refused(413, route.method, route.path, { body: { ...route.valid, padding: huge } }, `${route.label} > 1 MiB`);
    }
    await refused(413, 'POST', `${data.flagPath}/toggle`, { body: { padding: huge } }, 'toggle > 1 MiB');
    await refused(413, 'POST', `${data.projectPath}/regenerate-key`, { body: { padding: huge } }, 'regenerate-key > 1 MiB');

    // The same without a Content-Length (chunked): still 413.
    const chunk = new TextEncoder().encode('x'.repeat(64 * 1024));
    let sent = 0;
    const stream = new ReadableStream<Uint8Array>({
      start(controller) {
        controller.enqueue(new TextEncoder().encode('{"name":"chunked","description":"'));
      },
      pull(controller) {
        if (sent > 1024 * 1024 + chunk.length) {
          controller.enqueue(new TextEncoder().encode('"}'));
          controller.close();
          return;
        }
        sent += chunk.length;
        controller.enqueue(chunk);
      },
    });
    const response = await fetch(`${server.url}/api/projects`, {
      method: 'POST',
      headers: { authorization: `Bearer ${erin.token}`, 'content-type': 'application/json' },
      body: stream,
      duplex: 'half',
    } as RequestInit);
    const status = response.status;
    const text = await response.text();
    assert.equal(status, 413, text);
    assert.deepEqual(JSON.parse(text), { statusCode: 413, error: 'Payload Too Large', message: JSON.parse(text).message });
    assert.deepEqual(await snapshot(erin), baseline, 'chunked > 1 MiB: nothing changed');
  });

  test('non-UUID path ids → 404 for project, environment, flag and rule; nothing changes', async () => {
    const { project } = data;
    const badIds = ['abc', '123', 'null', 'undefined', '%27%20OR%20%271%27%3D%271', '1%3B%20DROP%20TABLE%20flags', 'a'.repeat(100), `${project.id}x`, project.id.replaceAll('-', ''), `%7B${project.id}%7D`, '%00', '..%2F..%2Fetc'];
    const unknownUuid = '00000000-0000-4000-8000-000000000000';
    for (const bad of [...badIds, unknownUuid]) {
      const p = `/api/projects/${bad}`;
      const e = `${data.envsPath}/${bad}`;
      const f = `${data.flagsPath}/${bad}`;
      const r = `${data.rulesPath}/${bad}`;
      const cases: Route[] = [
        { method: 'GET', path: p },
        { method: 'PUT', path: p, body: { name: 'x' } },
        { method: 'POST', path: `${p}/regenerate-key` },
        { method: 'GET', path: `${p}/environments` },
        { method: 'POST', path: `${p}/environments`, body: { name: 'x', key: 'x' } },
        { method: 'GET', path: e },
        { method: 'PUT', path: e, body: { name: 'x' } },
        { method: 'GET', path: `${e}/flags` },
        { method: 'POST', path: `${e}/flags`, body: { name: 'x', key: 'x' } },
        { method: 'GET', path: f },
        { method: 'PUT', path: f, body: { name: 'x' } },
        { method: 'POST', path: `${f}/toggle` },
        { method: 'GET', path: `${f}/rules` },
        { method: 'POST', path: `${f}/rules`, body: { rule_type: 'user_id', rule_value: 'x' } },
        { method: 'GET', path: r },
        { method: 'PUT', path: r, body: { priority: 1 } },
        { method: 'DELETE', path: r },
        { method: 'DELETE', path: f },
        { method: 'DELETE', path: e },
        { method: 'DELETE', path: p },
      ];
      for (const route of cases) {
        const answer = await as(erin)(route.method, route.path, route.body);
        assertError(answer, 404, `${route.method} ${route.path.slice(0, 120)}`);
      }
    }
    assert.deepEqual(await snapshot(erin), baseline, 'nothing changed');
  });

  test('path ids longer than 100 characters → 404 with the error shape too (not 414)', async () => {
    for (const long of ['a'.repeat(101), 'a'.repeat(300), `${data.project.id}${'0'.repeat(80)}`]) {
      for (const route of [
        { method: 'GET', path: `/api/projects/${long}` },
        { method: 'PUT', path: `/api/projects/${long}`, body: { name: 'x' } },
        { method: 'DELETE', path: `${data.envsPath}/${long}` },
        { method: 'GET', path: `${data.flagsPath}/${long}` },
        { method: 'DELETE', path: `${data.rulesPath}/${long}` },
      ] as Route[]) {
        const answer = await as(erin)(route.method, route.path, route.body);
        assertError(answer, 404, `${route.method} …/${long.length}-character id`);
        assert.ok(!answer.text.includes(long), 'the path is not echoed back');
      }
      // Without a token, the answer is 401 like on every other /api path.
      assertError(await request(server, 'GET', `/api/projects/${long}`), 401, 'long id without a token');
    }
    assert.deepEqual(await snapshot(erin), baseline, 'nothing changed');
  });

  test('unknown routes and methods → 404 JSON', async () => {
    for (const [method, path] of [
      ['GET', '/api/nothing'],
      ['GET', '/nothing'],
      ['POST', `${data.projectPath}/nothing`],
      ['PATCH', data.projectPath],
      ['PATCH', data.flagPath],
      ['POST', data.flagPath],
      ['GET', `${data.flagPath}/toggle`],
      ['GET', '/sdk/v2/evaluate'],
      ['GET', '/api/projects/../../etc/passwd'],
    ] as const) {
      assertError(await as(erin)(method, path), 404, `${method} ${path}`);
    }
    assert.deepEqual(await snapshot(erin), baseline);
  });

  test('other content types are refused (400/415), never 500, nothing changes', async () => {
    const cases: Array<[string, string]> = [
      ['text/plain', '{"name":"as text"}'],
      ['application/xml', '<project><name>x</name></project>'],
      ['application/x-www-form-urlencoded', 'name=form'],
      ['multipart/form-data; boundary=abc', '--abc\r\nContent-Disposition: form-data; name="name"\r\n\r\nx\r\n--abc--'],
      ['application/octet-stream', '\u0000\u0001'],
    ];
    for (const [contentType, body] of cases) {
      const answer = await request(server, 'POST', '/api/projects', { token: erin.token, headers: { 'content-type': contentType }, body });
      assert.ok(answer.status === 400 || answer.status === 415, `${contentType}: ${answer.status} ${answer.text}`);
      assertError(answer, answer.status, contentType);
      assert.deepEqual(await snapshot(erin), baseline, `${contentType}: nothing changed`);
    }
  });

  test('prototype-pollution bodies are refused or harmless; the service keeps working', async () => {
    for (const body of [
      '{"name":"proto","__proto__":{"polluted":true}}',
      '{"name":"ctor","constructor":{"prototype":{"polluted":true}}}',
    ]) {
      const answer = await as(erin)('POST', '/api/projects', body);
      assert.ok(answer.status === 400 || answer.status === 201, `${body}: ${answer.status}`);
      if (answer.status === 400) {
        assertError(answer, 400, body);
        assert.deepEqual(await snapshot(erin), baseline, `${body}: nothing changed`);
      } else {
        assert.ok(!Object.hasOwn(answer.body, 'polluted'));
        assertNoContentOk(await as(erin)('DELETE', `/api/projects/${answer.body.id}`));
      }
    }
    const check = await as(erin)('GET', data.flagPath);
    assert.equal(check.status, 200);
    assert.ok(!('polluted' in check.body), 'objects are not polluted');
    const fresh = await as(erin)('POST', '/api/projects', { name: 'after pollution attempt' });
    assert.equal(fresh.status, 201);
    assert.ok(!('polluted' in fresh.body));
    assertNoContentOk(await as(erin)('DELETE', `/api/projects/${fresh.body.id}`));
    assert.deepEqual(await snapshot(erin), baseline);
  });

  test('absurd but well-formed input never gives 500', async () => {
    const deep = `{"name":"deep","nested":${'['.repeat(100_000)}${']'.repeat(100_000)}}`;
    const bodies: Array<[string, unknown]> = [
      ['deep nesting', deep],
      ['long name', { name: 'n'.repeat(100_000) }],
      ['long description', { name: 'long', description: 'd'.repeat(500_000) }],
      ['many unknown fields', Object.fromEntries([['name', 'many'], ...Array.from({ length: 20_000 }, (_, i) => [`f${i}`, i])])],
      ['NUL byte', { name: 'nul\u0000byte' }],
    ];
    for (const [label, body] of bodies) {
      const answer = await as(erin)('POST', '/api/projects', body);
      assert.ok(answer.status === 201 || answer.status === 400 || answer.status === 413, `${label}: ${answer.status} ${answer.text.slice(0, 200)}`);
      if (answer.status === 201) {
        assert.deepEqual((await as(erin)('GET', `/api/projects/${answer.body.id}`)).body, answer.body, `${label}: stored as answered`);
        assertNoContentOk(await as(erin)('DELETE', `/api/projects/${answer.body.id}`));
      } else {
        assertError(answer, answer.status, label);
      }
      assert.deepEqual(await snapshot(erin), baseline, `${label}: account back to its state`);
    }
  });

  test('a rejected write (400 / 409) leaves every field as it was, even the valid ones sent alongside', async () => {
    await refused(409, 'POST', data.envsPath, { body: { name: 'Dup', key: 'custom' } }, 'duplicate environment key');
    await refused(409, 'POST', data.flagsPath, { body: { name: 'Dup', key: 'secret_flag' } }, 'duplicate flag key');
    const other = await as(erin)('POST', data.flagsPath, { name: 'Other', key: 'other_flag' });
    assert.equal(other.status, 201);
    baseline = await snapshot(erin);
    await refused(409, 'PUT', data.flagPath, { body: { key: 'other_flag', name: 'Renamed too?', enabled: false } }, 'PUT flag key to a duplicate');
    await refused(400, 'PUT', data.flagPath, { body: { name: 'Renamed too?', rollout_percentage: 101 } }, 'PUT flag with one bad field');
    await refused(400, 'PUT', data.envPath, { body: { name: 'Renamed too?', key: 'other' } }, 'PUT env with another key');
    await refused(400, 'PUT', data.rulePath, { body: { priority: 50, rule_value: '' } }, 'PUT rule with one bad field');
    await refused(400, 'PUT', data.projectPath, { body: { description: 'changed too?', name: null } }, 'PUT project with name null');
  });
});

function assertNoContentOk(answer: Answer): void {
  assert.equal(answer.status, 204, answer.text);
  assert.equal(answer.text, '');
}

// ───────────────────────────────────────────────────────────────────────────── hostile but valid data

describe('hostile but valid data is stored verbatim', () => {
  let frank: TestUser;

  before(async () => {
    frank = await newUser(server, 'frank');
  });

  test('SQL-looking strings are stored verbatim and everything still works', async () => {
    const sqlish = ["'; DROP TABLE flags; --", '" OR 1=1 --', "Robert'); DELETE FROM projects;--", '%_\\', '1; UPDATE rules SET enabled = 0'];
    const call = as(frank);
    const first = "'; DROP TABLE flags; --";
    const project = await newProject(server, frank, first);
    assert.equal((await call('GET', `/api/projects/${project.id}`)).body.name, first);
    for (const [i, text] of sqlish.entries()) {
      const put = await call('PUT', `/api/projects/${project.id}`, { name: text, description: text });
      assert.equal(put.status, 200);
      const got = (await call('GET', `/api/projects/${project.id}`)).body;
      assert.equal(got.name, text);
      assert.equal(got.description, text);

      const env = await call('POST', `/api/projects/${project.id}/environments`, { name: text, key: `env-${i}` });
      assert.equal(env.status, 201, env.text);
      assert.equal((await call('GET', `/api/projects/${project.id}/environments/${env.body.id}`)).body.name, text);

      const flag = await call('POST', flagsPath(project), { name: text, key: `flag_${i}`, description: text, enabled: true, rollout_percentage: 0 });
      assert.equal(flag.status, 201, flag.text);
      const storedFlag = (await call('GET', `${flagsPath(project)}/${flag.body.id}`)).body;
      assert.equal(storedFlag.name, text);
      assert.equal(storedFlag.description, text);

      const rule = await call('POST', `${flagsPath(project)}/${flag.body.id}/rules`, { rule_type: 'user_id', rule_value: text });
      assert.equal(rule.status, 201, rule.text);
      assert.equal(rule.body.rule_value, text);
      const answer = await evaluate(server, project.sdk_key, 'production', { user_id: text });
      assert.deepEqual(answer.body.flags[`flag_${i}`], { enabled: true, reason: 'Matched user_id targeting rule' }, text);
      const miss = await evaluate(server, project.sdk_key, 'production', { user_id: 'someone' });
      assert.deepEqual(miss.body.flags[`flag_${i}`], { enabled: true, reason: 'Flag enabled globally' });
    }
    const emailRule = await call('POST', `${flagsPath(project)}/${(await call('GET', flagsPath(project))).body[0].id}/rules`, { rule_type: 'user_email', rule_value: "o'brien@example.com" });
    assert.equal(emailRule.status, 201);
    assert.equal(emailRule.body.rule_value, "o'brien@example.com");

    // Tables intact: everything is still there and counted right.
    assert.equal((await call('GET', flagsPath(project))).body.length, sqlish.length);
    assert.equal((await call('GET', `/api/projects/${project.id}/environments`)).body.length, 2 + sqlish.length);
    assert.equal((await call('GET', '/api/projects')).body.length, 1);
    assertError(await evaluate(server, project.sdk_key, "production' OR '1'='1"), 404, 'SQL in the environment key');
    assertError(await evaluate(server, "sdk_' OR '1'='1", 'production'), 401, 'SQL in the SDK key');
    assert.equal((await call('GET', '/api/projects?name=%27%3B%20DROP%20TABLE%20projects%3B--')).status, 200);
  });

  test('unicode names (emoji, RTL, CJK, combining marks) round-trip exactly', async () => {
    const names = ['🚀 Fusée ✨', '👨‍👩‍👧‍👦 family', 'مشروع تجريبي', 'פרויקט בעברית', '特性开关', '機能フラグ', '기능 플래그', 'e\u0301te\u0301', '\u202Eevil override', 'zero\u200Bwidth', 'Ωmega ß ǅ', '𝔘𝔫𝔦𝔠𝔬𝔡𝔢'];
    const call = as(frank);
    const project = await newProject(server, frank, 'Unicode');
    for (const [i, name] of names.entries()) {
      const created = await call('POST', '/api/projects', { name, description: `${name} — description` });
      assert.equal(created.status, 201, created.text);
      assert.equal(created.body.name, name);
      const got = (await call('GET', `/api/projects/${created.body.id}`)).body;
      assert.equal(got.name, name, `project name ${name}`);
      assert.equal(got.description, `${name} — description`);
      assert.ok((await call('GET', '/api/projects')).body.some((p: { name: string }) => p.name === name), 'listed with the same name');
      await call('DELETE', `/api/projects/${created.body.id}`);

      const env = await call('POST', `/api/projects/${project.id}/environments`, { name, key: `u-${i}` });
      assert.equal(env.status, 201);
      assert.equal((await call('GET', `/api/projects/${project.id}/environments/${env.body.id}`)).body.name, name);
      const renamed = await call('PUT', `/api/projects/${project.id}/environments/${env.body.id}`, { name: `${name}!` });
      assert.equal(renamed.body.name, `${name}!`);

      const flag = await call('POST', flagsPath(project), { name, key: `u_${i}`, description: name, enabled: true });
      assert.equal(flag.status, 201);
      const storedFlag = (await call('GET', `${flagsPath(project)}/${flag.body.id}`)).body;
      assert.equal(storedFlag.name, name);
      assert.equal(storedFlag.description, name);

      await call('POST', `${flagsPath(project)}/${flag.body.id}/rules`, { rule_type: 'user_id', rule_value: name });
      const answer = await evaluate(server, project.sdk_key, 'production', { user_id: name });
      assert.deepEqual(answer.body.flags[`u_${i}`], { enabled: true, reason: 'Matched user_id targeting rule' }, `unicode user_id ${name}`);
    }
    const flagId = (await call('GET', flagsPath(project))).body[0].id;
    const emailRule = await call('POST', `${flagsPath(project)}/${flagId}/rules`, { rule_type: 'user_email', rule_value: 'Jösé@Exämple.com' });
    assert.equal(emailRule.status, 201);
    const email = await evaluate(server, project.sdk_key, 'production', { user_email: 'jösé@exämple.com' });
    assert.equal(email.body.flags.u_0?.reason, 'Matched user_email targeting rule');
    const domainRule = await call('POST', `${flagsPath(project)}/${flagId}/rules`, { rule_type: 'email_domain', rule_value: '例え.テスト' });
    assert.equal(domainRule.status, 201);
    assert.equal(domainRule.body.rule_value, '@例え.テスト');
    assert.equal((await evaluate(server, project.sdk_key, 'production', { user_email: 'x@例え.テスト' })).body.flags.u_0?.reason, 'Matched email_domain targeting rule');
  });

  test('a name that is not well-formed unicode (lone surrogate) is refused or stored exactly as answered', async () => {
    const call = as(frank);
    const answer = await call('POST', '/api/projects', '{"name":"lone \\ud800 surrogate","description":"x\\udfffy"}');
    assert.ok(answer.status === 400 || answer.status === 201, `${answer.status}`);
    if (answer.status === 400) {
      assertError(answer, 400, 'lone surrogate');
      return;
    }
    const stored = await call('GET', `/api/projects/${answer.body.id}`);
    await call('DELETE', `/api/projects/${answer.body.id}`);
    assert.deepEqual(stored.body, answer.body, 'the project read back differs from the one the POST answered');
  });

  test('unknown body fields are ignored (ids, keys, owners and timestamps cannot be chosen)', async () => {
    const call = as(frank);
    const stranger = await newUser(server, 'stranger');
    const strangerProject = await newProject(server, stranger, 'Stranger');
    const chosenId = '11111111-1111-4111-8111-111111111111';
    const old = '2000-01-01T00:00:00.000Z';

    const created = await call('POST', '/api/projects', {
      name: 'Extra fields', id: chosenId, sdk_key: 'sdk_chosen', owner_id: stranger.id, user_id: stranger.id, created_at: old, updated_at: old, extra: { nested: [1, 2] },
    });
    assert.equal(created.status, 201, created.text);
    const project = created.body;
    assert.notEqual(project.id, chosenId);
    assert.notEqual(project.sdk_key, 'sdk_chosen');
    assert.notEqual(project.created_at, old);
    assert.ok(!Object.hasOwn(project, 'extra'));
    assert.equal((await call('GET', `/api/projects/${project.id}`)).status, 200, 'owned by the caller');
    assertError(await as(stranger)('GET', `/api/projects/${project.id}`), 404, 'not owned by the named owner');
    assertError(await evaluate(server, 'sdk_chosen', 'production'), 401, 'chosen SDK key not usable');

    const put = await call('PUT', `/api/projects/${project.id}`, { sdk_key: 'sdk_chosen', id: chosenId, owner_id: stranger.id, created_at: old, unknown: true });
    assert.equal(put.status, 200, put.text);
    assert.equal(put.body.id, project.id);
    assert.equal(put.body.sdk_key, project.sdk_key);
    assert.equal(put.body.created_at, project.created_at);
    assert.equal(put.body.name, 'Extra fields');
    assertError(await as(stranger)('GET', `/api/projects/${project.id}`), 404, 'PUT cannot hand the project over');

    const envs = (await call('GET', `/api/projects/${project.id}/environments`)).body as Array<{ id: string; key: string }>;
    const production = envs.find((e) => e.key === 'production')!.id;
    const staging = envs.find((e) => e.key === 'staging')!.id;
    const env = await call('POST', `/api/projects/${project.id}/environments`, { name: 'E', key: 'extra', project_id: strangerProject.id, id: chosenId, created_at: old });
    assert.equal(env.status, 201, env.text);
    assert.equal(env.body.project_id, project.id);
    assert.notEqual(env.body.id, chosenId);
    assert.notEqual(env.body.created_at, old);
    const envPut = await call('PUT', `/api/projects/${project.id}/environments/${env.body.id}`, { name: 'E2', project_id: strangerProject.id, id: chosenId });
    assert.equal(envPut.body.project_id, project.id);
    assert.equal(envPut.body.id, env.body.id);
    assert.equal((await as(stranger)('GET', `/api/projects/${strangerProject.id}/environments`)).body.length, 2, "nothing added to the stranger's project");

    const fp = `/api/projects/${project.id}/environments/${production}/flags`;
    const flag = await call('POST', fp, { name: 'F', key: 'extra_flag', project_id: strangerProject.id, environment_id: staging, id: chosenId, created_at: old, updated_at: old, owner: 'x' });
    assert.equal(flag.status, 201, flag.text);
    assert.equal(flag.body.project_id, project.id);
    assert.equal(flag.body.environment_id, production);
    assert.notEqual(flag.body.id, chosenId);
    assert.notEqual(flag.body.created_at, old);
    assert.ok(!Object.hasOwn(flag.body, 'owner'));
    const flagPut = await call('PUT', `${fp}/${flag.body.id}`, { environment_id: staging, project_id: strangerProject.id, id: chosenId, created_at: old, enabled: true });
    assert.equal(flagPut.status, 200);
    assert.equal(flagPut.body.environment_id, production);
    assert.equal(flagPut.body.project_id, project.id);
    assert.equal(flagPut.body.created_at, flag.body.created_at);
    assert.equal(flagPut.body.enabled, true, 'the known field still applies');
    assert.deepEqual((await call('GET', `/api/projects/${project.id}/environments/${staging}/flags`)).body, [], 'not moved to staging');

    const otherFlag = (await call('POST', fp, { name: 'Other', key: 'other_flag' })).body as { id: string };
    const rp = `${fp}/${flag.body.id}/rules`;
    const rule = await call('POST', rp, { rule_type: 'user_id', rule_value: 'r', flag_id: otherFlag.id, id: chosenId, created_at: old });
    assert.equal(rule.status, 201, rule.text);
    assert.equal(rule.body.flag_id, flag.body.id);
    assert.notEqual(rule.body.id, chosenId);
    const rulePut = await call('PUT', `${rp}/${rule.body.id}`, { flag_id: otherFlag.id, priority: 4 });
    assert.equal(rulePut.body.flag_id, flag.body.id);
    assert.equal(rulePut.body.priority, 4);
    assert.deepEqual((await call('GET', `${fp}/${otherFlag.id}/rules`)).body, [], 'not moved to the other flag');
  });
});
