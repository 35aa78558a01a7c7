/**
 * Experiments end to end (docs/experiments.md): exposures and events sent to POST /sdk/v1/events,
 * then GET .../results, over HTTP against the real server on SQLite and PostgreSQL. The data are
 * made here unit by unit, so each unit's value is known without the server; every figure of the
 * answer is then checked against scipy and numpy run on those values (Welch's test, the delta
 * method, the chi-squared test, CUPED's regression), not against our own code.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { sql } from 'kysely';
import { addMember, eventually, freePort, newFlag, newProject, newUser, request, startServer, startTwoInstances, type TestProject, type TestServer, type TestUser } from './harness.js';
import { assertError } from './resources.js';
import { runPython } from './python.js';
import { startChildServer } from './child-server.js';
import { createTestDatabase } from './test-database.js';

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;

let server: TestServer;
let owner: TestUser;
let viewer: TestUser;
let project: TestProject;

before(async () => {
  server = await startServer();
  owner = await newUser(server, 'scientist');
  viewer = await newUser(server, 'reader');
  project = await newProject(server, owner, 'Experiment results');
  await addMember(server, owner, project.id, viewer, 'viewer');
});
after(async () => server?.close());

const api = (method: string, path: string, body?: unknown, user = owner) => request(server, method, path, { token: user.token, ...(body === undefined ? {} : { body }) });
const send = (body: unknown, target: { url: string } = server, sdkKey = project.sdk_key) => request(target, 'POST', '/sdk/v1/events', { sdkKey, body });
const experimentsPath = (envId: string) => `/api/projects/${project.id}/environments/${envId}/experiments`;
const iso = (ms: number) => new Date(ms).toISOString();

let counter = 0;
async function metric(fields: Record<string, unknown>) {
  const created = await api('POST', `/api/projects/${project.id}/metrics`, { key: `m-${++counter}`, name: `Metric ${counter}`, better: 'higher', ...fields });
  assert.equal(created.status, 201, created.text);
  return created.body as { id: string; key: string };
}

/** A running experiment on a new 50 % on/off flag whose start is moved `startedAgo` into the past (exposures may be up to 24 h old). */
async function runningExperiment(envId: string, metrics: { id: string }[], fields: Record<string, unknown> = {}, startedAgo = 20 * HOUR) {
  const flag = await newFlag(server, owner, project, { key: `flag-${++counter}`, enabled: true, rollout_percentage: 50 }, envId);
  const created = await api('POST', experimentsPath(envId), { flag_id: flag.id, name: `Experiment ${counter}`, control: 'off', metrics: metrics.map((m, i) => ({ metric_id: m.id, role: i === 0 ? 'primary' : 'secondary' })), ...fields });
  assert.equal(created.status, 201, created.text);
  const started = await api('POST', `${experimentsPath(envId)}/${created.body.id}/start`);
  assert.equal(started.status, 200, started.text);
  const startedAt = Date.now() - startedAgo;
  await server.database.db.updateTable('experiments').set({ started_at: iso(startedAt) }).where('id', '=', created.body.id).execute();
  return { id: created.body.id as string, flag: flag.key as string, startedAt, path: `${experimentsPath(envId)}/${created.body.id}` };
}

/** Sends items in batches of up to 1,000 and checks each was accepted. */
async function sendAll(environment: string, exposures: unknown[], events: unknown[]) {
  const items = [...exposures.map((e) => ({ exposure: e })), ...events.map((e) => ({ event: e }))];
  for (let i = 0; i < items.length; i += 1000) {
    const batch = items.slice(i, i + 1000);
    const answer = await send({ environment, exposures: batch.flatMap((b) => ('exposure' in b ? [b.exposure] : [])), events: batch.flatMap((b) => ('event' in b ? [b.event] : [])) });
    assert.equal(answer.status, 202, answer.text);
    assert.equal(answer.body.accepted, batch.length, JSON.stringify(answer.body));
  }
}

const mean = (values: number[]) => values.reduce((sum, v) => sum + v, 0) / values.length;

/**
 * Results once they count `units` exposed units and each metric's arms have the means given
 * (index by index; null: not checked): a flush writes exposures before events, and the background
 * computation catches up with both.
 */
async function resultsWith(path: string, units: number, means: ({ on: number; off: number } | null)[] = []) {
  let last: any;
  const close = (a: number, b: number) => Math.abs(a - b) <= 1e-9 * Math.max(1, Math.abs(b));
  await eventually(async () => {
    last = await api('GET', `${path}/results`);
    return last.status === 200 && last.body.units === units && means.every((want, i) => want === null || (close(last.body.metrics[i].arms.on.mean, want.on) && close(last.body.metrics[i].arms.off.mean, want.off)));
  }, `results counting ${units} units`, 15_000);
  return last.body;
}

/**
 * Independent figures for two arms' per-unit values (scipy's Welch test and the formulas of
 * docs/experiments.md, written again in numpy), per metric kind.
 */
const FIGURES = String.raw`
import json, sys
import numpy as np
from scipy import stats
data = json.load(sys.stdin)
alpha = data["alpha"]
out = []
def welch_df(vc, nc, vt, nt):
    if vc == 0: return nt - 1
    if vt == 0: return nc - 1
    a, b = vc / nc, vt / nt
    return (a + b) ** 2 / (a * a / (nc - 1) + b * b / (nt - 1))
def interval(est, se, df):
    h = stats.t.ppf(1 - alpha / 2, df) * se
    return dict(estimate=est, ci=[est - h, est + h], p_value=float(2 * stats.t.cdf(-abs(est / se), df)))
for case in data["cases"]:
    kind = case["kind"]
    c, t = np.array(case["control"], float), np.array(case["treatment"], float)
    r = dict()
    if kind == "mean":
        cd, td = np.array(case["control_events"], float), np.array(case["treatment_events"], float)
        def ratio(m, d):
            n = len(m); mm, md = m.mean(), d.mean()
            vm, vd, cov = m.var(ddof=1), d.var(ddof=1), np.cov(m, d, ddof=1)[0, 1]
            return n, m.sum() / d.sum(), vm / md**2 + vd * mm**2 / md**4 - 2 * cov * mm / md**3
        nc, mc, vc = ratio(c, cd); nt, mt, vt = ratio(t, td)
    elif kind == "cuped":
        cx, tx = np.array(case["control_pre"], float), np.array(case["treatment_pre"], float)
        y, x = np.concatenate([c, t]), np.concatenate([cx, tx])
        theta = np.cov(y, x, ddof=1)[0, 1] / x.var(ddof=1)
        nc, nt = len(c), len(t)
        raw_c, raw_t = c.mean(), t.mean()
        mc, mt = raw_c - theta * cx.mean(), raw_t - theta * tx.mean()
        adj = lambda yy, xx: yy.var(ddof=1) + theta**2 * xx.var(ddof=1) - 2 * theta * np.cov(yy, xx, ddof=1)[0, 1]
        vc, vt = adj(c, cx), adj(t, tx)
        df = welch_df(vc, nc, vt, nt)
        se = np.sqrt(vt / nt + vc / nc)
        r["absolute"] = interval(mt - mc, se, df)
        q = raw_t / raw_c
        rel_var = vt / (nt * raw_c**2) + (c.var(ddof=1) * q**2 - 2 * theta * np.cov(c, cx, ddof=1)[0, 1] * q + theta**2 * cx.var(ddof=1)) / (nc * raw_c**2)
        r["relative"] = interval((mt - mc) / abs(raw_c), np.sqrt(rel_var), df)
        raw = stats.ttest_ind(t, c, equal_var=False)
        r["raw_ci_width"] = float(np.diff(raw.confidence_interval(1 - alpha))[0])
        r["theta"] = float(theta)
        out.append(r)
        continue
    else:
        nc, nt = len(c), len(t)
        mc, mt = c.mean(), t.mean()
        if kind == "conversion": vc, vt = mc * (1 - mc), mt * (1 - mt)
        else: vc, vt = c.var(ddof=1), t.var(ddof=1)
        if kind != "conversion":
            # scipy's own Welch test for the absolute effect (the same figures as the formulas below)
            w = stats.ttest_ind(t, c, equal_var=False)
            ci = w.confidence_interval(1 - alpha)
            r["scipy_welch"] = dict(ci=[float(ci.low), float(ci.high)], p_value=float(w.pvalue))
    df = welch_df(vc, nc, vt, nt)
    se = np.sqrt(vt / nt + vc / nc)
    r["arms"] = dict(control=dict(units=nc, mean=float(mc), variance=float(vc)), treatment=dict(units=nt, mean=float(mt), variance=float(vt)))
    r["absolute"] = interval(float(mt - mc), float(se), df)
    rel_se = float(np.sqrt(vt / (mc**2 * nt) + vc * mt**2 / (mc**4 * nc)))
    r["relative"] = interval(float((mt - mc) / abs(mc)), rel_se, df)
    z = r["relative"]["estimate"] / rel_se
    r["chance_to_win"] = float(stats.norm.cdf(-z if case["better"] == "lower" else z))
    out.append(r)
srm = [float(stats.chisquare(s["counts"], f_exp=[sum(s["counts"]) * p for p in s["shares"]]).pvalue) for s in data["srm"]]
print(json.dumps(dict(cases=out, srm=srm)))
`;

function assertClose(actual: number, expected: number, what: string, tolerance = 1e-9): void {
  assert.ok(Math.abs(actual - expected) <= tolerance * Math.max(1, Math.abs(expected)), `${what}: ${actual}, expected ${expected}`);
}
function assertInterval(actual: { estimate: number; ci: [number, number]; p_value: number }, expected: { estimate: number; ci: number[]; p_value: number }, what: string): void {
  assertClose(actual.estimate, expected.estimate, `${what} estimate`);
  assertClose(actual.ci[0], expected.ci[0]!, `${what} ci low`);
  assertClose(actual.ci[1], expected.ci[1]!, `${what} ci high`);
  assertClose(actual.p_value, expected.p_value, `${what} p`);
}

describe('results of an experiment fed over HTTP', () => {
  test('every figure matches scipy and numpy on the values sent, with windows, the pre-exposure rule, multiple exposures and the sample ratio', async () => {
    const purchase = await metric({ event: 'purchase', kind: 'conversion', window_hours: 1 });
    const revenue = await metric({ event: 'purchase', kind: 'sum' });
    const latency = await metric({ event: 'page.load', kind: 'mean', better: 'lower' });
    const errors = await metric({ event: 'error', kind: 'count', better: 'lower' });
    const experiment = await runningExperiment(project.production, [purchase, revenue, latency, errors]);
    const exposures: unknown[] = [];
    const events: unknown[] = [];
    /** Per arm, each unit's value as the metric counts it: the truth the server must find. */
    const truth = { on: { purchase: [] as number[], revenue: [] as number[], latencySum: [] as number[], latencyEvents: [] as number[], errors: [] as number[] }, off: { purchase: [] as number[], revenue: [] as number[], latencySum: [] as number[], latencyEvents: [] as number[], errors: [] as number[] } };
    const armsUnits = { on: 83, off: 70 }; // unequal: the SRM test has something to say (p ≈ 0.29)
    for (const arm of ['on', 'off'] as const) {
      for (let i = 0; i < armsUnits[arm]; i++) {
        const unit = `${arm}-${i}`;
        const first = experiment.startedAt + HOUR + i * 7000;
        exposures.push({ flag: experiment.flag, unit, arm, reason: 'User in 50% rollout', at: iso(first) });
        exposures.push({ flag: experiment.flag, unit, arm, at: iso(first + 5 * MINUTE) }); // seen again: the first counts
        // Purchases: in the 1 h window (conversion and revenue), and after it (revenue only), and before the exposure (neither).
        let bought = 0;
        let spent = 0;
        if (i % (arm === 'on' ? 3 : 4) === 0) {
          const value = (arm === 'on' ? 10 : 8) + (i % 7);
          events.push({ name: 'purchase', unit, value, at: iso(first + 10 * MINUTE) });
          bought = 1;
          spent += value;
        }
        if (i % 5 === 1) {
          events.push({ name: 'purchase', unit, value: 3.5, at: iso(first + 2 * HOUR) });
          spent += 3.5;
        }
        if (i % 6 === 2) events.push({ name: 'purchase', unit, value: 99, at: iso(first - 30 * MINUTE) });
        truth[arm].purchase.push(bought);
        truth[arm].revenue.push(spent);
        // Page loads: 0 to 3 per unit (a unit without any still counts in the ratio's n).
        let loads = 0;
        let total = 0;
        for (let k = 0; k < i % 4; k++) {
          const value = 100 + ((i * 37 + k * 11) % 50) + (arm === 'on' ? 6 : 0);
          events.push({ name: 'page.load', unit, value, at: iso(first + (k + 1) * MINUTE) });
          loads++;
          total += value;
        }
        truth[arm].latencySum.push(total);
        truth[arm].latencyEvents.push(loads);
        const errorCount = (i * 13) % (arm === 'on' ? 3 : 4);
        for (let k = 0; k < errorCount; k++) events.push({ name: 'error', unit, at: iso(first + 20 * MINUTE) });
        truth[arm].errors.push(errorCount);
      }
    }
    // Units seen on both arms: counted in `units` and multiple_exposures, nowhere else.
    for (let i = 0; i < 4; i++) {
      exposures.push({ flag: experiment.flag, unit: `both-${i}`, arm: 'on', at: iso(experiment.startedAt + 2 * HOUR) });
      exposures.push({ flag: experiment.flag, unit: `both-${i}`, arm: 'off', at: iso(experiment.startedAt + 3 * HOUR) });
      events.push({ name: 'purchase', unit: `both-${i}`, value: 1000, at: iso(experiment.startedAt + 4 * HOUR) });
    }
    // Exposed before the start: not a unit of the experiment. Events of units never exposed: nowhere.
    exposures.push({ flag: experiment.flag, unit: 'early', arm: 'on', at: iso(experiment.startedAt - HOUR) });
    events.push({ name: 'purchase', unit: 'stranger', value: 500, at: iso(experiment.startedAt + 2 * HOUR) });
    await sendAll('production', exposures, events);

    const ratioMean = (arm: 'on' | 'off') => truth[arm].latencySum.reduce((a, b) => a + b, 0) / truth[arm].latencyEvents.reduce((a, b) => a + b, 0);
    const results = await resultsWith(experiment.path, armsUnits.on + armsUnits.off + 4, [
      { on: mean(truth.on.purchase), off: mean(truth.off.purchase) },
      { on: mean(truth.on.revenue), off: mean(truth.off.revenue) },
      { on: ratioMean('on'), off: ratioMean('off') },
      { on: mean(truth.on.errors), off: mean(truth.off.errors) },
    ]);
    assert.deepEqual(results.arms, { on: { units: 83, expected_share: 0.5 }, off: { units: 70, expected_share: 0.5 } });
    assert.deepEqual(results.multiple_exposures, { units: 4, share: 4 / 157 });
    assert.equal(results.enough_data, false); // 100 units per arm by default
    const cases = [
      { kind: 'conversion', better: 'higher', control: truth.off.purchase, treatment: truth.on.purchase },
      { kind: 'sum', better: 'higher', control: truth.off.revenue, treatment: truth.on.revenue },
      { kind: 'mean', better: 'lower', control: truth.off.latencySum, treatment: truth.on.latencySum, control_events: truth.off.latencyEvents, treatment_events: truth.on.latencyEvents },
      { kind: 'count', better: 'lower', control: truth.off.errors, treatment: truth.on.errors },
    ];
    const expected = runPython<{ cases: any[]; srm: number[] }>(FIGURES, { alpha: 0.05, cases, srm: [{ counts: [83, 70], shares: [0.5, 0.5] }] });
    assertClose(results.srm.p_value, expected.srm[0]!, 'srm p');
    assert.equal(results.srm.flagged, false);
    assert.deepEqual(results.metrics.map((m: any) => m.key), [purchase.key, revenue.key, latency.key, errors.key]);
    results.metrics.forEach((m: any, i: number) => {
      const want = expected.cases[i];
      const what = cases[i]!.kind;
      assert.equal(m.arms.on.units, 83, what);
      assert.equal(m.arms.off.units, 70, what);
      assertClose(m.arms.on.mean, want.arms.treatment.mean, `${what} mean on`);
      assertClose(m.arms.off.mean, want.arms.control.mean, `${what} mean off`);
      assertClose(m.arms.on.variance, want.arms.treatment.variance, `${what} variance on`);
      assertClose(m.arms.off.variance, want.arms.control.variance, `${what} variance off`);
      const versus = m.versus_control.on;
      assertInterval(versus.absolute, want.absolute, `${what} absolute`);
      if (want.scipy_welch) {
        assertClose(versus.absolute.ci[0], want.scipy_welch.ci[0], `${what} ci low (scipy ttest_ind)`);
        assertClose(versus.absolute.p_value, want.scipy_welch.p_value, `${what} p (scipy ttest_ind)`);
      }
      assertInterval(versus.relative, want.relative, `${what} relative`);
      assertClose(versus.chance_to_win, want.chance_to_win, `${what} chance to win`);
      assert.equal(versus.significant, versus.relative.ci[0] > 0 || versus.relative.ci[1] < 0);
      assert.equal(versus.cuped_applied, false);
      assert.deepEqual(Object.keys(m.versus_control), ['on'], 'the control is not compared with itself');
    });
  });

  test('CUPED: the pre-exposure value over the lookback adjusts the effect as numpy computes it, with a narrower interval', async () => {
    const visits = await metric({ event: 'visit', kind: 'count' });
    // The same events' values, 1.5 each: a sum metric's covariate is the sum over the lookback.
    const minutes = await metric({ event: 'visit', kind: 'sum' });
    const experiment = await runningExperiment(project.staging, [visits, minutes], { cuped: true, cuped_lookback_days: 1 });
    const exposures: unknown[] = [];
    const events: unknown[] = [];
    const truth = { on: { post: [] as number[], pre: [] as number[] }, off: { post: [] as number[], pre: [] as number[] } };
    for (const arm of ['on', 'off'] as const) {
      for (let i = 0; i < 60; i++) {
        const unit = `cuped-${arm}-${i}`;
        const first = experiment.startedAt + HOUR + i * 1000;
        exposures.push({ flag: experiment.flag, unit, arm, at: iso(first) });
        const habit = i % 6; // how often this unit visits anyway: before and after
        const post = habit + (arm === 'on' ? 1 : 0) + (i % 2);
        for (let k = 0; k < habit; k++) events.push({ name: 'visit', unit, value: 1.5, at: iso(first - 2 * HOUR + k * MINUTE) });
        // Older than the lookback (1 day before the first exposure): not in the covariate.
        if (i % 3 === 0) events.push({ name: 'visit', unit, value: 1.5, at: iso(first - 26 * HOUR + MINUTE) });
        for (let k = 0; k < post; k++) events.push({ name: 'visit', unit, value: 1.5, at: iso(first + (k + 1) * MINUTE) });
        truth[arm].pre.push(habit);
        truth[arm].post.push(post);
      }
    }
    // The events older than 24 h are refused at intake (too_old): send them and count.
    const old = events.filter((event: any) => Date.parse(event.at) < Date.now() - 24 * HOUR);
    const fresh = events.filter((event) => !old.includes(event));
    await sendAll('staging', exposures, fresh);
    if (old.length > 0) {
      const answer = await send({ environment: 'staging', events: old.slice(0, 1000) });
      assert.equal(answer.status, 202, answer.text);
      assert.deepEqual(answer.body, { accepted: 0, ignored: { too_old: Math.min(1000, old.length) } });
    }
    const times = (values: number[]) => values.map((value) => value * 1.5);
    const results = await resultsWith(experiment.path, 120, [
      { on: mean(truth.on.post), off: mean(truth.off.post) },
      { on: mean(times(truth.on.post)), off: mean(times(truth.off.post)) },
    ]);
    const wanted = runPython<{ cases: any[] }>(FIGURES, {
      alpha: 0.05,
      cases: [
        { kind: 'cuped', better: 'higher', control: truth.off.post, treatment: truth.on.post, control_pre: truth.off.pre, treatment_pre: truth.on.pre },
        { kind: 'cuped', better: 'higher', control: times(truth.off.post), treatment: times(truth.on.post), control_pre: times(truth.off.pre), treatment_pre: times(truth.on.pre) },
      ],
      srm: [],
    }).cases;
    for (const [m, want] of wanted.entries()) {
      const versus = results.metrics[m].versus_control.on;
      assert.equal(versus.cuped_applied, true);
      assertInterval(versus.absolute, want.absolute, `${results.metrics[m].key}: cuped absolute`);
      assertInterval(versus.relative, want.relative, `${results.metrics[m].key}: cuped relative`);
      assert.ok(versus.absolute.ci[1] - versus.absolute.ci[0] < want.raw_ci_width / 2, `CUPED narrows the interval: ${versus.absolute.ci[1] - versus.absolute.ci[0]} against ${want.raw_ci_width} without`);
    }
    // The arms' mean and variance stay the raw ones.
    assertClose(results.metrics[0].arms.on.mean, mean(truth.on.post), 'raw mean on');
  });

  test('units.csv: one row per exposed unit with its values; editors only', async () => {
    const conversions = await metric({ event: 'signup', kind: 'conversion' });
    const experiment = await runningExperiment(project.production, [conversions], {}, HOUR);
    await sendAll(
      'production',
      [
        { flag: experiment.flag, unit: '=cmd|"x"', arm: 'on' },
        { flag: experiment.flag, unit: 'plain', arm: 'off' },
      ],
      [{ name: 'signup', unit: 'plain' }], // at receipt: with its exposure, and before the results' end (now)
    );
    await resultsWith(experiment.path, 2, [{ on: 0, off: 1 }]);
    const denied = await api('GET', `${experiment.path}/units.csv`, undefined, viewer);
    assertError(denied, 403);
    const csv = await api('GET', `${experiment.path}/units.csv`);
    assert.equal(csv.status, 200, csv.text);
    assert.match(csv.headers.get('content-type') ?? '', /^text\/csv/);
    const lines = csv.text.trimEnd().split('\r\n');
    assert.equal(lines[0], `unit,arm,first_exposure,${conversions.key}`);
    const rows = lines.slice(1).map((line) => line.replace(/,\d{4}-\d\d-\d\dT[\d:.]+Z,/, ',<time>,'));
    assert.deepEqual(rows.sort(), ['"\'=cmd|""x"""' + ',on,<time>,0', 'plain,off,<time>,1'].sort());
  });
});

describe('POST /sdk/v1/events', () => {
  let experiment: Awaited<ReturnType<typeof runningExperiment>>;
  let clicks: { id: string; key: string };
  before(async () => {
    clicks = await metric({ event: 'click', kind: 'count' });
    experiment = await runningExperiment(project.production, [clicks], {}, HOUR);
  });

  test('keeps what an experiment uses and counts the rest by reason', async () => {
    const now = Date.now();
    const answer = await send({
      environment: 'production',
      exposures: [
        { flag: experiment.flag, unit: 'kept', arm: 'on', reason: 'User in 50% rollout' },
        { flag: 'nobody-watches', unit: 'u', arm: 'on' },
        { flag: experiment.flag, unit: 'u', arm: 'blue' },
        { flag: experiment.flag, unit: 'u', arm: 'on', reason: 'Matched user_id targeting rule' },
        { flag: experiment.flag, unit: 'u', arm: 'on', reason: 'Matched conditions targeting rule' },
        { flag: experiment.flag, unit: 'u', arm: 'on', reason: 'TARGETING_MATCH' },
        { flag: experiment.flag, unit: 'anonymous', arm: 'on' },
        { flag: experiment.flag, unit: 'u', arm: 'on', at: iso(now - 25 * HOUR) },
        { flag: experiment.flag, unit: 'u', arm: 'on', at: iso(now + 10 * MINUTE) },
      ],
      events: [
        { name: 'click', unit: 'kept', value: 2 },
        { name: 'unmeasured', unit: 'kept' },
      ],
    });
    assert.equal(answer.status, 202, answer.text);
    assert.deepEqual(answer.body, { accepted: 2, ignored: { not_watched: 1, unknown_arm: 1, served_by_rule: 3, anonymous: 1, too_old: 1, in_future: 1, no_metric: 1 } });
    // A count metric counts events, whatever their value.
    await resultsWith(experiment.path, 1, [{ on: 1, off: 0 }]);
  });

  test('a malformed batch is 400 and stores nothing', async () => {
    const good = { flag: experiment.flag, unit: 'never-stored', arm: 'off' };
    const bodies: [string, unknown][] = [
      ['no items', { environment: 'production' }],
      ['empty lists', { environment: 'production', exposures: [], events: [] }],
      ['over 1,000 items', { environment: 'production', exposures: Array(600).fill(good), events: Array(401).fill({ name: 'click', unit: 'u' }) }],
      ['no environment', { exposures: [good] }],
      ['an unknown field', { environment: 'production', exposures: [good], extra: 1 }],
      ['a name with a space', { environment: 'production', exposures: [good], events: [{ name: 'add to cart', unit: 'u' }] }],
      ['a name of 101 characters', { environment: 'production', exposures: [good], events: [{ name: 'a'.repeat(101), unit: 'u' }] }],
      ['an empty unit', { environment: 'production', exposures: [good, { ...good, unit: '' }] }],
      ['a unit of 257 characters', { environment: 'production', exposures: [good, { ...good, unit: 'u'.repeat(257) }] }],
      ['a value that is text', { environment: 'production', exposures: [good], events: [{ name: 'click', unit: 'u', value: '3' }] }],
      ['a time that is not ISO 8601', { environment: 'production', exposures: [{ ...good, at: 'yesterday' }] }],
      ['an exposure without its arm', { environment: 'production', exposures: [good, { flag: experiment.flag, unit: 'u' }] }],
    ];
    for (const [what, body] of bodies) assertError(await send(body), 400, what);
    // JSON's grammar has no infinity, but a number too large for a double parses as one.
    const infinite = await fetch(`${server.url}/sdk/v1/events`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-sdk-key': project.sdk_key },
      body: `{"environment":"production","exposures":[${JSON.stringify(good)}],"events":[{"name":"click","unit":"u","value":1e999}]}`,
    });
    assert.equal(infinite.status, 400);
    assert.match(await infinite.text(), /events\[0\]\.value must be a finite number/);
    assertError(await request(server, 'POST', '/sdk/v1/events', { sdkKey: project.sdk_key, body: 'not json', headers: { 'content-type': 'application/json' } }), 400);
    await new Promise((resolve) => setTimeout(resolve, 600)); // past a flush
    // A unit is added to `units` only with a row that is kept.
    const stored = await server.database.db.selectFrom('units').select('unit').where('unit', '=', 'never-stored').execute();
    assert.deepEqual(stored, []);
  });

  test('credentials: the SDK key or an API token of the project; 401 without, 404 for an unknown environment', async () => {
    const one = (unit: string) => ({ environment: 'production', exposures: [{ flag: experiment.flag, unit, arm: 'off' }] });
    assertError(await request(server, 'POST', '/sdk/v1/events', { body: one('x') }), 401);
    assertError(await send(one('x'), server, 'sdk_wrong'), 401);
    assertError(await send({ ...one('x'), environment: 'nowhere' }), 404);
    const token = await api('POST', '/api/tokens', { name: 'events', project_id: project.id });
    assert.equal(token.status, 201, token.text);
    const byToken = await request(server, 'POST', '/sdk/v1/events', { token: token.body.token, body: one('by-token') });
    assert.equal(byToken.status, 202, byToken.text);
    assert.equal(byToken.body.accepted, 1);
    const viewerToken = await api('POST', '/api/tokens', { name: 'viewer events', project_id: project.id }, viewer);
    assert.equal((await request(server, 'POST', '/sdk/v1/events', { token: viewerToken.body.token, body: one('by-viewer-token') })).status, 202, 'any member of the project may send');
    const stranger = await newUser(server, 'stranger');
    const strangerToken = await request(server, 'POST', '/api/tokens', { token: stranger.token, body: { name: 'x' } });
    assertError(await request(server, 'POST', `/sdk/v1/events?project=${project.id}`, { token: strangerToken.body.token, body: one('x') }), 404);
  });

  test('results: viewers read them; a draft has none (409)', async () => {
    assert.equal((await api('GET', `${experiment.path}/results`, undefined, viewer)).status, 200);
    const flag = await newFlag(server, owner, project, { key: `draft-flag-${++counter}`, enabled: true, rollout_percentage: 50 });
    const draft = await api('POST', experimentsPath(project.production), { flag_id: flag.id, name: 'Draft', control: 'off', metrics: [{ metric_id: clicks.id, role: 'primary' }] });
    assertError(await api('GET', `${experimentsPath(project.production)}/${draft.body.id}/results`), 409);
  });
});

describe('POST /sdk/v1/events: limits and instances', () => {
  test('RATE_LIMIT_EVENTS requests a minute per credential, then 429 with Retry-After', async () => {
    const limited = await startServer({ RATE_LIMIT_EVENTS: '3' });
    try {
      const user = await newUser(limited, 'limited');
      const own = await newProject(limited, user, 'Limited');
      const body = { environment: 'production', events: [{ name: 'x', unit: 'u' }] };
      for (let i = 0; i < 3; i++) assert.equal((await send(body, limited, own.sdk_key)).status, 202);
      const refused = await send(body, limited, own.sdk_key);
      assertError(refused, 429);
      assert.ok(Number(refused.headers.get('retry-after')) >= 1);
      const other = await newProject(limited, user, 'Other');
      assert.equal((await send(body, limited, other.sdk_key)).status, 202, "another project's key has its own budget");
    } finally {
      await limited.close();
    }
  });

  test('two instances take events at once and the results count every one', async () => {
    const { a, b, close } = await startTwoInstances();
    try {
      const user = await newUser(a, 'two');
      const own = await newProject(a, user, 'Two instances');
      const metricAnswer = await request(a, 'POST', `/api/projects/${own.id}/metrics`, { token: user.token, body: { key: 'clicks', name: 'Clicks', event: 'click', kind: 'count', better: 'higher' } });
      const flag = await newFlag(a, user, own, { key: 'two', enabled: true, rollout_percentage: 50 });
      const created = await request(a, 'POST', `/api/projects/${own.id}/environments/${own.production}/experiments`, { token: user.token, body: { flag_id: flag.id, name: 'Two', control: 'off', metrics: [{ metric_id: metricAnswer.body.id, role: 'primary' }] } });
      const path = `/api/projects/${own.id}/environments/${own.production}/experiments/${created.body.id}`;
      assert.equal((await request(a, 'POST', `${path}/start`, { token: user.token })).status, 200);
      const batch = (instance: string, k: number) => ({
        environment: 'production',
        exposures: Array.from({ length: 200 }, (_, i) => ({ flag: 'two', unit: `${instance}-${k}-${i}`, arm: i % 2 ? 'on' : 'off' })),
        events: Array.from({ length: 300 }, (_, i) => ({ name: 'click', unit: `${instance}-${k}-${i % 200}` })),
      });
      // b learns of the start through the change feed: send once it keeps exposures.
      await eventually(async () => (await send({ environment: 'production', exposures: [{ flag: 'two', unit: 'probe', arm: 'on' }] }, b, own.sdk_key)).body.accepted === 1, 'b watching the flag');
      const answers = await Promise.all([0, 1, 2, 3, 4].flatMap((k) => [send(batch('a', k), a, own.sdk_key), send(batch('b', k), b, own.sdk_key)]));
      for (const answer of answers) assert.deepEqual([answer.status, answer.body.accepted], [202, 500], answer.text);
      let results: any;
      await eventually(async () => {
        results = (await request(b, 'GET', `${path}/results`, { token: user.token })).body;
        return results.units === 2001 && results.metrics[0].arms.on.mean * results.metrics[0].arms.on.units + results.metrics[0].arms.off.mean * results.metrics[0].arms.off.units === 3000;
      }, 'results counting both instances', 20_000);
      assert.equal(results.arms.on.units + results.arms.off.units, 2001);
    } finally {
      await close();
    }
  });

  test('rows of an environment deleted before they are written are dropped; the rest of the flush is written', async () => {
    const own = await newProject(server, owner, 'Deleted environment');
    assert.equal((await api('POST', `/api/projects/${own.id}/metrics`, { key: 'clicks', name: 'Clicks', event: 'click', kind: 'count', better: 'higher' })).status, 201);
    const clicks = (prefix: string, n: number) => Array.from({ length: n }, (_, i) => ({ name: 'click', unit: `${prefix}-${i}` }));
    const accept = async () => {
      const answers = await Promise.all([send({ environment: 'staging', events: clicks('s', 500) }, server, own.sdk_key), send({ environment: 'production', events: clicks('p', 500) }, server, own.sdk_key)]);
      assert.deepEqual(answers.map((answer) => [answer.status, answer.body.accepted]), [[202, 500], [202, 500]]);
    };
    const sqlite = server.database.sqlite;
    if (sqlite) {
      // The server's connection holds the write lock while the rows are accepted and their
      // environment deleted, so the intake's writer can only meet them after it is gone.
      sqlite.exec('begin immediate');
      try {
        await accept();
        sqlite.prepare('delete from environments where id = ?').run(own.staging);
      } finally {
        sqlite.exec('commit');
      }
    } else {
      // The environment's deletion, not yet committed, holds its row while the rows are accepted:
      // the intake's writer waits for it (its lock, as a foreign key check's) and then finds it gone.
      await server.database.db.transaction().execute(async (trx) => {
        await trx.deleteFrom('environments').where('id', '=', own.staging).execute();
        await accept();
        await eventually(async () => Number((await sql<{ n: string }>`select count(*) as n from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock'`.execute(server.database.db)).rows[0]!.n) > 0, "the intake's writer waiting for the deletion");
      });
    }
    const count = async (table: 'events' | 'units', environmentId: string) =>
      Number((await server.database.db.selectFrom(table).select((eb) => eb.fn.countAll().as('n')).where('environment_id', '=', environmentId).executeTakeFirstOrThrow()).n);
    await eventually(async () => (await count('events', own.production)) === 500, 'the production rows written');
    // The intake goes on: a later batch is written too.
    assert.equal((await send({ environment: 'production', events: clicks('q', 100) }, server, own.sdk_key)).status, 202);
    await eventually(async () => (await count('events', own.production)) === 600, 'the later rows written');
    assert.deepEqual([await count('events', own.staging), await count('units', own.staging), await count('units', own.production)], [0, 0, 600]);
  });

  test('a flush that fails is written by a later one: every row once, none lost', async () => {
    const own = await newProject(server, owner, 'Failed flush');
    assert.equal((await api('POST', `/api/projects/${own.id}/metrics`, { key: 'clicks', name: 'Clicks', event: 'click', kind: 'count', better: 'higher' })).status, 201);
    const clicks = (prefix: string) => Array.from({ length: 1000 }, (_, i) => ({ name: 'click', unit: `${prefix}-${i}` }));
    const count = async () => Number((await server.database.db.selectFrom('events').select((eb) => eb.fn.countAll().as('n')).where('environment_id', '=', own.production).executeTakeFirstOrThrow()).n);
    const accept = async () => {
      const answers = await Promise.all(['a', 'b', 'c'].map((prefix) => send({ environment: 'production', events: clicks(prefix) }, server, own.sdk_key)));
      assert.deepEqual(answers.map((answer) => answer.body.accepted), [1000, 1000, 1000]);
    };
    const sqlite = server.database.sqlite;
    if (sqlite) {
      // The write lock held past the writer's 5 s busy timeout: its group fails.
      sqlite.exec('begin immediate');
      try {
        await accept();
        await new Promise((resolve) => setTimeout(resolve, 6000));
        assert.equal(await count(), 0);
      } finally {
        sqlite.exec('commit');
      }
    } else {
      // The writer's connection ended while its statement waits for a lock: its group fails, the flush's later ones are not tried.
      await server.database.db.transaction().execute(async (trx) => {
        await sql`lock table events in access exclusive mode`.execute(trx);
        await accept();
        let writer: number | undefined;
        await eventually(async () => {
          writer = (await sql<{ pid: number }>`select pid from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock' and query like '%insert into events%'`.execute(server.database.db)).rows[0]?.pid;
          return writer !== undefined;
        }, "the intake's writer waiting for the lock");
        await sql`select pg_terminate_backend(${writer})`.execute(server.database.db);
      });
    }
    await eventually(async () => (await count()) === 3000, 'the 3,000 rows written by a later flush');
    const units = await server.database.db.selectFrom('units').select((eb) => eb.fn.countAll().as('n')).where('environment_id', '=', own.production).executeTakeFirstOrThrow();
    assert.equal(Number(units.n), 3000);
  });

  test("deleting an environment deletes its exposures, events and units; another environment's stay", async () => {
    const own = await newProject(server, owner, 'Environment deleted with its rows');
    const clicks = await api('POST', `/api/projects/${own.id}/metrics`, { key: 'clicks', name: 'Clicks', event: 'click', kind: 'count', better: 'higher' });
    for (const environment of [own.staging, own.production]) {
      const flag = await newFlag(server, owner, own, { key: 'kept', enabled: true, rollout_percentage: 50 }, environment);
      const created = await api('POST', `/api/projects/${own.id}/environments/${environment}/experiments`, { flag_id: flag.id, name: 'Kept', control: 'off', metrics: [{ metric_id: clicks.body.id, role: 'primary' }] });
      assert.equal((await api('POST', `/api/projects/${own.id}/environments/${environment}/experiments/${created.body.id}/start`)).status, 200);
    }
    const batch = { exposures: [{ flag: 'kept', unit: 'u1', arm: 'on' }], events: [{ name: 'click', unit: 'u1' }] };
    for (const environment of ['staging', 'production']) assert.equal((await send({ environment, ...batch }, server, own.sdk_key)).body.accepted, 2);
    const count = async (table: 'exposures' | 'events' | 'units', environmentId: string) =>
      Number((await server.database.db.selectFrom(table).select((eb) => eb.fn.countAll().as('n')).where('environment_id', '=', environmentId).executeTakeFirstOrThrow()).n);
    const counts = (environmentId: string) => Promise.all([count('exposures', environmentId), count('events', environmentId), count('units', environmentId)]);
    await eventually(async () => (await counts(own.staging)).join() === '1,1,1' && (await counts(own.production)).join() === '1,1,1', 'the rows written');
    assert.equal((await api('DELETE', `/api/projects/${own.id}/environments/${own.staging}`)).status, 204);
    assert.deepEqual(await counts(own.staging), [0, 0, 0]);
    assert.deepEqual(await counts(own.production), [1, 1, 1]);
  });

  test('SIGTERM writes what was accepted and not yet written', async () => {
    const database = await createTestDatabase();
    const port = await freePort();
    const env = { DATABASE_URL: database.url, RATE_LIMIT_EVENTS: '0' };
    let child = await startChildServer(port, env);
    try {
      const target = { url: child.url };
      const user = await newUser(target, 'stopper', { verified: false });
      const own = await newProject(target, user, 'Stop');
      const metricAnswer = await request(target, 'POST', `/api/projects/${own.id}/metrics`, { token: user.token, body: { key: 'clicks', name: 'Clicks', event: 'click', kind: 'count', better: 'higher' } });
      const flag = await newFlag(target, user, own, { key: 'stop', enabled: true, rollout_percentage: 50 });
      const created = await request(target, 'POST', `/api/projects/${own.id}/environments/${own.production}/experiments`, { token: user.token, body: { flag_id: flag.id, name: 'Stop', control: 'off', metrics: [{ metric_id: metricAnswer.body.id, role: 'primary' }] } });
      const path = `/api/projects/${own.id}/environments/${own.production}/experiments/${created.body.id}`;
      assert.equal((await request(target, 'POST', `${path}/start`, { token: user.token })).status, 200);
      const answers = await Promise.all(
        Array.from({ length: 10 }, (_, k) =>
          send({ environment: 'production', exposures: Array.from({ length: 100 }, (_, i) => ({ flag: 'stop', unit: `${k}-${i}`, arm: i % 2 ? 'on' : 'off' })) }, target, own.sdk_key),
        ),
      );
      assert.ok(answers.every((answer) => answer.status === 202 && answer.body.accepted === 100));
      assert.deepEqual(await child.kill('SIGTERM'), { code: 0, signal: null });
      child = await startChildServer(port, env);
      // The results kept before the stop may predate the last rows (written by the flush at SIGTERM):
      // every running experiment is computed again after a start.
      const restarted = { url: child.url };
      await eventually(async () => (await request(restarted, 'GET', `${path}/results`, { token: user.token })).body.units === 1000, 'results counting the 1,000 units after the restart');
    } finally {
      await child.kill('SIGTERM');
      await database.drop();
    }
  });
});
