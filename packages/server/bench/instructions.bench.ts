/**
 * npm run bench:instructions: what one POST /sdk/v1/evaluate costs in instructions, this build
 * against the reference builds (reference-build.ts), case by case as `npm run bench` has them.
 *
 * Why instructions: on this shared 2-CPU machine CPU time per request moved by ±9 % between rounds
 * of the same two builds, so a change that costs 5 % could not be seen by timing alone
 * (docs/performance.md, "Evaluate in instructions"). `valgrind --tool=callgrind` counts
 * the instructions each thread runs: the same for the same input whatever else the machine does.
 *
 * Per case and build: a server on a fresh SQLite file is seeded as the evaluate bench seeds it
 * (bench-seed.ts) and stopped; the same build is started again on that file under callgrind
 * (collection off, Node's flags from the build's `npm start`), warmed with BENCH_WARM_REQUESTS
 * (10,000: fewer left V8 still compiling in the counted window, and the count moved by 20 % between runs) evaluate requests (a new user_id each, 8 keep-alive connections, custom attributes in
 * the conditions case), then collection is switched on for BENCH_COUNTED_REQUESTS (2,000) and off
 * again (callgrind_control), and the server stopped. The figure: instructions of the main thread
 * (where evaluate runs) per counted request; all threads beside it (the history writer batches
 * by time, which valgrind slows, so that one is indicative only). Valgrind makes the counted
 * window some 50 times longer than it is, so the work timers do (the revision check every second,
 * the scheduler, hand-overs) would weigh 50 times too much: the same length of time without a
 * request is counted next, and subtracted.
 *
 * Cases as evaluate-wrk.bench.ts: BENCH_FLAGS ("10,100,1000"), BENCH_CONDITIONS=0,
 * BENCH_VARIANTS=0 leave cases out. BENCH_REFERENCE as there (`none`: this build alone).
 * BENCH_INSTRUCTIONS_KEEP=<dir>: the servers also run with --perf-basic-prof, and each case's
 * callgrind files are kept in <dir>/<case>-<build> with the perf map, for callgrind-summary.js
 * (which functions took them).
 * valgrind is Debian's package, installed with apt-get when missing. About 40 s to 2 minutes per process
 * (BENCH_INSTRUCTION_RUNS of them per build and case): some 20–30 minutes in all.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { tmpdir, userInfo } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { referenceBuilds } from './reference-build.js';
import { AGENTS, freePort, seed, seedConditions, seedVariants, startFlagsOf, stop, waitForHealth } from './bench-seed.js';

const WARM = Number(process.env.BENCH_WARM_REQUESTS ?? 10_000);
const COUNTED = Number(process.env.BENCH_COUNTED_REQUESTS ?? 2000);
const CONNECTIONS = 8;
/**
 * Processes per build and case; the median is the figure. The same build gave the same count
 * within 1 % in most processes, but some processes of e8c63e9 ran 15–20 % more (V8 chose other
 * code: object literals through the runtime, map migrations), as timing once showed it bimodal.
 */
const RUNS = Number(process.env.BENCH_INSTRUCTION_RUNS ?? 3);
const FLAG_COUNTS = (process.env.BENCH_FLAGS ?? '10,100,1000').split(',').filter(Boolean).map(Number);
const KEEP = process.env.BENCH_INSTRUCTIONS_KEEP;
/**
 * BENCH_SINGLE_THREADED=1: V8 compiles and collects garbage on the main thread too
 * (--single-threaded), so the main thread's count holds that work as well.
 */
const SINGLE = process.env.BENCH_SINGLE_THREADED === '1' ? ['--single-threaded'] : [];
const mainJs = join(dirname(fileURLToPath(import.meta.url)), '..', 'src', 'main.js');

interface Case {
  name: string;
  seed: (url: string) => Promise<string>;
  /** Requests carry the attributes the conditions read. */
  attributes: boolean;
  /** Whether a build's answer shows it did the case's work (a build without variants ignores them). */
  does: (answer: string) => boolean;
}

const cases: Case[] = [
  ...FLAG_COUNTS.map((count) => ({ name: `${count} flags`, seed: (url: string) => seed(url, count), attributes: false, does: () => true })),
  ...(process.env.BENCH_CONDITIONS === '0' ? [] : [{ name: '100 flags, conditions', seed: (url: string) => seedConditions(url, 100), attributes: true, does: () => true }]),
  ...(process.env.BENCH_VARIANTS === '0' ? [] : [{ name: '100 flags, variants', seed: (url: string) => seedVariants(url, 100), attributes: false, does: (answer: string) => answer.includes('"variant"') }]),
];

function ensureValgrind(): void {
  if (spawnSync('valgrind', ['--version']).error === undefined) return;
  console.warn("valgrind is missing: installing Debian's package (apt-get install valgrind)");
  const command = [...(process.getuid?.() === 0 ? [] : ['sudo']), 'apt-get', 'install', '-y', 'valgrind'];
  if (spawnSync(command[0]!, command.slice(1), { stdio: 'inherit' }).status !== 0) throw new Error('could not install valgrind; install it and run again');
}

/** The body of the n-th request: as the wrk bench's Lua script makes it. */
function body(n: number, attributes: boolean): string {
  const context: Record<string, unknown> = { user_id: `user-${n}`, user_email: `user-${n}@example.com` };
  if (attributes) context.custom_attributes = { customer: `customer-${n % 5000}`, app_version: `2.${n % 8}.0`, agent: AGENTS[n % 3] };
  return JSON.stringify({ environment: 'production', context });
}

/** `count` evaluate requests from `first` on, CONNECTIONS at a time; the answers' bodies of the first one. */
async function evaluate(url: string, sdkKey: string, first: number, count: number, attributes: boolean): Promise<string> {
  const agent = new Agent({ keepAlive: true, maxSockets: CONNECTIONS });
  let next = first;
  let sample = '';
  const one = (n: number) =>
    new Promise<void>((resolve, reject) => {
      const sent = body(n, attributes);
      const call = request(`${url}/sdk/v1/evaluate`, { method: 'POST', agent, headers: { 'content-type': 'application/json', 'x-sdk-key': sdkKey, 'content-length': Buffer.byteLength(sent) } }, (answer) => {
        let text = '';
        answer.setEncoding('utf8');
        answer.on('data', (chunk: string) => (text += chunk));
        answer.on('end', () => {
          if (answer.statusCode !== 200) return reject(new Error(`evaluate answered ${answer.statusCode}: ${text.slice(0, 200)}`));
          if (n === first) sample = text;
          resolve();
        });
      });
      call.on('error', reject);
      call.end(sent);
    });
  await Promise.all(
    Array.from({ length: CONNECTIONS }, async () => {
      while (next < first + count) await one(next++);
    }),
  );
  agent.destroy();
  return sample;
}


async function start(entry: string, databaseUrl: string, valgrindOut?: string): Promise<{ child: ChildProcess; url: string }> {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const node = [process.execPath, ...startFlagsOf(entry), ...(valgrindOut ? SINGLE : []), ...(KEEP ? ['--perf-basic-prof'] : []), entry];
  const command = valgrindOut
    ? ['valgrind', '--tool=callgrind', '--instr-atstart=no', '--separate-threads=yes', '--smc-check=all-non-file', `--callgrind-out-file=${valgrindOut}/callgrind.out`, `--log-file=${valgrindOut}/valgrind.log`, ...node]
    : node;
  const child = spawn(command[0]!, command.slice(1), {
    env: { ...process.env, USER: userInfo().username, PORT: String(port), HOST: '127.0.0.1', DATABASE_URL: databaseUrl, RATE_LIMIT_EVALUATE: '0', RATE_LIMIT_AUTH: '0', LOG_LEVEL: 'warn' },
    stdio: 'inherit',
  });
  await waitForHealth(url, child, '/health', valgrindOut ? 300_000 : 30_000);
  return { child, url };
}

/**
 * Switches callgrind's collection in a running process (the pid is valgrind's, which runs node).
 * vgdb finds the process by a file named after USER and HOST as the process has them: HOST is the
 * server's listening address here.
 */
function control(pid: number, command: string[]): void {
  const run = spawnSync('callgrind_control', [...command, String(pid)], { env: { ...process.env, USER: userInfo().username, HOST: '127.0.0.1' }, encoding: 'utf8' });
  if (!run.stdout?.includes('OK')) throw new Error(`callgrind_control ${command.join(' ')} did not reach ${pid}: ${run.stdout}${run.stderr}`);
}

/** Instructions a callgrind output file counted (its `totals:` line). */
function totalOf(file: string): number {
  const match = /^totals: (\d+)/m.exec(readFileSync(file, 'utf8'));
  return match ? Number(match[1]) : 0;
}

interface Count {
  /** Per request, less what the same time without requests took (timers: valgrind makes the window ~50 times longer than it is). */
  mainThread: number;
  allThreads: number;
  /** What was subtracted from the main thread's, per request. */
  idleMainThread: number;
}

/** Per request: main thread and all threads, for one build in one case. Null when the build cannot do the case. */
async function countOnce(entry: string, build: string, each: Case): Promise<Count | null> {
  const dir = mkdtempSync(join(tmpdir(), 'guidon-instructions-'));
  const databaseUrl = `sqlite:${join(dir, 'guidon.db')}`;
  try {
    const seeding = await start(entry, databaseUrl);
    let sdkKey: string;
    try {
      sdkKey = await each.seed(seeding.url);
      if (!each.does(await evaluate(seeding.url, sdkKey, 0, 1, each.attributes))) return null;
    } catch {
      return null; // a build without the case's feature refuses its seeding
    } finally {
      await stop(seeding.child);
    }
    const counted = await start(entry, databaseUrl, dir);
    try {
      await evaluate(counted.url, sdkKey, 1, WARM, each.attributes);
      control(counted.child.pid!, ['-i', 'on']);
      const began = performance.now();
      await evaluate(counted.url, sdkKey, 1 + WARM, COUNTED, each.attributes);
      const took = performance.now() - began;
      control(counted.child.pid!, ['-d']); // dump 1: the counted requests
      await new Promise((resolve) => setTimeout(resolve, took));
      control(counted.child.pid!, ['-d']); // dump 2: as long again, without a request
    } finally {
      await stop(counted.child);
    }
    // One file a dump and thread: callgrind.out.<dump>-01 is the main thread's.
    const files = readdirSync(dir).filter((name) => /^callgrind\.out\.[12]-\d+$/.test(name));
    const of = (dump: number, thread?: string) => files.filter((name) => name.startsWith(`callgrind.out.${dump}-${thread ?? ''}`)).reduce((sum, name) => sum + totalOf(join(dir, name)), 0);
    if (of(1, '01') === 0) throw new Error(`callgrind counted nothing (${dir}/valgrind.log)`);
    const result = { mainThread: (of(1, '01') - of(2, '01')) / COUNTED, allThreads: (of(1) - of(2)) / COUNTED, idleMainThread: of(2, '01') / COUNTED };
    if (KEEP) {
      const kept = join(KEEP, `${each.name}-${build}`.replace(/[^\w.-]+/g, '-'));
      rmSync(kept, { recursive: true, force: true });
      mkdirSync(kept, { recursive: true });
      for (const name of files) renameSync(join(dir, name), join(kept, name));
      const map = `/tmp/perf-${counted.child.pid}.map`;
      if (existsSync(map)) renameSync(map, join(kept, basename(map)));
      writeFileSync(join(kept, 'requests'), String(COUNTED));
    }
    return result;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** RUNS processes: the median by main thread, and every run's main thread count. */
async function count(entry: string, build: string, each: Case): Promise<(Count & { runs: number[] }) | null> {
  const counts: Count[] = [];
  for (let run = 0; run < RUNS; run++) {
    const counted = await countOnce(entry, build, each);
    if (!counted) return null;
    counts.push(counted);
  }
  counts.sort((a, b) => a.mainThread - b.mainThread);
  return { ...counts[Math.floor(counts.length / 2)]!, runs: counts.map((counted) => counted.mainThread) };
}

const fmt = (n: number) => Math.round(n).toLocaleString('en');
const change = (now: number, then: number) => `${now >= then ? '+' : ''}${((100 * (now - then)) / then).toFixed(1)} %`;

ensureValgrind();
const references = referenceBuilds();
console.log(`instructions bench: ${RUNS} processes a build and case, ${WARM} requests to warm, ${COUNTED} counted, ${CONNECTIONS} connections, Node ${process.version}; references: ${references.map((r) => `${r.name} (${r.sha.slice(0, 7)})`).join(', ') || 'none'}`);
const rows: string[] = [];
for (const each of cases) {
  const ours = await count(mainJs, 'this-build', each);
  if (!ours) throw new Error(`this build could not do the case ${each.name}`);
  const runs = (counted: { runs: number[] }) => counted.runs.map((value) => `${(value / 1000).toFixed(1)}k`).join(', ');
  let row = `| ${each.name} | ${fmt(ours.mainThread)} (${fmt(ours.idleMainThread)}; ${runs(ours)}) | ${fmt(ours.allThreads)} |`;
  let compared = false;
  for (const reference of references) {
    const theirs = await count(reference.mainJs, reference.sha.slice(0, 7), each);
    if (!theirs) continue;
    row += ` ${reference.name} (${reference.sha.slice(0, 7)}) | ${fmt(theirs.mainThread)} (${fmt(theirs.idleMainThread)}; ${runs(theirs)}) | **${change(ours.mainThread, theirs.mainThread)}** | ${fmt(theirs.allThreads)} |`;
    compared = true;
    break;
  }
  if (!compared) row += ' no reference could do this case | | | |';
  console.log(row);
  rows.push(row);
}
console.log('\n| case | main thread, this build (idle, subtracted; each run) | all threads, this build | reference | main thread, reference (idle, subtracted; each run) | main thread: change | all threads, reference |');
console.log('|---|---:|---:|---|---:|---:|---:|');
for (const row of rows) console.log(row);
