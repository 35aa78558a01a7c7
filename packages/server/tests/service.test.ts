import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import { createConnection } from 'node:net';
import { availableParallelism, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { PassThrough } from 'node:stream';
import { buildApp } from '../src/app.js';
import { loadConfig, ConfigError } from '../src/config.js';
import { openDatabase } from '../src/db/database.js';
import { compileDeferred } from '../src/http/compilers.js';
import { sql } from 'kysely';
import { createTestDatabase, onPostgres } from './test-database.js';
import { evaluate, eventually, freePort, newFlag, newProject, newUser, request, startServer, type TestServer } from './harness.js';

const mainJs = join(dirname(fileURLToPath(import.meta.url)), '..', 'src', 'main.js');

describe('configuration', () => {
  test('defaults (the README, Configuration)', () => {
    const config = loadConfig({});
    assert.equal(config.port, 8080);
    assert.equal(config.host, '0.0.0.0');
    assert.deepEqual(config.database, { kind: 'sqlite', path: './data/guidon.db' });
    assert.equal(config.publicUrl, 'http://localhost:8080');
    assert.deepEqual(config.rateLimits, { evaluatePerMinute: 200, authPerMinute: 60, eventsPerMinute: 600 });
    assert.equal(config.evaluationRetentionDays, 30);
    assert.equal(config.jwtSecret, null);
    assert.deepEqual(config.trustProxy, ['loopback'], 'private ranges must be named (docs/security.md)');
    assert.equal(config.smtpUrl, null);
    assert.equal(config.redisUrl, null);
    assert.deepEqual(config.corsOrigins, []);
    assert.equal(config.databasePoolSize, 10);
    assert.equal(config.workers, 1);
    assert.ok(Object.isFrozen(config));
  });

  test('reads every variable', () => {
    const config = loadConfig({
      PORT: '9000',
      HOST: '127.0.0.1',
      DATABASE_URL: 'postgres://postgres@127.0.0.1:5432/guidon',
      REDIS_URL: 'redis://127.0.0.1:6379',
      JWT_SECRET: 's3cret-s3cret-s3cret-s3cret-s3cret',
      SMTP_URL: 'smtp://127.0.0.1:2525',
      MAIL_FROM: 'flags@example.com',
      PUBLIC_URL: 'https://flags.example.com/',
      TRUST_PROXY: '10.0.0.1, 10.0.0.2',
      RATE_LIMIT_EVALUATE: '0',
      RATE_LIMIT_AUTH: '5',
      LOG_LEVEL: 'debug',
      EVALUATION_RETENTION_DAYS: '7',
      CORS_ORIGINS: 'https://a.example.com, https://b.example.com',
      DATABASE_POOL_SIZE: '25',
      WORKERS: '4',
    });
    assert.equal(config.databasePoolSize, 25);
    assert.equal(config.workers, 4);
    assert.equal(config.port, 9000);
    assert.equal(config.host, '127.0.0.1');
    assert.deepEqual(config.database, { kind: 'postgres', url: 'postgres://postgres@127.0.0.1:5432/guidon' });
    assert.equal(config.redisUrl, 'redis://127.0.0.1:6379');
    assert.equal(config.jwtSecret, 's3cret-s3cret-s3cret-s3cret-s3cret');
    assert.equal(config.smtpUrl, 'smtp://127.0.0.1:2525');
    assert.equal(config.mailFrom, 'flags@example.com');
    assert.equal(config.publicUrl, 'https://flags.example.com');
    assert.deepEqual(config.trustProxy, ['10.0.0.1', '10.0.0.2']);
    assert.deepEqual(config.rateLimits, { evaluatePerMinute: 0, authPerMinute: 5, eventsPerMinute: 600 });
    assert.equal(config.logLevel, 'debug');
    assert.equal(config.evaluationRetentionDays, 7);
    assert.deepEqual(config.corsOrigins, ['https://a.example.com', 'https://b.example.com']);
    assert.equal(loadConfig({ WORKERS: 'auto' }).workers, availableParallelism());
    assert.deepEqual(loadConfig({ DATABASE_URL: 'sqlite:/var/lib/guidon/g.db' }).database, { kind: 'sqlite', path: '/var/lib/guidon/g.db' });
  });

  test('rejects values it cannot use, naming the variable', () => {
    assert.throws(() => loadConfig({ PORT: 'eighty' }), (error: Error) => error instanceof ConfigError && /PORT/.test(error.message));
    assert.throws(() => loadConfig({ PORT: '70000' }), ConfigError);
    assert.throws(() => loadConfig({ RATE_LIMIT_EVALUATE: '-1' }), /RATE_LIMIT_EVALUATE/);
    assert.throws(() => loadConfig({ DATABASE_URL: 'mysql://x' }), /DATABASE_URL/);
    assert.throws(() => loadConfig({ WORKERS: '0' }), /WORKERS/);
    assert.throws(() => loadConfig({ DATABASE_POOL_SIZE: '0' }), /DATABASE_POOL_SIZE/);
    for (const url of ['flags.example.com', 'ftp://flags.example.com', '/reset']) assert.throws(() => loadConfig({ PUBLIC_URL: url }), /PUBLIC_URL/, url);
    assert.equal(loadConfig({ PUBLIC_URL: 'https://flags.example.com/guidon/' }).publicUrl, 'https://flags.example.com/guidon');
  });

  test('secrets from files: each secret setting as <NAME>_FILE, its content trimmed; both given is an error naming both', () => {
    const dir = mkdtempSync(join(tmpdir(), 'guidon-secrets-'));
    try {
      const file = (name: string, content: string) => {
        writeFileSync(join(dir, name), content);
        return join(dir, name);
      };
      const config = loadConfig({
        JWT_SECRET_FILE: file('jwt', 'from-a-file-from-a-file-from-a-file\n'),
        DATABASE_URL_FILE: file('db', '  postgres://guidon:pw@db:5432/guidon\n'),
        REDIS_URL_FILE: file('redis', 'redis://redis:6379\n'),
        SMTP_URL_FILE: file('smtp', 'smtp://user:pw@mail:587'),
        OIDC_ISSUER: 'https://sso.example.com',
        OIDC_CLIENT_ID: 'guidon',
        OIDC_CLIENT_SECRET_FILE: file('oidc', 'client-secret\r\n'),
      });
      assert.equal(config.jwtSecret, 'from-a-file-from-a-file-from-a-file');
      assert.deepEqual(config.database, { kind: 'postgres', url: 'postgres://guidon:pw@db:5432/guidon' });
      assert.equal(config.redisUrl, 'redis://redis:6379');
      assert.equal(config.smtpUrl, 'smtp://user:pw@mail:587');
      assert.equal(config.oidc?.clientSecret, 'client-secret');
      // A value read from a file is checked like one given directly.
      assert.throws(() => loadConfig({ JWT_SECRET_FILE: file('short', 'short') }), /JWT_SECRET must be at least 32 bytes/);
      for (const name of ['JWT_SECRET', 'DATABASE_URL', 'REDIS_URL', 'SMTP_URL', 'OIDC_CLIENT_SECRET']) {
        assert.throws(() => loadConfig({ [name]: 'x', [`${name}_FILE`]: file('any', 'y') }), (error: Error) => error instanceof ConfigError && error.message === `${name} and ${name}_FILE are both set: give one of them`, name);
      }
      assert.throws(() => loadConfig({ SMTP_URL_FILE: join(dir, 'missing') }), (error: Error) => error instanceof ConfigError && /SMTP_URL_FILE: cannot read .*missing \(ENOENT\)/.test(error.message));
      assert.throws(() => loadConfig({ REDIS_URL_FILE: file('empty', ' \n') }), /REDIS_URL_FILE: .* is empty/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('storage and secrets', () => {
  test('SQLite runs in WAL mode with synchronous=FULL, foreign keys on and a busy timeout', { skip: onPostgres ? 'checks SQLite pragmas; this pass runs on PostgreSQL' : false }, async () => {
    const server = await startServer();
    try {
      const pragma = async (name: string) => Object.values((await sql.raw(`pragma ${name}`).execute(server.database.db)).rows[0] as object)[0];
      assert.equal(await pragma('journal_mode'), 'wal');
      assert.equal(await pragma('synchronous'), 2); // FULL
      assert.equal(await pragma('foreign_keys'), 1);
      assert.equal(await pragma('busy_timeout'), 5000);
    } finally {
      await server.close();
    }
  });

  test('passwords are stored as argon2id hashes; the generated JWT secret is kept, so tokens survive a restart', async () => {
    const database = await createTestDatabase();
    const first = await startServer({}, { database });
    const user = await newUser(first);
    const { password_hash } = await first.database.db.selectFrom('users').select('password_hash').where('id', '=', user.id).executeTakeFirstOrThrow();
    assert.match(password_hash, /^\$argon2id\$/);
    assert.ok(!password_hash.includes(user.password));
    await first.close();
    const second = await startServer({}, { database });
    try {
      assert.equal((await request(second, 'GET', '/api/me', { token: user.token })).status, 200);
    } finally {
      await second.close();
      await database.drop();
    }
  });
});

describe('service endpoints', () => {
  let server: TestServer;
  before(async () => {
    server = await startServer({ CORS_ORIGINS: 'https://dashboard.example.com' });
  });
  after(() => server.close());

  test('GET /health answers {"status":"ok"} while the database answers', async () => {
    const answer = await request(server, 'GET', '/health');
    assert.equal(answer.status, 200);
    assert.equal(answer.text, '{"status":"ok"}');
  });

  test('GET /ready: 503 "starting" until the server listens, then 200 "ready" while the database answers', async () => {
    assert.deepEqual(await request(server, 'GET', '/ready').then(({ status, body }) => ({ status, body })), { status: 200, body: { status: 'ready' } });
    // Built but not listening yet (what a process is before its first connection): starting.
    const app = await buildApp(server.config, server.database, { logStream: new PassThrough(), changeNotifications: false });
    try {
      const early = await app.inject({ method: 'GET', url: '/ready' });
      assert.deepEqual({ status: early.statusCode, body: early.json() }, { status: 503, body: { status: 'starting' } });
    } finally {
      await app.close();
    }
  });

  test('the OpenAPI document lists every endpoint, generated from the route schemas', async () => {
    const answer = await request(server, 'GET', '/docs/json');
    assert.equal(answer.status, 200);
    assert.match(answer.body.openapi, /^3\./);
    const paths = answer.body.paths as Record<string, Record<string, unknown>>;
    const expected: Array<[string, string]> = [
      ['post', '/auth/register'], ['post', '/auth/login'], ['post', '/auth/forgot-password'], ['post', '/auth/reset-password'],
      ['get', '/api/me'],
      ['post', '/api/projects'], ['get', '/api/projects'], ['get', '/api/projects/{project_id}'], ['put', '/api/projects/{project_id}'],
      ['delete', '/api/projects/{project_id}'], ['post', '/api/projects/{project_id}/regenerate-key'],
      ['post', '/api/projects/{project_id}/environments'], ['get', '/api/projects/{project_id}/environments/{env_id}'],
      ['put', '/api/projects/{project_id}/environments/{env_id}'], ['delete', '/api/projects/{project_id}/environments/{env_id}'],
      ['post', '/api/projects/{project_id}/environments/{env_id}/flags'],
      ['post', '/api/projects/{project_id}/environments/{env_id}/flags/{flag_id}/toggle'],
      ['post', '/api/projects/{project_id}/environments/{env_id}/flags/{flag_id}/rules'],
      ['put', '/api/projects/{project_id}/environments/{env_id}/flags/{flag_id}/rules/{rule_id}'],
      ['post', '/api/projects/{project_id}/segments'], ['put', '/api/projects/{project_id}/segments/{segment_id}'],
      ['post', '/sdk/v1/evaluate'], ['get', '/health'],
    ];
    for (const [method, path] of expected) assert.ok(paths[path]?.[method], `${method.toUpperCase()} ${path} is documented`);
    const flagSchema = answer.body.components.schemas.Flag;
    assert.deepEqual(Object.keys(flagSchema.properties).sort(), ['bucketing_key', 'created_at', 'description', 'enabled', 'environment_id', 'everyone_else', 'id', 'key', 'name', 'off_variant', 'prerequisites', 'project_id', 'rollout_percentage', 'updated_at', 'variants']);
    // The errors any route can give are on every documented route, in the route's own error shape (documentCommonErrors).
    const errorSchema = (path: string, method: string, status: number) => (paths[path]?.[method] as any)?.responses?.[status]?.content?.['application/json']?.schema;
    for (const status of [413, 500, 503]) assert.equal(errorSchema('/api/projects', 'post', status)?.$ref, '#/components/schemas/Error', `POST /api/projects documents ${status}`);
    for (const status of [500, 503]) assert.equal(errorSchema('/auth/login', 'post', status)?.$ref, '#/components/schemas/Error', `POST /auth/login documents ${status}`);
    for (const status of [500, 503]) assert.equal(errorSchema('/api/projects', 'get', status)?.$ref, '#/components/schemas/Error', `GET /api/projects documents ${status}`);
    assert.equal(errorSchema('/api/projects', 'get', 413), undefined, 'no body, no 413');
    assert.deepEqual(errorSchema('/ofrep/v1/evaluate/flags', 'post', 503)?.required, ['errorCode', 'errorDetails'], 'OFREP keeps its own error shape');
    assert.deepEqual(errorSchema('/health', 'get', 503)?.required, ['status'], "a route's own 503 stays");
    const ui = await request(server, 'GET', '/docs/');
    assert.equal(ui.status, 200);
    assert.match(ui.text, /swagger/i);
  });

  test("every route's validators and serializers compile (they are compiled when first used, so a start does not show it)", () => {
    assert.ok(compileDeferred() > 0, 'routes this file has not called are compiled here');
    assert.equal(compileDeferred(), 0, 'each once');
  });

  test('CORS_ORIGINS: allowed origins get CORS headers, others do not', async () => {
    const allowed = await request(server, 'GET', '/health', { headers: { origin: 'https://dashboard.example.com' } });
    assert.equal(allowed.headers.get('access-control-allow-origin'), 'https://dashboard.example.com');
    const other = await request(server, 'GET', '/health', { headers: { origin: 'https://evil.example.com' } });
    assert.equal(other.headers.get('access-control-allow-origin'), null);
  });

  test('each answer carries a request id, taken from X-Request-Id when the caller sends one', async () => {
    const given = await request(server, 'GET', '/health', { headers: { 'x-request-id': 'trace-123' } });
    assert.equal(given.headers.get('x-request-id'), 'trace-123');
    const generated = await request(server, 'GET', '/health');
    assert.match(generated.headers.get('x-request-id') ?? '', /^[0-9a-f-]{36}$/);
    for (const unfit of ['x'.repeat(129), 'has spaces', '<script>']) {
      const replaced = await request(server, 'GET', '/health', { headers: { 'x-request-id': unfit } });
      assert.match(replaced.headers.get('x-request-id') ?? '', /^[0-9a-f-]{36}$/, unfit);
    }
  });
});

/** Starts dist/src/main.js as `npm start` would and waits for /health. */
async function startProcess(env: Record<string, string>): Promise<{ child: ChildProcess; url: string; output: () => string; exited: Promise<number | null> }> {
  const port = await freePort();
  const child = spawn(process.execPath, [mainJs], {
    env: { ...process.env, PORT: String(port), HOST: '127.0.0.1', LOG_LEVEL: 'warn', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout!.on('data', (chunk) => (output += chunk));
  child.stderr!.on('data', (chunk) => (output += chunk));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 20_000;
  for (;;) {
    const health = await request({ url }, 'GET', '/health').catch(() => null);
    if (health?.status === 200) break;
    if (Date.now() > deadline || child.exitCode !== null) throw new Error(`server did not start:\n${output}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return { child, url, output: () => output, exited };
}

/** One request on a connection of its own, so that node:cluster hands it to the next worker. */
function freshConnection(url: string, path: string, headers: Record<string, string>, body: unknown): Promise<{ status: number; body: any }> {
  return new Promise((resolve, reject) => {
    const target = new URL(path, url);
    const req = http.request(target, { method: 'POST', agent: false, headers: { 'content-type': 'application/json', ...headers } }, (res) => {
      let text = '';
      res.on('data', (chunk) => (text += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(text) }));
    });
    req.on('error', reject);
    // A request that never gets its answer fails the test instead of holding the suite.
    req.setTimeout(15_000, () => req.destroy(new Error(`no answer to ${path} within 15 s`)));
    req.end(JSON.stringify(body));
  });
}

describe('WORKERS=2 (node:cluster)', () => {
  test('both workers serve a change at once, share the rate limit, and stop gracefully with their history written', { timeout: 180_000 }, async () => {
    const testDatabase = await createTestDatabase();
    const server = await startProcess({ WORKERS: '2', DATABASE_URL: testDatabase.url, RATE_LIMIT_EVALUATE: '40', LOG_LEVEL: 'info' });
    // /health answers once the first worker listens; under load the second one may take seconds more.
    const listeningPids = () => new Set(server.output().split('\n').filter((line) => line.includes('Server listening')).map((line) => JSON.parse(line).pid));
    try {
      await eventually(() => listeningPids().size === 2, 'the second worker to listen', 30_000);
      const user = await newUser(server, 'user', { verified: false }); // its own project: no mailbox needed
      const project = await newProject(server, user);
      const flag = await newFlag(server, user, project, { key: 'clustered', enabled: false });
      const evaluateFresh = () => freshConnection(server.url, '/sdk/v1/evaluate', { 'x-sdk-key': project.sdk_key }, { environment: 'production', context: { user_id: 'c1' } });
      for (let i = 0; i < 4; i++) assert.equal((await evaluateFresh()).body.flags.clustered.enabled, false); // compiled in both workers

      const toggled = await request(server, 'POST', `/api/projects/${project.id}/environments/${project.production}/flags/${flag.id}/toggle`, { token: user.token });
      assert.equal(toggled.status, 200);
      const deadline = Date.now() + 1000;
      let fresh = 0;
      while (fresh < 6) {
        const answer = await evaluateFresh();
        fresh = answer.body.flags.clustered.enabled === true ? fresh + 1 : 0;
        if (fresh < 6 && Date.now() > deadline) throw new Error('a worker still serves the old value after 1 s');
      }

      // 4 + at least 6 evaluations so far; the budget of 40 per minute is shared by both workers.
      let statuses: number[] = [];
      for (let i = 0; i < 40; i++) statuses.push((await evaluateFresh()).status);
      assert.ok(statuses.includes(429), 'the shared budget ran out');
      const allowed = statuses.filter((status) => status === 200).length;
      assert.ok(allowed <= 30, `${allowed} allowed after at least 10 earlier requests`);

      assert.equal(listeningPids().size, 2, 'two worker processes listen');

      server.child.kill('SIGTERM');
      assert.equal(await server.exited, 0, server.output());
      const database = await openDatabase(testDatabase.config, { migrate: false });
      const { counted } = await database.db.selectFrom('evaluation_counts').select((eb) => eb.fn.sum<number>('disabled_count').as('counted')).executeTakeFirstOrThrow();
      await database.close();
      assert.ok(Number(counted) >= 4, `the workers flushed their history on the way out (${counted})\n${server.output()}`);
    } finally {
      server.child.kill('SIGKILL');
      await testDatabase.drop();
    }
  });
});

describe('stopping', () => {
  // A connection that has sent nothing is not idle to Node, so server.close() waited for it until
  // the headers timeout (about a minute). undici opens one after a stream it was reading is aborted
  // (the SDK's close()), and a stop then hung: 68 s in a test. The test's timeout is that failure.
  test('a connection that has sent nothing does not hold the close', { timeout: 20_000 }, async () => {
    const server = await startServer();
    const silent = createConnection({ host: '127.0.0.1', port: Number(new URL(server.url).port) });
    await new Promise((resolve, reject) => silent.once('connect', resolve).once('error', reject));
    const cut = new Promise((resolve) => silent.once('close', resolve));
    silent.on('error', () => undefined); // cut from the other side
    await server.close();
    await cut;
  });
});

describe('the process (npm start)', () => {
  // compose.postgres.yaml starts two replicas at once on a fresh database: migrations must run once.
  test('two processes started together on one fresh database migrate it once, and both serve', { timeout: 120_000 }, async () => {
    const testDatabase = await createTestDatabase();
    const servers: Awaited<ReturnType<typeof startProcess>>[] = [];
    try {
      const starting = [startProcess({ DATABASE_URL: testDatabase.url }), startProcess({ DATABASE_URL: testDatabase.url })];
      for (const started of await Promise.allSettled(starting)) if (started.status === 'fulfilled') servers.push(started.value);
      for (const started of await Promise.allSettled(starting)) if (started.status === 'rejected') throw started.reason;
      for (const server of servers) assert.deepEqual((await request(server, 'GET', '/ready')).body, { status: 'ready' }, server.output());
      const database = await openDatabase(testDatabase.config, { migrate: false });
      const applied = await sql<{ name: string }>`select name from kysely_migration order by name`.execute(database.db);
      await database.close();
      const names = applied.rows.map((row) => row.name);
      assert.ok(names.length > 0);
      assert.deepEqual(names, [...new Set(names)], 'each migration recorded once');
    } finally {
      for (const server of servers) server.child.kill('SIGKILL');
      await testDatabase.drop();
    }
  });

  test('a secret given both directly and as a file stops the start with an error naming both', () => {
    const started = spawnSync(process.execPath, [mainJs], { env: { PATH: process.env.PATH ?? '', JWT_SECRET: 'x'.repeat(40), JWT_SECRET_FILE: '/dev/null', PORT: '0' }, encoding: 'utf8', timeout: 30_000 });
    assert.equal(started.status, 1, started.stdout + started.stderr);
    assert.match(started.stderr, /^Configuration error: JWT_SECRET and JWT_SECRET_FILE are both set: give one of them$/m);
  });

  test('honours PORT, HOST and DATABASE_URL, and on SIGTERM finishes requests and flushes history before exiting', async () => {
    const testDatabase = await createTestDatabase();
    // On SQLite, a folder that does not exist yet is created.
    const databaseUrl = onPostgres ? testDatabase.url : testDatabase.url.replace(/guidon\.db$/, 'nested/guidon.db');
    const port = await freePort();
    const child = spawn(process.execPath, [mainJs], {
      env: { ...process.env, PORT: String(port), HOST: '127.0.0.1', DATABASE_URL: databaseUrl, RATE_LIMIT_EVALUATE: '0', LOG_LEVEL: 'warn' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (chunk) => (output += chunk));
    child.stderr.on('data', (chunk) => (output += chunk));
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    try {
      const server = { url: `http://127.0.0.1:${port}` };
      const deadline = Date.now() + 20_000;
      for (;;) {
        const health = await request(server, 'GET', '/health').catch(() => null);
        if (health?.status === 200) break;
        if (Date.now() > deadline) throw new Error(`server did not start:\n${output}`);
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      const user = await newUser(server, 'user', { verified: false }); // its own project: no mailbox needed
      const project = await newProject(server, user);
      await newFlag(server, user, project, { key: 'shutdown', enabled: true });
      for (let i = 0; i < 25; i++) assert.equal((await evaluate(server, project.sdk_key, 'production', { user_id: `u${i}` })).status, 200);

      child.kill('SIGTERM'); // well within the 1 s flush interval: rows are still buffered
      assert.equal(await exited, 0, output);

      // 25 evaluate requests of one flag: 25 history rows, and 25 in the hourly counts.
      const database = await openDatabase(loadConfig({ DATABASE_URL: databaseUrl }).database, { migrate: false });
      const { rows } = await database.db.selectFrom('evaluations').select((eb) => eb.fn.countAll<number>().as('rows')).executeTakeFirstOrThrow();
      const { counted } = await database.db.selectFrom('evaluation_counts').select((eb) => eb.fn.sum<number>('enabled_count').as('counted')).executeTakeFirstOrThrow();
      await database.close();
      assert.equal(Number(rows), 25);
      assert.equal(Number(counted), 25);
    } finally {
      child.kill('SIGKILL');
      await testDatabase.drop();
    }
  });
});
