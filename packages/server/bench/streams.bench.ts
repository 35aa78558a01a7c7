/**
 * npm run bench (or `node packages/server/dist/bench/streams.bench.js` alone): how many open
 * change streams one instance holds, and how fast a toggle reaches all of them.
 *
 * Starts the real server (dist/src/main.js) as its own process on a fresh SQLite file, opens
 * BENCH_STREAMS (default 5000) `GET /sdk/v1/stream` connections from this process, then toggles
 * a flag BENCH_TOGGLES (default 3) times (after one warm-up toggle) and times, per toggle, the arrival of the
 * refetchEvaluation message on every stream, from just before the toggle request was sent. The
 * baseline, measured in the same run by the same client, is a bare node:http server that holds
 * the same number of event streams and writes one message to each when asked.
 * Both processes need a file descriptor per stream: `ulimit -n` must exceed BENCH_STREAMS.
 */
import { spawn } from 'node:child_process';
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { benchProject, call, freePort, rssMb, waitForHealth } from './bench-seed.js';

const STREAMS = Number(process.env.BENCH_STREAMS ?? 5000);
const TOGGLES = Number(process.env.BENCH_TOGGLES ?? 3);
const mainJs = join(dirname(fileURLToPath(import.meta.url)), '..', 'src', 'main.js');

interface Row {
  name: string;
  streams: number;
  openSeconds: number;
  reached: string;
  p50: number;
  p99: number;
  max: number;
  rssIdleMb: number;
  rssOpenMb: number;
}

const openFiles = (pid: number) => readdirSync(`/proc/${pid}/fd`).length;
const softFileLimit = () => Number(/Max open files\s+(\d+)/.exec(readFileSync('/proc/self/limits', 'utf8'))?.[1] ?? 0);

/** One open event stream; `firstMessageAt` is set when the next message after reset() arrives. */
class Listener {
  response: IncomingMessage | undefined;
  messageAt = 0;
  private armed = false;
  reset() {
    this.messageAt = 0;
    this.armed = true;
  }
  onData(chunk: Buffer) {
    if (this.armed && chunk.includes('refetch')) {
      this.messageAt = performance.now();
      this.armed = false;
    }
  }
}

/** Opens `count` streams, `parallel` connects at a time (the listen backlog is finite). */
async function openStreams(url: string, headers: Record<string, string>, count: number, parallel = 200): Promise<Listener[]> {
  const listeners: Listener[] = [];
  const target = new URL(url);
  const openOne = () =>
    new Promise<Listener>((resolve, reject) => {
      const listener = new Listener();
      const req = httpRequest({ host: target.hostname, port: target.port, path: target.pathname + target.search, headers: { accept: 'text/event-stream', ...headers }, agent: false }, (response) => {
        if (response.statusCode !== 200) return reject(new Error(`stream answered ${response.statusCode}`));
        listener.response = response;
        response.on('data', (chunk: Buffer) => listener.onData(chunk));
        resolve(listener);
      });
      req.on('error', reject);
      req.end();
    });
  for (let start = 0; start < count; start += parallel) {
    listeners.push(...(await Promise.all(Array.from({ length: Math.min(parallel, count - start) }, openOne))));
  }
  return listeners;
}

/** Fires a change `TOGGLES` times; per stream, the time from just before the change to its message. */
async function fanOut(listeners: Listener[], fire: () => Promise<void>): Promise<{ reached: number; latencies: number[] }> {
  const latencies: number[] = [];
  let reached = 0;
  // Round 0 warms up both sides (JIT, socket buffers) and is not counted.
  for (let round = 0; round <= TOGGLES; round++) {
    for (const listener of listeners) listener.reset();
    const start = performance.now();
    await fire();
    const deadline = Date.now() + 10_000;
    while (listeners.some((listener) => listener.messageAt === 0) && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 5));
    for (const listener of listeners) {
      if (listener.messageAt === 0 || round === 0) continue;
      reached++;
      latencies.push(listener.messageAt - start);
    }
    await new Promise((resolve) => setTimeout(resolve, 1500)); // the revision check's echo of this change passes
  }
  return { reached, latencies: latencies.sort((a, b) => a - b) };
}

const percentile = (sorted: number[], p: number) => (sorted.length === 0 ? NaN : sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))]!);

function row(name: string, streams: number, openMs: number, result: { reached: number; latencies: number[] }, rssIdleMb: number, rssOpenMb: number): Row {
  return {
    name,
    streams,
    openSeconds: openMs / 1000,
    reached: `${result.reached} / ${streams * TOGGLES}`,
    p50: percentile(result.latencies, 50),
    p99: percentile(result.latencies, 99),
    max: result.latencies.at(-1) ?? NaN,
    rssIdleMb,
    rssOpenMb,
  };
}

async function bare(): Promise<Row> {
  const port = await freePort();
  const script = `const streams = new Set();
require('node:http').createServer((req, res) => {
  if (req.method === 'POST') { const m = 'id: 1\\nevent: message\\ndata: {"type":"refetchEvaluation"}\\n\\n'; for (const s of streams) s.write(m); return res.end('ok'); }
  if (req.url === '/health') return res.end('ok');
  res.writeHead(200, { 'content-type': 'text/event-stream' }); res.write('retry: 1000\\n\\n'); streams.add(res); req.on('close', () => streams.delete(res));
}).listen(${port}, '127.0.0.1');`;
  const child = spawn(process.execPath, ['-e', script], { stdio: 'inherit' });
  const url = `http://127.0.0.1:${port}`;
  try {
    await waitForHealth(url, child);
    const idle = rssMb(child.pid!);
    const opened = performance.now();
    const listeners = await openStreams(`${url}/stream`, {}, STREAMS);
    const openMs = performance.now() - opened;
    const open = rssMb(child.pid!);
    const result = await fanOut(listeners, async () => void (await fetch(url, { method: 'POST' }).then((r) => r.text())));
    for (const listener of listeners) listener.response?.destroy();
    return row('bare node:http, one write per stream', STREAMS, openMs, result, idle, open);
  } finally {
    child.kill('SIGKILL');
  }
}

async function guidon(): Promise<Row> {
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'guidon-streams-bench-'));
  const env = { ...process.env, PORT: String(port), HOST: '127.0.0.1', DATABASE_URL: `sqlite:${join(dir, 'guidon.db')}`, RATE_LIMIT_EVALUATE: '0', RATE_LIMIT_AUTH: '0', LOG_LEVEL: 'warn' };
  const child = spawn(process.execPath, [mainJs], { env, stdio: 'inherit' });
  const url = `http://127.0.0.1:${port}`;
  try {
    await waitForHealth(url, child);
    const { token, project, production } = await benchProject(url);
    const flag = await call(url, 'POST', `/api/projects/${project.id}/environments/${production.id}/flags`, token, { name: 'Flag', key: 'flag', enabled: false });
    const idle = rssMb(child.pid!);
    const opened = performance.now();
    const listeners = await openStreams(`${url}/sdk/v1/stream?environment=production`, { 'x-sdk-key': project.sdk_key }, STREAMS);
    const openMs = performance.now() - opened;
    const open = rssMb(child.pid!);
    console.log(`guidon: ${listeners.length} streams open, server holds ${openFiles(child.pid!)} file descriptors`);
    const toggle = `/api/projects/${project.id}/environments/${production.id}/flags/${flag.id}/toggle`;
    const result = await fanOut(listeners, async () => void (await call(url, 'POST', toggle, token)));
    for (const listener of listeners) listener.response?.destroy();
    return row('Guidon GET /sdk/v1/stream, toggle over the API', STREAMS, openMs, result, idle, open);
  } finally {
    child.kill('SIGTERM');
    await new Promise((resolve) => (child.exitCode !== null ? resolve(undefined) : child.once('exit', resolve)));
    rmSync(dir, { recursive: true, force: true });
  }
}

const limit = softFileLimit();
if (limit < STREAMS + 200) {
  console.error(`streams bench: the open-file limit (ulimit -n) is ${limit}, below the ${STREAMS} streams asked for; raise it or set BENCH_STREAMS.`);
  process.exit(1);
}
const rows = [await bare(), await guidon()];
const ms = (value: number) => (Number.isNaN(value) ? '–' : value.toFixed(0));
console.log(`\n${STREAMS} streams, ${TOGGLES} toggles, Node ${process.version}, ${new Date().toISOString()}\n`);
console.log('| case | streams | open all (s) | messages received | p50 ms | p99 ms | max ms | server RSS idle → open MB | KB per stream | max vs baseline |');
console.log('|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|');
for (const r of rows) {
  const perStream = ((r.rssOpenMb - r.rssIdleMb) * 1024) / r.streams;
  console.log(`| ${r.name} | ${r.streams} | ${r.openSeconds.toFixed(1)} | ${r.reached} | ${ms(r.p50)} | ${ms(r.p99)} | ${ms(r.max)} | ${r.rssIdleMb.toFixed(0)} → ${r.rssOpenMb.toFixed(0)} | ${perStream.toFixed(1)} | ${(r.max / rows[0]!.max).toFixed(1)}× |`);
}
