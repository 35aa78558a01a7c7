/**
 * Prerequisites (docs/prerequisites.md) through HTTP, on the database of the pass: what may be
 * saved (every 400 and 409), the field on every view of a flag, copy, audit, and what each
 * evaluation surface answers for met, unmet, missing, chained and variant-bound parents.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { evaluate, eventually, flagsPath, newFlag, newProject, newUser, request, startServer, type TestProject, type TestServer, type TestUser } from './harness.js';

let server: TestServer;
let user: TestUser;

before(async () => {
  server = await startServer();
  user = await newUser(server, 'prerequisites');
});
after(() => server.close());

const api = (method: string, path: string, body?: unknown) => request(server, method, path, { token: user.token, body });
const put = (project: TestProject, id: string, body: unknown, envId = project.production) => api('PUT', `${flagsPath(project, envId)}/${id}`, body);
async function rulesetOf(project: TestProject) {
  const created = await api('POST', '/api/tokens', { name: 'local', project_id: project.id, role: 'viewer' });
  assert.equal(created.status, 201, created.text);
  return request(server, 'GET', '/sdk/v1/ruleset?environment=production', { headers: { authorization: `Bearer ${created.body.token}` } });
}
const ofrep = (project: TestProject, path: string, context: Record<string, unknown> = {}) => request(server, 'POST', `/ofrep/v1/evaluate/flags${path}`, { headers: { 'x-sdk-key': project.sdk_key }, body: { context } });

describe('what may be saved', () => {
  let project: TestProject;
  const ids: Record<string, string> = {};

  before(async () => {
    project = await newProject(server, user, 'Prerequisites saved');
    ids.payments = (await newFlag(server, user, project, { key: 'payments', enabled: true })).id;
    ids.experiment = (await newFlag(server, user, project, { key: 'experiment', enabled: true, variants: [{ key: 'a', value: 'A', weight: 500 }, { key: 'b', value: 'B', weight: 500 }], off_variant: 'a' })).id;
  });

  test('created with prerequisites; GET, the list and the side-by-side view show them', async () => {
    const created = await api('POST', flagsPath(project), { name: 'Checkout', key: 'checkout', prerequisites: [{ flag_key: 'payments' }, { flag_key: 'experiment', variants: ['b'] }] });
    assert.equal(created.status, 201, created.text);
    ids.checkout = created.body.id;
    const expected = [{ flag_key: 'payments', enabled: true }, { flag_key: 'experiment', enabled: true, variants: ['b'] }];
    assert.deepEqual(created.body.prerequisites, expected);
    assert.deepEqual((await api('GET', `${flagsPath(project)}/${ids.checkout}`)).body.prerequisites, expected);
    const listed = (await api('GET', flagsPath(project))).body;
    const items = Array.isArray(listed) ? listed : listed.items;
    assert.deepEqual(items.find((flag: { key: string }) => flag.key === 'payments').prerequisites, []);
    const across = (await api('GET', `/api/projects/${project.id}/flags`)).body;
    assert.deepEqual(across.find((row: { key: string }) => row.key === 'checkout').environments.production.prerequisites, expected);
  });

  test('a parent that does not exist yet is allowed (never met until it does)', async () => {
    const created = await api('POST', flagsPath(project), { name: 'Later', key: 'later', prerequisites: [{ flag_key: 'not_yet' }] });
    assert.equal(created.status, 201, created.text);
    ids.later = created.body.id;
  });

  test('400: self, cycle (the chain named), unknown variant, empty variants, variants with enabled false, more than 10', async () => {
    const self = await put(project, ids.payments!, { prerequisites: [{ flag_key: 'payments' }] });
    assert.equal(self.status, 400);
    assert.match(self.body.message, /own prerequisite \(payments → payments\)/);
    const cycle = await put(project, ids.payments!, { prerequisites: [{ flag_key: 'checkout' }] });
    assert.equal(cycle.status, 400);
    assert.match(cycle.body.message, /cycle \(payments → checkout → payments\)/);
    const unknown = await put(project, ids.checkout!, { prerequisites: [{ flag_key: 'experiment', variants: ['z'] }] });
    assert.equal(unknown.status, 400);
    assert.match(unknown.body.message, /experiment has no variant "z"/);
    assert.equal((await put(project, ids.checkout!, { prerequisites: [{ flag_key: 'experiment', variants: [] }] })).status, 400);
    const offWithVariants = await put(project, ids.checkout!, { prerequisites: [{ flag_key: 'experiment', enabled: false, variants: ['a'] }] });
    assert.equal(offWithVariants.status, 400);
    assert.match(offWithVariants.body.message, /only with enabled true/);
    assert.equal((await put(project, ids.checkout!, { prerequisites: Array.from({ length: 11 }, (_, i) => ({ flag_key: `p${i}` })) })).status, 400);
    assert.equal((await put(project, ids.checkout!, { prerequisites: [{ flag_key: 'Not A Key' }] })).status, 400);
    // Nothing changed.
    assert.deepEqual((await api('GET', `${flagsPath(project)}/${ids.checkout}`)).body.prerequisites.length, 2);
    assert.deepEqual((await api('GET', `${flagsPath(project)}/${ids.payments}`)).body.prerequisites, []);
  });

  test('400: a chain deeper than 5 links, the chain named', async () => {
    let previous = 'd0';
    await newFlag(server, user, project, { key: 'd0' });
    for (let i = 1; i <= 5; i++) {
      await newFlag(server, user, project, { key: `d${i}`, prerequisites: [{ flag_key: previous }] });
      previous = `d${i}`;
    }
    const deep = await api('POST', flagsPath(project), { name: 'd6', key: 'd6', prerequisites: [{ flag_key: 'd5' }] });
    assert.equal(deep.status, 400);
    assert.match(deep.body.message, /deeper than 5 links \(d6 → d5 → d4 → d3 → d2 → d1 → d0\)/);
  });

  test('400: removing a variant a dependent names', async () => {
    const refused = await put(project, ids.experiment!, { variants: [{ key: 'a', value: 'A', weight: 1000 }], off_variant: 'a' });
    assert.equal(refused.status, 400);
    assert.match(refused.body.message, /checkout needs variant "b" of experiment/);
  });

  test('409: deleting or re-keying a flag that others name, the dependents named', async () => {
    const deleted = await api('DELETE', `${flagsPath(project)}/${ids.payments}`);
    assert.equal(deleted.status, 409);
    assert.match(deleted.body.message, /payments cannot be deleted: checkout names it/);
    const rekeyed = await put(project, ids.payments!, { key: 'payments_v2' });
    assert.equal(rekeyed.status, 409);
    assert.match(rekeyed.body.message, /checkout names it/);
    // Renaming (not re-keying) is fine.
    assert.equal((await put(project, ids.payments!, { name: 'Payments API' })).status, 200);
  });

  test('audit: before and after carry prerequisites', async () => {
    assert.equal((await put(project, ids.checkout!, { prerequisites: [{ flag_key: 'payments' }] })).status, 200);
    const events = (await api('GET', `/api/projects/${project.id}/audit?resource_id=${ids.checkout}`)).body.items;
    const updated = events.find((event: { action: string }) => event.action === 'flag.updated');
    assert.ok(updated, JSON.stringify(events.map((e: { action: string }) => e.action)));
    assert.equal(updated.before.prerequisites.length, 2);
    assert.deepEqual(updated.after.prerequisites, [{ flag_key: 'payments', enabled: true }]);
  });

  test('scheduled changes carry prerequisites, checked when saved', async () => {
    const at = new Date(Date.now() + 3_600_000).toISOString();
    const schedules = `${flagsPath(project)}/${ids.later}/schedules`;
    const refused = await api('POST', schedules, { at, change: { prerequisites: [{ flag_key: 'later' }] } });
    assert.equal(refused.status, 400, refused.text);
    assert.match(refused.body.message, /own prerequisite \(later → later\)/);
    const saved = await api('POST', schedules, { at, change: { prerequisites: [{ flag_key: 'payments', enabled: false }] } });
    assert.equal(saved.status, 201, saved.text);
    assert.deepEqual(saved.body.change.prerequisites, [{ flag_key: 'payments', enabled: false }]);
    assert.equal((await api('DELETE', `${schedules}/${saved.body.id}`)).status, 204);
  });

  test('copy: 409 when a parent is missing in the target, then copied once it is there', async () => {
    const copyPath = `${flagsPath(project)}/${ids.checkout}/copy`;
    const refused = await api('POST', copyPath, { target_environment_id: project.staging });
    assert.equal(refused.status, 409);
    assert.match(refused.body.message, /needs payments/);
    assert.equal((await api('POST', `${flagsPath(project)}/${ids.payments}/copy`, { target_environment_id: project.staging })).status, 201);
    const copied = await api('POST', copyPath, { target_environment_id: project.staging });
    assert.equal(copied.status, 201, copied.text);
    assert.deepEqual(copied.body.prerequisites, [{ flag_key: 'payments', enabled: true }]);
  });
});

describe('every evaluation surface answers the same', () => {
  let project: TestProject;
  const ids: Record<string, string> = {};

  before(async () => {
    project = await newProject(server, user, 'Prerequisites evaluated');
    ids.api = (await newFlag(server, user, project, { key: 'new_payment_api', enabled: true })).id;
    ids.checkout = (await newFlag(server, user, project, { key: 'new_checkout', enabled: true, prerequisites: [{ flag_key: 'new_payment_api' }] })).id;
    ids.upsell = (await newFlag(server, user, project, { key: 'upsell', enabled: true, prerequisites: [{ flag_key: 'new_checkout' }] })).id;
    ids.orphan = (await newFlag(server, user, project, { key: 'orphan', enabled: true, prerequisites: [{ flag_key: 'gone' }] })).id;
    ids.exp = (await newFlag(server, user, project, { key: 'exp', enabled: true, variants: [{ key: 'a', value: 'A', weight: 500 }, { key: 'b', value: 'B', weight: 500 }], off_variant: 'a' })).id;
    ids.pricing = (await newFlag(server, user, project, { key: 'pricing', enabled: true, prerequisites: [{ flag_key: 'exp', variants: ['b'] }] })).id;
    ids.legacy = (await newFlag(server, user, project, { key: 'legacy', enabled: true, prerequisites: [{ flag_key: 'new_payment_api', enabled: false }] })).id;
  });

  test('evaluate: met, chained, missing, variant-bound, required off; a parent toggled changes the child', async () => {
    const on = (await evaluate(server, project.sdk_key, 'production', { user_id: 'u1' })).body.flags;
    assert.deepEqual(on.new_checkout, { enabled: true, reason: 'Flag enabled globally' });
    assert.deepEqual(on.upsell, { enabled: true, reason: 'Flag enabled globally' });
    assert.deepEqual(on.orphan, { enabled: false, reason: 'Prerequisite gone not met' });
    assert.deepEqual(on.legacy, { enabled: false, reason: 'Prerequisite new_payment_api not met' });
    for (let i = 0; i < 20; i++) {
      const flags = (await evaluate(server, project.sdk_key, 'production', { user_id: `v${i}` })).body.flags;
      assert.equal(flags.pricing!.enabled, flags.exp!.variant === 'b', `v${i}`);
      if (!flags.pricing!.enabled) assert.equal(flags.pricing!.reason, 'Prerequisite exp not met');
    }

    assert.equal((await api('POST', `${flagsPath(project)}/${ids.api}/toggle`)).status, 200);
    await eventually(async () => (await evaluate(server, project.sdk_key, 'production', { user_id: 'u1' })).body.flags.new_checkout!.enabled === false, 'the child switched off');
    const off = (await evaluate(server, project.sdk_key, 'production', { user_id: 'u1' })).body.flags;
    assert.deepEqual(off.new_checkout, { enabled: false, reason: 'Prerequisite new_payment_api not met' });
    assert.deepEqual(off.upsell, { enabled: false, reason: 'Prerequisite new_checkout not met' });
    assert.deepEqual(off.legacy, { enabled: true, reason: 'Flag enabled globally' });

    // OFREP single and bulk.
    const single = await ofrep(project, '/upsell', { targetingKey: 'u1' });
    assert.equal(single.status, 200, single.text);
    assert.deepEqual(single.body, { key: 'upsell', value: false, variant: 'off', reason: 'PREREQUISITE_FAILED', metadata: { reason: 'Prerequisite new_checkout not met', prerequisite: 'new_checkout' } });
    const bulk = (await ofrep(project, '', { targetingKey: 'u1' })).body.flags;
    const byKey = Object.fromEntries(bulk.map((flag: { key: string }) => [flag.key, flag]));
    assert.deepEqual(byKey.new_checkout.metadata, { reason: 'Prerequisite new_payment_api not met', prerequisite: 'new_payment_api' });
    assert.equal(byKey.orphan.reason, 'PREREQUISITE_FAILED');
    assert.equal(byKey.legacy.reason, 'STATIC');

    // Explain (try-it).
    const explained = await api('POST', `/api/projects/${project.id}/environments/${project.production}/explain`, { context: { user_id: 'u1' } });
    assert.equal(explained.status, 200, explained.text);
    assert.deepEqual(explained.body.flags.upsell, { enabled: false, reason: 'Prerequisite new_checkout not met', rule: null, prerequisite: 'new_checkout' });
    assert.equal(explained.body.flags.legacy.prerequisite, null);

    // History: the dependent's row carries its own reason.
    await eventually(async () => {
      const items = (await api('GET', `/api/projects/${project.id}/evaluations?limit=200&flag_key=upsell`)).body.items ?? [];
      return items.some((item: { reason: string }) => item.reason === 'Prerequisite new_checkout not met');
    }, 'history names the unmet parent');

    assert.equal((await api('POST', `${flagsPath(project)}/${ids.api}/toggle`)).status, 200);
    await eventually(async () => (await evaluate(server, project.sdk_key, 'production', { user_id: 'u1' })).body.flags.upsell!.enabled === true, 'the chain switched on again');
  });

  test('the ruleset carries prerequisites, format 2', async () => {
    const ruleset = await rulesetOf(project);
    assert.equal(ruleset.status, 200, ruleset.text);
    assert.equal(ruleset.body.format, 2);
    const byKey = Object.fromEntries(ruleset.body.flags.map((flag: { key: string }) => [flag.key, flag]));
    assert.deepEqual(byKey.pricing.prerequisites, [{ flagKey: 'exp', enabled: true, variants: ['b'] }]);
    assert.equal(byKey.new_payment_api.prerequisites, undefined);
    const plain = await newProject(server, user, 'No prerequisites');
    await newFlag(server, user, plain, { key: 'x', enabled: true });
    assert.equal((await rulesetOf(plain)).body.format, 1, 'format 1 where no flag has prerequisites');
  });
});
