/**
 * @guidon/sdk's values (docs/variants.md) against the real server: getValue and getVariant for string,
 * number and object variants created through the API, on the client and on forContext's set; a
 * value of another JSON type, an unknown flag, a flag without variants and Guidon away all give
 * the default; a change of a variant's value is a change.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createClient, type ClientOptions, type GuidonClient } from '@guidon/sdk';
import { eventually, flagsPath, freePort, newFlag, newProject, newUser, request, startServer, type TestProject, type TestServer, type TestUser } from '@guidon/server/dist/tests/harness.js';

const clients: GuidonClient[] = [];
function client(options: ClientOptions): GuidonClient {
  const made = createClient(options);
  clients.push(made);
  return made;
}
after(() => clients.forEach((c) => c.close()));

type Config = { theme: string; size: number };
const DARK: Config = { theme: 'dark', size: 3 };
const LIGHT: Config = { theme: 'light', size: 1 };

describe('@guidon/sdk values against a running Guidon', () => {
  let server: TestServer;
  let user: TestUser;
  let project: TestProject;
  let buttonId: string;

  before(async () => {
    server = await startServer();
    user = await newUser(server);
    project = await newProject(server, user);
    // A string for everyone (all the weight on one variant).
    buttonId = (
      await newFlag(server, user, project, {
        key: 'button_text',
        enabled: true,
        variants: [
          { key: 'buy', value: 'Buy now', weight: 1000 },
          { key: 'purchase', value: 'Purchase', weight: 0 },
        ],
        off_variant: 'purchase',
      })
    ).id;
    // A number, off: everyone gets the off variant.
    await newFlag(server, user, project, {
      key: 'limit',
      enabled: false,
      variants: [
        { key: 'low', value: 10, weight: 500 },
        { key: 'high', value: 100, weight: 500 },
      ],
      off_variant: 'low',
    });
    // An object split by weight, and a rule that pins one variant for vip.
    const config = await newFlag(server, user, project, {
      key: 'config',
      enabled: true,
      variants: [
        { key: 'dark', value: DARK, weight: 500 },
        { key: 'light', value: LIGHT, weight: 500 },
      ],
      off_variant: 'light',
    });
    const rule = await request(server, 'POST', `${flagsPath(project)}/${config.id}/rules`, { token: user.token, body: { rule_type: 'user_id', rule_value: 'vip', variant: 'dark' } });
    assert.equal(rule.status, 201, rule.text);
    await newFlag(server, user, project, { key: 'plain', enabled: true });
    // Objects and arrays in one flag (one JSON type to the API): getValue tells them apart by the default.
    await newFlag(server, user, project, {
      key: 'hosts',
      enabled: true,
      variants: [
        { key: 'one', value: { host: 'a.example' }, weight: 0 },
        { key: 'two', value: ['a.example', 'b.example'], weight: 1000 },
      ],
      off_variant: 'one',
    });
  });
  after(() => server.close());

  const options = (extra: Partial<ClientOptions> = {}): ClientOptions => ({ baseUrl: server.url, sdkKey: project.sdk_key, environment: 'production', storage: false, ...extra });
  /** What POST /sdk/v1/evaluate answers for a flag and a user: the SDK must read the same. */
  const served = async (key: string, userId: string) =>
    (await request(server, 'POST', '/sdk/v1/evaluate', { sdkKey: project.sdk_key, body: { environment: 'production', context: { user_id: userId } } })).body.flags[key] as { variant?: string; value?: unknown };

  test('getValue and getVariant read string, number and object values; the type follows the default', async () => {
    const c = client(options({ context: { user_id: 'vip' }, stream: false }));
    assert.equal(await c.ready(), true);
    const text: string = c.getValue('button_text', 'Click');
    const limit: number = c.getValue('limit', 0);
    const config: Config = c.getValue('config', LIGHT);
    assert.equal(text, 'Buy now');
    assert.equal(limit, 10);
    assert.deepEqual(config, DARK, "the rule's pinned variant");
    assert.deepEqual([c.getVariant('button_text'), c.getVariant('limit'), c.getVariant('config')], ['buy', 'low', 'dark']);
    // The remote client asks for each flag's kind (X-Guidon-Answer: kind): one variant with all the weight is STATIC.
    assert.deepEqual(c.allFlags().button_text, { enabled: true, reason: 'Flag enabled globally', variant: 'buy', value: 'Buy now', kind: 'STATIC' });
    // @ts-expect-error a string default gives a string, not a number
    const wrong: number = c.getValue('button_text', 'x');
    assert.equal(typeof wrong, 'string');
  });

  test('a value of another JSON type, an unknown flag and a flag without variants give the default; nothing throws', async () => {
    const c = client(options({ context: { user_id: 'vip' }, stream: false }));
    await c.ready();
    assert.equal(c.getValue('button_text', 0), 0);
    assert.equal(c.getValue('button_text', false), false);
    assert.equal(c.getValue('limit', 'ten'), 'ten');
    assert.equal(c.getValue('config', 'x'), 'x');
    assert.deepEqual(c.getValue('config', ['an', 'array']), ['an', 'array'], 'an object is not an array');
    assert.deepEqual(c.getValue('limit', { n: 1 }), { n: 1 });
    assert.equal(c.getValue('nope', 'default'), 'default');
    assert.equal(c.getVariant('nope'), undefined);
    assert.equal(c.getValue('plain', 'x'), 'x');
    assert.equal(c.getValue('plain', true), true, 'a flag without variants has no value, only enabled');
    assert.equal(c.getVariant('plain'), undefined);
    const hosts: string[] = c.getValue('hosts', ['localhost']);
    assert.deepEqual(hosts, ['a.example', 'b.example']);
    assert.deepEqual(c.getValue('hosts', { host: 'localhost' }), { host: 'localhost' }, 'an array is not an object');
    assert.equal(c.getValue('__proto__', 'x'), 'x');
    assert.equal(c.getVariant('constructor'), undefined);
  });

  test('forContext: each user gets the variant Guidon serves them, pinned or by weight', async () => {
    const c = client(options());
    const vip = await c.forContext({ user_id: 'vip' });
    assert.deepEqual([vip.getVariant('config'), vip.getValue('config', LIGHT)], ['dark', DARK]);
    const seen = new Set<string>();
    for (let i = 0; i < 20; i++) {
      const flags = await c.forContext({ user_id: `user-${i}` });
      const expected = await served('config', `user-${i}`);
      assert.equal(flags.getVariant('config'), expected.variant);
      assert.deepEqual(flags.getValue('config', { theme: '', size: 0 }), expected.value);
      assert.equal(flags.getValue('config', 'x'), 'x');
      assert.equal(flags.getValue('limit', 0), 10);
      assert.equal(flags.getVariant('plain'), undefined);
      seen.add(flags.getVariant('config')!);
    }
    assert.deepEqual([...seen].sort(), ['dark', 'light'], 'a 50/50 split serves both to 20 users');
  });

  test('Guidon away: getValue gives the default and getVariant undefined, on the client and on forContext; a bootstrap gives no value', async () => {
    const c = client({ baseUrl: `http://127.0.0.1:${await freePort()}`, sdkKey: project.sdk_key, environment: 'production', stream: false, storage: false, bootstrap: { button_text: true } });
    assert.equal(await c.ready(), false);
    assert.equal(c.isEnabled('button_text'), true);
    assert.equal(c.getValue('button_text', 'Click'), 'Click');
    assert.equal(c.getVariant('button_text'), undefined);
    const flags = await c.forContext({ user_id: 'vip' });
    assert.deepEqual(flags.getValue('config', LIGHT), LIGHT);
    assert.equal(flags.getVariant('config'), undefined);
    assert.equal(flags.getValue('limit', 7), 7);
  });

  test("a change of a variant's value reaches the change event and getValue", async () => {
    const c = client(options());
    assert.equal(await c.ready(), true);
    const changes: string[][] = [];
    c.on('change', ({ keys }) => changes.push(keys));
    await new Promise((resolve) => setTimeout(resolve, 300)); // the stream connects
    const updated = await request(server, 'PUT', `${flagsPath(project)}/${buttonId}`, {
      token: user.token,
      body: {
        variants: [
          { key: 'buy', value: 'Buy it now', weight: 1000 },
          { key: 'purchase', value: 'Purchase', weight: 0 },
        ],
      },
    });
    assert.equal(updated.status, 200, updated.text);
    await eventually(() => changes.some((keys) => keys.includes('button_text')), 'a change event for button_text');
    assert.equal(c.getValue('button_text', ''), 'Buy it now');
    assert.equal(c.reason('button_text'), 'Flag enabled globally', 'enabled and reason did not change: only the value');
  });
});
