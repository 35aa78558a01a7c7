/**
 * The `guidon` command line against a running server (the server's test harness: real port, real
 * database): its exit codes for pipelines (0 nothing to do or applied, 2 a dry run found changes,
 * 1 invalid document or failed call), what it prints, its errors for a bad token, URL or project,
 * standard input, and the program as installed from its `npm pack` tarball outside the workspace.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { addMember, flagsPath, freePort, newFlag, newProject, newUser, request, startServer, type TestProject, type TestServer, type TestUser } from '@guidon/server/dist/tests/harness.js';
import { onPostgres } from '@guidon/server/dist/tests/test-database.js';
import { run, type Ran } from './run-cli.js';

// The program talks HTTP only: what the server stores it in is not its concern (the server's own tests run on both).
const skip = onPostgres ? 'the command line does not depend on the database: checked in the SQLite pass' : false;

const here = dirname(fileURLToPath(import.meta.url));
const packageDir = resolve(here, '../..');
const bin = join(packageDir, 'dist', 'src', 'cli.js');

/** Runs the program as a pipeline would: a process, its environment, optionally standard input. */
function guidon(args: string[], env: Record<string, string>, input?: string, program = bin): Promise<Ran> {
  return run(process.execPath, [program, ...args], env, input);
}

describe('guidon, the command line', { skip }, () => {
  let server: TestServer;
  let user: TestUser;
  let project: TestProject;
  let env: Record<string, string>;
  let dir: string;

  before(async () => {
    server = await startServer();
    user = await newUser(server, 'cli');
    project = await newProject(server, user, 'Pipeline');
    await newFlag(server, user, project, { key: 'checkout', enabled: true, rollout_percentage: 25 });
    const token = await request(server, 'POST', '/api/tokens', { token: user.token, body: { name: 'ci', project_id: project.id } });
    env = { GUIDON_URL: server.url, GUIDON_TOKEN: token.body.token, GUIDON_PROJECT: project.id };
    dir = mkdtempSync(join(tmpdir(), 'guidon-cli-'));
  });
  after(async () => {
    await server?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  describe('guidon export and import', () => {
    test('export writes the document the API gives; a dry run of it finds nothing (0), a changed file is a drift (2), applying it is 0, then nothing is left (0)', async () => {
      const exported = await guidon(['export', '--project', project.id], env);
      assert.equal(exported.code, 0, exported.stderr);
      assert.equal(exported.stdout, (await request(server, 'GET', `/api/projects/${project.id}/export`, { token: user.token })).text);
      const file = join(dir, 'flags.yaml');
      assert.equal((await guidon(['export', '--format', 'yaml', '--out', file], env)).code, 0, 'GUIDON_PROJECT is the default project');
      assert.match(readFileSync(file, 'utf8'), /key: checkout/);

      const clean = await guidon(['import', file, '--dry-run'], env);
      assert.equal(clean.code, 0, clean.stderr);
      assert.match(clean.stdout, /^Nothing to do: \d+ unchanged\.$/m);

      writeFileSync(file, readFileSync(file, 'utf8').replace('rollout_percentage: 25', 'rollout_percentage: 60'));
      const drift = await guidon(['import', file, '--dry-run'], env);
      assert.equal(drift.code, 2, `a dry run that finds changes exits 2: ${drift.stderr}`);
      assert.match(drift.stdout, /^ACTION\s+RESOURCE\s+ENVIRONMENT\s+KEY\s+CHANGES$/m);
      assert.match(drift.stdout, /^update\s+flag\s+production\s+checkout\s+rollout_percentage$/m);
      assert.match(drift.stdout, /^Dry run, nothing changed: 0 to create, 1 to update, 0 to delete, \d+ unchanged\.$/m);
      const flags = await request(server, 'GET', flagsPath(project), { token: user.token });
      assert.equal(flags.body[0].rollout_percentage, 25, 'the dry run changed nothing');

      const applied = await guidon(['import', file], env);
      assert.equal(applied.code, 0, applied.stderr);
      assert.match(applied.stdout, /^Applied \(import [0-9a-f-]{36}\): 0 created, 1 updated, 0 deleted/m);
      assert.equal((await request(server, 'GET', flagsPath(project), { token: user.token })).body[0].rollout_percentage, 60);
      assert.equal((await guidon(['import', file, '--dry-run'], env)).code, 0, 'after the apply, no drift');
    });

    test('standard input, --json and --replace', async () => {
      const document = { guidon: 1, environments: [{ key: 'production', name: 'Production' }], flags: [{ key: 'fresh', name: 'Fresh', environments: { production: { enabled: true } } }] };
      const merge = await guidon(['import', '-', '--dry-run', '--json'], env, JSON.stringify(document));
      assert.equal(merge.code, 2, merge.stderr);
      const plan = JSON.parse(merge.stdout);
      assert.deepEqual([plan.mode, plan.dry_run, plan.create.map((item: { key: string }) => item.key), plan.delete], ['merge', true, ['fresh'], []]);
      const replace = JSON.parse((await guidon(['import', '-', '--dry-run', '--json', '--replace'], env, JSON.stringify(document))).stdout);
      assert.deepEqual(replace.delete.map((item: { key: string; environment: string }) => `${item.environment} ${item.key}`), ['production checkout']);
    });

    test('an environment that needs approvals: its changes become a change request, which the output names (exit 0)', async () => {
      const staging = `/api/projects/${project.id}/environments/${project.staging}`;
      assert.equal((await request(server, 'PUT', staging, { token: user.token, body: { approvals_required: 1 } })).status, 200);
      try {
        const document = { guidon: 1, environments: [{ key: 'staging', name: 'Staging', approvals_required: 1 }], flags: [{ key: 'reviewed', name: 'Reviewed', environments: { staging: { enabled: true } } }] };
        const dry = await guidon(['import', '-', '--dry-run'], env, JSON.stringify(document));
        assert.equal(dry.code, 2, dry.stderr);
        assert.match(dry.stdout, /^staging needs approval: applying makes its changes a change request\.$/m);
        const applied = await guidon(['import', '-'], env, JSON.stringify(document));
        assert.equal(applied.code, 0, applied.stderr);
        const id = /^staging needs approval: its changes await review in change request ([0-9a-f-]{36})\.$/m.exec(applied.stdout)?.[1];
        assert.ok(id, applied.stdout);
        const made = await request(server, 'GET', `/api/projects/${project.id}/change-requests/${id}`, { token: user.token });
        assert.deepEqual([made.body.status, made.body.changes.map((change: { op: string }) => change.op)], ['open', ['flag.create']]);
        assert.equal((await request(server, 'GET', flagsPath(project, project.staging), { token: user.token })).body.some((flag: { key: string }) => flag.key === 'reviewed'), false, 'not applied before review');
      } finally {
        await request(server, 'PUT', staging, { token: user.token, body: { approvals_required: 0 } });
      }
    });

    test('an invalid document exits 1 and prints each problem with its path; nothing changes', async () => {
      const before = (await request(server, 'GET', `/api/projects/${project.id}/export`, { token: user.token })).text;
      const document = { guidon: 1, environments: [{ key: 'production', name: 'Production' }], flags: [{ key: 'bad', name: 'Bad', environments: { production: { rollout_percentage: 150, rules: [{ rule_type: 'conditions', conditions: [{ attribute: 'v', operator: 'SEMVER_GT', values: ['2.4'] }] }] } } }] };
      const ran = await guidon(['import', '-'], env, JSON.stringify(document));
      assert.equal(ran.code, 1);
      assert.equal(ran.stdout, '');
      assert.match(ran.stderr, /^guidon: the document was refused \(400\): 2 problems, nothing changed$/m);
      assert.match(ran.stderr, /^ {2}flags\[0\]\.environments\.production\.rollout_percentage: must be <= 100$/m);
      assert.match(ran.stderr, /^ {2}flags\[0\]\.environments\.production\.rules\[0\]\.conditions\[0\] \(SEMVER_GT\): "2\.4" is not a version/m);
      assert.equal((await request(server, 'GET', `/api/projects/${project.id}/export`, { token: user.token })).text, before);
      const notYaml = await guidon(['import', '-'], env, 'flags: [');
      assert.equal(notYaml.code, 1);
      assert.match(notYaml.stderr, /YAML does not parse/);
    });
  });

  test('import-unleash: a dry run prints the plan and what was skipped (exit 2); applying it is 0', async () => {
    const production = {
      features: [{ name: 'new-onboarding', type: 'release' }, { name: 'office-banner', type: 'release' }],
      featureStrategies: [
        { name: 'flexibleRollout', featureName: 'new-onboarding', parameters: { rollout: '20', stickiness: 'default', groupId: 'new-onboarding' }, constraints: [], segments: [1] },
        { name: 'office-hours', featureName: 'office-banner', parameters: {}, constraints: [], segments: [] },
      ],
      featureEnvironments: [
        { featureName: 'new-onboarding', environment: 'production', enabled: true },
        { featureName: 'office-banner', environment: 'production', enabled: true },
      ],
      segments: [{ id: 1, name: 'Beta users' }],
    };
    const exportFile = join(dir, 'unleash-production.json');
    const segmentsFile = join(dir, 'unleash-segments.json');
    writeFileSync(exportFile, JSON.stringify(production));
    writeFileSync(segmentsFile, JSON.stringify({ segments: [{ id: 1, name: 'Beta users', constraints: [{ contextName: 'plan', operator: 'IN', values: ['beta'] }] }] }));
    const dry = await guidon(['import-unleash', exportFile, '--segments', segmentsFile, '--dry-run'], env);
    assert.equal(dry.code, 2, dry.stderr);
    assert.match(dry.stdout, /^create\s+segment\s+beta_users$/m);
    assert.match(dry.stdout, /^create\s+flag\s+production\s+new-onboarding$/m);
    assert.match(dry.stdout, /^Skipped \(1\): not imported, as it could not be mapped exactly:$/m);
    assert.match(dry.stdout, /^office-banner\s+production\s+the feature\s+strategy "office-hours"/m);
    const applied = await guidon(['import-unleash', exportFile, '--segments', segmentsFile], env);
    assert.equal(applied.code, 0, applied.stderr);
    assert.equal((await guidon(['import-unleash', exportFile, '--segments', segmentsFile, '--dry-run'], env)).code, 0, 'nothing left to do');
  });

  describe('guidon tells what is wrong', () => {
    test('a bad token, a URL with nothing there, a URL that is not Guidon, a missing setting, an unknown project or command: exit 1 and a sentence', async () => {
      const cases: [string[], Record<string, string>, RegExp][] = [
        [['export'], { ...env, GUIDON_TOKEN: 'gdn_not-a-real-token' }, /the token was refused \(401.*check GUIDON_TOKEN/],
        [['export'], { ...env, GUIDON_URL: `http://127.0.0.1:${await freePort()}` }, /cannot reach Guidon at http:\/\/127\.0\.0\.1:\d+ \(ECONNREFUSED\): check GUIDON_URL/],
        [['export'], { ...env, GUIDON_URL: 'ftp://example.com' }, /GUIDON_URL "ftp:\/\/example\.com" must start with http:\/\/ or https:\/\//],
        [['export'], { ...env, GUIDON_URL: 'not a url' }, /GUIDON_URL "not a url" is not a URL/],
        [['export'], { GUIDON_TOKEN: env.GUIDON_TOKEN!, GUIDON_PROJECT: project.id }, /GUIDON_URL is not set/],
        [['export'], { GUIDON_URL: server.url, GUIDON_PROJECT: project.id }, /GUIDON_TOKEN is not set/],
        [['export'], { GUIDON_URL: server.url, GUIDON_TOKEN: env.GUIDON_TOKEN! }, /no project: pass --project <id> or set GUIDON_PROJECT/],
        [['export', '--project', '00000000-0000-4000-8000-000000000000'], env, /not found \(404/],
        [['import', join(dir, 'missing.json')], env, /cannot read .*missing\.json: ENOENT/],
        [['export', '--format', 'xml'], env, /--format must be json or yaml/],
        [['export', '--colour'], env, /Unknown option '--colour'/],
        [['deploy'], env, /unknown command "deploy"/],
      ];
      for (const [args, environment, says] of cases) {
        const ran = await guidon(args, environment);
        assert.equal(ran.code, 1, `${args.join(' ')}: ${ran.stderr}`);
        assert.match(ran.stderr, says, args.join(' '));
        assert.doesNotMatch(ran.stderr, /\n\s+at /, 'no stack trace');
      }
      const viewer = await newUser(server, 'viewer');
      await addMember(server, user, project.id, viewer, 'viewer');
      const viewerToken = (await request(server, 'POST', '/api/tokens', { token: viewer.token, body: { name: 'read only', project_id: project.id } })).body.token;
      const refused = await guidon(['import', '-'], { ...env, GUIDON_TOKEN: viewerToken }, '{"guidon":1,"environments":[],"flags":[]}');
      assert.equal(refused.code, 1);
      assert.match(refused.stderr, /not allowed \(403.*editor's or an owner's token/);
    });

    test('--help on each command', async () => {
      for (const command of [[], ['export'], ['import'], ['import-unleash']]) {
        const ran = await guidon([...command, '--help'], {});
        assert.equal(ran.code, 0);
        assert.match(ran.stdout, command.length === 0 ? /^Usage:/m : new RegExp(`^guidon ${command[0]} `, 'm'));
        assert.match(ran.stdout, /--project/);
      }
    });
  });

  test('installed from its npm pack tarball outside the workspace, `guidon` runs', { timeout: 180_000 }, async () => {
    const run = promisify(execFile);
    const npmEnv = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.toLowerCase().startsWith('npm_')));
    const packDir = join(dir, 'pack');
    mkdirSync(packDir);
    const { stdout } = await run('npm', ['pack', '--json', '--pack-destination', packDir], { cwd: packageDir, env: npmEnv });
    const [packed] = JSON.parse(stdout) as { filename: string; files: { path: string }[] }[];
    assert.deepEqual(packed!.files.map((file) => file.path).filter((path) => !path.startsWith('dist/src/')).sort(), ['LICENSE', 'README.md', 'package.json']);
    const app = join(dir, 'app');
    mkdirSync(app);
    writeFileSync(join(app, 'package.json'), JSON.stringify({ name: 'guidon-cli-check', version: '1.0.0', private: true }));
    await run('npm', ['install', '--no-audit', '--no-fund', '--offline', join(packDir, packed!.filename)], { cwd: app, env: npmEnv });
    const installed = await run(join(app, 'node_modules', '.bin', 'guidon'), ['export'], { env: { ...npmEnv, ...env } });
    assert.match(installed.stdout, /"key": "checkout"/);
  });
});
