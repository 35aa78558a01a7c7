/**
 * The providers' side of experiments (packages/openfeature/src/server-provider.ts, web.ts): a
 * resolved flag is recorded as an exposure of the context's unit and arm, and OpenFeature's
 * track() (the OpenFeature specification's Tracking section) sends an event with the details' value, for the remote and the local server
 * provider and the web provider. Against a real HTTP server that records POST /sdk/v1/events
 * (started here); against Guidon itself: packages/sdk/tests/events-intake.test.ts.
 */
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { OpenFeature } from '@openfeature/server-sdk';
import { OpenFeature as WebOpenFeature } from '@openfeature/web-sdk';
import type { RulesetDocument } from '@guidon/sdk';
import { GuidonLocalProvider, GuidonServerProvider } from '@guidon/openfeature/server';
import { GuidonWebProvider } from '@guidon/openfeature/web';

interface Batch {
  exposures?: { flag: string; unit: string; arm: string; reason?: string }[];
  events?: { name: string; unit: string; value?: number }[];
}

/** Records POST /sdk/v1/events; answers evaluate with one flag with variants and one without; anything else 404. */
async function recorder() {
  const batches: Batch[] = [];
  const server = createServer((req, res) => {
    let text = '';
    req.on('data', (chunk) => (text += chunk));
    req.on('end', () => {
      const path = req.url!.split('?')[0];
      if (req.method === 'POST' && path === '/sdk/v1/events') {
        batches.push(JSON.parse(text) as Batch);
        return res.writeHead(202, { 'content-type': 'application/json' }).end('{"accepted":1,"ignored":{}}');
      }
      if (req.method === 'POST' && path === '/sdk/v1/evaluate') {
        const flags = { checkout: { enabled: true, reason: 'Matched user_id targeting rule' }, banner: { enabled: true, reason: 'Rollout', variant: 'green', value: 'green' } };
        return res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ flags }));
      }
      res.writeHead(404, { 'content-type': 'application/json' }).end('{"message":"not here"}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    exposures: () => batches.flatMap((batch) => batch.exposures ?? []).map(({ flag, unit, arm, reason }) => [flag, unit, arm, reason]),
    events: () => batches.flatMap((batch) => batch.events ?? []).map(({ name, unit, value }) => [name, unit, value]),
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

const RULESET = {
  format: 2,
  environment: 'production',
  revision: 1,
  segments: {},
  flags: [
    { key: 'checkout', enabled: true, rolloutPercentage: 0, everyoneElse: 'off', rules: [{ type: 'user_id', value: 'u1', enabled: true }] },
    { key: 'banner', enabled: true, rolloutPercentage: 0, rules: [], variants: [{ key: 'green', value: 'green', weight: 1000 }] },
  ],
} as unknown as RulesetDocument;

describe('OpenFeature providers: exposures and track()', () => {
  after(async () => {
    await OpenFeature.close();
    await WebOpenFeature.close();
  });

  for (const kind of ['remote', 'local'] as const) {
    test(`${kind === 'remote' ? 'GuidonServerProvider' : 'GuidonLocalProvider'}: a resolved flag is one exposure per unit and arm; track() sends the details' value`, async () => {
      const server = await recorder();
      const options = { baseUrl: server.url, environment: 'production', stream: false, pollIntervalMs: 3_600_000, eventsIntervalMs: 3_600_000 };
      const provider = kind === 'remote' ? new GuidonServerProvider({ ...options, sdkKey: 'sdk_test' }) : new GuidonLocalProvider({ ...options, apiToken: 'gdn_test', bootstrap: RULESET, sendUsage: false });
      await OpenFeature.setProviderAndWait(kind, provider);
      const client = OpenFeature.getClient(kind);
      for (let i = 0; i < 3; i++) {
        assert.equal(await client.getBooleanValue('checkout', false, { targetingKey: 'u1' }), true);
        assert.equal(await client.getStringValue('banner', 'none', { targetingKey: 'u1' }), 'green');
      }
      await client.getStringValue('banner', 'none', { email: 'b@example.com' });
      await client.getStringValue('banner', 'none', {}); // no unit: not recorded
      client.track('purchase', { targetingKey: 'u1' }, { value: 19.99 });
      client.track('signup', { email: 'b@example.com' });
      await provider.onClose();
      await server.close();
      assert.deepEqual(server.exposures(), [
        ['checkout', 'u1', 'on', 'Matched user_id targeting rule'],
        ['banner', 'u1', 'green', kind === 'remote' ? 'Rollout' : 'Flag enabled globally'],
        ['banner', 'b@example.com', 'green', kind === 'remote' ? 'Rollout' : 'Flag enabled globally'],
      ]);
      assert.deepEqual(server.events(), [
        ['purchase', 'u1', 19.99],
        ['signup', 'b@example.com', undefined],
      ]);
    });
  }

  test("GuidonWebProvider: the static context's unit; track() with the details' value", async () => {
    const server = await recorder();
    const provider = new GuidonWebProvider({ baseUrl: server.url, sdkKey: 'sdk_test', environment: 'production', stream: false, pollIntervalMs: 3_600_000, storage: false, eventsIntervalMs: 3_600_000 });
    await WebOpenFeature.setContext({ targetingKey: 'w1' });
    await WebOpenFeature.setProviderAndWait(provider);
    const client = WebOpenFeature.getClient();
    client.getBooleanValue('checkout', false);
    client.getStringValue('banner', 'none');
    client.getStringValue('banner', 'none');
    client.track('purchase', { value: 5 });
    await provider.onClose();
    await server.close();
    assert.deepEqual(server.exposures(), [
      ['checkout', 'w1', 'on', 'Matched user_id targeting rule'],
      ['banner', 'w1', 'green', 'Rollout'],
    ]);
    assert.deepEqual(server.events(), [['purchase', 'w1', 5]]);
  });
});
