/**
 * Exposures and track() events from @guidon/sdk into the real server (docs/experiments.md,
 * "Sending exposures and events"): a running experiment watches a flag, a local client and a
 * remote one read it for their units (several times each) and track events, close() sends them,
 * and the experiment's results count each unit once in the arm the SDK served it and its events
 * exactly. A change to the flag (its rollout raised) is a new version: the units moved to the
 * other arm are exposed again and counted as multiple exposures. Exposures of a flag no
 * experiment watches are ignored by the server; the client's counts say all were sent.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createClient, type GuidonClient, type LocalClient } from '@guidon/sdk';
import { eventually, flagsPath, newFlag, newProject, newUser, request, startServer, type TestProject, type TestServer, type TestUser } from '@guidon/server/dist/tests/harness.js';

describe('exposures and events into a running experiment', () => {
  let server: TestServer;
  let user: TestUser;
  let project: TestProject;
  let token: string;
  const api = (method: string, path: string, body?: unknown) => request(server, method, path, { token: user.token, ...(body === undefined ? {} : { body }) });

  before(async () => {
    server = await startServer();
    user = await newUser(server);
    project = await newProject(server, user);
    token = (await api('POST', '/api/tokens', { name: 'experiments', project_id: project.id })).body.token;
  });
  after(async () => server?.close());

  async function metric(key: string, event: string, kind: string) {
    const created = await api('POST', `/api/projects/${project.id}/metrics`, { key, name: key, event, kind, better: 'higher' });
    assert.equal(created.status, 201, created.text);
    return created.body.id as string;
  }

  /** A running experiment (control off) on a new flag with this rollout. */
  async function experiment(flagKey: string, rollout: number, metricIds: string[]) {
    const flag = await newFlag(server, user, project, { key: flagKey, enabled: true, rollout_percentage: rollout });
    const path = `/api/projects/${project.id}/environments/${project.production}/experiments`;
    const created = await api('POST', path, { flag_id: flag.id, name: flagKey, control: 'off', metrics: metricIds.map((metric_id, i) => ({ metric_id, role: i === 0 ? 'primary' : 'secondary' })) });
    assert.equal(created.status, 201, created.text);
    const started = await api('POST', `${path}/${created.body.id}/start`);
    assert.equal(started.status, 200, started.text);
    return { flagId: flag.id as string, path: `${path}/${created.body.id}` };
  }

  /** The results once they count `units` exposed units (computed in the background). */
  async function resultsWith(path: string, units: number, extra: (body: any) => boolean = () => true) {
    let last: any;
    await eventually(async () => {
      last = await api('GET', `${path}/results`);
      return last.status === 200 && last.body.units === units && extra(last.body);
    }, `results counting ${units} units`, 20_000);
    return last.body;
  }

  const mean = (values: number[]) => values.reduce((a, b) => a + b, 0) / values.length;

  test('local and remote clients: each unit once in the arm it was served, its events counted exactly', async () => {
    const purchases = await metric('purchases', 'purchase', 'count');
    const spend = await metric('spend', 'spend', 'sum');
    const { path } = await experiment('checkout', 50, [purchases, spend]);
    await newFlag(server, user, project, { key: 'unwatched', enabled: true });

    const local: LocalClient = createClient({ baseUrl: server.url, apiToken: token, environment: 'production', mode: 'local', sendUsage: false });
    const remote: GuidonClient = createClient({ baseUrl: server.url, sdkKey: project.sdk_key, environment: 'production', storage: false, context: { user_id: 'r-0' } });
    assert.equal(await local.ready(), true);
    assert.equal(await remote.ready(), true);

    const units = [...Array.from({ length: 60 }, (_, i) => `l-${i}`), ...Array.from({ length: 20 }, (_, i) => `r-${i}`)];
    const arms = new Map<string, string>();
    const purchasesOf = (i: number) => i % 3;
    const spendOf = (i: number) => (i % 2 === 0 ? (i % 5) + 0.5 : 0);
    for (let round = 0; round < 3; round++) {
      for (const [i, unit] of units.entries()) {
        const context = { user_id: unit };
        let on: boolean;
        if (unit.startsWith('l-')) {
          const flags = local.evaluate(context);
          on = flags.isEnabled('checkout');
          flags.isEnabled('unwatched');
        } else {
          const flags = await remote.forContext(context);
          on = flags.isEnabled('checkout');
          flags.flag('unwatched');
        }
        arms.set(unit, on ? 'on' : 'off');
        if (round > 0) continue;
        const client = unit.startsWith('l-') ? local : remote;
        for (let n = 0; n < purchasesOf(i); n++) client.track('purchase', context);
        if (spendOf(i) > 0) client.track('spend', context, { value: spendOf(i) });
      }
    }
    local.evaluate({}).isEnabled('checkout'); // anonymous: no exposure
    await Promise.all([local.close(), remote.close()]);

    const exposures = units.length * 2; // checkout and unwatched, once per unit
    const events = units.reduce((sum, _, i) => sum + purchasesOf(i) + (spendOf(i) > 0 ? 1 : 0), 0);
    const sent = local.eventStats().sent + remote.eventStats().sent;
    assert.equal(sent, exposures + events);
    assert.deepEqual([local.eventStats().dropped, remote.eventStats().dropped, local.eventStats().invalid, remote.eventStats().invalid], [0, 0, 0, 0]);

    const inArm = (arm: string) => units.map((unit, i) => ({ unit, i })).filter(({ unit }) => arms.get(unit) === arm);
    const close = (a: number, b: number) => Math.abs(a - b) < 1e-9;
    // A flush commits exposures before events (intake.writer.ts): wait for a computation that has both.
    const results = await resultsWith(path, units.length, (body) =>
      ['on', 'off'].every((arm) => {
        const byKey = Object.fromEntries(body.metrics.map((m: any) => [m.key, m.arms[arm]]));
        return close(byKey.purchases.mean, mean(inArm(arm).map(({ i }) => purchasesOf(i)))) && close(byKey.spend.mean, mean(inArm(arm).map(({ i }) => spendOf(i))));
      }),
    );
    assert.equal(results.multiple_exposures.units, 0);
    for (const arm of ['on', 'off']) {
      assert.equal(results.arms[arm].units, inArm(arm).length, arm);
      assert.ok(inArm(arm).length > 10, `${arm}: a 50 % rollout gives each arm some of 80 units`);
      const byKey = Object.fromEntries(results.metrics.map((m: any) => [m.key, m.arms[arm]]));
      assert.equal(byKey.purchases.units, inArm(arm).length);
      assert.ok(close(byKey.purchases.mean, mean(inArm(arm).map(({ i }) => purchasesOf(i)))), `purchases in ${arm}`);
      assert.ok(close(byKey.spend.mean, mean(inArm(arm).map(({ i }) => spendOf(i)))), `spend in ${arm}`);
    }
  });

  test('a change to the flag is a new version: units whose side changed are exposed again', async () => {
    const visits = await metric('visits', 'visit', 'count');
    const { flagId, path } = await experiment('release', 30, [visits]);
    const local: LocalClient = createClient({ baseUrl: server.url, apiToken: token, environment: 'production', mode: 'local', sendUsage: false });
    assert.equal(await local.ready(), true);
    const units = Array.from({ length: 40 }, (_, i) => `v-${i}`);
    const first = new Map(units.map((unit) => [unit, local.evaluate({ user_id: unit }).isEnabled('release')]));
    const changed = new Promise<void>((resolve) => local.on('change', ({ keys }) => keys.includes('release') && resolve()));
    const raised = await api('PUT', `${flagsPath(project)}/${flagId}`, { rollout_percentage: 100 });
    assert.equal(raised.status, 200, raised.text);
    await changed;
    for (const unit of units) for (let n = 0; n < 2; n++) local.evaluate({ user_id: unit }).isEnabled('release');
    await local.close();
    const movedOn = units.filter((unit) => !first.get(unit)).length;
    assert.ok(movedOn > 0 && movedOn < units.length);
    // Sent: one exposure per unit, then one more per unit of the new version (the same arm for those already on).
    assert.equal(local.eventStats().sent, units.length * 2);
    const results = await resultsWith(path, units.length, (body) => body.multiple_exposures.units === movedOn);
    assert.equal(results.multiple_exposures.units, movedOn, 'the units moved from off to on');
  });
});
