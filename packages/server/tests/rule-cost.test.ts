/**
 * What a flag may cost, bounded at save (docs/targeting.md, "What a flag may cost"; docs/security.md):
 * the review's reproductions are 400 with a message that says why, and change nothing; the
 * limits hold for rules, segments, copies across environments, imports and variant values; a pattern
 * stored before the limits matches nobody. No timing is asserted: the engine's worst-case bench
 * measures what these limits allow.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { evaluate, flagsPath, newFlag, newProject, newUser, request, startServer, type TestProject, type TestServer, type TestUser } from './harness.js';

let server: TestServer;
let user: TestUser;
let project: TestProject;

before(async () => {
  server = await startServer();
  user = await newUser(server, 'rule-cost');
  project = await newProject(server, user, 'Rule cost');
});
after(() => server.close());

const api = (method: string, path: string, body?: unknown) => request(server, method, path, { token: user.token, body });
const rulesOf = (flagId: string, envId = project.production) => `${flagsPath(project, envId)}/${flagId}/rules`;
const segments = () => `/api/projects/${project.id}/segments`;
const conditionsRule = (conditions: unknown[]) => ({ rule_type: 'conditions', conditions });

async function refused(method: string, path: string, body: unknown, message: RegExp | string): Promise<void> {
  const answer = await api(method, path, body);
  assert.equal(answer.status, 400, answer.text.slice(0, 300));
  if (typeof message === 'string') assert.equal(answer.body.message, message);
  else assert.match(answer.body.message, message);
}

test("the review's REGEX reproductions are 400: 20 patterns of (?:\\pL|\\pN){901…920}, ten of them, 10,000 copies; nothing is created", async () => {
  const flag = await newFlag(server, user, project, { key: 'regex_bomb', enabled: true, everyone_else: 'off' });
  const review = Array.from({ length: 20 }, (_, i) => `(?:\\pL|\\pN){${901 + i}}`);
  await refused('POST', rulesOf(flag.id), conditionsRule([{ attribute: 'text', operator: 'REGEX', values: review }]), 'conditions[0] (REGEX): at most 10 values');
  await refused('POST', rulesOf(flag.id), conditionsRule([{ attribute: 'text', operator: 'REGEX', values: review.slice(0, 10) }]), /^conditions\[0\] \(REGEX\): "\(\?:\\pL\|\\pN\)\{901\}" compiles to 903 instructions, over the \d+ a pattern may have/);
  const copies = Array.from({ length: 10_000 }, () => '(?:\\pL|\\pN){999}');
  await refused('POST', rulesOf(flag.id), conditionsRule([{ attribute: 'text', operator: 'REGEX', values: copies }]), 'conditions[0] (REGEX): at most 10 values');
  await refused('POST', segments(), { key: 'bomb', name: 'Bomb', conditions: [{ attribute: 'text', operator: 'REGEX', values: copies }] }, 'conditions[0] (REGEX): at most 10 values');
  assert.deepEqual((await api('GET', rulesOf(flag.id))).body, []);
  assert.deepEqual((await api('GET', segments())).body, []);
});

test("30 negated STR_CONTAINS of 3,000 values are 400 (at most 100 a condition); 30 of 100 are 400 for what they would cost; a few are accepted", async () => {
  const flag = await newFlag(server, user, project, { key: 'contains_bomb', enabled: true });
  const condition = (i: number, count: number) => ({ attribute: `a${i}`, operator: 'STR_CONTAINS', negate: true, values: Array.from({ length: count }, (_, k) => `v${k}`) });
  await refused('POST', rulesOf(flag.id), conditionsRule(Array.from({ length: 30 }, (_, i) => condition(i, 3000))), 'conditions[0] (STR_CONTAINS): at most 100 values');
  await refused('POST', rulesOf(flag.id), conditionsRule(Array.from({ length: 30 }, (_, i) => condition(i, 100))), /^The flag's conditions may cost up to [\d.]+ ms to evaluate for one context; at most 1\.00 ms is allowed \(the costliest: STR_CONTAINS on a\d+, [\d.]+ ms\)/);
  assert.deepEqual((await api('GET', rulesOf(flag.id))).body, []);
  const accepted = await api('POST', rulesOf(flag.id), conditionsRule([condition(0, 100), condition(1, 5)]));
  assert.equal(accepted.status, 201, accepted.text);
  // Changing a rule is held to the same bound, and a refused change leaves it as it was.
  await refused('PUT', `${rulesOf(flag.id)}/${accepted.body.id}`, { conditions: Array.from({ length: 30 }, (_, i) => condition(i, 100)) }, /may cost up to/);
  assert.equal((await api('GET', `${rulesOf(flag.id)}/${accepted.body.id}`)).body.conditions.length, 2);
  // The cost counts the whole flag: a second rule that would pass alone is refused beside it.
  await refused('POST', rulesOf(flag.id), conditionsRule([condition(2, 100), condition(3, 100)]), /may cost up to/);
});

test('a flag takes at most 100 rules, created or copied from rules stored before the limit', async () => {
  const flag = await newFlag(server, user, project, { key: 'many_rules', enabled: true });
  for (let i = 0; i < 100; i++) assert.equal((await api('POST', rulesOf(flag.id), { rule_type: 'user_id', rule_value: `u${i}` })).status, 201);
  await refused('POST', rulesOf(flag.id), { rule_type: 'user_id', rule_value: 'one-more' }, 'A flag has at most 100 rules (this one would have 101)');
  assert.equal((await api('GET', rulesOf(flag.id))).body.length, 100);

  // A flag whose 101 rules were stored before the limit (written to the database directly) is not copied.
  const old = await newFlag(server, user, project, { key: 'stored_before', enabled: true });
  const now = new Date().toISOString();
  await server.database.db
    .insertInto('rules')
    .values(Array.from({ length: 101 }, (_, i) => ({ id: crypto.randomUUID(), flag_id: old.id, rule_type: 'user_id', rule_value: `u${i}`, conditions: null, enabled: true, priority: 0, rollout_percentage: 100, serve: true, variant: null, created_at: now, updated_at: now })))
    .execute();
  await refused('POST', `${flagsPath(project)}/${old.id}/copy`, { target_environment_id: project.staging }, 'A flag has at most 100 rules (this one would have 101)');
  assert.deepEqual((await api('GET', flagsPath(project, project.staging))).body, [], 'nothing was copied');
});

test("a flag's conditions take at most 256 KiB as JSON, and a segment's too", async () => {
  const flag = await newFlag(server, user, project, { key: 'big_lists', enabled: true });
  const list = (prefix: string) => ({ attribute: 'account', operator: 'IN', values: Array.from({ length: 10_000 }, (_, i) => `${prefix}-account-${i}`) });
  assert.equal((await api('POST', rulesOf(flag.id), conditionsRule([list('a')]))).status, 201);
  await refused('POST', rulesOf(flag.id), conditionsRule([list('b')]), /^The conditions of a flag's rules take at most 256 KiB as JSON \(these take \d+ KiB\)$/);
  const long = { attribute: 'account', operator: 'IN', values: Array.from({ length: 10_000 }, (_, i) => `customer-account-number-${i}-of-the-list`) };
  await refused('POST', segments(), { key: 'big', name: 'Big', conditions: [long] }, /^A segment's conditions take at most 256 KiB as JSON/);
});

test('ten harmless patterns are accepted in one condition (the model follows the path re2js takes), and evaluate matches them', async () => {
  const flag = await newFlag(server, user, project, { key: 'ten_cheap_patterns', enabled: true, everyone_else: 'off' });
  const values = Array.from({ length: 10 }, (_, i) => `^ab${i}c$`);
  const saved = await api('POST', rulesOf(flag.id), conditionsRule([{ attribute: 'code', operator: 'REGEX', values }]));
  assert.equal(saved.status, 201, saved.text);
  const answer = async (code: string) => (await evaluate(server, project.sdk_key, 'production', { user_id: 'u1', custom_attributes: { code } })).body.flags.ten_cheap_patterns!.enabled;
  assert.equal(await answer('ab7c'), true);
  assert.equal(await answer('ab7cd'), false);
});

test('segments: held to the budget alone, and a change that would push a flag that uses one over it is 400', async () => {
  const costly = (letter: string) => ({ attribute: 'text', operator: 'REGEX', values: [`(?:a|b)*${letter}(?:a|b){60}`] });
  await refused('POST', segments(), { key: 'two_costly', name: 'Two', conditions: [costly('a'), costly('b')] }, /^The segment's conditions may cost up to/);
  const one = await api('POST', segments(), { key: 'one_costly', name: 'One', conditions: [costly('a')] });
  assert.equal(one.status, 201, one.text);
  const other = await api('POST', segments(), { key: 'other_costly', name: 'Other', conditions: [{ attribute: 'plan', operator: 'IN', values: ['pro'] }] });
  assert.equal(other.status, 201, other.text);
  const flag = await newFlag(server, user, project, { key: 'segment_user', enabled: true });
  assert.equal((await api('POST', rulesOf(flag.id), conditionsRule([{ operator: 'IN_SEGMENT', values: ['one_costly', 'other_costly'] }]))).status, 201);
  // Each segment passes alone; together in the flag they would not.
  await refused('PUT', `${segments()}/${other.body.id}`, { conditions: [costly('b')] }, /^Segment "other_costly" would take flag "segment_user" over its limits: The flag's conditions may cost up to/);
  assert.deepEqual((await api('GET', `${segments()}/${other.body.id}`)).body.conditions[0].operator, 'IN', 'unchanged');
});

test('an import is held to the same limits: a flag over its cost and a segment over its own are problems with their paths, and nothing changes', async () => {
  const target = await newProject(server, user, 'Imported');
  const contains = (i: number) => ({ attribute: `a${i}`, operator: 'STR_CONTAINS', negate: true, values: Array.from({ length: 100 }, (_, k) => `v${k}`) });
  const costly = (letter: string) => ({ attribute: 'text', operator: 'REGEX', values: [`(?:a|b)*${letter}(?:a|b){60}`] });
  const document = {
    guidon: 1,
    environments: [{ key: 'production', name: 'Production' }],
    segments: [{ key: 'heavy', name: 'Heavy', conditions: [costly('a'), costly('b')] }],
    flags: [{ key: 'costly', name: 'Costly', environments: { production: { enabled: true, rules: [{ rule_type: 'conditions', conditions: Array.from({ length: 30 }, (_, i) => contains(i)) }] } } }],
  };
  const answer = await api('POST', `/api/projects/${target.id}/import?dry_run=false`, document);
  assert.equal(answer.status, 400, answer.text);
  const problems = answer.body.problems as { path: string; message: string }[];
  assert.ok(problems.some((problem) => problem.path === 'segments[0].conditions' && /^segments\[0\]\.conditions: The segment's conditions may cost up to/.test(problem.message)), JSON.stringify(problems));
  assert.ok(problems.some((problem) => problem.path === 'flags[0].environments.production.rules' && /The flag's conditions may cost up to/.test(problem.message)), JSON.stringify(problems));
  assert.deepEqual((await api('GET', `/api/projects/${target.id}/segments`)).body, []);
  assert.deepEqual((await api('GET', flagsPath(target))).body, []);
});

test('a pattern stored before the limits matches nobody, and evaluate answers; the others of its condition still match', async () => {
  const flag = await newFlag(server, user, project, { key: 'stored_bomb', enabled: true, everyone_else: 'off' });
  const now = new Date().toISOString();
  const conditions = [{ attribute: 'text', operator: 'REGEX', values: ['(?:\\pL|\\pN){901}', '^ok$'], negate: false, case_insensitive: false }];
  await server.database.db
    .insertInto('rules')
    .values({ id: crypto.randomUUID(), flag_id: flag.id, rule_type: 'conditions', rule_value: '', conditions: JSON.stringify(conditions), enabled: true, priority: 0, rollout_percentage: 100, serve: true, variant: null, created_at: now, updated_at: now })
    .execute();
  const attack = await evaluate(server, project.sdk_key, 'production', { custom_attributes: { text: `${'é'.repeat(900)}${'!'.repeat(124)}` } });
  assert.equal(attack.status, 200, attack.text);
  assert.equal(attack.body.flags.stored_bomb!.enabled, false);
  assert.equal((await evaluate(server, project.sdk_key, 'production', { custom_attributes: { text: 'é'.repeat(901) } })).body.flags.stored_bomb!.enabled, false, 'the refused pattern matches nobody');
  assert.equal((await evaluate(server, project.sdk_key, 'production', { custom_attributes: { text: 'ok' } })).body.flags.stored_bomb!.enabled, true);
});

test('a variant value nests at most 32 levels of arrays and objects', async () => {
  const nested = (levels: number): unknown => (levels === 1 ? [1] : levels % 2 === 0 ? { a: nested(levels - 1) } : [nested(levels - 1)]);
  const body = (key: string, levels: number) => ({ key, name: key, variants: [{ key: 'deep', value: nested(levels), weight: 1000 }], off_variant: 'deep' });
  await refused('POST', flagsPath(project), body('too_deep', 33), 'variants[0] ("deep").value nests arrays and objects 33 levels deep, over the 32 allowed');
  assert.equal((await api('POST', flagsPath(project), body('deep_enough', 32))).status, 201);
});
