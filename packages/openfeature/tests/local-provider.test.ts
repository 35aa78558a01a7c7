/**
 * GuidonLocalProvider (OpenFeature server SDK, local evaluation, docs/local-evaluation.md)
 * against the real server: the same values and reasons as POST /sdk/v1/evaluate, FLAG_NOT_FOUND,
 * TYPE_MISMATCH, CONFIGURATION_CHANGED with the changed flag after a change, and ERROR
 * when there is no ruleset.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { OpenFeature, ProviderEvents, type Client } from '@openfeature/server-sdk';
import { GuidonLocalProvider } from '@guidon/openfeature/server';
import { eventually, flagsPath, freePort, newFlag, newProject, newUser, request, startServer, type TestProject, type TestServer, type TestUser } from '@guidon/server/dist/tests/harness.js';

describe('GuidonLocalProvider', () => {
  let server: TestServer;
  let user: TestUser;
  let project: TestProject;
  let token: string;
  let checkoutId: string;

  before(async () => {
    server = await startServer();
    user = await newUser(server);
    project = await newProject(server, user);
    token = (await request(server, 'POST', '/api/tokens', { token: user.token, body: { name: 'of', project_id: project.id } })).body.token;
    checkoutId = (await newFlag(server, user, project, { key: 'checkout', enabled: false })).id;
    const targeted = await newFlag(server, user, project, { key: 'targeted', enabled: true, rollout_percentage: 30 });
    await request(server, 'POST', `${flagsPath(project)}/${targeted.id}/rules`, { token: user.token, body: { rule_type: 'conditions', conditions: [{ attribute: 'plan', operator: 'IN', values: ['pro'] }] } });
    await newFlag(server, user, project, { key: 'everyone', enabled: true });
  });
  after(async () => {
    // The server first: it ends the providers' streams itself. Closed first, a provider aborts its
    // stream with fetch, which can leave the connection open, and the server's close then waited
    // out its 72 s keep-alive timeout.
    await server.close();
    await OpenFeature.close();
  });

  test('values and reasons as /sdk/v1/evaluate answers them; FLAG_NOT_FOUND; TYPE_MISMATCH; CONFIGURATION_CHANGED with the flag', async () => {
    await OpenFeature.setProviderAndWait('local', new GuidonLocalProvider({ baseUrl: server.url, apiToken: token, environment: 'production' }));
    const client: Client = OpenFeature.getClient('local');
    const contexts: Record<string, string>[] = [{ targetingKey: 'u-1' }, { targetingKey: 'u-2', plan: 'pro' }, { targetingKey: 'u-3', email: 'a@example.com' }, ...Array.from({ length: 20 }, (_, i) => ({ targetingKey: `user-${i}` }))];
    for (const context of contexts) {
      const remote = (await request(server, 'POST', '/sdk/v1/evaluate', { sdkKey: project.sdk_key, body: { environment: 'production', context: { user_id: context.targetingKey, user_email: context.email, custom_attributes: context.plan ? { plan: context.plan } : undefined } } })).body.flags;
      for (const key of ['checkout', 'targeted', 'everyone']) {
        const details = await client.getBooleanDetails(key, !remote[key].enabled, context);
        assert.equal(details.value, remote[key].enabled, `${key} ${JSON.stringify(context)}`);
        assert.equal(details.flagMetadata.reason, remote[key].reason);
        assert.equal(details.variant, remote[key].enabled ? 'on' : 'off');
      }
    }
    const pro = await client.getBooleanDetails('targeted', false, { targetingKey: 'u-2', plan: 'pro' });
    assert.equal(pro.reason, 'TARGETING_MATCH');
    assert.equal((await client.getBooleanDetails('checkout', true)).reason, 'DISABLED');
    assert.equal((await client.getBooleanDetails('everyone', false)).reason, 'STATIC');

    const missing = await client.getBooleanDetails('nope', true);
    assert.equal(missing.value, true);
    assert.equal(missing.errorCode, 'FLAG_NOT_FOUND');
    const mismatch = await client.getStringDetails('everyone', 'x');
    assert.equal(mismatch.value, 'x');
    assert.equal(mismatch.errorCode, 'TYPE_MISMATCH');

    const changes: string[][] = [];
    client.addHandler(ProviderEvents.ConfigurationChanged, (event) => changes.push(event?.flagsChanged ?? []));
    await new Promise((resolve) => setTimeout(resolve, 200)); // the stream is open
    await request(server, 'POST', `${flagsPath(project)}/${checkoutId}/toggle`, { token: user.token });
    await eventually(() => client.getBooleanValue('checkout', false), 'the change');
    await eventually(() => changes.length > 0, 'CONFIGURATION_CHANGED');
    assert.deepEqual(changes[0], ['checkout'], 'the flag changed, as the remote provider says it');
  });

  test('a flag with variants: its value by type, its variant key, SPLIT when the weights chose; another type TYPE_MISMATCH', async () => {
    const created = await request(server, 'POST', flagsPath(project), {
      token: user.token,
      body: { key: 'button', name: 'button', enabled: true, variants: [{ key: 'blue', value: 'Blue', weight: 500 }, { key: 'green', value: 'Green', weight: 500 }], off_variant: 'blue' },
    });
    assert.equal(created.status, 201, created.text);
    await request(server, 'POST', `${flagsPath(project)}/${created.body.id}/rules`, { token: user.token, body: { rule_type: 'user_id', rule_value: 'pinned', variant: 'green' } });
    const provider = new GuidonLocalProvider({ baseUrl: server.url, apiToken: token, environment: 'production', sendUsage: false });
    await OpenFeature.setProviderAndWait('variants', provider);
    const client = OpenFeature.getClient('variants');
    for (const targetingKey of ['pinned', 'u-1', 'u-2', 'u-3', 'u-4']) {
      const remote = (await request(server, 'POST', '/ofrep/v1/evaluate/flags/button', { headers: { 'x-sdk-key': project.sdk_key }, body: { context: { targetingKey } } })).body;
      const local = await client.getStringDetails('button', 'none', { targetingKey });
      assert.deepEqual({ value: local.value, variant: local.variant, reason: local.reason }, { value: remote.value, variant: remote.variant, reason: remote.reason }, targetingKey);
    }
    assert.equal((await client.getBooleanDetails('button', false)).errorCode, 'TYPE_MISMATCH');
  });

  test('prerequisites (docs/prerequisites.md): PREREQUISITE_FAILED with the unmet flag, as evaluate answers; a parent toggled changes the child', async () => {
    const gate = await newFlag(server, user, project, { key: 'gate', enabled: false });
    await newFlag(server, user, project, { key: 'behind_gate', enabled: true, prerequisites: [{ flag_key: 'gate' }] });
    const provider = new GuidonLocalProvider({ baseUrl: server.url, apiToken: token, environment: 'production', sendUsage: false });
    await OpenFeature.setProviderAndWait('local-prerequisites', provider);
    const client = OpenFeature.getClient('local-prerequisites');
    await eventually(async () => (await client.getBooleanDetails('behind_gate', true, { targetingKey: 'u' })).reason === 'PREREQUISITE_FAILED', 'the new flags');
    assert.deepEqual(await client.getBooleanDetails('behind_gate', true, { targetingKey: 'u' }), { flagKey: 'behind_gate', value: false, variant: 'off', reason: 'PREREQUISITE_FAILED', flagMetadata: { reason: 'Prerequisite gate not met', prerequisite: 'gate' } });
    assert.equal((await request(server, 'POST', `${flagsPath(project)}/${gate.id}/toggle`, { token: user.token })).status, 200);
    await eventually(async () => (await client.getBooleanValue('behind_gate', false, { targetingKey: 'u' })) === true, 'the child on');
  });

  test('ERROR and the default value when there is no ruleset', async () => {
    const provider = new GuidonLocalProvider({ baseUrl: `http://127.0.0.1:${await freePort()}`, apiToken: 'gdn_x', environment: 'production', timeoutMs: 300, sendUsage: false });
    await OpenFeature.setProviderAndWait('down', provider).catch(() => undefined);
    const details = await OpenFeature.getClient('down').getBooleanDetails('checkout', true);
    assert.equal(details.value, true);
    assert.equal(details.reason, 'ERROR');
  });
});
