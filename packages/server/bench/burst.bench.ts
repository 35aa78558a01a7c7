/**
 * `node packages/server/dist/bench/burst.bench.js`: ten thousand local-evaluation clients, one
 * change. Each client does on the wire what `@guidon/sdk` in local mode does: fetches the ruleset
 * (GET /sdk/v1/ruleset, gzip, keeps its ETag), holds GET /sdk/v1/stream with an API token, and on
 * each `refetchRuleset` does nothing when the event names the ETag it holds, takes the event's
 * patch when it starts from the ETag it holds (docs/local-evaluation.md: it then holds the new
 * ruleset once the event has arrived and is parsed), and otherwise fetches the ruleset again with
 * If-None-Match on a new connection (the SDK's keep-alive connection has timed out by then).
 *
 * BENCH_PATH says how the clients come to hold the change:
 * - `patch` (the default): as above.
 * - `fetch`: local clients that must fetch: on each `refetchRuleset` they ignore any patch in it and
 *   fetch the ruleset again (If-None-Match, a new connection), as an SDK older than the patch does,
 *   or every SDK after a change too big for a patch. A client holds it when its 200 has all arrived.
 * - `remote`: remote-evaluation clients (browsers, mobile apps): each evaluates once (POST
 *   /sdk/v1/evaluate with X-SDK-Key, `{"environment":"production","context":{"user_id":<its
 *   own>}}`), holds GET /sdk/v1/stream with the project's SDK key and, as the SDK, its context in
 *   X-Guidon-Context. On each `refetchEvaluation` it takes the answer the message carries, or (a
 *   server that sends none, as builds before it) evaluates again on a new connection (no
 *   If-None-Match: the answer is read). It holds the change when the answer shows the toggled
 *   flag's new `enabled`.
 * Every client that fetches does so at a uniform moment within the message's `spread`, as the SDK.
 * The figures are the same for every path ("by the message" is 0 but for a patch or an answer);
 * the header names the path. The listen queue's overflows are the machine's (TcpExt ListenOverflows).
 *
 * The clients are BENCH_CLIENT_PROCESSES (4) processes of this file, each from its own loopback
 * source addresses (one per client: 127.<process>.x.y), with raw sockets and no parsing beyond
 * status, headers and length (and the events' JSON, and with `remote` the evaluate answers'), so that
 * the machine's CPU goes to the server. A local client holds the new ruleset when the last byte of
 * its 200 has arrived, or its patch is parsed. The server is `node main.js` on a fresh
 * SQLite file (BENCH_DATABASE=postgres: two instances on one PostgreSQL database behind nginx,
 * which the bench installs with apt-get when missing), seeded with BENCH_FLAGS (100) flags, rate
 * limits off, log level warn. The bench raises its children's open-file limit (ulimit -n) to the
 * hard limit; the server's defaults are not changed.
 *
 * Per toggle (BENCH_TOGGLES, 3, after a warm-up one): the time from just before the toggle request
 * to each client holding the change (p50, p99, max, how many within 5 s), and errors. Beside
 * it, a paced load of POST /sdk/v1/evaluate (BENCH_EVALUATE_RPS, 4,000 a second, from one more
 * process): its p99 while quiet (streams open, BENCH_QUIET_SECONDS 16 s, so a heartbeat falls in
 * it) and over the requests sent within 2 s after each toggle. The server's RSS before and after
 * opening the streams gives its memory per stream. BENCH_BASE_MAIN_JS=<another build's main.js>
 * runs that build first, the same way, in the same run. BENCH_CLIENT_NICE=19 runs the clients
 * at the lowest priority: how the server does when 10,000 clients do not take its CPUs.
 * BENCH_EVALUATE_DIRECT=1 (PostgreSQL) sends the evaluate load to the first instance, not nginx.
 */
import { fork, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { sql } from 'kysely';
import { loadConfig } from '../src/config.js';
import { openDatabase } from '../src/db/database.js';
import { benchProject, call, freePort, rssMb, seed, waitForHealth } from './bench-seed.js';
import { busyBetween, cpuJiffies, listenOverflows, loadAverage, median, processCpuSeconds } from './machine.js';

const CLIENTS = Number(process.env.BENCH_CLIENTS ?? 10_000);
const PROCESSES = Number(process.env.BENCH_CLIENT_PROCESSES ?? 4);
/** The client processes' nice value: 19 leaves the CPUs to the server first, as clients on other machines would. */
const CLIENT_NICE = Number(process.env.BENCH_CLIENT_NICE ?? 0);
const FLAGS = Number(process.env.BENCH_FLAGS ?? 100);
const TOGGLES = Number(process.env.BENCH_TOGGLES ?? 3);
const EVALUATE_RPS = Number(process.env.BENCH_EVALUATE_RPS ?? 4000);
const QUIET_SECONDS = Number(process.env.BENCH_QUIET_SECONDS ?? 16);
/** BENCH_PATH: how a client comes to hold the change, `patch` (the default), `fetch` or `remote` (the header comment). */
const PATHS = ['patch', 'fetch', 'remote'] as const;
type Path = (typeof PATHS)[number];
const PATH = (process.env.BENCH_PATH ?? 'patch') as Path;
if (!PATHS.includes(PATH)) throw new Error(`BENCH_PATH must be one of ${PATHS.join(', ')}, not ${PATH}`);
const ON_POSTGRES = process.env.BENCH_DATABASE === 'postgres';
/** BENCH_EVALUATE_DIRECT=1: on PostgreSQL, the paced evaluate load goes to the first instance, not through nginx (to see what the proxy adds). */
const EVALUATE_DIRECT = ON_POSTGRES && process.env.BENCH_EVALUATE_DIRECT === '1';
const POSTGRES_URL = process.env.GUIDON_TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const here = fileURLToPath(import.meta.url);
const now = () => performance.timeOrigin + performance.now();

// ---- the client processes ----------------------------------------------------------------

interface Target {
  host: string;
  port: number;
  token: string;
  sdkKey: string;
  /** The toggled flag's key: a remote client reads its `enabled` in each evaluate answer. */
  flagKey: string;
}

type ToClients = { type: 'open'; target: Target; count: number; addressBase: number } | { type: 'arm' } | { type: 'report' } | { type: 'close' };
type FromClients = { type: 'opened'; errors: number } | { type: 'report'; arrivals: number[]; skipped: number; unchanged: number; patched: number; inMessage: number; errors: string[]; spreadMs: number };

/** One HTTP/1.1 exchange on a new connection: status, headers (lower-case) and the body (by its length), once it has all arrived. */
function exchange(target: Target, localAddress: string, head: string): Promise<{ status: number; headers: Map<string, string>; body: Buffer }> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: target.host, port: target.port, localAddress });
    let buffer: Buffer = Buffer.alloc(0);
    let status = 0;
    let headers: Map<string, string> | undefined;
    let needed = -1;
    let bodyStart = 0;
    socket.on('connect', () => socket.write(head));
    socket.on('data', (chunk: Buffer) => {
      buffer = buffer.length === 0 ? chunk : Buffer.concat([buffer, chunk]);
      if (!headers) {
        const end = buffer.indexOf('\r\n\r\n');
        if (end < 0) return;
        const lines = buffer.subarray(0, end).toString('latin1').split('\r\n');
        status = Number(lines[0]!.split(' ')[1]);
        headers = new Map(lines.slice(1).map((line) => [line.slice(0, line.indexOf(':')).toLowerCase(), line.slice(line.indexOf(':') + 1).trim()]));
        bodyStart = end + 4;
        needed = bodyStart + Number(headers.get('content-length') ?? 0);
      }
      if (buffer.length >= needed) {
        socket.destroy();
        resolve({ status, headers, body: buffer.subarray(bodyStart, needed) });
      }
    });
    socket.on('error', reject);
    socket.on('close', () => reject(new Error(`connection closed before the answer (${buffer.length} bytes)`)));
  });
}

/** A client (local mode, or remote with BENCH_PATH=remote): its ruleset's ETag or the toggled flag's value, its stream, and what it saw since armed. */
class Client {
  etag = '';
  /** BENCH_PATH=remote: the toggled flag's `enabled` in the last evaluate answer. */
  enabled: boolean | undefined;
  armed = false;
  /** The stream's text since the last complete event. */
  private pending = '';

  constructor(
    private readonly target: Target,
    private readonly address: string,
    private readonly seen: { arrivals: number[]; skipped: number; unchanged: number; patched: number; inMessage: number; errors: string[]; spreadMs: number },
  ) {}

  private rulesetHead(etag: string): string {
    return `GET /sdk/v1/ruleset?environment=production HTTP/1.1\r\nhost: ${this.target.host}\r\nauthorization: Bearer ${this.target.token}\r\naccept-encoding: gzip, deflate\r\n${etag ? `if-none-match: ${etag}\r\n` : ''}\r\n`;
  }

  /** What the client starts from: the ruleset (local), or an evaluation (remote). */
  load(): Promise<void> {
    return PATH === 'remote' ? this.evaluate() : this.fetch();
  }

  private evaluateHead(): string {
    const body = `{"environment":"production","context":{"user_id":${JSON.stringify(this.address)}}}`;
    return `POST /sdk/v1/evaluate HTTP/1.1\r\nhost: ${this.target.host}\r\ncontent-type: application/json\r\nx-sdk-key: ${this.target.sdkKey}\r\nx-guidon-answer: kind\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
  }

  /** BENCH_PATH=remote: POST /sdk/v1/evaluate on a new connection; the client holds the change once the answer has all arrived and shows the flag's new `enabled`. */
  async evaluate(): Promise<void> {
    const { status, headers, body } = await exchange(this.target, this.address, this.evaluateHead());
    if (status !== 200) throw new Error(`evaluate answered ${status}`);
    if (!headers.has('content-length') || headers.has('content-encoding')) throw new Error(`evaluate answered without a length, or encoded`);
    this.etag = headers.get('etag') ?? '';
    this.holdAnswer(JSON.parse(body.toString('utf8')));
  }

  /** An evaluate answer, fetched or carried in a message (whole, or its changes: the flag absent is unchanged): the client holds the change once it shows the flag's new `enabled`. */
  private holdAnswer(answer: { flags?: Record<string, { enabled?: unknown }> }, changes = false): void {
    const enabled = changes ? (answer.flags?.[this.target.flagKey]?.enabled ?? this.enabled) : answer.flags?.[this.target.flagKey]?.enabled;
    if (typeof enabled !== 'boolean') throw new Error(`evaluate's answer has no ${this.target.flagKey}`);
    if (enabled === this.enabled) {
      if (this.armed) this.seen.unchanged++;
      return;
    }
    this.enabled = enabled;
    if (this.armed) {
      this.seen.arrivals.push(now());
      this.armed = false;
    }
  }

  async fetch(): Promise<void> {
    const { status, headers } = await exchange(this.target, this.address, this.rulesetHead(this.etag));
    if (status === 304) {
      if (this.armed) this.seen.unchanged++;
      return;
    }
    if (status !== 200) throw new Error(`ruleset answered ${status}`);
    this.etag = headers.get('etag') ?? '';
    if (this.armed) {
      this.seen.arrivals.push(now());
      this.armed = false;
    }
  }

  /**
   * BENCH_PATH=patch, as the SDK: nothing when it names the ETag held; its patch when that starts from
   * the ETag held (the client holds the new ruleset once the message is parsed); else a fetch.
   * BENCH_PATH=fetch, as an SDK older than the patch: a fetch, whatever the message holds.
   */
  private changed(message: { etag: string; patch?: { from: string }; spread?: number }): void {
    if (PATH === 'fetch') {
      this.fetchWithin(message.spread);
      return;
    }
    if (message.etag === this.etag) {
      if (this.armed) this.seen.skipped++;
      return;
    }
    if (message.patch?.from === this.etag) {
      this.etag = message.etag;
      if (this.armed) {
        this.seen.arrivals.push(now());
        this.seen.patched++;
        this.armed = false;
      }
      return;
    }
    this.fetchWithin(message.spread);
  }

  /** As the SDK (transport.ts, spreadDelayMs): a fetch at a uniform moment within the message's spread, at once without one. */
  private fetchWithin(spreadMs: number | undefined): void {
    this.seen.spreadMs = Math.max(this.seen.spreadMs, spreadMs ?? 0);
    const run = () => (PATH === 'remote' ? this.evaluate() : this.fetch()).catch((error: Error) => this.seen.errors.push(error.message));
    if (typeof spreadMs === 'number' && spreadMs > 0) setTimeout(run, Math.random() * spreadMs);
    else void run();
  }

  open(): Promise<void> {
    return new Promise((resolve, reject) => {
      const socket: Socket = connect({ host: this.target.host, port: this.target.port, localAddress: this.address });
      let started = false;
      socket.setEncoding('latin1');
      // Local clients hold the stream with the API token; remote ones with the project's SDK key, as the SDK's remote client.
      // A remote client names its context, as the SDK does, so that messages carry its answer (docs/sdk.md, "The answer in the message").
      const context = encodeURIComponent(JSON.stringify({ user_id: this.address, user_email: null }));
      const credential = PATH === 'remote' ? `x-sdk-key: ${this.target.sdkKey}\r\nx-guidon-answer: kind\r\nx-guidon-context: ${context}` : `authorization: Bearer ${this.target.token}`;
      socket.on('connect', () =>
        socket.write(`GET /sdk/v1/stream?environment=production HTTP/1.1\r\nhost: ${this.target.host}\r\n${credential}\r\naccept: text/event-stream\r\n\r\n`),
      );
      // The answer's bytes since its head, chunked (Transfer-Encoding: chunked): a proxy may split an event across chunks.
      let wire = '';
      let inHead = true;
      socket.on('data', (chunk: string) => {
        if (!started) {
          if (!chunk.startsWith('HTTP/1.1 200')) return reject(new Error(`stream answered ${chunk.slice(0, 12)}`));
          started = true;
          resolve();
        }
        wire += chunk;
        if (inHead) {
          const headEnd = wire.indexOf('\r\n\r\n');
          if (headEnd < 0) return;
          wire = wire.slice(headEnd + 4);
          inHead = false;
        }
        // Each whole chunk's data goes to the event text.
        for (;;) {
          const lineEnd = wire.indexOf('\r\n');
          if (lineEnd < 0) break;
          const size = parseInt(wire.slice(0, lineEnd), 16);
          if (wire.length < lineEnd + 2 + size + 2) break;
          this.pending += wire.slice(lineEnd + 2, lineEnd + 2 + size);
          wire = wire.slice(lineEnd + 2 + size + 2);
        }
        // Whole events only (one may be split between reads); comments and other fields are skipped.
        let end: number;
        while ((end = this.pending.indexOf('\n\n')) >= 0) {
          const event = this.pending.slice(0, end);
          this.pending = this.pending.slice(end + 2);
          const data = /^data: (.*)$/m.exec(event)?.[1];
          if (data === undefined) continue;
          if (PATH === 'remote') {
            if (!data.includes('"refetchEvaluation"')) continue;
            // As the SDK: the answer the message carries for this client's context, else a fetch within the spread.
            let message: { spread?: number; answer?: { flags?: Record<string, { enabled?: unknown }> }; answerChanges?: { flags?: Record<string, { enabled?: unknown }> }; answerFrom?: string; answerEtag?: string };
            try {
              message = JSON.parse(Buffer.from(data, 'latin1').toString('utf8'));
            } catch (error) {
              this.seen.errors.push(`a message that is not JSON: ${(error as Error).message}`);
              continue;
            }
            // The whole answer, or the changes over the one held (as the SDK: only when it holds answerFrom's).
            const changes = message.answerChanges !== undefined && message.answerFrom === this.etag;
            if (message.answer || changes) {
              if (this.armed) this.seen.inMessage++;
              this.etag = message.answerEtag ?? '';
              try {
                this.holdAnswer((message.answer ?? message.answerChanges)!, changes);
              } catch (error) {
                this.seen.errors.push((error as Error).message);
              }
            } else this.fetchWithin(message.spread);
          } else if (data.includes('"refetchRuleset"')) this.changed(JSON.parse(Buffer.from(data, 'latin1').toString('utf8')));
        }
      });
      socket.on('error', (error) => (started ? this.seen.errors.push(`stream: ${error.message}`) : reject(error)));
    });
  }
}

async function runClients(): Promise<void> {
  const seen = { arrivals: [] as number[], skipped: 0, unchanged: 0, patched: 0, inMessage: 0, errors: [] as string[], spreadMs: 0 };
  let clients: Client[] = [];
  process.on('message', async (message: ToClients) => {
    if (message.type === 'open') {
      const { target, count, addressBase } = message;
      clients = Array.from({ length: count }, (_, i) => new Client(target, `127.${addressBase}.${1 + Math.floor(i / 250)}.${1 + (i % 250)}`, seen));
      let errors = 0;
      for (let start = 0; start < count; start += 100) {
        await Promise.all(
          clients.slice(start, start + 100).map((client) =>
            client
              .load()
              .then(() => client.open())
              .catch((error: Error) => {
                errors++;
                seen.errors.push(error.message);
              }),
          ),
        );
      }
      process.send!({ type: 'opened', errors } satisfies FromClients);
    } else if (message.type === 'arm') {
      Object.assign(seen, { arrivals: [], skipped: 0, unchanged: 0, patched: 0, inMessage: 0, errors: [], spreadMs: 0 });
      for (const client of clients) client.armed = true;
    } else if (message.type === 'report') {
      process.send!({ type: 'report', ...seen } satisfies FromClients);
    } else process.exit(0);
  });
}

// ---- the paced evaluate load ---------------------------------------------------------------

/** BENCH_EVALUATE_RPS over 50 keep-alive connections, each sending at fixed intervals; reports [sent at, latency ms] per answer. */
async function runLoad(target: Target, seconds: number): Promise<void> {
  const connections = 50;
  const intervalMs = (1000 * connections) / EVALUATE_RPS;
  const requests = Array.from({ length: 1000 }, (_, i) => {
    const body = JSON.stringify({ environment: 'production', context: { user_id: `user-${i}`, user_email: `user-${i}@example.com` } });
    return `POST /sdk/v1/evaluate HTTP/1.1\r\nhost: ${target.host}\r\ncontent-type: application/json\r\nx-sdk-key: ${target.sdkKey}\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
  });
  const samples: [number, number][] = [];
  let failures = 0;
  const ends = now() + seconds * 1000;
  const sockets: Socket[] = [];
  // A request still unanswered 10 s after the end is a failure: the run ends anyway.
  const giveUp = setTimeout(() => sockets.forEach((socket) => socket.destroy(new Error('no answer'))), seconds * 1000 + 10_000);
  await Promise.all(
    Array.from({ length: connections }, (_, c) => {
      return new Promise<void>((resolve) => {
        const socket = connect({ host: target.host, port: target.port, localAddress: '127.254.0.1' });
        sockets.push(socket);
        let next = now() + (c * intervalMs) / connections;
        let sentAt = 0;
        let buffer = '';
        let n = c;
        let waiting = false;
        let done = false;
        const finish = () => {
          if (done) return;
          done = true;
          socket.destroy();
          resolve();
        };
        const send = () => {
          if (now() > ends || socket.destroyed) return finish();
          waiting = true;
          sentAt = now();
          socket.write(requests[n++ % requests.length]!);
        };
        socket.setEncoding('latin1');
        socket.on('connect', () => setTimeout(send, Math.max(0, next - now())));
        socket.on('data', (chunk: string) => {
          buffer += chunk;
          const end = buffer.indexOf('\r\n\r\n');
          if (end < 0) return;
          const length = Number(/content-length: (\d+)/i.exec(buffer.slice(0, end))?.[1] ?? 0);
          if (buffer.length < end + 4 + length) return;
          if (!buffer.startsWith('HTTP/1.1 200')) failures++;
          waiting = false;
          samples.push([sentAt, now() - sentAt]);
          buffer = buffer.slice(end + 4 + length);
          next += intervalMs;
          setTimeout(send, Math.max(0, next - now()));
        });
        socket.on('error', () => {
          if (!done) failures++;
          finish();
        });
        // A connection the server (or nginx: keepalive_requests) closes ends this connection's share,
        // with its unanswered request a failure. Without this, a close with no error (a destroyed
        // socket's later writes fail silently) left the run waiting for good: the PostgreSQL mode's stall.
        socket.on('close', () => {
          if (!done && waiting) failures++;
          finish();
        });
      });
    }),
  );
  clearTimeout(giveUp);
  process.send!({ samples, failures });
}

// ---- the coordinator -----------------------------------------------------------------------

/** A child of this file with the open-file limit raised to the hard limit (ulimit -n), at `nice` when given. */
function child(args: string[], nice = 0): ChildProcess {
  const niced = nice === 0 ? '' : `nice -n ${nice} `;
  return fork(here, args, { execPath: 'sh', execArgv: ['-c', `ulimit -n $(ulimit -Hn) && exec ${niced}"${process.execPath}" "$0" "$@"`], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
}

const once = <T>(process: ChildProcess, type?: string) =>
  new Promise<T>((resolve, reject) => {
    const exited = (code: number | null) => reject(new Error(`a bench process exited (${code})`));
    const listener = (message: any) => {
      if (type === undefined || message.type === type) {
        process.off('message', listener);
        process.off('exit', exited);
        resolve(message as T);
      }
    };
    process.on('message', listener);
    process.once('exit', exited);
  });

const openFiles = (pid: number) => {
  try {
    return readdirSync(`/proc/${pid}/fd`).length;
  } catch {
    return 0;
  }
};

const percentile = (sorted: readonly number[], p: number) => (sorted.length === 0 ? NaN : sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))]!);

/** Paced evaluate load for `seconds` from the load process; resolves with its samples. */
function load(loader: ChildProcess, target: Target, seconds: number): Promise<{ samples: [number, number][]; failures: number }> {
  loader.send({ target, seconds });
  return once(loader);
}

interface Server {
  target: Target;
  /** Where the paced evaluate load goes: `target`, or the first instance (BENCH_EVALUATE_DIRECT). */
  evaluateTarget: Target;
  pids: number[];
  toggle: () => Promise<void>;
  stop: () => Promise<void>;
}

function startMain(mainJs: string, port: number, databaseUrl: string): ChildProcess {
  const env = { ...process.env, PORT: String(port), HOST: '127.0.0.1', DATABASE_URL: databaseUrl, RATE_LIMIT_EVALUATE: '0', RATE_LIMIT_AUTH: '0', LOG_LEVEL: 'warn' };
  // BENCH_SERVER_NODE_OPTIONS: flags for the server's node (e.g. --cpu-prof --cpu-prof-dir=/tmp/prof).
  return spawn('sh', ['-c', `ulimit -n $(ulimit -Hn) && exec "${process.execPath}" ${process.env.BENCH_SERVER_NODE_OPTIONS ?? ''} "${mainJs}"`], { env, stdio: 'inherit' });
}

/** nginx in front of the instances (Debian's package, installed when missing), as docs/deploy.md has it. */
function startNginx(dir: string, port: number, upstreams: number[]): ChildProcess {
  if (spawnSync('sh', ['-c', 'command -v nginx']).status !== 0) spawnSync('sh', ['-c', 'apt-get install -y nginx-light >/dev/null 2>&1 || (apt-get update >/dev/null && apt-get install -y nginx-light >/dev/null)'], { stdio: 'inherit' });
  const conf = join(dir, 'nginx.conf');
  writeFileSync(
    conf,
    // Four workers, each accepting its share (reuseport): a worker holds two descriptors per stream, and one process may hold 20,000 here.
    `worker_processes 4; daemon off; pid ${dir}/nginx.pid; error_log stderr error; worker_rlimit_nofile 20000;
events { worker_connections 19000; }
http { access_log off; keepalive_requests 1000000; client_body_temp_path ${dir}; proxy_temp_path ${dir}; fastcgi_temp_path ${dir}; uwsgi_temp_path ${dir}; scgi_temp_path ${dir};
  upstream guidon { ${upstreams.map((p) => `server 127.0.0.1:${p};`).join(' ')} keepalive 64; }
  server { listen 127.0.0.1:${port} backlog=4096 reuseport; location / { proxy_pass http://guidon; proxy_http_version 1.1; proxy_set_header Connection ""; proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for; proxy_buffering off; proxy_read_timeout 60s; } } }`,
  );
  return spawn('sh', ['-c', `ulimit -n $(ulimit -Hn) && exec nginx -c ${conf}`], { stdio: 'inherit' });
}

async function startServer(mainJs: string, dir: string): Promise<Server> {
  const children: ChildProcess[] = [];
  let databaseUrl = `sqlite:${join(dir, 'guidon.db')}`;
  let dropDatabase = async () => {};
  if (ON_POSTGRES) {
    const name = `guidon_bench_${Math.random().toString(36).slice(2, 10)}`;
    const admin = await openDatabase(loadConfig({ DATABASE_URL: POSTGRES_URL }).database, { migrate: false, poolSize: 1 });
    await sql.raw(`create database ${name}`).execute(admin.db);
    await admin.close();
    databaseUrl = POSTGRES_URL.replace(/\/[^/]*$/, `/${name}`);
    dropDatabase = async () => {
      const again = await openDatabase(loadConfig({ DATABASE_URL: POSTGRES_URL }).database, { migrate: false, poolSize: 1 });
      await sql.raw(`drop database if exists ${name} with (force)`).execute(again.db);
      await again.close();
    };
  }
  const ports = ON_POSTGRES ? [await freePort(), await freePort()] : [await freePort()];
  for (const port of ports) {
    const main = startMain(mainJs, port, databaseUrl);
    children.push(main);
    await waitForHealth(`http://127.0.0.1:${port}`, main);
  }
  let port = ports[0]!;
  if (ON_POSTGRES) {
    port = await freePort();
    const nginx = startNginx(dir, port, ports);
    children.push(nginx);
    await waitForHealth(`http://127.0.0.1:${port}`, nginx);
  }
  const url = `http://127.0.0.1:${port}`;
  await seed(url, FLAGS);
  const { token: login, project, production } = await benchProject(url).catch(async () => {
    // seed() registered the bench user and made its project: log in again and find them.
    const { token } = await call(url, 'POST', '/auth/login', null, { email: 'bench@example.com', password: 'benchmark password' });
    const [project] = await call(url, 'GET', '/api/projects', token);
    const environments = await call(url, 'GET', `/api/projects/${project.id}/environments`, token);
    return { token, project, production: environments.find((env: { key: string }) => env.key === 'production') };
  });
  // API tokens act for verified accounts only: the bench's account is marked verified in the database.
  const database = await openDatabase(loadConfig({ DATABASE_URL: databaseUrl }).database, { migrate: false, poolSize: 1 });
  await database.db.updateTable('users').set({ email_verified_at: new Date().toISOString() }).execute();
  await database.close();
  const { token } = await call(url, 'POST', '/api/tokens', login, { name: 'burst', project_id: project.id });
  const flags = await call(url, 'GET', `/api/projects/${project.id}/environments/${production.id}/flags`, login);
  const flag = (flags.items ?? flags)[0];
  const target = { host: '127.0.0.1', port, token, sdkKey: project.sdk_key, flagKey: flag.key };
  return {
    target,
    evaluateTarget: EVALUATE_DIRECT ? { ...target, port: ports[0]! } : target,
    pids: children.filter((each) => each !== children.at(-1) || !ON_POSTGRES).map((each) => each.pid!),
    toggle: async () => void (await call(url, 'POST', `/api/projects/${project.id}/environments/${production.id}/flags/${flag.id}/toggle`, login)),
    stop: async () => {
      for (const each of children) each.kill('SIGTERM');
      await Promise.all(children.map((each) => new Promise((resolve) => (each.exitCode !== null ? resolve(undefined) : each.once('exit', resolve)))));
      await dropDatabase();
    },
  };
}

interface Result {
  build: string;
  toggles: { toggleMs: number; first: number; p50: number; p99: number; max: number; within5s: number; errors: number; evaluateP99: number; evaluateFailures: number; skipped: number; patched: number; maxFiles: number; overflows: number; spreadMs: number }[];
  openSeconds: number;
  openErrors: number;
  kibPerStream: number;
  quietP99: number;
  quietFailures: number;
  cpuMsPerClient: number;
}

async function measure(build: string, mainJs: string): Promise<Result> {
  const dir = mkdtempSync(join(tmpdir(), 'guidon-burst-bench-'));
  const server = await startServer(mainJs, dir);
  const clients = Array.from({ length: PROCESSES }, () => child(['clients'], CLIENT_NICE));
  const loader = child(['load']);
  try {
    const rssBefore = server.pids.reduce((sum, pid) => sum + rssMb(pid), 0);
    const opening = performance.now();
    const perProcess = Math.ceil(CLIENTS / PROCESSES);
    const opened = await Promise.all(
      clients.map((each, p) => {
        each.send({ type: 'open', target: server.target, count: Math.min(perProcess, CLIENTS - p * perProcess), addressBase: 1 + p } satisfies ToClients);
        return once<FromClients & { type: 'opened' }>(each, 'opened');
      }),
    );
    const openSeconds = (performance.now() - opening) / 1000;
    await new Promise((resolve) => setTimeout(resolve, 2000)); // the last opens settle
    const rssAfter = server.pids.reduce((sum, pid) => sum + rssMb(pid), 0);
    console.log(`${build}: ${CLIENTS} clients open in ${openSeconds.toFixed(1)} s (errors ${opened.reduce((sum, each) => sum + each.errors, 0)}), server RSS ${rssBefore.toFixed(0)} → ${rssAfter.toFixed(0)} MB`);

    const serverCpu = () => server.pids.reduce((sum, pid) => sum + processCpuSeconds(pid), 0);
    const quietCpu = serverCpu();
    const quiet = await load(loader, server.evaluateTarget, QUIET_SECONDS);
    // The server's open files, sampled every 100 ms: the burst's connections come on top of the streams (ulimit -n).
    const fileCounts: number[] = [];
    const sampler = setInterval(() => fileCounts.push(server.pids.reduce((sum, pid) => sum + openFiles(pid), 0)), 100);
    // The server's CPU per evaluate answered under the paced load alone, subtracted from each
    // toggle's for the answers given in its window: during a burst fewer are answered in the same
    // time (by time, the subtraction went below zero on PostgreSQL).
    const loadCpuPerAnswer = (serverCpu() - quietCpu) / Math.max(1, quiet.samples.length);
    const toggles: Result['toggles'] = [];
    let cpuMs = 0;
    for (let round = 0; round <= TOGGLES; round++) {
      for (const each of clients) each.send({ type: 'arm' } satisfies ToClients);
      await new Promise((resolve) => setTimeout(resolve, 200));
      const during = load(loader, server.evaluateTarget, 4);
      await new Promise((resolve) => setTimeout(resolve, 1000));
      const cpuBefore = serverCpu();
      const cpuBeforeAt = now();
      const overflowsBefore = listenOverflows();
      const toggledAt = now();
      await server.toggle();
      const toggleMs = now() - toggledAt;
      const evaluated = await during;
      const report = () =>
        Promise.all(
          clients.map((each) => {
            each.send({ type: 'report' } satisfies ToClients);
            return once<FromClients & { type: 'report' }>(each, 'report');
          }),
        );
      // Every client holds it or failed, or 30 s have passed: stragglers (a SYN retried after 1, 3, 7, 15 s) count, and none is left for the next toggle.
      let reports = await report();
      while (reports.reduce((sum, each) => sum + each.arrivals.length + each.errors.length + each.unchanged + each.skipped, 0) < CLIENTS && now() < toggledAt + 30_000) {
        await new Promise((resolve) => setTimeout(resolve, 500));
        reports = await report();
      }
      const cpuAfter = serverCpu();
      const cpuAfterAt = now();
      const loadCpu = loadCpuPerAnswer * evaluated.samples.filter(([sentAt, ms]) => sentAt + ms >= cpuBeforeAt && sentAt + ms <= cpuAfterAt).length;
      const overflows = listenOverflows() - overflowsBefore;
      const maxFiles = Math.max(...fileCounts.splice(0));
      if (round === 0) continue; // the warm-up toggle
      cpuMs += (cpuAfter - cpuBefore - loadCpu) * 1000;
      const latencies = reports.flatMap((report) => report.arrivals.map((at) => at - toggledAt)).sort((a, b) => a - b);
      // Evaluate requests in flight at any moment of the 2 s after the toggle.
      const burst = evaluated.samples.filter(([sentAt, ms]) => sentAt < toggledAt + 2000 && sentAt + ms > toggledAt).map(([, ms]) => ms).sort((a, b) => a - b);
      const errors = reports.flatMap((report) => report.errors);
      if (errors.length > 0) console.log(`${build}, toggle ${round}: ${errors.length} errors, e.g. ${[...new Set(errors)].slice(0, 3).join('; ')}`);
      toggles.push({
        toggleMs,
        first: latencies[0] ?? NaN,
        p50: percentile(latencies, 50),
        p99: percentile(latencies, 99),
        max: latencies.at(-1) ?? NaN,
        within5s: latencies.filter((ms) => ms <= 5000).length,
        errors: errors.length,
        evaluateP99: percentile(burst, 99),
        evaluateFailures: evaluated.failures,
        skipped: reports.reduce((sum, report) => sum + report.skipped, 0),
        patched: reports.reduce((sum, report) => sum + report.patched + report.inMessage, 0),
        maxFiles,
        overflows,
        spreadMs: Math.max(0, ...reports.map((report) => report.spreadMs)),
      });
      console.log(`${build}, toggle ${round}: ${JSON.stringify(toggles.at(-1))}`);
    }
    clearInterval(sampler);
    return {
      build,
      toggles,
      openSeconds,
      openErrors: opened.reduce((sum, each) => sum + each.errors, 0),
      kibPerStream: ((rssAfter - rssBefore) * 1024) / CLIENTS,
      quietP99: percentile(quiet.samples.map(([, ms]) => ms).sort((a, b) => a - b), 99),
      quietFailures: quiet.failures,
      cpuMsPerClient: cpuMs / TOGGLES / CLIENTS,
    };
  } finally {
    for (const each of [...clients, loader]) each.kill();
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  const builds = [...(process.env.BENCH_BASE_MAIN_JS ? [['base', process.env.BENCH_BASE_MAIN_JS]] : []), ['this build', join(dirname(here), '..', 'src', 'main.js')]] as const;
  const before = cpuJiffies();
  const described = { patch: 'local clients, patch when it applies', fetch: 'local clients that fetch on each change', remote: 'remote clients, evaluate on each change' }[PATH];
  console.log(`burst bench, path ${PATH} (${described}): ${CLIENTS} clients in ${PROCESSES} processes${CLIENT_NICE === 0 ? '' : ` at nice ${CLIENT_NICE}`}, ${FLAGS} flags, ${ON_POSTGRES ? 'two instances on PostgreSQL behind nginx' : 'one instance on SQLite'}, evaluate paced at ${EVALUATE_RPS}/s${EVALUATE_DIRECT ? ' to the first instance directly' : ''}; load average ${loadAverage()}; open-file limit ${readFileSync('/proc/self/limits', 'utf8').match(/Max open files\s+(\d+)\s+(\d+)/)?.slice(1).join(' / ')}; somaxconn ${readFileSync('/proc/sys/net/core/somaxconn', 'utf8').trim()}`);
  const results: Result[] = [];
  for (const [build, mainJs] of builds) results.push(await measure(build, mainJs));
  const { busyPct, stealPct } = busyBetween(before, cpuJiffies());
  const f = (value: number) => (Number.isNaN(value) ? '–' : value.toFixed(0));
  console.log(`\nmachine busy ${busyPct.toFixed(0)} % (steal ${stealPct.toFixed(0)} %), load average ${loadAverage()}\n`);
  console.log('| build | toggle | toggle answered ms | first ms | p50 ms | p99 ms | max ms | holding it within 5 s | errors | skipped (held it) | by the message (patch or answer) | evaluate p99 quiet → burst ms | server CPU ms per client | KiB per open stream | open all s | server open files, max | spread announced ms | listen queue overflows |');
  console.log('|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|');
  for (const result of results) {
    result.toggles.forEach((toggle, i) =>
      console.log(
        `| ${result.build} | ${i + 1} | ${f(toggle.toggleMs)} | ${f(toggle.first)} | ${f(toggle.p50)} | ${f(toggle.p99)} | ${f(toggle.max)} | ${toggle.within5s} / ${CLIENTS} | ${toggle.errors} | ${toggle.skipped} | ${toggle.patched} | ${result.quietP99.toFixed(1)} → ${toggle.evaluateP99.toFixed(1)} | ${result.cpuMsPerClient.toFixed(3)} | ${result.kibPerStream.toFixed(1)} | ${result.openSeconds.toFixed(1)} | ${toggle.maxFiles} | ${toggle.spreadMs} | ${toggle.overflows} |`,
      ),
    );
  }
  console.log(`\nmedian over toggles, this build: p99 ${f(median(results.at(-1)!.toggles.map((t) => t.p99)))} ms`);
}

if (process.argv[2] === 'clients') await runClients();
else if (process.argv[2] === 'load') process.on('message', (message: { target: Target; seconds: number }) => void runLoad(message.target, message.seconds));
else await main();
