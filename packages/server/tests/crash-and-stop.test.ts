/**
 * The server process (dist/src/main.js) killed and stopped for real, on SQLite and PostgreSQL.
 *
 * Crash: writers create, toggle and delete flags and add rules while the server is SIGKILLed at
 * random moments (CRASH_KILLS, default 20) and restarted on the same database. Every write that got
 * a 2xx is there afterwards (a write with no answer may or may not be), and the database is
 * consistent: integrity and foreign keys, no orphan rows. The project has a webhook to a receiver
 * in this test: after the last restart, every audit event stored (so every one of an acknowledged
 * write) reaches it at least once, deliveries pending or in flight at a kill included.
 *
 * Interrupted webhook attempts (docs/api.md, Webhooks): a send cut short by a stop or a kill is logged as
 * `interrupted` when its delivery is picked up again, and counts as one of the tries.
 *
 * Graceful stop: SIGTERM under evaluate load with streams open. Every request gets an answer (a
 * connection refused once the listener closed is the only other outcome: those were never
 * received), every stream is ended by the server with an SSE `retry:` hint, the process exits 0,
 * and every evaluate answered 200 is in the history. A readiness probe polling throughout sees
 * 200 `ready`, then 503 `stopping` while the server still accepts, then a failed connection.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, request as httpRequest, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import BetterSqlite3 from 'better-sqlite3';
import pg from 'pg';
import { eventually, freePort, request, type TestProject } from './harness.js';
import { createTestDatabase, onPostgres, type TestDatabase } from './test-database.js';
import { startChildServer, type ChildServer } from './child-server.js';
import { openStream } from './stream-client.js';
import { Receiver as HookReceiver } from './webhook-receiver.js';
import { openDatabase } from '../src/db/database.js';
import { nowIso } from '../src/db/values.js';

const KILLS = Number(process.env.CRASH_KILLS ?? 20);
const WRITERS = 4;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A fixed random sequence, so a failing run can be replayed (CRASH_SEED). */
function randomSource(seed: number) {
  let state = seed >>> 0 || 1;
  return () => {
    state ^= state << 13;
    state ^= state >>> 17;
    state ^= state << 5;
    return (state >>> 0) / 2 ** 32;
  };
}

/** A webhook receiver: the ids of the audit events delivered to it (each may come more than once). */
class Receiver {
  readonly eventIds = new Set<string>();
  deliveries = 0;
  private readonly server: Server = createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (chunk: string) => (body += chunk));
    req.on('end', () => {
      this.deliveries++;
      this.eventIds.add((JSON.parse(body) as { id: string }).id);
      res.writeHead(204).end();
    });
  });
  url = '';
  async start(): Promise<this> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/hook`;
    return this;
  }
  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise((resolve) => this.server.close(resolve));
  }
}

/** Every audit event of a project, through the API (newest first). */
async function auditEvents(server: { url: string }, token: string, projectId: string): Promise<{ id: string; action: string; resource_id: string }[]> {
  const events = [];
  let cursor: string | null = null;
  do {
    const page: { status: number; body: { items: { id: string; action: string; resource_id: string }[]; next_cursor: string | null } } = await request(server, 'GET', `/api/projects/${projectId}/audit?limit=500${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`, { token });
    assert.equal(page.status, 200);
    events.push(...page.body.items);
    cursor = page.body.next_cursor;
  } while (cursor);
  return events;
}

/** What the last acknowledged write left of a flag; uncertain once a later write had no answer. */
interface FlagEntry {
  key: string;
  enabled: boolean;
  deleted: boolean;
  uncertain: boolean;
  /** A writer is changing it: no other picks it meanwhile. */
  busy: boolean;
  rules: string[];
}

interface Ledger {
  flags: Map<string, FlagEntry>;
  acknowledged: number;
  /** "action resource_id" of every acknowledged write, with how many times: each has its audit event. */
  audited: Map<string, number>;
  unanswered: number;
}

async function setup(url: string): Promise<{ token: string; project: TestProject }> {
  const server = { url };
  const email = `crash-${Date.now()}@example.com`;
  assert.equal((await request(server, 'POST', '/auth/register', { body: { email, password: 'correct horse battery' } })).status, 201);
  const token: string = (await request(server, 'POST', '/auth/login', { body: { email, password: 'correct horse battery' } })).body.token;
  const created = await request(server, 'POST', '/api/projects', { token, body: { name: 'crash' } });
  const environments = await request(server, 'GET', `/api/projects/${created.body.id}/environments`, { token });
  const id = (key: string) => environments.body.find((env: { key: string }) => env.key === key).id as string;
  return { token, project: { id: created.body.id, sdk_key: created.body.sdk_key, production: id('production'), staging: id('staging') } };
}

/** Opens the database directly (no server) for the consistency checks. */
async function consistencyProblems(database: TestDatabase): Promise<string[]> {
  const orphans: [string, string][] = [
    ['environments without a project', 'select count(*) as n from environments e left join projects p on p.id = e.project_id where p.id is null'],
    ['flags without an environment', 'select count(*) as n from flags f left join environments e on e.id = f.environment_id where e.id is null'],
    ['rules without a flag', 'select count(*) as n from rules r left join flags f on f.id = r.flag_id where f.id is null'],
    ['projects without an owner', 'select count(*) as n from projects p left join users u on u.id = p.owner_id where u.id is null'],
  ];
  const problems: string[] = [];
  if (database.config.kind === 'sqlite') {
    const raw = new BetterSqlite3(database.config.path, { readonly: true });
    try {
      const integrity = raw.pragma('integrity_check', { simple: true });
      if (integrity !== 'ok') problems.push(`integrity_check: ${String(integrity)}`);
      const broken = raw.pragma('foreign_key_check') as unknown[];
      if (broken.length > 0) problems.push(`foreign_key_check: ${JSON.stringify(broken.slice(0, 5))}`);
      for (const [what, query] of orphans) {
        const { n } = raw.prepare(query).get() as { n: number };
        if (n > 0) problems.push(`${n} ${what}`);
      }
    } finally {
      raw.close();
    }
  } else {
    const client = new pg.Client({ connectionString: database.url });
    await client.connect();
    try {
      for (const [what, query] of orphans) {
        const n = Number((await client.query(query)).rows[0].n);
        if (n > 0) problems.push(`${n} ${what}`);
      }
      const invalid = await client.query(`select conname from pg_constraint where contype = 'f' and not convalidated`);
      if (invalid.rowCount) problems.push(`foreign keys not validated: ${invalid.rows.map((row) => row.conname).join(', ')}`);
    } finally {
      await client.end();
    }
  }
  return problems;
}

describe(`crash: SIGKILL under writes, ${KILLS} times (${onPostgres ? 'PostgreSQL' : 'SQLite'})`, () => {
  let database: TestDatabase;
  let server: ChildServer | undefined;
  let port: number;
  let receiver: Receiver;

  before(async () => {
    database = await createTestDatabase();
    port = await freePort();
    receiver = await new Receiver().start();
  });
  after(async () => {
    await server?.kill('SIGKILL');
    await receiver?.close();
    await database?.drop();
  });

  test('every acknowledged write survives; the database stays consistent', { timeout: 10 * 60_000 }, async () => {
    const seed = Number(process.env.CRASH_SEED ?? Date.now() % 1_000_000);
    console.log(`crash: CRASH_SEED=${seed}`);
    const random = randomSource(seed);
    const env = { DATABASE_URL: database.url, WEBHOOK_ALLOW_PRIVATE: 'true' };
    // A fast webhook schedule (test-only build options, so the server-process.js entry): a send cut
    // by a kill comes back when its lease ends (2 × timeout + 1 s).
    const options = { webhooks: { pollIntervalMs: 100, timeoutMs: 1000, retryDelaysMs: [100, 200, 500, 1000] } };
    const start = () => startChildServer(port, env, 30_000, options);
    server = await start();
    const { token, project } = await setup(server.url);
    const base = { url: server.url };
    const hook = await request(base, 'POST', `/api/projects/${project.id}/webhooks`, { token, body: { url: receiver.url, events: ['*'] } });
    assert.equal(hook.status, 201, hook.text);
    const flagsPath = `/api/projects/${project.id}/environments/${project.production}/flags`;
    const ledger: Ledger = { flags: new Map(), acknowledged: 0, unanswered: 0, audited: new Map() };
    const acknowledge = (action: string, resourceId: string) => {
      ledger.acknowledged++;
      const key = `${action} ${resourceId}`;
      ledger.audited.set(key, (ledger.audited.get(key) ?? 0) + 1);
    };
    let running = true;

    const fiveHundreds: string[] = [];
    /** One write; null when it got no answer (the server died under it, or was down). */
    const write = async (method: string, path: string, body?: unknown) => {
      const answer = await request(base, method, path, { token, body }).catch(() => null);
      if (answer === null) {
        ledger.unanswered++;
        await sleep(100); // down: do not take the CPU from the restarting server
      } else if (answer.status >= 500) fiveHundreds.push(`${method} ${path}: ${answer.status} ${answer.text}`);
      return answer;
    };

    let nextKey = 0;
    const changeFlag = async (id: string, flag: FlagEntry, choice: number) => {
      if (choice < 0.7) {
        const answer = await write('POST', `${flagsPath}/${id}/toggle`);
        if (answer === null) flag.uncertain = true;
        else if (answer.status === 200) {
          acknowledge('flag.toggled', id);
          flag.enabled = answer.body.enabled;
        }
      } else if (choice < 0.9) {
        const answer = await write('POST', `${flagsPath}/${id}/rules`, { rule_type: 'user_id', rule_value: `u-${nextKey}` });
        if (answer?.status === 201) {
          acknowledge('rule.created', answer.body.id);
          flag.rules.push(answer.body.id);
        }
      } else {
        const answer = await write('DELETE', `${flagsPath}/${id}`);
        if (answer === null) flag.uncertain = true;
        else if (answer.status === 204) {
          acknowledge('flag.deleted', id);
          flag.deleted = true;
        }
      }
    };
    const writer = async () => {
      while (running) {
        const choice = random();
        // One writer at a time per flag: the order of its answers is then the order of its writes.
        const live = [...ledger.flags.entries()].filter(([, flag]) => !flag.deleted && !flag.uncertain && !flag.busy);
        if (choice < 0.35 || live.length === 0) {
          const key = `flag-${++nextKey}`;
          const answer = await write('POST', flagsPath, { key, name: key, enabled: false });
          if (answer?.status === 201) {
            acknowledge('flag.created', answer.body.id);
            ledger.flags.set(answer.body.id, { key, enabled: false, deleted: false, uncertain: false, busy: false, rules: [] });
          }
          continue;
        }
        const [id, flag] = live[Math.floor(random() * live.length)]!;
        flag.busy = true;
        await changeFlag(id, flag, choice);
        flag.busy = false;
      }
    };

    const writers = Array.from({ length: WRITERS }, writer);
    for (let kill = 1; kill <= KILLS; kill++) {
      const acknowledgedBefore = ledger.acknowledged;
      await sleep(150 + random() * 600);
      // On a slow machine the restart can take the whole pause: kill only a server that took writes.
      await eventually(() => ledger.acknowledged > acknowledgedBefore + 5, 'writes on the restarted server', 30_000);
      await server.kill('SIGKILL');
      server = await start();
    }
    await sleep(300);
    running = false;
    await Promise.all(writers);
    console.log(`crash: ${KILLS} kills, ${ledger.acknowledged} acknowledged writes, ${ledger.unanswered} unanswered, ${ledger.flags.size} flags`);
    assert.ok(ledger.acknowledged > KILLS * 5, 'writes ran between the kills');
    assert.deepEqual(fiveHundreds, [], 'no 5xx while the server was up');

    // Every acknowledged write is there.
    const stored = await request(base, 'GET', flagsPath, { token });
    assert.equal(stored.status, 200);
    const byId = new Map((stored.body as { id: string; key: string; enabled: boolean }[]).map((flag) => [flag.id, flag]));
    for (const [id, flag] of ledger.flags) {
      if (flag.deleted) {
        assert.ok(!byId.has(id), `flag ${flag.key} was deleted (204) and is back`);
        continue;
      }
      if (flag.uncertain) continue; // a toggle or delete without an answer: either outcome is right
      assert.ok(byId.has(id), `flag ${flag.key} was created (201) and is gone`);
      assert.equal(byId.get(id)!.enabled, flag.enabled, `flag ${flag.key}: the last acknowledged toggle`);
      const rules = await request(base, 'GET', `${flagsPath}/${id}/rules`, { token });
      const ruleIds = new Set((rules.body as { id: string }[]).map((rule) => rule.id));
      for (const ruleId of flag.rules) assert.ok(ruleIds.has(ruleId), `rule ${ruleId} of ${flag.key} was created (201) and is gone`);
    }

    // Every acknowledged write has its audit event; every audit event of a write reaches the
    // webhook, those pending or in flight at a kill sent by a later process.
    const events = (await auditEvents(base, token, project.id)).filter((event) => /^(flag|rule)\./.test(event.action));
    const audited = new Map<string, number>();
    for (const event of events) audited.set(`${event.action} ${event.resource_id}`, (audited.get(`${event.action} ${event.resource_id}`) ?? 0) + 1);
    for (const [key, count] of ledger.audited) assert.ok((audited.get(key) ?? 0) >= count, `audit events for ${key}: ${audited.get(key) ?? 0}, acknowledged ${count}`);
    const undelivered = () => events.filter((event) => !receiver.eventIds.has(event.id));
    const deadline = Date.now() + 60_000;
    while (undelivered().length > 0 && Date.now() < deadline) await sleep(100);
    console.log(`crash: ${events.length} audit events of writes, ${receiver.eventIds.size} delivered (${receiver.deliveries} deliveries)`);
    assert.deepEqual(undelivered().map((event) => `${event.action} ${event.resource_id}`), [], 'audit events never delivered to the webhook');
    await server.kill('SIGTERM');
    server = undefined;
    assert.deepEqual(await consistencyProblems(database), []);
  });
});

/** POST /sdk/v1/evaluate on a connection of its own; resolves with the status, or the connection error's code. */
function evaluateOnce(url: string, sdkKey: string, userId: string): Promise<number | string> {
  return new Promise((resolve) => {
    const target = new URL(url);
    const body = JSON.stringify({ environment: 'production', context: { user_id: userId } });
    const req = httpRequest(
      { host: target.hostname, port: target.port, method: 'POST', path: '/sdk/v1/evaluate', agent: false, headers: { 'content-type': 'application/json', 'x-sdk-key': sdkKey, 'content-length': Buffer.byteLength(body), connection: 'close' } },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
        res.on('error', (error: NodeJS.ErrnoException) => resolve(error.code ?? error.message));
      },
    );
    req.on('error', (error: NodeJS.ErrnoException) => resolve(error.code ?? error.message));
    req.end(body);
  });
}

/** GET /ready on a connection of its own: "<status> <body.status>", or the connection error's code. */
function readyOnce(url: string): Promise<string> {
  return new Promise((resolve) => {
    const req = httpRequest(`${url}/ready`, { agent: false }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (body += chunk));
      res.on('end', () => resolve(`${res.statusCode} ${(JSON.parse(body) as { status: string }).status}`));
      res.on('error', (error: NodeJS.ErrnoException) => resolve(error.code ?? error.message));
    });
    req.on('error', (error: NodeJS.ErrnoException) => resolve(error.code ?? error.message));
    req.end();
  });
}

describe(`graceful stop: SIGTERM under evaluate load (${onPostgres ? 'PostgreSQL' : 'SQLite'})`, () => {
  let database: TestDatabase;
  let server: ChildServer | undefined;

  before(async () => {
    database = await createTestDatabase();
  });
  after(async () => {
    await server?.kill('SIGKILL');
    await database?.drop();
  });

  test('every request is answered, the process exits 0, every 200 is in the history', { timeout: 5 * 60_000 }, async () => {
    const port = await freePort();
    const env = { DATABASE_URL: database.url };
    server = await startChildServer(port, env);
    const { token, project } = await setup(server.url);
    const flag = await request(server, 'POST', `/api/projects/${project.id}/environments/${project.production}/flags`, { token, body: { key: 'f', name: 'f', enabled: true } });
    assert.equal(flag.status, 201);

    const streams = await Promise.all(
      Array.from({ length: 5 }, () => openStream(`${server!.url}/sdk/v1/stream?environment=production`, { 'x-sdk-key': project.sdk_key })),
    );
    assert.deepEqual(streams.map((stream) => stream.status), [200, 200, 200, 200, 200]);
    const outcomes = new Map<number | string, number>();
    let stopping = false;
    let n = 0;
    // In flight at SIGTERM: sent before it (a load balancer sends no new requests to a stopping
    // instance; one that does gets 503 or a refused connection, which this test does not judge).
    const client = async () => {
      while (!stopping) {
        const outcome = await evaluateOnce(server!.url, project.sdk_key, `user-${++n}`);
        outcomes.set(outcome, (outcomes.get(outcome) ?? 0) + 1);
      }
    };
    const clients = Array.from({ length: 16 }, client);
    // What a load balancer's readiness probe sees, in order, until its connection fails.
    const probes: string[] = [];
    const probing = (async () => {
      for (;;) {
        const probe = await readyOnce(server!.url);
        if (probes.at(-1) !== probe) probes.push(probe);
        if (!/^\d/.test(probe)) return; // refused, or reset: accepted as the listener closed, and cut with the idle ones
      }
    })();
    // Stopped once enough were answered, however slow the machine is today.
    await eventually(() => (outcomes.get(200) ?? 0) > 100, 'evaluate under load', 30_000);
    stopping = true;
    const exit = server.kill('SIGTERM');
    await Promise.all(clients);
    const { code, signal } = await exit;
    await probing;
    console.log(`graceful stop: outcomes ${JSON.stringify(Object.fromEntries(outcomes))}; /ready ${probes.join(' → ')}; exit code ${code}`);
    assert.equal(code, 0, `exit code (signal ${signal}):\n${server.output.join('')}`);
    assert.deepEqual([...outcomes.keys()], [200], 'every request in flight was answered 200');
    assert.deepEqual(probes.slice(0, -1), ['200 ready', '503 stopping'], '/ready says 503 stopping from SIGTERM on, before the listener closes');
    assert.match(probes.at(-1)!, /^ECONN(REFUSED|RESET)$/);
    // Each stream was ended by the server, its last field a retry hint (a killed process sends none).
    await Promise.all(streams.map((stream) => stream.ended));
    for (let i = 0; i < 50 && !streams.every((stream) => /retry: \d+\n\n$/.test(stream.raw)); i++) await sleep(20); // the raw copy may trail the parser
    for (const stream of streams) {
      assert.match(stream.raw, /^retry: 1000\n\n/, 'the hint sent when the stream opened');
      assert.match(stream.raw.slice('retry: 1000\n\n'.length), /retry: ([1-2]\d{3})\n\n$/, 'the stream ends with a retry hint of 1–3 s');
    }
    assert.equal((await evaluateOnce(server.url, project.sdk_key, 'late')), 'ECONNREFUSED', 'a stopped server refuses at once');
    const answered = outcomes.get(200) ?? 0;
    assert.ok(answered > 100, 'evaluate ran under load');

    // Every 200 is in the history, read back through the API of a new process.
    server = await startChildServer(port, env);
    let recorded = 0;
    let cursor: string | null = null;
    do {
      const page: { body: { items: unknown[]; next_cursor: string | null } } = await request(server, 'GET', `/api/projects/${project.id}/evaluations?limit=500${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`, { token });
      recorded += page.body.items.length;
      cursor = page.body.next_cursor;
    } while (cursor);
    assert.equal(recorded, answered, 'one history item per evaluate answered 200 (one flag)');
  });
});

describe(`webhooks: an attempt cut short by a stop or a crash (${onPostgres ? 'PostgreSQL' : 'SQLite'})`, () => {
  let database: TestDatabase;
  let server: ChildServer | undefined;
  let receiver: HookReceiver;

  before(async () => {
    database = await createTestDatabase();
    receiver = await new HookReceiver().start();
  });
  after(async () => {
    await server?.kill('SIGKILL');
    await receiver?.close();
    await database?.drop();
  });

  test('is logged as interrupted when its delivery is picked up again, and counts as one of the tries', { timeout: 5 * 60_000 }, async () => {
    const port = await freePort();
    // A send never times out here (30 s): it ends only by the stop or the kill.
    const options = { webhooks: { pollIntervalMs: 50, timeoutMs: 30_000, retryDelaysMs: [50, 50, 50, 50] } };
    const start = () => startChildServer(port, { DATABASE_URL: database.url, WEBHOOK_ALLOW_PRIVATE: 'true' }, 30_000, options);
    server = await start();
    const { token, project } = await setup(server.url);
    const hook = await request(server, 'POST', `/api/projects/${project.id}/webhooks`, { token, body: { url: receiver.url, events: ['flag.created'] } });
    assert.equal(hook.status, 201, hook.text);
    const keyOf = (body: string) => (JSON.parse(body) as { after: { key: string } }).after.key;
    const sentFor = (key: string) => receiver.requests.filter((received) => keyOf(received.body) === key).length;
    let hanging = true;
    // "doomed" fails its first 4 tries and hangs on the 5th, its last.
    receiver.answer = (received) => (keyOf(received.body) === 'doomed' ? (sentFor('doomed') < 5 ? 500 : 'hang') : hanging ? 'hang' : 204);
    const attemptsOf = async (key: string) => {
      const log = await request(server!, 'GET', `/api/projects/${project.id}/webhooks/${hook.body.id}/deliveries?limit=500`, { token });
      const flags = await request(server!, 'GET', `/api/projects/${project.id}/environments/${project.production}/flags`, { token });
      const audit = await request(server!, 'GET', `/api/projects/${project.id}/audit?resource_type=flag`, { token });
      const flagId = flags.body.find((flag: { key: string }) => flag.key === key).id;
      const eventId = audit.body.items.find((event: { resource_id: string }) => event.resource_id === flagId).id;
      return (log.body.items as { event_id: string; attempt: number; status_code: number | null; error: string | null }[])
        .filter((item) => item.event_id === eventId)
        .map((item) => `${item.attempt} ${item.status_code ?? '-'} ${item.error ?? ''}`.trim())
        .reverse();
    };
    /** The process is gone: its claims' leases end now rather than in 61 s (the wait itself is the sender's business). */
    const endLeases = async () => {
      const direct = await openDatabase(database.config, { migrate: false, poolSize: 1 });
      await direct.db.updateTable('webhook_deliveries').set({ next_attempt_at: nowIso() }).where('status', '=', 'pending').execute();
      await direct.close();
    };
    const createFlag = async (key: string) => assert.equal((await request(server!, 'POST', `/api/projects/${project.id}/environments/${project.production}/flags`, { token, body: { key, name: key } })).status, 201);

    for (const [key, signal] of [['stopped', 'SIGTERM'], ['killed', 'SIGKILL']] as const) {
      hanging = true;
      await createFlag(key);
      await eventually(() => sentFor(key) === 1, `the first attempt for ${key} in flight`);
      const { code } = await server.kill(signal);
      if (signal === 'SIGTERM') assert.equal(code, 0, 'a stop, not a crash');
      hanging = false;
      await endLeases();
      server = await start();
      await eventually(async () => (await attemptsOf(key)).length === 2, `the delivery of ${key} picked up again`);
      assert.deepEqual(await attemptsOf(key), ['1 - interrupted', '2 204'], `${key}: the cut attempt is logged, and the next is the second`);
    }

    // Cut short on its last try: logged, and given up (no sixth send).
    await createFlag('doomed');
    await eventually(() => sentFor('doomed') === 5, 'the fifth and last try in flight');
    await server.kill('SIGKILL');
    await endLeases();
    server = await start();
    await eventually(async () => (await attemptsOf('doomed')).length === 5, 'the delivery of doomed picked up again');
    assert.deepEqual(await attemptsOf('doomed'), ['1 500 HTTP 500', '2 500 HTTP 500', '3 500 HTTP 500', '4 500 HTTP 500', '5 - interrupted']);
    const direct = await openDatabase(database.config, { migrate: false, poolSize: 1 });
    const pending = await direct.db.selectFrom('webhook_deliveries').select('id').where('status', '=', 'pending').execute();
    await direct.close();
    assert.deepEqual(pending, [], 'out of tries: failed for good, in the same write that logged it');
    assert.equal(sentFor('doomed'), 5);
  });
});
