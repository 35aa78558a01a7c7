/**
 * Exposures and track() (packages/sdk/src/exposures.ts) against a real HTTP server that records
 * what POST /sdk/v1/events receives (started here, on node:http; the intake's own checks are the
 * server's tests): one exposure per (flag version, unit, arm) for the one-flag reads and none for
 * allFlags() or a context without a unit, in local and remote mode; a changed flag recorded
 * again; batches of at most 500 sent before the interval when full and at close(); the queue
 * bounded (the oldest dropped and counted); a 429 kept and sent again, a 400 dropped; track()'s
 * checks. Against Guidon itself: events-intake.test.ts.
 */
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createClient, type Flags, type GuidonClient, type GuidonError, type LocalClient, type LocalClientOptions, type RulesetDocument } from '@guidon/sdk';

interface Received {
  headers: IncomingMessage['headers'];
  url: string;
  body: { environment: string; exposures?: { flag: string; unit: string; arm: string; reason?: string; at?: string }[]; events?: { name: string; unit: string; value?: number; at?: string }[] };
}

/** A server that records POST /sdk/v1/events, answers the ruleset and evaluate from what the test sets, and anything else 404. */
async function recorder() {
  const received: Received[] = [];
  const state = {
    ruleset: undefined as RulesetDocument | undefined,
    flags: (_context: { user_id?: string | null }): Flags => ({}),
    /** The next answers of the intake, before the usual 202. */
    answers: [] as { status: number; headers?: Record<string, string> }[],
  };
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    let text = '';
    req.on('data', (chunk) => (text += chunk));
    req.on('end', () => {
      const path = req.url!.split('?')[0];
      if (req.method === 'POST' && path === '/sdk/v1/events') {
        const next = state.answers.shift();
        if (next) return res.writeHead(next.status, { 'content-type': 'application/json', ...next.headers }).end('{"message":"no"}');
        const body = JSON.parse(text) as Received['body'];
        received.push({ headers: req.headers, url: req.url!, body });
        return res.writeHead(202, { 'content-type': 'application/json' }).end(JSON.stringify({ accepted: (body.exposures?.length ?? 0) + (body.events?.length ?? 0), ignored: {} }));
      }
      if (req.method === 'GET' && path === '/sdk/v1/ruleset' && state.ruleset) {
        const etag = `"${state.ruleset.revision}"`;
        if (req.headers['if-none-match'] === etag) return res.writeHead(304).end();
        return res.writeHead(200, { 'content-type': 'application/json', etag }).end(JSON.stringify(state.ruleset));
      }
      if (req.method === 'POST' && path === '/sdk/v1/evaluate') {
        return res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ flags: state.flags((JSON.parse(text) as { context: { user_id?: string } }).context) }));
      }
      res.writeHead(404, { 'content-type': 'application/json' }).end('{"message":"not here"}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const exposures = () => received.flatMap((r) => r.body.exposures ?? []);
  const events = () => received.flatMap((r) => r.body.events ?? []);
  return { url, received, state, exposures, events, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}

const servers: Awaited<ReturnType<typeof recorder>>[] = [];
after(() => Promise.all(servers.map((s) => s.close())));
async function started() {
  const made = await recorder();
  servers.push(made);
  return made;
}

const RULESET: RulesetDocument = {
  format: 2,
  environment: 'production',
  revision: 1,
  segments: {},
  flags: [
    { key: 'checkout', enabled: true, rolloutPercentage: 50, rules: [] },
    { key: 'banner', enabled: true, rolloutPercentage: 0, rules: [], variants: [{ key: 'blue', value: 'blue', weight: 500 }, { key: 'green', value: 'green', weight: 500 }] },
    { key: 'vip', enabled: true, rolloutPercentage: 0, everyoneElse: 'off', rules: [{ type: 'user_id', value: 'vip', enabled: true }] },
  ],
} as unknown as RulesetDocument;

function local(url: string, extra: Partial<LocalClientOptions> = {}): LocalClient {
  return createClient({ baseUrl: url, apiToken: 'gdn_test', environment: 'production', mode: 'local', bootstrap: RULESET, stream: false, pollIntervalMs: 3_600_000, sendUsage: false, eventsIntervalMs: 3_600_000, timeoutMs: 2000, ...extra });
}

function errorsOf(c: { on(event: 'error', listener: (error: GuidonError) => void): () => void }): GuidonError[] {
  const seen: GuidonError[] = [];
  c.on('error', (error) => seen.push(error));
  return seen;
}

const eventually = async (check: () => boolean, what: string, ms = 5000) => {
  const until = Date.now() + ms;
  while (!check()) {
    if (Date.now() > until) assert.fail(`not within ${ms} ms: ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
};

describe('exposures, local mode', () => {
  test('one per (flag, unit, arm) for isEnabled, variant, value and flag; none for allFlags(), reason() or no unit; sent at close() with the reason', async () => {
    const server = await started();
    const c = local(server.url);
    for (let round = 0; round < 3; round++) {
      for (const user_id of ['u1', 'u2', 'vip']) {
        const flags = c.evaluate({ user_id, custom_attributes: { plan: 'pro' } });
        flags.isEnabled('checkout');
        flags.variant('banner');
        flags.value('banner', 'none');
        flags.flag('vip');
        flags.isEnabled('not-a-flag');
      }
    }
    c.evaluate({ user_id: 'u9' }).allFlags();
    c.evaluate({ user_id: 'u9' }).reason('checkout');
    c.evaluate({}).isEnabled('checkout');
    c.evaluate({ user_id: 'anonymous' }).isEnabled('checkout');
    c.evaluate({ user_email: 'e@example.com' }).isEnabled('checkout');
    assert.equal(c.eventStats().queued, 10);
    await c.close();
    assert.equal(server.received.length, 1);
    const [request] = server.received;
    assert.equal(request!.headers.authorization, 'Bearer gdn_test');
    assert.equal(request!.body.environment, 'production');
    const exposures = server.exposures();
    assert.equal(exposures.length, 10, JSON.stringify(exposures));
    const reference = local(server.url, { sendExposures: false });
    for (const exposure of exposures) {
      const flags = reference.evaluate(exposure.unit.includes('@') ? { user_email: exposure.unit } : { user_id: exposure.unit });
      const state = flags.flag(exposure.flag);
      assert.equal(exposure.arm, state.variant ?? (state.enabled ? 'on' : 'off'), JSON.stringify(exposure));
      assert.equal(exposure.reason, state.reason);
      assert.ok(Math.abs(Date.parse(exposure.at!) - Date.now()) < 10_000);
    }
    assert.deepEqual(exposures.filter((e) => e.flag === 'vip').map((e) => [e.unit, e.arm]).sort(), [['u1', 'off'], ['u2', 'off'], ['vip', 'on']]);
    assert.deepEqual(exposures.filter((e) => e.unit === 'e@example.com').map((e) => e.flag), ['checkout']);
    await reference.close();
    assert.equal(server.received.length, 1, 'sendExposures: false sends nothing');
    assert.deepEqual(c.eventStats(), { queued: 0, sent: 10, dropped: 0, invalid: 0 });
  });

  test('a changed flag is a new version: its units are recorded again, those of an unchanged flag are not', async () => {
    const server = await started();
    server.state.ruleset = RULESET;
    const c = local(server.url, { pollIntervalMs: 30 });
    const changes: string[][] = [];
    c.on('change', ({ keys }) => changes.push(keys));
    await c.ready();
    const read = () => {
      for (const user_id of ['u1', 'u2']) {
        const flags = c.evaluate({ user_id });
        flags.isEnabled('checkout');
        flags.isEnabled('vip');
      }
    };
    read();
    assert.equal(c.eventStats().queued, 4);
    const flags = RULESET.flags.map((flag) => (flag.key === 'vip' ? { ...flag, rules: [{ type: 'user_id', value: 'u1', enabled: true }] } : flag));
    server.state.ruleset = { ...RULESET, revision: 2, flags } as RulesetDocument;
    await eventually(() => changes.length > 0, 'the change');
    assert.deepEqual(changes, [['vip']]);
    read();
    read();
    await c.close();
    const recorded = server.exposures().map((e) => `${e.flag}:${e.unit}:${e.arm}`);
    const arm = (user_id: string) => (c.evaluate({ user_id }).allFlags().checkout!.enabled ? 'on' : 'off');
    // checkout did not change: once per unit; vip did: both units again (u1 on another arm).
    assert.deepEqual(recorded, [`checkout:u1:${arm('u1')}`, 'vip:u1:off', `checkout:u2:${arm('u2')}`, 'vip:u2:off', 'vip:u1:on', 'vip:u2:off']);
  });

  test('batches of at most 500, sent when 500 wait (before the interval), the rest at close()', async () => {
    const server = await started();
    const c = local(server.url);
    for (let i = 0; i < 1200; i++) c.evaluate({ user_id: `user-${i}` }).isEnabled('checkout');
    await eventually(() => server.received.length >= 2, 'the full batches');
    await c.close();
    const sizes = server.received.map((r) => r.body.exposures?.length ?? 0);
    assert.ok(sizes.every((n) => n > 0 && n <= 500), String(sizes));
    assert.equal(sizes.reduce((a, b) => a + b, 0), 1200);
    assert.equal(new Set(server.exposures().map((e) => e.unit)).size, 1200);
  });

  test('also sent every interval', async () => {
    const server = await started();
    const c = local(server.url, { eventsIntervalMs: 100 });
    c.evaluate({ user_id: 'u1' }).isEnabled('checkout');
    c.track('purchase', { user_id: 'u1' });
    await eventually(() => server.received.length === 1, 'a round after the interval', 2000);
    assert.equal(server.exposures().length, 1);
    assert.equal(server.events().length, 1);
    await c.close();
    assert.equal(server.received.length, 1, 'nothing left for close()');
  });

  test('bounded: past maxQueuedEvents the oldest are dropped, counted and said; past maxSeenExposures the oldest are forgotten', async () => {
    const server = await started();
    const c = local(server.url, { maxQueuedEvents: 100, maxSeenExposures: 50 });
    const errors = errorsOf(c);
    for (let i = 0; i < 250; i++) c.evaluate({ user_id: `user-${i}` }).isEnabled('checkout');
    assert.deepEqual(c.eventStats(), { queued: 100, sent: 0, dropped: 150, invalid: 0 });
    // user-249 is remembered (the last 50), user-0 forgotten: recorded again.
    c.evaluate({ user_id: 'user-249' }).isEnabled('checkout');
    c.evaluate({ user_id: 'user-0' }).isEnabled('checkout');
    const stats = c.eventStats();
    assert.equal(stats.queued, 100);
    assert.equal(stats.dropped, 151);
    const closing = c.close();
    await closing;
    const units = server.exposures().map((e) => e.unit);
    assert.equal(units.length, 100);
    assert.equal(units[0], 'user-151', 'the oldest were dropped');
    assert.equal(units.at(-1), 'user-0');
    assert.ok(errors.length === 0 || errors.some((e) => /151 exposures and events dropped/.test(e.message)), errors.map((e) => e.message).join());
  });

  test('a 429 is kept and sent again after its Retry-After; a 400 is dropped and counted', async () => {
    const server = await started();
    server.state.answers.push({ status: 429, headers: { 'retry-after': '0' } });
    const c = local(server.url, { eventsIntervalMs: 50 });
    const errors = errorsOf(c);
    c.track('purchase', { user_id: 'u1' }, { value: 3 });
    await eventually(() => server.received.length === 1, 'sent again after the 429');
    assert.deepEqual(server.events().map((e) => [e.name, e.unit, e.value]), [['purchase', 'u1', 3]]);
    assert.equal(errors.find((e) => e.message.startsWith('Exposures and events'))?.status, 429);
    server.state.answers.push({ status: 400 });
    c.track('purchase', { user_id: 'u2' });
    await eventually(() => c.eventStats().dropped === 1, 'the 400 dropped');
    c.track('purchase', { user_id: 'u3' });
    await c.close();
    assert.deepEqual(server.events().map((e) => e.unit), ['u1', 'u3']);
    assert.deepEqual(c.eventStats(), { queued: 0, sent: 2, dropped: 1, invalid: 0 });
  });

  test('track(): name, unit and value checked here (counted invalid, said, never thrown); value absent or a finite number', async () => {
    const server = await started();
    const c = local(server.url);
    const errors = errorsOf(c);
    c.track('purchase', { user_id: 'u1' }, { value: 12.5 });
    c.track('signup:done', { user_email: 'a@example.com' });
    c.track('', { user_id: 'u1' });
    c.track('bad name', { user_id: 'u1' });
    c.track('x'.repeat(101), { user_id: 'u1' });
    c.track('purchase', {});
    c.track('purchase', { user_id: 'anonymous' });
    c.track('purchase', { user_id: 'u1' }, { value: Number.NaN });
    c.track('purchase', { user_id: 'u1' }, { value: '3' as unknown as number });
    c.track(undefined as unknown as string, undefined as unknown as {});
    await c.close();
    assert.deepEqual(server.events().map(({ name, unit, value }) => ({ name, unit, value })), [
      { name: 'purchase', unit: 'u1', value: 12.5 },
      { name: 'signup:done', unit: 'a@example.com', value: undefined },
    ]);
    assert.equal(c.eventStats().invalid, 8);
    assert.equal(errors.filter((e) => e.kind === 'events').length, 8);
  });

  test('Guidon unavailable (503): the batch is kept, and a full queue does not ask again before the interval', async () => {
    const server = await started();
    for (let i = 0; i < 50; i++) server.state.answers.push({ status: 503 });
    const c = local(server.url);
    for (let chunk = 0; chunk < 4; chunk++) {
      for (let i = 0; i < 600; i++) c.evaluate({ user_id: `user-${chunk}-${i}` }).isEnabled('checkout');
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    assert.equal(50 - server.state.answers.length, 1, 'one request: the first full batch');
    server.state.answers.length = 0;
    await c.close();
    // close() sends the kept batch, then the rest.
    assert.equal(server.exposures().length, 2400);
  });

  test('Guidon unreachable: reads go on, nothing throws, close() resolves', async () => {
    const server = await started();
    await server.close();
    const c = local(server.url, { timeoutMs: 300 });
    for (let i = 0; i < 600; i++) c.evaluate({ user_id: `user-${i}` }).isEnabled('checkout');
    c.track('purchase', { user_id: 'u1' });
    await c.close();
    assert.equal(c.eventStats().sent, 0);
  });
});

describe('exposures, remote mode', () => {
  const remote = (url: string, extra: Partial<Parameters<typeof createClient>[0]> = {}): GuidonClient =>
    createClient({ baseUrl: url, sdkKey: 'sdk_test', environment: 'production', stream: false, pollIntervalMs: 3_600_000, storage: false, eventsIntervalMs: 3_600_000, ...extra } as Parameters<typeof createClient>[0] & { sdkKey: string }) as GuidonClient;

  test("the client's context and forContext's: one per (flag, unit, arm); none before Guidon answered, for allFlags() or reason(); a changed answer recorded again", async () => {
    const server = await started();
    let banner = 'blue';
    server.state.flags = (context) => ({
      checkout: { enabled: context.user_id === 'u1', reason: 'Rollout' },
      banner: { enabled: true, reason: 'Flag enabled globally', variant: banner, value: banner },
    });
    const c = remote(server.url, { context: { user_id: 'u1' }, bootstrap: { checkout: true } });
    c.isEnabled('checkout'); // the bootstrap value: not Guidon's answer
    assert.equal(await c.ready(), true);
    for (let i = 0; i < 3; i++) {
      c.isEnabled('checkout');
      c.getVariant('banner');
      c.getValue('banner', 'x');
      c.flag('banner');
      c.reason('checkout');
      c.allFlags();
      c.isEnabled('missing');
    }
    const other = await c.forContext({ user_id: 'u2' });
    other.isEnabled('checkout');
    other.getValue('banner', 'x');
    other.allFlags();
    (await c.forContext({})).isEnabled('checkout');
    banner = 'green';
    await c.identify({ user_id: 'u1' });
    c.getVariant('banner');
    c.isEnabled('checkout');
    c.track('purchase', undefined, { value: 2 });
    await c.close();
    assert.equal(server.received[0]!.headers['x-sdk-key'], 'sdk_test');
    assert.deepEqual(server.exposures().map((e) => [e.flag, e.unit, e.arm, e.reason]), [
      ['checkout', 'u1', 'on', 'Rollout'],
      ['banner', 'u1', 'blue', 'Flag enabled globally'],
      ['checkout', 'u2', 'off', 'Rollout'],
      ['banner', 'u2', 'blue', 'Flag enabled globally'],
      ['banner', 'u1', 'green', 'Flag enabled globally'],
    ]);
    assert.deepEqual(server.events().map((e) => [e.name, e.unit, e.value]), [['purchase', 'u1', 2]]);
  });
});
