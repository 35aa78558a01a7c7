/**
 * OpenFeature against the real server: Guidon's own providers (@guidon/openfeature, server and
 * web), and the stock OFREP providers unmodified: @openfeature/ofrep-provider in this process,
 * @openfeature/ofrep-web-provider in a child process with Node 20's --experimental-eventsource.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { OpenFeature, ProviderEvents, type Client } from '@openfeature/server-sdk';
import { OpenFeature as WebOpenFeature, ProviderEvents as WebProviderEvents } from '@openfeature/web-sdk';
import { OFREPProvider } from '@openfeature/ofrep-provider';
import { GuidonServerProvider } from '@guidon/openfeature/server';
import { GuidonWebProvider } from '@guidon/openfeature/web';
import { eventually, flagsPath, newFlag, newProject, newUser, request, startServer, type TestProject, type TestServer, type TestUser } from '@guidon/server/dist/tests/harness.js';
import { startCuttingProxy } from '@guidon/server/dist/tests/cutting-proxy.js';

describe('OpenFeature against Guidon', () => {
  let server: TestServer;
  let user: TestUser;
  let project: TestProject;
  let checkoutId: string;

  before(async () => {
    server = await startServer();
    user = await newUser(server);
    project = await newProject(server, user);
    checkoutId = (await newFlag(server, user, project, { key: 'checkout', enabled: false })).id;
    const targeted = await newFlag(server, user, project, { key: 'targeted', enabled: false });
    await request(server, 'PUT', `${flagsPath(project)}/${targeted.id}`, { token: user.token, body: { enabled: true, rollout_percentage: 1 } });
    await request(server, 'POST', `${flagsPath(project)}/${targeted.id}/rules`, { token: user.token, body: { rule_type: 'user_email', rule_value: 'ada@example.com' } });
    await newFlag(server, user, project, { key: 'everyone', enabled: true });
  });
  after(async () => {
    await OpenFeature.close();
    await WebOpenFeature.close();
    await server.close();
  });

  const toggleCheckout = () => request(server, 'POST', `${flagsPath(project)}/${checkoutId}/toggle`, { token: user.token });
  const checkoutIsOn = async () => (await request(server, 'POST', '/sdk/v1/evaluate', { sdkKey: project.sdk_key, body: { environment: 'production' } })).body.flags.checkout.enabled as boolean;

  test('GuidonServerProvider: values, reasons mapped as docs/sdk.md says, TYPE_MISMATCH, FLAG_NOT_FOUND, CONFIGURATION_CHANGED with keys', async () => {
    const provider = new GuidonServerProvider({ baseUrl: server.url, sdkKey: project.sdk_key, environment: 'production' });
    await OpenFeature.setProviderAndWait('guidon', provider);
    const client: Client = OpenFeature.getClient('guidon');
    const ada = { targetingKey: 'user-1', email: 'ada@example.com' };
    assert.deepEqual(await client.getBooleanDetails('targeted', false, ada), {
      flagKey: 'targeted',
      value: true,
      variant: 'on',
      reason: 'TARGETING_MATCH',
      flagMetadata: { reason: 'Matched user_email targeting rule' },
    });
    const everyone = await client.getBooleanDetails('everyone', false, { targetingKey: 'u' });
    assert.deepEqual([everyone.value, everyone.reason], [true, 'STATIC']);
    const off = await client.getBooleanDetails('checkout', true, { targetingKey: 'u' });
    assert.deepEqual([off.value, off.reason, off.variant], [await checkoutIsOn(), (await checkoutIsOn()) ? 'STATIC' : 'DISABLED', (await checkoutIsOn()) ? 'on' : 'off']);
    const split = await client.getBooleanDetails('targeted', false, { targetingKey: 'u', email: 'bob@example.com' });
    assert.equal(split.reason, 'SPLIT');
    const typed = await client.getStringDetails('everyone', 'x', {});
    assert.deepEqual([typed.value, typed.errorCode], ['x', 'TYPE_MISMATCH']);
    const missing = await client.getBooleanDetails('nope', true, {});
    assert.deepEqual([missing.value, missing.errorCode], [true, 'FLAG_NOT_FOUND']);

    const changes: string[][] = [];
    client.addHandler(ProviderEvents.ConfigurationChanged, (event) => changes.push(event?.flagsChanged ?? []));
    await new Promise((resolve) => setTimeout(resolve, 300)); // the stream connects
    await toggleCheckout();
    await eventually(() => changes.length > 0, 'CONFIGURATION_CHANGED');
    assert.deepEqual(changes[0], ['checkout']);
    await eventually(async () => (await client.getBooleanValue('checkout', false, { targetingKey: 'u' })) === (await checkoutIsOn()), 'the new value');
  });

  test('GuidonServerProvider: every other context field is a custom attribute (docs/targeting.md); one the server would refuse is left out', async () => {
    const beta = await newFlag(server, user, project, { key: 'beta_plan', enabled: true, everyone_else: 'off' });
    const rule = await request(server, 'POST', `${flagsPath(project)}/${beta.id}/rules`, {
      token: user.token,
      body: { rule_type: 'conditions', conditions: [{ attribute: 'plan', operator: 'IN', values: ['beta'] }, { attribute: 'signed_up', operator: 'DATE_BEFORE', values: ['2026-01-01'] }] },
    });
    assert.equal(rule.status, 201, rule.text);
    await OpenFeature.setProviderAndWait('attributes', new GuidonServerProvider({ baseUrl: server.url, sdkKey: project.sdk_key, environment: 'production', stream: false }));
    const client = OpenFeature.getClient('attributes');
    const on = await client.getBooleanDetails('beta_plan', false, { targetingKey: 'u1', plan: 'beta', signed_up: new Date('2025-06-01T00:00:00Z'), nested: { ignored: true }, long: 'x'.repeat(2000) });
    assert.deepEqual([on.value, on.reason], [true, 'TARGETING_MATCH']);
    const off = await client.getBooleanDetails('beta_plan', true, { targetingKey: 'u1', plan: 'pro' });
    assert.deepEqual([off.value, off.reason], [false, 'DEFAULT']);
  });

  test('GuidonServerProvider: a stream cut makes its answers STALE until the client caught up, then its own reasons again', async (t) => {
    const proxy = await startCuttingProxy(server.url);
    t.after(() => proxy.close());
    await OpenFeature.setProviderAndWait('cut', new GuidonServerProvider({ baseUrl: proxy.url, sdkKey: project.sdk_key, environment: 'production', pollIntervalMs: 60_000, keepLastKnownOnError: true }));
    const client = OpenFeature.getClient('cut');
    const reason = async () => (await client.getBooleanDetails('everyone', false, { targetingKey: 'u' })).reason;
    assert.equal(await reason(), 'STATIC');
    await eventually(() => proxy.forwarded.includes('/sdk/v1/stream'), 'the stream open');
    // Refused until released, and every other request too: neither a quick reconnect nor a fetch
    // (one a change announced just before the cut starts) can end the outage before it is seen;
    // the flags a failed fetch leaves are the last known ones (keepLastKnownOnError), answered STALE.
    proxy.cutStreams('everything');
    await eventually(async () => (await reason()) === 'STALE', 'STALE while the stream is away');
    proxy.releaseStreams();
    await eventually(async () => (await reason()) === 'STATIC', 'STATIC again once it is back');
  });

  test('GuidonServerProvider: ERROR when Guidon cannot be reached, and the default value', async () => {
    const provider = new GuidonServerProvider({ baseUrl: 'http://127.0.0.1:9', sdkKey: project.sdk_key, environment: 'production', stream: false });
    const errors: unknown[] = [];
    OpenFeature.getClient('down').addHandler(ProviderEvents.Error, (event) => errors.push(event));
    await OpenFeature.setProviderAndWait('down', provider).catch(() => undefined);
    assert.ok(errors.length > 0);
    const details = await OpenFeature.getClient('down').getBooleanDetails('checkout', true, {});
    assert.equal(details.value, true);
    assert.equal(details.reason, 'ERROR');
  });

  test('GuidonWebProvider: the static context, a context change, and CONFIGURATION_CHANGED', async () => {
    const provider = new GuidonWebProvider({ baseUrl: server.url, sdkKey: project.sdk_key, environment: 'production', storage: false });
    await WebOpenFeature.setContext('guidon', { targetingKey: 'user-1' });
    await WebOpenFeature.setProviderAndWait('guidon', provider);
    const client = WebOpenFeature.getClient('guidon');
    assert.equal(client.getBooleanDetails('targeted', false).reason, 'SPLIT');
    await WebOpenFeature.setContext('guidon', { targetingKey: 'user-1', email: 'ada@example.com' });
    assert.deepEqual([client.getBooleanValue('targeted', false), client.getBooleanDetails('targeted', false).reason], [true, 'TARGETING_MATCH']);
    assert.equal(client.getNumberDetails('targeted', 3).errorCode, 'TYPE_MISMATCH');

    const changes: string[][] = [];
    client.addHandler(WebProviderEvents.ConfigurationChanged, (event) => changes.push(event?.flagsChanged ?? []));
    await new Promise((resolve) => setTimeout(resolve, 300)); // the stream connects
    await toggleCheckout();
    await eventually(() => changes.length > 0, 'CONFIGURATION_CHANGED');
    assert.deepEqual(changes[0], ['checkout']);
    assert.equal(client.getBooleanValue('checkout', false), await checkoutIsOn());
  });

  test('prerequisites (docs/prerequisites.md): PREREQUISITE_FAILED with the unmet flag in the metadata, from the server, web and stock providers', async () => {
    const gate = await newFlag(server, user, project, { key: 'gate', enabled: false });
    await newFlag(server, user, project, { key: 'behind_gate', enabled: true, prerequisites: [{ flag_key: 'gate' }] });
    await newFlag(server, user, project, { key: 'behind_behind', enabled: true, prerequisites: [{ flag_key: 'behind_gate' }] });
    const failed = (key: string, parent: string) => ({ flagKey: key, value: false, variant: 'off', reason: 'PREREQUISITE_FAILED', flagMetadata: { reason: `Prerequisite ${parent} not met`, prerequisite: parent } });

    const provider = new GuidonServerProvider({ baseUrl: server.url, sdkKey: project.sdk_key, environment: 'production' });
    await OpenFeature.setProviderAndWait('guidon-prerequisites', provider);
    const client = OpenFeature.getClient('guidon-prerequisites');
    await eventually(async () => (await client.getBooleanDetails('behind_behind', true, { targetingKey: 'u' })).reason === 'PREREQUISITE_FAILED', 'the new flags');
    assert.deepEqual(await client.getBooleanDetails('behind_gate', true, { targetingKey: 'u' }), failed('behind_gate', 'gate'));
    assert.deepEqual(await client.getBooleanDetails('behind_behind', true, { targetingKey: 'u' }), failed('behind_behind', 'behind_gate'));

    const stock = new OFREPProvider({ baseUrl: server.url, headers: [['X-SDK-Key', project.sdk_key]] });
    await OpenFeature.setProviderAndWait('stock-prerequisites', stock);
    const stockDetails = await OpenFeature.getClient('stock-prerequisites').getBooleanDetails('behind_behind', true, { targetingKey: 'u' });
    assert.deepEqual([stockDetails.value, stockDetails.reason, stockDetails.flagMetadata], [false, 'PREREQUISITE_FAILED', { reason: 'Prerequisite behind_gate not met', prerequisite: 'behind_gate' }]);

    const web = new GuidonWebProvider({ baseUrl: server.url, sdkKey: project.sdk_key, environment: 'production', storage: false });
    await WebOpenFeature.setContext('guidon-prerequisites', { targetingKey: 'u' });
    await WebOpenFeature.setProviderAndWait('guidon-prerequisites', web);
    const webClient = WebOpenFeature.getClient('guidon-prerequisites');
    assert.deepEqual(webClient.getBooleanDetails('behind_gate', true), failed('behind_gate', 'gate'));

    // The parent switched on: the chain answers on.
    assert.equal((await request(server, 'POST', `${flagsPath(project)}/${gate.id}/toggle`, { token: user.token })).status, 200);
    await eventually(async () => (await client.getBooleanValue('behind_behind', false, { targetingKey: 'u' })) === true, 'the chain on (server provider)');
    await eventually(() => webClient.getBooleanValue('behind_behind', false) === true, 'the chain on (web provider)');
    assert.equal((await client.getBooleanDetails('behind_behind', false, { targetingKey: 'u' })).reason, 'STATIC');
  });

  test('the stock @openfeature/ofrep-provider, unmodified', async () => {
    const provider = new OFREPProvider({ baseUrl: server.url, headers: [['X-SDK-Key', project.sdk_key]] });
    await OpenFeature.setProviderAndWait('stock', provider);
    const client = OpenFeature.getClient('stock');
    const details = await client.getBooleanDetails('targeted', false, { targetingKey: 'user-1', email: 'ada@example.com' });
    assert.deepEqual([details.value, details.variant, details.reason, details.errorCode], [true, 'on', 'TARGETING_MATCH', undefined]);
    assert.deepEqual(details.flagMetadata, { reason: 'Matched user_email targeting rule' });
    assert.equal((await client.getBooleanDetails('everyone', false, {})).value, true);
    const missing = await client.getBooleanDetails('nope', true, {});
    assert.deepEqual([missing.value, missing.errorCode], [true, 'FLAG_NOT_FOUND']);
    const typed = await client.getStringDetails('everyone', 'x', {});
    assert.deepEqual([typed.value, typed.errorCode], ['x', 'TYPE_MISMATCH']);
    const wrongKey = new OFREPProvider({ baseUrl: server.url, headers: [['X-SDK-Key', 'sdk_wrong']] });
    await OpenFeature.setProviderAndWait('stock-wrong', wrongKey);
    const refused = await OpenFeature.getClient('stock-wrong').getBooleanDetails('everyone', false, {});
    assert.deepEqual([refused.value, refused.reason], [false, 'ERROR']);
  });

  test('the stock @openfeature/ofrep-web-provider, unmodified, in Node 20 with --experimental-eventsource', async (t) => {
    const child = spawn(process.execPath, ['--experimental-eventsource', new URL('./ofrep-web-child.js', import.meta.url).pathname], {
      env: { ...process.env, GUIDON_URL: server.url, GUIDON_SDK_KEY: project.sdk_key },
      stdio: ['pipe', 'pipe', 'inherit'],
    });
    t.after(() => child.kill());
    const steps = createInterface({ input: child.stdout! })[Symbol.asyncIterator]();
    // A step the child never reports (a change it missed) fails here, not at the file's timeout.
    const nextStep = async () => {
      let timer: NodeJS.Timeout | undefined;
      const silent = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error('the child reported no step within 20 s')), 20_000)));
      const { value, done } = await Promise.race([steps.next(), silent]).finally(() => clearTimeout(timer));
      assert.ok(!done, 'the child ended early');
      return JSON.parse(value as string);
    };
    const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));

    const ready = await nextStep();
    assert.equal(ready.step, 'ready');
    assert.equal(ready.flags.checkout.value, await checkoutIsOn());
    assert.equal(ready.flags.targeted.reason, 'SPLIT');
    assert.equal(ready.typed.errorCode, 'TYPE_MISMATCH');

    // A change reaches it over the stream (the URL and token came in the bulk answer's eventStreams).
    await toggleCheckout();
    const changed = await nextStep();
    assert.equal(changed.step, 'changed');
    assert.deepEqual(changed.flagsChanged, ['checkout']);
    assert.equal(changed.flags.checkout.value, await checkoutIsOn());

    // It keeps its ETag when only the user's attributes change: that must not be answered 304.
    child.stdin!.write('next\n');
    let step = await nextStep();
    while (step.step === 'changed') step = await nextStep();
    assert.equal(step.step, 'context');
    assert.deepEqual([step.flags.targeted.value, step.flags.targeted.reason], [true, 'TARGETING_MATCH']);
    child.stdin!.write('next\n');
    assert.equal(await exited, 0);
  });
});
