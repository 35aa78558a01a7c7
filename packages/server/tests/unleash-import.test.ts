/**
 * The import from Unleash checked against a real Unleash (docs/flags-as-code.md, "Moving from
 * Unleash"): unleash-server (pinned in scripts/unleash) runs on a PostgreSQL database of its own;
 * flags are made there through its Admin API with every mapped strategy, operator, segment and
 * variant (and some that cannot be mapped); its own export API exports them; Guidon imports the
 * file; then, for 2,000 random contexts, what Unleash's Node SDK (unleash-client, pinned, fed by
 * that Unleash's client API) answers, enabled and variant, is compared with what Guidon's evaluate
 * answers: equal for every mapped flag.
 *
 * Slow (installing Unleash the first time, about a minute; starting it, its migrations, about
 * 30 s): it runs once per `npm test`, in the PostgreSQL pass of the Node 22 line (Unleash needs
 * Node 22, and this line's own binary runs it). Elsewhere it says so and skips.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { copyFileSync, mkdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { keyOf } from '../src/modules/flags-as-code/unleash.js';
import { evaluate, freePort, newProject, newUser, request, startServer, type TestProject, type TestServer, type TestUser } from './harness.js';
import { seededRandom } from './seeded-random.js';
import { createTestDatabase, onPostgres, type TestDatabase } from './test-database.js';

const root = fileURLToPath(new URL('../../../../', import.meta.url));
const pinned = join(root, 'scripts', 'unleash');
const cache = join(root, 'node_modules', '.cache', 'guidon-unleash');
const nodeMajor = Number(process.versions.node.split('.')[0]);
const skip = !onPostgres ? 'runs in the PostgreSQL pass' : nodeMajor !== 22 ? 'runs on the Node 22 line (npm test --node=22): Unleash needs Node 22' : false;

const ADMIN = '*:*.guidon-test-admin-token';
const CLIENT = { production: 'default:production.guidon-test-client-token', development: 'default:development.guidon-test-client-token' };

/** unleash-server and unleash-client at the versions scripts/unleash pins, installed once into the cache. */
function installUnleash(): void {
  const wanted = JSON.parse(readFileSync(join(pinned, 'package.json'), 'utf8')).dependencies as Record<string, string>;
  const installed = (name: string) => {
    try {
      return JSON.parse(readFileSync(join(cache, 'node_modules', name, 'package.json'), 'utf8')).version as string;
    } catch {
      return null;
    }
  };
  if (Object.entries(wanted).every(([name, version]) => installed(name) === version)) return;
  mkdirSync(cache, { recursive: true });
  for (const file of ['package.json', 'package-lock.json']) copyFileSync(join(pinned, file), join(cache, file));
  const { npm_config_local_prefix: _root, ...env } = process.env;
  const result = spawnSync('npm', ['ci', '--ignore-scripts', '--no-audit', '--no-fund', '--prefix', cache], { cwd: cache, stdio: 'inherit', env });
  if (result.status !== 0) throw new Error(`installing Unleash into ${cache} failed`);
}

/** An Unleash server of the test's own, on its own database. */
class RealUnleash {
  private child: ChildProcess | undefined;
  url = '';
  async start(database: TestDatabase): Promise<void> {
    const port = await freePort();
    this.url = `http://127.0.0.1:${port}`;
    const env = {
      ...process.env,
      DATABASE_URL: database.url,
      DATABASE_SSL: 'false',
      PORT: String(port),
      HTTP_HOST: '127.0.0.1',
      LOG_LEVEL: 'error',
      INIT_ADMIN_API_TOKENS: ADMIN,
      INIT_BACKEND_API_TOKENS: `${CLIENT.production},${CLIENT.development}`,
      CHECK_VERSION: 'false',
      SEND_TELEMETRY: 'false',
      // Environment-level variants, as instances from Unleash 5 have them (Unleash 8 keeps them behind this flag).
      UNLEASH_EXPERIMENTAL_ENABLE_LEGACY_VARIANTS: 'true',
    };
    this.child = spawn(process.execPath, [join(cache, 'node_modules', 'unleash-server', 'dist', 'server.js')], { env, stdio: ['ignore', 'ignore', 'inherit'] });
    const deadline = Date.now() + 180_000;
    for (;;) {
      const health = await fetch(`${this.url}/health`).catch(() => null);
      if (health?.ok) return;
      if (this.child.exitCode !== null) throw new Error(`Unleash exited (${this.child.exitCode})`);
      if (Date.now() > deadline) throw new Error('Unleash did not start within 3 minutes');
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
  }
  async admin(method: string, path: string, body?: unknown): Promise<any> {
    const answer = await fetch(`${this.url}/api/admin${path}`, { method, headers: { authorization: ADMIN, 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) });
    const text = await answer.text();
    if (!answer.ok) throw new Error(`Unleash ${method} ${path}: ${answer.status} ${text}`);
    return text ? JSON.parse(text) : null;
  }
  async stop(): Promise<void> {
    if (!this.child || this.child.exitCode !== null) return;
    const exited = new Promise((resolve) => this.child!.once('exit', resolve));
    this.child.kill('SIGTERM');
    await exited;
  }
}

interface UnleashContext {
  userId: string;
  sessionId: string;
  remoteAddress?: string;
  currentTime?: Date;
  properties: Record<string, string>;
}

/** Contexts with a user id (Unleash buckets those without one at random), and every attribute the flags name. */
function randomContexts(count: number, seed: number): UnleashContext[] {
  const next = seededRandom(seed);
  const pick = <T>(items: readonly T[]) => items[Math.floor(next() * items.length)]!;
  return Array.from({ length: count }, (_, i) => {
    const properties: Record<string, string> = {};
    const maybe = (name: string, values: string[]) => next() < 0.7 && (properties[name] = pick(values));
    maybe('plan', ['beta', 'enterprise', 'free', 'Beta']);
    maybe('country', ['fr', 'de', 'FR', 'us', 'jp']);
    maybe('version', ['2.3.9', '2.4.0', '2.10.1', '3.0.0-rc.1', '3.0.0', 'bad']);
    maybe('seats', ['1', '5', '10', '11', '250', 'x', '7.5']);
    maybe('ua', ['Mozilla iPhone', 'ipad app', 'Android', 'curl/8']);
    maybe('region', ['eu-west-1', 'us-east-1', 'eu-north-1', 'ap']);
    const time = next();
    return {
      userId: next() < 0.03 ? pick(['alice', 'bob', 'carol']) : `user-${i}-${Math.floor(next() * 1e6)}`,
      sessionId: `s-${Math.floor(next() * 1e6)}`,
      ...(next() < 0.8 ? { remoteAddress: pick(['10.1.2.3', '10.255.0.1', '192.168.1.1', '192.168.1.2', '172.16.0.1', '2001:db8::1']) } : {}),
      ...(time < 0.7 ? { currentTime: new Date(time < 0.35 ? '2025-06-01T00:00:00Z' : '2026-06-01T00:00:00Z') } : {}),
      properties,
    };
  });
}

/** The same context as Guidon's evaluate takes it (docs/flags-as-code.md: the attribute names). */
const guidonContext = (context: UnleashContext) => ({
  user_id: context.userId,
  custom_attributes: {
    session_id: context.sessionId,
    ...(context.remoteAddress ? { remote_address: context.remoteAddress } : {}),
    ...(context.currentTime ? { current_time: context.currentTime.toISOString() } : {}),
    ...context.properties,
  },
});

describe('import from a real Unleash', { skip }, () => {
  let unleashDatabase: TestDatabase;
  let unleash: RealUnleash;
  let server: TestServer;
  let user: TestUser;
  let exports: Record<'production' | 'development', any>;
  let segmentsAnswer: any;
  const started = Date.now();

  before(async () => {
    installUnleash();
    unleashDatabase = await createTestDatabase();
    unleash = new RealUnleash();
    [server] = await Promise.all([startServer(), unleash.start(unleashDatabase)]);
    user = await newUser(server, 'unleash');
    const project = '/projects/default';
    for (const name of ['plan', 'country', 'version', 'seats', 'ua', 'region']) await unleash.admin('POST', '/context', { name, description: name });
    const beta = await unleash.admin('POST', '/segments', { name: 'Beta users', description: 'beta or enterprise', constraints: [{ contextName: 'plan', operator: 'IN', values: ['beta', 'enterprise'] }] });
    const big = await unleash.admin('POST', '/segments', { name: 'Big accounts', constraints: [{ contextName: 'seats', operator: 'NUM_GTE', value: '10' }, { contextName: 'region', operator: 'STR_STARTS_WITH', values: ['eu-'] }] });
    await unleash.admin('POST', '/strategies', { name: 'office-hours', parameters: [] });
    // A fresh Unleash 8 no longer lists userWithId (instances that were upgraded still have it); the SDKs evaluate it.
    await unleash.admin('POST', '/strategies', { name: 'userWithId', parameters: [{ name: 'userIds', type: 'list', description: 'user ids', required: true }] });
    if (!(await unleash.admin('GET', '/strategies')).strategies.some((strategy: { name: string }) => strategy.name === 'remoteAddress')) {
      await unleash.admin('POST', '/strategies', { name: 'remoteAddress', parameters: [{ name: 'IPs', type: 'list', description: 'addresses', required: true }] });
    }

    const feature = async (name: string, strategies: object[], { environment = 'production', on = true, variants, description }: { environment?: string; on?: boolean; variants?: object[]; description?: string } = {}) => {
      await unleash.admin('POST', `${project}/features`, { name, type: 'release', ...(description ? { description } : {}) }).catch((error: Error) => {
        if (!/already exists|409/.test(error.message)) throw error;
      });
      for (const strategy of strategies) await unleash.admin('POST', `${project}/features/${name}/environments/${environment}/strategies`, { constraints: [], parameters: {}, ...strategy });
      if (variants) await unleash.admin('PUT', `${project}/features/${name}/environments/${environment}/variants`, variants);
      if (on) await unleash.admin('POST', `${project}/features/${name}/environments/${environment}/on`);
    };
    const rollout = (name: string, rolloutPercent: number, extra: object = {}) => ({ name: 'flexibleRollout', parameters: { rollout: String(rolloutPercent), stickiness: 'default', groupId: name }, ...extra });

    await feature('everyone', [{ name: 'default' }], { description: 'on for all' });
    await feature('rollout-30', [rollout('rollout-30', 30)]);
    await feature('rollout-30', [rollout('rollout-30', 70)], { environment: 'development' });
    await feature('by-user-id', [{ name: 'flexibleRollout', parameters: { rollout: '50', stickiness: 'userId', groupId: 'by-user-id' }, constraints: [{ contextName: 'country', operator: 'IN', values: ['fr', 'de'], caseInsensitive: true }] }]);
    await feature('named-users', [{ name: 'userWithId', parameters: { userIds: 'alice,bob, carol' } }]);
    await feature('office', [{ name: 'remoteAddress', parameters: { IPs: '10.0.0.0/8, 192.168.1.1' } }]);
    await feature('operators', [
      { name: 'default', constraints: [{ contextName: 'ua', operator: 'STR_CONTAINS', values: ['iphone'], caseInsensitive: true }, { contextName: 'seats', operator: 'NUM_GT', value: '5' }] },
      { name: 'default', constraints: [{ contextName: 'version', operator: 'SEMVER_GTE', value: '2.4.0' }, { contextName: 'version', operator: 'SEMVER_LT', value: '3.0.0' }, { contextName: 'country', operator: 'NOT_IN', values: ['us'] }] },
      { name: 'default', constraints: [{ contextName: 'currentTime', operator: 'DATE_AFTER', value: '2026-01-01T00:00:00.000Z' }, { contextName: 'seats', operator: 'NUM_LTE', value: '10' }, { contextName: 'region', operator: 'STR_ENDS_WITH', values: ['-1'], inverted: true }] },
      { name: 'default', constraints: [{ contextName: 'plan', operator: 'REGEX', value: '^ent', caseInsensitive: true }, { contextName: 'version', operator: 'SEMVER_EQ', value: '3.0.0-rc.1' }] },
      { name: 'default', constraints: [{ contextName: 'currentTime', operator: 'DATE_BEFORE', value: '2026-01-01T00:00:00.000Z' }, { contextName: 'seats', operator: 'NUM_EQ', value: '11' }] },
      { name: 'default', constraints: [{ contextName: 'seats', operator: 'NUM_LT', value: '2' }, { contextName: 'version', operator: 'SEMVER_GT', value: '2.9.0' }, { contextName: 'version', operator: 'SEMVER_LTE', value: '2.10.1' }] },
      { name: 'default', constraints: [{ contextName: 'seats', operator: 'NUM_GTE', value: '250' }, { contextName: 'country', operator: 'STR_STARTS_WITH', values: ['J'], caseInsensitive: true }] },
    ]);
    await feature('segmented', [rollout('segmented', 60, { segments: [beta.id, big.id] })]);
    await feature('button-text', [rollout('button-text', 100)], {
      variants: [
        { name: 'Control', weight: 500, weightType: 'variable', stickiness: 'default', payload: { type: 'string', value: 'Buy' } },
        { name: 'short', weight: 300, weightType: 'fix', stickiness: 'default', payload: { type: 'string', value: 'Buy now' } },
        { name: 'long', weight: 200, weightType: 'fix', stickiness: 'default', payload: { type: 'string', value: 'Buy it now' } },
      ],
    });
    const strategyVariants = [
      { name: 'a', weight: 400, weightType: 'variable', stickiness: 'default', payload: { type: 'json', value: '{"limit": 10}' } },
      { name: 'b', weight: 600, weightType: 'variable', stickiness: 'default', payload: { type: 'json', value: '{"limit": 20}' } },
    ];
    await feature('limits', [rollout('limits', 40, { variants: strategyVariants }), rollout('limits', 100, { variants: strategyVariants, constraints: [{ contextName: 'plan', operator: 'IN', values: ['enterprise'] }] })]);
    await feature('Checkout.V2', [rollout('Checkout.V2', 50)]);
    await feature('shared-bucket', [rollout('shared-group', 25)]);
    await feature('switched-off', [{ name: 'default' }], { on: false });
    await feature('numbers', [rollout('numbers', 100, { variants: [{ name: 'low', weight: 1000, weightType: 'variable', stickiness: 'userId', payload: { type: 'number', value: '5' } }] })]);
    // What cannot be mapped exactly: skipped, with the reason.
    await feature('by-session', [{ name: 'flexibleRollout', parameters: { rollout: '50', stickiness: 'sessionId', groupId: 'by-session' } }]);
    await feature('custom', [{ name: 'office-hours' }]);
    await feature('child', [{ name: 'default' }]);
    await unleash.admin('POST', `${project}/features/child/dependencies`, { feature: 'everyone', enabled: true });
    // A dependency on variants the parent has in different environments ("blue" in development, "aa"
    // in production): in each, the one the parent cannot serve never matches in Unleash.
    const colours = (names: string[]) => names.map((name) => ({ name, weight: 1000 / names.length, weightType: 'variable', stickiness: 'default' }));
    await feature('colour', [rollout('colour', 60)], { variants: colours(['aa', 'bb']) });
    await feature('colour', [rollout('colour', 60)], { environment: 'development', variants: colours(['blue', 'red']) });
    await feature('by-colour', [{ name: 'default' }]);
    await feature('by-colour', [{ name: 'default' }], { environment: 'development' });
    await unleash.admin('POST', `${project}/features/by-colour/dependencies`, { feature: 'colour', enabled: true, variants: ['blue', 'aa'] });
    await feature('two-groups', [rollout('two-groups', 50)], { variants: [{ name: 'x', weight: 1000, weightType: 'variable', stickiness: 'default' }] });
    await unleash.admin('PATCH', `${project}/features/two-groups/environments/production/strategies/${(await unleash.admin('GET', `${project}/features/two-groups/environments/production/strategies`))[0].id}`, [{ op: 'replace', path: '/parameters/groupId', value: 'elsewhere' }]);

    const names = (await unleash.admin('GET', `${project}/features`)).features.map((f: { name: string }) => f.name);
    exports = {
      production: await unleash.admin('POST', '/features-batch/export', { features: names, environment: 'production' }),
      development: await unleash.admin('POST', '/features-batch/export', { features: names, environment: 'development' }),
    };
    segmentsAnswer = await unleash.admin('GET', '/segments');
  });
  after(async () => {
    await server?.close();
    await unleash?.stop();
    await unleashDatabase?.drop();
    console.log(`# the real-Unleash check took ${((Date.now() - started) / 1000).toFixed(1)} s`);
  });

  test('without the segment definitions, the strategies that use them are skipped; a dry run changes nothing', async () => {
    const project = await newProject(server, user, 'From Unleash');
    const answer = await request(server, 'POST', `/api/projects/${project.id}/import/unleash`, { token: user.token, body: exports.production });
    assert.equal(answer.status, 200, answer.text);
    assert.equal(answer.body.dry_run, true);
    const segmented = answer.body.skipped.find((entry: { feature: string | null }) => entry.feature === 'segmented');
    assert.match(segmented?.reason ?? '', /the file does not define it/);
    assert.deepEqual((await request(server, 'GET', `/api/projects/${project.id}/export`, { token: user.token })).body.flags, []);
  });

  test('every mapped flag answers what Unleash answers, for 2,000 random contexts', async () => {
    const project: TestProject = await newProject(server, user, 'From Unleash');
    const body = { exports: [exports.production, exports.development], segments: segmentsAnswer };
    const answer = await request(server, 'POST', `/api/projects/${project.id}/import/unleash?dry_run=false`, { token: user.token, body });
    assert.equal(answer.status, 200, answer.text);
    const skippedFeatures = new Set(answer.body.skipped.filter((entry: { what: string }) => entry.what === 'the feature').map((entry: { feature: string; environment: string }) => `${entry.environment} ${entry.feature}`));
    for (const expected of ['production by-session', 'production custom', 'production two-groups']) assert.ok(skippedFeatures.has(expected), `${expected} is skipped: ${JSON.stringify(answer.body.skipped)}`);
    const reason = (feature: string) => answer.body.skipped.find((entry: { feature: string; what: string }) => entry.feature === feature && entry.what === 'the feature')?.reason as string;
    assert.match(reason('by-session'), /stickiness "sessionId"/);
    assert.match(reason('custom'), /strategy "office-hours"/);
    // Its dependency is a prerequisite (docs/prerequisites.md), compared with Unleash below like any flag.
    assert.equal(reason('child'), undefined);
    assert.match(reason('two-groups'), /different groups/);

    const document = answer.body.document;
    const checkout = document.flags.find((flag: { name: string }) => flag.name === 'Checkout.V2');
    assert.equal(checkout.key, 'checkout_v2');
    assert.equal(checkout.environments.production.bucketing_key, 'Checkout.V2', 'the Unleash name keeps the buckets');
    assert.equal(document.flags.find((flag: { name: string }) => flag.name === 'shared-bucket').environments.production.bucketing_key, 'shared-group');
    const everyoneKey = document.flags.find((flag: { name: string }) => flag.name === 'everyone').key;
    assert.deepEqual(document.flags.find((flag: { name: string }) => flag.name === 'child').environments.production.prerequisites, [{ flag_key: everyoneKey }]);
    // Per environment, the listed variants the parent has there; compared with Unleash below.
    assert.equal(reason('by-colour'), undefined);
    const colourKey = document.flags.find((flag: { name: string }) => flag.name === 'colour').key;
    const byColour = document.flags.find((flag: { name: string }) => flag.name === 'by-colour').environments;
    assert.deepEqual(byColour.production.prerequisites, [{ flag_key: colourKey, variants: ['aa'] }]);
    assert.deepEqual(byColour.development.prerequisites, [{ flag_key: colourKey, variants: ['blue'] }]);
    assert.deepEqual(document.segments.map((segment: { key: string }) => segment.key), ['beta_users', 'big_accounts']);

    const mapped = document.flags.map((flag: { key: string; name: string; environments: Record<string, { variants: unknown[] }> }) => flag);
    const production = mapped.filter((flag: { environments: Record<string, unknown> }) => flag.environments.production);
    assert.ok(production.length >= 13, `the mapped flags: ${production.map((flag: { name: string }) => flag.name).join(', ')}`);

    const require = createRequire(join(cache, 'package.json'));
    const { startUnleash } = require('unleash-client') as { startUnleash(options: object): Promise<any> };
    for (const [environment, count] of [['production', 2000], ['development', 300]] as const) {
      const client = await startUnleash({ url: `${unleash.url}/api/`, appName: 'guidon-check', environment, customHeaders: { Authorization: CLIENT[environment] }, disableMetrics: true, refreshInterval: 600_000 });
      try {
        const flags = mapped.filter((flag: { environments: Record<string, unknown> }) => flag.environments[environment]);
        const contexts = randomContexts(count, environment === 'production' ? 35 : 36);
        let compared = 0;
        for (let start = 0; start < contexts.length; start += 25) {
          const batch = contexts.slice(start, start + 25);
          const answers = await Promise.all(batch.map((context) => evaluate(server, project.sdk_key, environment, guidonContext(context))));
          batch.forEach((context, i) => {
            assert.equal(answers[i]!.status, 200, answers[i]!.text);
            for (const flag of flags) {
              const guidon = answers[i]!.body.flags[flag.key];
              const where = `${environment} ${flag.name} for ${JSON.stringify(context)}`;
              assert.ok(guidon, `${where}: Guidon has the flag`);
              assert.equal(guidon.enabled, client.isEnabled(flag.name, context), `${where}: enabled`);
              if (flag.environments[environment]!.variants.length > 0) {
                const variant = client.getVariant(flag.name, context);
                assert.equal(guidon.variant, keyOf(variant.name), `${where}: variant`);
                if (variant.payload) assert.deepEqual(guidon.value, variant.payload.type === 'json' ? JSON.parse(variant.payload.value) : variant.payload.type === 'number' ? Number(variant.payload.value) : variant.payload.value, `${where}: value`);
              }
              compared++;
            }
          });
        }
        assert.ok(compared >= count * flags.length);
      } finally {
        client.destroy();
      }
    }
  });
});
