/**
 * Database away (issue 11; issue 7's timeouts): evaluate keeps serving the compiled view, writes
 * answer 503 in the contract §3 shape and change nothing, /health says 503 within 2 s, and all of
 * it recovers without a restart when the database returns. PostgreSQL: a private cluster that the
 * test stops, replaces by a port that accepts and never answers, and starts again. SQLite: the
 * file's write lock held by another process's transaction (as root, with the file already open,
 * a chmod would not stop the server writing: see docs/reliability.md).
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server, type Socket } from 'node:net';
import BetterSqlite3 from 'better-sqlite3';
import { evaluate, eventually, flagsPath, newFlag, newProject, newUser, request, startServer, type TestProject, type TestServer, type TestUser } from './harness.js';
import { onPostgres } from './test-database.js';
import { PrivatePostgres, privatePostgresMissing } from './private-postgres.js';

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

let returns = 0;

async function assertRecovered(server: TestServer, user: TestUser, project: TestProject): Promise<void> {
  await eventually(async () => (await request(server, 'GET', '/health')).status === 200, '/health back to 200', 20_000);
  const created = await request(server, 'POST', flagsPath(project), { token: user.token, body: { key: `after-return-${++returns}`, name: 'x', enabled: true, rollout_percentage: 100 } });
  assert.equal(created.status, 201, created.text);
  const keys = (await request(server, 'GET', flagsPath(project), { token: user.token })).body.map((flag: { key: string }) => flag.key).sort();
  assert.deepEqual(keys.filter((key: string) => !key.startsWith('after-return') || key === `after-return-${returns}`), [`after-return-${returns}`, 'on-flag'], 'the refused write left nothing behind');
  await eventually(async () => (await evaluate(server, project.sdk_key, 'production')).body.flags?.[`after-return-${returns}`]?.enabled === true, 'evaluate serves the new flag');
}

describe('PostgreSQL away', { skip: !onPostgres ? 'runs in the PostgreSQL pass of npm test' : privatePostgresMissing }, () => {
  let cluster: PrivatePostgres;
  let server: TestServer;
  let user: TestUser;
  let project: TestProject;

  before(async () => {
    cluster = await PrivatePostgres.create();
    server = await startServer({}, { database: cluster.database, revisionCheckIntervalMs: 100 });
    user = await newUser(server);
    project = await newProject(server, user);
    await newFlag(server, user, project, { key: 'on-flag', enabled: true, rollout_percentage: 100 });
    assert.equal((await evaluate(server, project.sdk_key, 'production')).status, 200);
  });
  after(async () => {
    await server?.close();
    cluster?.destroy();
  });

  test('stopped: evaluate serves, writes 503, /health 503; started again: all back', async () => {
    cluster.stop('fast');
    await new Promise((resolve) => setTimeout(resolve, 300)); // several failed revision checks
    await assertServingCompiledView(server, project);
    await assertWritesRefused(server, user, project);
    const health = await timedHealth(server);
    assert.equal(health.status, 503);
    assert.ok(health.ms < 2000, `/health took ${health.ms} ms`);
    assert.equal((await request(server, 'GET', '/api/projects', { token: user.token })).status, 503);
    cluster.start();
    await assertRecovered(server, user, project);
  });

  test('unreachable (connections accepted, never answered): /health 503 within 2 s, writes 503, then back', async () => {
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
