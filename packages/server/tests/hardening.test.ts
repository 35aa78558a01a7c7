/**
 * What must hold under races, abuse and a long history. Each test here fails without
 * the change it names. Runs on SQLite and, in the PostgreSQL pass, on PostgreSQL.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import BetterSqlite3 from 'better-sqlite3';
import pg from 'pg';
import pino from 'pino';
import { Counter, Histogram, Registry } from 'prom-client';
import { sql } from 'kysely';
import { createRateLimits, MAX_KEYS_IN_MEMORY } from '../src/rate-limits.js';
import { LogThrottle } from '../src/log-throttle.js';
import { createRedis } from '../src/redis.js';
import { openDatabase } from '../src/db/database.js';
import { HistoryStore } from '../src/modules/history/history.store.js';
import { insertEvaluations } from '../src/modules/history/history.sql.js';
import { HistoryRecorder } from '../src/modules/history/history.recorder.js';
import { packUsers } from '../src/modules/history/history.protocol.js';
import { storeResetToken } from '../src/modules/accounts/accounts.repository.js';
import { createMetrics } from '../src/modules/metrics/metrics.js';
import { evaluate, eventually, flagsPath, freePort, newFlag, newProject, newUser, request, startServer, type TestServer, type TestUser } from './harness.js';
import { createTestDatabase, onPostgres, type TestDatabase } from './test-database.js';

const silent = pino({ level: process.env.TEST_LOG ?? 'silent' });
const newKey = () => `sdk_${randomBytes(24).toString('base64url')}`;

describe('a rotated-out SDK key on another instance', () => {
  let database: TestDatabase;
  let a: TestServer;
  let b: TestServer;
  let user: TestUser;
  before(async () => {
    database = await createTestDatabase();
    a = await startServer({}, { database, revisionCheckIntervalMs: 3_600_000 });
    // B checks revisions often; on SQLite (one process each) it has no notifications at all.
    b = await startServer({}, { database, revisionCheckIntervalMs: 100 });
    user = await newUser(a);
  });
  after(async () => {
    await a?.close();
    await b?.close();
    await database?.drop();
  });

  test('B compiled the project under the old and the new key: the revision check drops both', async () => {
    const project = await newProject(a, user);
    await newFlag(a, user, project, { key: 'frozen', enabled: false });
    assert.equal((await evaluate(b, project.sdk_key, 'production')).status, 200); // B compiles under K1
    // A regenerates the key; as on A, the key and the revision are written, but B's request with
    // the new key arrives before its revision check sees the bump: written here in that order.
    const k2 = newKey();
    await a.database.db.updateTable('projects').set({ sdk_key: k2 }).where('id', '=', project.id).execute();
    assert.equal((await evaluate(b, k2, 'production')).status, 200); // B now holds K1 and K2
    await a.database.db.updateTable('projects').set((eb) => ({ revision: eb('revision', '+', 1) })).where('id', '=', project.id).execute();
    await eventually(async () => (await evaluate(b, project.sdk_key, 'production')).status === 401, 'the old key refused on B', 5000);
    assert.equal((await evaluate(b, k2, 'production')).status, 200);
  });

  test('with notifications (PostgreSQL LISTEN/NOTIFY), a change drops every entry of the project', { skip: onPostgres ? false : 'a lone SQLite process has no notifications (the test above covers it)' }, async () => {
    const c = await startServer({}, { database, revisionCheckIntervalMs: 3_600_000 }); // notifications only
    try {
      const project = await newProject(a, user);
      const flag = await newFlag(a, user, project, { key: 'frozen', enabled: false });
      assert.equal((await evaluate(c, project.sdk_key, 'production')).status, 200);
      const k2 = newKey(); // the rotation whose notification C has not had yet
      await a.database.db.updateTable('projects').set({ sdk_key: k2 }).where('id', '=', project.id).execute();
      assert.equal((await evaluate(c, k2, 'production')).status, 200);
      await request(a, 'POST', `${flagsPath(project)}/${flag.id}/toggle`, { token: user.token }); // notifies C
      await eventually(async () => (await evaluate(c, k2, 'production')).body.flags?.frozen?.enabled === true, 'the toggle on C', 5000);
      assert.equal((await evaluate(c, project.sdk_key, 'production')).status, 401, 'the rotated-out key is refused');
    } finally {
      await c.close();
    }
  });
});

const hasRedisServer = spawnSync('redis-server', ['--version']).status === 0;

describe('Redis down when the instance starts', { skip: hasRedisServer ? false : 'redis-server is not installed' }, () => {
  test('the subscription is retried until it succeeds: changes then reach the other instance', async () => {
    const database = await createTestDatabase();
    const port = await freePort();
    const env = { REDIS_URL: `redis://127.0.0.1:${port}` };
    // A's sign-up and login limits count in Redis: while it is down they let requests through, and say so.
    const a = await startServer({ ...env, RATE_LIMIT_AUTH: '100' }, { database, revisionCheckIntervalMs: 3_600_000 });
    const b = await startServer(env, { database, revisionCheckIntervalMs: 3_600_000 });
    let redis: ChildProcess | undefined;
    try {
      const user = await newUser(a);
      const project = await newProject(a, user);
      const flag = await newFlag(a, user, project, { key: 'late', enabled: false });
      assert.equal((await evaluate(b, project.sdk_key, 'production')).body.flags.late?.enabled, false);
      await new Promise((resolve) => setTimeout(resolve, 1500)); // B's first subscription attempt has failed by now
      redis = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
      // Both instances end up subscribed (without the retry, neither ever is: the first SUBSCRIBE failed).
      const subscribers = () => Number(spawnSync('redis-cli', ['-p', String(port), 'pubsub', 'numsub', 'guidon_changes']).stdout?.toString().trim().split('\n')[1]);
      await eventually(() => subscribers() === 2, 'two subscribers on the change channel', 20_000);
      const toggled = await request(a, 'POST', `${flagsPath(project)}/${flag.id}/toggle`, { token: user.token });
      assert.equal(toggled.body.enabled, true);
      await eventually(async () => (await evaluate(b, project.sdk_key, 'production')).body.flags.late?.enabled === true, 'the toggle on B through Redis', 3000);
      // Whatever told the log of the outage (each Redis client, each limit) tells of the return, once.
      const said = (server: TestServer, text: string) => server.logs.filter((line) => line.includes(text)).length;
      await newUser(a, 'after-redis');
      // Each client reconnects on its own schedule: the last "back" may trail the toggle.
      for (const server of [a, b]) {
        assert.ok(said(server, 'Redis connection failed') >= 1);
        await eventually(() => said(server, 'Redis connection back') === said(server, 'Redis connection failed'), 'a "back" for each "failed"');
      }
      assert.ok(said(a, 'rate limit counters unavailable') >= 1);
      await eventually(() => said(a, 'rate limit counters back') === said(a, 'rate limit counters unavailable'), 'the rate limit counters back');
      await new Promise((resolve) => setTimeout(resolve, 200)); // nothing more is said once each client is back
      for (const server of [a, b]) assert.equal(said(server, 'Redis connection back'), said(server, 'Redis connection failed'));
    } finally {
      await a.close();
      await b.close();
      redis?.kill('SIGKILL');
      await database.drop();
    }
  });
});

describe('rate limits counted in Redis while it is down', { skip: hasRedisServer ? false : 'redis-server is not installed' }, () => {
  test('a check or a give-back that fails logs the outage; the next one Redis answers logs its return', async () => {
    const port = await freePort();
    const lines: string[] = [];
    const log = pino({ level: 'info' }, { write: (line: string) => void lines.push(line) });
    const redis = await createRedis(`redis://127.0.0.1:${port}`, log);
    const limits = createRateLimits({ evaluatePerMinute: 0, authPerMinute: 0, eventsPerMinute: 0 }, log, { kind: 'redis', client: redis });
    const said = (text: string) => lines.filter((line) => line.includes(text)).length;
    let redisServer: ChildProcess | undefined;
    try {
      await limits.failedLogin.check('ada@example.com');
      await limits.forgotPassword.giveBack('ada@example.com');
      assert.equal(said('rate limit counters unavailable'), 2, 'each limit says it lets requests through');
      redisServer = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
      await eventually(() => redis.status === 'ready', 'the client connected', 20_000);
      await limits.failedLogin.check('ada@example.com');
      await limits.forgotPassword.giveBack('ada@example.com');
      assert.equal(said('rate limit counters back'), 2, 'each limit says it counts again');
    } finally {
      redis.disconnect();
      redisServer?.kill('SIGKILL');
    }
  });
});

describe('a retry loop\'s log lines (LogThrottle)', () => {
  test('a dependency that fails and comes back every 100 ms gives one failure line and one return line per 10 s', () => {
    const throttle = new LogThrottle(10_000);
    const lines: string[] = [];
    for (let at = 0; at < 30_000; at += 100) {
      if (throttle.due(at)) lines.push(`failed ${at}`);
      if (throttle.recovered()) lines.push(`back ${at}`);
    }
    assert.deepEqual(lines, ['failed 0', 'back 0', 'failed 10000', 'back 10000', 'failed 20000', 'back 20000']);
    assert.equal(throttle.recovered(), false, 'a return is told once');
    assert.equal(new LogThrottle().recovered(), false, 'nothing failed: nothing to tell');
  });
});

describe('one server', () => {
  let server: TestServer;
  let user: TestUser;
  before(async () => {
    server = await startServer({ METRICS_TOKEN: 'scrape-me', RATE_LIMIT_AUTH: '0' });
    user = await newUser(server);
  });
  after(() => server?.close());

  test('evaluate answers 400 to a body not sent as JSON; other routes keep 415', async () => {
    const project = await newProject(server, user);
    const body = JSON.stringify({ environment: 'production' });
    const none = await fetch(`${server.url}/sdk/v1/evaluate`, { method: 'POST', headers: { 'x-sdk-key': project.sdk_key }, body: new Blob([body]) });
    assert.equal(none.status, 400);
    assert.equal(((await none.json()) as { statusCode: number }).statusCode, 400);
    const form = await request(server, 'POST', '/sdk/v1/evaluate', { sdkKey: project.sdk_key, headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: 'environment=production' });
    assert.equal(form.status, 400);
    assert.equal(form.body.error, 'Bad Request');
    assert.equal((await request(server, 'POST', '/sdk/v1/evaluate', { sdkKey: project.sdk_key, headers: { 'content-type': 'text/plain' }, body })).status, 400);
    assert.equal((await request(server, 'POST', '/sdk/v1/evaluate', { sdkKey: project.sdk_key, body })).status, 200);
    assert.equal((await request(server, 'POST', '/sdk/v1/evaluate', { sdkKey: 'nope', headers: { 'content-type': 'text/plain' }, body })).status, 401, 'the key is still checked first');
    assert.equal((await request(server, 'POST', '/api/projects', { token: user.token, headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: 'name=x' })).status, 415);
  });

  test('every answer says X-Content-Type-Options: nosniff; the Swagger page still works', async () => {
    const project = await newProject(server, user);
    const answers = [
      await evaluate(server, project.sdk_key, 'production'),
      await request(server, 'GET', '/api/projects', { token: user.token }),
      await request(server, 'GET', '/api/projects'),
      await request(server, 'GET', '/nowhere'),
      await request(server, 'GET', '/health'),
      await request(server, 'GET', '/docs/json'),
    ];
    for (const answer of answers) assert.equal(answer.headers.get('x-content-type-options'), 'nosniff');
    const page = await request(server, 'GET', '/docs/');
    assert.equal(page.status, 200);
    assert.match(page.headers.get('content-type') ?? '', /text\/html/);
    const scripts = [...page.text.matchAll(/src="\.?\/?([^"]+\.js)"/g)].map((match) => match[1]!);
    assert.ok(scripts.length > 0, page.text);
    for (const script of scripts) {
      const served = await request(server, 'GET', `/docs/${script.replace(/^docs\//, '')}`);
      assert.equal(served.status, 200, script);
      assert.match(served.headers.get('content-type') ?? '', /javascript/, script); // nosniff needs the right type
      assert.equal(served.headers.get('x-content-type-options'), 'nosniff');
    }
  });

  test('?flag_key= on a project without environments answers 200 and no items', async () => {
    const project = await newProject(server, user);
    for (const env of [project.production, project.staging]) {
      assert.equal((await request(server, 'DELETE', `/api/projects/${project.id}/environments/${env}`, { token: user.token })).status, 204);
    }
    const answer = await request(server, 'GET', `/api/projects/${project.id}/evaluations?flag_key=anything`, { token: user.token });
    assert.equal(answer.status, 200);
    assert.deepEqual(answer.body, { items: [], next_cursor: null });
  });

  test('per-flag counts stay readable by flag key for an environment after the flag is deleted', async () => {
    const project = await newProject(server, user);
    const flag = await newFlag(server, user, project, { key: 'short-lived', enabled: true });
    for (let i = 0; i < 3; i++) assert.equal((await evaluate(server, project.sdk_key, 'production')).status, 200);
    const byKey = (query: string) => request(server, 'GET', `/api/projects/${project.id}/environments/${project.production}/metrics${query}`, { token: user.token });
    await eventually(async () => (await byKey('?flag_key=short-lived')).body.totals?.enabled === 3, 'the counts');
    assert.equal((await request(server, 'DELETE', `${flagsPath(project)}/${flag.id}`, { token: user.token })).status, 204);
    assert.equal((await request(server, 'GET', `${flagsPath(project)}/${flag.id}/metrics`, { token: user.token })).status, 404, 'by id, the flag is gone');
    const after = await byKey('?flag_key=short-lived&hours=2');
    assert.equal(after.status, 200);
    assert.equal(after.body.flag_key, 'short-lived');
    assert.deepEqual(after.body.totals, { enabled: 3, disabled: 0 });
    assert.equal(after.body.buckets.length, 2);
    assert.deepEqual((await byKey('?flag_key=never-was')).body.totals, { enabled: 0, disabled: 0 });
    assert.equal((await byKey('')).status, 400, 'flag_key is required');
    const stranger = await newUser(server, 'stranger');
    assert.equal((await request(server, 'GET', `/api/projects/${project.id}/environments/${project.production}/metrics?flag_key=short-lived`, { token: stranger.token })).status, 404);
    assert.equal((await request(server, 'GET', `/api/projects/${project.id}/environments/${project.production}/metrics?flag_key=short-lived`)).status, 401);
  });

  test('history is indexed by snapshot (deletes do not scan it once per snapshot); deleting an environment deletes its history and keeps the others', async () => {
    const indexes = onPostgres
      ? (await sql<{ name: string }>`select indexname as name from pg_indexes where tablename = 'evaluations'`.execute(server.database.db)).rows
      : (await sql<{ name: string }>`select name from sqlite_master where type = 'index' and tbl_name = 'evaluations'`.execute(server.database.db)).rows;
    assert.ok(indexes.some((index) => index.name === 'evaluations_snapshot_idx'), JSON.stringify(indexes));

    const project = await newProject(server, user);
    await newFlag(server, user, project, { key: 'kept', enabled: true }, project.staging);
    await newFlag(server, user, project, { key: 'gone', enabled: true });
    const { db } = server.database;
    const rows = (env: string) => db.selectFrom('evaluations').select(db.fn.countAll().as('n')).where('environment_id', '=', env).executeTakeFirstOrThrow().then((row) => Number(row.n));
    for (let i = 0; i < 3; i++) {
      await evaluate(server, project.sdk_key, 'production', { user_id: `u${i}` });
      await evaluate(server, project.sdk_key, 'staging', { user_id: `u${i}` });
    }
    await eventually(async () => (await rows(project.production)) === 3 && (await rows(project.staging)) === 3, 'history written');
    // Many rows: more than one deletion step.
    const snapshot = await db.selectFrom('evaluation_snapshots').select('id').where('environment_id', '=', project.production).executeTakeFirstOrThrow();
    await insertEvaluations(server.database, Array.from({ length: 4500 }, (_, i) => [project.production, snapshot.id, `bulk-${i}`, Uint8Array.of(1), new Date().toISOString()]));
    assert.equal((await request(server, 'DELETE', `/api/projects/${project.id}/environments/${project.production}`, { token: user.token })).status, 204);
    assert.equal(await rows(project.production), 0);
    assert.equal(await rows(project.staging), 3);
    const left = await db.selectFrom('evaluation_counts').select('environment_id').where('environment_id', '=', project.production).execute();
    assert.deepEqual(left, []);
    assert.equal((await request(server, 'DELETE', `/api/projects/${project.id}`, { token: user.token })).status, 204);
    assert.equal(await rows(project.staging), 0);
  });

  test('GET /metrics (Prometheus) answers only to the METRICS_TOKEN bearer; 404 to anyone else', async () => {
    const project = await newProject(server, user);
    await newFlag(server, user, project, { key: 'counted', enabled: true });
    await evaluate(server, project.sdk_key, 'production');
    assert.equal((await request(server, 'GET', '/metrics')).status, 404);
    assert.equal((await request(server, 'GET', '/metrics', { token: 'wrong' })).status, 404);
    assert.equal((await request(server, 'GET', '/metrics', { token: user.token })).status, 404);
    const scraped = await request(server, 'GET', '/metrics', { token: 'scrape-me' });
    assert.equal(scraped.status, 200);
    assert.match(scraped.headers.get('content-type') ?? '', /text\/plain/);
    for (const series of [
      'guidon_http_request_duration_seconds_count{method="POST",route="/sdk/v1/evaluate",status="200"}',
      'guidon_http_request_duration_seconds_bucket{le="0.05",method="GET",route="/api/projects/:project_id/environments"',
      'guidon_evaluate_requests_total{status="200"}',
      'guidon_flag_evaluations_total',
      'guidon_history_rows_total{state="written"}',
      'guidon_history_rows_total{state="failed"}',
      'guidon_history_pending_rows',
      'guidon_compiled_projects',
      'guidon_change_feed_lag_seconds',
      'guidon_password_hashes_total',
      'guidon_process_resident_memory_bytes',
    ]) {
      assert.ok(scraped.text.includes(series), `${series} in\n${scraped.text.slice(0, 2000)}`);
    }
    assert.equal((await request(server, 'GET', '/api/metrics', { token: user.token })).status, 404, 'the old endpoint is gone');
    const plain = await startServer();
    try {
      assert.equal((await request(plain, 'GET', '/metrics', { token: '' })).status, 404, 'without METRICS_TOKEN there is no /metrics');
    } finally {
      await plain.close();
    }
  });

  const hashes = async () => Number(/^guidon_password_hashes_total (\d+)$/m.exec((await request(server, 'GET', '/metrics', { token: 'scrape-me' })).text)?.[1]);

  test('reset-password looks the token up before it hashes the new password', async () => {
    const before = await hashes();
    for (let i = 0; i < 5; i++) {
      const answer = await request(server, 'POST', '/auth/reset-password', { body: { token: `bogus-${i}`, newPassword: 'a new password' } });
      assert.equal(answer.status, 400);
    }
    assert.equal(await hashes(), before, 'no argon2 work for a bogus token');
  });

  test('a successful reset uses up every other reset token of the user', async () => {
    const other = await newUser(server, 'resetting');
    const tokens = ['first', 'second', 'third'].map((name) => `${name}-${randomBytes(8).toString('hex')}`);
    const expires = new Date(Date.now() + 30 * 60_000).toISOString();
    for (const token of tokens) await storeResetToken(server.database.db, createHash('sha256').update(token).digest('hex'), other.id, expires);
    const reset = (token: string, newPassword: string) => request(server, 'POST', '/auth/reset-password', { body: { token, newPassword } });
    assert.equal((await reset(tokens[1]!, 'second password')).status, 200);
    assert.equal((await reset(tokens[0]!, 'first password')).status, 400);
    assert.equal((await reset(tokens[2]!, 'third password')).status, 400);
    assert.equal((await request(server, 'POST', '/auth/login', { body: { email: other.email, password: 'second password' } })).status, 200);
  });
});

describe('account routes under abuse', () => {
  let server: TestServer;
  before(async () => {
    server = await startServer({ RATE_LIMIT_AUTH: '3' });
  });
  after(() => server?.close());

  test('forgot-password and reset-password share the per-IP auth limit: 429 with Retry-After', async () => {
    const ip = { 'x-forwarded-for': '203.0.113.50' };
    const calls = [
      () => request(server, 'POST', '/auth/forgot-password', { headers: ip, body: { email: 'someone@example.com' } }),
      () => request(server, 'POST', '/auth/reset-password', { headers: ip, body: { token: 'bogus', newPassword: 'a new password' } }),
      () => request(server, 'POST', '/auth/forgot-password', { headers: ip, body: { email: 'other@example.com' } }),
    ];
    assert.deepEqual(await Promise.all(calls.map((call) => call().then((answer) => answer.status))), [200, 400, 200]);
    for (const call of calls) {
      const limited = await call();
      assert.equal(limited.status, 429);
      assert.ok(Number(limited.headers.get('retry-after')) >= 1);
    }
    const elsewhere = await request(server, 'POST', '/auth/forgot-password', { headers: { 'x-forwarded-for': '203.0.113.51' }, body: { email: 'someone@example.com' } });
    assert.equal(elsewhere.status, 200, 'another address has its own budget');
  });
});

describe('failed logins, counted first and given back on success', () => {
  let server: TestServer;
  before(async () => {
    server = await startServer({ RATE_LIMIT_AUTH: '0' });
  });
  after(() => server?.close());

  test('60 parallel guesses: only 10 are checked (401), the rest answer 429', async () => {
    const user = await newUser(server, 'guessed');
    const ip = { 'x-forwarded-for': '203.0.113.70' };
    const statuses = await Promise.all(
      Array.from({ length: 60 }, () => request(server, 'POST', '/auth/login', { headers: ip, body: { email: user.email, password: 'wrong guess' } }).then((answer) => answer.status)),
    );
    assert.equal(statuses.filter((status) => status === 401).length, 10, statuses.join(','));
    assert.equal(statuses.filter((status) => status === 429).length, 50);
  });

  test('a right password gives its point back: nine failures and a success leave one more try', async () => {
    const user = await newUser(server, 'forgetful');
    const ip = { 'x-forwarded-for': '203.0.113.71' };
    const login = (password: string) => request(server, 'POST', '/auth/login', { headers: ip, body: { email: user.email, password } }).then((answer) => answer.status);
    for (let i = 0; i < 9; i++) assert.equal(await login('wrong guess'), 401);
    assert.equal(await login(user.password), 200);
    assert.equal(await login('wrong guess'), 401, 'the tenth failure is still checked');
    assert.equal(await login(user.password), 429, 'now the budget is used up');
  });
});

test('the in-memory rate-limit counters keep a bounded number of keys', async () => {
  const limits = createRateLimits({ evaluatePerMinute: 0, authPerMinute: 0, eventsPerMinute: 0 }, silent);
  for (let i = 0; i < MAX_KEYS_IN_MEMORY + 500; i++) await limits.forgotPassword.tryHit(`victim-${i}@example.com`);
  assert.equal(limits.forgotPassword.trackedKeys, MAX_KEYS_IN_MEMORY);
  // The most recent keys are still counted.
  for (let i = 0; i < 4; i++) assert.equal(await limits.forgotPassword.tryHit(`victim-${MAX_KEYS_IN_MEMORY + 499}@example.com`), true);
  assert.equal(await limits.forgotPassword.tryHit(`victim-${MAX_KEYS_IN_MEMORY + 499}@example.com`), false);
});

/** A project with one environment of two flags, written straight to a fresh database. */
async function environmentIn(testDatabase: TestDatabase) {
  const database = await openDatabase(testDatabase.config);
  const now = new Date().toISOString();
  const ids = { user: crypto.randomUUID(), project: crypto.randomUUID(), environment: crypto.randomUUID(), on: crypto.randomUUID(), off: crypto.randomUUID() };
  await database.db.insertInto('users').values({ id: ids.user, email: `h-${ids.user}@example.com`, password_hash: 'x', created_at: now }).execute();
  await database.db.insertInto('projects').values({ id: ids.project, owner_id: ids.user, name: 'p', description: null, sdk_key: newKey(), created_at: now, updated_at: now }).execute();
  await database.db.insertInto('environments').values({ id: ids.environment, project_id: ids.project, key: 'production', name: 'Production', created_at: now, updated_at: now }).execute();
  const environment = { environmentId: ids.environment, snapshotId: crypto.randomUUID(), flagIds: [ids.on, ids.off], flagKeys: ['on', 'off'] };
  return { database, environment };
}

/** Makes every insert of a history row whose user_id is 'poison' fail, as a database error would. */
async function poisonHistory(testDatabase: TestDatabase): Promise<void> {
  if (testDatabase.config.kind === 'sqlite') {
    const raw = new BetterSqlite3(testDatabase.config.path);
    raw.exec(`create trigger poison before insert on evaluations when new.user_id = 'poison' begin select raise(abort, 'poisoned row'); end`);
    raw.close();
    return;
  }
  const client = new pg.Client({ connectionString: testDatabase.url });
  await client.connect();
  await client.query(`create function poison() returns trigger language plpgsql as $$ begin if new.user_id = 'poison' then raise exception 'poisoned row'; end if; return new; end $$`);
  await client.query('create trigger poison before insert on evaluations for each row execute function poison()');
  await client.end();
}

const hourCounts = async (database: Awaited<ReturnType<typeof openDatabase>>) =>
  (await database.db.selectFrom('evaluation_counts').select(['flag_key', 'enabled_count', 'disabled_count']).orderBy('flag_key').execute()).map((row) => [row.flag_key, Number(row.enabled_count), Number(row.disabled_count)]);

describe('exact history counts', () => {
  test('a batch that fails half-way: the transactions written count as written, the rest as failed, the hourly counts are stored', async () => {
    const testDatabase = await createTestDatabase();
    const { database, environment } = await environmentIn(testDatabase);
    await poisonHistory(testDatabase);
    const store = new HistoryStore(database, 2); // two rows per transaction
    const hourStart = new Date(Math.floor(Date.now() / 3_600_000) * 3_600_000).toISOString();
    const users = ['a', 'b', 'c', 'poison', 'e'];
    const result = await store.write({
      id: 1,
      environments: [environment],
      requestEnvironment: new Uint32Array(users.length),
      requestTime: Float64Array.from(users.map(() => Date.now())),
      ...packUsers(users),
      codes: new Uint8Array(users.length * 2).fill(1),
      rows: users.length * 2,
      counts: [{ environment, hourStart, enabled: Uint32Array.from([5, 5]), disabled: Uint32Array.from([0, 0]) }],
    });
    assert.equal(result.rows, 4, 'a and b: the first transaction');
    assert.equal(result.failed, 6, 'c, poison and e');
    assert.equal(result.discarded, 0);
    assert.equal(result.countsStored, true);
    assert.match(result.errors.join(), /poisoned row/);
    const written = await database.db.selectFrom('evaluations').select('user_id').orderBy('id').execute();
    assert.deepEqual(written.map((row) => row.user_id), ['a', 'b']);
    assert.deepEqual(await hourCounts(database), [['off', 5, 0], ['on', 5, 0]]);
    await database.close();
    await testDatabase.drop();
  });

  test('a history worker that dies loses its rows (counted as failed), never its hourly counts', async () => {
    const testDatabase = await createTestDatabase();
    const { database, environment } = await environmentIn(testDatabase);
    const recorder = new HistoryRecorder(testDatabase.config, silent, { flushIntervalMs: 3_600_000 });
    recorder.start();
    const dying = recorder['spawnWorker'](); // started now, as the first batch would start it
    dying.postMessage({ type: 'close' }); // the worker closes its database: everything handed to it now fails
    recorder.record(environment, 'lost', Uint8Array.from([1, 0]), 2);
    recorder.handOver();
    await eventually(() => recorder.metrics().pending === 0, 'the batch answered');
    await dying.terminate(); // and then the thread dies
    await eventually(() => recorder['worker'] !== dying, 'a new worker');
    recorder.record(environment, 'after', Uint8Array.from([1, 0]), 2);
    await recorder.close();
    assert.deepEqual(await hourCounts(database), [['off', 0, 2], ['on', 2, 0]], 'both evaluations counted');
    const { written, failed, recorded } = recorder.metrics();
    assert.equal(recorded, 4);
    assert.equal(written + failed, 4);
    await database.close();
    await testDatabase.drop();
  });
});

/** Another connection takes the history table, so the history writer waits on it; returns the release. */
async function holdHistoryTable(testDatabase: { config: TestDatabase['config'] }): Promise<() => Promise<void>> {
  if (testDatabase.config.kind === 'sqlite') {
    const raw = new BetterSqlite3(testDatabase.config.path);
    raw.exec('begin immediate');
    return async () => {
      raw.exec('rollback');
      raw.close();
    };
  }
  const client = new pg.Client({ connectionString: testDatabase.config.url });
  client.on('error', () => undefined); // dropping the test database ends this connection
  await client.connect();
  await client.query('begin');
  await client.query('lock table evaluations in access exclusive mode');
  return async () => {
    await client.query('rollback');
    await client.end();
  };
}

describe('a history writer that dies while writing', () => {
  test('its hourly counts go to the next writer', { timeout: 60_000 }, async () => {
    const testDatabase = await createTestDatabase();
    const { database, environment } = await environmentIn(testDatabase);
    const recorder = new HistoryRecorder(testDatabase.config, silent, { flushIntervalMs: 3_600_000 });
    recorder.start();
    const release = await holdHistoryTable(testDatabase);
    for (let i = 0; i < 3; i++) recorder.record(environment, `u${i}`, Uint8Array.from([1, 0]), 2);
    recorder.handOver(); // the writer stores rows before counts: it now waits on the table
    const dying = recorder['worker']!; // started by that batch
    await new Promise((resolve) => setTimeout(resolve, 300));
    const terminated = dying.terminate();
    // Released only once the thread is told to stop: better-sqlite3 must not raise an error into a
    // terminating thread (it aborts the process); the thread stops when the insert returns.
    await release();
    await terminated;
    await eventually(() => recorder['worker'] !== dying, 'a new worker');
    await recorder.close();
    assert.deepEqual(await hourCounts(database), [['off', 0, 3], ['on', 3, 0]]);
    const { written, failed } = recorder.metrics();
    assert.equal(written + failed, 6, 'every row written or counted as lost');
    await database.close();
    await testDatabase.drop();
  });
});

describe('shutdown with a history flush that cannot finish', () => {
  test('gives up after HISTORY_FLUSH_TIMEOUT_SECONDS, logs how many rows it dropped, and closes', { timeout: 60_000 }, async () => {
    const server = await startServer({ HISTORY_FLUSH_TIMEOUT_SECONDS: '1' });
    const user = await newUser(server);
    const project = await newProject(server, user);
    await newFlag(server, user, project, { key: 'stuck', enabled: true });
    await newFlag(server, user, project, { key: 'stuck-too', enabled: false });
    // Another connection holds the history table, so the last flush waits for it.
    const release = await holdHistoryTable({ config: server.config.database });
    try {
      for (let i = 0; i < 3; i++) assert.equal((await evaluate(server, project.sdk_key, 'production', { user_id: `u${i}` })).status, 200);
      await server.close(); // without a deadline this would wait for the lock forever (PostgreSQL) or 5 s (SQLite) and log nothing
    } finally {
      await release().catch(() => undefined); // the PostgreSQL test database may be dropped already
    }
    const line = server.logs.find((entry) => entry.includes('history flush did not finish in time'));
    assert.ok(line, server.logs.join(''));
    assert.equal(JSON.parse(line).dropped, 6, 'three requests of two flags');
  });
});

describe('the request histogram, counted without prom-client\'s observe', () => {
  test('/metrics says what a prom-client Histogram and Counter that saw every answer would say', async () => {
    const metrics = createMetrics({} as never); // the other metrics' sources are read only when they are scraped
    const reference = new Registry();
    const histogram = new Histogram({
      name: 'guidon_http_request_duration_seconds',
      help: 'HTTP requests by route (the route pattern, not the URL), method and status; _count is the request count',
      labelNames: ['method', 'route', 'status'],
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
      registers: [reference],
    });
    const counter = new Counter({ name: 'guidon_evaluate_requests_total', help: 'POST /sdk/v1/evaluate answers by status', labelNames: ['status'], registers: [reference] });
    const text = (registry: Registry) =>
      Promise.all(['guidon_http_request_duration_seconds', 'guidon_evaluate_requests_total'].map((name) => registry.getSingleMetricAsString(name))).then((texts) => texts.join('\n'));
    const routes: [string, string, number][] = [
      ['POST', '/sdk/v1/evaluate', 200],
      ['GET', '/api/projects/:project_id/environments', 200],
      ['POST', '/sdk/v1/evaluate', 429],
      ['GET', 'unmatched', 404],
      ['POST', '/sdk/v1/evaluate', 401],
      ['POST', '/auth/login', 200],
    ];
    // Bounds exactly, between them, past the last (+Inf only), zero; label sets first met in a mixed order.
    const durations = [0, 0.001, 0.0010001, 0.0025, 0.003, 0.07, 0.1, 1, 4.9, 5, 5.0001, 12, 0.000123456789];
    let seen = 0;
    const answer = (i: number) => {
      const [method, route, status] = routes[(i * 7 + (i >> 3)) % routes.length]!;
      const seconds = durations[i % durations.length]! + (i % 5) * 1e-7;
      metrics.count(method, route, status, seconds);
      histogram.observe({ method, route, status: String(status) }, seconds);
      if (route === '/sdk/v1/evaluate') counter.inc({ status: String(status) });
      seen++;
    };
    assert.equal(await text(await metrics.registry()), await text(reference), 'before any answer');
    for (let i = 0; i < 200; i++) answer(i);
    const first = await text(await metrics.registry());
    assert.equal(first, await text(reference));
    assert.match(first, /^guidon_http_request_duration_seconds_bucket\{le="0\.001",method="POST",route="\/sdk\/v1\/evaluate",status="200"\} \d+$/m);
    assert.match(first, /^guidon_evaluate_requests_total\{status="429"\} \d+$/m);
    for (let i = 200; i < 500; i++) answer(i); // scraped again: the counts go on
    assert.equal(await text(await metrics.registry()), await text(reference));
    assert.equal(seen, 500);
  });
});
