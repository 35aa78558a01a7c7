/**
 * Black-box tests of environments (docs/api.md "Environments"): real server, real port, a fresh database.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { type TestProject, type TestServer, type TestUser, evaluate, newProject, newUser, startServer } from './harness.js';
import { UUID, assertIsoUtc, assertError, assertNoContent, apiAs } from './resources.js';

let server: TestServer;
let user: TestUser;

before(async () => {
  server = await startServer();
  user = await newUser(server, 'resources');
});
after(() => server.close());

const api = (method: string, path: string, body?: unknown) => apiAs(server, user)(method, path, body);

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

