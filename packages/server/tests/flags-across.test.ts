/**
 * Flags across environments (contract §13): the side-by-side list and copying a flag to another
 * environment. Real server, real port, fresh database.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { evaluate, eventually, flagsPath, newFlag, newProject, newUser, request, startServer, type TestProject, type TestServer, type TestUser } from './harness.js';

let server: TestServer;
let user: TestUser;

before(async () => {
  server = await startServer();
  user = await newUser(server, 'across');
});
after(() => server.close());

const rulesPath = (project: TestProject, envId: string, flagId: string) => `${flagsPath(project, envId)}/${flagId}/rules`;
const copyPath = (project: TestProject, envId: string, flagId: string) => `${flagsPath(project, envId)}/${flagId}/copy`;

describe('GET /api/projects/{pid}/flags', () => {
  test('one row per key with its state in each environment, rules counted enabled or not, last evaluation from history', async () => {
    const project = await newProject(server, user);
    const checkout = await newFlag(server, user, project, { key: 'checkout', name: 'Checkout', enabled: true, rollout_percentage: 30 });
    const stagingCheckout = await newFlag(server, user, project, { key: 'checkout', name: 'Checkout (staging)' }, project.staging);
    await newFlag(server, user, project, { key: 'banner' }, project.staging);
    for (const [value, enabled] of [['a', true], ['b', false]] as const) {
      const rule = await request(server, 'POST', rulesPath(project, project.production, checkout.id), { token: user.token, body: { rule_type: 'user_id', rule_value: value, enabled } });
      assert.equal(rule.status, 201);
    }
    const hourOf = (date: Date) => (date.setUTCMinutes(0, 0, 0), date.toISOString());
    const hourBefore = hourOf(new Date());
    assert.equal((await evaluate(server, project.sdk_key, 'production', { user_id: 'u1' })).status, 200);
    const hourAfter = hourOf(new Date());

    let list = await request(server, 'GET', `/api/projects/${project.id}/flags`, { token: user.token });
    await eventually(async () => {
      list = await request(server, 'GET', `/api/projects/${project.id}/flags`, { token: user.token });
      return list.body[1]?.environments.production.last_evaluated_at !== null;
    }, 'the evaluation in history');
    assert.equal(list.status, 200);
    assert.deepEqual(list.body.map((row: { key: string }) => row.key), ['banner', 'checkout']);
    const [banner, row] = list.body;
    assert.deepEqual(Object.keys(banner.environments), ['staging'], 'an environment without the key is absent');
    assert.equal(row.name, 'Checkout', 'the name from the first environment');
    const production = row.environments.production;
    assert.equal(production.flag_id, checkout.id);
    assert.equal(production.enabled, true);
    assert.equal(production.rollout_percentage, 30);
    assert.equal(production.rules_count, 2);
    assert.ok([hourBefore, hourAfter].includes(production.last_evaluated_at), 'the start of the hour of the latest evaluation');
    assert.deepEqual(
      { ...row.environments.staging, updated_at: undefined },
      { flag_id: stagingCheckout.id, enabled: false, rollout_percentage: 0, rules_count: 0, last_evaluated_at: null, variants: [], off_variant: null, prerequisites: [], updated_at: undefined },
    );
  });

  test('an empty project lists nothing; another user\'s project and a bad id are 404; no token is 401', async () => {
    const project = await newProject(server, user);
    assert.deepEqual((await request(server, 'GET', `/api/projects/${project.id}/flags`, { token: user.token })).body, []);
    const stranger = await newUser(server, 'stranger');
    assert.equal((await request(server, 'GET', `/api/projects/${project.id}/flags`, { token: stranger.token })).status, 404);
    assert.equal((await request(server, 'GET', '/api/projects/not-a-uuid/flags', { token: user.token })).status, 404);
    assert.equal((await request(server, 'GET', `/api/projects/${project.id}/flags`)).status, 401);
  });
});

describe('POST …/flags/{flag_id}/copy', () => {
  test('copies fields and rules (same order, new ids) into the target: 201; evaluation there sees it', async () => {
    const project = await newProject(server, user);
    const flag = await newFlag(server, user, project, { key: 'beta', name: 'Beta', description: 'the beta', enabled: true, rollout_percentage: 0 });
    const sent = [
      { rule_type: 'user_id', rule_value: 'low', priority: 1 },
      { rule_type: 'email_domain', rule_value: 'example.com', priority: 5, enabled: false },
      { rule_type: 'user_email', rule_value: 'a@b.co', priority: 1 },
    ];
    for (const body of sent) assert.equal((await request(server, 'POST', rulesPath(project, project.production, flag.id), { token: user.token, body })).status, 201);
    const sourceRules = (await request(server, 'GET', rulesPath(project, project.production, flag.id), { token: user.token })).body;

    const copied = await request(server, 'POST', copyPath(project, project.production, flag.id), { token: user.token, body: { target_environment_id: project.staging } });
    assert.equal(copied.status, 201, copied.text);
    assert.notEqual(copied.body.id, flag.id);
    assert.equal(copied.body.environment_id, project.staging);
    assert.deepEqual(
      { key: copied.body.key, name: copied.body.name, description: copied.body.description, enabled: copied.body.enabled, rollout: copied.body.rollout_percentage },
      { key: 'beta', name: 'Beta', description: 'the beta', enabled: true, rollout: 0 },
    );
    const copiedRules = (await request(server, 'GET', rulesPath(project, project.staging, copied.body.id), { token: user.token })).body;
    const shape = (rules: Array<Record<string, unknown>>) => rules.map(({ rule_type, rule_value, enabled, priority }) => ({ rule_type, rule_value, enabled, priority }));
    assert.deepEqual(shape(copiedRules), shape(sourceRules), 'same rules in the same order');
    assert.ok(copiedRules.every((rule: { id: string }) => !sourceRules.some((source: { id: string }) => source.id === rule.id)), 'new ids');

    const answer = await evaluate(server, project.sdk_key, 'staging', { user_id: 'low' });
    assert.deepEqual(answer.body.flags.beta, { enabled: true, reason: 'Matched user_id targeting rule' });
  });

  test('an existing key: 409 and nothing changes; with overwrite it is replaced in place (200, same id)', async () => {
    const project = await newProject(server, user);
    const source = await newFlag(server, user, project, { key: 'dark', name: 'Dark mode', enabled: true, rollout_percentage: 50 });
    await request(server, 'POST', rulesPath(project, project.production, source.id), { token: user.token, body: { rule_type: 'user_id', rule_value: 'x' } });
    const target = await newFlag(server, user, project, { key: 'dark', name: 'Old', rollout_percentage: 5 }, project.staging);
    await request(server, 'POST', rulesPath(project, project.staging, target.id), { token: user.token, body: { rule_type: 'user_id', rule_value: 'old-1' } });
    await request(server, 'POST', rulesPath(project, project.staging, target.id), { token: user.token, body: { rule_type: 'user_id', rule_value: 'old-2' } });

    const refused = await request(server, 'POST', copyPath(project, project.production, source.id), { token: user.token, body: { target_environment_id: project.staging } });
    assert.equal(refused.status, 409);
    assert.deepEqual(Object.keys(refused.body).sort(), ['error', 'message', 'statusCode']);
    const unchanged = await request(server, 'GET', `${flagsPath(project, project.staging)}/${target.id}`, { token: user.token });
    assert.equal(unchanged.body.name, 'Old');

    const replaced = await request(server, 'POST', copyPath(project, project.production, source.id), { token: user.token, body: { target_environment_id: project.staging, overwrite: true } });
    assert.equal(replaced.status, 200, replaced.text);
    assert.equal(replaced.body.id, target.id, 'the id stays');
    assert.deepEqual([replaced.body.name, replaced.body.enabled, replaced.body.rollout_percentage], ['Dark mode', true, 50]);
    const rules = (await request(server, 'GET', rulesPath(project, project.staging, target.id), { token: user.token })).body;
    assert.deepEqual(rules.map((rule: { rule_value: string }) => rule.rule_value), ['x'], 'the rules are replaced');
  });

  test('bad targets: another project\'s environment 404, the same environment 400, a bad body 400; nothing is created', async () => {
    const project = await newProject(server, user);
    const other = await newProject(server, user);
    const flag = await newFlag(server, user, project, { key: 'solo' });
    const copy = (body: unknown) => request(server, 'POST', copyPath(project, project.production, flag.id), { token: user.token, body });
    assert.equal((await copy({ target_environment_id: other.staging })).status, 404);
    assert.equal((await copy({ target_environment_id: project.production })).status, 400);
    assert.equal((await copy({ target_environment_id: 'nope' })).status, 400);
    assert.equal((await copy({ target_environment_id: project.staging, overwrite: 'yes' })).status, 400);
    // Bodies are not coerced here either (contract §3): this route's plugin adds a schema of its own,
    // and Fastify then built it a default validator, which took "true" and 1 as true.
    assert.equal((await copy({ target_environment_id: project.staging, overwrite: 'true' })).status, 400);
    assert.equal((await copy({ target_environment_id: project.staging, overwrite: 1 })).status, 400);
    assert.equal((await copy({})).status, 400);
    const stranger = await newUser(server, 'stranger');
    assert.equal((await request(server, 'POST', copyPath(project, project.production, flag.id), { token: stranger.token, body: { target_environment_id: project.staging } })).status, 404);
    for (const envId of [project.staging]) assert.deepEqual((await request(server, 'GET', flagsPath(project, envId), { token: user.token })).body, []);
    for (const envId of [other.production, other.staging]) assert.deepEqual((await request(server, 'GET', flagsPath(other, envId), { token: user.token })).body, []);
  });

  test('both routes appear in the OpenAPI document with their schemas', async () => {
    const doc = (await request(server, 'GET', '/docs/json')).body;
    assert.ok(doc.paths['/api/projects/{project_id}/flags'].get);
    assert.ok(doc.paths['/api/projects/{project_id}/environments/{env_id}/flags/{flag_id}/copy'].post);
    assert.ok(doc.components.schemas.ProjectFlag, 'ProjectFlag is a named schema');
  });
});
