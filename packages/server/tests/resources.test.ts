/**
 * Black-box tests of projects, environments, flags, targeting rules and deletion cascades
 * (interface.md "Resources and their fields", "Endpoints", "Deletion cascades"; contract.md §1, §3, §6).
 * Real server, real port, fresh SQLite file; history is read from the database directly.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import {
  evaluate,
  eventually,
  flagsPath,
  newFlag,
  newProject,
  newUser,
  request,
  startServer,
  type Answer,
  type HistoryItem,
  type TestProject,
  type TestServer,
  type TestUser,
} from './harness.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const ISO_UTC = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?Z$/;
const STATUS_TEXT: Record<number, string> = {
  400: 'Bad Request',
  401: 'Unauthorized',
  404: 'Not Found',
  409: 'Conflict',
  413: 'Payload Too Large',
};

function assertIsoUtc(value: unknown, what: string): void {
  assert.equal(typeof value, 'string', `${what} is a string`);
  assert.match(value as string, ISO_UTC, `${what} is ISO 8601 UTC`);
  assert.ok(!Number.isNaN(Date.parse(value as string)), `${what} parses`);
}

/** An error answer: the status, JSON, and exactly {statusCode, error, message} (contract §3). */
function assertError(answer: Answer, status: number, what = ''): void {
  assert.equal(answer.status, status, `${what}: status ${answer.status} ${answer.text}`);
  assert.match(answer.headers.get('content-type') ?? '', /^application\/json/, `${what}: JSON error body`);
  assert.deepEqual(Object.keys(answer.body).sort(), ['error', 'message', 'statusCode'], `${what}: error body keys`);
  assert.equal(answer.body.statusCode, status, what);
  if (STATUS_TEXT[status]) assert.equal(answer.body.error, STATUS_TEXT[status], what);
  assert.equal(typeof answer.body.message, 'string', what);
  assert.ok(answer.body.message.length > 0, what);
}

function assertNoContent(answer: Answer, what = ''): void {
  assert.equal(answer.status, 204, `${what}: ${answer.status} ${answer.text}`);
  assert.equal(answer.text, '', `${what}: 204 has no body`);
}

let server: TestServer;
let user: TestUser;

before(async () => {
  server = await startServer();
  user = await newUser(server, 'resources');
});
after(() => server.close());

const api = (method: string, path: string, body?: unknown) => request(server, method, path, { token: user.token, ...(body === undefined ? {} : { body }) });

// ───────────────────────────────────────────────────────────────────────────── projects

describe('projects', () => {
  test('POST /api/projects → 201 with every field; description null when not given', async () => {
    const created = await api('POST', '/api/projects', { name: 'Alpha' });
    assert.equal(created.status, 201, created.text);
    assert.match(created.headers.get('content-type') ?? '', /^application\/json/);
    const p = created.body;
    assert.match(p.id, UUID);
    assert.equal(p.name, 'Alpha');
    assert.equal(p.description, null);
    assert.ok(Object.hasOwn(p, 'description'), 'description is present (null), not left out');
    assert.equal(typeof p.sdk_key, 'string');
    assert.ok(p.sdk_key.startsWith('sdk_'), p.sdk_key);
    assert.ok(p.sdk_key.length > 'sdk_'.length + 15, 'sdk_key carries real randomness');
    assertIsoUtc(p.created_at, 'created_at');
    assertIsoUtc(p.updated_at, 'updated_at');
    for (const hidden of ['owner_id', 'user_id', 'password', 'password_hash']) assert.ok(!Object.hasOwn(p, hidden), `${hidden} not shown`);

    const withDescription = await api('POST', '/api/projects', { name: 'Beta', description: 'the beta project' });
    assert.equal(withDescription.status, 201);
    assert.equal(withDescription.body.description, 'the beta project');
    assert.notEqual(withDescription.body.id, p.id);
    assert.notEqual(withDescription.body.sdk_key, p.sdk_key, 'each project has its own SDK key');

    const explicitNull = await api('POST', '/api/projects', { name: 'Gamma', description: null });
    assert.equal(explicitNull.status, 201);
    assert.equal(explicitNull.body.description, null);
  });

  test('GET /api/projects → 200 array of project objects; GET one → 200 the project', async () => {
    const a = (await api('POST', '/api/projects', { name: 'List A', description: 'a' })).body;
    const b = (await api('POST', '/api/projects', { name: 'List B' })).body;
    const list = await api('GET', '/api/projects');
    assert.equal(list.status, 200);
    assert.ok(Array.isArray(list.body));
    assert.deepEqual(list.body.find((p: { id: string }) => p.id === a.id), a);
    assert.deepEqual(list.body.find((p: { id: string }) => p.id === b.id), b);
    for (const p of list.body) {
      for (const field of ['id', 'name', 'description', 'sdk_key', 'created_at', 'updated_at']) assert.ok(Object.hasOwn(p, field), field);
    }

    const one = await api('GET', `/api/projects/${a.id}`);
    assert.equal(one.status, 200);
    assert.deepEqual(one.body, a);
  });

  test('PUT /api/projects/{id}: only provided fields change, null clears description, updated_at moves, created_at stays', async () => {
    const original = (await api('POST', '/api/projects', { name: 'Put me', description: 'first' })).body;

    const renamed = await api('PUT', `/api/projects/${original.id}`, { name: 'Renamed' });
    assert.equal(renamed.status, 200, renamed.text);
    assert.equal(renamed.body.name, 'Renamed');
    assert.equal(renamed.body.description, 'first', 'description not sent: unchanged');
    assert.equal(renamed.body.sdk_key, original.sdk_key);
    assert.equal(renamed.body.id, original.id);
    assert.equal(renamed.body.created_at, original.created_at);
    assert.notEqual(renamed.body.updated_at, original.updated_at);
    assert.ok(Date.parse(renamed.body.updated_at) >= Date.parse(original.updated_at));
    assertIsoUtc(renamed.body.updated_at, 'updated_at');

    const described = await api('PUT', `/api/projects/${original.id}`, { description: 'second' });
    assert.equal(described.status, 200);
    assert.equal(described.body.name, 'Renamed', 'name not sent: unchanged');
    assert.equal(described.body.description, 'second');
    assert.notEqual(described.body.updated_at, renamed.body.updated_at);
    assert.equal(described.body.created_at, original.created_at);

    const cleared = await api('PUT', `/api/projects/${original.id}`, { description: null });
    assert.equal(cleared.status, 200);
    assert.equal(cleared.body.description, null);
    assert.equal(cleared.body.name, 'Renamed');

    const both = await api('PUT', `/api/projects/${original.id}`, { name: 'Both', description: 'third' });
    assert.equal(both.status, 200);
    assert.equal(both.body.name, 'Both');
    assert.equal(both.body.description, 'third');

    const stored = await api('GET', `/api/projects/${original.id}`);
    assert.deepEqual(stored.body, both.body, 'GET shows what PUT answered');
  });

  test('PUT /api/projects/{id} with name null → 400 and nothing changes', async () => {
    const original = (await api('POST', '/api/projects', { name: 'Null name', description: 'kept' })).body;
    assertError(await api('PUT', `/api/projects/${original.id}`, { name: null }), 400, 'name null');
    assertError(await api('PUT', `/api/projects/${original.id}`, { name: '' }), 400, 'name empty');
    assert.deepEqual((await api('GET', `/api/projects/${original.id}`)).body, original);
  });

  test('POST /api/projects/{id}/regenerate-key → 200 full project with a new key; the old key is 401 on the very next evaluate', async () => {
    const project = await newProject(server, user, 'Rotate');
    await newFlag(server, user, project, { key: 'rotating', enabled: true });
    const before = (await api('GET', `/api/projects/${project.id}`)).body;

    // The old key works (and is now in the evaluate cache).
    const warm = await evaluate(server, project.sdk_key, 'production', { user_id: 'u1' });
    assert.equal(warm.status, 200);
    assert.deepEqual(warm.body.flags.rotating, { enabled: true, reason: 'Flag enabled globally' });

    const rotated = await api('POST', `/api/projects/${project.id}/regenerate-key`);
    assert.equal(rotated.status, 200, rotated.text);
    assert.equal(rotated.body.id, project.id);
    assert.equal(rotated.body.name, before.name);
    assert.equal(rotated.body.description, before.description);
    assert.equal(rotated.body.created_at, before.created_at);
    assert.notEqual(rotated.body.updated_at, before.updated_at, 'updated_at changes on key rotation');
    assertIsoUtc(rotated.body.updated_at, 'updated_at');
    assert.ok(rotated.body.sdk_key.startsWith('sdk_'));
    assert.notEqual(rotated.body.sdk_key, project.sdk_key);

    const old = await evaluate(server, project.sdk_key, 'production', { user_id: 'u1' });
    assertError(old, 401, 'old key right after rotation');
    const fresh = await evaluate(server, rotated.body.sdk_key, 'production', { user_id: 'u1' });
    assert.equal(fresh.status, 200, fresh.text);
    assert.deepEqual(fresh.body.flags.rotating, { enabled: true, reason: 'Flag enabled globally' });
    assertError(await evaluate(server, project.sdk_key, 'production'), 401, 'old key stays invalid');

    assert.deepEqual((await api('GET', `/api/projects/${project.id}`)).body, rotated.body, 'GET shows the new key');
  });

  test('DELETE /api/projects/{id} → 204 with no body; then GET 404, gone from the list, DELETE again 404', async () => {
    const project = (await api('POST', '/api/projects', { name: 'Doomed' })).body;
    assertNoContent(await api('DELETE', `/api/projects/${project.id}`), 'delete project');
    assertError(await api('GET', `/api/projects/${project.id}`), 404, 'GET deleted project');
    const list = await api('GET', '/api/projects');
    assert.ok(!list.body.some((p: { id: string }) => p.id === project.id));
    assertError(await api('DELETE', `/api/projects/${project.id}`), 404, 'delete twice');
    assertError(await api('PUT', `/api/projects/${project.id}`, { name: 'x' }), 404, 'PUT deleted project');
    assertError(await api('POST', `/api/projects/${project.id}/regenerate-key`), 404, 'regenerate deleted project');
    assertError(await evaluate(server, project.sdk_key, 'production'), 401, 'SDK key of a deleted project');
  });

  test('projects created concurrently each get their own id, SDK key and two environments', async () => {
    const created = await Promise.all(Array.from({ length: 8 }, (_, i) => api('POST', '/api/projects', { name: `Parallel ${i}` })));
    assert.deepEqual(created.map((c) => c.status), Array(8).fill(201));
    assert.equal(new Set(created.map((c) => c.body.id)).size, 8);
    assert.equal(new Set(created.map((c) => c.body.sdk_key)).size, 8);
    for (const c of created) {
      const envs = await api('GET', `/api/projects/${c.body.id}/environments`);
      assert.deepEqual(envs.body.map((e: { key: string }) => e.key).sort(), ['production', 'staging']);
    }
  });

  test('creating a project creates exactly two environments: Production/production and Staging/staging', async () => {
    const project = (await api('POST', '/api/projects', { name: 'Two envs' })).body;
    const envs = await api('GET', `/api/projects/${project.id}/environments`);
    assert.equal(envs.status, 200);
    assert.equal(envs.body.length, 2);
    const byKey = new Map<string, { id: string; name: string; key: string; created_at: string; project_id?: string }>(
      envs.body.map((e: { key: string }) => [e.key, e]),
    );
    assert.deepEqual([...byKey.keys()].sort(), ['production', 'staging']);
    assert.equal(byKey.get('production')?.name, 'Production');
    assert.equal(byKey.get('staging')?.name, 'Staging');
    for (const env of byKey.values()) {
      assert.match(env.id, UUID);
      assertIsoUtc(env.created_at, 'environment created_at');
      const one = await api('GET', `/api/projects/${project.id}/environments/${env.id}`);
      assert.equal(one.status, 200);
      assert.equal(one.body.project_id, project.id);
    }
    // Both can be evaluated right away (empty flag maps).
    for (const key of ['production', 'staging']) {
      const answer = await evaluate(server, project.sdk_key, key);
      assert.equal(answer.status, 200);
      assert.deepEqual(answer.body, { flags: {} });
    }
  });
});

// ───────────────────────────────────────────────────────────────────────────── environments

describe('environments', () => {
  let project: TestProject;
  const envs = () => `/api/projects/${project.id}/environments`;

  before(async () => {
    project = await newProject(server, user, 'Environments');
  });

  test('POST → 201 environment object (id, project_id, name, key, created_at)', async () => {
    const created = await api('POST', envs(), { name: 'QA', key: 'qa' });
    assert.equal(created.status, 201, created.text);
    const env = created.body;
    assert.match(env.id, UUID);
    assert.equal(env.project_id, project.id);
    assert.equal(env.name, 'QA');
    assert.equal(env.key, 'qa');
    assertIsoUtc(env.created_at, 'created_at');

    // Usable at once by evaluate.
    const answer = await evaluate(server, project.sdk_key, 'qa');
    assert.equal(answer.status, 200);
  });

  test('GET list → 200, items show id, name, key, created_at; GET one → 200', async () => {
    const env = (await api('POST', envs(), { name: 'Listed', key: 'listed' })).body;
    const list = await api('GET', envs());
    assert.equal(list.status, 200);
    assert.ok(Array.isArray(list.body));
    for (const item of list.body) {
      for (const field of ['id', 'name', 'key', 'created_at']) assert.ok(Object.hasOwn(item, field), `list item shows ${field}`);
      assertIsoUtc(item.created_at, 'created_at');
    }
    const item = list.body.find((e: { id: string }) => e.id === env.id);
    assert.ok(item, 'new environment listed');
    assert.equal(item.name, 'Listed');
    assert.equal(item.key, 'listed');
    assert.equal(item.created_at, env.created_at);

    const one = await api('GET', `${envs()}/${env.id}`);
    assert.equal(one.status, 200);
    assert.deepEqual(one.body, env);
  });

  test('PUT renames: name changes, key and created_at do not', async () => {
    const env = (await api('POST', envs(), { name: 'Old name', key: 'renamable' })).body;
    const renamed = await api('PUT', `${envs()}/${env.id}`, { name: 'New name' });
    assert.equal(renamed.status, 200, renamed.text);
    assert.deepEqual(renamed.body, { ...env, name: 'New name' });
    assert.deepEqual((await api('GET', `${envs()}/${env.id}`)).body, renamed.body);
    // Evaluate still addresses it by its unchanged key.
    assert.equal((await evaluate(server, project.sdk_key, 'renamable')).status, 200);
  });

  test('PUT with a different key → 400 and nothing changes (not even a name sent alongside)', async () => {
    const env = (await api('POST', envs(), { name: 'Fixed', key: 'fixed-key' })).body;
    assertError(await api('PUT', `${envs()}/${env.id}`, { key: 'other-key' }), 400, 'key change');
    assertError(await api('PUT', `${envs()}/${env.id}`, { name: 'Sneaky', key: 'other-key' }), 400, 'key change with name');
    assert.deepEqual((await api('GET', `${envs()}/${env.id}`)).body, env);
    assertError(await evaluate(server, project.sdk_key, 'other-key'), 404, 'no environment under the refused key');
  });

  test('PUT with the same key is fine', async () => {
    const env = (await api('POST', envs(), { name: 'Same', key: 'same-key' })).body;
    const same = await api('PUT', `${envs()}/${env.id}`, { name: 'Same renamed', key: 'same-key' });
    assert.equal(same.status, 200, same.text);
    assert.equal(same.body.name, 'Same renamed');
    assert.equal(same.body.key, 'same-key');
    const onlyKey = await api('PUT', `${envs()}/${env.id}`, { key: 'same-key' });
    assert.equal(onlyKey.status, 200);
    assert.equal(onlyKey.body.name, 'Same renamed');
  });

  test('key validation: uppercase, spaces, ".", empty → 400; "a_b-1" → 201', async () => {
    const before = (await api('GET', envs())).body;
    for (const key of ['Upper', 'UPPER', 'with space', 'a.b', '', ' ', 'ключ', 'a/b']) {
      assertError(await api('POST', envs(), { name: 'Bad key', key }), 400, `key ${JSON.stringify(key)}`);
    }
    assert.deepEqual((await api('GET', envs())).body, before, 'no environment created by refused keys');
    const ok = await api('POST', envs(), { name: 'Good key', key: 'a_b-1' });
    assert.equal(ok.status, 201, ok.text);
    assert.equal(ok.body.key, 'a_b-1');
    for (const key of ['1', '9lives', '-dash', '_under']) {
      assert.equal((await api('POST', envs(), { name: key, key })).status, 201, `lowercase letters, digits, _ and - only: ${key}`);
    }
  });

  test('duplicate key in a project → 409; the same key in another project is fine', async () => {
    assertError(await api('POST', envs(), { name: 'Prod again', key: 'production' }), 409, 'duplicate of a default key');
    const first = await api('POST', envs(), { name: 'Dup', key: 'dup' });
    assert.equal(first.status, 201);
    const before = (await api('GET', envs())).body;
    assertError(await api('POST', envs(), { name: 'Dup 2', key: 'dup' }), 409, 'duplicate key');
    assert.deepEqual((await api('GET', envs())).body, before, 'nothing created by the refused duplicate');

    const other = await newProject(server, user, 'Other for env keys');
    const elsewhere = await api('POST', `/api/projects/${other.id}/environments`, { name: 'Dup', key: 'dup' });
    assert.equal(elsewhere.status, 201, elsewhere.text);
    assert.equal(elsewhere.body.project_id, other.id);
  });

  test('DELETE → 204 no body; then GET 404, gone from the list, evaluate 404', async () => {
    const env = (await api('POST', envs(), { name: 'Short-lived', key: 'short-lived' })).body;
    assert.equal((await evaluate(server, project.sdk_key, 'short-lived')).status, 200);
    assertNoContent(await api('DELETE', `${envs()}/${env.id}`), 'delete env');
    assertError(await api('GET', `${envs()}/${env.id}`), 404, 'GET deleted env');
    assert.ok(!(await api('GET', envs())).body.some((e: { id: string }) => e.id === env.id));
    assertError(await api('DELETE', `${envs()}/${env.id}`), 404, 'delete twice');
    assertError(await api('PUT', `${envs()}/${env.id}`, { name: 'x' }), 404, 'PUT deleted env');
    assertError(await evaluate(server, project.sdk_key, 'short-lived'), 404, 'evaluate deleted env');
    // Its key is free again.
    assert.equal((await api('POST', envs(), { name: 'Reborn', key: 'short-lived' })).status, 201);
  });

  test('an environment is only reachable under its own project', async () => {
    const other = await newProject(server, user, 'Env scope');
    assertError(await api('GET', `/api/projects/${other.id}/environments/${project.production}`), 404, 'env under another project');
    assertError(await api('PUT', `/api/projects/${other.id}/environments/${project.production}`, { name: 'x' }), 404, 'PUT env under another project');
    assertError(await api('DELETE', `/api/projects/${other.id}/environments/${project.production}`), 404, 'DELETE env under another project');
    assert.equal((await api('GET', `${envs()}/${project.production}`)).body.name, 'Production');
  });
});

// ───────────────────────────────────────────────────────────────────────────── flags

describe('flags', () => {
  let project: TestProject;
  const flags = (envId?: string) => flagsPath(project, envId);

  before(async () => {
    project = await newProject(server, user, 'Flags');
  });

  test('POST → 201 flag object with every field as given', async () => {
    const created = await api('POST', flags(), { name: 'Dark mode', key: 'dark_mode', description: 'dims the lights', enabled: true, rollout_percentage: 42 });
    assert.equal(created.status, 201, created.text);
    const flag = created.body;
    assert.match(flag.id, UUID);
    assert.equal(flag.project_id, project.id);
    assert.equal(flag.environment_id, project.production);
    assert.equal(flag.name, 'Dark mode');
    assert.equal(flag.key, 'dark_mode');
    assert.equal(flag.description, 'dims the lights');
    assert.equal(flag.enabled, true);
    assert.equal(flag.rollout_percentage, 42);
    assertIsoUtc(flag.created_at, 'created_at');
    assertIsoUtc(flag.updated_at, 'updated_at');
  });

  test('defaults: enabled false, rollout_percentage 0, description null', async () => {
    const created = await api('POST', flags(), { name: 'Defaults', key: 'defaults' });
    assert.equal(created.status, 201, created.text);
    assert.equal(created.body.enabled, false);
    assert.equal(created.body.rollout_percentage, 0);
    assert.equal(created.body.description, null);
    assert.ok(Object.hasOwn(created.body, 'description'));
    const answer = await evaluate(server, project.sdk_key, 'production');
    assert.deepEqual(answer.body.flags.defaults, { enabled: false, reason: 'Flag is globally disabled' });
  });

  test('key rules: starts with a letter; a-z 0-9 _ - only', async () => {
    const before = (await api('GET', flags())).body;
    for (const key of ['Abc', 'aBc', '1abc', '_x', '-x', 'a.b', 'a b', 'a/b', '', 'é', 'a:b']) {
      assertError(await api('POST', flags(), { name: 'bad', key }), 400, `flag key ${JSON.stringify(key)}`);
    }
    assert.deepEqual((await api('GET', flags())).body, before, 'no flag created by refused keys');
    for (const key of ['a', 'z9', 'a1_b-c', 'x__--9']) {
      const ok = await api('POST', flags(), { name: key, key });
      assert.equal(ok.status, 201, `${key}: ${ok.text}`);
      assert.equal(ok.body.key, key);
    }
  });

  test('rollout_percentage: integer 0..100; 101, -1, 50.5, "50", null → 400; enabled "yes" → 400', async () => {
    assert.equal((await api('POST', flags(), { name: 'r0', key: 'r0', rollout_percentage: 0 })).body.rollout_percentage, 0);
    assert.equal((await api('POST', flags(), { name: 'r100', key: 'r100', rollout_percentage: 100 })).body.rollout_percentage, 100);
    const before = (await api('GET', flags())).body;
    for (const rollout_percentage of [101, -1, 50.5, '50', null, true, [50], { n: 50 }]) {
      assertError(await api('POST', flags(), { name: 'r', key: 'rbad', rollout_percentage }), 400, `rollout ${JSON.stringify(rollout_percentage)}`);
    }
    for (const enabled of ['yes', 'true', 1, 0, null, [true]]) {
      assertError(await api('POST', flags(), { name: 'e', key: 'ebad', enabled }), 400, `enabled ${JSON.stringify(enabled)}`);
    }
    assert.deepEqual((await api('GET', flags())).body, before);
  });

  test('duplicate key in the same environment → 409; the same key in another environment or project is fine', async () => {
    assert.equal((await api('POST', flags(), { name: 'Unique', key: 'unique' })).status, 201);
    const before = (await api('GET', flags())).body;
    assertError(await api('POST', flags(), { name: 'Unique again', key: 'unique' }), 409, 'duplicate flag key');
    assert.deepEqual((await api('GET', flags())).body, before);

    const staging = await api('POST', flags(project.staging), { name: 'Unique', key: 'unique' });
    assert.equal(staging.status, 201, staging.text);
    assert.equal(staging.body.environment_id, project.staging);
    const other = await newProject(server, user, 'Other for flag keys');
    assert.equal((await api('POST', flagsPath(other), { name: 'Unique', key: 'unique' })).status, 201);
  });

  test('GET list → 200 array of flag objects; GET one → 200; other environment not mixed in', async () => {
    const env = (await api('POST', `/api/projects/${project.id}/environments`, { name: 'Listing', key: 'listing' })).body;
    const a = (await api('POST', flags(env.id), { name: 'A', key: 'list_a', enabled: true })).body;
    const b = (await api('POST', flags(env.id), { name: 'B', key: 'list_b', rollout_percentage: 7, description: 'b' })).body;
    const list = await api('GET', flags(env.id));
    assert.equal(list.status, 200);
    assert.deepEqual(
      [...list.body].sort((x: { key: string }, y: { key: string }) => x.key.localeCompare(y.key)),
      [a, b],
    );
    const one = await api('GET', `${flags(env.id)}/${b.id}`);
    assert.equal(one.status, 200);
    assert.deepEqual(one.body, b);
    assertError(await api('GET', `${flags(project.staging)}/${b.id}`), 404, 'flag under another environment');
  });

  test('PUT: only provided fields change; null description clears; updated_at moves, created_at stays', async () => {
    const original = (await api('POST', flags(), { name: 'Editable', key: 'editable', description: 'desc', enabled: false, rollout_percentage: 10 })).body;
    const path = `${flags()}/${original.id}`;

    const renamed = await api('PUT', path, { name: 'Edited' });
    assert.equal(renamed.status, 200, renamed.text);
    assert.equal(renamed.body.updated_at !== original.updated_at, true, 'updated_at changes');
    assert.deepEqual({ ...renamed.body, updated_at: original.updated_at }, { ...original, name: 'Edited' });

    const enabled = await api('PUT', path, { enabled: true });
    assert.equal(enabled.status, 200);
    assert.deepEqual({ ...enabled.body, updated_at: 'x' }, { ...renamed.body, enabled: true, updated_at: 'x' });
    assert.notEqual(enabled.body.updated_at, renamed.body.updated_at);

    const rollout = await api('PUT', path, { rollout_percentage: 55 });
    assert.deepEqual({ ...rollout.body, updated_at: 'x' }, { ...enabled.body, rollout_percentage: 55, updated_at: 'x' });

    const cleared = await api('PUT', path, { description: null });
    assert.equal(cleared.status, 200);
    assert.deepEqual({ ...cleared.body, updated_at: 'x' }, { ...rollout.body, description: null, updated_at: 'x' });

    const several = await api('PUT', path, { description: 'again', enabled: false, rollout_percentage: 0, name: 'Final' });
    assert.equal(several.status, 200);
    assert.deepEqual({ ...several.body, updated_at: 'x' }, { ...cleared.body, description: 'again', enabled: false, rollout_percentage: 0, name: 'Final', updated_at: 'x' });
    assert.equal(several.body.created_at, original.created_at);
    assertIsoUtc(several.body.updated_at, 'updated_at');
    assert.deepEqual((await api('GET', path)).body, several.body, 'GET shows what PUT answered');
  });

  test('PUT: null for name, key, enabled or rollout_percentage → 400 and nothing changes', async () => {
    const original = (await api('POST', flags(), { name: 'Nulls', key: 'nulls', description: 'd', enabled: true, rollout_percentage: 20 })).body;
    const path = `${flags()}/${original.id}`;
    for (const field of ['name', 'key', 'enabled', 'rollout_percentage']) {
      assertError(await api('PUT', path, { [field]: null }), 400, `${field}: null`);
      assertError(await api('PUT', path, { description: 'changed too?', [field]: null }), 400, `${field}: null with description`);
    }
    assertError(await api('PUT', path, { rollout_percentage: 101 }), 400, 'rollout 101');
    assertError(await api('PUT', path, { rollout_percentage: '50' }), 400, 'rollout "50"');
    assertError(await api('PUT', path, { enabled: 'yes' }), 400, 'enabled "yes"');
    assertError(await api('PUT', path, { key: 'Bad Key' }), 400, 'invalid key');
    assert.deepEqual((await api('GET', path)).body, original);
  });

  test('PUT key: to a duplicate → 409 and nothing changes; to a free key → 200 and evaluate uses it', async () => {
    await api('POST', flags(), { name: 'Taken', key: 'taken' });
    const original = (await api('POST', flags(), { name: 'Mover', key: 'mover', enabled: true })).body;
    const path = `${flags()}/${original.id}`;
    assertError(await api('PUT', path, { key: 'taken' }), 409, 'PUT key to a duplicate');
    assertError(await api('PUT', path, { key: 'taken', name: 'Should not stick' }), 409, 'PUT key to a duplicate with a name');
    assert.deepEqual((await api('GET', path)).body, original);

    const same = await api('PUT', path, { key: 'mover' });
    assert.equal(same.status, 200, 'PUT with its own key is fine');
    const moved = await api('PUT', path, { key: 'moved' });
    assert.equal(moved.status, 200, moved.text);
    assert.equal(moved.body.key, 'moved');
    const answer = await evaluate(server, project.sdk_key, 'production');
    assert.deepEqual(answer.body.flags.moved, { enabled: true, reason: 'Flag enabled globally' });
    assert.equal(answer.body.flags.mover, undefined, 'the old key is gone from evaluate');
    // The same key in staging does not conflict.
    await api('POST', flags(project.staging), { name: 'Staging taken', key: 'staging_only_key' });
    assert.equal((await api('PUT', path, { key: 'staging_only_key' })).status, 200);
  });

  test('POST .../toggle flips true → false → true and returns the updated flag', async () => {
    const original = (await api('POST', flags(), { name: 'Toggle', key: 'toggle', enabled: true, rollout_percentage: 0, description: 't' })).body;
    const path = `${flags()}/${original.id}`;

    const off = await api('POST', `${path}/toggle`);
    assert.equal(off.status, 200, off.text);
    assert.equal(off.body.enabled, false);
    assert.deepEqual({ ...off.body, updated_at: 'x' }, { ...original, enabled: false, updated_at: 'x' });
    assert.notEqual(off.body.updated_at, original.updated_at);
    assert.deepEqual((await api('GET', path)).body, off.body);
    assert.deepEqual((await evaluate(server, project.sdk_key, 'production')).body.flags.toggle, { enabled: false, reason: 'Flag is globally disabled' });

    const on = await api('POST', `${path}/toggle`);
    assert.equal(on.status, 200);
    assert.equal(on.body.enabled, true);
    assert.deepEqual({ ...on.body, updated_at: 'x' }, { ...original, updated_at: 'x' });
    assert.deepEqual((await api('GET', path)).body, on.body);
    assert.deepEqual((await evaluate(server, project.sdk_key, 'production')).body.flags.toggle, { enabled: true, reason: 'Flag enabled globally' });

    // PUT with enabled sets the given value, whatever the current one.
    assert.equal((await api('PUT', path, { enabled: true })).body.enabled, true);
    assert.equal((await api('PUT', path, { enabled: false })).body.enabled, false);
    assert.equal((await api('PUT', path, { enabled: false })).body.enabled, false);
  });

  test('concurrent toggles are all applied (no lost update); concurrent duplicate creates give one 201 and 409s', async () => {
    const flag = (await api('POST', flags(), { name: 'Racy', key: 'racy', enabled: false })).body;
    const toggles = await Promise.all(Array.from({ length: 9 }, () => api('POST', `${flags()}/${flag.id}/toggle`)));
    assert.deepEqual(toggles.map((t) => t.status), Array(9).fill(200));
    assert.equal((await api('GET', `${flags()}/${flag.id}`)).body.enabled, true, 'an odd number of toggles leaves it on');
    assert.equal(toggles.filter((t) => t.body.enabled).length, 5, 'each toggle saw a distinct state');

    const creates = await Promise.all(Array.from({ length: 8 }, (_, i) => api('POST', flags(), { name: `Race ${i}`, key: 'race_key' })));
    assert.deepEqual(creates.map((c) => c.status).sort(), [201, 409, 409, 409, 409, 409, 409, 409]);
    for (const c of creates.filter((c) => c.status === 409)) assertError(c, 409, 'concurrent duplicate flag');
    assert.equal((await api('GET', flags())).body.filter((f: { key: string }) => f.key === 'race_key').length, 1);

    const envCreates = await Promise.all(Array.from({ length: 6 }, (_, i) => api('POST', `/api/projects/${project.id}/environments`, { name: `Race ${i}`, key: 'race-env' })));
    assert.deepEqual(envCreates.map((c) => c.status).sort(), [201, 409, 409, 409, 409, 409]);
  });

  test('DELETE → 204 no body; then GET 404, gone from list and evaluate, key reusable', async () => {
    const flag = (await api('POST', flags(), { name: 'Gone', key: 'gone', enabled: true })).body;
    const path = `${flags()}/${flag.id}`;
    assertNoContent(await api('DELETE', path), 'delete flag');
    assertError(await api('GET', path), 404, 'GET deleted flag');
    assertError(await api('PUT', path, { name: 'x' }), 404, 'PUT deleted flag');
    assertError(await api('POST', `${path}/toggle`), 404, 'toggle deleted flag');
    assertError(await api('DELETE', path), 404, 'delete twice');
    assert.ok(!(await api('GET', flags())).body.some((f: { id: string }) => f.id === flag.id));
    assert.equal((await evaluate(server, project.sdk_key, 'production')).body.flags.gone, undefined);
    assert.equal((await api('POST', flags(), { name: 'Gone again', key: 'gone' })).status, 201);
  });
});

// ───────────────────────────────────────────────────────────────────────────── targeting rules

describe('targeting rules (contract §1)', () => {
  let project: TestProject;
  const rulesOf = (flagId: string, envId?: string) => `${flagsPath(project, envId)}/${flagId}/rules`;

  before(async () => {
    project = await newProject(server, user, 'Rules');
  });

  async function flagWithRules(key: string, fields: Record<string, unknown> = { enabled: true }) {
    const flag = await newFlag(server, user, project, { key, ...fields });
    return { flag, rules: rulesOf(flag.id) };
  }

  test('POST → 201 rule object; defaults enabled true, priority 0', async () => {
    const { flag, rules } = await flagWithRules('rule_fields');
    const created = await api('POST', rules, { rule_type: 'user_id', rule_value: 'user-42' });
    assert.equal(created.status, 201, created.text);
    const rule = created.body;
    assert.match(rule.id, UUID);
    assert.equal(rule.flag_id, flag.id);
    assert.equal(rule.rule_type, 'user_id');
    assert.equal(rule.rule_value, 'user-42');
    assert.equal(rule.enabled, true);
    assert.equal(rule.priority, 0);
    assertIsoUtc(rule.created_at, 'created_at');
    assertIsoUtc(rule.updated_at, 'updated_at');

    const explicit = await api('POST', rules, { rule_type: 'user_email', rule_value: 'bob@example.com', enabled: false, priority: 7 });
    assert.equal(explicit.status, 201);
    assert.equal(explicit.body.enabled, false);
    assert.equal(explicit.body.priority, 7);
    assert.equal(explicit.body.rule_value, 'bob@example.com');
    const negative = await api('POST', rules, { rule_type: 'user_id', rule_value: 'neg', priority: -3 });
    assert.equal(negative.status, 201);
    assert.equal(negative.body.priority, -3);
  });

  test('GET list → highest priority first, ties oldest first; GET one → 200', async () => {
    const { rules } = await flagWithRules('rule_order');
    const make = async (value: string, priority?: number) =>
      (await api('POST', rules, { rule_type: 'user_id', rule_value: value, ...(priority === undefined ? {} : { priority }) })).body;
    const r1 = await make('p0-first');
    const r2 = await make('p10-first', 10);
    const r3 = await make('p0-second', 0);
    const r4 = await make('pminus5', -5);
    const r5 = await make('p10-second', 10);
    const r6 = await make('p0-third');
    const list = await api('GET', rules);
    assert.equal(list.status, 200);
    assert.deepEqual(
      list.body.map((r: { rule_value: string }) => r.rule_value),
      ['p10-first', 'p10-second', 'p0-first', 'p0-second', 'p0-third', 'pminus5'],
    );
    assert.deepEqual(list.body, [r2, r5, r1, r3, r6, r4]);

    const one = await api('GET', `${rules}/${r3.id}`);
    assert.equal(one.status, 200);
    assert.deepEqual(one.body, r3);

    // Raising a priority moves it to the front.
    await api('PUT', `${rules}/${r4.id}`, { priority: 11 });
    assert.equal((await api('GET', rules)).body[0].id, r4.id);
  });

  test('PUT: only provided fields change; updated_at moves, created_at stays', async () => {
    const { flag, rules } = await flagWithRules('rule_put');
    const original = (await api('POST', rules, { rule_type: 'user_id', rule_value: 'alpha', priority: 1 })).body;
    const path = `${rules}/${original.id}`;

    const prio = await api('PUT', path, { priority: 9 });
    assert.equal(prio.status, 200, prio.text);
    assert.notEqual(prio.body.updated_at, original.updated_at);
    assertIsoUtc(prio.body.updated_at, 'updated_at');
    assert.deepEqual({ ...prio.body, updated_at: 'x' }, { ...original, priority: 9, updated_at: 'x' });

    const disabled = await api('PUT', path, { enabled: false });
    assert.deepEqual({ ...disabled.body, updated_at: 'x' }, { ...prio.body, enabled: false, updated_at: 'x' });

    const value = await api('PUT', path, { rule_value: 'beta' });
    assert.deepEqual({ ...value.body, updated_at: 'x' }, { ...disabled.body, rule_value: 'beta', updated_at: 'x' });

    const retyped = await api('PUT', path, { rule_type: 'user_email', rule_value: 'Carol@Example.com' });
    assert.equal(retyped.status, 200, retyped.text);
    assert.equal(retyped.body.rule_type, 'user_email');
    assert.equal(retyped.body.priority, 9);
    assert.equal(retyped.body.enabled, false);
    assert.equal(retyped.body.flag_id, flag.id);
    assert.equal(retyped.body.created_at, original.created_at);
    assert.deepEqual((await api('GET', path)).body, retyped.body);

    // Refused updates change nothing.
    assertError(await api('PUT', path, { rule_value: '   ' }), 400, 'whitespace value');
    assertError(await api('PUT', path, { rule_value: 'not-an-email' }), 400, 'user_email rule given a non-email value');
    assertError(await api('PUT', path, { rule_type: 'country' }), 400, 'unknown type');
    assertError(await api('PUT', path, { enabled: null }), 400, 'enabled null');
    assertError(await api('PUT', path, { priority: null }), 400, 'priority null');
    assertError(await api('PUT', path, { priority: '5' }), 400, 'priority "5"');
    assertError(await api('PUT', path, { priority: 1.5 }), 400, 'priority 1.5');
    assertError(await api('PUT', path, { enabled: 'yes' }), 400, 'enabled "yes"');
    assert.deepEqual((await api('GET', path)).body, retyped.body);

    // Changing a user_id rule to user_email re-checks the kept value.
    const idRule = (await api('POST', rules, { rule_type: 'user_id', rule_value: 'plain-id' })).body;
    assertError(await api('PUT', `${rules}/${idRule.id}`, { rule_type: 'user_email' }), 400, 'type change invalidating the kept value');
    assert.deepEqual((await api('GET', `${rules}/${idRule.id}`)).body, idRule);
  });

  test('DELETE → 204 no body; then GET 404, gone from the list, no longer matches', async () => {
    const { rules } = await flagWithRules('rule_delete', { enabled: true, rollout_percentage: 0 });
    const rule = (await api('POST', rules, { rule_type: 'user_id', rule_value: 'deleted-target' })).body;
    const keep = (await api('POST', rules, { rule_type: 'user_id', rule_value: 'kept-target' })).body;
    assert.equal((await evaluate(server, project.sdk_key, 'production', { user_id: 'deleted-target' })).body.flags.rule_delete?.reason, 'Matched user_id targeting rule');
    assertNoContent(await api('DELETE', `${rules}/${rule.id}`), 'delete rule');
    assertError(await api('GET', `${rules}/${rule.id}`), 404, 'GET deleted rule');
    assertError(await api('PUT', `${rules}/${rule.id}`, { priority: 1 }), 404, 'PUT deleted rule');
    assertError(await api('DELETE', `${rules}/${rule.id}`), 404, 'delete twice');
    assert.deepEqual((await api('GET', rules)).body, [keep]);
    assert.deepEqual((await evaluate(server, project.sdk_key, 'production', { user_id: 'deleted-target' })).body.flags.rule_delete, {
      enabled: true,
      reason: 'Flag enabled globally',
    });
  });

  test('a rule is only reachable under its own flag', async () => {
    const a = await flagWithRules('rule_scope_a');
    const b = await flagWithRules('rule_scope_b');
    const rule = (await api('POST', a.rules, { rule_type: 'user_id', rule_value: 'scoped' })).body;
    assertError(await api('GET', `${b.rules}/${rule.id}`), 404, 'rule under another flag');
    assertError(await api('PUT', `${b.rules}/${rule.id}`, { rule_value: 'stolen' }), 404, 'PUT rule under another flag');
    assertError(await api('DELETE', `${b.rules}/${rule.id}`), 404, 'DELETE rule under another flag');
    assertError(await api('GET', `${rulesOf(a.flag.id, project.staging)}/${rule.id}`), 404, 'flag under the wrong environment');
    assert.deepEqual((await api('GET', `${a.rules}/${rule.id}`)).body, rule);
  });

  test('validation: empty/whitespace value, > 320 chars, bad email, unknown type → 400 and nothing created', async () => {
    const { rules } = await flagWithRules('rule_validation');
    const refused: Array<Record<string, unknown>> = [
      { rule_type: 'user_id', rule_value: '' },
      { rule_type: 'user_id', rule_value: '   ' },
      { rule_type: 'user_id', rule_value: '\t\n' },
      { rule_type: 'user_email', rule_value: '' },
      { rule_type: 'email_domain', rule_value: '  ' },
      { rule_type: 'user_id', rule_value: 'x'.repeat(321) },
      { rule_type: 'user_email', rule_value: `${'a'.repeat(310)}@example.com` },
      { rule_type: 'user_email', rule_value: 'not-an-email' },
      { rule_type: 'user_email', rule_value: '@example.com' },
      { rule_type: 'user_email', rule_value: 'alice@' },
      { rule_type: 'user_email', rule_value: 'a b@example.com' },
      { rule_type: 'user_email', rule_value: 'a@b@example.com' },
      { rule_type: 'email_domain', rule_value: '@' },
      { rule_type: 'country', rule_value: 'FR' },
      { rule_type: 'USER_ID', rule_value: 'u1' },
      { rule_type: '', rule_value: 'u1' },
      { rule_value: 'u1' },
      { rule_type: 'user_id' },
      { rule_type: 'user_id', rule_value: 42 },
      { rule_type: 'user_id', rule_value: null },
      { rule_type: 'user_id', rule_value: 'u1', enabled: 'true' },
      { rule_type: 'user_id', rule_value: 'u1', priority: '1' },
      { rule_type: 'user_id', rule_value: 'u1', priority: 0.5 },
    ];
    for (const body of refused) assertError(await api('POST', rules, body), 400, JSON.stringify(body).slice(0, 80));
    assert.deepEqual((await api('GET', rules)).body, [], 'no rule created');

    const longest = await api('POST', rules, { rule_type: 'user_id', rule_value: 'y'.repeat(320) });
    assert.equal(longest.status, 201, '320 characters is allowed');
    assert.equal(longest.body.rule_value, 'y'.repeat(320));
    const email = await api('POST', rules, { rule_type: 'user_email', rule_value: 'alice@example.com' });
    assert.equal(email.status, 201);
  });

  test('the 320-character limit counts characters, not UTF-16 code units', async () => {
    const { rules } = await flagWithRules('rule_length_unicode');
    const emoji320 = '😀'.repeat(320); // 320 characters, 640 UTF-16 code units
    const accepted = await api('POST', rules, { rule_type: 'user_id', rule_value: emoji320 });
    assert.equal(accepted.status, 201, `320 emoji are 320 characters: ${accepted.status} ${accepted.text.slice(0, 200)}`);
    assert.equal(accepted.body.rule_value, emoji320);
    assertError(await api('POST', rules, { rule_type: 'user_id', rule_value: '😀'.repeat(321) }), 400, '321 emoji');
  });

  test('email_domain: "example.com" and "@Example.COM" are both stored as "@example.com"', async () => {
    const { rules } = await flagWithRules('rule_domain_store');
    const bare = await api('POST', rules, { rule_type: 'email_domain', rule_value: 'example.com' });
    assert.equal(bare.status, 201, bare.text);
    assert.equal(bare.body.rule_value, '@example.com');
    const mixed = await api('POST', rules, { rule_type: 'email_domain', rule_value: '@Example.COM' });
    assert.equal(mixed.status, 201);
    assert.equal(mixed.body.rule_value, '@example.com');
    assert.equal((await api('GET', `${rules}/${mixed.body.id}`)).body.rule_value, '@example.com');
    const updated = await api('PUT', `${rules}/${bare.body.id}`, { rule_value: 'Other.ORG' });
    assert.equal(updated.status, 200);
    assert.equal(updated.body.rule_value, '@other.org');
    const retyped = await api('PUT', `${rules}/${bare.body.id}`, { rule_type: 'email_domain', rule_value: '@Third.Net' });
    assert.equal(retyped.body.rule_value, '@third.net');
  });

  test('evaluate: user_id rule matches exactly and case-sensitively', async () => {
    const { rules } = await flagWithRules('by_user_id', { enabled: true, rollout_percentage: 0 });
    assert.equal((await api('POST', rules, { rule_type: 'user_id', rule_value: 'User-1' })).status, 201);
    const reasonFor = async (context: Record<string, unknown>) => (await evaluate(server, project.sdk_key, 'production', context)).body.flags.by_user_id;
    assert.deepEqual(await reasonFor({ user_id: 'User-1' }), { enabled: true, reason: 'Matched user_id targeting rule' });
    for (const user_id of ['user-1', 'USER-1', 'User-1 ', 'User-', 'User-10']) {
      assert.deepEqual(await reasonFor({ user_id }), { enabled: true, reason: 'Flag enabled globally' }, user_id);
    }
    assert.deepEqual(await reasonFor({ user_email: 'User-1' }), { enabled: true, reason: 'Flag enabled globally' }, 'never matches the email');
  });

  test('evaluate: user_email rule matches case-insensitively', async () => {
    const { rules } = await flagWithRules('by_email', { enabled: true, rollout_percentage: 0 });
    await api('POST', rules, { rule_type: 'user_email', rule_value: 'Alice@Example.com' });
    const reasonFor = async (context: Record<string, unknown>) => (await evaluate(server, project.sdk_key, 'production', context)).body.flags.by_email;
    for (const user_email of ['alice@example.com', 'ALICE@EXAMPLE.COM', 'aLiCe@eXaMpLe.CoM']) {
      assert.deepEqual(await reasonFor({ user_id: 'someone', user_email }), { enabled: true, reason: 'Matched user_email targeting rule' }, user_email);
    }
    for (const user_email of ['alice@example.co', 'xalice@example.com', 'bob@example.com']) {
      assert.deepEqual(await reasonFor({ user_email }), { enabled: true, reason: 'Flag enabled globally' }, user_email);
    }
    assert.deepEqual(await reasonFor({ user_id: 'alice@example.com' }), { enabled: true, reason: 'Flag enabled globally' }, 'never matches the user_id');
  });

  test('evaluate: email_domain rule matches only the exact domain after the last @', async () => {
    const { rules } = await flagWithRules('by_domain', { enabled: true, rollout_percentage: 0 });
    await api('POST', rules, { rule_type: 'email_domain', rule_value: '@corp.com' });
    const reasonFor = async (user_email: string) => (await evaluate(server, project.sdk_key, 'production', { user_email })).body.flags.by_domain;
    const matched = { enabled: true, reason: 'Matched email_domain targeting rule' };
    const unmatched = { enabled: true, reason: 'Flag enabled globally' };
    assert.deepEqual(await reasonFor('a@corp.com'), matched);
    assert.deepEqual(await reasonFor('B@CORP.COM'), matched, 'case-insensitive');
    assert.deepEqual(await reasonFor('a@notcorp.com'), unmatched, 'a@notcorp.com');
    assert.deepEqual(await reasonFor('a@eu.corp.com'), unmatched, 'a@eu.corp.com');
    assert.deepEqual(await reasonFor('a@corp.com.evil.io'), unmatched, 'a@corp.com.evil.io');
    assert.deepEqual(await reasonFor('a@corp.co'), unmatched, 'a@corp.co');
  });

  test('evaluate: rules are consulted only for an enabled flag; a disabled rule does not match', async () => {
    const { flag, rules } = await flagWithRules('rule_switches', { enabled: true, rollout_percentage: 0 });
    const rule = (await api('POST', rules, { rule_type: 'user_id', rule_value: 'vip', enabled: false })).body;
    const result = async () => (await evaluate(server, project.sdk_key, 'production', { user_id: 'vip' })).body.flags.rule_switches;
    assert.deepEqual(await result(), { enabled: true, reason: 'Flag enabled globally' }, 'disabled rule ignored');
    await api('PUT', `${rules}/${rule.id}`, { enabled: true });
    assert.deepEqual(await result(), { enabled: true, reason: 'Matched user_id targeting rule' }, 'enabled rule matches');
    await api('POST', `${flagsPath(project)}/${flag.id}/toggle`);
    assert.deepEqual(await result(), { enabled: false, reason: 'Flag is globally disabled' }, 'flag off: rules not consulted');
  });

  test('evaluate: a matching rule turns the flag on for a user outside the rollout', async () => {
    // Contract §2 vector: (flag, user123) → bucket 78, so a 10% rollout leaves user123 out.
    const { rules } = await flagWithRules('flag', { enabled: true, rollout_percentage: 10 });
    const result = async () => (await evaluate(server, project.sdk_key, 'production', { user_id: 'user123', user_email: 'u@corp.io' })).body.flags.flag;
    assert.deepEqual(await result(), { enabled: false, reason: 'User not in 10% rollout' });
    await api('POST', rules, { rule_type: 'email_domain', rule_value: 'corp.io' });
    assert.deepEqual(await result(), { enabled: true, reason: 'Matched email_domain targeting rule' });
  });

  test('evaluate: the higher priority rule wins; ties go to the oldest', async () => {
    const { rules } = await flagWithRules('priorities', { enabled: true, rollout_percentage: 0 });
    const context = { user_id: 'u-prio', user_email: 'Prio@Team.dev' };
    const reason = async () => (await evaluate(server, project.sdk_key, 'production', context)).body.flags.priorities?.reason;

    const domain = (await api('POST', rules, { rule_type: 'email_domain', rule_value: 'team.dev', priority: 1 })).body;
    const email = (await api('POST', rules, { rule_type: 'user_email', rule_value: 'prio@team.dev', priority: 1 })).body;
    assert.equal(await reason(), 'Matched email_domain targeting rule', 'equal priority: oldest first');

    const id = (await api('POST', rules, { rule_type: 'user_id', rule_value: 'u-prio', priority: 5 })).body;
    assert.equal(await reason(), 'Matched user_id targeting rule', 'highest priority');

    await api('PUT', `${rules}/${email.id}`, { priority: 10 });
    assert.equal(await reason(), 'Matched user_email targeting rule', 'priority raised');

    await api('PUT', `${rules}/${domain.id}`, { priority: 11 });
    assert.equal(await reason(), 'Matched email_domain targeting rule');

    await api('PUT', `${rules}/${domain.id}`, { enabled: false });
    assert.equal(await reason(), 'Matched user_email targeting rule', 'a disabled rule is skipped whatever its priority');

    await api('DELETE', `${rules}/${email.id}`);
    assert.equal(await reason(), 'Matched user_id targeting rule');
    await api('DELETE', `${rules}/${id.id}`);
    assert.equal(await reason(), 'Flag enabled globally');
  });
});

// ───────────────────────────────────────────────────────────────────────────── deletion cascades

describe('deletion cascades', () => {
  const db = () => server.database.db;

  /** Evaluation history through the API (contract §6): the project's, or one environment's. */
  async function history(projectId: string, envId?: string, query = ''): Promise<HistoryItem[]> {
    const path = envId ? `/api/projects/${projectId}/environments/${envId}/evaluations` : `/api/projects/${projectId}/evaluations`;
    const answer = await api('GET', `${path}?limit=500${query}`);
    assert.equal(answer.status, 200, answer.text);
    assert.equal(answer.body.next_cursor, null, 'all history on one page');
    return answer.body.items;
  }
  const waitForHistory = (projectId: string, envId: string | undefined, atLeast: number, query = '') =>
    eventually(async () => (await history(projectId, envId, query)).length >= atLeast, `${atLeast} history items in ${envId ?? projectId}${query}`);
  /** Stored evaluation rows of these environments, whatever the API can still reach. */
  const storedRows = async (envIds: string[]) =>
    (await db().selectFrom('evaluations').select('environment_id').where('environment_id', 'in', envIds).execute()).length;
  const byId = (items: HistoryItem[]) => [...items].sort((a, b) => a.id.localeCompare(b.id));

  /** A project with a flag (and a rule) in production and in a custom environment, evaluated twice in each. */
  async function populated(name: string) {
    const project = await newProject(server, user, name);
    const custom = (await api('POST', `/api/projects/${project.id}/environments`, { name: 'Custom', key: 'custom' })).body as { id: string };
    const prodFlag = await newFlag(server, user, project, { key: 'prod_flag', enabled: true });
    const prodFlag2 = await newFlag(server, user, project, { key: 'prod_flag_2', enabled: false });
    const customFlag = await newFlag(server, user, project, { key: 'custom_flag', enabled: true }, custom.id);
    const prodRule = (await api('POST', `${flagsPath(project)}/${prodFlag.id}/rules`, { rule_type: 'user_id', rule_value: 'u1' })).body as { id: string };
    const customRule = (await api('POST', `${flagsPath(project, custom.id)}/${customFlag.id}/rules`, { rule_type: 'user_id', rule_value: 'u1' })).body as { id: string };
    for (const env of ['production', 'custom']) {
      for (const user_id of ['u1', 'u2']) assert.equal((await evaluate(server, project.sdk_key, env, { user_id })).status, 200);
    }
    await waitForHistory(project.id, project.production, 4); // 2 calls × 2 flags
    await waitForHistory(project.id, custom.id, 2); // 2 calls × 1 flag
    const envIds = [project.production, project.staging, custom.id];
    return { project, custom, envIds, prodFlag, prodFlag2, customFlag, prodRule, customRule };
  }

  test('deleting a project removes its environments, flags, rules and evaluation history', async () => {
    const bystander = await populated('Bystander project');
    const bystanderHistory = byId(await history(bystander.project.id));
    const { project, custom, envIds, prodFlag, prodFlag2, customFlag, prodRule, customRule } = await populated('Cascade project');
    assert.equal((await history(project.id)).length, 6);
    assert.ok((await storedRows(envIds)) > 0, 'history is stored before the delete');

    assertNoContent(await api('DELETE', `/api/projects/${project.id}`), 'delete project');

    assertError(await api('GET', `/api/projects/${project.id}/environments`), 404, 'environments list');
    assertError(await api('GET', `/api/projects/${project.id}/environments/${project.production}`), 404, 'production env');
    assertError(await api('GET', `/api/projects/${project.id}/environments/${custom.id}`), 404, 'custom env');
    assertError(await api('GET', flagsPath(project)), 404, 'flags list');
    assertError(await api('GET', `${flagsPath(project)}/${prodFlag.id}`), 404, 'production flag');
    assertError(await api('GET', `${flagsPath(project, custom.id)}/${customFlag.id}`), 404, 'custom flag');
    assertError(await api('GET', `${flagsPath(project)}/${prodFlag.id}/rules/${prodRule.id}`), 404, 'production rule');
    assertError(await api('GET', `${flagsPath(project, custom.id)}/${customFlag.id}/rules/${customRule.id}`), 404, 'custom rule');
    assertError(await api('GET', `/api/projects/${project.id}/evaluations`), 404, 'project history');
    assertError(await evaluate(server, project.sdk_key, 'production'), 401, 'SDK key of the deleted project');

    // Stored state: nothing of the project is left.
    assert.equal((await db().selectFrom('environments').select('id').where('id', 'in', envIds).execute()).length, 0, 'environments rows');
    assert.equal((await db().selectFrom('flags').select('id').where('id', 'in', [prodFlag.id, prodFlag2.id, customFlag.id]).execute()).length, 0, 'flags rows');
    assert.equal((await db().selectFrom('rules').select('id').where('id', 'in', [prodRule.id, customRule.id]).execute()).length, 0, 'rules rows');
    assert.equal(await storedRows(envIds), 0, 'evaluation history rows removed');

    // Another project is untouched.
    assert.deepEqual(byId(await history(bystander.project.id)), bystanderHistory, 'other project history kept');
    assert.equal((await api('GET', `${flagsPath(bystander.project)}/${bystander.prodFlag.id}/rules/${bystander.prodRule.id}`)).status, 200);
    assert.equal((await evaluate(server, bystander.project.sdk_key, 'custom', { user_id: 'u1' })).body.flags.custom_flag?.reason, 'Matched user_id targeting rule');
  });

  test('deleting an environment removes its flags, rules and evaluation history, and nothing of the other environments', async () => {
    const { project, custom, prodFlag, customFlag, prodRule, customRule } = await populated('Env cascade');
    const productionHistory = byId(await history(project.id, project.production));
    assert.ok((await history(project.id)).some((item) => item.environment_id === custom.id));

    assertNoContent(await api('DELETE', `/api/projects/${project.id}/environments/${custom.id}`), 'delete env');

    assertError(await api('GET', flagsPath(project, custom.id)), 404, 'flags list of the deleted env');
    assertError(await api('GET', `${flagsPath(project, custom.id)}/${customFlag.id}`), 404, 'flag of the deleted env');
    assertError(await api('GET', `${flagsPath(project, custom.id)}/${customFlag.id}/rules`), 404, 'rules of the deleted env');
    assertError(await api('GET', `${flagsPath(project, custom.id)}/${customFlag.id}/rules/${customRule.id}`), 404, 'rule of the deleted env');
    assertError(await api('GET', `/api/projects/${project.id}/environments/${custom.id}/evaluations`), 404, 'history of the deleted env');
    assertError(await evaluate(server, project.sdk_key, 'custom'), 404, 'evaluate the deleted env');
    assert.equal((await db().selectFrom('flags').select('id').where('id', '=', customFlag.id).execute()).length, 0, 'flags rows');
    assert.equal((await db().selectFrom('rules').select('id').where('id', '=', customRule.id).execute()).length, 0, 'rules rows');
    assert.equal(await storedRows([custom.id]), 0, 'history rows of the env removed');
    assert.ok(!(await history(project.id)).some((item) => item.environment_id === custom.id), 'not in the project history');

    // The project and its other environments keep everything.
    assert.equal((await api('GET', `/api/projects/${project.id}`)).status, 200);
    assert.deepEqual(byId(await history(project.id, project.production)), productionHistory, 'production history kept');
    assert.equal((await api('GET', `${flagsPath(project)}/${prodFlag.id}/rules/${prodRule.id}`)).status, 200);
    assert.deepEqual((await evaluate(server, project.sdk_key, 'production', { user_id: 'u1' })).body.flags, {
      prod_flag: { enabled: true, reason: 'Matched user_id targeting rule' },
      prod_flag_2: { enabled: false, reason: 'Flag is globally disabled' },
    });
  });

  test('deleting a flag removes its rules but retains its evaluation history', async () => {
    const { project, prodFlag, prodRule } = await populated('Flag cascade');
    const rule2 = (await api('POST', `${flagsPath(project)}/${prodFlag.id}/rules`, { rule_type: 'email_domain', rule_value: 'x.io' })).body as { id: string };
    const flagHistory = byId(await history(project.id, project.production, '&flag_key=prod_flag'));
    assert.equal(flagHistory.length, 2);
    assert.ok(flagHistory.every((item) => item.flag_id === prodFlag.id && item.flag_key === 'prod_flag'));
    const otherHistory = byId(await history(project.id, project.production, '&flag_key=prod_flag_2'));

    assertNoContent(await api('DELETE', `${flagsPath(project)}/${prodFlag.id}`), 'delete flag');

    assertError(await api('GET', `${flagsPath(project)}/${prodFlag.id}/rules`), 404, 'rules list of the deleted flag');
    assertError(await api('GET', `${flagsPath(project)}/${prodFlag.id}/rules/${prodRule.id}`), 404, 'rule of the deleted flag');
    assert.equal((await db().selectFrom('rules').select('id').where('flag_id', '=', prodFlag.id).execute()).length, 0, 'rules rows removed');
    assert.equal((await db().selectFrom('rules').select('id').where('id', '=', rule2.id).execute()).length, 0);

    assert.deepEqual(byId(await history(project.id, project.production, '&flag_key=prod_flag')), flagHistory, 'history of the deleted flag retained, readable by flag_key');
    assert.deepEqual(byId((await history(project.id)).filter((item) => item.flag_id === prodFlag.id)), flagHistory, 'and in the project history');
    assert.deepEqual(byId(await history(project.id, project.production, '&flag_key=prod_flag_2')), otherHistory);
  });

  test('a flag deleted right after being evaluated still gets its history written', async () => {
    const project = await newProject(server, user, 'Quick flag delete');
    const flag = await newFlag(server, user, project, { key: 'fleeting', enabled: true });
    assert.equal((await evaluate(server, project.sdk_key, 'production', { user_id: 'u-fleeting' })).status, 200);
    assertNoContent(await api('DELETE', `${flagsPath(project)}/${flag.id}`), 'delete flag');
    await waitForHistory(project.id, project.production, 1, '&flag_key=fleeting');
    const [item, ...rest] = await history(project.id, project.production, '&flag_key=fleeting');
    assert.equal(rest.length, 0);
    assert.equal(item?.flag_id, flag.id);
    assert.equal(item?.user_id, 'u-fleeting');
    assert.equal(item?.enabled, true);
    assert.equal(item?.reason, 'Flag enabled globally');
  });

  test('deleting an environment does not lose history of other environments that is still waiting to be written', async () => {
    // Rows of the surviving environment and of the deleted one are pending together.
    const project = await newProject(server, user, 'Pending history');
    const doomed = (await api('POST', `/api/projects/${project.id}/environments`, { name: 'Doomed', key: 'doomed' })).body as { id: string };
    await newFlag(server, user, project, { key: 'survivor', enabled: true });
    await newFlag(server, user, project, { key: 'victim', enabled: true }, doomed.id);
    assert.equal((await evaluate(server, project.sdk_key, 'production', { user_id: 'keep-me' })).status, 200);
    assert.equal((await evaluate(server, project.sdk_key, 'doomed', { user_id: 'drop-me' })).status, 200);
    assertNoContent(await api('DELETE', `/api/projects/${project.id}/environments/${doomed.id}`), 'delete env');
    await waitForHistory(project.id, project.production, 1);
    const items = await history(project.id);
    assert.deepEqual(items.map((item) => [item.flag_key, item.user_id]), [['survivor', 'keep-me']]);
    assert.equal(await storedRows([doomed.id]), 0);
  });
});
