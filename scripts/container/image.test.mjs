/**
 * The container image, built from the repository's Dockerfile with Podman on a base made here
 * (scripts/container/base.mjs: no image registry is reachable), run for real (docs/deploy.md):
 *
 * - the image: non-root user, port 8080, volume /data, SIGTERM, a healthcheck, no DATABASE_URL set;
 *   no compiler and no dev dependency inside;
 * - on SQLite in a named volume: /health and /ready, the dashboard's page, the client packages at
 *   /downloads/, a flag created through the API still there in a new container on the same volume,
 *   a process that is not root, and SIGTERM: /ready answers 503 `stopping` first, then the process
 *   exits 0 within the 10 s that `podman stop` gives it before SIGKILL;
 * - on the machine's PostgreSQL (a database of its own, its URL given as a secret file) and a Redis
 *   of its own;
 * - compose.yaml and compose.postgres.yaml, as far as this machine allows (no image registry: the
 *   third-party images are not pulled): `docker-compose config` parses them, and their Guidon
 *   service builds this Dockerfile with the settings tested here.
 *
 * It runs once per `npm test` (scripts/test.mjs), on one Node line, with Podman run as this
 * machine allows: runc, cgroupfs, host network, explicit ulimits. It prints the image's size, the
 * build's time and the container's cold start to /ready (figures, not assertions).
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { createHash, randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync, chmodSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { parse as parseYaml } from 'yaml';
import { ensureBase } from './base.mjs';

const root = fileURLToPath(new URL('../..', import.meta.url));
const IMAGE = 'localhost/guidon-test:latest';
const ULIMITS = ['--ulimit', 'nofile=4096:4096', '--ulimit', 'nproc=4096:4096'];
/** How Podman runs on these machines (no systemd, no cgroup delegation). */
const PODMAN = ['podman', '--runtime', 'runc', '--cgroup-manager=cgroupfs'];
const postgresUrl = new URL(process.env.GUIDON_TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres');
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

function podman(args, options = {}) {
  const result = spawnSync(PODMAN[0], [...PODMAN.slice(1), ...args], { encoding: 'utf8', ...options });
  if (result.status !== 0 && !options.allowFailure) throw new Error(`podman ${args.join(' ')}: exit ${result.status}\n${result.stdout ?? ''}${result.stderr ?? ''}`);
  return result;
}

const missing = ['podman', 'mmdebstrap', 'runc'].filter((tool) => spawnSync('sh', ['-c', `command -v ${tool}`]).status !== 0);
if (missing.length > 0 && process.env.GUIDON_REQUIRE_SERVICES === '1') throw new Error(`${missing.join(', ')} missing and GUIDON_REQUIRE_SERVICES=1 (.ci/run installs them from Debian)`);
const skip = missing.length > 0 ? `needs ${missing.join(', ')} (apt-get install podman mmdebstrap runc)` : false;

/** A port below the kernel's ephemeral range (which clashes here) that nothing listens on now. */
async function freePort() {
  for (;;) {
    const port = 20000 + Math.floor(Math.random() * 12000);
    const free = await new Promise((resolve) => {
      const probe = createServer().once('error', () => resolve(false));
      probe.listen(port, '127.0.0.1', () => probe.close(() => resolve(true)));
    });
    if (free) return port;
  }
}

/** GET on a connection of its own: { status, body, text }, or { error } (the connection's error code). */
async function get(url, headers = {}) {
  try {
    const answer = await fetch(url, { headers: { connection: 'close', ...headers }, signal: AbortSignal.timeout(10_000) });
    const text = await answer.text();
    let body = null;
    try {
      body = JSON.parse(text);
    } catch {}
    return { status: answer.status, body, text, headers: answer.headers };
  } catch (error) {
    return { error: error.cause?.code ?? error.name };
  }
}

async function send(base, method, path, body, token) {
  const answer = await fetch(`${base}${path}`, {
    method,
    headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: answer.status, body: await answer.json() };
}

/**
 * Runs the image detached on a free port (another one if the port was taken meanwhile) and waits
 * for /ready: { name, url, coldStartMs } (from `podman run` to the first 200).
 */
async function runContainer(args, env = {}) {
  for (let attempt = 0; ; attempt++) {
    const port = await freePort();
    const name = `guidon-test-${randomUUID().slice(0, 8)}`;
    const envArgs = Object.entries({ PORT: String(port), ...env }).flatMap(([key, value]) => ['-e', `${key}=${value}`]);
    const started = performance.now();
    podman(['run', '-d', '--name', name, '--network', 'host', ...ULIMITS, ...envArgs, ...args, IMAGE]);
    const url = `http://127.0.0.1:${port}`;
    for (;;) {
      const ready = await get(`${url}/ready`);
      if (ready.status === 200) return { name, url, coldStartMs: Math.round(performance.now() - started) };
      const state = podman(['inspect', '--format', '{{.State.Status}}', name]).stdout.trim();
      if (state === 'exited') {
        const logs = podman(['logs', name], { allowFailure: true });
        podman(['rm', '-f', '-v', name], { allowFailure: true });
        if (/EADDRINUSE/.test(logs.stdout + logs.stderr) && attempt < 5) break; // taken meanwhile: another port
        throw new Error(`the container exited while starting:\n${logs.stdout}${logs.stderr}`);
      }
      if (performance.now() - started > 60_000) throw new Error(`not ready within 60 s:\n${podman(['logs', name], { allowFailure: true }).stderr}`);
      await sleep(50);
    }
  }
}

/** The host's view of the container's main process: { uid, rssKiB }. */
function mainProcess(name) {
  const pid = podman(['inspect', '--format', '{{.State.Pid}}', name]).stdout.trim();
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  return { uid: Number(/^Uid:\s+(\d+)/m.exec(status)[1]), rssKiB: Number(/^VmRSS:\s+(\d+)/m.exec(status)[1]) };
}

/** An account, a project and a flag through the API: what a person would make first. */
async function seed(base) {
  const email = `image-${randomUUID()}@example.com`;
  assert.equal((await send(base, 'POST', '/auth/register', { email, password: 'correct horse battery' })).status, 201);
  const { token } = (await send(base, 'POST', '/auth/login', { email, password: 'correct horse battery' })).body;
  const project = (await send(base, 'POST', '/api/projects', { name: 'Image' }, token)).body;
  const environments = (await send(base, 'GET', `/api/projects/${project.id}/environments`, undefined, token)).body;
  const production = environments.find((environment) => environment.key === 'production');
  const flagsPath = `/api/projects/${project.id}/environments/${production.id}/flags`;
  const flag = await send(base, 'POST', flagsPath, { key: 'from-the-image', name: 'From the image', enabled: true, rollout_percentage: 100 }, token);
  assert.equal(flag.status, 201, JSON.stringify(flag.body));
  return { token, project, flagsPath };
}

/** `podman stop` (the image's STOPSIGNAL, SIGKILL after 10 s) while /ready is polled: the outcomes in order, and the exit code. */
async function stopWatchingReady(container) {
  const outcomes = [];
  let done = false;
  const polling = (async () => {
    while (!done) {
      const ready = await get(`${container.url}/ready`);
      const outcome = ready.error ? 'connection failed' : `${ready.status} ${ready.body?.status}`;
      if (outcomes.at(-1) !== outcome) outcomes.push(outcome);
      if (ready.error) return;
    }
  })();
  await sleep(100); // the poller has seen the container ready
  const stopped = new Promise((resolve) => spawn(PODMAN[0], [...PODMAN.slice(1), 'stop', '--time', '10', container.name], { stdio: 'ignore' }).once('exit', resolve));
  await stopped;
  done = true;
  await polling;
  const exitCode = Number(podman(['inspect', '--format', '{{.State.ExitCode}}', container.name]).stdout.trim());
  return { outcomes, exitCode };
}

const hasCompose = spawnSync('sh', ['-c', 'command -v docker-compose']).status === 0;
if (!hasCompose && process.env.GUIDON_REQUIRE_SERVICES === '1') throw new Error('docker-compose missing and GUIDON_REQUIRE_SERVICES=1 (.ci/run installs it from Debian)');

/** A compose file as docker-compose reads it (its own validation, defaults filled in, paths made absolute). */
function composeConfig(file) {
  const result = spawnSync('docker-compose', ['-f', join(root, file), 'config'], { cwd: root, encoding: 'utf8' });
  assert.equal(result.status, 0, `docker-compose config ${file}:\n${result.stderr}`);
  return parseYaml(result.stdout);
}

describe('the compose files', { skip: hasCompose ? false : 'needs docker-compose (apt-get install docker-compose)' }, () => {
  test('compose.yaml: the image of this Dockerfile alone, on 8080, SQLite in a named volume at /data', () => {
    const { services, volumes } = composeConfig('compose.yaml');
    assert.deepEqual(Object.keys(services), ['guidon']);
    const guidon = services.guidon;
    assert.equal(guidon.build.context, root.replace(/\/$/, ''));
    assert.deepEqual(guidon.ports.map((port) => [port.published, port.target]), [[8080, 8080]]);
    assert.deepEqual(guidon.volumes, ['guidon-data:/data:rw']);
    assert.ok('guidon-data' in volumes);
    assert.ok(!('DATABASE_URL' in guidon.environment), 'SQLite at /data/guidon.db, as tested');
  });

  test('compose.postgres.yaml: two replicas on PostgreSQL (URL from a secret file) and Redis, behind one address that TRUST_PROXY names', () => {
    const { services, secrets } = composeConfig('compose.postgres.yaml');
    const guidon = services.guidon;
    assert.equal(guidon.build.context, root.replace(/\/$/, ''));
    assert.equal(guidon.deploy.replicas, 2);
    assert.equal(guidon.ports, undefined, 'reached through the proxy only');
    assert.equal(guidon.environment.DATABASE_URL, undefined);
    assert.equal(guidon.environment.DATABASE_URL_FILE, '/run/secrets/database_url');
    assert.deepEqual(guidon.secrets, [{ source: 'database_url' }]);
    assert.match(readFileSync(secrets.database_url.file, 'utf8'), /^postgres:\/\/guidon:[^@]+@postgres:5432\/guidon\n$/);
    assert.equal(readFileSync(secrets.database_url.file, 'utf8').split(':')[2].split('@')[0], readFileSync(secrets.postgres_password.file, 'utf8').trim(), 'the same password on both sides');
    assert.equal(guidon.environment.REDIS_URL, 'redis://redis:6379');
    assert.deepEqual(Object.keys(services).sort(), ['guidon', 'postgres', 'proxy', 'redis']);
    assert.equal(guidon.environment.TRUST_PROXY, services.proxy.networks.guidon.ipv4_address);
    assert.deepEqual(services.proxy.ports.map((port) => [port.published, port.target]), [[8080, 8080]]);
    const nginx = readFileSync(join(root, 'deploy/compose/nginx.conf'), 'utf8');
    assert.match(nginx, /server guidon:8080/);
    assert.match(nginx, /listen 8080;/);
  });
});

describe('the container image (Podman)', { skip, timeout: 40 * 60_000 }, () => {
  const containers = [];
  const volume = `guidon-test-${randomUUID().slice(0, 8)}`;

  before(async () => {
    let started = performance.now();
    const base = ensureBase({ podman: PODMAN });
    console.log(`base image ${base.tag}: ${base.made ? 'made' : 'already there'} in ${Math.round(performance.now() - started) / 1000} s`);
    started = performance.now();
    const build = ['build', '--isolation', 'chroot', '--format', 'docker', '--network', 'host', ...ULIMITS, '--build-arg', `NODE_IMAGE=${base.tag}`];
    podman([...build, '-t', IMAGE, root], { stdio: ['ignore', 'inherit', 'inherit'] });
    // The stages worth keeping for the next build carry a tag; the rest of earlier builds is pruned.
    for (const stage of ['runtime-deps', 'build']) podman([...build, '--target', stage, '-t', `localhost/guidon-test-stage:${stage}`, root], { stdio: 'ignore' });
    podman(['image', 'prune', '-f'], { stdio: 'ignore' });
    const size = Number(podman(['image', 'inspect', '--format', '{{.Size}}', IMAGE]).stdout.trim());
    const baseSize = Number(podman(['image', 'inspect', '--format', '{{.Size}}', base.tag]).stdout.trim());
    console.log(`image built in ${Math.round(performance.now() - started) / 1000} s: ${(size / 1e6).toFixed(0)} MB (base ${(baseSize / 1e6).toFixed(0)} MB)`);
    podman(['volume', 'create', volume]);
  });

  after(() => {
    for (const name of containers) podman(['rm', '-f', '-v', name], { allowFailure: true, stdio: 'ignore' });
    podman(['volume', 'rm', '-f', volume], { allowFailure: true, stdio: 'ignore' });
  });

  test('the image: non-root, 8080, /data, SIGTERM, a healthcheck, DATABASE_URL unset; no compiler, no dev dependency', () => {
    const [inspected] = JSON.parse(podman(['image', 'inspect', IMAGE]).stdout);
    const config = inspected.Config;
    assert.equal(config.User, '10001:10001');
    assert.deepEqual(Object.keys(config.ExposedPorts ?? {}), ['8080/tcp']);
    assert.deepEqual(Object.keys(config.Volumes ?? {}), ['/data']);
    assert.equal(config.StopSignal, 'SIGTERM');
    const healthcheck = inspected.Healthcheck; // kept by --format docker (OCI images have none)
    assert.ok(healthcheck?.Test?.join(' ').includes('/health'), `healthcheck: ${JSON.stringify(healthcheck)}`);
    assert.ok(!config.Env.some((entry) => /^DATABASE_URL=/.test(entry)), 'DATABASE_URL is not set: the *_FILE form stays usable');
    const inside = podman(['run', '--rm', '--network', 'host', ...ULIMITS, '--entrypoint', 'sh', IMAGE, '-c', 'for tool in gcc g++ cc c++ make python3; do command -v $tool; done; ls /app/node_modules; ls /app/node_modules/@types | sed s,^,@types/,'], { allowFailure: true }).stdout;
    const present = inside.split('\n');
    assert.deepEqual(present.filter((line) => line.startsWith('/')), [], 'no compiler in the image');
    for (const dev of ['typescript', 'vite', 'playwright-core', 'fast-check', 'oidc-provider', 'autocannon', 'publint', 'react', '@types/node', '@types/pg']) assert.ok(!present.includes(dev), `${dev} is a dev dependency (or the dashboard's, built in): not in the image`);
    assert.ok(present.includes('fastify') && present.includes('better-sqlite3'), 'the production dependencies are');
  });

  let token;
  let flagsPath;

  test('on SQLite in a named volume: probes, the dashboard, the client packages, a non-root process; SIGTERM: /ready 503 first, exit 0 within 10 s', async () => {
    const container = await runContainer(['-v', `${volume}:/data`]);
    containers.push(container.name);
    console.log(`cold start of the container to /ready: ${container.coldStartMs} ms`);
    assert.deepEqual((await get(`${container.url}/health`)).body, { status: 'ok' });
    assert.deepEqual((await get(`${container.url}/ready`)).body, { status: 'ready' });
    const page = await get(`${container.url}/`, { accept: 'text/html' });
    assert.equal(page.status, 200);
    assert.match(page.text, /<div id="root">/);
    const asset = /src="(\/assets\/[^"]+\.js)"/.exec(page.text)?.[1];
    assert.equal((await get(`${container.url}${asset}`)).status, 200, `the dashboard's script ${asset}`);

    const downloads = (await get(`${container.url}/downloads/`)).body.packages;
    const manifest = (dir) => JSON.parse(readFileSync(join(root, dir, 'package.json'), 'utf8'));
    const published = manifest('.').workspaces.map(manifest).filter((workspace) => !workspace.private).map((workspace) => workspace.name);
    assert.deepEqual(downloads.map((entry) => entry.name), published, 'every published package, as scripts/pack-clients.mjs packs them');
    for (const entry of downloads) {
      const tarball = Buffer.from(await (await fetch(`${container.url}/downloads/${entry.file}`)).arrayBuffer());
      assert.equal(`sha512-${createHash('sha512').update(tarball).digest('base64')}`, entry.integrity, entry.file);
    }

    ({ token, flagsPath } = await seed(container.url));
    const server = mainProcess(container.name);
    assert.notEqual(server.uid, 0, 'the server does not run as root');
    assert.equal(server.uid, 10001);
    await sleep(5000); // at rest: start-up's garbage has had time to be collected
    console.log(`memory at rest (VmRSS of the server, one account, one flag): ${Math.round(mainProcess(container.name).rssKiB / 1024)} MB`);

    const stop = await stopWatchingReady(container);
    console.log(`SIGTERM: /ready ${stop.outcomes.join(' → ')}; exit code ${stop.exitCode}`);
    assert.deepEqual(stop.outcomes, ['200 ready', '503 stopping', 'connection failed'], '/ready answers 503 from SIGTERM on, before the listener closes');
    assert.equal(stop.exitCode, 0, 'exited by itself on SIGTERM (podman stop sends SIGKILL after 10 s: exit 137)');
  });

  test('a new container on the same volume has the flag', async () => {
    const container = await runContainer(['-v', `${volume}:/data`]);
    containers.push(container.name);
    const flags = await send(container.url, 'GET', flagsPath, undefined, token); // the generated JWT secret is in the volume too
    assert.equal(flags.status, 200);
    assert.deepEqual(flags.body.map((flag) => flag.key), ['from-the-image']);
    podman(['stop', '--time', '10', container.name], { stdio: 'ignore' });
  });

  test("on the machine's PostgreSQL (DATABASE_URL_FILE, a secret file) and a Redis of its own", async () => {
    const database = `guidon_image_${randomUUID().replace(/-/g, '').slice(0, 12)}`;
    const admin = new pg.Client({ connectionString: postgresUrl.href });
    await admin.connect();
    await admin.query(`CREATE DATABASE ${database}`);
    const redisPort = await freePort();
    const redis = spawn('redis-server', ['--port', String(redisPort), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
    const secrets = mkdtempSync(join(tmpdir(), 'guidon-image-secrets-'));
    try {
      const url = new URL(postgresUrl.href);
      url.pathname = `/${database}`;
      writeFileSync(join(secrets, 'database_url'), `${url.href}\n`);
      chmodSync(secrets, 0o755);
      chmodSync(join(secrets, 'database_url'), 0o644); // readable by the image's user, as a mounted secret is
      const container = await runContainer(['-v', `${secrets}:/run/secrets:ro`], { DATABASE_URL_FILE: '/run/secrets/database_url', REDIS_URL: `redis://127.0.0.1:${redisPort}` });
      containers.push(container.name);
      const seeded = await seed(container.url);
      const flags = await send(container.url, 'GET', seeded.flagsPath, undefined, seeded.token);
      assert.deepEqual(flags.body.map((flag) => flag.key), ['from-the-image']);
      const stored = new pg.Client({ connectionString: url.href });
      await stored.connect();
      const flagRows = (await stored.query(`SELECT key FROM flags`)).rows;
      await stored.end();
      assert.deepEqual(flagRows.map((row) => row.key), ['from-the-image'], 'the flag is in this PostgreSQL database');
      const keys = spawnSync('redis-cli', ['-p', String(redisPort), '--scan'], { encoding: 'utf8' }).stdout.trim().split('\n').filter(Boolean);
      assert.ok(keys.length > 0, 'the rate limits (register, login) counted in this Redis');
      const stop = await stopWatchingReady(container);
      assert.equal(stop.exitCode, 0);
    } finally {
      redis.kill('SIGTERM');
      rmSync(secrets, { recursive: true, force: true });
      await admin.query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`);
      await admin.end();
    }
  });
});
