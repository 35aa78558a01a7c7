/**
 * The targeting editor's two dashboard aids (docs/targeting.md, In the dashboard), through HTTP on the database of the pass: explain (which rule
 * served a context, for Try it; it records nothing) and the custom attribute names an environment
 * has seen (names only, the 200 most recently seen within 30 days, gone with the environment).
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { bucketOf } from '@guidon/engine';
import { addMember, evaluate, eventually, flagsPath, newFlag, newProject, newUser, request, startServer, type TestProject, type TestServer, type TestUser } from './harness.js';

let server: TestServer;
let owner: TestUser;

before(async () => {
  server = await startServer();
  owner = await newUser(server, 'explain');
});
after(() => server.close());

const api = (method: string, path: string, body?: unknown, token = owner.token) => request(server, method, path, { token, body });
const envPath = (project: TestProject, envId = project.production) => `/api/projects/${project.id}/environments/${envId}`;
const explain = (project: TestProject, context: unknown, token = owner.token, envId = project.production) => api('POST', `${envPath(project, envId)}/explain`, { context }, token);
const attributes = (project: TestProject, envId = project.production) => api('GET', `${envPath(project, envId)}/attributes`);
const names = async (project: TestProject, envId = project.production) => ((await attributes(project, envId)).body.items as { name: string }[]).map((item) => item.name).sort();

async function addRule(project: TestProject, flagId: string, body: Record<string, unknown>) {
  const created = await api('POST', `${flagsPath(project)}/${flagId}/rules`, body);
  assert.equal(created.status, 201, created.text);
  return created.body as { id: string };
}

describe('explain: which rule served (POST …/environments/{eid}/explain)', () => {
  let project: TestProject;
  const rules: Record<string, string> = {};

  before(async () => {
    project = await newProject(server, owner, 'Explain');
    const segment = await api('POST', `/api/projects/${project.id}/segments`, { key: 'beta', name: 'Beta', conditions: [{ attribute: 'plan', operator: 'IN', values: ['beta'] }] });
    assert.equal(segment.status, 201, segment.text);

    // Evaluation order: a 0% rule that never serves, a disabled rule, a conditions rule, a seed rule.
    const checkout = await newFlag(server, owner, project, { key: 'checkout', enabled: true, everyone_else: 'off' });
    rules.never = (await addRule(project, checkout.id, { rule_type: 'conditions', conditions: [{ attribute: 'country', operator: 'IN', values: ['DE'] }], priority: 40, rollout_percentage: 0 })).id;
    rules.disabled = (await addRule(project, checkout.id, { rule_type: 'user_id', rule_value: 'alice', priority: 30, enabled: false })).id;
    rules.country = (await addRule(project, checkout.id, { rule_type: 'conditions', conditions: [{ attribute: 'country', operator: 'IN', values: ['DE', 'FR'] }], priority: 20 })).id;
    rules.alice = (await addRule(project, checkout.id, { rule_type: 'user_id', rule_value: 'alice', priority: 10, serve: false })).id;

    const beta = await newFlag(server, owner, project, { key: 'beta_ui', enabled: true, everyone_else: 'off' });
    rules.segment = (await addRule(project, beta.id, { rule_type: 'conditions', conditions: [{ operator: 'IN_SEGMENT', values: ['beta'] }] })).id;

    await newFlag(server, owner, project, { key: 'dark_mode', enabled: false });
    await newFlag(server, owner, project, { key: 'half', enabled: true, rollout_percentage: 50 });
  });

  test('a conditions rule, a seed rule, a segment rule, no rule and a disabled flag, as evaluate answers', async () => {
    const context = { user_id: 'alice', custom_attributes: { country: 'FR', plan: 'beta' } };
    const answer = await explain(project, context);
    assert.equal(answer.status, 200, answer.text);
    const { flags } = answer.body;
    // The 0% rule matches no one it serves and the disabled rule is skipped: the country rule, third in order, served.
    assert.deepEqual(flags.checkout, {
      enabled: true,
      reason: 'Matched conditions targeting rule',
      rule: { id: rules.country, position: 3, priority: 20, rule_type: 'conditions', rule_value: null, conditions: [{ attribute: 'country', operator: 'IN', values: ['DE', 'FR'], negate: false, case_insensitive: false }], rollout_percentage: 100, serve: true },
      prerequisite: null,
    });
    assert.equal(flags.beta_ui.rule.id, rules.segment);
    assert.equal(flags.beta_ui.reason, 'Matched conditions targeting rule');
    assert.deepEqual(flags.dark_mode, { enabled: false, reason: 'Flag is globally disabled', rule: null, prerequisite: null });
    assert.equal(flags.half.rule, null);
    assert.match(flags.half.reason, /^User (not )?in 50% rollout$/);

    // The same enabled and reason as the real evaluate, flag by flag.
    const real = await evaluate(server, project.sdk_key, 'production', context);
    for (const [key, value] of Object.entries(real.body.flags)) assert.deepEqual({ enabled: flags[key].enabled, reason: flags[key].reason }, value, key);

    // A seed rule that serves off; then no rule at all.
    const seed = (await explain(project, { user_id: 'alice', custom_attributes: { country: 'US' } })).body.flags;
    assert.deepEqual({ ...seed.checkout, rule: { id: seed.checkout.rule.id, position: seed.checkout.rule.position, rule_type: seed.checkout.rule.rule_type, rule_value: seed.checkout.rule.rule_value, serve: seed.checkout.rule.serve } }, {
      enabled: false,
      reason: 'Matched user_id targeting rule',
      rule: { id: rules.alice, position: 4, rule_type: 'user_id', rule_value: 'alice', serve: false },
      prerequisite: null,
    });
    const none = (await explain(project, { user_id: 'bob' })).body.flags;
    assert.deepEqual(none.checkout, { enabled: false, reason: 'No targeting rule matched', rule: null, prerequisite: null });
    assert.deepEqual(none.beta_ui, { enabled: false, reason: 'No targeting rule matched', rule: null, prerequisite: null });
    // No context at all is {}.
    assert.equal((await explain(project, undefined)).status, 200);
  });

  test('a rule whose own rollout leaves the user out does not serve: the next rule does', async () => {
    const flag = await newFlag(server, owner, project, { key: 'split_rule', enabled: true, everyone_else: 'off' });
    const half = await addRule(project, flag.id, { rule_type: 'conditions', conditions: [{ attribute: 'plan', operator: 'IN', values: ['beta'] }], priority: 20, rollout_percentage: 50 });
    const any = await addRule(project, flag.id, { rule_type: 'conditions', conditions: [{ attribute: 'plan', operator: 'EXISTS', values: [] }], priority: 10 });
    const users = Array.from({ length: 40 }, (_, i) => `user-${i}`);
    const inside = users.find((id) => bucketOf('split_rule', id) < 50)!;
    const outside = users.find((id) => bucketOf('split_rule', id) >= 50)!;
    for (const [userId, rule, position] of [[inside, half.id, 1], [outside, any.id, 2]] as const) {
      const context = { user_id: userId, custom_attributes: { plan: 'beta' } };
      const answer = (await explain(project, context)).body.flags.split_rule;
      assert.deepEqual([answer.enabled, answer.reason, answer.rule.id, answer.rule.position], [true, 'Matched conditions targeting rule', rule, position], userId);
      assert.deepEqual((await evaluate(server, project.sdk_key, 'production', context)).body.flags.split_rule, { enabled: true, reason: 'Matched conditions targeting rule' });
    }
  });

  test('a viewer may ask; a stranger may not', async () => {
    const viewer = await newUser(server, 'explain-viewer');
    await addMember(server, owner, project.id, viewer, 'viewer');
    const answer = await explain(project, { user_id: 'alice', custom_attributes: { country: 'DE' } }, viewer.token);
    assert.equal(answer.status, 200, answer.text);
    assert.equal(answer.body.flags.checkout.rule.id, rules.country);
    const stranger = await newUser(server, 'explain-stranger');
    assert.equal((await explain(project, {}, stranger.token)).status, 404);
  });

  test('a bad context is 400, as evaluate says it; an unknown environment 404', async () => {
    for (const context of [{ user_id: 5 }, 'alice', { custom_attributes: { plan: { tier: 'beta' } } }, { custom_attributes: { plan: 'x'.repeat(1025) } }, { custom_attributes: { ['n'.repeat(65)]: 1 } }]) {
      const answer = await explain(project, context);
      assert.equal(answer.status, 400, JSON.stringify(context).slice(0, 80));
      assert.equal((await evaluate(server, project.sdk_key, 'production', context as never)).status, 400);
    }
    assert.equal((await api('POST', `${envPath(project)}/explain`, '{"context":')).status, 400);
    assert.equal((await explain(project, {}, owner.token, '00000000-0000-4000-8000-000000000000')).status, 404);
  });

  test('explain records no history', async () => {
    assert.equal((await explain(project, { user_id: 'explained-only' })).status, 200);
    assert.equal((await evaluate(server, project.sdk_key, 'production', { user_id: 'marker' })).status, 200);
    const history = (userId: string) => api('GET', `/api/projects/${project.id}/evaluations?user_id=${userId}`);
    await eventually(async () => (await history('marker')).body.items.length > 0, 'the evaluate call in history');
    assert.deepEqual((await history('explained-only')).body.items, []);
  });
});

describe('attributes seen (GET …/environments/{eid}/attributes)', () => {
  test('names from evaluate and OFREP per environment, never values, built-in ones left out', async () => {
    const project = await newProject(server, owner, 'Attributes');
    await newFlag(server, owner, project, { key: 'f', enabled: true });
    assert.deepEqual((await attributes(project)).body, { items: [] });

    const sent = { user_id: 'u1', custom_attributes: { plan: 'secret-plan-value', app_version: '2.4.0', seats: 12, current_time: '2026-01-01T00:00:00Z', user_id: 'ignored', absent: null } };
    assert.equal((await evaluate(server, project.sdk_key, 'production', sent)).status, 200);
    await eventually(async () => (await names(project)).length === 3, 'the names of an evaluate request');
    const listed = await attributes(project);
    assert.deepEqual((listed.body.items as { name: string }[]).map((item) => item.name).sort(), ['app_version', 'plan', 'seats']);
    for (const item of listed.body.items) {
      assert.deepEqual(Object.keys(item).sort(), ['first_seen_at', 'last_seen_at', 'name']);
      assert.ok(!Number.isNaN(Date.parse(item.first_seen_at)));
    }
    assert.ok(!listed.text.includes('secret-plan-value'));
    const rows = await server.database.db.selectFrom('environment_attributes').selectAll().where('environment_id', '=', project.production).execute();
    assert.ok(!JSON.stringify(rows).includes('secret-plan-value'), 'no value stored');
    assert.deepEqual(await names(project, project.staging), [], 'another environment saw nothing');

    // OFREP: every context field but targetingKey and email is a custom attribute.
    const ofrep = await request(server, 'POST', '/ofrep/v1/evaluate/flags', { headers: { 'x-sdk-key': project.sdk_key, 'x-environment': 'staging' }, body: { context: { targetingKey: 'u2', email: 'a@example.com', region: 'eu' } } });
    assert.equal(ofrep.status, 200, ofrep.text);
    const single = await request(server, 'POST', '/ofrep/v1/evaluate/flags/f', { headers: { 'x-sdk-key': project.sdk_key, 'x-environment': 'staging' }, body: { context: { targetingKey: 'u2', tier: 'gold' } } });
    assert.equal(single.status, 404, 'no flag f in staging');
    await eventually(async () => (await names(project, project.staging)).length === 2, 'the names of OFREP requests');
    assert.deepEqual(await names(project, project.staging), ['region', 'tier']);
  });

  test('the 200 most recently seen names: junk names are pushed out by a name seen later, in memory and in the table', async () => {
    const project = await newProject(server, owner, 'Many attributes');
    const batch = (prefix: string) => Object.fromEntries(Array.from({ length: 100 }, (_, i) => [`${prefix}${i}`, i]));
    const junk = async (first: string, second: string) => {
      for (const prefix of [first, second]) assert.equal((await evaluate(server, project.sdk_key, 'production', { custom_attributes: batch(prefix) })).status, 200);
      await eventually(async () => (await names(project)).filter((name) => name.startsWith(second)).length === 100, `the ${second} names`);
    };
    // Anyone holding the SDK key can send 200 junk names: they do not keep a real name out.
    await junk('a', 'b');
    assert.equal((await names(project)).length, 200);
    assert.equal((await evaluate(server, project.sdk_key, 'production', { custom_attributes: { plan: 'pro' } })).status, 200);
    await eventually(async () => (await names(project)).includes('plan'), 'plan offered after 200 junk names');
    let all = await names(project);
    assert.equal(all.length, 200);
    assert.ok(!all.includes('a0'), 'the least recently seen name made room');
    // 200 newer junk names push it out; seen again later, it is offered again.
    await junk('c', 'd');
    all = await names(project);
    assert.equal(all.length, 200);
    assert.ok(!all.includes('plan') && all.every((name) => /^[cd]/.test(name)), 'the 200 most recent: c and d');
    assert.equal((await evaluate(server, project.sdk_key, 'production', { custom_attributes: { plan: 'pro' } })).status, 200);
    await eventually(async () => (await names(project)).includes('plan'), 'plan seen again');
    assert.equal((await names(project)).length, 200);
    const rows = await server.database.db.selectFrom('environment_attributes').select('name').where('environment_id', '=', project.production).execute();
    assert.equal(rows.length, 200, 'the table keeps 200 too');
  });

  test('a name not seen for 30 days is not offered, and the table forgets it', async () => {
    const project = await newProject(server, owner, 'Old attributes');
    assert.equal((await evaluate(server, project.sdk_key, 'production', { custom_attributes: { plan: 'pro', legacy_tier: 'gold' } })).status, 200);
    await eventually(async () => (await names(project)).length === 2, 'both names');
    const aged = new Date(Date.now() - 31 * 24 * 3600 * 1000).toISOString();
    const month = new Date(Date.now() - 29 * 24 * 3600 * 1000).toISOString();
    await server.database.db.updateTable('environment_attributes').set({ last_seen_at: aged }).where('environment_id', '=', project.production).where('name', '=', 'legacy_tier').execute();
    await server.database.db.updateTable('environment_attributes').set({ last_seen_at: month }).where('environment_id', '=', project.production).where('name', '=', 'plan').execute();
    assert.deepEqual(await names(project), ['plan'], '31 days unseen: not offered; 29 days: still offered');
    // The next names stored for the environment delete it from the table.
    assert.equal((await evaluate(server, project.sdk_key, 'production', { custom_attributes: { region: 'eu' } })).status, 200);
    await eventually(async () => (await names(project)).includes('region'), 'region');
    const rows = await server.database.db.selectFrom('environment_attributes').select('name').where('environment_id', '=', project.production).orderBy('name').execute();
    assert.deepEqual(rows.map((row) => row.name), ['plan', 'region']);
  });

  test('after a restart the memory is empty and the table full: a new name takes the least recent one\'s place', async () => {
    const project = await newProject(server, owner, 'Full table');
    // As a previous run of the server left it: 200 names, seen a day ago.
    const before = new Date(Date.now() - 24 * 3600 * 1000).toISOString();
    await server.database.db
      .insertInto('environment_attributes')
      .values(Array.from({ length: 200 }, (_, i) => ({ environment_id: project.production, name: `x${String(i).padStart(3, '0')}`, first_seen_at: before, last_seen_at: before })))
      .execute();
    assert.equal((await evaluate(server, project.sdk_key, 'production', { custom_attributes: { fresh: 1, x000: 'again' } })).status, 200);
    const x000 = () => server.database.db.selectFrom('environment_attributes').select('last_seen_at').where('environment_id', '=', project.production).where('name', '=', 'x000').executeTakeFirstOrThrow();
    await eventually(async () => new Date((await x000()).last_seen_at).toISOString() !== before, 'x000 seen again');
    const all = await names(project);
    assert.equal(all.length, 200);
    assert.ok(all.includes('fresh') && all.includes('x000'));
    // Of the 199 equally old names, the last by name made room.
    assert.ok(!all.includes('x199') && all.includes('x198'));
  });

  test('removed with the environment', async () => {
    const project = await newProject(server, owner, 'Gone');
    const qa = await api('POST', `/api/projects/${project.id}/environments`, { name: 'QA', key: 'qa' });
    assert.equal(qa.status, 201, qa.text);
    assert.equal((await evaluate(server, project.sdk_key, 'qa', { custom_attributes: { plan: 'beta' } })).status, 200);
    await eventually(async () => (await names(project, qa.body.id)).length === 1, 'the name in qa');
    assert.equal((await api('DELETE', `${envPath(project, qa.body.id)}`)).status, 204);
    assert.equal((await attributes(project, qa.body.id)).status, 404);
    const rows = await server.database.db.selectFrom('environment_attributes').selectAll().where('environment_id', '=', qa.body.id).execute();
    assert.deepEqual(rows, []);
  });
});
