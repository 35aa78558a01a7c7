/**
 * docs/variants.md through HTTP, on the database of the pass: what evaluate, OFREP, history and the
 * metrics answer for flags with variants. (The management API's validation is variants-api.test.ts.)
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import murmurhash3js from 'murmurhash3js';
import { evaluate, eventually, flagsPath, newFlag, newProject, newUser, request, startServer, type TestProject, type TestServer, type TestUser } from './harness.js';

let server: TestServer;
let user: TestUser;
let project: TestProject;

before(async () => {
  server = await startServer();
  user = await newUser(server, 'variants');
  project = await newProject(server, user, 'Variants');
});
after(() => server.close());

const api = (method: string, path: string, body?: unknown) => request(server, method, path, { token: user.token, body });

interface Variant {
  key: string;
  value: unknown;
  weight: number;
}

/** docs/variants.md computed with another library's murmur3: the first variant whose running weight total reaches the target. */
function expectedVariant(flagKey: string, identifier: string, variants: readonly Variant[]): Variant {
  const target = (murmurhash3js.x86.hash32(Buffer.from(`${flagKey}:${identifier}`, 'utf8').toString('latin1'), 86028157) % 1000) + 1;
  let total = 0;
  for (const variant of variants) if ((total += variant.weight) >= target) return variant;
  throw new Error('weights do not reach the target');
}

async function variantFlag(key: string, variants: Variant[], fields: Record<string, unknown> = {}) {
  const flag = await newFlag(server, user, project, { key, enabled: true, ...fields });
  const put = await api('PUT', `${flagsPath(project)}/${flag.id}`, { variants, off_variant: variants[0]!.key });
  assert.equal(put.status, 200, put.text);
  return flag;
}

const buttons: Variant[] = [
  { key: 'control', value: 'Buy', weight: 500 },
  { key: 'urgent', value: 'Buy now!', weight: 300 },
  { key: 'soft', value: 'Take a look', weight: 200 },
];

test('each user gets the variant docs/variants.md computes, and its value; a boolean flag answers as before', async () => {
  await variantFlag('button-text', buttons);
  await newFlag(server, user, project, { key: 'plain', enabled: true });
  const seen = new Set<string>();
  for (let i = 0; i < 60; i++) {
    const id = i % 2 === 0 ? `user-${i}` : `élan-${i}`;
    const { body } = await evaluate(server, project.sdk_key, 'production', { user_id: id });
    const expected = expectedVariant('button-text', id, buttons);
    assert.deepEqual(body.flags['button-text'], { enabled: true, reason: 'Flag enabled globally', variant: expected.key, value: expected.value }, id);
    assert.deepEqual(body.flags.plain, { enabled: true, reason: 'Flag enabled globally' });
    seen.add(expected.key);
  }
  assert.equal(seen.size, 3, 'sixty users see all three variants');
  const anonymous = await evaluate(server, project.sdk_key, 'production', {});
  assert.equal(anonymous.body.flags['button-text']!.variant, expectedVariant('button-text', 'anonymous', buttons).key);
});

test('weights at 0 and 1000, the off variant, a rule pinning a variant, a rollout', async () => {
  const limits: Variant[] = [
    { key: 'small', value: 10, weight: 0 },
    { key: 'large', value: 1000, weight: 1000 },
  ];
  const flag = await variantFlag('upload-limit', limits, { rollout_percentage: 50 });
  const rule = await api('POST', `${flagsPath(project)}/${flag.id}/rules`, { rule_type: 'user_id', rule_value: 'vip', variant: 'small' });
  assert.equal(rule.status, 201, rule.text);
  const answers = await Promise.all(Array.from({ length: 40 }, (_, i) => evaluate(server, project.sdk_key, 'production', { user_id: `u${i}` })));
  for (const { body } of answers) {
    const answer = body.flags['upload-limit']!;
    // Out of the rollout: off, so the off variant; in it: the weights, which give large to everyone.
    assert.deepEqual([answer.variant, answer.value], answer.enabled ? ['large', 1000] : ['small', 10]);
  }
  assert.ok(answers.some(({ body }) => body.flags['upload-limit']!.enabled) && answers.some(({ body }) => !body.flags['upload-limit']!.enabled));
  const vip = await evaluate(server, project.sdk_key, 'production', { user_id: 'vip' });
  assert.deepEqual(vip.body.flags['upload-limit'], { enabled: true, reason: 'Matched user_id targeting rule', variant: 'small', value: 10 });
  await api('PUT', `${flagsPath(project)}/${flag.id}`, { enabled: false });
  await eventually(async () => (await evaluate(server, project.sdk_key, 'production', { user_id: 'vip' })).body.flags['upload-limit']!.enabled === false, 'the flag switched off');
  const off = await evaluate(server, project.sdk_key, 'production', { user_id: 'vip' });
  assert.deepEqual(off.body.flags['upload-limit'], { enabled: false, reason: 'Flag is globally disabled', variant: 'small', value: 10 });
});

test('JSON values, the ETag follows a change of value, and the answer is reused only when equal', async () => {
  const project2 = await newProject(server, user, 'Variants ETag');
  const flag = await newFlag(server, user, project2, { key: 'config', enabled: true });
  const put = (value: unknown) => api('PUT', `${flagsPath(project2)}/${flag.id}`, { variants: [{ key: 'only', value, weight: 1000 }], off_variant: 'only' });
  assert.equal((await put({ retries: 3, hosts: ['a', 'b'] })).status, 200);
  const first = await evaluate(server, project2.sdk_key, 'production', { user_id: 'u1' });
  assert.deepEqual(first.body.flags.config, { enabled: true, reason: 'Flag enabled globally', variant: 'only', value: { retries: 3, hosts: ['a', 'b'] } });
  const again = await evaluate(server, project2.sdk_key, 'production', { user_id: 'u2' });
  assert.equal(again.headers.get('etag'), first.headers.get('etag'), 'the same answer, the same tag');
  assert.equal((await put({ retries: 4, hosts: ['a', 'b'] })).status, 200);
  await eventually(async () => (await evaluate(server, project2.sdk_key, 'production', { user_id: 'u1' })).body.flags.config!.value.retries === 4, 'the new value served');
  const changed = await evaluate(server, project2.sdk_key, 'production', { user_id: 'u1' });
  assert.notEqual(changed.headers.get('etag'), first.headers.get('etag'), 'same codes and variant index, another value: another tag');
});

test('history rows and the hourly metrics record the variant', async () => {
  const project3 = await newProject(server, user, 'Variants history');
  const flag = await newFlag(server, user, project3, { key: 'theme', enabled: true });
  const themes: Variant[] = [
    { key: 'light', value: 'light', weight: 500 },
    { key: 'dark', value: 'dark', weight: 500 },
  ];
  assert.equal((await api('PUT', `${flagsPath(project3)}/${flag.id}`, { variants: themes, off_variant: 'light' })).status, 200);
  await newFlag(server, user, project3, { key: 'boolean', enabled: true });
  const users = Array.from({ length: 20 }, (_, i) => `h${i}`);
  for (const id of users) await evaluate(server, project3.sdk_key, 'production', { user_id: id });
  const expected = new Map(users.map((id) => [id, expectedVariant('theme', id, themes).key]));
  let items: { flag_key: string; user_id: string; variant: string | null }[] = [];
  await eventually(async () => {
    items = (await api('GET', `/api/projects/${project3.id}/evaluations?limit=100`)).body.items;
    return items.length === 40;
  }, 'history written');
  for (const item of items) assert.equal(item.variant, item.flag_key === 'theme' ? expected.get(item.user_id) : null, `${item.flag_key} ${item.user_id}`);
  const counts = { light: 0, dark: 0 };
  for (const variant of expected.values()) counts[variant as 'light' | 'dark']++;
  let metrics: { totals: { enabled: number; variants?: Record<string, number> }; buckets: { variants?: Record<string, number> }[] } | undefined;
  await eventually(async () => {
    metrics = (await api('GET', `${flagsPath(project3)}/${flag.id}/metrics?hours=2`)).body;
    return metrics!.totals.enabled === 20;
  }, 'counts written');
  assert.deepEqual(metrics!.totals.variants, Object.fromEntries(Object.entries(counts).filter(([, n]) => n > 0)));
  assert.deepEqual(metrics!.buckets.at(-1)!.variants, metrics!.totals.variants);
  const booleanFlag = (await api('GET', flagsPath(project3))).body.find((f: { key: string }) => f.key === 'boolean');
  const booleanMetrics = (await api('GET', `${flagsPath(project3)}/${booleanFlag.id}/metrics?hours=2`)).body;
  assert.equal('variants' in booleanMetrics.totals, false, 'a flag without variants has no variant counts');
});

test('OFREP serves the value, the variant key and the reasons of docs/variants.md', async () => {
  const project4 = await newProject(server, user, 'Variants OFREP');
  const colours: Variant[] = [
    { key: 'red', value: '#f00', weight: 400 },
    { key: 'blue', value: '#00f', weight: 600 },
  ];
  const split = await newFlag(server, user, project4, { key: 'split', enabled: true });
  await api('PUT', `${flagsPath(project4)}/${split.id}`, { variants: colours, off_variant: 'red' });
  const fixed = await newFlag(server, user, project4, { key: 'fixed', enabled: true });
  await api('PUT', `${flagsPath(project4)}/${fixed.id}`, { variants: [{ key: 'n', value: 42, weight: 1000 }], off_variant: 'n' });
  const off = await newFlag(server, user, project4, { key: 'off', enabled: false });
  await api('PUT', `${flagsPath(project4)}/${off.id}`, { variants: colours, off_variant: 'blue' });
  const ruled = await newFlag(server, user, project4, { key: 'ruled', enabled: true, everyone_else: 'off' });
  await api('PUT', `${flagsPath(project4)}/${ruled.id}`, { variants: colours, off_variant: 'red' });
  await api('POST', `${flagsPath(project4)}/${ruled.id}/rules`, { rule_type: 'user_id', rule_value: 'vip', variant: 'blue' });
  const ofrep = (key: string, context: Record<string, unknown>) =>
    request(server, 'POST', `/ofrep/v1/evaluate/flags/${key}`, { headers: { authorization: `Bearer ${project4.sdk_key}` }, body: { context } });
  const expected = expectedVariant('split', 'someone', colours);
  assert.deepEqual((await ofrep('split', { targetingKey: 'someone' })).body, { key: 'split', value: expected.value, variant: expected.key, reason: 'SPLIT', metadata: { reason: 'Flag enabled globally' } });
  assert.deepEqual((await ofrep('fixed', { targetingKey: 'someone' })).body, { key: 'fixed', value: 42, variant: 'n', reason: 'STATIC', metadata: { reason: 'Flag enabled globally' } });
  assert.deepEqual((await ofrep('off', { targetingKey: 'someone' })).body, { key: 'off', value: '#00f', variant: 'blue', reason: 'DISABLED', metadata: { reason: 'Flag is globally disabled' } });
  assert.deepEqual((await ofrep('ruled', { targetingKey: 'vip' })).body, { key: 'ruled', value: '#00f', variant: 'blue', reason: 'TARGETING_MATCH', metadata: { reason: 'Matched user_id targeting rule' } });
  assert.deepEqual((await ofrep('ruled', { targetingKey: 'other' })).body, { key: 'ruled', value: '#f00', variant: 'red', reason: 'DEFAULT', metadata: { reason: 'No targeting rule matched' } });
  const bulk = await request(server, 'POST', '/ofrep/v1/evaluate/flags', { headers: { authorization: `Bearer ${project4.sdk_key}` }, body: { context: { targetingKey: 'vip' } } });
  assert.deepEqual(
    bulk.body.flags.map((flag: { key: string; value: unknown; variant: string; reason: string }) => [flag.key, flag.value, flag.variant, flag.reason]),
    [
      ['split', expectedVariant('split', 'vip', colours).value, expectedVariant('split', 'vip', colours).key, 'SPLIT'],
      ['fixed', 42, 'n', 'STATIC'],
      ['off', '#00f', 'blue', 'DISABLED'],
      ['ruled', '#00f', 'blue', 'TARGETING_MATCH'],
    ],
  );
});
