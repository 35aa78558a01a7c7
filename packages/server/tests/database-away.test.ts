/**
 * Database away (docs/reliability.md; the database timeouts of docs/operations.md): evaluate keeps serving the compiled view, writes
 * answer 503 in the shape of docs/api.md (Errors) and change nothing, /health and /ready say 503 within 2 s, and all of
 * it recovers without a restart when the database returns. PostgreSQL: a private cluster that the
 * test stops, replaces by a port that accepts and never answers, and starts again. SQLite: the
 * file's write lock held by another process's transaction (as root, with the file already open,
 * a chmod would not stop the server writing: see docs/reliability.md). On PostgreSQL the retry
 * loops that run while it is away (the webhook sender's poll, a change waiting for the open
 * streams, the change notifications' listener, the revision check) say so in the log at most
 * once per 10 s, and an SDK key not compiled yet gets 503.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server, type Socket } from 'node:net';
import BetterSqlite3 from 'better-sqlite3';
import pg from 'pg';
import { evaluate, eventually, flagsPath, newFlag, newProject, newUser, request, startServer, type TestProject, type TestServer, type TestUser } from './harness.js';
import { onPostgres } from './test-database.js';
import { PrivatePostgres, privatePostgresMissing } from './private-postgres.js';
import { openStream, type TestStream } from './stream-client.js';

function assertUnavailable(answer: { status: number; body: any; headers: Headers }, what: string): void {
  assert.equal(answer.status, 503, `${what}: ${JSON.stringify(answer.body)}`);
  assert.deepEqual(answer.body, { statusCode: 503, error: 'Service Unavailable', message: 'The database is unavailable; try again shortly' });
  assert.equal(answer.headers.get('retry-after'), '5');
}

async function timedHealth(server: TestServer): Promise<{ status: number; ms: number }> {
  const started = Date.now();
  const answer = await request(server, 'GET', '/health');
  const ms = Date.now() - started;
  console.log(`/health answered ${answer.status} in ${ms} ms`);
  // The readiness probe agrees: a load balancer stops sending while the database is away.
  const ready = await request(server, 'GET', '/ready');
  assert.deepEqual({ status: ready.status, body: ready.body }, answer.status === 200 ? { status: 200, body: { status: 'ready' } } : { status: 503, body: { status: 'unavailable' } });
  return { status: answer.status, ms };
}

/** The writes and reads a client makes, all refused while the database is away. */
async function assertWritesRefused(server: TestServer, user: TestUser, project: TestProject): Promise<void> {
  assertUnavailable(await request(server, 'POST', flagsPath(project), { token: user.token, body: { key: 'while-away', name: 'x' } }), 'create flag');
  assertUnavailable(await request(server, 'POST', '/auth/register', { body: { email: 'away@example.com', password: 'long enough password' } }), 'register');
}

async function assertServingCompiledView(server: TestServer, project: TestProject): Promise<void> {
  for (let i = 0; i < 20; i++) {
    const answer = await evaluate(server, project.sdk_key, 'production', { user_id: `u${i}` });
    assert.equal(answer.status, 200);
    assert.deepEqual(answer.body.flags['on-flag'], { enabled: true, reason: 'User in 100% rollout' });
  }
}

/** The warnings of the retry loops that run while the database is away (src/log-throttle.ts). */
const OUTBOX_WARNING = 'webhook sender: could not read the outbox';
const STREAMS_WARNING = 'could not send a change to the open streams';
const LISTENER_ERROR = 'change notifications: lost the PostgreSQL connection';
const REVISION_CHECK_WARNING = 'revision check failed';
/** What each of those loops logs once when the database is back. */
const BACK = ['webhook sender: reading the outbox again', 'open streams: changes are sent again', 'change notifications: listening again', 'revision check works again'];

/**
 * Over an outage that began at `since` (server.logs.length then, and the time), each warning is
 * in the log at most once per 10 s, not at every retry; and, with `seen`, at least once (the loop
 * did fail: a warning logged less than 10 s before the outage may hold back the first one).
 */
function assertLoggedOncePer10s(server: TestServer, since: { line: number; at: number }, messages: string[], seen = true): void {
  const lines = server.logs.slice(since.line);
  const allowed = Math.floor((Date.now() - since.at) / 10_000) + 1;
  for (const message of messages) {
    const count = lines.filter((line) => line.includes(message)).length;
    console.log(`"${message}": ${count} line(s) over ${Date.now() - since.at} ms away`);
    if (seen) assert.ok(count >= 1, `"${message}" was never logged: the loop did not run into the outage`);
    assert.ok(count <= allowed, `"${message}" logged ${count} times in ${Date.now() - since.at} ms (at most ${allowed})`);
  }
}

let returns = 0;

async function assertRecovered(server: TestServer, user: TestUser, project: TestProject): Promise<void> {
  await eventually(async () => (await request(server, 'GET', '/health')).status === 200, '/health back to 200', 20_000);
  assert.deepEqual((await request(server, 'GET', '/ready')).body, { status: 'ready' });
  const created = await request(server, 'POST', flagsPath(project), { token: user.token, body: { key: `after-return-${++returns}`, name: 'x', enabled: true, rollout_percentage: 100 } });
  assert.equal(created.status, 201, created.text);
  const keys = (await request(server, 'GET', flagsPath(project), { token: user.token })).body.map((flag: { key: string }) => flag.key).sort();
  assert.deepEqual(keys.filter((key: string) => !key.startsWith('after-return') || key === `after-return-${returns}`), [`after-return-${returns}`, 'on-flag'], 'the refused write left nothing behind');
  await eventually(async () => (await evaluate(server, project.sdk_key, 'production')).body.flags?.[`after-return-${returns}`]?.enabled === true, 'evaluate serves the new flag');
}

/**
 * A change waiting for the open streams of `project` while the database goes away: another
 * instance's notification of a change arrives while the test holds an exclusive lock on projects,
 * so the stream hub's read of the project waits, and fails once the cluster stops. Returns the
 * locking client (its connection ends with the cluster).
 */
async function changeWaitingForStreams(cluster: PrivatePostgres, project: TestProject): Promise<pg.Client> {
  const locker = new pg.Client({ connectionString: cluster.url });
  locker.on('error', () => undefined); // terminated when the cluster stops
  await locker.connect();
  await locker.query('begin');
  await locker.query('lock table projects in access exclusive mode');
  const watcher = new pg.Client({ connectionString: cluster.url }); // outside the transaction: pg_stat_activity is read afresh
  await watcher.connect();
  try {
    await watcher.query('select pg_notify($1, $2)', ['guidon_changes', `another-instance ${project.id}`]); // what ChangeFeed.markChanged sends
    const waiting = `select count(*)::int as n from pg_stat_activity where wait_event_type = 'Lock' and query like 'select "sdk_key" from "projects"%'`;
    await eventually(async () => (await watcher.query(waiting)).rows[0].n > 0, "the stream hub's read waiting for the lock");
  } finally {
    await watcher.end();
  }
  return locker;
}

describe('PostgreSQL away', { skip: !onPostgres ? 'runs in the PostgreSQL pass of npm test' : privatePostgresMissing }, () => {
  let cluster: PrivatePostgres;
  let server: TestServer;
  let user: TestUser;
  let project: TestProject;
  /** Streamed while the database goes away. */
  let streamed: TestProject;
  /** Never evaluated: its SDK key is not compiled when the database goes away. */
  let cold: TestProject;
  const streams: TestStream[] = [];

  before(async () => {
    cluster = await PrivatePostgres.create();
    // The webhook sender polls every 100 ms: ten failures a second while the database is away.
    server = await startServer({}, { database: cluster.database, revisionCheckIntervalMs: 100, webhooks: { pollIntervalMs: 100 } });
    user = await newUser(server);
    project = await newProject(server, user);
    streamed = await newProject(server, user, 'Streamed');
    cold = await newProject(server, user, 'Cold');
    await newFlag(server, user, project, { key: 'on-flag', enabled: true, rollout_percentage: 100 });
    assert.equal((await evaluate(server, project.sdk_key, 'production')).status, 200);
  });
  after(async () => {
    for (const stream of streams) stream.close();
    await server?.close();
    cluster?.destroy();
  });

  test('stopped: evaluate serves, writes 503, /health 503; started again: all back', async () => {
    const stream = await openStream(`${server.url}/sdk/v1/stream?environment=production`, { 'x-sdk-key': streamed.sdk_key });
    streams.push(stream);
    assert.equal(stream.status, 200);
    // A browser's stream token, from the OFREP bulk answer of a compiled project.
    const bulk = await request(server, 'POST', '/ofrep/v1/evaluate/flags', { sdkKey: project.sdk_key, body: { context: {} } });
    const tokenUri: string = bulk.body.eventStreams[0].endpoint.requestUri;
    const locker = await changeWaitingForStreams(cluster, streamed);
    const away = { line: server.logs.length, at: Date.now() };
    cluster.stop('fast');
    await locker.end().catch(() => undefined);
    await new Promise((resolve) => setTimeout(resolve, 300)); // several failed revision checks
    await assertServingCompiledView(server, project);
    await assertWritesRefused(server, user, project);
    const health = await timedHealth(server);
    assert.equal(health.status, 503);
    assert.ok(health.ms < 2000, `/health took ${health.ms} ms`);
    assert.equal((await request(server, 'GET', '/api/projects', { token: user.token })).status, 503);
    // An SDK key not compiled yet needs the database: 503 on every SDK surface (as documented, see sdk-surfaces.test.ts).
    assertUnavailable(await evaluate(server, cold.sdk_key, 'production'), 'evaluate of a key not compiled yet');
    assertUnavailable(await request(server, 'GET', '/sdk/v1/stream?environment=production', { sdkKey: cold.sdk_key }), 'stream of a key not compiled yet');
    // The stream token of a compiled project opens its stream from memory, as the SDK key does.
    const tokenStream = await openStream(server.url + tokenUri);
    streams.push(tokenStream);
    assert.equal(tokenStream.status, 200);
    const ofrep = await request(server, 'POST', '/ofrep/v1/evaluate/flags', { sdkKey: cold.sdk_key, body: { context: {} } });
    assert.equal(ofrep.status, 503, ofrep.text);
    assert.equal(ofrep.body.errorCode, 'GENERAL');
    assert.equal(ofrep.headers.get('retry-after'), '5');
    // A few seconds away: the retry loops tried many times, and said so once.
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, 4000 - (Date.now() - away.at))));
    assertLoggedOncePer10s(server, away, [OUTBOX_WARNING, STREAMS_WARNING, LISTENER_ERROR, REVISION_CHECK_WARNING]);
    cluster.start();
    await assertRecovered(server, user, project);
    await eventually(() => stream.messages.some((message) => message.data.includes('refetchEvaluation')), 'the change waiting for the streams is sent once the database is back');
    // Each loop says once that it works again.
    await eventually(() => BACK.every((message) => server.logs.slice(away.line).some((line) => line.includes(message))), `the log says: ${BACK.join('; ')}`);
    await new Promise((resolve) => setTimeout(resolve, 500)); // more successful rounds: still one line each
    for (const message of BACK) assert.equal(server.logs.slice(away.line).filter((line) => line.includes(message)).length, 1, message);
  });

  test('unreachable (connections accepted, never answered): /health 503 within 2 s, writes 503, then back', async () => {
    const away = { line: server.logs.length, at: Date.now() };
    cluster.stop('immediate');
    const silent: Socket[] = [];
    const blackhole: Server = createServer((socket) => silent.push(socket));
    await new Promise<void>((resolve) => blackhole.listen(cluster.port, '127.0.0.1', resolve));
    try {
      const health = await timedHealth(server);
      assert.equal(health.status, 503);
      assert.ok(health.ms < 2000, `/health took ${health.ms} ms`);
      await assertServingCompiledView(server, project);
      const write = await request(server, 'PUT', `${flagsPath(project)}/00000000-0000-4000-8000-000000000000`, { token: user.token, body: { name: 'x' } });
      assertUnavailable(write, 'write while unreachable');
      assertLoggedOncePer10s(server, away, [OUTBOX_WARNING], false);
    } finally {
      for (const socket of silent) socket.destroy();
      await new Promise((resolve) => blackhole.close(resolve));
    }
    cluster.start();
    await assertRecovered(server, user, project);
  });
});

describe('SQLite locked by another writer', { skip: onPostgres ? 'runs in the SQLite pass of npm test' : false }, () => {
  let server: TestServer;
  let user: TestUser;
  let project: TestProject;

  before(async () => {
    server = await startServer({}, { revisionCheckIntervalMs: 100 });
    user = await newUser(server);
    project = await newProject(server, user);
    await newFlag(server, user, project, { key: 'on-flag', enabled: true, rollout_percentage: 100 });
    assert.equal((await evaluate(server, project.sdk_key, 'production')).status, 200);
  });
  after(() => server?.close());

  test('evaluate serves, writes 503, /health 503; lock released: all back', async () => {
    assert.equal(server.config.database.kind, 'sqlite');
    const locker = new BetterSqlite3(server.config.database.kind === 'sqlite' ? server.config.database.path : '');
    locker.exec('begin immediate');
    try {
      await assertServingCompiledView(server, project);
      const health = await timedHealth(server);
      assert.equal(health.status, 503);
      assert.ok(health.ms < 2000, `/health took ${health.ms} ms`);
      await assertWritesRefused(server, user, project);
      await assertServingCompiledView(server, project);
    } finally {
      locker.exec('rollback');
      locker.close();
    }
    await assertRecovered(server, user, project);
  });
});
