/**
 * Distribution: `npm pack` of every published package (the workspaces not marked private:
 * the libraries @guidon/engine, @guidon/sdk, @guidon/openfeature, and the program @guidon/cli) gives tarballs that the field's own tools find
 * sound (publint, and arethetypeswrong for the types under node10, node16 ESM and CommonJS, and
 * bundlers), each with its README, the root's LICENSE and its publishing fields. The server serves
 * those same tarballs at /downloads/ (scripts/pack-clients.mjs made them at build time), and a
 * fresh application outside the workspace installs them from the server's addresses, as the
 * Connect page says (the rest from the registry or npm's cache), and runs them, as ESM, as
 * CommonJS and type-checked with TypeScript; its exposures and track() events (the SDK's and the
 * OpenFeature provider's) are what a running experiment's results count.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { eventually, flagsPath, newFlag, newProject, newUser, request, startServer, type TestProject, type TestServer, type TestUser } from '@guidon/server/dist/tests/harness.js';
import { onPostgres } from '@guidon/server/dist/tests/test-database.js';

const run = promisify(execFile);
const root = resolve(dirname(fileURLToPath(import.meta.url)), '../../../..');
const readJson = (path: string) => JSON.parse(readFileSync(path, 'utf8'));
/** The published packages: every workspace not marked private (scripts/pack-clients.mjs packs the same). */
const PACKAGES = (readJson(join(root, 'package.json')).workspaces as string[]).filter((dir) => !readJson(join(root, dir, 'package.json')).private).map((dir) => dir.replace('packages/', ''));
const bin = (name: string) => join(root, 'node_modules', '.bin', name);
/** A program (a `bin`, no `exports`: @guidon/cli) has no types or CommonJS to check; its own test runs it installed (packages/cli/tests). */
const isLibrary = (name: string) => readJson(join(root, 'packages', name, 'package.json')).exports !== undefined;

/** npm without the workspace's settings leaking in (npm_config_* of an `npm run` around this test). */
function npmEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [name, value] of Object.entries(process.env)) if (!name.toLowerCase().startsWith('npm_')) env[name] = value;
  return env;
}

describe('npm pack tarballs install and run outside the workspace', { timeout: 300_000 }, () => {
  let dir: string;
  let app: string;
  const tarballs: Record<string, string> = {};
  const contents: Record<string, string[]> = {};
  const integrity: Record<string, string> = {};
  let server: TestServer;
  let user: TestUser;
  let project: TestProject;
  let token: string;

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'guidon-pack-'));
    for (const name of PACKAGES) {
      const { stdout } = await run('npm', ['pack', '--json', '--pack-destination', dir], { cwd: join(root, 'packages', name), env: npmEnv() });
      const [packed] = JSON.parse(stdout) as { filename: string; integrity: string; files: { path: string }[] }[];
      tarballs[name] = join(dir, packed!.filename);
      contents[name] = packed!.files.map((file) => file.path);
      integrity[name] = packed!.integrity;
    }
    server = await startServer();
    app = join(dir, 'app');
    mkdirSync(app);
    writeFileSync(join(app, 'package.json'), JSON.stringify({ name: 'guidon-pack-check', version: '1.0.0', private: true }));
    const versionOf = (name: string) => JSON.parse(readFileSync(join(root, 'node_modules', name, 'package.json'), 'utf8')).version as string;
    // What the Connect page says: the tarballs from this server's /downloads/ (on no registry yet).
    const served = (await request(server, 'GET', '/downloads/')).body.packages as { url: string }[];
    const urls = served.map((entry) => entry.url.replace(server.config.publicUrl, server.url));
    await run('npm', ['install', '--no-audit', '--no-fund', '--prefer-offline', '--ignore-scripts', ...urls, `@openfeature/server-sdk@${versionOf('@openfeature/server-sdk')}`, `@types/node@${versionOf('@types/node')}`], { cwd: app, env: npmEnv() });

    user = await newUser(server);
    project = await newProject(server, user);
    const flag = await newFlag(server, user, project, { key: 'checkout', enabled: true, rollout_percentage: 40 });
    await request(server, 'POST', `${flagsPath(project)}/${flag.id}/rules`, { token: user.token, body: { rule_type: 'conditions', conditions: [{ attribute: 'plan', operator: 'IN', values: ['pro'] }] } });
    await newFlag(server, user, project, { key: 'dark', enabled: false });
    token = (await request(server, 'POST', '/api/tokens', { token: user.token, body: { name: 'pack', project_id: project.id } })).body.token;
  });
  after(async () => {
    await server?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  test('each tarball: package.json, README, LICENSE, JavaScript for ESM and CommonJS with types; no tests, sources, maps or build info', () => {
    for (const name of PACKAGES) {
      const files = contents[name]!;
      for (const needed of ['package.json', 'README.md', 'LICENSE']) assert.ok(files.includes(needed), `${name}: ${needed}`);
      if (isLibrary(name)) {
        assert.ok(files.some((file) => /^dist\/[^/]+\/.*\.d\.ts$/.test(file)), `${name}: types`);
        assert.ok(files.some((file) => file.startsWith('dist/cjs/')), `${name}: CommonJS`);
      } else {
        for (const program of Object.values(readJson(join(root, 'packages', name, 'package.json')).bin as Record<string, string>)) assert.ok(files.includes(program.replace(/^\.\//, '')), `${name}: ${program}`);
      }
      const dev = files.filter((file) => /\.test\.|\.map$|tsbuildinfo|^src\/|^tests?\/|bench/.test(file));
      assert.deepEqual(dev, [], `${name}: dev files`);
    }
  });

  test('each package.json: MIT, its repository, engines, files; the LICENSE it carries is the root one', () => {
    const license = readFileSync(join(root, 'LICENSE'), 'utf8');
    for (const name of PACKAGES) {
      const manifest = readJson(join(root, 'packages', name, 'package.json'));
      assert.equal(manifest.license, 'MIT', name);
      assert.deepEqual(manifest.repository, { type: 'git', url: readJson(join(root, 'packages', 'engine', 'package.json')).repository.url, directory: `packages/${name}` }, name);
      assert.ok(manifest.engines?.node && manifest.files?.length > 0 && (manifest.exports || manifest.bin), `${name}: engines, files, exports or bin`);
      assert.equal(readFileSync(join(root, 'packages', name, 'LICENSE'), 'utf8'), license, `${name}: LICENSE`);
    }
  });

  test('publint and arethetypeswrong find nothing wrong in any tarball', { skip: onPostgres ? 'the tarballs do not depend on the database: checked on the SQLite pass' : false }, async () => {
    for (const name of PACKAGES) {
      await run(bin('publint'), ['run', '--strict', tarballs[name]!]).catch((error: { stdout?: string; stderr?: string }) => assert.fail(`publint ${name}:\n${error.stdout}${error.stderr}`));
      if (isLibrary(name)) await run(bin('attw'), [tarballs[name]!, '--format', 'ascii']).catch((error: { stdout?: string; stderr?: string }) => assert.fail(`attw ${name}:\n${error.stdout}${error.stderr}`));
    }
  });

  test("GET /downloads/ lists every package at this server's version, and serves npm pack's tarball of each", async () => {
    const listing = (await request(server, 'GET', '/downloads/')).body.packages as { name: string; version: string; file: string; url: string; integrity: string; needs: string[] }[];
    assert.deepEqual(listing.map((entry) => entry.name), PACKAGES.map((name) => `@guidon/${name}`));
    const version = readJson(join(root, 'packages', 'server', 'package.json')).version;
    for (const [i, entry] of listing.entries()) {
      assert.equal(entry.version, version);
      assert.equal(entry.url, `${server.config.publicUrl}/downloads/${entry.file}`);
      assert.equal(entry.integrity, integrity[PACKAGES[i]!], `${entry.file} is what npm pack makes of the build`);
      const file = await fetch(`${server.url}/downloads/${entry.file}`);
      assert.equal(file.status, 200);
      assert.equal(file.headers.get('content-type'), 'application/gzip');
      assert.equal(`sha512-${createHash('sha512').update(Buffer.from(await file.arrayBuffer())).digest('base64')}`, entry.integrity);
    }
    assert.deepEqual(listing.find((entry) => entry.name === '@guidon/sdk')?.needs, ['@guidon/engine'], 'the SDK installs with the engine');
    const unknown = await request(server, 'GET', '/downloads/..%2Fpackage.json');
    assert.equal(unknown.status, 404);
  });

  const contexts = [{}, { user_id: 'u-1' }, { user_id: 'u-2', custom_attributes: { plan: 'pro' } }, { user_email: 'a@example.com' }];

  test('an ESM application evaluates locally (the same answers as /sdk/v1/evaluate) and through the OpenFeature provider', async () => {
    writeFileSync(
      join(app, 'main.mjs'),
      `import { createClient } from '@guidon/sdk';
import { compileFlagSet } from '@guidon/engine';
import { OpenFeature } from '@openfeature/server-sdk';
import { GuidonServerProvider } from '@guidon/openfeature/server';
const [baseUrl, apiToken, sdkKey] = process.argv.slice(2);
const contexts = ${JSON.stringify(contexts)};
const guidon = createClient({ baseUrl, apiToken, environment: 'production', mode: 'local' });
const ready = await guidon.ready();
const local = contexts.map((context) => guidon.evaluate(context).allFlags());
await guidon.close();
await OpenFeature.setProviderAndWait(new GuidonServerProvider({ baseUrl, sdkKey, environment: 'production' }));
const viaOpenFeature = await OpenFeature.getClient().getBooleanValue('checkout', false, { targetingKey: 'u-2', plan: 'pro' });
await OpenFeature.close();
console.log(JSON.stringify({ ready, local, viaOpenFeature, engine: typeof compileFlagSet }));
`,
    );
    const { stdout } = await run(process.execPath, ['main.mjs', server.url, token, project.sdk_key], { cwd: app, timeout: 60_000 });
    const out = JSON.parse(stdout);
    assert.equal(out.ready, true);
    assert.equal(out.engine, 'function');
    assert.equal(out.viaOpenFeature, true);
    for (const [i, context] of contexts.entries()) {
      const remote = await request(server, 'POST', '/sdk/v1/evaluate', { sdkKey: project.sdk_key, body: { environment: 'production', context } });
      assert.deepEqual(out.local[i], remote.body.flags, JSON.stringify(context));
    }
  });

  test("exposures and track() events from the installed packages (the SDK and the OpenFeature provider): a running experiment's results count them exactly", async () => {
    const api = (method: string, path: string, body: unknown) => request(server, method, path, { token: user.token, body });
    const orders = await api('POST', `/api/projects/${project.id}/metrics`, { key: 'orders', name: 'Orders', event: 'order', kind: 'count', better: 'higher' });
    assert.equal(orders.status, 201, orders.text);
    const flag = await newFlag(server, user, project, { key: 'pack-experiment', enabled: true, rollout_percentage: 50 });
    const experiments = `/api/projects/${project.id}/environments/${project.production}/experiments`;
    const created = await api('POST', experiments, { flag_id: flag.id, name: 'Pack', control: 'off', metrics: [{ metric_id: orders.body.id, role: 'primary' }] });
    assert.equal(created.status, 201, created.text);
    assert.equal((await api('POST', `${experiments}/${created.body.id}/start`, {})).status, 200);
    writeFileSync(
      join(app, 'experiment.mjs'),
      `import { createClient } from '@guidon/sdk';
import { OpenFeature } from '@openfeature/server-sdk';
import { GuidonServerProvider } from '@guidon/openfeature/server';
const [baseUrl, apiToken, sdkKey] = process.argv.slice(2);
const arms = {};
const guidon = createClient({ baseUrl, apiToken, environment: 'production', mode: 'local', sendUsage: false });
await guidon.ready();
for (let round = 0; round < 2; round++) {
  for (let i = 0; i < 30; i++) {
    const user_id = 'sdk-' + i;
    arms[user_id] = guidon.evaluate({ user_id }).isEnabled('pack-experiment') ? 'on' : 'off';
    if (round === 0) for (let n = 0; n < i % 3; n++) guidon.track('order', { user_id });
  }
}
await guidon.close();
await OpenFeature.setProviderAndWait(new GuidonServerProvider({ baseUrl, sdkKey, environment: 'production' }));
const client = OpenFeature.getClient();
for (let i = 0; i < 10; i++) {
  const targetingKey = 'of-' + i;
  arms[targetingKey] = (await client.getBooleanValue('pack-experiment', false, { targetingKey })) ? 'on' : 'off';
  client.track('order', { targetingKey }, { value: 1 });
}
await OpenFeature.close();
console.log(JSON.stringify({ arms, sent: guidon.eventStats().sent }));
`,
    );
    const { stdout } = await run(process.execPath, ['experiment.mjs', server.url, token, project.sdk_key], { cwd: app, timeout: 60_000 });
    const { arms, sent } = JSON.parse(stdout) as { arms: Record<string, string>; sent: number };
    const ordersOf = (unit: string) => (unit.startsWith('of-') ? 1 : Number(unit.slice('sdk-'.length)) % 3);
    assert.equal(sent, 30 + 30, 'the local client: one exposure per unit, and its 30 orders');
    const unitsIn = (arm: string) => Object.keys(arms).filter((unit) => arms[unit] === arm);
    const ordersIn = (arm: string) => unitsIn(arm).reduce((sum, unit) => sum + ordersOf(unit), 0) / unitsIn(arm).length;
    const counts = (results: any) =>
      results?.units === 40 && ['on', 'off'].every((arm) => Math.abs(results.metrics[0].arms[arm].mean - ordersIn(arm)) < 1e-9);
    // A flush commits exposures before events (intake.writer.ts): a computation may see a unit's
    // exposure and not yet its orders, and the next one counts both.
    let results: any;
    const path = `${experiments}/${created.body.id}/results`;
    await eventually(async () => counts((results = (await request(server, 'GET', path, { token: user.token })).body)), 'results counting 40 units and their orders', 30_000).catch(() => undefined);
    assert.equal(results.units, 40, JSON.stringify(results));
    assert.equal(results.multiple_exposures.units, 0);
    for (const arm of ['on', 'off']) {
      assert.equal(results.arms[arm].units, unitsIn(arm).length, arm);
      const counted = results.metrics[0].arms[arm];
      assert.equal(counted.units, unitsIn(arm).length);
      assert.ok(Math.abs(counted.mean - ordersIn(arm)) < 1e-9, `orders in ${arm}: ${counted.mean}`);
    }
  });

  test('a CommonJS application requires all three', async () => {
    writeFileSync(
      join(app, 'main.cjs'),
      `const { createClient, RULESET_FORMAT } = require('@guidon/sdk');
const { compileFlagSet, OUTCOMES } = require('@guidon/engine');
const { GuidonServerProvider } = require('@guidon/openfeature/server');
const [baseUrl, apiToken] = process.argv.slice(2);
(async () => {
  const guidon = createClient({ baseUrl, apiToken, environment: 'production', mode: 'local', sendUsage: false });
  const ready = await guidon.ready();
  const flags = guidon.evaluate({ user_id: 'u-2', custom_attributes: { plan: 'pro' } });
  await guidon.close();
  console.log(JSON.stringify({ ready, checkout: flags.isEnabled('checkout'), reason: flags.reason('checkout'), format: RULESET_FORMAT, kinds: [typeof compileFlagSet, typeof OUTCOMES, typeof GuidonServerProvider] }));
})();
`,
    );
    const { stdout } = await run(process.execPath, ['main.cjs', server.url, token], { cwd: app, timeout: 60_000 });
    assert.deepEqual(JSON.parse(stdout), { ready: true, checkout: true, reason: 'Matched conditions targeting rule', format: 2, kinds: ['function', 'object', 'function'] });
  });

  test('the types: a TypeScript application type-checks against the installed packages (NodeNext)', async () => {
    writeFileSync(
      join(app, 'check.ts'),
      `import { createClient, type LocalFlagSet, type GuidonClient } from '@guidon/sdk';
import { compileFlagSet, type FlagDefinition } from '@guidon/engine';
import { GuidonServerProvider } from '@guidon/openfeature/server';
const local = createClient({ baseUrl: 'http://x', apiToken: 'gdn_x', environment: 'production', mode: 'local' });
const flags: LocalFlagSet = local.evaluate({ user_id: 'u' });
const on: boolean = flags.isEnabled('a');
const text: string = flags.value('b', 'fallback');
const remote: GuidonClient = createClient({ baseUrl: 'http://x', sdkKey: 'sdk_x', environment: 'production' });
const defs: FlagDefinition[] = [{ key: 'a', enabled: true, rolloutPercentage: 0, rules: [] }];
compileFlagSet(defs);
new GuidonServerProvider({ baseUrl: 'http://x', sdkKey: 'sdk_x', environment: 'production' });
export { on, text, remote };
`,
    );
    writeFileSync(join(app, 'tsconfig.json'), JSON.stringify({ compilerOptions: { module: 'NodeNext', moduleResolution: 'NodeNext', strict: true, noEmit: true, skipLibCheck: false, types: ['node'], lib: ['ES2022', 'DOM'] }, files: ['check.ts'] }));
    const tsc = join(root, 'node_modules', 'typescript', 'bin', 'tsc');
    await run(process.execPath, [tsc, '-p', 'tsconfig.json'], { cwd: app }).catch((error: { stdout?: string }) => assert.fail(`tsc: ${error.stdout}`));
  });
});
