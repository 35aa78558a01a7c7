/**
 * docs/targeting.md through HTTP, on the database of the pass: conditions on any attribute (every
 * operator × present / missing / unparsable / negate / case_insensitive), per-rule rollout and
 * serve, everyone_else, custom attributes, segments, and what OFREP passes through.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { evaluate, eventually, flagsPath, newFlag, newProject, newUser, request, startServer, type TestProject, type TestServer, type TestUser } from './harness.js';

let server: TestServer;
let user: TestUser;

before(async () => {
  server = await startServer();
  user = await newUser(server, 'targeting');
});
after(() => server.close());

const api = (method: string, path: string, body?: unknown) => request(server, method, path, { token: user.token, body });
const rulesOf = (project: TestProject, flagId: string, envId = project.production) => `${flagsPath(project, envId)}/${flagId}/rules`;

/** A flag that is on only for whom its one conditions rule serves. */
async function conditionFlag(project: TestProject, key: string, conditions: unknown[], rule: Record<string, unknown> = {}) {
  const flag = await newFlag(server, user, project, { key, enabled: true, everyone_else: 'off' });
  const created = await api('POST', rulesOf(project, flag.id), { rule_type: 'conditions', conditions, ...rule });
  assert.equal(created.status, 201, `${key}: ${created.text}`);
  return flag;
}

type Case = [attributes: Record<string, unknown> | 'missing', expected: boolean];
interface Row {
  operator: string;
  values?: string[];
  negate?: boolean;
  case_insensitive?: boolean;
  attribute?: string;
  cases: Case[];
}

/** Per operator: present and matching, present and not, missing, unparsable, negated, case-insensitive. */
const TABLE: Row[] = [
  { operator: 'IN', values: ['beta', 'gamma'], cases: [[{ a: 'beta' }, true], [{ a: 'Beta' }, false], ['missing', false], [{ a: 'delta' }, false]] },
  { operator: 'IN', values: ['beta'], case_insensitive: true, cases: [[{ a: 'BETA' }, true], [{ a: 'alpha' }, false]] },
  { operator: 'IN', values: ['beta'], negate: true, cases: [[{ a: 'beta' }, false], [{ a: 'alpha' }, true], ['missing', true]] },
  { operator: 'IN', values: ['1', 'true'], cases: [[{ a: 1 }, true], [{ a: true }, true], [{ a: 2 }, false], [{ a: null }, false]] },
  { operator: 'NOT_IN', values: ['eu', 'uk'], cases: [[{ a: 'us' }, true], [{ a: 'eu' }, false], ['missing', true]] },
  { operator: 'NOT_IN', values: ['EU'], case_insensitive: true, cases: [[{ a: 'eu' }, false], [{ a: 'us' }, true]] },
  { operator: 'NOT_IN', values: ['eu'], negate: true, cases: [['missing', false], [{ a: 'eu' }, true]] },
  { operator: 'STR_CONTAINS', values: ['corp', 'inc'], cases: [[{ a: 'megacorp ltd' }, true], [{ a: 'MEGACORP' }, false], [{ a: 'other' }, false], ['missing', false]] },
  { operator: 'STR_CONTAINS', values: ['corp'], case_insensitive: true, cases: [[{ a: 'MEGACORP' }, true]] },
  { operator: 'STR_STARTS_WITH', values: ['app-'], cases: [[{ a: 'app-ios' }, true], [{ a: 'web-app-' }, false], ['missing', false]] },
  { operator: 'STR_STARTS_WITH', values: ['APP-'], case_insensitive: true, negate: true, cases: [[{ a: 'app-ios' }, false], [{ a: 'web' }, true]] },
  { operator: 'STR_ENDS_WITH', values: ['.de'], cases: [[{ a: 'shop.de' }, true], [{ a: 'shop.DE' }, false], ['missing', false]] },
  { operator: 'NUM_EQ', values: ['42'], cases: [[{ a: 42 }, true], [{ a: '42.0' }, true], [{ a: 41 }, false], [{ a: 'forty-two' }, false], ['missing', false]] },
  { operator: 'NUM_GT', values: ['10'], cases: [[{ a: 11 }, true], [{ a: 10 }, false], [{ a: 'x' }, false]] },
  { operator: 'NUM_GTE', values: ['10'], cases: [[{ a: 10 }, true], [{ a: 9.5 }, false]] },
  { operator: 'NUM_LT', values: ['10'], cases: [[{ a: -1 }, true], [{ a: 10 }, false], ['missing', false]] },
  { operator: 'NUM_LTE', values: ['10'], negate: true, cases: [[{ a: 10 }, false], [{ a: 11 }, true], [{ a: 'x' }, true], ['missing', true]] },
  { operator: 'DATE_AFTER', values: ['2026-06-01T00:00:00Z'], cases: [[{ a: '2026-06-02' }, true], [{ a: '2026-05-31T23:59:59Z' }, false], [{ a: 'June' }, false], ['missing', false]] },
  { operator: 'DATE_BEFORE', values: ['2026-06-01'], cases: [[{ a: '2026-05-31T12:00:00+02:00' }, true], [{ a: '2026-06-01T00:00:01Z' }, false], [{ a: 12 }, false]] },
  { operator: 'SEMVER_EQ', values: ['2.4.0'], cases: [[{ a: '2.4.0' }, true], [{ a: '2.4.1' }, false], [{ a: '2.4' }, false], ['missing', false]] },
  { operator: 'SEMVER_GT', values: ['2.4.0'], cases: [[{ a: '2.10.0' }, true], [{ a: '2.4.0' }, false], [{ a: 'v3' }, false]] },
  { operator: 'SEMVER_GTE', values: ['2.4.0'], cases: [[{ a: '2.4.0' }, true], [{ a: '2.4.0-beta.1' }, false], [{ a: '2.3.9' }, false]] },
  { operator: 'SEMVER_LT', values: ['2.4.0'], cases: [[{ a: '2.4.0-rc.1' }, true], [{ a: '2.4.0' }, false]] },
  { operator: 'SEMVER_LTE', values: ['2.4.0'], negate: true, cases: [[{ a: '2.4.0' }, false], [{ a: '2.5.0' }, true], [{ a: 'bad' }, true]] },
  { operator: 'REGEX', values: ['^team-(a|b)$'], cases: [[{ a: 'team-a' }, true], [{ a: 'team-c' }, false], [{ a: 'TEAM-A' }, false], ['missing', false]] },
  { operator: 'REGEX', values: ['corp'], case_insensitive: true, cases: [[{ a: 'a MegaCorp user' }, true]] },
  { operator: 'IN_CIDR', values: ['10.0.0.0/8', '2001:db8::/32'], cases: [[{ a: '10.1.2.3' }, true], [{ a: '::ffff:10.1.2.3' }, true], [{ a: '2001:db8::1' }, true], [{ a: '11.0.0.1' }, false], [{ a: 'not-an-ip' }, false], ['missing', false]] },
  { operator: 'EXISTS', cases: [[{ a: '' }, true], [{ a: false }, true], [{ a: null }, false], ['missing', false]] },
  { operator: 'EXISTS', negate: true, cases: [[{ a: 'x' }, false], ['missing', true]] },
];

describe('conditions on any attribute (docs/targeting.md)', () => {
  let project: TestProject;
  before(async () => {
    project = await newProject(server, user, 'Conditions');
  });

  test('every operator: present, missing, unparsable, negate and case_insensitive, through evaluate', async () => {
    const keys = await Promise.all(
      TABLE.map(async (row, i) => {
        const key = `op_${i}_${row.operator.toLowerCase()}`;
        await conditionFlag(project, key, [{ attribute: row.attribute ?? 'a', operator: row.operator, values: row.values, negate: row.negate, case_insensitive: row.case_insensitive }]);
        return key;
      }),
    );
    for (const [i, row] of TABLE.entries()) {
      for (const [attributes, expected] of row.cases) {
        const context = attributes === 'missing' ? { user_id: 'u1' } : { user_id: 'u1', custom_attributes: attributes };
        const answer = await evaluate(server, project.sdk_key, 'production', context);
        assert.equal(answer.status, 200, answer.text);
        const got = answer.body.flags[keys[i]!]!;
        const where = `${row.operator}${row.negate ? ' negate' : ''}${row.case_insensitive ? ' case_insensitive' : ''} ${row.values ?? ''} with ${JSON.stringify(attributes)}`;
        assert.deepEqual(got, expected ? { enabled: true, reason: 'Matched conditions targeting rule' } : { enabled: false, reason: 'No targeting rule matched' }, where);
      }
    }
  });

  test('the built-in attributes: user_id, user_email, email_domain, environment, current_time; a custom one of those names is ignored', async () => {
    await conditionFlag(project, 'by_domain', [{ attribute: 'email_domain', operator: 'IN', values: ['corp.com'] }]);
    await conditionFlag(project, 'by_environment', [{ attribute: 'environment', operator: 'IN', values: ['production'] }]);
    await conditionFlag(project, 'by_user', [{ attribute: 'user_id', operator: 'STR_STARTS_WITH', values: ['emp-'] }]);
    await conditionFlag(project, 'after_2000', [{ attribute: 'current_time', operator: 'DATE_AFTER', values: ['2000-01-01'] }]);
    const on = (await evaluate(server, project.sdk_key, 'production', { user_id: 'emp-7', user_email: 'Ann@CORP.com' })).body.flags;
    assert.equal(on.by_domain!.enabled, true);
    assert.equal(on.by_environment!.enabled, true);
    assert.equal(on.by_user!.enabled, true);
    assert.equal(on.after_2000!.enabled, true, 'the server clock');
    const spoofed = (await evaluate(server, project.sdk_key, 'production', { user_id: 'x', custom_attributes: { user_id: 'emp-1', email_domain: 'corp.com', environment: 'production', current_time: '1999-12-31' } })).body.flags;
    assert.equal(spoofed.by_user!.enabled, false, 'custom user_id is ignored');
    assert.equal(spoofed.by_domain!.enabled, false, 'custom email_domain is ignored');
    assert.equal(spoofed.by_environment!.enabled, true, 'environment is the evaluated one');
    assert.equal(spoofed.after_2000!.enabled, false, 'custom current_time is taken');
    assert.equal((await evaluate(server, project.sdk_key, 'staging', { user_id: 'x' })).body.flags.by_environment, undefined, 'flags are per environment');
  });

  test('all conditions must hold; rollout_percentage and serve per rule; a rule that does not serve hands on to the next', async () => {
    const flag = await newFlag(server, user, project, { key: 'layered', enabled: true, rollout_percentage: 0 });
    const rules = rulesOf(project, flag.id);
    // Priority 3: EU users are off. 2: enterprise on app ≥ 2.4 for 50 % of them. 1: user u-off by id, off.
    assert.equal((await api('POST', rules, { rule_type: 'conditions', priority: 3, serve: false, conditions: [{ attribute: 'region', operator: 'IN', values: ['eu'] }] })).status, 201);
    assert.equal((await api('POST', rules, { rule_type: 'conditions', priority: 2, rollout_percentage: 50, conditions: [{ attribute: 'plan', operator: 'IN', values: ['enterprise'] }, { attribute: 'app', operator: 'SEMVER_GTE', values: ['2.4.0'] }] })).status, 201);
    assert.equal((await api('POST', rules, { rule_type: 'user_id', rule_value: 'u-off', priority: 1, serve: false })).status, 201);
    const got = async (context: Record<string, unknown>) => (await evaluate(server, project.sdk_key, 'production', context)).body.flags.layered;
    assert.deepEqual(await got({ user_id: 'user_1', custom_attributes: { region: 'eu', plan: 'enterprise', app: '3.0.0' } }), { enabled: false, reason: 'Matched conditions targeting rule' });
    // docs/api.md buckets (flag "layered"): found by trying ids, the same for every run.
    const { murmur3_x86_32 } = await import('@guidon/engine');
    const bucket = (id: string) => murmur3_x86_32(`layered:${id}`, 0) % 100;
    const inside = ['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h'].find((id) => bucket(id) < 50)!;
    const outside = ['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h'].find((id) => bucket(id) >= 50)!;
    const enterprise = { plan: 'enterprise', app: '2.4.1' };
    assert.deepEqual(await got({ user_id: inside, custom_attributes: enterprise }), { enabled: true, reason: 'Matched conditions targeting rule' });
    assert.deepEqual(await got({ user_id: outside, custom_attributes: enterprise }), { enabled: true, reason: 'Flag enabled globally' }, 'outside the rule’s rollout: on to the flag’s own answer');
    assert.deepEqual(await got({ user_id: 'u-off', custom_attributes: { plan: 'enterprise', app: '2.3.0' } }), { enabled: false, reason: 'Matched user_id targeting rule' });
    // everyone_else "off": the flag's rollout no longer serves whom no rule served.
    assert.equal((await api('PUT', `${flagsPath(project)}/${flag.id}`, { everyone_else: 'off' })).body.everyone_else, 'off');
    assert.deepEqual(await got({ user_id: outside, custom_attributes: enterprise }), { enabled: false, reason: 'No targeting rule matched' });
    assert.deepEqual(await got({}), { enabled: false, reason: 'No targeting rule matched' });
  });

  test('a rule object shows conditions, rollout_percentage and serve; seed rules keep their shape with the defaults', async () => {
    const flag = await newFlag(server, user, project, { key: 'shapes', enabled: true });
    const seed = await api('POST', rulesOf(project, flag.id), { rule_type: 'email_domain', rule_value: 'Example.com' });
    assert.deepEqual([seed.body.rule_value, seed.body.conditions, seed.body.rollout_percentage, seed.body.serve], ['@example.com', null, 100, true]);
    const made = await api('POST', rulesOf(project, flag.id), { rule_type: 'conditions', conditions: [{ attribute: 'plan', operator: 'IN', values: ['pro'] }], rollout_percentage: 20, serve: false });
    assert.equal(made.status, 201, made.text);
    assert.deepEqual(made.body.conditions, [{ attribute: 'plan', operator: 'IN', values: ['pro'], negate: false, case_insensitive: false }]);
    assert.deepEqual([made.body.rule_value, made.body.rollout_percentage, made.body.serve], [null, 20, false]);
    const read = await api('GET', `${rulesOf(project, flag.id)}/${made.body.id}`);
    assert.deepEqual(read.body, made.body);
    // Changing the type back to a seed type needs a value; with one, the conditions go.
    assert.equal((await api('PUT', `${rulesOf(project, flag.id)}/${made.body.id}`, { rule_type: 'user_id' })).status, 400);
    const changed = await api('PUT', `${rulesOf(project, flag.id)}/${made.body.id}`, { rule_type: 'user_id', rule_value: 'u9' });
    assert.deepEqual([changed.body.rule_type, changed.body.rule_value, changed.body.conditions, changed.body.rollout_percentage], ['user_id', 'u9', null, 20]);
  });

  test('bad conditions are 400 with a message naming the condition and its operator, and create nothing', async () => {
    const flag = await newFlag(server, user, project, { key: 'refusals', enabled: true });
    const rules = rulesOf(project, flag.id);
    const refused: [unknown, RegExp][] = [
      [{ rule_type: 'conditions', conditions: [] }, /conditions/],
      [{ rule_type: 'conditions' }, /conditions are required/],
      [{ rule_type: 'conditions', rule_value: 'x', conditions: [{ attribute: 'a', operator: 'EXISTS' }] }, /rule_value must be absent/],
      [{ rule_type: 'user_id', rule_value: 'u', conditions: [{ attribute: 'a', operator: 'EXISTS' }] }, /only to rule_type conditions/],
      [{ rule_type: 'conditions', conditions: [{ attribute: 'a', operator: 'EXISTS' }, { attribute: 'a', operator: 'LIKE', values: ['x'] }] }, /conditions\[1\]: unknown operator "LIKE"/],
      [{ rule_type: 'conditions', conditions: [{ attribute: 'a', operator: 'NUM_GT', values: ['1', '2'] }] }, /conditions\[0\] \(NUM_GT\): takes exactly one value/],
      [{ rule_type: 'conditions', conditions: [{ attribute: 'a', operator: 'NUM_GT', values: ['ten'] }] }, /conditions\[0\] \(NUM_GT\): "ten" is not a number/],
      [{ rule_type: 'conditions', conditions: [{ attribute: 'a', operator: 'SEMVER_GTE', values: ['2.4'] }] }, /\(SEMVER_GTE\): "2.4" is not a version/],
      [{ rule_type: 'conditions', conditions: [{ attribute: 'a', operator: 'DATE_AFTER', values: ['next week'] }] }, /\(DATE_AFTER\): "next week" is not an ISO 8601 date/],
      [{ rule_type: 'conditions', conditions: [{ attribute: 'a', operator: 'IN_CIDR', values: ['10.0.0.0/33'] }] }, /\(IN_CIDR\): "10.0.0.0\/33"/],
      [{ rule_type: 'conditions', conditions: [{ attribute: 'a', operator: 'REGEX', values: ['(a)\\1'] }] }, /\(REGEX\): .*linear time/],
      [{ rule_type: 'conditions', conditions: [{ attribute: 'a', operator: 'REGEX', values: ['(?=a)b'] }] }, /\(REGEX\)/],
      [{ rule_type: 'conditions', conditions: [{ attribute: 'a', operator: 'REGEX', values: ['a'.repeat(1001)] }] }, /longer than 1000/],
      [{ rule_type: 'conditions', conditions: [{ attribute: 'a', operator: 'IN', values: [] }] }, /\(IN\): at least one value/],
      [{ rule_type: 'conditions', conditions: [{ attribute: 'a', operator: 'EXISTS', values: ['x'] }] }, /\(EXISTS\): takes no values/],
      [{ rule_type: 'conditions', conditions: [{ operator: 'IN', values: ['x'] }] }, /\(IN\): an attribute is required/],
      [{ rule_type: 'conditions', conditions: [{ attribute: 'a'.repeat(65), operator: 'EXISTS' }] }, /longer than 64/],
      [{ rule_type: 'conditions', conditions: [{ attribute: 'a', operator: 'IN', values: ['x'.repeat(1025)] }] }, /longer than 1024/],
      [{ rule_type: 'conditions', conditions: [{ attribute: 'a', operator: 'NUM_EQ', values: ['1'], case_insensitive: true }] }, /case_insensitive applies only/],
      [{ rule_type: 'conditions', conditions: [{ operator: 'IN_SEGMENT', values: ['nope'] }] }, /conditions\[0\] \(IN_SEGMENT\): no segment "nope"/],
      [{ rule_type: 'conditions', conditions: Array.from({ length: 31 }, () => ({ attribute: 'a', operator: 'EXISTS' })) }, /conditions/],
      [{ rule_type: 'user_id', rule_value: 'u', rollout_percentage: 101 }, /rollout_percentage/],
      [{ rule_type: 'user_id', rule_value: 'u', serve: 'no' }, /serve/],
    ];
    for (const [body, message] of refused) {
      const answer = await api('POST', rules, body);
      assert.equal(answer.status, 400, `${JSON.stringify(body).slice(0, 200)}: ${answer.text}`);
      assert.match(answer.body.message, message, JSON.stringify(body).slice(0, 200));
    }
    assert.deepEqual((await api('GET', rules)).body, [], 'nothing was created');
  });

  test('10,000 values in one IN condition; a pathological regex on a 1,024-character attribute answers; a longer attribute is 400', async () => {
    const many = Array.from({ length: 10_000 }, (_, i) => `customer-${i}`);
    await conditionFlag(project, 'many_values', [{ attribute: 'customer', operator: 'IN', values: many }]);
    await conditionFlag(project, 'backtracking_bait', [{ attribute: 'text', operator: 'REGEX', values: ['(a+)+$', '(a|aa)+b', '(.*a){12}'] }]);
    const long = `${'a'.repeat(1023)}!`;
    const answer = await evaluate(server, project.sdk_key, 'production', { custom_attributes: { customer: 'customer-9999', text: long } });
    assert.equal(answer.status, 200, answer.text);
    assert.equal(answer.body.flags.many_values!.enabled, true);
    assert.equal(answer.body.flags.backtracking_bait!.enabled, true, '(.*a){12} finds twelve a’s');
    assert.equal((await evaluate(server, project.sdk_key, 'production', { custom_attributes: { text: 'b'.repeat(1024) } })).body.flags.backtracking_bait!.enabled, false);
    const tooLong = await evaluate(server, project.sdk_key, 'production', { custom_attributes: { text: `${long}a` } });
    assert.equal(tooLong.status, 400, tooLong.text);
  });

  test('custom_attributes: at most 100, names 1–64 characters, string, number, boolean or null; else 400', async () => {
    const refused = [
      { custom_attributes: Object.fromEntries(Array.from({ length: 101 }, (_, i) => [`k${i}`, i])) },
      { custom_attributes: { ['n'.repeat(65)]: 1 } },
      { custom_attributes: { '': 1 } },
      { custom_attributes: { nested: { a: 1 } } },
      { custom_attributes: { list: ['a'] } },
      { custom_attributes: 'plan=beta' },
      { custom_attributes: ['beta'] },
    ];
    for (const context of refused) assert.equal((await evaluate(server, project.sdk_key, 'production', context)).status, 400, JSON.stringify(context).slice(0, 100));
    const accepted = await evaluate(server, project.sdk_key, 'production', { custom_attributes: { ...Object.fromEntries(Array.from({ length: 100 }, (_, i) => [`k${i}`, i % 2 === 0 ? i : `v${i}`])), k1: true, k2: null } });
    assert.equal(accepted.status, 200, accepted.text);
    assert.equal((await evaluate(server, project.sdk_key, 'production', { custom_attributes: null })).status, 200);
  });

  test('OFREP: context fields other than targetingKey and email are custom attributes', async () => {
    await conditionFlag(project, 'ofrep_plan', [{ attribute: 'plan', operator: 'IN', values: ['beta'] }, { attribute: 'seats', operator: 'NUM_GTE', values: ['10'] }]);
    const ofrep = (context: unknown) => request(server, 'POST', '/ofrep/v1/evaluate/flags/ofrep_plan', { headers: { 'x-sdk-key': project.sdk_key }, body: { context } });
    const on = await ofrep({ targetingKey: 'u1', plan: 'beta', seats: 12 });
    assert.equal(on.status, 200, on.text);
    assert.deepEqual([on.body.value, on.body.reason, on.body.metadata.reason], [true, 'TARGETING_MATCH', 'Matched conditions targeting rule']);
    const off = await ofrep({ targetingKey: 'u1', plan: 'beta', seats: 3 });
    assert.deepEqual([off.body.value, off.body.reason, off.body.metadata.reason], [false, 'DEFAULT', 'No targeting rule matched']);
    const bad = await ofrep({ targetingKey: 'u1', plan: { tier: 'beta' } });
    assert.equal(bad.status, 400);
    assert.equal(bad.body.errorCode, 'INVALID_CONTEXT');
  });

  test('copy to another environment carries conditions, rollout, serve and everyone_else', async () => {
    const flag = await conditionFlag(project, 'copied', [{ attribute: 'plan', operator: 'IN', values: ['beta'] }], { rollout_percentage: 30, serve: false });
    const copied = await api('POST', `${flagsPath(project)}/${flag.id}/copy`, { target_environment_id: project.staging });
    assert.equal(copied.status, 201, copied.text);
    assert.equal(copied.body.everyone_else, 'off');
    const rules = await api('GET', rulesOf(project, copied.body.id, project.staging));
    assert.deepEqual(rules.body.map((rule: any) => [rule.rule_type, rule.conditions, rule.rollout_percentage, rule.serve]), [['conditions', [{ attribute: 'plan', operator: 'IN', values: ['beta'], negate: false, case_insensitive: false }], 30, false]]);
  });
});

describe('segments (docs/targeting.md)', () => {
  let project: TestProject;
  before(async () => {
    project = await newProject(server, user, 'Segments');
  });
  const segments = () => `/api/projects/${project.id}/segments`;

  test('create, list by key, read, update; a rule names it with IN_SEGMENT and a change reaches evaluate', async () => {
    const beta = await api('POST', segments(), { key: 'beta', name: 'Beta customers', conditions: [{ attribute: 'plan', operator: 'IN', values: ['beta'] }] });
    assert.equal(beta.status, 201, beta.text);
    assert.deepEqual(Object.keys(beta.body).sort(), ['conditions', 'created_at', 'description', 'id', 'key', 'name', 'project_id', 'updated_at', 'used_by']);
    assert.deepEqual([beta.body.description, beta.body.used_by], [null, []]);
    const office = await api('POST', segments(), { key: 'office', name: 'Office network', description: 'HQ', conditions: [{ attribute: 'ip', operator: 'IN_CIDR', values: ['192.168.0.0/16'] }] });
    assert.equal(office.status, 201, office.text);
    assert.deepEqual((await api('GET', segments())).body.map((segment: any) => segment.key), ['beta', 'office']);

    const flag = await conditionFlag(project, 'beta_feature', [{ operator: 'IN_SEGMENT', values: ['beta', 'office'] }]);
    const read = await api('GET', `${segments()}/${beta.body.id}`);
    assert.deepEqual(read.body.used_by, [{ environment_id: project.production, flag_id: flag.id, flag_key: 'beta_feature' }]);
    const got = async (attributes: Record<string, unknown>) => (await evaluate(server, project.sdk_key, 'production', { custom_attributes: attributes })).body.flags.beta_feature!.enabled;
    assert.equal(await got({ plan: 'beta' }), true);
    assert.equal(await got({ ip: '192.168.4.2' }), true);
    assert.equal(await got({ plan: 'pro' }), false);

    const updated = await api('PUT', `${segments()}/${beta.body.id}`, { conditions: [{ attribute: 'plan', operator: 'IN', values: ['pro'] }] });
    assert.equal(updated.status, 200, updated.text);
    await eventually(async () => (await got({ plan: 'pro' })) === true, 'the segment change in evaluate', 1000);
    assert.equal(await got({ plan: 'beta' }), false);
  });

  test('in use: delete and re-key are 409 naming where; a rename is fine; unused, it deletes', async () => {
    const vip = await api('POST', segments(), { key: 'vip', name: 'VIP', conditions: [{ attribute: 'tier', operator: 'IN', values: ['gold'] }] });
    const flag = await conditionFlag(project, 'vip_lounge', [{ operator: 'IN_SEGMENT', values: ['vip'] }]);
    const deleting = await api('DELETE', `${segments()}/${vip.body.id}`);
    assert.equal(deleting.status, 409);
    assert.match(deleting.body.message, /flag "vip_lounge" in production/);
    assert.equal((await api('PUT', `${segments()}/${vip.body.id}`, { key: 'vips' })).status, 409);
    assert.equal((await api('PUT', `${segments()}/${vip.body.id}`, { name: 'Very important' })).status, 200);
    assert.equal((await api('DELETE', `${flagsPath(project)}/${flag.id}`)).status, 204);
    assert.equal((await api('PUT', `${segments()}/${vip.body.id}`, { key: 'vips' })).status, 200);
    assert.equal((await api('DELETE', `${segments()}/${vip.body.id}`)).status, 204);
    assert.equal((await api('GET', `${segments()}/${vip.body.id}`)).status, 404);
  });

  test('bad segments are 400 and create nothing; a duplicate key is 409; changes are audited', async () => {
    const before = (await api('GET', segments())).body.length;
    for (const body of [
      { key: 'Bad Key', name: 'x', conditions: [{ attribute: 'a', operator: 'EXISTS' }] },
      { key: 'nested', name: 'x', conditions: [{ operator: 'IN_SEGMENT', values: ['beta'] }] },
      { key: 'empty', name: 'x', conditions: [] },
      { key: 'no-name', conditions: [{ attribute: 'a', operator: 'EXISTS' }] },
      { key: 'bad-op', name: 'x', conditions: [{ attribute: 'a', operator: 'SEMVER_GT', values: ['1'] }] },
    ]) {
      const answer = await api('POST', segments(), body);
      assert.equal(answer.status, 400, `${JSON.stringify(body)}: ${answer.text}`);
    }
    assert.equal((await api('GET', segments())).body.length, before);
    const made = await api('POST', segments(), { key: 'audited', name: 'Audited', conditions: [{ attribute: 'a', operator: 'EXISTS' }] });
    assert.equal((await api('POST', segments(), { key: 'audited', name: 'Again', conditions: [{ attribute: 'a', operator: 'EXISTS' }] })).status, 409);
    await api('PUT', `${segments()}/${made.body.id}`, { name: 'Audited twice' });
    await api('DELETE', `${segments()}/${made.body.id}`);
    const audit = await api('GET', `/api/projects/${project.id}/audit?resource_id=${made.body.id}`);
    assert.deepEqual(audit.body.items.map((event: any) => [event.action, event.resource_type, event.resource_key]), [
      ['segment.deleted', 'segment', 'audited'],
      ['segment.updated', 'segment', 'audited'],
      ['segment.created', 'segment', 'audited'],
    ]);
  });
});
