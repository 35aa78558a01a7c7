/**
 * Guarded releases end to end (docs/releases.md), over HTTP against the real server on SQLite and
 * PostgreSQL: exposures and events sent to POST /sdk/v1/events, the releaser deciding at every
 * check. A release's seconds are 20 ms here (the releaser's test option msPerSecond), so a hold of
 * 10 s lasts 0.2 s. The rollback's bound is checked against numpy, written from the formula.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { bucketOf } from '@guidon/engine';
import { sql } from 'kysely';
import { addMember, eventually, newFlag, newProject, newUser, request, startServer, type TestProject, type TestServer, type TestUser } from './harness.js';
import { assertError } from './resources.js';
import { runPython } from './python.js';
import { createTestDatabase } from './test-database.js';
import { Receiver } from './webhook-receiver.js';

const FAST = { pollIntervalMs: 50, msPerSecond: 20 };

let server: TestServer;
let owner: TestUser;
let viewer: TestUser;
let project: TestProject;
let receiver: Receiver;

before(async () => {
  receiver = await new Receiver().start();
  server = await startServer({ WEBHOOK_ALLOW_PRIVATE: 'true' }, { releaser: FAST, webhooks: { pollIntervalMs: 50 } });
  owner = await newUser(server, 'releaser');
  viewer = await newUser(server, 'onlooker');
  project = await newProject(server, owner, 'Guarded releases');
  await addMember(server, owner, project.id, viewer, 'viewer');
});
after(async () => {
  await server?.close();
  await receiver?.close();
});

const api = (method: string, path: string, body?: unknown, user = owner, target: { url: string } = server) => request(target, method, path, { token: user.token, ...(body === undefined ? {} : { body }) });
const flagPath = (flagId: string, envId = project.production) => `/api/projects/${project.id}/environments/${envId}/flags/${flagId}`;

let counter = 0;
async function metric(fields: Record<string, unknown> = {}) {
  const created = await api('POST', `/api/projects/${project.id}/metrics`, { key: `errors-${++counter}`, name: `Errors ${counter}`, event: 'error', kind: 'conversion', better: 'lower', ...fields });
  assert.equal(created.status, 201, created.text);
  return created.body as { id: string; key: string };
}

async function startRelease(flagId: string, body: Record<string, unknown>, target: { url: string } = server) {
  const created = await api('POST', `${flagPath(flagId)}/releases`, { hold_seconds: 10, check_seconds: 10, min_units: 30, ...body }, owner, target);
  assert.equal(created.status, 201, created.text);
  return created.body as { id: string; status: string; steps: number[] };
}

/** Units of each side at the first step of 5 %: bucket < 5 (treatment) and in [50, 55) (control). */
function unitsBySide(flagKey: string, each: number) {
  const treatment: string[] = [];
  const control: string[] = [];
  for (let i = 0; treatment.length < each || control.length < each; i++) {
    const unit = `${flagKey}-u${i}`;
    const bucket = bucketOf(flagKey, unit);
    if (bucket < 5 && treatment.length < each) treatment.push(unit);
    else if (bucket >= 50 && bucket < 55 && control.length < each) control.push(unit);
  }
  return { treatment, control };
}

/** Every `share` of the units (deterministically spread) had an error. */
const withErrors = (units: string[], share: number) => units.filter((_, i) => Math.floor((i + 1) * share) > Math.floor(i * share));

async function feed(flagKey: string, sides: { treatment: string[]; control: string[] }, errors: { treatment: string[]; control: string[] }, target: { url: string } = server) {
  const exposures = [...sides.treatment.map((unit) => ({ flag: flagKey, unit, arm: 'on' })), ...sides.control.map((unit) => ({ flag: flagKey, unit, arm: 'off' }))];
  const events = [...errors.treatment, ...errors.control].map((unit) => ({ name: 'error', unit }));
  const answer = await request(target, 'POST', '/sdk/v1/events', { sdkKey: project.sdk_key, body: { environment: 'production', exposures, events } });
  assert.equal(answer.status, 202, answer.text);
  assert.equal(answer.body.accepted, exposures.length + events.length, JSON.stringify(answer.body));
}

async function releaseOnceIt(path: string, done: (release: any) => boolean, what: string, target: { url: string } = server) {
  let last: any;
  await eventually(async () => done((last = (await api('GET', path, undefined, owner, target)).body)), what, 20_000);
  return last;
}

/** A new user's project on `target` with an `errors` conversion metric (lower is better) and a flag, off. */
async function releaseSetup(target: TestServer, who: string, projectName: string, flagKey: string) {
  const user = await newUser(target, who);
  const p = await newProject(target, user, projectName);
  const m = await request(target, 'POST', `/api/projects/${p.id}/metrics`, { token: user.token, body: { key: 'errors', name: 'Errors', event: 'error', kind: 'conversion', better: 'lower' } });
  const flag = await newFlag(target, user, p, { key: flagKey });
  return { user, p, m, flag };
}

/** The one-sided bound of gbstats' confidence sequence, from the per-unit 0/1 values, in numpy (a conversion's variance is p(1 − p), gbstats' ProportionStatistic). */
const BOUND = String.raw`
import json, sys
import numpy as np
d = json.load(sys.stdin)
t, c = np.array(d["treatment"], float), np.array(d["control"], float)
alpha = d["alpha"]
n = len(t) + len(c)
se = np.sqrt(t.var(ddof=0) / len(t) + c.var(ddof=0) / len(c))
a2 = 2 * alpha
rho = np.sqrt((-2 * np.log(a2) + np.log(-2 * np.log(a2) + 1)) / 5000)
hw = np.sqrt(se**2 * n * 2 * (n * rho**2 + 1) / (n * rho) ** 2 * np.log(1 + np.sqrt(n * rho**2 + 1) / (2 * alpha)))
diff = t.mean() - c.mean()
print(json.dumps(dict(difference=diff, bound=diff - hw, halfwidth=hw)))
`;

describe('a guarded release', () => {
  test('a harmful treatment is rolled back at the first check that sees the data, with its figures (numpy), audit, a webhook and an email to its creator', async () => {
    const errors = await metric();
    const hook = await api('POST', `/api/projects/${project.id}/webhooks`, { url: receiver.url, events: ['release.rolled_back'] });
    assert.equal(hook.status, 201, hook.text);
    const flag = await newFlag(server, owner, project, { key: `harmful-${++counter}` });
    // A long hold: the exposures may be written a flush before the events, and a check between
    // them sees no harm yet; it must not advance meanwhile.
    const release = await startRelease(flag.id, { hold_seconds: 100_000, guardrails: [{ metric_id: errors.id, tolerance: 0.01 }] });
    assert.equal(release.status, 'running');
    const on = await api('GET', flagPath(flag.id));
    assert.deepEqual([on.body.enabled, on.body.rollout_percentage], [true, 5]);
    const path = `${flagPath(flag.id)}/releases/${release.id}`;
    // Without data it waits at 5 % (the hold passes, the minimum does not).
    await releaseOnceIt(path, (r) => r.checks.length >= 3, 'three checks without data');
    const sides = unitsBySide(flag.key, 60);
    const errorUnits = { treatment: withErrors(sides.treatment, 0.7), control: withErrors(sides.control, 0.05) };
    await feed(flag.key, sides, errorUnits);
    const ended = await releaseOnceIt(path, (r) => r.status !== 'running', 'the release to end');
    assert.equal(ended.status, 'rolled_back', JSON.stringify(ended.checks.at(-1)));
    assert.equal(ended.rollout_percentage, 5);
    const last = ended.checks.at(-1);
    assert.equal(last.decision, 'roll_back');
    // Decided at the first check that saw all the data (every unit and every event).
    const treatmentMean = errorUnits.treatment.length / 60;
    const controlMean = errorUnits.control.length / 60;
    const full = ended.checks.filter((check: any) => check.guardrails[0]?.means.treatment === treatmentMean && check.guardrails[0]?.means.control === controlMean && check.units.treatment === 60 && check.units.control === 60);
    assert.equal(full.length, 1, `rolled back ${full.length} checks after the data`);
    const g = last.guardrails[0];
    assert.equal(g.decision, 'harmful');
    assert.deepEqual(g.units, { treatment: 60, control: 60 });
    const values = (units: string[], hit: string[]) => units.map((unit) => (hit.includes(unit) ? 1 : 0));
    const expected = runPython<{ difference: number; bound: number; halfwidth: number }>(BOUND, { treatment: values(sides.treatment, errorUnits.treatment), control: values(sides.control, errorUnits.control), alpha: 0.05 });
    const close = (a: number, b: number, what: string) => assert.ok(Math.abs(a - b) <= 1e-9, `${what}: ${a} vs ${b}`);
    close(g.difference, expected.difference, 'difference');
    close(g.bound, expected.bound, 'bound');
    close(g.detectable_harm, expected.halfwidth, 'detectable harm');
    assert.equal(g.limit, 0.01);
    assert.match(last.explanation, /higher than the tolerance allows \(\+0\.01\)\.$/);
    assert.match(ended.reason, new RegExp(errors.key));
    // The flag is what it was: off.
    const back = await api('GET', flagPath(flag.id));
    assert.equal(back.body.enabled, false);
    // Audit: the rollback with its figures, and the flag's change by the release.
    const audit = (await api('GET', `/api/projects/${project.id}/audit?resource_id=${release.id}`)).body.items;
    const rolledBack = audit.filter((event: any) => event.action === 'release.rolled_back');
    assert.equal(rolledBack.length, 1);
    assert.equal(rolledBack[0].after.check.guardrails[0].decision, 'harmful');
    const flagEvents = (await api('GET', `/api/projects/${project.id}/audit?resource_id=${flag.id}`)).body.items;
    const byRelease = flagEvents.filter((event: any) => event.release_id === release.id);
    assert.equal(byRelease.length, 1, 'one flag change made by the release: the rollback');
    assert.equal(byRelease[0].after.enabled, false);
    // Webhooks hear it, with the figures.
    await eventually(() => receiver.of('release.rolled_back').length === 1, 'the webhook delivery');
    assert.equal(JSON.parse(receiver.of('release.rolled_back')[0]!.body).after.check.decision, 'roll_back');
    // The creator is told.
    const aboutIt = () => server.mailbox!.to(owner.email).filter((m) => m.subject.includes(flag.key));
    await eventually(() => aboutIt().length === 1, 'an email about the rollback');
    assert.match(aboutIt()[0]!.text, /rolled back by itself/);
  });

  test('a healthy release advances step by step and completes; steps above 50 % are not monitored', async () => {
    const errors = await metric();
    const flag = await newFlag(server, owner, project, { key: `healthy-${++counter}` });
    const release = await startRelease(flag.id, { steps: [5, 25, 50, 80, 100], guardrails: [{ metric_id: errors.id }] });
    const sides = unitsBySide(flag.key, 40);
    await feed(flag.key, sides, { treatment: withErrors(sides.treatment, 0.1), control: withErrors(sides.control, 0.1) });
    const path = `${flagPath(flag.id)}/releases/${release.id}`;
    const done = await releaseOnceIt(path, (r) => r.status !== 'running', 'the release to end');
    assert.equal(done.status, 'completed', done.reason);
    assert.equal(done.rollout_percentage, 100);
    const decisions = done.checks.filter((check: any) => check.decision !== 'wait').map((check: any) => [check.step, check.decision]);
    assert.deepEqual(decisions, [[5, 'advance'], [25, 'advance'], [50, 'advance'], [80, 'complete']]);
    assert.equal(done.checks.find((check: any) => check.step === 80).monitored, false);
    // The intake commits a batch's exposures and its events one after the other, so the check
    // that advanced from 5 % may have seen the units without their errors yet (no variance: not
    // enough data, which holds nothing back). The last monitored step, reached two holds later,
    // was judged on all of it.
    const fromHalf = done.checks.find((check: any) => check.step === 50 && check.decision === 'advance');
    assert.deepEqual([fromHalf.monitored, fromHalf.guardrails[0].decision, fromHalf.guardrails[0].means], [true, 'no_harm', { treatment: 0.1, control: 0.1 }], JSON.stringify(fromHalf));
    assert.ok(done.checks.every((check: any) => check.step > 50 || check.guardrails[0].decision !== 'harmful'));
    assert.equal((await api('GET', flagPath(flag.id))).body.rollout_percentage, 100);
    const actions = (await api('GET', `/api/projects/${project.id}/audit?resource_id=${release.id}`)).body.items.map((event: any) => event.action).sort();
    assert.deepEqual(actions, ['release.advanced', 'release.advanced', 'release.advanced', 'release.completed', 'release.created']);
  });

  test('a sample-ratio mismatch pauses it, and only resume starts it again', async () => {
    const errors = await metric();
    const flag = await newFlag(server, owner, project, { key: `lopsided-${++counter}` });
    const release = await startRelease(flag.id, { guardrails: [{ metric_id: errors.id }] });
    const sides = unitsBySide(flag.key, 60);
    // 60 units with the change against 20 without, where half and half were expected.
    await feed(flag.key, { treatment: sides.treatment, control: sides.control.slice(0, 20) }, { treatment: [], control: [] });
    const path = `${flagPath(flag.id)}/releases/${release.id}`;
    const paused = await releaseOnceIt(path, (r) => r.status !== 'running', 'the release to pause');
    assert.equal(paused.status, 'paused');
    assert.match(paused.reason, /Sample ratio mismatch/);
    const check = paused.checks.find((c: any) => c.decision === 'pause');
    const expected = runPython<{ p: number }>(String.raw`
import json, sys
from scipy import stats
d = json.load(sys.stdin)
print(json.dumps(dict(p=float(stats.chisquare(d).pvalue))))
`, [60, 20]);
    assert.ok(Math.abs(check.srm.p_value - expected.p) <= 1e-12, `${check.srm.p_value} vs ${expected.p}`);
    // Still paused a few checks later: a pause is undone by resume only.
    await releaseOnceIt(path, (r) => r.checks.length >= paused.checks.length + 3, 'more checks while paused');
    assert.equal((await api('GET', path)).body.status, 'paused');
    assert.equal((await api('GET', flagPath(flag.id))).body.rollout_percentage, 5);
    await api('POST', `${path}/abort`);
  });

  test('pause, resume, abort; a direct change of the rollout is 409; a toggle off aborts; variants come back', async () => {
    const errors = await metric();
    const flag = await newFlag(server, owner, project, { key: `steered-${++counter}`, enabled: true, rollout_percentage: 3 });
    const release = await startRelease(flag.id, { hold_seconds: 100_000, guardrails: [{ metric_id: errors.id }] });
    const path = `${flagPath(flag.id)}/releases/${release.id}`;
    assertError(await api('POST', `${flagPath(flag.id)}/releases`, { guardrails: [{ metric_id: errors.id }] }), 409, 'a second live release');
    assertError(await api('PUT', flagPath(flag.id), { rollout_percentage: 40 }), 409, 'a direct change of the rollout');
    assert.equal((await api('PUT', flagPath(flag.id), { description: 'named while it runs' })).status, 200);
    assertError(await api('POST', `${path}/resume`), 409, 'resume a running one');
    assertError(await api('POST', `${path}/pause`, undefined, viewer), 403, 'a viewer pausing');
    assert.equal((await api('GET', path, undefined, viewer)).status, 200);
    const paused = await api('POST', `${path}/pause`);
    assert.equal(paused.body.status, 'paused');
    assert.match(paused.body.reason, /Paused by/);
    assertError(await api('POST', `${path}/pause`), 409, 'pause a paused one');
    assert.equal((await api('POST', `${path}/resume`)).body.status, 'running');
    const aborted = await api('POST', `${path}/abort`);
    assert.equal(aborted.body.status, 'aborted');
    assertError(await api('POST', `${path}/abort`), 409, 'abort an ended one');
    const back = (await api('GET', flagPath(flag.id))).body;
    assert.deepEqual([back.enabled, back.rollout_percentage, back.description], [true, 3, 'named while it runs']);
    // Now the rollout is the user's again.
    assert.equal((await api('PUT', flagPath(flag.id), { rollout_percentage: 4 })).status, 200);

    // A toggle off aborts; the flag stays off.
    const second = await startRelease(flag.id, { hold_seconds: 100_000, guardrails: [{ metric_id: errors.id }] });
    assert.equal((await api('POST', `${flagPath(flag.id)}/toggle`)).body.enabled, false);
    const toggled = (await api('GET', `${flagPath(flag.id)}/releases/${second.id}`)).body;
    assert.equal(toggled.status, 'aborted');
    assert.match(toggled.reason, /switched off/);
    assert.equal((await api('GET', flagPath(flag.id))).body.enabled, false);
    const list = (await api('GET', `${flagPath(flag.id)}/releases`, undefined, viewer)).body;
    assert.deepEqual(list.map((r: any) => r.id), [second.id, release.id]);

    // A flag with variants: the treatment weighted 1000 while it runs, the variants given back by the abort.
    const variants = [{ key: 'old', value: 'a', weight: 500 }, { key: 'new', value: 'b', weight: 500 }];
    const varied = await newFlag(server, owner, project, { key: `varied-${++counter}`, variants, off_variant: 'old' });
    assertError(await api('POST', `${flagPath(varied.id)}/releases`, { guardrails: [{ metric_id: errors.id }] }), 400, 'no treatment named');
    assertError(await api('POST', `${flagPath(varied.id)}/releases`, { treatment: 'old', guardrails: [{ metric_id: errors.id }] }), 400, 'treatment = the off variant');
    const third = await startRelease(varied.id, { treatment: 'new', guardrails: [{ metric_id: errors.id }] });
    const during = (await api('GET', flagPath(varied.id))).body;
    assert.deepEqual(during.variants.map((v: any) => [v.key, v.weight]), [['old', 0], ['new', 1000]]);
    await api('POST', `${flagPath(varied.id)}/releases/${third.id}/abort`);
    const after = (await api('GET', flagPath(varied.id))).body;
    assert.deepEqual([after.enabled, after.variants.map((v: any) => [v.key, v.weight])], [false, [['old', 500], ['new', 500]]]);

    // A guardrail of a live release cannot be deleted.
    const guarded = await newFlag(server, owner, project, { key: `guarded-${++counter}` });
    await startRelease(guarded.id, { hold_seconds: 100_000, guardrails: [{ metric_id: errors.id }] });
    assertError(await api('DELETE', `/api/projects/${project.id}/metrics/${errors.id}`), 409, 'delete a guardrail');
  });

  test('400 for bad steps, holds and guardrails, 409 for a flag already rolled out, and nothing changes', async () => {
    const errors = await metric();
    const flag = await newFlag(server, owner, project, { key: `refused-${++counter}` });
    const base = { guardrails: [{ metric_id: errors.id }] };
    const bad: [string, unknown][] = [
      ['steps that do not increase', { ...base, steps: [10, 10, 100] }],
      ['a last step below 100', { ...base, steps: [10, 50] }],
      ['one step', { ...base, steps: [100] }],
      ['a step of 0', { ...base, steps: [0, 100] }],
      ['a hold under 10 s', { ...base, hold_seconds: 5 }],
      ['a check interval under 10 s', { ...base, check_seconds: 9 }],
      ['no guardrail', { guardrails: [] }],
      ['eleven guardrails', { guardrails: Array.from({ length: 11 }, () => ({ metric_id: errors.id })) }],
      ['a metric twice', { guardrails: [{ metric_id: errors.id }, { metric_id: errors.id }] }],
      ['a metric of no project', { guardrails: [{ metric_id: '00000000-0000-4000-8000-000000000000' }] }],
      ['a negative tolerance', { guardrails: [{ metric_id: errors.id, tolerance: -1 }] }],
      ['a treatment on a flag without variants', { ...base, treatment: 'blue' }],
    ];
    for (const [what, body] of bad) assertError(await api('POST', `${flagPath(flag.id)}/releases`, body), 400, what);
    const rolled = await newFlag(server, owner, project, { key: `rolled-${++counter}`, enabled: true, rollout_percentage: 30 });
    assertError(await api('POST', `${flagPath(rolled.id)}/releases`, base), 409, 'on at 30 % beyond the first step');
    assert.equal((await api('GET', `${flagPath(flag.id)}/releases`)).body.length, 0);
    assert.deepEqual(((await api('GET', flagPath(flag.id))).body as any).enabled, false);
  });
});

describe('releases while the intake writes', () => {
  test('checks go on, none failed: on SQLite the intake thread commits between a check reading its release and recording its decision', async () => {
    // Checks every 10 ms: before transactions took the write lock when they began (db/database.ts),
    // a commit of the intake's thread between a check's read and its write failed the check at
    // once ("database is locked"), and its lease kept the release unchecked for a minute.
    // No limit on the batches (600 a minute by default): a quick machine sent more in the 3 s and got 429.
    const busy = await startServer({ RATE_LIMIT_EVENTS: '0' }, { releaser: { pollIntervalMs: 10, msPerSecond: 1 } });
    try {
      const { user, p, m, flag } = await releaseSetup(busy, 'busy-releaser', 'Releases under load', 'under-load');
      const path = `/api/projects/${p.id}/environments/${p.production}/flags/${flag.id}/releases`;
      // A minimum it never reaches: it waits at 5 %, checked and recorded every 10 ms.
      const created = await request(busy, 'POST', path, { token: user.token, body: { steps: [5, 100], hold_seconds: 10, check_seconds: 10, min_units: 1_000_000, guardrails: [{ metric_id: m.body.id }] } });
      assert.equal(created.status, 201, created.text);
      const checks = async () => (await request(busy, 'GET', `${path}/${created.body.id}`, { token: user.token })).body.checks.length as number;
      let sent = 0;
      const until = Date.now() + 3000;
      while (Date.now() < until) {
        const units = Array.from({ length: 500 }, () => `unit-${sent++}`);
        const body = { environment: 'production', exposures: units.map((unit) => ({ flag: flag.key, unit, arm: 'on' })), events: units.map((unit) => ({ name: 'error', unit })) };
        assert.equal((await request(busy, 'POST', '/sdk/v1/events', { sdkKey: p.sdk_key, body })).status, 202);
      }
      const before = await checks();
      await eventually(async () => (await checks()) > before, 'a check after the load');
      const failed = busy.logs.filter((line) => line.includes('a check failed'));
      assert.deepEqual(failed, [], 'no check failed');
    } finally {
      await busy.close();
    }
  });
});

describe('a check that fails', () => {
  test('is tried again within seconds, not when its minute-long lease ends', async () => {
    const errors = await metric();
    const flag = await newFlag(server, owner, project, { key: `refused-checks-${++counter}` });
    const release = await startRelease(flag.id, { hold_seconds: 100_000, guardrails: [{ metric_id: errors.id }] });
    // The database refuses this release's checks, as a database busy or away a moment would.
    const refuse =
      server.config.database.kind === 'sqlite'
        ? [`create trigger refuse_checks before insert on release_checks when new.release_id = '${release.id}' begin select raise(abort, 'refused by the test'); end`]
        : [
            `create function refuse_checks() returns trigger language plpgsql as $$ begin if new.release_id = '${release.id}' then raise exception 'refused by the test'; end if; return new; end $$`,
            'create trigger refuse_checks before insert on release_checks for each row execute function refuse_checks()',
          ];
    for (const statement of refuse) await sql.raw(statement).execute(server.database.db);
    await eventually(() => server.logs.some((line) => line.includes('a check failed') && line.includes(release.id)), 'a failed check');
    const path = `${flagPath(flag.id)}/releases/${release.id}`;
    const recorded = (await api('GET', path)).body.checks.length;
    await sql.raw('drop trigger refuse_checks' + (server.config.database.kind === 'sqlite' ? '' : ' on release_checks')).execute(server.database.db);
    // Its retry is 10 of the release's seconds (0.2 s here); the lease is 60 s.
    await releaseOnceIt(path, (r) => r.checks.length > recorded, 'a check after the database took them again', server);
  });
});

describe('releases across instances and restarts', () => {
  test('two instances on one database take each decision once', async () => {
    const database = await createTestDatabase();
    const a = await startServer({}, { database, releaser: FAST });
    const b = await startServer({}, { database, releaser: FAST });
    try {
      const { user, p, m, flag } = await releaseSetup(a, 'twins', 'Two instances', 'twin-flag');
      const path = `/api/projects/${p.id}/environments/${p.production}/flags/${flag.id}/releases`;
      const created = await request(a, 'POST', path, { token: user.token, body: { steps: [5, 20, 50, 100], hold_seconds: 10, check_seconds: 10, min_units: 20, guardrails: [{ metric_id: m.body.id }] } });
      assert.equal(created.status, 201, created.text);
      const sides = unitsBySide(flag.key, 30);
      const exposures = [...sides.treatment.map((unit) => ({ flag: flag.key, unit, arm: 'on' })), ...sides.control.map((unit) => ({ flag: flag.key, unit, arm: 'off' }))];
      const events = [...withErrors(sides.treatment, 0.2), ...withErrors(sides.control, 0.2)].map((unit) => ({ name: 'error', unit }));
      for (const target of [a, b]) assert.equal((await request(target, 'POST', '/sdk/v1/events', { sdkKey: p.sdk_key, body: { environment: 'production', exposures, events } })).status, 202);
      let done: any;
      await eventually(async () => (done = (await request(b, 'GET', `${path}/${created.body.id}`, { token: user.token })).body).status !== 'running', 'the release to end', 20_000);
      assert.equal(done.status, 'completed', done.reason);
      const decided = done.checks.filter((check: any) => check.decision !== 'wait').map((check: any) => check.step);
      assert.deepEqual(decided, [5, 20, 50], 'each step decided once');
      const audit = (await request(a, 'GET', `/api/projects/${p.id}/audit?resource_id=${created.body.id}`, { token: user.token })).body.items.map((e: any) => e.action).sort();
      assert.deepEqual(audit, ['release.advanced', 'release.advanced', 'release.completed', 'release.created']);
      const byRelease = (await request(a, 'GET', `/api/projects/${p.id}/audit?resource_id=${flag.id}`, { token: user.token })).body.items.filter((e: any) => e.release_id === created.body.id);
      assert.deepEqual(byRelease.map((e: any) => e.after.rollout_percentage).sort((x: number, y: number) => x - y), [20, 50, 100]);
    } finally {
      await a.close();
      await b.close();
      await database.drop();
    }
  });

  test('a release survives a restart mid-way without skipping or repeating a step', async () => {
    const database = await createTestDatabase();
    let first: TestServer | undefined = await startServer({}, { database, releaser: FAST });
    let second: TestServer | undefined;
    try {
      const { user, p, m, flag } = await releaseSetup(first, 'restarter', 'Restarts', 'restart-flag');
      const path = `/api/projects/${p.id}/environments/${p.production}/flags/${flag.id}/releases`;
      // A hold of 100 s (2 s here): the restart falls inside the first step.
      const created = await request(first, 'POST', path, { token: user.token, body: { steps: [5, 50, 100], hold_seconds: 100, check_seconds: 10, min_units: 10, guardrails: [{ metric_id: m.body.id }] } });
      assert.equal(created.status, 201, created.text);
      const sides = unitsBySide(flag.key, 15);
      const exposures = [...sides.treatment.map((unit) => ({ flag: flag.key, unit, arm: 'on' })), ...sides.control.map((unit) => ({ flag: flag.key, unit, arm: 'off' }))];
      const events = [...withErrors(sides.treatment, 0.3), ...withErrors(sides.control, 0.3)].map((unit) => ({ name: 'error', unit }));
      assert.equal((await request(first, 'POST', '/sdk/v1/events', { sdkKey: p.sdk_key, body: { environment: 'production', exposures, events } })).status, 202);
      await eventually(async () => (await request(first!, 'GET', `${path}/${created.body.id}`, { token: user.token })).body.checks.length >= 2, 'two checks before the restart');
      await first.close();
      first = undefined;
      second = await startServer({}, { database, releaser: FAST });
      let done: any;
      await eventually(async () => (done = (await request(second!, 'GET', `${path}/${created.body.id}`, { token: user.token })).body).status !== 'running', 'the release to end after the restart', 20_000);
      assert.equal(done.status, 'completed', done.reason);
      assert.deepEqual(done.checks.filter((check: any) => check.decision !== 'wait').map((check: any) => [check.step, check.decision]), [[5, 'advance'], [50, 'complete']]);
    } finally {
      await first?.close();
      await second?.close();
      await database.drop();
    }
  });
});

describe('releases in an environment that needs approval', () => {
  test('created through an approved change request; its steps and its rollback then need no approval', async () => {
    const reviewer = await newUser(server, 'approver');
    const p = await newProject(server, owner, 'Reviewed releases');
    await addMember(server, owner, p.id, reviewer, 'editor');
    const as = (user: TestUser) => ({ token: user.token });
    const m = await request(server, 'POST', `/api/projects/${p.id}/metrics`, { ...as(owner), body: { key: 'errors', name: 'Errors', event: 'error', kind: 'conversion', better: 'lower' } });
    const flag = await newFlag(server, owner, p, { key: 'reviewed-flag' });
    assert.equal((await request(server, 'PUT', `/api/projects/${p.id}/environments/${p.production}`, { ...as(owner), body: { approvals_required: 1 } })).status, 200);
    const path = `/api/projects/${p.id}/environments/${p.production}/flags/${flag.id}/releases`;
    const body = { steps: [5, 50, 100], hold_seconds: 10, check_seconds: 10, min_units: 1, guardrails: [{ metric_id: m.body.id }] };
    assertError(await request(server, 'POST', path, { ...as(owner), body }), 409, 'a direct release in a reviewed environment');
    const cr = await request(server, 'POST', `/api/projects/${p.id}/environments/${p.production}/change-requests`, { ...as(owner), body: { title: 'Release it', changes: [{ op: 'release.create', flag_id: flag.id, release: body }] } });
    assert.equal(cr.status, 201, cr.text);
    assert.equal((await request(server, 'POST', `/api/projects/${p.id}/change-requests/${cr.body.id}/reviews`, { ...as(reviewer), body: { decision: 'approve' } })).status, 201);
    const applied = await request(server, 'POST', `/api/projects/${p.id}/change-requests/${cr.body.id}/apply`, as(owner));
    assert.equal(applied.status, 200, applied.text);
    const [release] = (await request(server, 'GET', path, as(owner))).body;
    assert.equal(release.change_request_id, cr.body.id);
    // Its step to 50 % is taken without a request; then an abort rolls back without one.
    const sides = unitsBySide(flag.key, 3);
    const exposures = [...sides.treatment.map((unit) => ({ flag: flag.key, unit, arm: 'on' })), ...sides.control.map((unit) => ({ flag: flag.key, unit, arm: 'off' }))];
    assert.equal((await request(server, 'POST', '/sdk/v1/events', { sdkKey: p.sdk_key, body: { environment: 'production', exposures } })).status, 202);
    await eventually(async () => (await request(server, 'GET', `${path}/${release.id}`, as(owner))).body.rollout_percentage === 50, 'the step to 50 %', 20_000);
    const aborted = await request(server, 'POST', `${path}/${release.id}/abort`, as(owner));
    assert.equal(aborted.status, 200, aborted.text);
    assert.equal((await request(server, 'GET', `/api/projects/${p.id}/environments/${p.production}/flags/${flag.id}`, as(owner))).body.enabled, false);
  });
});
