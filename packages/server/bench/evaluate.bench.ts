/**
 * npm run bench: POST /sdk/v1/evaluate under load, next to a bare node:http ceiling measured in
 * the same run (the machine is shared and noisy; the ratio is what to compare across runs).
 *
 * Each case starts the real server (dist/src/main.js) as its own process on a fresh SQLite file
 * with rate limits off, seeds one project over HTTP, and drives evaluate with autocannon
 * (distinct user ids per request). BENCH_SECONDS (default 10) and BENCH_CONNECTIONS (50) tune it;
 * BENCH_FLAGS (default "10,100,1000") picks the SQLite cases; BENCH_SCALE_FLAGS (default 10) the
 * flags of the PostgreSQL and WORKERS=2 cases, which need PostgreSQL on BENCH_POSTGRES_URL
 * (default postgres://postgres@127.0.0.1:5432/postgres) and are left out when it does not answer.
 * Then the delete scenario (deleteWhileEvaluating) on each database: BENCH_HISTORY_ROWS (default
 * 1,000,000) rows. BENCH_ONLY=evaluate or BENCH_ONLY=delete runs one part alone.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';
import pg from 'pg';
import { loadConfig } from '../src/config.js';
import { openDatabase } from '../src/db/database.js';
import { insertEvaluations } from '../src/modules/history/history.sql.js';
import { call, freePort, recorded, rssMb, seed, waitForHealth } from './bench-seed.js';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 50);
const FLAG_COUNTS = (process.env.BENCH_FLAGS ?? '10,100,1000').split(',').map(Number);
const SCALE_FLAGS = Number(process.env.BENCH_SCALE_FLAGS ?? 10);
const POSTGRES_URL = process.env.BENCH_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const mainJs = join(dirname(fileURLToPath(import.meta.url)), '..', 'src', 'main.js');

interface Row {
  name: string;
  flags: number | string;
  requestsPerSecond: number;
  p50: number;
  p99: number;
  rssMb: number | null;
  history: string;
  errors: number;
}

/** Samples the peak resident memory of a process (with its worker processes, for WORKERS) until stopped. */
function watchRss(pid: number, withChildren = false) {
  let peak = 0;
  const timer = setInterval(() => {
    try {
      peak = Math.max(peak, rssMb(pid, withChildren));
    } catch {
      // a process has exited
    }
  }, 200);
  return { stop: () => (clearInterval(timer), peak) };
}

function exited(child: ChildProcess): Promise<void> {
  return child.exitCode !== null ? Promise.resolve() : new Promise((resolve) => child.once('exit', () => resolve()));
}

/**
 * The same client work for every case: POST /sdk/v1/evaluate with a new user id in each body, so
 * the ratio to the ceiling compares servers, not load generators.
 */
async function load(url: string, sdkKey: string): Promise<autocannon.Result> {
  let n = 0;
  return autocannon({
    connections: CONNECTIONS,
    duration: SECONDS,
    url: `${url}/sdk/v1/evaluate`,
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-sdk-key': sdkKey },
    requests: [
      {
        setupRequest: (request) => {
          n++;
          request.body = `{"environment":"production","context":{"user_id":"user-${n}","user_email":"user-${n}@example.com"}}`;
          return request;
        },
      },
    ],
  });
}

/** A bare node:http server answering a fixed 2 KB JSON body: what this machine can do at all. */
async function ceiling(): Promise<Row> {
  const port = await freePort();
  const body = JSON.stringify({ flags: Object.fromEntries(Array.from({ length: 40 }, (_, i) => [`flag_${String(i).padStart(2, '0')}`, { enabled: i % 2 === 0, reason: 'Flag enabled globally' }])) });
  const script = `const body = Buffer.from(${JSON.stringify(body.padEnd(2048, ' '))});
require('node:http').createServer((req, res) => { req.resume(); req.on('end', () => { res.writeHead(200, { 'content-type': 'application/json', 'content-length': body.length }); res.end(body); }); }).listen(${port}, '127.0.0.1');`;
  const child = spawn(process.execPath, ['-e', script], { stdio: 'inherit' });
  try {
    await waitForPort(port);
    const rss = watchRss(child.pid!);
    const result = await load(`http://127.0.0.1:${port}`, 'sdk_ceiling');
    return { name: 'bare node:http, fixed 2 KB JSON', flags: '–', requestsPerSecond: result.requests.average, p50: result.latency.p50, p99: result.latency.p99, rssMb: rss.stop(), history: '–', errors: result.errors + result.non2xx };
  } finally {
    child.kill('SIGKILL');
  }
}

async function waitForPort(port: number): Promise<void> {
  for (let i = 0; i < 100; i++) {
    const ok = await fetch(`http://127.0.0.1:${port}/`, { method: 'POST', body: '{}' }).then(() => true, () => false);
    if (ok) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`nothing listens on ${port}`);
}



interface Setup {
  name: string;
  database: 'sqlite' | 'postgres';
  workers: number;
}

/** A fresh database for one case: a SQLite file, or a PostgreSQL database dropped afterwards. */
async function freshDatabase(kind: Setup['database']): Promise<{ url: string; drop(): Promise<void> }> {
  if (kind === 'sqlite') {
    const dir = mkdtempSync(join(tmpdir(), 'guidon-bench-'));
    return { url: `sqlite:${join(dir, 'guidon.db')}`, drop: async () => rmSync(dir, { recursive: true, force: true }) };
  }
  const name = `guidon_bench_${Date.now()}`;
  const admin = async (statement: string) => {
    const client = new pg.Client({ connectionString: POSTGRES_URL });
    await client.connect();
    await client.query(statement).finally(() => client.end());
  };
  await admin(`create database ${name}`);
  const url = new URL(POSTGRES_URL);
  url.pathname = `/${name}`;
  return { url: url.toString(), drop: () => admin(`drop database if exists ${name} with (force)`) };
}

async function guidon(flagCount: number, setup: Setup): Promise<Row> {
  const database = await freshDatabase(setup.database);
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  // BENCH_PROFILE=<dir>: the server writes a V8 CPU profile there (open it in Chrome DevTools).
  const profile = process.env.BENCH_PROFILE ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_PROFILE}`] : [];
  const child = spawn(process.execPath, [...profile, mainJs], {
    // warn: the seeding requests would log a line each; evaluate logs nothing per request at any level.
    env: { ...process.env, PORT: String(port), HOST: '127.0.0.1', DATABASE_URL: database.url, WORKERS: String(setup.workers), RATE_LIMIT_EVALUATE: '0', RATE_LIMIT_AUTH: '0', LOG_LEVEL: 'warn' },
    stdio: 'inherit',
  });
  try {
    await waitForHealth(url, child);
    const rss = watchRss(child.pid!, setup.workers > 1);
    const sdkKey = await seed(url, flagCount);
    const result = await load(url, sdkKey);
    child.kill('SIGTERM'); // flushes the buffered history before exiting
    await exited(child);
    const peak = rss.stop();
    const rows = await recorded(database.url);
    const evaluations = result['2xx'] * flagCount;
    const share = evaluations === 0 ? 0 : (100 * rows) / evaluations;
    return {
      name: setup.name,
      flags: flagCount,
      requestsPerSecond: result.requests.average,
      p50: result.latency.p50,
      p99: result.latency.p99,
      rssMb: peak,
      history: `${rows.toLocaleString('en')} / ${evaluations.toLocaleString('en')} (${share.toFixed(1)}%)`,
      errors: result.errors + result.non2xx,
    };
  } finally {
    child.kill('SIGKILL');
    await database.drop();
  }
}

const HISTORY_ROWS = Number(process.env.BENCH_HISTORY_ROWS ?? 1_000_000);

interface DeleteRow {
  database: string;
  /** p50 / p99 / max ms of the same load for 10 s just before, without a delete. */
  quiet: string;
  historyRows: number;
  deleteSeconds: number;
  requests: number;
  p50: number;
  p99: number;
  max: number;
  errors: number;
}

/**
 * The history delete: an environment (staging) holding HISTORY_ROWS history rows over 100 snapshots is
 * deleted while evaluate runs against another one (production, 10 flags, 10 connections: below
 * saturation, so the latency shows stalls rather than queueing). Latency is measured from just
 * before the DELETE is sent until it has answered.
 */
async function deleteWhileEvaluating(kind: Setup['database']): Promise<DeleteRow> {
  const database = await freshDatabase(kind);
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const child = spawn(process.execPath, [mainJs], {
    env: { ...process.env, PORT: String(port), HOST: '127.0.0.1', DATABASE_URL: database.url, WORKERS: '1', RATE_LIMIT_EVALUATE: '0', RATE_LIMIT_AUTH: '0', LOG_LEVEL: 'warn' },
    stdio: 'inherit',
  });
  try {
    await waitForHealth(url, child);
    const sdkKey = await seed(url, 10);
    const { token } = await call(url, 'POST', '/auth/login', null, { email: 'bench@example.com', password: 'benchmark password' });
    const [project] = await call(url, 'GET', '/api/projects', token);
    const environments = await call(url, 'GET', `/api/projects/${project.id}/environments`, token);
    const staging = environments.find((env: { key: string }) => env.key === 'staging').id as string;

    // The history, written straight to the database: 100 snapshots of 10 flags, rows spread over the last days.
    const filler = await openDatabase(loadConfig({ DATABASE_URL: database.url }).database, { migrate: false, poolSize: 2 });
    const snapshots = Array.from({ length: 100 }, () => crypto.randomUUID());
    const flagIds = JSON.stringify(Array.from({ length: 10 }, () => crypto.randomUUID()));
    const flagKeys = JSON.stringify(Array.from({ length: 10 }, (_, i) => `flag_${i}`));
    await filler.db.insertInto('evaluation_snapshots').values(snapshots.map((id) => ({ id, environment_id: staging, flag_ids: flagIds, flag_keys: flagKeys, created_at: new Date().toISOString() }))).execute();
    const outcomes = new Uint8Array(10).fill(1);
    const start = Date.now() - 3 * 24 * 3_600_000;
    for (let written = 0; written < HISTORY_ROWS; written += 10_000) {
      const rows = Array.from({ length: Math.min(10_000, HISTORY_ROWS - written) }, (_, i): [string, string, string, Uint8Array, string] => {
        const n = written + i;
        return [staging, snapshots[n % 100]!, `user-${n}`, outcomes, new Date(start + n * 100).toISOString()];
      });
      await insertEvaluations(filler, rows);
    }
    await filler.close();

    let n = 0;
    const evaluateLoad = (duration: number) => {
      let run!: autocannon.Instance;
      const finished = new Promise<autocannon.Result>((resolve, reject) => {
        run = autocannon({
          connections: 10,
          duration,
          url: `${url}/sdk/v1/evaluate`,
          method: 'POST',
          headers: { 'content-type': 'application/json', 'x-sdk-key': sdkKey },
          requests: [{ setupRequest: (request) => ((request.body = `{"environment":"production","context":{"user_id":"user-${++n}"}}`), request) }],
        }, (error, result) => (error ? reject(error) : resolve(result)));
      });
      return { stop: () => run.stop(), finished };
    };
    // The same load without a delete first: on a shared machine, the figures to compare against.
    const quiet = await evaluateLoad(10).finished;
    const run = evaluateLoad(3600);
    const began = Date.now();
    const deleted = await fetch(`${url}/api/projects/${project.id}/environments/${staging}`, { method: 'DELETE', headers: { authorization: `Bearer ${token}` } });
    const deleteSeconds = (Date.now() - began) / 1000;
    run.stop();
    const result = await run.finished;
    if (deleted.status !== 204) throw new Error(`DELETE answered ${deleted.status}`);
    return {
      database: kind === 'sqlite' ? 'SQLite' : 'PostgreSQL',
      quiet: `${quiet.latency.p50} / ${quiet.latency.p99} / ${quiet.latency.max}`,
      historyRows: HISTORY_ROWS,
      deleteSeconds,
      requests: result.requests.total,
      p50: result.latency.p50,
      p99: result.latency.p99,
      max: result.latency.max,
      errors: result.errors + result.non2xx,
    };
  } finally {
    child.kill('SIGKILL');
    await database.drop();
  }
}

const postgresAnswers = await new pg.Client({ connectionString: POSTGRES_URL }).connect().then(
  (client) => (void client.end(), true),
  () => false,
);

// BENCH_ONLY=delete runs the delete scenario alone; BENCH_ONLY=evaluate, the evaluate cases alone.
if (process.env.BENCH_ONLY !== 'delete') {
  const rows: Row[] = [await ceiling()];
  for (const count of FLAG_COUNTS) rows.push(await guidon(count, { name: 'Guidon evaluate, SQLite', database: 'sqlite', workers: 1 }));
  if (postgresAnswers) {
    rows.push(await guidon(SCALE_FLAGS, { name: 'Guidon evaluate, PostgreSQL', database: 'postgres', workers: 1 }));
    rows.push(await guidon(SCALE_FLAGS, { name: 'Guidon evaluate, SQLite, WORKERS=2', database: 'sqlite', workers: 2 }));
    rows.push(await guidon(SCALE_FLAGS, { name: 'Guidon evaluate, PostgreSQL, WORKERS=2', database: 'postgres', workers: 2 }));
  } else {
    console.warn('PostgreSQL does not answer: its rows and the WORKERS=2 rows are left out.');
  }
  const top = rows[0]!.requestsPerSecond;

  console.log(`\n${SECONDS} s per case, ${CONNECTIONS} connections, Node ${process.version}, ${new Date().toISOString()}\n`);
  console.log('| case | flags | req/s | p50 ms | p99 ms | server RSS peak MB | evaluations recorded in history / made | errors | share of ceiling |');
  console.log('|---|---:|---:|---:|---:|---:|---|---:|---:|');
  for (const row of rows) {
    console.log(
      `| ${row.name} | ${row.flags} | ${Math.round(row.requestsPerSecond).toLocaleString('en')} | ${row.p50} | ${row.p99} | ${row.rssMb === null ? '–' : row.rssMb.toFixed(0)} | ${row.history} | ${row.errors} | ${((100 * row.requestsPerSecond) / top).toFixed(1)}% |`,
    );
  }
}

// BENCH_DELETE_ON=sqlite (or postgres) runs the delete scenario on one database.
const deleteOn = (process.env.BENCH_DELETE_ON ?? 'sqlite,postgres').split(',');
const deletes: DeleteRow[] = [];
if (process.env.BENCH_ONLY !== 'evaluate') {
  if (deleteOn.includes('sqlite')) deletes.push(await deleteWhileEvaluating('sqlite'));
  if (deleteOn.includes('postgres') && postgresAnswers) deletes.push(await deleteWhileEvaluating('postgres'));
}
if (deletes.length > 0) console.log(`\nDeleting an environment with history while evaluate runs against another (10 connections), ${new Date().toISOString()}\n`);
if (deletes.length > 0) console.log('| database | without a delete: p50 / p99 / max ms | history rows deleted | DELETE took s | evaluate requests meanwhile | p50 ms | p99 ms | max ms | errors |\n|---|---|---:|---:|---:|---:|---:|---:|---:|');
for (const row of deletes) {
  console.log(`| ${row.database} | ${row.quiet} | ${row.historyRows.toLocaleString('en')} | ${row.deleteSeconds.toFixed(1)} | ${row.requests.toLocaleString('en')} | ${row.p50} | ${row.p99} | ${row.max} | ${row.errors} |`);
}
