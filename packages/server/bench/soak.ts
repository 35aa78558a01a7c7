/**
 * npm run soak: the real server (dist/src/main.js, as its own process) under a steady load for
 * minutes, printing over time its RSS and event-loop delay, evaluate's latency and the errors.
 * Not part of npm test. docs/reliability.md has the figures of the recorded runs.
 *
 * SOAK_MINUTES (default 30), SOAK_RATE evaluate requests a second (default 300, open loop: sent on
 * schedule whether or not earlier ones came back), SOAK_WRITES management writes a second
 * (default 5), SOAK_FLAGS (default 50), SOAK_REPORT_SECONDS (default 30), SOAK_DATABASE_URL
 * (default a fresh SQLite file). Exits 1 when a request failed or RSS grew more than 20 % from
 * the end of the warm-up (the first fifth of the run, at least a minute) to the end.
 *
 * Extension point: LOADS below. Streams (issue 9) and webhook deliveries (issue 10) add a Load
 * there: started with the seeded project, it reports a short line each interval and its errors.
 */
import { fork } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { Agent, request as httpRequest } from 'node:http';
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

/** A load beside evaluate and the writes; streams and webhooks plug in here. */
interface Load {
  name: string;
  start(seeded: Seeded): void;
  stop(): Promise<void>;
  /** One short line for the interval just ended, and its error count (reset on each call). */
  report(): { line: string; errors: number };
}
const LOADS: Load[] = [];

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
  env: { PATH: process.env.PATH ?? '', HOST: '127.0.0.1', PORT: String(port), DATABASE_URL: databaseUrl, LOG_LEVEL: 'warn', RATE_LIMIT_EVALUATE: '0', RATE_LIMIT_AUTH: '0' },
  stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
});
let probe: ProbeSample[] = [];
server.on('message', (message: ProbeSample) => message?.type === 'soak:probe' && probe.push(message));
const url = `http://127.0.0.1:${port}`;
for (let i = 0; ; i++) {
  const up = await call(url, 'GET', '/health', {}).then((answer) => answer.status === 200, () => false);
  if (up) break;
  if (i > 600) throw new Error('the server did not start');
  await new Promise((resolve) => setTimeout(resolve, 50));
}

const seeded = await seed(url);
const auth = { authorization: `Bearer ${seeded.token}` };
console.log(`soak: ${MINUTES} min, evaluate ${RATE}/s over ${FLAGS} flags, ${WRITES} writes/s, ${databaseUrl.split(':')[0]}; a line every ${REPORT_SECONDS} s`);

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
    else writes.latencies.push(performance.now() - started);
  } catch {
    writes.errors++;
  }
}

for (const load of LOADS) load.start(seeded);
const startedAt = Date.now();
const ticksPerSecond = 100;
let owed = 0;
const evaluateTimer = setInterval(() => {
  owed += RATE / ticksPerSecond;
  for (; owed >= 1; owed--) evaluateOnce();
}, 1000 / ticksPerSecond);
const writeTimer = setInterval(() => void writeOnce(), 1000 / WRITES);

const rows: { minute: number; rss: number; errors: number }[] = [];
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
    const errors = e.errors + w.errors + e.skipped + extra.reduce((sum, r) => sum + r.errors, 0);
    totalErrors += errors;
    rows.push({ minute: elapsed / 60, rss, errors });
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

clearInterval(evaluateTimer);
clearInterval(writeTimer);
for (const load of LOADS) await load.stop();
while (inFlight > 0) await new Promise((resolve) => setTimeout(resolve, 50));
const metrics = (await call(url, 'GET', '/api/metrics', auth).catch(() => ({ body: null }))).body;
server.kill('SIGTERM');
await new Promise((resolve) => server.once('exit', resolve));
agent.destroy();
rmSync(dir, { recursive: true, force: true });

const warmUpMinutes = Math.max(1, MINUTES / 5);
const afterWarmUp = rows.find((row) => row.minute >= warmUpMinutes) ?? rows[0]!;
const last = rows.at(-1)!;
const growth = (last.rss - afterWarmUp.rss) / afterWarmUp.rss;
console.log(`history: ${JSON.stringify(metrics?.evaluation_history ?? metrics)}`);
console.log(
  `soak done: ${totalErrors} errors; RSS ${afterWarmUp.rss.toFixed(1)} MB after warm-up (t=${Math.round(afterWarmUp.minute * 60)} s) → ${last.rss.toFixed(1)} MB at the end (${(growth * 100).toFixed(1)} %)`,
);
if (totalErrors > 0 || growth > 0.2) process.exitCode = 1;
