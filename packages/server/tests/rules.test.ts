/**
 * Black-box tests of targeting rules (docs/api.md): real server, real port, a fresh database.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { type TestProject, type TestServer, type TestUser, evaluate, flagsPath, newFlag, newProject, newUser, startServer } from './harness.js';
import { UUID, assertIsoUtc, assertError, assertNoContent, apiAs } from './resources.js';

let server: TestServer;
let user: TestUser;

before(async () => {
  server = await startServer();
  user = await newUser(server, 'resources');
});
after(() => server.close());

const api = (method: string, path: string, body?: unknown) => apiAs(server, user)(method, path, body);

describe('targeting rules (docs/api.md)', () => {
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
    // docs/api.md vector: (flag, user123) → bucket 78, so a 10% rollout leaves user123 out.
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

