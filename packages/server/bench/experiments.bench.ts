/**
 * `node packages/server/dist/bench/experiments.bench.js` (after npm run build): the scale of
 * experiments (docs/experiments.md; figures in docs/performance.md, "Experiments").
 *
 * 1. Intake: BENCH_SENDERS connections post batches of 500 items (250 exposures, 250 events) to
 *    POST /sdk/v1/events for BENCH_SECONDS, paced to BENCH_RATE items a second together (default
 *    50,000; 0: as fast as they can), while a probe sends evaluate at a paced 100 requests a
 *    second; the probe ran alone first (3 s to warm up, then BENCH_BASELINE_SECONDS, default 20),
 *    as the baseline. Prints items accepted a second, the probe's p50/p99 beside its baseline, and
 *    the rows in the database when the senders stopped (what the intake kept up with) and after
 *    the stop (SIGTERM) against the items accepted.
 * 2. Results: BENCH_UNITS exposed units (default 1,000,000) and BENCH_EVENTS events (default
 *    10,000,000) written straight into the database, then the time of the first GET .../results,
 *    which computes them (a running experiment is then computed in the background).
 *
 * SQLite by default; PostgreSQL with BENCH_DATABASE_URL=postgres://… (a database of its own is
 * created there for each case, and dropped). BENCH_ONLY=intake or results runs one case.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import BetterSqlite3 from 'better-sqlite3';
import { benchDatabase, benchProject, call, freePort, stop, waitForHealth } from './bench-seed.js';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 20);
const SENDERS = Number(process.env.BENCH_SENDERS ?? 4);
/** How long evaluate is probed alone, the baseline of its p99. */
const BASELINE_SECONDS = Number(process.env.BENCH_BASELINE_SECONDS ?? 20);
/** Items a second the senders aim at, together (0: as fast as they can). */
const RATE = Number(process.env.BENCH_RATE ?? 50_000);
const UNITS = Number(process.env.BENCH_UNITS ?? 1_000_000);
const EVENTS = Number(process.env.BENCH_EVENTS ?? 10_000_000);
const postgresUrl = process.env.BENCH_DATABASE_URL ?? null;
const mainJs = join(dirname(fileURLToPath(import.meta.url)), '..', 'src', 'main.js');

const quantile = (sorted: readonly number[], q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? NaN;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

interface Server {
  url: string;
  databaseUrl: string;
  /** Its files (SQLite's database among them). */
  dir: string;
  child: ChildProcess;
  stop(): Promise<void>;
  cleanUp(): Promise<void>;
}

async function startServer(databaseUrl?: string, dir = mkdtempSync(join(tmpdir(), 'guidon-experiments-'))): Promise<Server> {
  // A database passed in (the results case starts again on its file) is not created or dropped here.
  const database = databaseUrl ? { url: databaseUrl, drop: async () => {} } : await benchDatabase(dir);
  const url = database.url;
  const drop = database.drop;
  const port = await freePort();
  // BENCH_PROFILE=<dir>: the server writes a CPU profile there (profile-summary.ts reads it).
  const profile = process.env.BENCH_PROFILE ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_PROFILE}`] : [];
  const child = spawn(process.execPath, [...profile, mainJs], {
    env: { ...process.env, PORT: String(port), HOST: '127.0.0.1', DATABASE_URL: url, WORKERS: '1', RATE_LIMIT_EVALUATE: '0', RATE_LIMIT_AUTH: '0', RATE_LIMIT_EVENTS: '0', LOG_LEVEL: 'error' },
    stdio: 'inherit',
  });
  const server = `http://127.0.0.1:${port}`;
  await waitForHealth(server, child);
  return {
    url: server,
    databaseUrl: url,
    dir,
    child,
    stop: () => stop(child),
    cleanUp: async () => {
      await drop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** A project with a 50 % flag, a conversion and a count metric, and a running experiment on the flag. */
async function experimentOn(url: string) {
  const { token, project, production } = await benchProject(url);
  const base = `/api/projects/${project.id}`;
  await call(url, 'POST', `${base}/environments/${production.id}/flags`, token, { key: 'checkout', name: 'Checkout', enabled: true, rollout_percentage: 50 });
  const flags = await call(url, 'GET', `${base}/environments/${production.id}/flags`, token);
  const flag = flags.find((f: { key: string }) => f.key === 'checkout');
  const purchase = await call(url, 'POST', `${base}/metrics`, token, { key: 'purchase', name: 'Purchase', event: 'purchase', kind: 'conversion', better: 'higher' });
  const clicks = await call(url, 'POST', `${base}/metrics`, token, { key: 'clicks', name: 'Clicks', event: 'click', kind: 'count', better: 'higher' });
  const experiment = await call(url, 'POST', `${base}/environments/${production.id}/experiments`, token, {
    flag_id: flag.id,
    name: 'Checkout',
    control: 'off',
    metrics: [
      { metric_id: purchase.id, role: 'primary' },
      { metric_id: clicks.id, role: 'secondary' },
    ],
  });
  const path = `${base}/environments/${production.id}/experiments/${experiment.id}`;
  await call(url, 'POST', `${path}/start`, token);
  return { token, sdkKey: project.sdk_key as string, environmentId: production.id as string, path };
}

/**
 * Evaluate at a paced 100 a second for `seconds`, from a process of its own (the senders keep
 * this one busy: its timers would be late, not the server); latencies sorted.
 */
function pacedProbe(url: string, sdkKey: string, seconds: number): Promise<number[]> {
  const script = `
    const latencies = [];
    const end = performance.now() + ${seconds * 1000};
    let n = 0, next = performance.now();
    while (performance.now() < end) {
      const start = performance.now();
      await fetch(${JSON.stringify(url)} + '/sdk/v1/evaluate', { method: 'POST', headers: { 'content-type': 'application/json', 'x-sdk-key': ${JSON.stringify(sdkKey)} }, body: JSON.stringify({ environment: 'production', context: { user_id: 'probe-' + n++ } }) }).then((a) => a.arrayBuffer());
      latencies.push(performance.now() - start);
      next += 10;
      const wait = next - performance.now();
      if (wait > 0) await new Promise((r) => setTimeout(r, wait)); else next = performance.now();
    }
    process.stdout.write(JSON.stringify(latencies));`;
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout!.on('data', (chunk: Buffer) => (out += chunk.toString()));
    child.once('exit', (code) => (code === 0 ? resolve((JSON.parse(out) as number[]).sort((a, b) => a - b)) : reject(new Error(`probe exited ${code}`))));
  });
}

async function intake(): Promise<void> {
  const server = await startServer();
  try {
    const { sdkKey } = await experimentOn(server.url);
    // Bodies made before the clock starts: the bench measures the server, not JSON.stringify here.
    const bodies = Array.from({ length: 64 }, (_, b) =>
      JSON.stringify({
        environment: 'production',
        exposures: Array.from({ length: 250 }, (_, i) => ({ flag: 'checkout', unit: `user-${b}-${i}`, arm: i % 2 ? 'on' : 'off', reason: 'User in 50% rollout' })),
        events: Array.from({ length: 250 }, (_, i) => ({ name: i % 3 ? 'click' : 'purchase', unit: `user-${b}-${i}`, value: i % 7 })),
      }),
    );
    // Evaluate warmed up first (its first seconds after a start are slower), then alone for long
    // enough that its p99 is the 20th worst of 2,000 requests, not the 5th of 500.
    await pacedProbe(server.url, sdkKey, 3);
    const baseline = await pacedProbe(server.url, sdkKey, BASELINE_SECONDS);
    let accepted = 0;
    let refused = 0;
    let sending = true;
    const started = performance.now();
    // Each sender paces its batches so that together they aim at RATE items a second.
    const interval = RATE > 0 ? (500 * SENDERS * 1000) / RATE : 0;
    const sender = async (s: number) => {
      let next = performance.now();
      for (let k = s; sending; k += SENDERS) {
        next += interval;
        const wait = next - performance.now();
        if (wait > 0) await sleep(wait);
        const answer = await fetch(`${server.url}/sdk/v1/events`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-sdk-key': sdkKey }, body: bodies[k % bodies.length] });
        const json = (await answer.json()) as { accepted?: number };
        if (answer.status === 202) accepted += json.accepted ?? 0;
        else refused++;
      }
    };
    const probing = pacedProbe(server.url, sdkKey, SECONDS);
    const senders = Array.from({ length: SENDERS }, (_, s) => sender(s));
    await sleep(SECONDS * 1000);
    sending = false;
    await Promise.all(senders);
    const elapsed = (performance.now() - started) / 1000;
    const loaded = await probing; // it ends with the senders
    // Written while the senders sent: an intake slower than them builds a backlog that a short run hides (it is written at SIGTERM).
    const writtenAtStop = await countRows(server.databaseUrl);
    await server.stop(); // SIGTERM: what waits is written
    const rows = await countRows(server.databaseUrl);
    const database = postgresUrl ? 'PostgreSQL' : 'SQLite';
    console.log(`intake (${database}, ${SENDERS} senders aiming at ${RATE > 0 ? RATE.toLocaleString('en') + ' items/s' : 'all they can'}, batches of 500, ${SECONDS} s): ${Math.round(accepted / elapsed).toLocaleString('en')} items/s accepted, ${refused} refused; rows written when the senders stopped ${writtenAtStop.toLocaleString('en')}, after SIGTERM ${rows.toLocaleString('en')}, of ${accepted.toLocaleString('en')} accepted`);
    console.log(`  evaluate at 100/s: alone p50 ${quantile(baseline, 0.5).toFixed(2)} ms p99 ${quantile(baseline, 0.99).toFixed(2)} ms; during intake p50 ${quantile(loaded, 0.5).toFixed(2)} ms p99 ${quantile(loaded, 0.99).toFixed(2)} ms (${loaded.length} requests)`);
  } finally {
    await server.cleanUp();
  }
}

async function countRows(databaseUrl: string): Promise<number> {
  if (databaseUrl.startsWith('sqlite:')) {
    const db = new BetterSqlite3(databaseUrl.slice('sqlite:'.length), { readonly: true });
    const { n } = db.prepare('select (select count(*) from exposures) + (select count(*) from events) as n').get() as { n: number };
    db.close();
    return n;
  }
  const { default: pg } = await import('pg');
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  const { rows } = await client.query('select (select count(*) from exposures) + (select count(*) from events) as n');
  await client.end();
  return Number(rows[0].n);
}

/**
 * Writes the results case's rows straight into the database, the server stopped (ten million rows
 * through HTTP would take minutes of this bench): units user-0 … user-(UNITS − 1), one exposure
 * each in the hour after the experiment's start two hours ago, alternately off and on, and ten
 * events per unit after it, a fifth of them purchases.
 */
async function seedResults(databaseUrl: string, environmentId: string): Promise<void> {
  const now = Date.now();
  const started = new Date(now - 2 * 3_600_000).toISOString();
  if (databaseUrl.startsWith('sqlite:')) {
    const db = new BetterSqlite3(databaseUrl.slice('sqlite:'.length));
    db.pragma('journal_mode = WAL');
    db.prepare('update experiments set started_at = ?').run(started);
    const series = 'with recursive n(i) as (select 0 union all select i + 1 from n where i < ? - 1)';
    // Given consecutive ids in one statement: user-i is units.id base + i.
    db.prepare(`${series} insert into units (environment_id, unit) select ?, 'user-' || i from n`).run(UNITS, environmentId);
    const { base } = db.prepare('select min(id) as base from units where environment_id = ?').get(environmentId) as { base: number };
    db.prepare(`${series} insert into exposures (environment_id, flag_key, unit_id, arm, at) select ?, 'checkout', ? + i, case i % 2 when 1 then 'on' else 'off' end, ? + (i % 3000000) from n`).run(UNITS, environmentId, base, now - 3_600_000);
    db.prepare(`${series} insert into events (environment_id, name, unit_id, value, at) select ?, case i % 5 when 0 then 'purchase' else 'click' end, ? + (i * ? / ?), 1, ? + (i % 3000000) from n`).run(EVENTS, environmentId, base, UNITS, EVENTS, now - 3_500_000);
    db.close();
    return;
  }
  const { default: pg } = await import('pg');
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    await client.query('update experiments set started_at = $1', [started]);
    await client.query(`insert into units (environment_id, unit) select $1, 'user-' || i from generate_series(0, $2::bigint - 1) as i order by i`, [environmentId, UNITS]);
    const { rows } = await client.query('select min(id) as base from units where environment_id = $1', [environmentId]);
    const base = Number(rows[0].base);
    await client.query(`insert into exposures (environment_id, flag_key, unit_id, arm, at) select $1, 'checkout', $2::bigint + i, case i % 2 when 1 then 'on' else 'off' end, $3::bigint + (i % 3000000) from generate_series(0, $4::bigint - 1) as i order by i`, [environmentId, base, now - 3_600_000, UNITS]);
    await client.query(`insert into events (environment_id, name, unit_id, value, at) select $1, case i % 5 when 0 then 'purchase' else 'click' end, $2::bigint + (i * $3::bigint / $4::bigint), 1, $5::bigint + (i % 3000000) from generate_series(0, $4::bigint - 1) as i order by i`, [environmentId, base, UNITS, EVENTS, now - 3_500_000]);
    // As autovacuum would have left tables that grew this much: the planner's statistics are current.
    await client.query('vacuum analyze units, exposures, events');
  } finally {
    await client.end();
  }
}

async function results(): Promise<void> {
  const seeded = await startServer();
  let restarted: Server | undefined;
  try {
    const { token, environmentId, path } = await experimentOn(seeded.url);
    await seeded.stop();
    const seedStart = performance.now();
    await seedResults(seeded.databaseUrl, environmentId);
    console.log(`results: seeded ${UNITS.toLocaleString('en')} exposed units and ${EVENTS.toLocaleString('en')} events in ${((performance.now() - seedStart) / 1000).toFixed(1)} s`);
    const server = (restarted = await startServer(seeded.databaseUrl, seeded.dir));
    const start = performance.now();
    const answer = await call(server.url, 'GET', `${path}/results`, token);
    const computing = (performance.now() - start) / 1000;
    const again = performance.now();
    await call(server.url, 'GET', `${path}/results`, token);
    console.log(`results (${postgresUrl ? 'PostgreSQL' : 'SQLite'}): first GET (computes) ${computing.toFixed(1)} s for ${answer.units.toLocaleString('en')} units; the next GET (kept) ${(performance.now() - again).toFixed(1)} ms`);
    const rss = Number(readFileSync(`/proc/${server.child.pid}/status`, 'utf8').match(/VmHWM:\s+(\d+)/)?.[1] ?? 0) / 1024;
    console.log(`  server peak memory (VmHWM) ${rss.toFixed(0)} MB`);
  } finally {
    await restarted?.stop();
    await seeded.cleanUp();
  }
}

if (process.env.BENCH_ONLY !== 'results') await intake();
if (process.env.BENCH_ONLY !== 'intake') await results();
