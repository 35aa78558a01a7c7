/**
 * docs/variants.md, the management API of variants: a flag's variants and off_variant, a rule's
 * variant, every validation error (400, nothing changed), the audit log and webhooks with
 * before/after, copy to another environment and the side-by-side view. Real server, real port,
 * fresh database (SQLite, or PostgreSQL with GUIDON_TEST_DATABASE=postgres).
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { eventually, flagsPath, newFlag, newProject, newUser, request, startServer, type TestProject, type TestServer, type TestUser } from './harness.js';
import { assertError } from './resources.js';
import { Receiver } from './webhook-receiver.js';

let server: TestServer;
let receiver: Receiver;
let user: TestUser;

before(async () => {
  receiver = await new Receiver().start();
  server = await startServer({ WEBHOOK_ALLOW_PRIVATE: 'true' }, { webhooks: { pollIntervalMs: 50, timeoutMs: 2000, retryDelaysMs: [50, 50, 50, 50] } });
  user = await newUser(server, 'variants');
});
after(async () => {
  await server?.close();
  await receiver?.close();
});

const api = (method: string, path: string, body?: unknown) => request(server, method, path, { token: user.token, ...(body === undefined ? {} : { body }) });
const rulesPath = (project: TestProject, flagId: string, envId = project.production) => `${flagsPath(project, envId)}/${flagId}/rules`;

const THREE = [
  { key: 'control', value: 'Buy', weight: 500, description: 'today\'s text' },
  { key: 'short', value: 'Buy now', weight: 300 },
  { key: 'long', value: 'Buy it now, today', weight: 200 },
];

/** A flag with the three string variants above, off_variant control. */
async function variantFlag(project: TestProject, key = 'button', envId = project.production) {
  const created = await api('POST', flagsPath(project, envId), { key, name: key, enabled: true, variants: THREE, off_variant: 'control' });
  assert.equal(created.status, 201, created.text);
  return created.body;
}

/** Sends the request, expects a 400 whose message contains `says`, and checks nothing changed. */
async function refused(method: string, path: string, body: unknown, says: string | RegExp, unchanged: () => Promise<unknown>) {
  const beforeState = JSON.stringify(await unchanged());
  const answer = await api(method, path, body);
  assertError(answer, 400, `${method} ${JSON.stringify(body).slice(0, 200)}`);
  if (typeof says === 'string') assert.ok(answer.body.message.includes(says), `message "${answer.body.message}" says "${says}"`);
  else assert.match(answer.body.message, says);
  assert.equal(JSON.stringify(await unchanged()), beforeState, 'a refused request changes nothing');
  return answer.body.message as string;
}

describe('flag variants', () => {
  test('a flag without variants answers as before plus variants [] and off_variant null', async () => {
    const project = await newProject(server, user);
    const flag = await newFlag(server, user, project, { key: 'plain', enabled: true, rollout_percentage: 20 });
    const expectedKeys = ['id', 'project_id', 'environment_id', 'name', 'key', 'description', 'enabled', 'rollout_percentage', 'everyone_else', 'variants', 'off_variant', 'bucketing_key', 'prerequisites', 'created_at', 'updated_at'];
    for (const answer of [flag, (await api('GET', `${flagsPath(project)}/${flag.id}`)).body, (await api('GET', flagsPath(project))).body[0]]) {
      assert.deepEqual(Object.keys(answer), expectedKeys);
      assert.deepEqual(answer.variants, []);
      assert.equal(answer.off_variant, null);
    }
    const rule = await api('POST', rulesPath(project, flag.id), { rule_type: 'user_id', rule_value: 'u1' });
    assert.equal(rule.status, 201);
    assert.deepEqual(Object.keys(rule.body), ['id', 'flag_id', 'rule_type', 'rule_value', 'conditions', 'enabled', 'priority', 'rollout_percentage', 'serve', 'variant', 'created_at', 'updated_at']);
    assert.equal(rule.body.variant, null);
    // Variants and off_variant sent as none are accepted and change nothing.
    const same = await api('PUT', `${flagsPath(project)}/${flag.id}`, { variants: [], off_variant: null });
    assert.equal(same.status, 200);
    assert.deepEqual({ ...same.body, updated_at: null }, { ...(await api('GET', `${flagsPath(project)}/${flag.id}`)).body, updated_at: null });
  });

  test('create with variants: kept in order with descriptions; GET, list and PUT answer them', async () => {
    const project = await newProject(server, user);
    const flag = await variantFlag(project);
    assert.deepEqual(flag.variants, THREE);
    assert.equal(flag.off_variant, 'control');
    assert.deepEqual((await api('GET', `${flagsPath(project)}/${flag.id}`)).body.variants, THREE);
    assert.deepEqual((await api('GET', flagsPath(project))).body[0].variants, THREE);

    // Description null or absent: no description member.
    const put = await api('PUT', `${flagsPath(project)}/${flag.id}`, { variants: [{ key: 'control', value: 'Buy', weight: 1000, description: null }] });
    assert.equal(put.status, 200, put.text);
    assert.deepEqual(put.body.variants, [{ key: 'control', value: 'Buy', weight: 1000 }]);
    assert.equal(put.body.off_variant, 'control', 'off_variant left out stays while its variant does');
  });

  test('values of every JSON type round-trip: numbers at ±(2^53−1), booleans, objects and arrays as one type, 8 KiB exactly', async () => {
    const project = await newProject(server, user);
    const cases: { key: string; variants: { key: string; value: unknown; weight: number }[] }[] = [
      { key: 'limit', variants: [{ key: 'low', value: -9007199254740991, weight: 1 }, { key: 'high', value: 9007199254740991, weight: 998 }, { key: 'half', value: 0.5, weight: 1 }] },
      { key: 'switch', variants: [{ key: 'yes', value: true, weight: 1000 }, { key: 'no', value: false, weight: 0 }] },
      { key: 'config', variants: [{ key: 'obj', value: { retries: 3, hosts: ['a', 'b'], nested: { deep: [1, { x: null }] } }, weight: 600 }, { key: 'arr', value: [1, 'two', null], weight: 400 }] },
      // {"s":"…"} of exactly 8,192 bytes, with a two-byte character in it.
      { key: 'big', variants: [{ key: 'full', value: { s: 'é' + 'a'.repeat(8192 - 8 - 2) }, weight: 1000 }] },
    ];
    assert.equal(Buffer.byteLength(JSON.stringify(cases[3]!.variants[0]!.value)), 8192);
    for (const { key, variants } of cases) {
      const created = await api('POST', flagsPath(project), { key, name: key, variants, off_variant: variants[0]!.key });
      assert.equal(created.status, 201, `${key}: ${created.text.slice(0, 300)}`);
      assert.deepEqual(created.body.variants, variants, key);
      assert.deepEqual((await api('GET', `${flagsPath(project)}/${created.body.id}`)).body.variants, variants, `${key} as stored`);
    }
  });

  test('every validation error is a 400 naming the variant or field, and creates nothing', async () => {
    const project = await newProject(server, user);
    const flags = () => api('GET', flagsPath(project)).then((answer) => answer.body);
    const v = (key: string, value: unknown, weight: number) => ({ key, value, weight });
    const LEFT_OUT = Symbol('left out');
    const create = (variants: unknown, off_variant: unknown, says: string | RegExp) =>
      refused('POST', flagsPath(project), { key: 'f', name: 'F', variants, ...(off_variant === LEFT_OUT ? {} : { off_variant }) }, says, flags);

    await create(Array.from({ length: 51 }, (_, i) => v(`v${i}`, 'x', i === 0 ? 1000 : 0)), 'v0', /50/);
    await create([v('Bad Key', 'x', 1000)], 'Bad Key', 'variants/0/key');
    await create([v('1st', 'x', 1000)], '1st', 'variants/0/key');
    await create([v('a', 'x', 500), v('a', 'y', 500)], 'a', 'variants[1] ("a"): the key "a" is used by another variant');
    await create([v('a', 'x'.repeat(8191), 1000)], 'a', 'variants[0] ("a").value must be at most 8192 bytes');
    await create([v('a', { s: 'é'.repeat(4094) }, 1000)], 'a', 'at most 8192 bytes');
    await create([v('a', { n: [1, 9007199254740992] }, 1000)], 'a', 'variants[0] ("a").value holds the number 9007199254740992');
    await create([v('a', -9007199254740992, 1000)], 'a', 'outside ±(2^53−1)');
    // JSON's 1e400 is Infinity once parsed.
    await refused('POST', flagsPath(project), '{"key":"f","name":"F","variants":[{"key":"a","value":[1e400],"weight":1000}],"off_variant":"a"}', 'holds the number Infinity', flags);
    await create([v('a', 'x', 500), v('b', 1, 500)], 'a', 'variants[1] ("b").value is a number, but variant "a" is a string');
    await create([v('a', true, 500), v('b', 'true', 500)], 'a', 'all values of a flag have one JSON type');
    await create([v('a', [1], 500), v('b', 1, 500)], 'a', 'is a number, but variant "a" is a object or array');
    await create([v('a', null, 1000)], 'a', 'variants[0] ("a").value must be a string, number, boolean, object or array');
    await create([{ key: 'a', weight: 1000 }], 'a', 'value');
    await create([v('a', 'x', 1001)], 'a', 'variants/0/weight');
    await create([v('a', 'x', -1)], 'a', 'variants/0/weight');
    await create([v('a', 'x', 999.5), v('b', 'y', 0.5)], 'a', 'variants/0/weight');
    await create([{ key: 'a', value: 'x', weight: '1000' }], 'a', 'variants/0/weight');
    await create([v('a', 'x', 500), v('b', 'y', 499)], 'a', 'must sum to exactly 1000 (0.1% steps); they sum to 999');
    await create([v('a', 'x', 1000), v('b', 'y', 1)], 'a', 'they sum to 1001');
    await create([v('a', 'x', 1000)], LEFT_OUT, 'off_variant is required when the flag has variants');
    await create([v('a', 'x', 1000)], null, 'off_variant is required');
    await create([v('a', 'x', 1000)], 'z', 'off_variant "z" is not one of the flag\'s variants ("a")');
    await create([], 'a', 'off_variant "a" names no variant: the flag has no variants');
    await create(undefined, 'a', 'off_variant "a" names no variant');
    await create({ a: 1 }, 'a', 'variants');
    // Deep nesting inside 1 MiB is a 400, not a stack overflow.
    const deep = `{"key":"f","name":"F","variants":[{"key":"a","value":${'['.repeat(200_000)}${']'.repeat(200_000)},"weight":1000}],"off_variant":"a"}`;
    await refused('POST', flagsPath(project), deep, 'at most 8192 bytes', flags);
    assert.deepEqual(await flags(), []);
  });

  test('PUT: changing variants keeps rules and off_variant consistent; [] clears off_variant only when no rule names a variant', async () => {
    const project = await newProject(server, user);
    const flag = await variantFlag(project);
    const flagPath = `${flagsPath(project)}/${flag.id}`;
    const current = () => Promise.all([api('GET', flagPath), api('GET', rulesPath(project, flag.id))]).then(([f, r]) => [f.body, r.body]);

    // off_variant's variant gone, off_variant left out / sent as another missing key / null.
    const twoNew = [{ key: 'short', value: 'Buy now', weight: 600 }, { key: 'long', value: 'Buy it now', weight: 400 }];
    await refused('PUT', flagPath, { variants: twoNew }, 'off_variant "control" is not one of the new variants: send off_variant with them', current);
    await refused('PUT', flagPath, { variants: twoNew, off_variant: 'control' }, 'off_variant "control" is not one of the flag\'s variants', current);
    await refused('PUT', flagPath, { variants: twoNew, off_variant: null }, 'off_variant is required', current);
    await refused('PUT', flagPath, { off_variant: 'nope' }, 'off_variant "nope" is not one of the flag\'s variants', current);
    await refused('PUT', flagPath, { off_variant: null }, 'off_variant is required', current);

    const renamed = await api('PUT', flagPath, { variants: twoNew, off_variant: 'long' });
    assert.equal(renamed.status, 200, renamed.text);
    assert.deepEqual([renamed.body.variants, renamed.body.off_variant], [twoNew, 'long']);
    const offOnly = await api('PUT', flagPath, { off_variant: 'short' });
    assert.equal(offOnly.body.off_variant, 'short');

    // A rule naming a variant pins it: removing that variant, or all, is 400 naming the rule.
    const rule = await api('POST', rulesPath(project, flag.id), { rule_type: 'user_id', rule_value: 'vip', priority: 7, variant: 'long' });
    assert.equal(rule.status, 201, rule.text);
    assert.equal(rule.body.variant, 'long');
    const withoutLong = [{ key: 'short', value: 'Buy now', weight: 1000 }];
    await refused('PUT', flagPath, { variants: withoutLong }, `Rule ${rule.body.id} (user_id, priority 7) serves variant "long", but the new variants do not have it`, current);
    await refused('PUT', flagPath, { variants: [], off_variant: null }, `Rule ${rule.body.id} (user_id, priority 7) serves variant "long", but the flag would have no variants`, current);
    await refused('PUT', flagPath, { variants: [] }, `Rule ${rule.body.id}`, current);
    await refused('PUT', flagPath, { variants: [], off_variant: 'short' }, 'off_variant "short" names no variant', current);

    // Clear the rule's variant, then remove every variant: off_variant clears with them.
    const cleared = await api('PUT', `${rulesPath(project, flag.id)}/${rule.body.id}`, { variant: null });
    assert.equal(cleared.status, 200, cleared.text);
    assert.equal(cleared.body.variant, null);
    const none = await api('PUT', flagPath, { variants: [] });
    assert.equal(none.status, 200, none.text);
    assert.deepEqual([none.body.variants, none.body.off_variant], [[], null]);
    const stored = await server.database.db.selectFrom('flags').select(['variants', 'off_variant']).where('id', '=', flag.id).executeTakeFirstOrThrow();
    assert.deepEqual(stored, { variants: null, off_variant: null }, 'no variants is stored as null');
  });

  test('a rule\'s variant: one of its flag\'s, not on a rule that serves false; null clears it', async () => {
    const project = await newProject(server, user);
    const flag = await variantFlag(project);
    const plain = await newFlag(server, user, project, { key: 'plain' });
    const rules = () => api('GET', rulesPath(project, flag.id)).then((answer) => answer.body);
    await refused('POST', rulesPath(project, flag.id), { rule_type: 'user_id', rule_value: 'u', variant: 'medium' }, 'variant "medium" is not one of flag "button"\'s variants ("control", "short", "long")', rules);
    await refused('POST', rulesPath(project, flag.id), { rule_type: 'user_id', rule_value: 'u', variant: 'short', serve: false }, 'a rule that serves false gives the flag\'s off_variant', rules);
    await refused('POST', rulesPath(project, flag.id), { rule_type: 'user_id', rule_value: 'u', variant: 5 }, 'variant', rules);
    await refused('POST', rulesPath(project, plain.id), { rule_type: 'user_id', rule_value: 'u', variant: 'short' }, 'variant "short": flag "plain" has no variants', () => api('GET', rulesPath(project, plain.id)).then((answer) => answer.body));

    const conditions = [{ attribute: 'plan', operator: 'IN', values: ['pro'] }];
    const created = await api('POST', rulesPath(project, flag.id), { rule_type: 'conditions', conditions, variant: 'short' });
    assert.equal(created.status, 201, created.text);
    assert.equal(created.body.variant, 'short');
    const rulePath = `${rulesPath(project, flag.id)}/${created.body.id}`;
    await refused('PUT', rulePath, { variant: 'nope' }, 'variant "nope" is not one of flag "button"\'s variants', rules);
    await refused('PUT', rulePath, { serve: false }, 'a rule that serves false', rules);
    const moved = await api('PUT', rulePath, { variant: 'long', priority: 3 });
    assert.deepEqual([moved.status, moved.body.variant, moved.body.priority], [200, 'long', 3]);
    const kept = await api('PUT', rulePath, { enabled: false });
    assert.equal(kept.body.variant, 'long', 'a field left out stays');
    const off = await api('PUT', rulePath, { serve: false, variant: null });
    assert.deepEqual([off.status, off.body.serve, off.body.variant], [200, false, null]);
    assert.equal((await api('GET', rulePath)).body.variant, null);
  });
});

describe('audit and webhooks', () => {
  test('flag.created/updated and rule.created/updated carry the variants before and after; a weight-only change is recorded; a webhook delivers it', async () => {
    const project = await newProject(server, user);
    const hook = await api('POST', `/api/projects/${project.id}/webhooks`, { url: receiver.url, events: ['flag.updated', 'rule.updated'] });
    assert.equal(hook.status, 201, hook.text);
    const flag = await variantFlag(project, 'audited');
    const flagPath = `${flagsPath(project)}/${flag.id}`;
    const reweighted = THREE.map((variant) => ({ ...variant, weight: variant.key === 'control' ? 400 : variant.key === 'short' ? 400 : 200 }));
    assert.equal((await api('PUT', flagPath, { variants: reweighted })).status, 200);
    const rule = await api('POST', rulesPath(project, flag.id), { rule_type: 'user_id', rule_value: 'u1', variant: 'short' });
    assert.equal((await api('PUT', `${rulesPath(project, flag.id)}/${rule.body.id}`, { variant: 'long' })).status, 200);
    // Sending the same variants again changes nothing and records nothing.
    assert.equal((await api('PUT', flagPath, { variants: reweighted, off_variant: 'control' })).status, 200);
    // Switching it off, with the same variants sent along, is still a toggle; the variants stay.
    const switched = await api('PUT', flagPath, { enabled: false, variants: reweighted });
    assert.deepEqual([switched.body.enabled, switched.body.variants, switched.body.off_variant], [false, reweighted, 'control']);

    const events = (await api('GET', `/api/projects/${project.id}/audit?resource_id=${flag.id}`)).body.items;
    assert.deepEqual(events.map((event: { action: string }) => event.action), ['flag.toggled', 'flag.updated', 'flag.created']);
    const [, updated, created] = events;
    assert.equal(created.before, null);
    assert.deepEqual([created.after.variants, created.after.off_variant], [THREE, 'control']);
    assert.deepEqual(updated.before.variants, THREE);
    assert.deepEqual(updated.after.variants, reweighted);
    assert.deepEqual([updated.before.off_variant, updated.after.off_variant], ['control', 'control']);

    const ruleEvents = (await api('GET', `/api/projects/${project.id}/audit?resource_id=${rule.body.id}`)).body.items;
    assert.deepEqual(ruleEvents.map((event: { action: string }) => event.action), ['rule.updated', 'rule.created']);
    assert.equal(ruleEvents[1].after.variant, 'short');
    assert.deepEqual([ruleEvents[0].before.variant, ruleEvents[0].after.variant], ['short', 'long']);

    await eventually(() => receiver.of('flag.updated').some((r) => r.body.includes(flag.id)) && receiver.of('rule.updated').some((r) => r.body.includes(rule.body.id)), 'the webhook deliveries');
    const delivered = JSON.parse(receiver.of('flag.updated').find((r) => r.body.includes(flag.id))!.body);
    assert.deepEqual([delivered.before.variants, delivered.after.variants], [THREE, reweighted]);
    const ruleDelivered = JSON.parse(receiver.of('rule.updated').find((r) => r.body.includes(rule.body.id))!.body);
    assert.deepEqual([ruleDelivered.before.variant, ruleDelivered.after.variant], ['short', 'long']);
  });

  test('a change only inside a rule\'s conditions is recorded too', async () => {
    const project = await newProject(server, user);
    const flag = await newFlag(server, user, project, { key: 'cond' });
    const rule = await api('POST', rulesPath(project, flag.id), { rule_type: 'conditions', conditions: [{ attribute: 'plan', operator: 'IN', values: ['pro'] }] });
    assert.equal((await api('PUT', `${rulesPath(project, flag.id)}/${rule.body.id}`, { conditions: [{ attribute: 'plan', operator: 'IN', values: ['team'] }] })).status, 200);
    const events = (await api('GET', `/api/projects/${project.id}/audit?resource_id=${rule.body.id}`)).body.items;
    assert.deepEqual(events.map((event: { action: string }) => event.action), ['rule.updated', 'rule.created']);
    assert.deepEqual([events[0].before.conditions[0].values, events[0].after.conditions[0].values], [['pro'], ['team']]);
  });
});

describe('across environments', () => {
  test('copy carries variants, off_variant and each rule\'s variant, also with overwrite', async () => {
    const project = await newProject(server, user);
    const flag = await variantFlag(project);
    for (const body of [
      { rule_type: 'user_id', rule_value: 'a', priority: 2, variant: 'long' },
      { rule_type: 'user_id', rule_value: 'b', priority: 1 },
      { rule_type: 'user_id', rule_value: 'c', priority: 0, variant: 'short' },
    ]) assert.equal((await api('POST', rulesPath(project, flag.id), body)).status, 201);

    const copyPath = `${flagsPath(project)}/${flag.id}/copy`;
    const copied = await api('POST', copyPath, { target_environment_id: project.staging });
    assert.equal(copied.status, 201, copied.text);
    assert.deepEqual([copied.body.variants, copied.body.off_variant], [THREE, 'control']);
    const copiedRules = (await api('GET', rulesPath(project, copied.body.id, project.staging))).body;
    assert.deepEqual(copiedRules.map((rule: { rule_value: string; variant: string | null }) => [rule.rule_value, rule.variant]), [['a', 'long'], ['b', null], ['c', 'short']]);

    // Overwrite a staging flag that has other variants and a rule naming one of them.
    const other = await api('POST', flagsPath(project, project.staging), { key: 'other', name: 'other', variants: [{ key: 'x', value: 'X', weight: 1000 }], off_variant: 'x' });
    await api('POST', rulesPath(project, other.body.id, project.staging), { rule_type: 'user_id', rule_value: 'z', variant: 'x' });
    const source = await api('POST', flagsPath(project), { key: 'other', name: 'other', variants: [{ key: 'n', value: 1, weight: 250 }, { key: 'm', value: 2, weight: 750 }], off_variant: 'm' });
    await api('POST', rulesPath(project, source.body.id), { rule_type: 'user_id', rule_value: 'y', variant: 'n' });
    const overwritten = await api('POST', `${flagsPath(project)}/${source.body.id}/copy`, { target_environment_id: project.staging, overwrite: true });
    assert.equal(overwritten.status, 200, overwritten.text);
    assert.equal(overwritten.body.id, other.body.id);
    assert.deepEqual([overwritten.body.variants, overwritten.body.off_variant], [source.body.variants, 'm']);
    const replacedRules = (await api('GET', rulesPath(project, other.body.id, project.staging))).body;
    assert.deepEqual(replacedRules.map((rule: { rule_value: string; variant: string | null }) => [rule.rule_value, rule.variant]), [['y', 'n']]);
    const audit = (await api('GET', `/api/projects/${project.id}/audit?resource_id=${other.body.id}`)).body.items[0];
    assert.deepEqual([audit.action, audit.before.variants[0].key, audit.after.variants.map((v: { key: string }) => v.key)], ['flag.updated', 'x', ['n', 'm']]);

    // A flag without variants copied over a variant flag clears them.
    const bare = await newFlag(server, user, project, { key: 'bare' });
    const pinned = await variantFlag(project, 'bare', project.staging);
    await api('POST', rulesPath(project, pinned.id, project.staging), { rule_type: 'user_id', rule_value: 'p', variant: 'long' });
    const cleared = await api('POST', `${flagsPath(project)}/${bare.id}/copy`, { target_environment_id: project.staging, overwrite: true });
    assert.equal(cleared.status, 200, cleared.text);
    assert.deepEqual([cleared.body.id, cleared.body.variants, cleared.body.off_variant], [pinned.id, [], null]);
    assert.deepEqual((await api('GET', rulesPath(project, pinned.id, project.staging))).body, []);
  });

  test('the side-by-side view shows each environment\'s distribution: variant keys with weights, and off_variant', async () => {
    const project = await newProject(server, user);
    await variantFlag(project, 'button');
    await api('POST', flagsPath(project, project.staging), { key: 'button', name: 'button', variants: [{ key: 'control', value: 'Buy', weight: 1000 }, { key: 'short', value: 'Buy now', weight: 0 }], off_variant: 'short' });
    await newFlag(server, user, project, { key: 'plain' });
    const list = (await api('GET', `/api/projects/${project.id}/flags`)).body;
    const [button, plain] = list;
    assert.deepEqual(button.environments.production.variants, [{ key: 'control', weight: 500 }, { key: 'short', weight: 300 }, { key: 'long', weight: 200 }]);
    assert.equal(button.environments.production.off_variant, 'control');
    assert.deepEqual(button.environments.staging.variants, [{ key: 'control', weight: 1000 }, { key: 'short', weight: 0 }]);
    assert.equal(button.environments.staging.off_variant, 'short');
    assert.deepEqual([plain.environments.production.variants, plain.environments.production.off_variant], [[], null]);
  });
});
