/**
 * Black-box tests of flags (docs/api.md "Flags"): real server, real port, a fresh database.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { type TestProject, type TestServer, type TestUser, evaluate, flagsPath, newProject, newUser, startServer } from './harness.js';
import { UUID, assertIsoUtc, assertError, assertNoContent, apiAs } from './resources.js';

let server: TestServer;
let user: TestUser;

before(async () => {
  server = await startServer();
  user = await newUser(server, 'resources');
});
after(() => server.close());

const api = (method: string, path: string, body?: unknown) => apiAs(server, user)(method, path, body);

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

