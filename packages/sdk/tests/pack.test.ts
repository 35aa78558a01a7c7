/**
 * Distribution (issue 22): `npm pack` of @guidon/engine, @guidon/sdk and @guidon/openfeature gives
 * tarballs that a fresh application in a temporary directory outside the workspace installs
 * (from the tarballs, the rest from the registry or npm's cache) and runs, as ESM, as CommonJS
 * and type-checked with TypeScript; each tarball holds its README, LICENSE, types, and no dev files.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { flagsPath, newFlag, newProject, newUser, request, startServer, type TestProject, type TestServer, type TestUser } from '@guidon/server/dist/tests/harness.js';

const run = promisify(execFile);
const root = resolve(dirname(fileURLToPath(import.meta.url)), '../../../..');
const PACKAGES = ['engine', 'sdk', 'openfeature'] as const;

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
  let server: TestServer;
  let user: TestUser;
  let project: TestProject;
  let token: string;

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'guidon-pack-'));
    for (const name of PACKAGES) {
      const { stdout } = await run('npm', ['pack', '--json', '--pack-destination', dir], { cwd: join(root, 'packages', name), env: npmEnv() });
      const [packed] = JSON.parse(stdout) as { filename: string; files: { path: string }[] }[];
      tarballs[name] = join(dir, packed!.filename);
      contents[name] = packed!.files.map((file) => file.path);
    }
    app = join(dir, 'app');
    mkdirSync(app);
    writeFileSync(join(app, 'package.json'), JSON.stringify({ name: 'guidon-pack-check', version: '1.0.0', private: true }));
    const versionOf = (name: string) => JSON.parse(readFileSync(join(root, 'node_modules', name, 'package.json'), 'utf8')).version as string;
    await run('npm', ['install', '--no-audit', '--no-fund', '--prefer-offline', '--ignore-scripts', tarballs.engine!, tarballs.sdk!, tarballs.openfeature!, `@openfeature/server-sdk@${versionOf('@openfeature/server-sdk')}`, `@types/node@${versionOf('@types/node')}`], { cwd: app, env: npmEnv() });

    server = await startServer();
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
      assert.ok(files.some((file) => /^dist\/[^/]+\/.*\.d\.ts$/.test(file)), `${name}: types`);
      assert.ok(files.some((file) => file.startsWith('dist/cjs/')), `${name}: CommonJS`);
      const dev = files.filter((file) => /\.test\.|\.map$|tsbuildinfo|^src\/|^tests?\/|bench/.test(file));
      assert.deepEqual(dev, [], `${name}: dev files`);
    }
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
    assert.deepEqual(JSON.parse(stdout), { ready: true, checkout: true, reason: 'Matched conditions targeting rule', format: 1, kinds: ['function', 'object', 'function'] });
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
