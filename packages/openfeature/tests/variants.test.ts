/**
 * Flags that serve values (docs/variants.md) through OpenFeature, against the real server with
 * variant flags created through the API: Guidon's providers (server and web) and the stock OFREP
 * providers, unmodified (@openfeature/ofrep-provider here, @openfeature/ofrep-web-provider in a
 * child process), answer the same value, variant and reason for every case of docs/variants.md
 * (off, a rule, a pinned variant, the weights, everyone_else, static), reason included (SPLIT where
 * the weights chose: the remote providers learn it from OFREP), and TYPE_MISMATCH with the default
 * for a value of another type.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { OpenFeature, type Client } from '@openfeature/server-sdk';
import { OpenFeature as WebOpenFeature } from '@openfeature/web-sdk';
import { OFREPProvider } from '@openfeature/ofrep-provider';
import { GuidonServerProvider } from '@guidon/openfeature/server';
import { GuidonWebProvider } from '@guidon/openfeature/web';
import { flagsPath, freePort, newFlag, newProject, newUser, request, startServer, type TestProject, type TestServer, type TestUser } from '@guidon/server/dist/tests/harness.js';

type FlagType = 'boolean' | 'string' | 'number' | 'object';
type Context = { targetingKey: string; email?: string };
/** What a case must give: value, variant, reason and errorCode of the details. */
type Outcome = [value: unknown, variant: string | undefined, reason: string, errorCode: string | undefined];
/** A typed evaluation, and what it gives; a function of the evaluate answer where the weights choose. */
interface Case {
  name: string;
  type: FlagType;
  key: string;
  fallback: unknown;
  expect: Outcome | ((served: { enabled: boolean; variant: string; value: unknown }) => Outcome);
}

const DARK = { theme: 'dark', size: 3 };
const LIGHT = { theme: 'light', size: 1 };

const ADA: Context = { targetingKey: 'ada', email: 'ada@example.com' };
const BOB: Context = { targetingKey: 'bob', email: 'bob@corp.com' };
const ANYONE: Context = { targetingKey: 'u-7' };
const BLOCKED: Context = { targetingKey: 'blocked' };

/** Every case, per user. */
const CASES: [Context, Case[]][] = [
  [
    ADA,
    [
      { name: 'static: one variant has all the weight', type: 'string', key: 'button_text', fallback: 'x', expect: ['Buy now', 'buy', 'STATIC', undefined] },
      { name: 'off: the off variant', type: 'string', key: 'banner', fallback: 'x', expect: ['#888', 'grey', 'DISABLED', undefined] },
      { name: "a rule's pinned variant", type: 'number', key: 'limit', fallback: -1, expect: [100, 'high', 'TARGETING_MATCH', undefined] },
      { name: 'the weights choose', type: 'object', key: 'config', fallback: {}, expect: ({ variant, value }) => [value, variant, 'SPLIT', undefined] },
      { name: 'a rollout', type: 'string', key: 'rollout', fallback: 'x', expect: ({ variant, value }) => [value, variant, 'SPLIT', undefined] },
      { name: 'boolean variants', type: 'boolean', key: 'switch', fallback: false, expect: [true, 'yes', 'STATIC', undefined] },
      { name: 'an array is an object to OpenFeature', type: 'object', key: 'hosts', fallback: {}, expect: [['a.example', 'b.example'], 'two', 'STATIC', undefined] },
      { name: 'a boolean flag without variants keeps on/off', type: 'boolean', key: 'plain', fallback: false, expect: [true, 'on', 'STATIC', undefined] },
      { name: 'mismatch: a number for a string flag', type: 'number', key: 'button_text', fallback: 5, expect: [5, undefined, 'ERROR', 'TYPE_MISMATCH'] },
      { name: 'mismatch: a boolean for a string flag', type: 'boolean', key: 'button_text', fallback: false, expect: [false, undefined, 'ERROR', 'TYPE_MISMATCH'] },
      { name: 'mismatch: a string for an object flag', type: 'string', key: 'config', fallback: 'x', expect: ['x', undefined, 'ERROR', 'TYPE_MISMATCH'] },
      { name: 'mismatch: an object for a number flag', type: 'object', key: 'limit', fallback: { n: 1 }, expect: [{ n: 1 }, undefined, 'ERROR', 'TYPE_MISMATCH'] },
      { name: 'mismatch: a number for boolean variants', type: 'number', key: 'switch', fallback: 1, expect: [1, undefined, 'ERROR', 'TYPE_MISMATCH'] },
      { name: 'mismatch: a string for a flag without variants', type: 'string', key: 'plain', fallback: 'x', expect: ['x', undefined, 'ERROR', 'TYPE_MISMATCH'] },
      { name: 'an unknown flag', type: 'string', key: 'nope', fallback: 'x', expect: ['x', undefined, 'ERROR', 'FLAG_NOT_FOUND'] },
    ],
  ],
  [
    BOB,
    [
      { name: 'a rule without a pinned variant: the weights choose', type: 'number', key: 'limit', fallback: -1, expect: ({ variant, value }) => [value, variant, 'TARGETING_MATCH', undefined] },
      { name: 'the weights choose', type: 'object', key: 'config', fallback: {}, expect: ({ variant, value }) => [value, variant, 'SPLIT', undefined] },
      { name: 'a rollout', type: 'string', key: 'rollout', fallback: 'x', expect: ({ variant, value }) => [value, variant, 'SPLIT', undefined] },
    ],
  ],
  [
    ANYONE,
    [
      { name: 'everyone_else off: the off variant', type: 'number', key: 'limit', fallback: -1, expect: [0, 'none', 'DEFAULT', undefined] },
      { name: 'static', type: 'string', key: 'button_text', fallback: 'x', expect: ['Buy now', 'buy', 'STATIC', undefined] },
      { name: 'the weights choose', type: 'object', key: 'config', fallback: {}, expect: ({ variant, value }) => [value, variant, 'SPLIT', undefined] },
      { name: 'a rollout', type: 'string', key: 'rollout', fallback: 'x', expect: ({ variant, value }) => [value, variant, 'SPLIT', undefined] },
    ],
  ],
  [BLOCKED, [{ name: 'a rule that serves off: the off variant', type: 'number', key: 'limit', fallback: -1, expect: [0, 'none', 'TARGETING_MATCH', undefined] }]],
];

const outcome = (details: { value: unknown; variant?: string; reason?: string; errorCode?: string }): Outcome => [details.value, details.variant, details.reason ?? '', details.errorCode];

describe('OpenFeature typed getters against Guidon variants', () => {
  let server: TestServer;
  let user: TestUser;
  let project: TestProject;
  /** Per context and case, what it must give (from the table, or from the evaluate answer). */
  let expected: Outcome[][];

  before(async () => {
    server = await startServer();
    user = await newUser(server);
    project = await newProject(server, user);
    const flag = (fields: Record<string, unknown>) => newFlag(server, user, project, fields);
    const rule = async (flagId: string, body: Record<string, unknown>) => {
      const created = await request(server, 'POST', `${flagsPath(project)}/${flagId}/rules`, { token: user.token, body });
      assert.equal(created.status, 201, created.text);
    };
    await flag({ key: 'button_text', enabled: true, variants: [{ key: 'buy', value: 'Buy now', weight: 1000 }, { key: 'purchase', value: 'Purchase', weight: 0 }], off_variant: 'purchase' });
    await flag({ key: 'banner', enabled: false, variants: [{ key: 'blue', value: '#00f', weight: 1000 }, { key: 'grey', value: '#888', weight: 0 }], off_variant: 'grey' });
    const limit = await flag({
      key: 'limit',
      enabled: true,
      everyone_else: 'off',
      variants: [{ key: 'none', value: 0, weight: 0 }, { key: 'low', value: 10, weight: 500 }, { key: 'high', value: 100, weight: 500 }],
      off_variant: 'none',
    });
    await rule(limit.id, { rule_type: 'user_email', rule_value: 'ada@example.com', variant: 'high', priority: 10 });
    await rule(limit.id, { rule_type: 'email_domain', rule_value: 'corp.com' });
    await rule(limit.id, { rule_type: 'user_id', rule_value: 'blocked', serve: false });
    await flag({ key: 'config', enabled: true, variants: [{ key: 'dark', value: DARK, weight: 500 }, { key: 'light', value: LIGHT, weight: 500 }], off_variant: 'light' });
    await flag({ key: 'rollout', enabled: true, rollout_percentage: 20, variants: [{ key: 'a', value: 'A', weight: 500 }, { key: 'b', value: 'B', weight: 500 }, { key: 'off', value: 'none', weight: 0 }], off_variant: 'off' });
    await flag({ key: 'switch', enabled: true, variants: [{ key: 'yes', value: true, weight: 1000 }, { key: 'no', value: false, weight: 0 }], off_variant: 'no' });
    await flag({ key: 'plain', enabled: true });
    await flag({ key: 'hosts', enabled: true, variants: [{ key: 'one', value: { host: 'a.example' }, weight: 0 }, { key: 'two', value: ['a.example', 'b.example'], weight: 1000 }], off_variant: 'one' });

    expected = [];
    for (const [context, cases] of CASES) {
      const answer = await request(server, 'POST', '/sdk/v1/evaluate', { sdkKey: project.sdk_key, body: { environment: 'production', context: { user_id: context.targetingKey, user_email: context.email ?? null } } });
      assert.equal(answer.status, 200, answer.text);
      expected.push(cases.map((c) => (typeof c.expect === 'function' ? c.expect(answer.body.flags[c.key]) : c.expect)));
    }
    // The rollout case and the weights are meant to show both sides somewhere in the table.
    const rollouts = expected.slice(0, 3).map((outcomes, i) => outcomes[CASES[i]![1].findIndex((c) => c.key === 'rollout')]![1]);
    assert.ok(rollouts.includes('off') && rollouts.some((variant) => variant !== 'off'), `the rollout cases cover in and out: ${rollouts}`);
  });
  after(async () => {
    await OpenFeature.close();
    await WebOpenFeature.close();
    await server.close();
  });

  /** A fetch that notes the path of every request Guidon's providers make: evaluate only, with the kinds (no second request to OFREP). */
  const asked: string[] = [];
  const noting: typeof fetch = (input, init) => {
    asked.push(`${new URL(String(input)).pathname} ${new Headers(init?.headers).get('x-guidon-answer')}`);
    return fetch(input, init);
  };

  /** What case j of context i must give through Guidon's providers or through OFREP. */
  const expectedOf = (i: number, j: number): Outcome => expected[i]![j]!;

  /** Every case of the table through a server-side client (the context passed per evaluation). */
  async function throughServerClient(client: Client): Promise<void> {
    const getters = { boolean: client.getBooleanDetails, string: client.getStringDetails, number: client.getNumberDetails, object: client.getObjectDetails };
    for (const [i, [context, cases]] of CASES.entries()) {
      for (const [j, c] of cases.entries()) {
        const details = await (getters[c.type] as (key: string, fallback: unknown, context: Context) => Promise<Parameters<typeof outcome>[0]>).call(client, c.key, c.fallback, context);
        assert.deepEqual(outcome(details), expectedOf(i, j), `${context.targetingKey}: ${c.name} (${c.type} ${c.key})`);
      }
    }
  }

  test('GuidonServerProvider: typed getters give value, variant and reason; TYPE_MISMATCH with the default', async () => {
    asked.length = 0;
    await OpenFeature.setProviderAndWait('guidon', new GuidonServerProvider({ baseUrl: server.url, sdkKey: project.sdk_key, environment: 'production', stream: false, fetch: noting }));
    const client = OpenFeature.getClient('guidon');
    await throughServerClient(client);
    // SPLIT and STATIC told apart from evaluate's answer alone: nothing asked of OFREP.
    assert.deepEqual([...new Set(asked)], ['/sdk/v1/evaluate kind']);
    const details = await client.getObjectDetails('config', {}, ADA);
    assert.deepEqual(details.flagMetadata, { reason: 'Flag enabled globally' }, "Guidon's own reason");
  });

  test("Guidon's providers when Guidon is away: the default with ERROR; a bootstrap (booleans only) gives a typed getter its default", async () => {
    const away = `http://127.0.0.1:${await freePort()}`;
    await OpenFeature.setProviderAndWait('away', new GuidonServerProvider({ baseUrl: away, sdkKey: project.sdk_key, environment: 'production', stream: false })).catch(() => undefined);
    const server = OpenFeature.getClient('away');
    assert.deepEqual(outcome(await server.getStringDetails('button_text', 'x', ADA)), ['x', undefined, 'ERROR', 'GENERAL']);
    assert.deepEqual(outcome(await server.getObjectDetails('config', { a: 1 }, ADA)), [{ a: 1 }, undefined, 'ERROR', 'GENERAL']);
    await WebOpenFeature.setProviderAndWait('away', new GuidonWebProvider({ baseUrl: away, sdkKey: project.sdk_key, environment: 'production', stream: false, storage: false, bootstrap: { button_text: true } })).catch(() => undefined);
    const web = WebOpenFeature.getClient('away');
    assert.deepEqual(outcome(web.getNumberDetails('limit', 3)), [3, undefined, 'ERROR', 'GENERAL']);
    assert.deepEqual(outcome(web.getStringDetails('button_text', 'x')), ['x', undefined, 'DEFAULT', undefined]);
    assert.deepEqual(outcome(web.getBooleanDetails('button_text', false)), [true, undefined, 'DEFAULT', undefined], 'the bootstrap value, as before');
  });

  test('the stock @openfeature/ofrep-provider, unmodified: the same answers', async () => {
    await OpenFeature.setProviderAndWait('stock', new OFREPProvider({ baseUrl: server.url, headers: [['X-SDK-Key', project.sdk_key]] }));
    await throughServerClient(OpenFeature.getClient('stock'));
  });

  test('GuidonWebProvider: the same answers for each static context', async () => {
    asked.length = 0;
    for (const [i, [context, cases]] of CASES.entries()) {
      const domain = `guidon-web-${i}`;
      await WebOpenFeature.setContext(domain, context);
      await WebOpenFeature.setProviderAndWait(domain, new GuidonWebProvider({ baseUrl: server.url, sdkKey: project.sdk_key, environment: 'production', storage: false, stream: false, fetch: noting }));
      const client = WebOpenFeature.getClient(domain);
      const getters = { boolean: client.getBooleanDetails, string: client.getStringDetails, number: client.getNumberDetails, object: client.getObjectDetails };
      for (const [j, c] of cases.entries()) {
        const details = (getters[c.type] as (key: string, fallback: unknown) => Parameters<typeof outcome>[0]).call(client, c.key, c.fallback);
        assert.deepEqual(outcome(details), expectedOf(i, j), `${context.targetingKey}: ${c.name} (${c.type} ${c.key})`);
      }
    }
    assert.deepEqual([...new Set(asked)], ['/sdk/v1/evaluate kind'], 'evaluate with the kinds only, nothing to OFREP');
  });

  test('the stock @openfeature/ofrep-web-provider, unmodified, in Node 20 with --experimental-eventsource: the same answers', async () => {
    for (const [i, [context, cases]] of CASES.entries()) {
      const child = spawn(process.execPath, ['--experimental-eventsource', new URL('./ofrep-web-values-child.js', import.meta.url).pathname], {
        env: { ...process.env, GUIDON_URL: server.url, GUIDON_SDK_KEY: project.sdk_key, GUIDON_CONTEXT: JSON.stringify(context), GUIDON_CALLS: JSON.stringify(cases.map((c) => [c.type, c.key, c.fallback])) },
        stdio: ['ignore', 'pipe', 'inherit'],
      });
      let out = '';
      child.stdout!.on('data', (chunk) => (out += chunk));
      const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
      assert.equal(code, 0);
      const results = JSON.parse(out) as Parameters<typeof outcome>[0][];
      for (const [j, c] of cases.entries()) assert.deepEqual(outcome(results[j]!), expectedOf(i, j), `${context.targetingKey}: ${c.name} (${c.type} ${c.key})`);
    }
  });
});
