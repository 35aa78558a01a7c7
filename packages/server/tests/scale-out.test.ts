/**
 * Several instances on one PostgreSQL database (and one Redis): what one instance changes, the
 * others serve (how soon is measured, not asserted: the PostgreSQL pass of npm run bench:burst,
 * docs/performance.md); rate limits are shared; Redis going away breaks nothing, for evaluate and
 * for the streams.
 * Runs in the PostgreSQL pass of npm test (scripts/test.mjs).
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { connect, createServer, type Server, type Socket } from 'node:net';
import { evaluate, eventually, flagsPath, freePort, newFlag, newProject, newUser, request, startServer, type TestProject, type TestServer, type TestUser } from './harness.js';
import { createTestDatabase, onPostgres, type TestDatabase } from './test-database.js';
import { openStream, type TestStream } from './stream-client.js';

const hasRedisServer = spawnSync('redis-server', ['--version']).status === 0;
const skip = !onPostgres
  ? 'runs in the PostgreSQL pass of npm test'
  : !hasRedisServer && process.env.GUIDON_REQUIRE_SERVICES !== '1'
    ? 'redis-server is not installed'
    : false;

/** A Redis of the test's own, so the test can stop it and start it again on the same port. */
class TestRedis {
  private process: ChildProcess | undefined;
  constructor(readonly port: number) {}
  get url() {
    return `redis://127.0.0.1:${this.port}`;
  }
  async start(): Promise<void> {
    this.process = spawn('redis-server', ['--port', String(this.port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
    for (let i = 0; i < 100; i++) {
      if (spawnSync('redis-cli', ['-p', String(this.port), 'ping']).stdout?.toString().trim() === 'PONG') return;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    throw new Error('redis-server did not start');
  }
  async stop(): Promise<void> {
    const exited = new Promise((resolve) => this.process?.once('exit', resolve));
    this.process?.kill('SIGKILL');
    await exited;
  }
}

/** A TCP relay to the test's Redis that the test can cut and restore: one instance loses Redis while the others keep it. */
class RedisRelay {
  private server: Server | undefined;
  private readonly sockets = new Set<Socket>();
  constructor(
    readonly port: number,
    private readonly redisPort: number,
  ) {}
  get url() {
    return `redis://127.0.0.1:${this.port}`;
  }
  async open(): Promise<void> {
    this.server = createServer((client) => {
      const upstream = connect({ host: '127.0.0.1', port: this.redisPort });
      for (const socket of [client, upstream]) {
        this.sockets.add(socket);
        socket.on('close', () => this.sockets.delete(socket));
        socket.on('error', () => undefined);
      }
      client.pipe(upstream).pipe(client);
      client.on('close', () => upstream.destroy());
      upstream.on('close', () => client.destroy());
    });
    await new Promise<void>((resolve) => this.server!.listen(this.port, '127.0.0.1', resolve));
  }
  /** Drops every connection and refuses new ones until open() again. */
  async cut(): Promise<void> {
    const closed = new Promise((resolve) => this.server?.close(resolve));
    for (const socket of this.sockets) socket.destroy();
    await closed;
  }
}

let ipCounter = 0;
const clientIp = () => ({ 'x-forwarded-for': `198.51.100.${++ipCounter}` });

describe('two instances, one PostgreSQL, one Redis', { skip }, () => {
  let database: TestDatabase;
  let redis: TestRedis;
  let a: TestServer;
  let b: TestServer;
  let user: TestUser;

  before(async () => {
    database = await createTestDatabase();
    redis = new TestRedis(await freePort());
    await redis.start();
    const env = { REDIS_URL: redis.url, RATE_LIMIT_EVALUATE: '200', STREAMS_PER_CLIENT: '3' };
    // No periodic revision check here: what B shows came through Redis pub/sub (or, after an
    // outage, through the check the subscriber runs when it reconnects).
    a = await startServer(env, { database, revisionCheckIntervalMs: 3_600_000 });
    b = await startServer(env, { database, revisionCheckIntervalMs: 3_600_000 });
    user = await newUser(a);
  });
  after(async () => {
    await a?.close();
    await b?.close();
    await redis?.stop();
    await database?.drop();
  });

  const served = async (server: TestServer, project: TestProject, key: string) =>
    (await request(server, 'POST', '/sdk/v1/evaluate', { sdkKey: project.sdk_key, headers: clientIp(), body: { environment: 'production', context: { user_id: 'u1' } } })).body.flags?.[key];

  test('a toggle, a rule change and a flag deletion on A are served by B', async () => {
    const project = await newProject(a, user);
    const flag = await newFlag(a, user, project, { key: 'shared', enabled: false });
    assert.equal((await served(b, project, 'shared'))?.enabled, false); // compiled on B now

    await request(a, 'POST', `${flagsPath(project)}/${flag.id}/toggle`, { token: user.token });
    await eventually(async () => (await served(b, project, 'shared'))?.enabled === true, 'toggle on B');

    await request(a, 'POST', `${flagsPath(project)}/${flag.id}/rules`, { token: user.token, body: { rule_type: 'user_id', rule_value: 'u1' } });
    await eventually(async () => (await served(b, project, 'shared'))?.reason === 'Matched user_id targeting rule', 'rule on B');

    await request(a, 'DELETE', `${flagsPath(project)}/${flag.id}`, { token: user.token });
    await eventually(async () => (await served(b, project, 'shared')) === undefined, 'deletion on B');
  });

  test('prerequisites (docs/prerequisites.md): a parent toggled on A changes its dependent on B', async () => {
    const project = await newProject(a, user);
    const parent = await newFlag(a, user, project, { key: 'parent', enabled: true });
    await newFlag(a, user, project, { key: 'child', enabled: true, prerequisites: [{ flag_key: 'parent' }] });
    assert.deepEqual(await served(b, project, 'child'), { enabled: true, reason: 'Flag enabled globally' });
    await request(a, 'POST', `${flagsPath(project)}/${parent.id}/toggle`, { token: user.token });
    await eventually(async () => (await served(b, project, 'child'))?.reason === 'Prerequisite parent not met', 'the child off on B');
    await request(a, 'POST', `${flagsPath(project)}/${parent.id}/toggle`, { token: user.token });
    await eventually(async () => (await served(b, project, 'child'))?.enabled === true, 'the child on again on B');
  });

  test('after regenerate-key on A, A rejects the old key at once and B', async () => {
    const project = await newProject(a, user);
    assert.equal((await evaluate(b, project.sdk_key, 'production')).status, 200);
    assert.equal((await evaluate(a, project.sdk_key, 'production')).status, 200);
    const rotated = await request(a, 'POST', `/api/projects/${project.id}/regenerate-key`, { token: user.token });
    assert.equal((await evaluate(a, project.sdk_key, 'production')).status, 401);
    await eventually(async () => (await evaluate(b, project.sdk_key, 'production')).status === 401, 'old key rejected on B');
    assert.equal((await evaluate(b, rotated.body.sdk_key, 'production')).status, 200);
  });

  test('an API token deleted on A: A refuses it at once, B once its second is up (TOKEN_RECHECK_MS, token-auth.ts)', async () => {
    const project = await newProject(a, user);
    const created = await request(a, 'POST', '/api/tokens', { token: user.token, body: { name: 'deleted on A', project_id: project.id } });
    const ruleset = (server: TestServer) => request(server, 'GET', '/sdk/v1/ruleset?environment=production', { headers: { authorization: `Bearer ${created.body.token}` } });
    assert.equal((await ruleset(a)).status, 200);
    assert.equal((await ruleset(b)).status, 200); // B keeps it now
    assert.equal((await request(a, 'DELETE', `/api/tokens/${created.body.id}`, { token: user.token })).status, 204);
    assert.equal((await ruleset(a)).status, 401);
    await eventually(async () => (await ruleset(b)).status === 401, 'the deleted token refused on B');
    assert.equal((await request(b, 'GET', '/api/projects', { token: created.body.token })).status, 401, '/api reads the token every time');
  });

  test('deleting an environment, then the project, on A is seen by B', async () => {
    const project = await newProject(a, user);
    assert.equal((await evaluate(b, project.sdk_key, 'staging')).status, 200);
    await request(a, 'DELETE', `/api/projects/${project.id}/environments/${project.staging}`, { token: user.token });
    await eventually(async () => (await evaluate(b, project.sdk_key, 'staging')).status === 404, 'environment gone on B');
    await request(a, 'DELETE', `/api/projects/${project.id}`, { token: user.token });
    await eventually(async () => (await evaluate(b, project.sdk_key, 'production')).status === 401, 'project gone on B');
  });

  test('history written by both instances at once loses nothing, and the hourly counts add up', async () => {
    const project = await newProject(a, user);
    const one = await newFlag(a, user, project, { key: 'one', enabled: true });
    await newFlag(a, user, project, { key: 'two', enabled: false });
    const calls = Array.from({ length: 120 }, (_, i) =>
      request(i % 2 ? a : b, 'POST', '/sdk/v1/evaluate', { sdkKey: project.sdk_key, headers: clientIp(), body: { environment: 'production', context: { user_id: `h${i}` } } }),
    );
    assert.ok((await Promise.all(calls)).every((answer) => answer.status === 200));
    const items = async () => (await request(a, 'GET', `/api/projects/${project.id}/evaluations?limit=500`, { token: user.token })).body.items as { user_id: string }[];
    await eventually(async () => (await items()).length === 240, 'all 240 history items');
    assert.equal(new Set((await items()).map((item) => item.user_id)).size, 120);
    const metrics = await request(b, 'GET', `${flagsPath(project)}/${one.id}/metrics?hours=1`, { token: user.token });
    assert.deepEqual(metrics.body.totals, { enabled: 120, disabled: 0 });
  });

  test('the evaluate rate limit is shared: 200 split across A and B, then 429', async () => {
    const project = await newProject(a, user);
    const ip = clientIp();
    const call = (server: TestServer) => request(server, 'POST', '/sdk/v1/evaluate', { sdkKey: project.sdk_key, headers: ip, body: { environment: 'production' } });
    for (let i = 0; i < 100; i++) {
      assert.equal((await call(a)).status, 200);
      assert.equal((await call(b)).status, 200);
    }
    const limited = await call(b);
    assert.equal(limited.status, 429);
    assert.ok(Number(limited.headers.get('retry-after')) >= 1);
    assert.equal((await call(a)).status, 429);
  });

  test('the open-stream cap holds across instances: 3 per client address and SDK key on A and B together; a place given back on A is taken on B', async () => {
    const project = await newProject(a, user);
    const sameClient = { 'x-sdk-key': project.sdk_key, ...clientIp() };
    const streams: TestStream[] = [];
    const open = async (server: TestServer) => {
      const stream = await openStream(`${server.url}/sdk/v1/stream?environment=production`, sameClient);
      streams.push(stream);
      return stream;
    };
    try {
      const held = [await open(a), await open(b), await open(a)];
      assert.deepEqual(held.map((stream) => stream.status), [200, 200, 200]);
      for (const server of [b, a]) {
        const refused = await request(server, 'GET', '/sdk/v1/stream?environment=production', { sdkKey: project.sdk_key, headers: sameClient });
        assert.equal(refused.status, 429, `the fourth stream, on ${server === a ? 'A' : 'B'}`);
        assert.ok(Number(refused.headers.get('retry-after')) >= 1);
      }
      held[0]!.close();
      await eventually(async () => (await open(b)).status === 200, 'the place given back on A taken on B');
    } finally {
      for (const stream of streams) stream.close();
    }
  });

  test('a change whose notification failed while its instance had lost Redis reaches B when that instance is back, B connected all along', async () => {
    // C reaches Redis through a relay the test cuts; B keeps its connection, so no reconnection
    // makes it check revisions: only the notification C kept and sent on its return can tell it.
    const relay = new RedisRelay(await freePort(), redis.port);
    await relay.open();
    const c = await startServer({ REDIS_URL: relay.url, RATE_LIMIT_EVALUATE: '200' }, { database, revisionCheckIntervalMs: 3_600_000 });
    try {
      const owner = await newUser(c, 'relayed');
      const project = await newProject(c, owner);
      const flag = await newFlag(c, owner, project, { key: 'kept-notice', enabled: false });
      assert.equal((await served(b, project, 'kept-notice'))?.enabled, false); // compiled on B now
      await relay.cut();
      await eventually(() => c.logs.some((line) => line.includes('Redis connection failed')), 'C seeing Redis away');
      assert.equal((await request(c, 'POST', `${flagsPath(project)}/${flag.id}/toggle`, { token: owner.token })).status, 200);
      await eventually(() => c.logs.some((line) => line.includes('could not notify other instances')), 'the notification failing');
      await relay.open();
      await eventually(async () => (await served(b, project, 'kept-notice'))?.enabled === true, "the toggle on B once C's Redis is back", 20_000);
    } finally {
      await c.close();
      await relay.cut();
    }
  });

  test('with Redis stopped, evaluate keeps answering; changes made meanwhile reach B when it is back; so do the limits', async () => {
    const project = await newProject(a, user);
    const flag = await newFlag(a, user, project, { key: 'resilient', enabled: false });
    assert.equal((await served(b, project, 'resilient'))?.enabled, false);
    await redis.stop();
    try {
      const ip = clientIp();
      for (let i = 0; i < 250; i++) {
        const answer = await request(a, 'POST', '/sdk/v1/evaluate', { sdkKey: project.sdk_key, headers: ip, body: { environment: 'production' } });
        assert.equal(answer.status, 200, `request ${i + 1} without Redis`); // fails open: no 429, no 500
      }
      assert.ok(a.logs.some((line) => line.includes('rate limit counters unavailable')), 'failing open is logged');
      // Written on A while pub/sub is down: A serves it at once, B cannot hear of it yet.
      assert.equal((await request(a, 'POST', `${flagsPath(project)}/${flag.id}/toggle`, { token: user.token })).status, 200);
      assert.equal((await served(a, project, 'resilient'))?.enabled, true);
    } finally {
      await redis.start();
    }
    // Reconnected, B's subscriber checks revisions and drops what changed meanwhile.
    await eventually(async () => (await served(b, project, 'resilient'))?.enabled === true, 'the toggle made during the outage on B', 20_000);
    const ip = clientIp();
    await eventually(async () => {
      let status = 200;
      for (let i = 0; i < 201 && status === 200; i++) {
        status = (await request(a, 'POST', '/sdk/v1/evaluate', { sdkKey: project.sdk_key, headers: ip, body: { environment: 'production' } })).status;
      }
      return status === 429;
    }, 'rate limiting back with Redis', 20_000);
    await request(a, 'POST', `${flagsPath(project)}/${flag.id}/toggle`, { token: user.token });
    await eventually(async () => (await served(b, project, 'resilient'))?.enabled === false, 'toggle on B through pub/sub again');
  });

  test('streams: a toggle on A reaches a stream on B by pub/sub, by the revision check while Redis is stopped, by pub/sub again after', async () => {
    // B hears of changes through Redis only (no periodic check); C also checks revisions every 500 ms.
    const c = await startServer({ REDIS_URL: redis.url, RATE_LIMIT_EVALUATE: '200' }, { database, revisionCheckIntervalMs: 500 });
    // The streams are ended by their servers (C's below, B's when the suite closes it): aborting
    // them from this side left B's close waiting about 75 s for the connection.
    try {
      const project = await newProject(a, user);
      const flag = await newFlag(a, user, project, { key: 'streamed', enabled: false });
      const open = async (server: TestServer) => {
        const stream = await openStream(`${server.url}/sdk/v1/stream?environment=production`, { 'x-sdk-key': project.sdk_key, ...clientIp() });
        assert.equal(stream.status, 200);
        return stream;
      };
      const onB = await open(b);
      const onC = await open(c);
      const toggle = async () => assert.equal((await request(a, 'POST', `${flagsPath(project)}/${flag.id}/toggle`, { token: user.token })).status, 200);
      /** The stream got a refetchEvaluation message at or after the given count of messages. */
      const told = (stream: TestStream, before: number) => async () => stream.messages.slice(before).some((message) => message.data.includes('refetchEvaluation'));

      let seen = [onB.messages.length, onC.messages.length];
      await toggle();
      await eventually(told(onB, seen[0]!), 'the toggle on the stream on B (pub/sub)');
      await eventually(told(onC, seen[1]!), 'the toggle on the stream on C');

      await redis.stop();
      try {
        seen = [onB.messages.length, onC.messages.length];
        await toggle();
        // Without Redis, C's revision check finds the new revision and tells its stream.
        await eventually(told(onC, seen[1]!), 'the toggle on the stream on C without Redis (revision check)');
      } finally {
        await redis.start();
      }
      // B, back on Redis, checks revisions once and tells its stream of the change it missed.
      await eventually(told(onB, seen[0]!), 'the toggle made during the outage on the stream on B', 20_000);
      seen = [onB.messages.length, onC.messages.length];
      await toggle();
      await eventually(told(onB, seen[0]!), 'a toggle on the stream on B through pub/sub again');
      await eventually(told(onC, seen[1]!), 'and on C');
    } finally {
      await c.close();
    }
  });
});

describe('two instances on PostgreSQL without Redis', { skip: onPostgres ? false : 'runs in the PostgreSQL pass of npm test' }, () => {
  let database: TestDatabase;
  let a: TestServer;
  let b: TestServer;
  before(async () => {
    database = await createTestDatabase();
    // No periodic revision check on A and B: what B shows came through LISTEN/NOTIFY.
    a = await startServer({}, { database, revisionCheckIntervalMs: 3_600_000 });
    b = await startServer({}, { database, revisionCheckIntervalMs: 3_600_000 });
  });
  after(async () => {
    await a?.close();
    await b?.close();
    await database?.drop();
  });

  test("an import applied on A reaches B's evaluate (docs/flags-as-code.md)", async () => {
    const owner = await newUser(a, 'importer');
    const project = await newProject(a, owner, 'Imported');
    assert.deepEqual((await evaluate(b, project.sdk_key, 'production')).body.flags, {}, 'B has compiled the project before the import');
    const document = { guidon: 1, environments: [{ key: 'production', name: 'Production' }], flags: [{ key: 'imported', name: 'Imported', environments: { production: { enabled: true } } }] };
    const applied = await request(a, 'POST', `/api/projects/${project.id}/import?dry_run=false`, { token: owner.token, body: document });
    assert.equal(applied.status, 200, applied.text);
    await eventually(async () => (await evaluate(b, project.sdk_key, 'production')).body.flags?.imported?.enabled === true, 'the imported flag on B');
  });

  test('LISTEN/NOTIFY carries a toggle and a key rotation from A to B', async () => {
    const user = await newUser(a);
    const project = await newProject(a, user);
    const flag = await newFlag(a, user, project, { key: 'notified', enabled: false });
    const servedByB = async () => (await evaluate(b, project.sdk_key, 'production')).body.flags?.notified?.enabled;
    assert.equal(await servedByB(), false);
    await request(a, 'POST', `${flagsPath(project)}/${flag.id}/toggle`, { token: user.token });
    await eventually(async () => (await servedByB()) === true, 'toggle on B');
    await request(a, 'POST', `/api/projects/${project.id}/regenerate-key`, { token: user.token });
    await eventually(async () => (await evaluate(b, project.sdk_key, 'production')).status === 401, 'old key rejected on B');
  });

  test('the revision check catches a change whose notification never came', async () => {
    const c = await startServer({}, { database, revisionCheckIntervalMs: 200 });
    try {
      const user = await newUser(a);
      const project = await newProject(a, user);
      const flag = await newFlag(a, user, project, { key: 'quiet', enabled: false });
      assert.equal((await evaluate(c, project.sdk_key, 'production')).body.flags.quiet?.enabled, false);
      // Written straight to the database, as if the notification were lost: only the revision moves.
      await a.database.db.updateTable('flags').set({ enabled: true }).where('id', '=', flag.id).execute();
      await a.database.db.updateTable('projects').set((eb) => ({ revision: eb('revision', '+', 1) })).where('id', '=', project.id).execute();
      await eventually(async () => (await evaluate(c, project.sdk_key, 'production')).body.flags.quiet?.enabled === true, 'C reloads after its revision check');
    } finally {
      await c.close();
    }
  });
});
