/**
 * Experiments' API (docs/experiments.md): the project's metrics, and per environment experiments
 * that go draft → running → stopped, with each arm's expected share fixed at start; refusals,
 * roles, the audit log and a webhook. Over HTTP against the real server, on SQLite and PostgreSQL.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { addMember, eventually, flagsPath, newFlag, newProject, newUser, request, startServer, type TestProject, type TestServer, type TestUser } from './harness.js';
import { assertError, assertIsoUtc, assertNoContent } from './resources.js';
import { auditEvents } from './team.js';
import { Receiver } from './webhook-receiver.js';

let server: TestServer;
let receiver: Receiver;
let owner: TestUser;
let viewer: TestUser;
let project: TestProject;

before(async () => {
  receiver = await new Receiver().start();
  server = await startServer({ WEBHOOK_ALLOW_PRIVATE: 'true' }, { webhooks: { pollIntervalMs: 50, timeoutMs: 2000, retryDelaysMs: [50, 50, 50, 50] } });
  owner = await newUser(server, 'experimenter');
  viewer = await newUser(server, 'onlooker');
  project = await newProject(server, owner, 'Experiments');
  await addMember(server, owner, project.id, viewer, 'viewer');
});
after(async () => {
  await server?.close();
  await receiver?.close();
});

const metricsPath = () => `/api/projects/${project.id}/metrics`;
const experimentsPath = (envId = project.production) => `/api/projects/${project.id}/environments/${envId}/experiments`;
const as = (user: TestUser) => (method: string, path: string, body?: unknown) => request(server, method, path, { token: user.token, ...(body === undefined ? {} : { body }) });
const api = (method: string, path: string, body?: unknown) => as(owner)(method, path, body);

let counter = 0;
async function newMetric(fields: Record<string, unknown> = {}) {
  const created = await api('POST', metricsPath(), { key: `metric-${++counter}`, name: 'Purchases', event: 'purchase', kind: 'conversion', better: 'higher', ...fields });
  assert.equal(created.status, 201, created.text);
  return created.body;
}
/** An on/off flag in a 50 % rollout: two arms with a share. */
const splitFlag = () => newFlag(server, owner, project, { key: `split-${++counter}`, enabled: true, rollout_percentage: 50 });
async function draft(flagId: string, fields: Record<string, unknown> = {}) {
  const metric = await newMetric();
  const created = await api('POST', experimentsPath(), { flag_id: flagId, name: `Experiment ${++counter}`, control: 'off', metrics: [{ metric_id: metric.id, role: 'primary' }], ...fields });
  assert.equal(created.status, 201, created.text);
  return created.body;
}
const start = (id: string) => api('POST', `${experimentsPath()}/${id}/start`);
const stop = (id: string, body: unknown = {}) => api('POST', `${experimentsPath()}/${id}/stop`, body);

describe('metrics', () => {
  test('created, listed by key, read, updated (only the fields sent; null clears window_hours) and deleted', async () => {
    const created = await api('POST', metricsPath(), { key: 'zz-checkout', name: 'Checkout', event: 'checkout.done', kind: 'sum', better: 'higher', window_hours: 72 });
    assert.equal(created.status, 201, created.text);
    const metric = created.body;
    assert.deepEqual({ ...metric, id: undefined, created_at: undefined, updated_at: undefined }, { id: undefined, project_id: project.id, key: 'zz-checkout', name: 'Checkout', event: 'checkout.done', kind: 'sum', better: 'higher', window_hours: 72, created_at: undefined, updated_at: undefined });
    assertIsoUtc(metric.created_at, 'created_at');
    const other = await newMetric({ key: 'aa-errors', kind: 'count', better: 'lower' });
    assert.equal(other.window_hours, null, 'absent window_hours: to the end of the experiment');

    const list = await as(viewer)('GET', metricsPath());
    assert.equal(list.status, 200, list.text);
    const keys = list.body.map((item: { key: string }) => item.key);
    assert.ok(keys.indexOf('aa-errors') < keys.indexOf('zz-checkout'), `listed by key: ${keys}`);
    assert.deepEqual((await as(viewer)('GET', `${metricsPath()}/${metric.id}`)).body, metric);

    const updated = await api('PUT', `${metricsPath()}/${metric.id}`, { name: 'Revenue', window_hours: null });
    assert.equal(updated.status, 200, updated.text);
    assert.equal(updated.body.name, 'Revenue');
    assert.equal(updated.body.window_hours, null);
    assert.equal(updated.body.event, 'checkout.done', 'a field not sent stays');
    assertError(await api('PUT', `${metricsPath()}/${metric.id}`, { key: 'aa-errors' }), 409, 'a key taken');
    assertError(await api('POST', metricsPath(), { key: 'aa-errors', name: 'Again', event: 'x', kind: 'count', better: 'lower' }), 409, 'a key taken');

    assertNoContent(await api('DELETE', `${metricsPath()}/${metric.id}`), 'delete');
    assertError(await api('GET', `${metricsPath()}/${metric.id}`), 404, 'deleted');
  });

  test('400 for a bad body, each field, and nothing saved', async () => {
    const good = { key: 'valid', name: 'Valid', event: 'purchase', kind: 'count', better: 'higher' };
    const bad: [string, Record<string, unknown>][] = [
      ['key missing', { ...good, key: undefined }],
      ['key with capitals', { ...good, key: 'Bad' }],
      ['key starting with a digit', { ...good, key: '1x' }],
      ['name missing', { ...good, name: undefined }],
      ['name empty', { ...good, name: '' }],
      ['event missing', { ...good, event: undefined }],
      ['event with a space', { ...good, event: 'a purchase' }],
      ['event over 100 characters', { ...good, event: 'e'.repeat(101) }],
      ['kind unknown', { ...good, kind: 'median' }],
      ['kind missing', { ...good, kind: undefined }],
      ['better unknown', { ...good, better: 'up' }],
      ['better missing', { ...good, better: undefined }],
      ['window_hours 0', { ...good, window_hours: 0 }],
      ['window_hours not an integer', { ...good, window_hours: 1.5 }],
      ['window_hours a string', { ...good, window_hours: '24' }],
    ];
    for (const [what, body] of bad) assertError(await api('POST', metricsPath(), body), 400, what);
    const metric = await newMetric();
    for (const [what, body] of [['kind unknown', { kind: 'median' }], ['name null', { name: null }], ['event null', { event: null }]] as const) {
      assertError(await api('PUT', `${metricsPath()}/${metric.id}`, body), 400, `PUT: ${what}`);
    }
    assert.deepEqual((await api('GET', `${metricsPath()}/${metric.id}`)).body, metric, 'unchanged');
    assert.ok(!(await api('GET', metricsPath())).body.some((item: { key: string }) => item.key === 'valid'), 'nothing saved');
    // A field the API does not know is ignored, as elsewhere (never a column).
    const extra = await api('POST', metricsPath(), { ...good, key: 'extra', colour: 'red' });
    assert.equal(extra.status, 201, extra.text);
    assert.equal(extra.body.colour, undefined);
    assert.equal((await api('PUT', `${metricsPath()}/${extra.body.id}`, { colour: 'blue' })).status, 200);
  });

  test('409 deleting a metric a running experiment uses; once it stopped, the metric goes and leaves the experiment', async () => {
    const flag = await splitFlag();
    const experiment = await draft(flag.id);
    const metricId = experiment.metrics[0].metric_id;
    assert.equal((await start(experiment.id)).status, 200);
    const refused = await api('DELETE', `${metricsPath()}/${metricId}`);
    assertError(refused, 409, 'in use');
    assert.match(refused.body.message, new RegExp(experiment.name));
    assert.equal((await api('GET', `${metricsPath()}/${metricId}`)).status, 200, 'still there');

    assert.equal((await stop(experiment.id)).status, 200);
    assertNoContent(await api('DELETE', `${metricsPath()}/${metricId}`), 'after the stop');
    assert.deepEqual((await api('GET', `${experimentsPath()}/${experiment.id}`)).body.metrics, []);
  });
});

describe('experiments', () => {
  test('draft → running → stopped, with the defaults, the shares fixed at start, and the flag unchanged', async () => {
    // 30 % rollout over three variants (weights out of 1000), the off variant `control`.
    const flag = await newFlag(server, owner, project, {
      key: 'checkout-copy',
      enabled: true,
      rollout_percentage: 30,
      variants: [{ key: 'control', value: 'Buy', weight: 500 }, { key: 'short', value: 'Buy now', weight: 300 }, { key: 'long', value: 'Buy it now', weight: 200 }],
      off_variant: 'control',
    });
    const primary = await newMetric();
    const guardrail = await newMetric({ event: 'error', kind: 'count', better: 'lower' });
    const created = await api('POST', experimentsPath(), {
      flag_id: flag.id,
      name: 'Shorter checkout copy',
      hypothesis: 'Shorter copy sells more',
      control: 'control',
      metrics: [{ metric_id: primary.id, role: 'primary' }, { metric_id: guardrail.id, role: 'guardrail' }],
    });
    assert.equal(created.status, 201, created.text);
    const experiment = created.body;
    assert.equal(experiment.status, 'draft');
    assert.equal(experiment.flag_key, 'checkout-copy');
    assert.deepEqual(experiment.metrics, [{ metric_id: primary.id, role: 'primary' }, { metric_id: guardrail.id, role: 'guardrail' }], 'in the order sent');
    assert.deepEqual(
      { alpha: experiment.alpha, sequential: experiment.sequential, sequential_tuning: experiment.sequential_tuning, cuped: experiment.cuped, cuped_lookback_days: experiment.cuped_lookback_days, min_units: experiment.min_units },
      { alpha: 0.05, sequential: false, sequential_tuning: 5000, cuped: false, cuped_lookback_days: 14, min_units: 100 },
    );
    assert.equal(experiment.expected_shares, null, 'no shares before the start');
    assert.equal(experiment.started_at, null);

    const started = await start(experiment.id);
    assert.equal(started.status, 200, started.text);
    assert.equal(started.body.status, 'running');
    assertIsoUtc(started.body.started_at, 'started_at');
    // By hand: R = 0.3. control = 0.3 × 500/1000 + 0.7 (the off variant) = 0.15 + 0.7 = 0.85;
    // short = 0.3 × 300/1000 = 0.09; long = 0.3 × 200/1000 = 0.06. They sum to 1.
    assert.deepEqual(started.body.expected_shares, { control: 0.85, short: 0.09, long: 0.06 });

    // A change to the flag while it runs does not move the shares fixed at start.
    assert.equal((await api('PUT', `${flagsPath(project)}/${flag.id}`, { rollout_percentage: 80 })).status, 200);
    assert.deepEqual((await api('GET', `${experimentsPath()}/${experiment.id}`)).body.expected_shares, { control: 0.85, short: 0.09, long: 0.06 });
    assertError(await start(experiment.id), 409, 'started twice');
    assertError(await api('DELETE', `${experimentsPath()}/${experiment.id}`), 409, 'deleting a running one');

    assertError(await stop(experiment.id, { decision: 'medium' }), 400, 'a decision that is no arm');
    assertError(await stop(experiment.id, { decision: 'on' }), 400, 'on is no arm of a variant flag');
    const flagBefore = (await api('GET', `${flagsPath(project)}/${flag.id}`)).body;
    const stopped = await stop(experiment.id, { decision: 'short', note: 'ship it' });
    assert.equal(stopped.status, 200, stopped.text);
    assert.equal(stopped.body.status, 'stopped');
    assert.equal(stopped.body.decision, 'short');
    assert.equal(stopped.body.note, 'ship it');
    assertIsoUtc(stopped.body.stopped_at, 'stopped_at');
    assert.deepEqual((await api('GET', `${flagsPath(project)}/${flag.id}`)).body, flagBefore, 'the flag is not changed');
    assertError(await stop(experiment.id), 409, 'stopped twice');
    assertError(await start(experiment.id), 409, 'a stopped one does not start again');

    const listed = await as(viewer)('GET', experimentsPath());
    assert.equal(listed.status, 200, listed.text);
    assert.deepEqual(listed.body.find((item: { id: string }) => item.id === experiment.id), stopped.body);
    assert.ok(!(await api('GET', experimentsPath(project.staging))).body.some((item: { id: string }) => item.id === experiment.id), "another environment's list");
    assertError(await api('GET', `${experimentsPath(project.staging)}/${experiment.id}`), 404, 'read through another environment');

    assertNoContent(await api('DELETE', `${experimentsPath()}/${experiment.id}`), 'a stopped one');
    assertError(await api('GET', `${experimentsPath()}/${experiment.id}`), 404, 'deleted');
  });

  test('one running experiment per flag and environment: the second start is 409, until the first stops', async () => {
    const flag = await splitFlag();
    const first = await draft(flag.id);
    const second = await draft(flag.id);
    assert.equal((await start(first.id)).status, 200);
    const refused = await start(second.id);
    assertError(refused, 409, 'a second running one');
    assert.match(refused.body.message, new RegExp(first.name));
    assert.equal((await api('GET', `${experimentsPath()}/${second.id}`)).body.status, 'draft', 'still a draft');
    assert.equal((await stop(first.id)).status, 200);
    assert.equal((await start(second.id)).status, 200, 'once the first stopped');
  });

  test('409 starting when fewer than two arms have a positive share', async () => {
    const cases: [string, Record<string, unknown>][] = [
      ['rollout 0 serves everyone on', { enabled: true, rollout_percentage: 0 }],
      ['rollout 100 serves everyone on', { enabled: true, rollout_percentage: 100 }],
      ['a disabled flag serves only off', { enabled: false, rollout_percentage: 50 }],
      ['everyone_else off serves only off', { enabled: true, rollout_percentage: 50, everyone_else: 'off' }],
      ['one variant with all the weight', { enabled: true, rollout_percentage: 0, variants: [{ key: 'a', value: 1, weight: 1000 }, { key: 'b', value: 2, weight: 0 }], off_variant: 'b' }],
    ];
    for (const [what, fields] of cases) {
      const flag = await newFlag(server, owner, project, { key: `unsplit-${++counter}`, ...fields });
      const experiment = await draft(flag.id, { control: fields.variants ? 'a' : 'off' });
      const refused = await start(experiment.id);
      assertError(refused, 409, what);
      assert.match(refused.body.message, /two arms/, what);
      assert.equal((await api('GET', `${experimentsPath()}/${experiment.id}`)).body.status, 'draft', `${what}: still a draft`);
    }
    // The same flag split by its weights alone (rollout 0) has two arms: it starts.
    const flag = await newFlag(server, owner, project, { key: 'weights-only', enabled: true, rollout_percentage: 0, variants: [{ key: 'a', value: 1, weight: 600 }, { key: 'b', value: 2, weight: 400 }], off_variant: 'a' });
    const started = await start((await draft(flag.id, { control: 'a' })).id);
    assert.equal(started.status, 200, started.text);
    assert.deepEqual(started.body.expected_shares, { a: 0.6, b: 0.4 });
  });

  test('400 for a bad body, a control that is not an arm, an unknown flag or metric; 404 for an unknown environment', async () => {
    const flag = await splitFlag();
    const metric = await newMetric();
    const good = { flag_id: flag.id, name: 'Valid', control: 'off', metrics: [{ metric_id: metric.id, role: 'primary' }] };
    const bad: [string, Record<string, unknown>, RegExp?][] = [
      ['control not an arm', { ...good, control: 'control' }, /control "control" is not an arm/],
      ['control missing', { ...good, control: undefined }],
      ['flag_id of no flag', { ...good, flag_id: '00000000-0000-4000-8000-000000000000' }, /flag_id/],
      ['flag_id not a uuid', { ...good, flag_id: 'checkout' }],
      ['name missing', { ...good, name: undefined }],
      ['no metric', { ...good, metrics: [] }],
      ['21 metrics', { ...good, metrics: Array.from({ length: 21 }, () => ({ metric_id: metric.id, role: 'primary' })) }],
      ['a metric twice', { ...good, metrics: [{ metric_id: metric.id, role: 'primary' }, { metric_id: metric.id, role: 'guardrail' }] }, /once/],
      ['a metric of no one', { ...good, metrics: [{ metric_id: '00000000-0000-4000-8000-000000000000', role: 'primary' }] }, /no metric/],
      ['a role unknown', { ...good, metrics: [{ metric_id: metric.id, role: 'main' }] }],
      ['alpha too small', { ...good, alpha: 0.0001 }],
      ['alpha too large', { ...good, alpha: 0.5 }],
      ['sequential not a boolean', { ...good, sequential: 'yes' }],
      ['sequential_tuning 0', { ...good, sequential_tuning: 0 }],
      ['cuped_lookback_days 0', { ...good, cuped_lookback_days: 0 }],
      ['cuped_lookback_days 61', { ...good, cuped_lookback_days: 61 }],
      ['min_units 0', { ...good, min_units: 0 }],
    ];
    for (const [what, body, message] of bad) {
      const answer = await api('POST', experimentsPath(), body);
      assertError(answer, 400, what);
      if (message) assert.match(answer.body.message, message, what);
    }
    assertError(await api('POST', experimentsPath(project.staging), good), 400, 'a flag of another environment');
    assertError(await api('POST', experimentsPath('00000000-0000-4000-8000-000000000000'), good), 404, 'no such environment');
    assert.deepEqual((await api('GET', experimentsPath())).body.filter((item: { flag_id: string }) => item.flag_id === flag.id), [], 'nothing saved');
    const custom = await api('POST', experimentsPath(), { ...good, alpha: 0.1, sequential: true, sequential_tuning: 20000, cuped: true, cuped_lookback_days: 30, min_units: 500 });
    assert.equal(custom.status, 201, custom.text);
    assert.deepEqual([custom.body.alpha, custom.body.sequential, custom.body.sequential_tuning, custom.body.cuped, custom.body.cuped_lookback_days, custom.body.min_units], [0.1, true, 20000, true, 30, 500]);
  });

  test('deleting its flag stops a running experiment, which stays; a draft of it can no longer start', async () => {
    const flag = await splitFlag();
    const running = await draft(flag.id);
    const waiting = await draft(flag.id);
    assert.equal((await start(running.id)).status, 200);
    assertNoContent(await api('DELETE', `${flagsPath(project)}/${flag.id}`), 'delete the flag');
    const stopped = (await api('GET', `${experimentsPath()}/${running.id}`)).body;
    assert.equal(stopped.status, 'stopped');
    assert.equal(stopped.note, 'its flag was deleted');
    assert.equal(stopped.decision, null);
    assertError(await start(waiting.id), 409, 'a draft of a deleted flag');
    const event = (await auditEvents(server, owner.token, project.id)).find((item) => item.action === 'experiment.stopped' && item.resource_id === running.id);
    assert.ok(event, 'the stop is audited');
  });

  test('viewers read, and are refused every write (403) with nothing changed', async () => {
    const flag = await splitFlag();
    const experiment = await draft(flag.id);
    const metric = await newMetric();
    const look = as(viewer);
    assert.equal((await look('GET', `${experimentsPath()}/${experiment.id}`)).status, 200);
    assert.equal((await look('GET', `${metricsPath()}/${metric.id}`)).status, 200);
    const writes: [string, string, unknown?][] = [
      ['POST', metricsPath(), { key: 'by-viewer', name: 'V', event: 'v', kind: 'count', better: 'higher' }],
      ['PUT', `${metricsPath()}/${metric.id}`, { name: 'Renamed' }],
      ['DELETE', `${metricsPath()}/${metric.id}`],
      ['POST', experimentsPath(), { flag_id: flag.id, name: 'By viewer', control: 'off', metrics: [{ metric_id: metric.id, role: 'primary' }] }],
      ['POST', `${experimentsPath()}/${experiment.id}/start`],
      ['POST', `${experimentsPath()}/${experiment.id}/stop`, {}],
      ['DELETE', `${experimentsPath()}/${experiment.id}`],
    ];
    for (const [method, path, body] of writes) assert.equal((await look(method, path, body)).status, 403, `${method} ${path}`);
    assert.deepEqual((await api('GET', `${metricsPath()}/${metric.id}`)).body, metric);
    assert.deepEqual((await api('GET', `${experimentsPath()}/${experiment.id}`)).body, experiment);
  });

  test('audit events for each step, and experiment.started delivered to a webhook', async () => {
    const hook = await api('POST', `/api/projects/${project.id}/webhooks`, { url: receiver.url, events: ['experiment.started'] });
    assert.equal(hook.status, 201, hook.text);
    const metric = await newMetric();
    await api('PUT', `${metricsPath()}/${metric.id}`, { name: 'Renamed' });
    const flag = await splitFlag();
    const experiment = await draft(flag.id);
    const started = (await start(experiment.id)).body;
    await stop(experiment.id, { decision: 'on' });
    assertNoContent(await api('DELETE', `${experimentsPath()}/${experiment.id}`), 'delete');
    assertNoContent(await api('DELETE', `${metricsPath()}/${metric.id}`), 'delete the metric');

    const events = await auditEvents(server, owner.token, project.id);
    const of = (resourceId: string) => events.filter((event) => event.resource_id === resourceId).map((event) => event.action).reverse();
    assert.deepEqual(of(experiment.id), ['experiment.created', 'experiment.started', 'experiment.stopped', 'experiment.deleted']);
    assert.deepEqual(of(metric.id), ['metric.created', 'metric.updated', 'metric.deleted']);
    const startEvent = events.find((event) => event.action === 'experiment.started' && event.resource_id === experiment.id);
    assert.equal(startEvent.resource_type, 'experiment');
    assert.equal(startEvent.resource_key, flag.key);
    assert.equal(startEvent.environment_id, project.production);
    assert.equal(startEvent.before.status, 'draft');
    assert.equal(startEvent.after.status, 'running');
    assert.equal(startEvent.actor.user_id, owner.id);
    const filtered = await api('GET', `/api/projects/${project.id}/audit?resource_type=experiment&resource_id=${experiment.id}`);
    assert.equal(filtered.status, 200, filtered.text);
    assert.equal(filtered.body.items.length, 4);

    await eventually(() => receiver.of('experiment.started').some((received) => received.body.includes(experiment.id)), 'experiment.started delivered');
    const delivered = JSON.parse(receiver.of('experiment.started').find((received) => received.body.includes(experiment.id))!.body);
    assert.equal(delivered.action, 'experiment.started');
    assert.deepEqual(delivered.after.expected_shares, started.expected_shares);
    assert.equal(receiver.of('experiment.created').length, 0, 'only the events it asked for');
  });
});
