/**
 * Black-box tests of projects (docs/api.md "Projects"): real server, real port, a fresh database.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { type TestServer, type TestUser, evaluate, newFlag, newProject, newUser, startServer } from './harness.js';
import { UUID, assertIsoUtc, assertError, assertNoContent, apiAs } from './resources.js';

let server: TestServer;
let user: TestUser;

before(async () => {
  server = await startServer();
  user = await newUser(server, 'resources');
});
after(() => server.close());

const api = (method: string, path: string, body?: unknown) => apiAs(server, user)(method, path, body);

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

