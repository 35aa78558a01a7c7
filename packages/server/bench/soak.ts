/**
 * npm run soak: the real server (dist/src/main.js, as its own process) under a steady load for
 * minutes, printing over time its RSS and event-loop delay, evaluate's latency and the errors.
 * Not part of npm test. docs/reliability.md has the figures of the recorded runs.
 *
 * SOAK_MINUTES (default 30), SOAK_RATE evaluate requests a second (default 300, open loop: sent on
 * schedule whether or not earlier ones came back), SOAK_WRITES management writes a second
 * (default 5), SOAK_FLAGS (default 50), SOAK_REPORT_SECONDS (default 30), SOAK_DATABASE_URL
 * (default a fresh SQLite file), SOAK_STREAMS streams held open (default 200). A webhook of the
 * project posts every change to a receiver in this process. Exits 1 when a request failed, a
 * stream was cut, a change was not delivered to the webhook, or RSS grew more than 20 %: the
 * highest RSS of the window right after the warm-up (the first fifth of the run, at least a
 * minute) against the highest of the same length at the end (rssGrowth). RSS swings with the
 * garbage collector, so one sample against another compares a dip with a peak; the highs of two
 * windows of many collections each compare like with like. The windows' medians are printed too.
 *
 * Further loads go in LOADS below: started with the seeded project, each reports a short line
 * each interval and its errors.
 */
import { fork } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { Agent, createServer, request as httpRequest, type ClientRequest } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort } from '../tests/harness.js';
import type { ProbeSample } from './soak-probe.js';

const MINUTES = Number(process.env.SOAK_MINUTES ?? 30);
const RATE = Number(process.env.SOAK_RATE ?? 300);
const WRITES = Number(process.env.SOAK_WRITES ?? 5);
const FLAGS = Number(process.env.SOAK_FLAGS ?? 50);
const REPORT_SECONDS = Number(process.env.SOAK_REPORT_SECONDS ?? 30);
const STREAMS = Number(process.env.SOAK_STREAMS ?? 200);
const METRICS_TOKEN = 'soak-metrics';
const here = dirname(fileURLToPath(import.meta.url));
const mainJs = join(here, '..', 'src', 'main.js');
const probeJs = join(here, 'soak-probe.js');

interface Seeded {
  url: string;
  token: string;
  projectId: string;
  sdkKey: string;
  flagsPath: string;
  flagIds: string[];
}

/** A load beside evaluate and the writes. */
interface Load {
  name: string;
  start(seeded: Seeded): void | Promise<void>;
  /** Ends the load; returns a closing line and the errors found then. */
  stop(): Promise<{ line: string; errors: number }>;
  /** One short line for the interval just ended, and its error count (reset on each call). */
  report(): { line: string; errors: number };
}

/** Changes acknowledged by the writes (toggles, updates, creations, deletions): each is one audit event, one stream message at most. */
let changesMade = 0;
let changesAtLastReport = 0;

/**
 * SOAK_STREAMS streams on GET /sdk/v1/stream, each on its own connection, counting the
 * refetchEvaluation messages they receive (changes within 50 ms are sent as one). A stream the
 * server ends or cuts is an error, and is opened again.
 */
function streamsLoad(): Load {
  const open = new Set<ClientRequest>();
  let stopping = false;
  let messages = 0;
  let errors = 0;
  let cut = 0;
  let seeded: Seeded;
  const openOne = () => {
    const target = new URL(seeded.url);
    const req = httpRequest({ host: target.hostname, port: target.port, path: '/sdk/v1/stream?environment=production', agent: false, headers: { accept: 'text/event-stream', 'x-sdk-key': seeded.sdkKey } });
    const lost = () => {
      if (!open.delete(req) || stopping) return;
      errors++;
      cut++;
      setTimeout(openOne, 1000).unref();
    };
    req.on('response', (res) => {
      if (res.statusCode !== 200) {
        res.resume();
        return lost();
      }
      res.setEncoding('utf8');
      let buffer = '';
      res.on('data', (chunk: string) => {
        const events = (buffer + chunk).split('\n\n');
        buffer = events.pop()!; // an event not ended yet
        for (const event of events) if (event.includes('event: message')) messages++;
      });
      res.on('end', lost);
      res.on('error', lost);
    });
    req.on('error', lost);
    req.end();
    open.add(req);
  };
  return {
    name: 'streams',
    start(given) {
      seeded = given;
      for (let i = 0; i < STREAMS; i++) openOne();
    },
    async stop() {
      stopping = true;
      for (const req of open) req.destroy();
      return { line: `streams: ${cut} cut over the run`, errors: 0 };
    },
    report() {
      const changes = changesMade - changesAtLastReport;
      const line = `streams ${open.size}/${STREAMS} open, ${messages} messages (${open.size ? (messages / open.size).toFixed(1) : 0} a stream for ${changes} changes)`;
      const result = { line, errors };
      messages = 0;
      errors = 0;
      return result;
    },
  };
}

/**
 * A webhook of the project (every event) to a receiver in this process: counts the deliveries,
 * their lag from the change (the event's created_at), and at the end checks that every change
 * acknowledged by the writes was delivered (waiting up to 30 s for the last ones).
 */
function webhookLoad(): Load {
  const delivered = new Set<string>();
  let deliveries = 0;
  let lags: number[] = [];
  let errors = 0;
  const receiver = createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (chunk: string) => (body += chunk));
    req.on('end', () => {
      try {
        const event = JSON.parse(body) as { id: string; action: string; created_at: string };
        deliveries++;
        if (event.action.startsWith('flag.')) delivered.add(event.id);
        lags.push(Date.now() - Date.parse(event.created_at));
      } catch {
        errors++;
      }
      res.writeHead(204).end();
    });
  });
  return {
    name: 'webhook',
    async start(seeded) {
      await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
      const url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
      const created = await call(seeded.url, 'POST', `/api/projects/${seeded.projectId}/webhooks`, { authorization: `Bearer ${seeded.token}` }, { url, events: ['*'] });
      if (created.status !== 201) throw new Error(`could not create the webhook: ${created.status} ${JSON.stringify(created.body)}`);
    },
    async stop() {
      for (let i = 0; i < 300 && delivered.size < changesMade; i++) await new Promise((resolve) => setTimeout(resolve, 100));
      receiver.closeAllConnections();
      receiver.close();
      const missing = Math.max(0, changesMade - delivered.size);
      return { line: `webhook: ${delivered.size} of ${changesMade} changes delivered (${missing} missing)`, errors: missing };
    },
    report() {
      const sorted = lags.sort((a, b) => a - b);
      const p99 = sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * 0.99))]! : 0;
      const result = { line: `webhook ${deliveries} deliveries, lag p99 ${p99} ms`, errors };
      deliveries = 0;
      lags = [];
      errors = 0;
      return result;
    },
  };
}

const LOADS: Load[] = [streamsLoad(), webhookLoad()];

const agent = new Agent({ keepAlive: true, maxSockets: 64 });

function call(url: string, method: string, path: string, headers: Record<string, string>, body?: unknown): Promise<{ status: number; body: any }> {
  return new Promise((resolve, reject) => {
    const target = new URL(url);
    const payload = body === undefined ? undefined : JSON.stringify(body);
    const req = httpRequest(
      { host: target.hostname, port: target.port, method, path, agent, headers: { ...headers, ...(payload ? { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(payload)) } : {}) } },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString();
          resolve({ status: res.statusCode ?? 0, body: text && (res.headers['content-type'] ?? '').includes('json') ? JSON.parse(text) : text });
        });
      },
    );
    req.setTimeout(10_000, () => req.destroy(new Error('timeout')));
    req.on('error', reject);
    req.end(payload);
  });
}

class Window {
  latencies: number[] = [];
  errors = 0;
  skipped = 0;
  take() {
    const sorted = this.latencies.sort((a, b) => a - b);
    const at = (q: number) => (sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * q))]! : 0);
    const result = { count: sorted.length, p50: at(0.5), p99: at(0.99), max: sorted[sorted.length - 1] ?? 0, errors: this.errors, skipped: this.skipped };
    this.latencies = [];
    this.errors = 0;
    this.skipped = 0;
    return result;
  }
}

async function seed(url: string): Promise<Seeded> {
  const email = 'soak@example.com';
  const password = 'correct horse battery';
  await call(url, 'POST', '/auth/register', {}, { email, password });
  const token = (await call(url, 'POST', '/auth/login', {}, { email, password })).body.token as string;
  const auth = { authorization: `Bearer ${token}` };
  const project = (await call(url, 'POST', '/api/projects', auth, { name: 'soak' })).body;
  const environments = (await call(url, 'GET', `/api/projects/${project.id}/environments`, auth)).body as { id: string; key: string }[];
  const flagsPath = `/api/projects/${project.id}/environments/${environments.find((env) => env.key === 'production')!.id}/flags`;
  const flagIds: string[] = [];
  for (let i = 0; i < FLAGS; i++) {
    const flag = (await call(url, 'POST', flagsPath, auth, { key: `flag-${i}`, name: `flag ${i}`, enabled: i % 2 === 0, rollout_percentage: (i * 7) % 101 })).body;
    flagIds.push(flag.id);
    if (i % 5 === 0) await call(url, 'POST', `${flagsPath}/${flag.id}/rules`, auth, { rule_type: 'email_domain', rule_value: 'example.com' });
  }
  return { url, token, projectId: project.id, sdkKey: project.sdk_key, flagsPath, flagIds };
}

const dir = mkdtempSync(join(tmpdir(), 'guidon-soak-'));
const databaseUrl = process.env.SOAK_DATABASE_URL ?? `sqlite:${join(dir, 'guidon.db')}`;
const port = await freePort();
const server = fork(mainJs, [], {
  execArgv: ['--import', probeJs],
  env: { PATH: process.env.PATH ?? '', HOST: '127.0.0.1', PORT: String(port), DATABASE_URL: databaseUrl, LOG_LEVEL: 'warn', RATE_LIMIT_EVALUATE: '0', RATE_LIMIT_AUTH: '0', WEBHOOK_ALLOW_PRIVATE: 'true', METRICS_TOKEN },
  stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
});
let probe: ProbeSample[] = [];
/** Every RSS sample of the run (one a second), for the growth check at the end. */
const rssSamples: { at: number; mb: number }[] = [];
server.on('message', (message: ProbeSample) => {
  if (message?.type !== 'soak:probe') return;
  probe.push(message);
  rssSamples.push({ at: Date.now(), mb: message.rssMb });
});
const url = `http://127.0.0.1:${port}`;
for (let i = 0; ; i++) {
  const up = await call(url, 'GET', '/health', {}).then((answer) => answer.status === 200, () => false);
  if (up) break;
  if (i > 600) throw new Error('the server did not start');
  await new Promise((resolve) => setTimeout(resolve, 50));
}

const seeded = await seed(url);
const auth = { authorization: `Bearer ${seeded.token}` };
console.log(`soak: ${MINUTES} min, evaluate ${RATE}/s over ${FLAGS} flags, ${WRITES} writes/s, ${STREAMS} streams, a webhook, ${databaseUrl.split(':')[0]}; a line every ${REPORT_SECONDS} s`);

const evaluations = new Window();
const writes = new Window();
let inFlight = 0;
let userCounter = 0;
const MAX_IN_FLIGHT = 2000;

function evaluateOnce(): void {
  if (inFlight >= MAX_IN_FLIGHT) {
    evaluations.skipped++;
    return;
  }
  inFlight++;
  const started = performance.now();
  const id = ++userCounter;
  call(url, 'POST', '/sdk/v1/evaluate', { 'x-sdk-key': seeded.sdkKey }, { environment: 'production', context: { user_id: `user-${id % 100_000}`, user_email: `user-${id % 100_000}@example.com` } })
    .then((answer) => (answer.status === 200 ? evaluations.latencies.push(performance.now() - started) : evaluations.errors++), () => evaluations.errors++)
    .finally(() => inFlight--);
}

let writeCounter = 0;
const extraFlags: string[] = [];
async function writeOnce(): Promise<void> {
  const started = performance.now();
  const n = ++writeCounter;
  const flagId = seeded.flagIds[n % seeded.flagIds.length]!;
  let answer: { status: number; body: any };
  try {
    switch (n % 5) {
      case 0:
        answer = await call(url, 'POST', `${seeded.flagsPath}/${flagId}/toggle`, auth);
        break;
      case 1:
        answer = await call(url, 'PUT', `${seeded.flagsPath}/${flagId}`, auth, { rollout_percentage: n % 101 });
        break;
      case 2:
        answer = await call(url, 'POST', seeded.flagsPath, auth, { key: `extra-${n}`, name: 'extra' });
        if (answer.status === 201) extraFlags.push(answer.body.id);
        break;
      case 3:
        answer = extraFlags.length ? await call(url, 'DELETE', `${seeded.flagsPath}/${extraFlags.shift()}`, auth) : await call(url, 'GET', seeded.flagsPath, auth);
        break;
      default:
        answer = await call(url, 'GET', `/api/projects/${seeded.projectId}/evaluations?limit=50`, auth);
    }
    if (answer.status >= 400) writes.errors++;
    else {
      writes.latencies.push(performance.now() - started);
      if (n % 5 < 3 || (n % 5 === 3 && answer.status === 204)) changesMade++;
    }
  } catch {
    writes.errors++;
  }
}

for (const load of LOADS) await load.start(seeded);
const startedAt = Date.now();
const ticksPerSecond = 100;
let owed = 0;
const evaluateTimer = setInterval(() => {
  owed += RATE / ticksPerSecond;
  for (; owed >= 1; owed--) evaluateOnce();
}, 1000 / ticksPerSecond);
const writeTimer = setInterval(() => void writeOnce(), 1000 / WRITES);

let totalErrors = 0;
const fmt = (n: number) => n.toFixed(1).padStart(6);
await new Promise<void>((resolve) => {
  const reporter = setInterval(() => {
    const elapsed = (Date.now() - startedAt) / 1000;
    const samples = probe;
    probe = [];
    const rss = samples.at(-1)?.rssMb ?? 0;
    const delayP99 = Math.max(0, ...samples.map((s) => s.delayP99));
    const delayMax = Math.max(0, ...samples.map((s) => s.delayMax));
    const e = evaluations.take();
    const w = writes.take();
    const extra = LOADS.map((load) => load.report());
    changesAtLastReport = changesMade;
    const errors = e.errors + w.errors + e.skipped + extra.reduce((sum, r) => sum + r.errors, 0);
    totalErrors += errors;
    console.log(
      `t=${String(Math.round(elapsed)).padStart(5)}s  rss ${fmt(rss)} MB  heap ${fmt(samples.at(-1)?.heapUsedMb ?? 0)} MB  loop delay p99 ${fmt(delayP99)} ms max ${fmt(delayMax)} ms` +
        `  | evaluate ${String(e.count).padStart(7)} (${Math.round(e.count / REPORT_SECONDS)}/s) p50 ${fmt(e.p50)} p99 ${fmt(e.p99)} max ${fmt(e.max)} ms` +
        `  | writes ${String(w.count).padStart(4)} p99 ${fmt(w.p99)} ms  | errors ${errors}${extra.map((r) => `  | ${r.line}`).join('')}`,
    );
    if (elapsed >= MINUTES * 60) {
      clearInterval(reporter);
      resolve();
    }
  }, REPORT_SECONDS * 1000);
});

const endedAt = Date.now();
clearInterval(evaluateTimer);
clearInterval(writeTimer);
while (inFlight > 0) await new Promise((resolve) => setTimeout(resolve, 50));
const closing: string[] = [];
for (const load of LOADS) {
  const { line, errors } = await load.stop();
  closing.push(line);
  totalErrors += errors;
}
// The history writer's counters, from the Prometheus endpoint.
const metricsText = String((await call(url, 'GET', '/metrics', { authorization: `Bearer ${METRICS_TOKEN}` }).catch(() => ({ body: '' }))).body);
const historyRows = Object.fromEntries([...metricsText.matchAll(/^guidon_history_rows_total\{state="(\w+)"\} (\d+)/gm)].map((match) => [match[1], Number(match[2])]));
server.kill('SIGTERM');
await new Promise((resolve) => server.once('exit', resolve));
agent.destroy();
rmSync(dir, { recursive: true, force: true });

/**
 * RSS growth over the run, like with like: the highest sample (and the median) of the window right
 * after the warm-up against those of a window as long at the end. A window is a fifth of the run,
 * at least a minute, and at most half of what follows the warm-up. Null when the run is too short.
 */
function rssGrowth(samples: { at: number; mb: number }[], from: number, to: number) {
  const seconds = (to - from) / 1000;
  const warmUp = Math.max(60, seconds / 5);
  const window = Math.min(Math.max(60, seconds / 5), (seconds - warmUp) / 2);
  if (!(window > 0)) return null;
  const within = (start: number, end: number) => samples.filter((sample) => sample.at >= from + start * 1000 && sample.at <= from + end * 1000).map((sample) => sample.mb);
  const early = within(warmUp, warmUp + window);
  const late = within(seconds - window, seconds);
  if (early.length === 0 || late.length === 0) return null;
  const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
  const span = (start: number) => `t=${Math.round(start)}–${Math.round(start + window)} s`;
  return {
    early: { span: span(warmUp), peak: Math.max(...early), median: median(early) },
    late: { span: span(seconds - window), peak: Math.max(...late), median: median(late) },
    growth: Math.max(...late) / Math.max(...early) - 1,
  };
}

const memory = rssGrowth(rssSamples, startedAt, endedAt);
const percent = (ratio: number) => `${ratio >= 0 ? '+' : ''}${(ratio * 100).toFixed(1)} %`;
console.log(`history rows: ${JSON.stringify(historyRows)}`);
for (const line of closing) console.log(line);
console.log(
  `soak done: ${totalErrors} errors; ` +
    (memory
      ? `RSS peak ${memory.early.peak.toFixed(1)} MB at ${memory.early.span} (after the warm-up) → peak ${memory.late.peak.toFixed(1)} MB at ${memory.late.span} (the end): ${percent(memory.growth)}` +
        ` (medians ${memory.early.median.toFixed(1)} → ${memory.late.median.toFixed(1)} MB, ${percent(memory.late.median / memory.early.median - 1)}; highs of windows compared, not single samples)`
      : 'RSS growth not checked: the run is too short for two windows after the warm-up'),
);
if (totalErrors > 0 || (memory !== null && memory.growth > 0.2)) process.exitCode = 1;
