/**
 * npm run bench (after the engine bench): what POST /sdk/v1/evaluate costs the server, next to a bare node:http server on
 * the same Node answering the same number of bytes, measured A/B in one run (the machine is shared
 * and noisy; the ratios are what to compare across runs).
 *
 * Load comes from wrk (Debian's package; installed with apt-get when missing) with a Lua script
 * that sends a new user_id and user_email in every request. wrk is pinned to CPU 0 and the servers
 * to the other CPUs (taskset), so the client cannot take the server's CPU; the figure is requests
 * per second of the server's own CPU (utime + stime from /proc/<pid>/stat, worker processes
 * included), with the machine's busy % and steal % from /proc/stat beside it.
 *
 * Each flag count starts one Guidon (dist/src/main.js, fresh SQLite file, rate limits off) and
 * one bare server, warms both, then alternates bare / Guidon BENCH_ROUNDS times. At full load the
 * server is saturated, so its mean latency is connections ÷ req/s and p99 follows throughput: the
 * "tail" column divides p99 by that mean. Then each is measured once under paced load
 * (BENCH_PACE_MS between answer and next request per connection, default 12): latency when
 * the server is not the bottleneck.
 *
 * BENCH_FLAGS (default "10,100,1000"; empty: none), BENCH_CONDITIONS=0 (leaves out the conditions case), BENCH_VARIANTS=0 (the variants case), BENCH_PREREQUISITES=0 (the prerequisites case), BENCH_SECONDS per measurement (10), BENCH_ROUNDS (3),
 * BENCH_CONNECTIONS (50). BENCH_WORKERS=0 leaves out the WORKERS=auto comparison.
 * BENCH_PROFILE=<dir>: Guidon runs with --cpu-prof and writes its profiles there
 * (summarize with `node packages/server/dist/bench/profile-summary.js <dir>/<file>.cpuprofile`).
 * BENCH_REFERENCE (default the tags bench-reference and bench-reference-features, see
 * reference-build.ts; `none` to skip): each case also starts the first reference build that can
 * seed it (one without conditions cannot seed that case), seeded alike, and measures it in the
 * same rounds (this build and the reference in alternating order, after the bare server), each round
 * after the first in new processes of both (BENCH_FRESH_PROCESSES): a second table gives both per
 * CPU-second and the change in %.
 * BENCH_SOAK_SECONDS=<n>: instead of the above, one Guidon with BENCH_SOAK_FLAGS (10) flags under
 * load for n seconds, its RSS printed every BENCH_SOAK_EVERY seconds (60).
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { referenceBuilds, type Reference } from './reference-build.js';
import { AGENTS, childrenOf, freePort, recorded, rssMb, seed, seedConditions, seedPrerequisites, seedVariants, startFlagsOf, stop, waitForHealth } from './bench-seed.js';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 50);
const FLAG_COUNTS = (process.env.BENCH_FLAGS ?? '10,100,1000').split(',').filter(Boolean).map(Number);
/** The conditions case: 100 flags each with a 3-condition rule (BENCH_CONDITIONS=0 leaves it out). */
const WITH_CONDITIONS = process.env.BENCH_CONDITIONS !== '0';
/** The variants case: 100 flags, half with three variants by weight (BENCH_VARIANTS=0 leaves it out). */
const WITH_VARIANTS = process.env.BENCH_VARIANTS !== '0';
/** 100 flags, half needing another in chains of 1–5 links, some off for everyone (BENCH_PREREQUISITES=0 leaves it out). */
const WITH_PREREQUISITES = process.env.BENCH_PREREQUISITES !== '0';
const WITH_WORKERS = process.env.BENCH_WORKERS !== '0';
/**
 * Each round after the first measures both builds in new processes (restarted on their seeded
 * databases, warmed again): the same build measured against itself differed by up to 15 % between
 * one pair of processes and the next on this machine, and stayed that far apart for as long as the
 * two processes lived (docs/performance.md), so one pair per case decided a whole case.
 * BENCH_FRESH_PROCESSES=0: the same two processes for every round, as before.
 */
const FRESH_PROCESSES = process.env.BENCH_FRESH_PROCESSES !== '0';
const PROFILE_DIR = process.env.BENCH_PROFILE;
const SOAK_SECONDS = Number(process.env.BENCH_SOAK_SECONDS ?? 0);
/** Paced load: each connection waits this long before its next request (50 connections: about 4,000 req/s, well under either server's ceiling). */
const PACE_MS = Number(process.env.BENCH_PACE_MS ?? 12);
/** BENCH_MAIN_JS: another build of the server to measure (e.g. the one before a change). */
const mainJs = process.env.BENCH_MAIN_JS ?? join(dirname(fileURLToPath(import.meta.url)), '..', 'src', 'main.js');
/** BENCH_NODE_FLAGS: more Node flags for every Guidon server of the run (both builds), e.g. `--trace-gc`. */
const EXTRA_FLAGS = (process.env.BENCH_NODE_FLAGS ?? '').split(' ').filter(Boolean);
const CLOCK_TICKS = 100; // USER_HZ: /proc reports CPU time in 1/100 s on Linux

const cpus = availableParallelism();
/** wrk on CPU 0, servers on the rest; with one CPU nothing is pinned. */
const pinned = cpus > 1;
const LOAD_CPUS = '0';
const SERVER_CPUS = cpus > 2 ? `1-${cpus - 1}` : '1';
const onCpus = (list: string, command: string[]) => (pinned ? ['taskset', '-c', list, ...command] : command);

function ensureWrk(): void {
  if (spawnSync('wrk', ['-v']).error === undefined) return;
  console.warn('wrk is missing: installing Debian\'s package (apt-get install wrk)');
  const command = [...(process.getuid?.() === 0 ? [] : ['sudo']), 'apt-get', 'install', '-y', 'wrk'];
  const install = spawnSync(command[0]!, command.slice(1), { stdio: 'inherit' });
  if (install.status !== 0) throw new Error('could not install wrk; install it (apt-get install wrk) and run again');
}

/** Every request: a new user id and email, the same headers for Guidon and the bare server. */
const LUA = `
local n = 0
wrk.method = "POST"
wrk.headers["content-type"] = "application/json"
wrk.headers["x-sdk-key"] = os.getenv("BENCH_SDK_KEY") or "none"
-- Paced (BENCH_DELAY_MS): each connection waits that long before its next request, so the
-- offered load stays under what the server can do and latency is not queueing behind saturation.
local pace = tonumber(os.getenv("BENCH_DELAY_MS") or "0")
local attributes = os.getenv("BENCH_ATTRIBUTES") == "1"
local agents = { ${AGENTS.map((agent) => JSON.stringify(agent)).join(', ')} }
if pace > 0 then delay = function() return pace end end
request = function()
  n = n + 1
  if attributes then
    -- The conditions case: attributes that its conditions read (customers 0–4999, versions 2.0.0–2.7.0, three agents).
    return wrk.format(nil, nil, nil, '{"environment":"production","context":{"user_id":"user-' .. n .. '","user_email":"user-' .. n .. '@example.com","custom_attributes":{"customer":"customer-' .. (n % 5000) .. '","app_version":"2.' .. (n % 8) .. '.0","agent":"' .. agents[n % 3 + 1] .. '"}}}')
  end
  return wrk.format(nil, nil, nil, '{"environment":"production","context":{"user_id":"user-' .. n .. '","user_email":"user-' .. n .. '@example.com"}}')
end
done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format('BENCH {"requests":%d,"us":%d,"p50":%d,"p99":%d,"errors":%d,"status":%d}\\n',
    summary.requests, summary.duration, latency:percentile(50), latency:percentile(99), e.connect + e.read + e.write + e.timeout, e.status))
end
`;
const luaFile = join(mkdtempSync(join(tmpdir(), 'guidon-wrk-')), 'evaluate.lua');
writeFileSync(luaFile, LUA);

interface Load {
  requests: number;
  seconds: number;
  p50Ms: number;
  p99Ms: number;
  errors: number;
  non2xx: number;
}

/** delayMs: each connection waits that long between answer and next request (paced load); 0: as fast as answers come. */
/** Whether wrk's requests carry custom_attributes (the conditions case). */
let sendAttributes = false;

function wrk(url: string, sdkKey: string, seconds: number, delayMs = 0): Promise<Load> {
  const args = onCpus(LOAD_CPUS, ['wrk', '-t1', `-c${CONNECTIONS}`, `-d${seconds}s`, '--timeout', '5s', '-s', luaFile, `${url}/sdk/v1/evaluate`]);
  const child = spawn(args[0]!, args.slice(1), { env: { ...process.env, BENCH_SDK_KEY: sdkKey, BENCH_DELAY_MS: String(delayMs), BENCH_ATTRIBUTES: sendAttributes ? '1' : '0' }, stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  child.stdout.on('data', (chunk) => (out += chunk));
  return new Promise((resolve, reject) => {
    child.on('error', reject);
    child.on('exit', () => {
      const line = /^BENCH (.*)$/m.exec(out);
      if (!line) return reject(new Error(`wrk gave no result:\n${out}`));
      const r = JSON.parse(line[1]!);
      resolve({ requests: r.requests, seconds: r.us / 1e6, p50Ms: r.p50 / 1000, p99Ms: r.p99 / 1000, errors: r.errors, non2xx: r.status });
    });
  });
}

/** CPU seconds used so far by a process and its child processes (the workers of WORKERS). */
function cpuSeconds(pid: number): number {
  let ticks = 0;
  for (const each of [pid, ...childrenOf(pid)]) {
    try {
      const fields = readFileSync(`/proc/${each}/stat`, 'utf8').split(') ')[1]!.split(' ');
      ticks += Number(fields[11]) + Number(fields[12]); // utime, stime (fields 14 and 15)
    } catch {
      // exited
    }
  }
  return ticks / CLOCK_TICKS;
}

/** The machine: jiffies of all CPUs (busy, steal, total) for busy % and steal % over a window. */
function machine() {
  const [, ...values] = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/);
  const [user, nice, system, idle, iowait, irq, softirq, steal] = values.map(Number) as number[];
  const total = user! + nice! + system! + idle! + iowait! + irq! + softirq! + steal!;
  return { busy: total - idle! - iowait!, steal: steal!, total };
}

interface Measure extends Load {
  cpu: number;
  busyPct: number;
  stealPct: number;
}

async function measure(pid: number, url: string, sdkKey: string, seconds = SECONDS, delayMs = 0): Promise<Measure> {
  const cpu0 = cpuSeconds(pid);
  const m0 = machine();
  const load = await wrk(url, sdkKey, seconds, delayMs);
  const cpu = cpuSeconds(pid) - cpu0;
  const m1 = machine();
  const total = m1.total - m0.total;
  return { ...load, cpu, busyPct: (100 * (m1.busy - m0.busy)) / total, stealPct: (100 * (m1.steal - m0.steal)) / total };
}


/** A bare node:http server answering `body` (the bytes of a real Guidon answer) to every request. */
async function bare(body: Buffer): Promise<{ child: ChildProcess; url: string }> {
  const port = await freePort();
  const script = `const body = Buffer.from(${JSON.stringify(body.toString('base64'))}, 'base64');
require('node:http').createServer((req, res) => { req.resume(); req.on('end', () => { res.writeHead(200, { 'content-type': 'application/json; charset=utf-8', 'content-length': body.length }); res.end(body); }); }).listen(${port}, '127.0.0.1');`;
  const args = onCpus(SERVER_CPUS, [process.execPath, '-e', script]);
  const child = spawn(args[0]!, args.slice(1), { stdio: 'inherit' });
  const url = `http://127.0.0.1:${port}`;
  await waitForHealth(url, child, '/');
  return { child, url };
}

interface Guidon {
  child: ChildProcess;
  url: string;
  databaseUrl: string;
  /** SIGTERM: the server flushes the buffered history first. */
  stop(): Promise<void>;
  /** Stops it and starts the same build on the same database: a new process (see FRESH_PROCESSES). */
  restart(): Promise<Guidon>;
  /** Stops it and deletes its database. */
  remove(): Promise<void>;
}

async function guidon(workers: string, profile = false, pin = true, entry = mainJs, dir = mkdtempSync(join(tmpdir(), 'guidon-bench-'))): Promise<Guidon> {
  const databaseUrl = `sqlite:${join(dir, 'guidon.db')}`;
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const flags = profile && PROFILE_DIR ? ['--cpu-prof', `--cpu-prof-dir=${PROFILE_DIR}`] : [];
  const command = [process.execPath, ...startFlagsOf(entry), ...EXTRA_FLAGS, ...flags, entry];
  const args = pin ? onCpus(SERVER_CPUS, command) : command;
  const child = spawn(args[0]!, args.slice(1), {
    // warn: the seeding requests would log a line each; evaluate logs nothing per request at any level.
    env: { ...process.env, PORT: String(port), HOST: '127.0.0.1', DATABASE_URL: databaseUrl, WORKERS: workers, RATE_LIMIT_EVALUATE: '0', RATE_LIMIT_AUTH: '0', LOG_LEVEL: 'warn' },
    stdio: 'inherit',
  });
  let stopping = false;
  // A server that dies under load (or is killed from outside) says how, instead of wrk's "connection refused" alone.
  child.once('exit', (code, signal) => {
    if (!stopping) console.error(`Guidon ${entry} (pid ${child.pid}) exited: code ${code}, signal ${signal}`);
  });
  await waitForHealth(url, child);
  return {
    child,
    url,
    databaseUrl,
    restart: async () => {
      stopping = true;
      await stop(child);
      return guidon(workers, profile, pin, entry, dir);
    },
    stop: () => {
      stopping = true;
      return stop(child);
    },
    async remove() {
      stopping = true;
      await stop(child);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}



async function sampleAnswer(url: string, sdkKey: string): Promise<Buffer> {
  const response = await fetch(`${url}/sdk/v1/evaluate`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-sdk-key': sdkKey },
    body: JSON.stringify({ environment: 'production', context: { user_id: 'user-1', user_email: 'user-1@example.com' } }),
  });
  if (response.status !== 200) throw new Error(`evaluate answered ${response.status}`);
  return Buffer.from(await response.arrayBuffer());
}

const perCpu = (m: Measure) => m.requests / m.cpu;
/**
 * A closed loop of CONNECTIONS connections, each waiting for its answer before the next request,
 * has a mean latency of CONNECTIONS ÷ req/s (Little's law): on a saturated server, p99 follows
 * throughput. p99 ÷ that mean is the tail itself, comparable between Guidon and the bare server.
 */
const tail = (m: Measure) => m.p99Ms / ((1000 * CONNECTIONS * m.seconds) / m.requests);
/** The figure of a case: the median of its rounds, so one round in a noisy moment does not move it. */
const median = (values: number[]) => [...values].sort((x, y) => x - y)[Math.floor(values.length / 2)]!;
const sum = (ms: Measure[], f: (m: Measure) => number) => ms.reduce((total, m) => total + f(m), 0);
const fmt = (n: number, digits = 0) => n.toLocaleString('en', { maximumFractionDigits: digits, minimumFractionDigits: digits });
const state = (ms: Measure[]) => `${fmt(sum(ms, (m) => m.busyPct) / ms.length)} / ${fmt(sum(ms, (m) => m.stealPct) / ms.length, 1)}`;

/** Alternates A and B (B first), ROUNDS times each: the noisy machine hits both alike. */
async function alternate(a: () => Promise<Measure>, b: () => Promise<Measure>) {
  const as: Measure[] = [];
  const bs: Measure[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    bs.push(await b());
    as.push(await a());
  }
  return { as, bs };
}

const header = '| case | flags | answer bytes | server req per CPU-s | bare node:http req per CPU-s | ratio: median (per round) | req/s | server CPU % | p50 / p99 ms (medians) | bare p99 ms | tail: p99 ÷ mean, Guidon / bare | paced: req/s, p50 / p99 ms, Guidon (bare) | errors | history recorded / made | busy % / steal % |';

/** The reference builds (reference-build.ts), built before the first case; none: this build alone. */
let references: Reference[] = [];
/** Rows of the comparison table, one a case. */
const comparisons: string[] = [];

async function evaluateCase(flagCount: number, conditions = false, variants = false, prerequisites = false): Promise<string> {
  const started = Date.now();
  const caseName = `${flagCount} flags${conditions ? ', conditions' : ''}${variants ? ', variants' : ''}${prerequisites ? ', prerequisites' : ''}`;
  const seedOf = (url: string) => (conditions ? seedConditions(url, flagCount) : variants ? seedVariants(url, flagCount) : prerequisites ? seedPrerequisites(url, flagCount) : seed(url, flagCount));
  let server = await guidon('1', true);
  const sdkKey = await seedOf(server.url);
  sendAttributes = conditions;
  const answer = await sampleAnswer(server.url, sdkKey);
  const ceiling = await bare(answer);
  let old: { server: Guidon; sdkKey: string; reference: Reference } | null = null;
  for (const reference of references) {
    const oldServer = await guidon('1', true, true, reference.mainJs);
    try {
      const oldKey = await seedOf(oldServer.url);
      // A build that ignores the variants it was sent would answer without them: not the same work.
      if (variants && !(await sampleAnswer(oldServer.url, oldKey)).includes('"variant"')) throw new Error('no variants');
      if (prerequisites && !(await sampleAnswer(oldServer.url, oldKey)).includes('"Prerequisite ')) throw new Error('no prerequisites');
      old = { server: oldServer, sdkKey: oldKey, reference };
      break;
    } catch {
      await oldServer.remove(); // a feature it does not have: the next reference
    }
  }
  if (old === null && references.length > 0) comparisons.push(`| ${caseName} | no reference build could seed this case | | | | | | |`);
  try {
    if (PROFILE_DIR) console.error(`profiles: Guidon pid ${server.child.pid}${old ? `, reference pid ${old.server.child.pid}` : ''}; the load starts about ${((Date.now() - started) / 1000 + 3).toFixed(1)} s after the start (after the warm-up)`);
    const warmups = [await wrk(server.url, sdkKey, 3)]; // warm-up: JIT, compiled project
    if (old) await wrk(old.server.url, old.sdkKey, 3);
    await wrk(ceiling.url, sdkKey, 3);
    const as: Measure[] = [];
    const bs: Measure[] = [];
    const rs: Measure[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      if (FRESH_PROCESSES && round > 0 && old) {
        server = await server.restart();
        warmups.push(await wrk(server.url, sdkKey, 3));
        old.server = await old.server.restart();
        await wrk(old.server.url, old.sdkKey, 3);
      }
      bs.push(await measure(ceiling.child.pid!, ceiling.url, sdkKey));
      // This build and the reference take turns at going first: the noisy machine hits both alike.
      if (old && round % 2 === 0) rs.push(await measure(old.server.child.pid!, old.server.url, old.sdkKey));
      as.push(await measure(server.child.pid!, server.url, sdkKey));
      if (old && round % 2 === 1) rs.push(await measure(old.server.child.pid!, old.server.url, old.sdkKey));
    }
    if (old) {
      const perCpuOf = (ms: Measure[]) => sum(ms, (m) => m.requests) / sum(ms, (m) => m.cpu);
      const change = (now: number, then: number) => `${now >= then ? '+' : ''}${((100 * (now - then)) / then).toFixed(1)} %`;
      const rounds = as.map((m, i) => change(perCpu(m), perCpu(rs[i]!))).join(', ');
      comparisons.push(`| ${caseName} | ${old.reference.name} (${old.reference.sha.slice(0, 7)}) | ${fmt(perCpuOf(rs))} | ${fmt(perCpuOf(as))} | **${change(perCpuOf(as), perCpuOf(rs))}** | ${rounds} | ${(perCpuOf(rs) / perCpuOf(bs)).toFixed(2)} / ${(perCpuOf(as) / perCpuOf(bs)).toFixed(2)} | ${state([...as, ...rs])} |`);
      await old.server.remove();
      old = null;
    }
    // Latency where the server is not saturated: what an application sees on an ordinary day.
    const pacedBare = await measure(ceiling.child.pid!, ceiling.url, sdkKey, SECONDS, PACE_MS);
    const paced = await measure(server.child.pid!, server.url, sdkKey, SECONDS, PACE_MS);
    await server.stop();
    const made = 1 + [...as, paced, ...warmups].reduce((total, m) => total + m.requests - m.non2xx, 0); // the sample answer, the measurements, the warm-ups
    const guidonPerCpu = sum(as, (m) => m.requests) / sum(as, (m) => m.cpu);
    const barePerCpu = sum(bs, (m) => m.requests) / sum(bs, (m) => m.cpu);
    const ratios = as.map((m, i) => perCpu(m) / perCpu(bs[i]!));
    const p99 = median(as.map((m) => m.p99Ms));
    const p50 = median(as.map((m) => m.p50Ms));
    const seconds = sum(as, (m) => m.seconds);
    return `| Guidon evaluate, SQLite${conditions ? ', a 3-condition rule per flag (IN of 1,000, SEMVER_GTE, REGEX)' : ''}${variants ? ', half the flags with three variants by weight' : ''}${prerequisites ? ', half the flags needing another: chains of 1–5 links from a disabled flag (off for everyone) or a 50% rollout' : ''} | ${flagCount} | ${answer.length} | ${fmt(guidonPerCpu)} | ${fmt(barePerCpu)} | **${median(ratios).toFixed(2)}** (${ratios.map((r) => r.toFixed(2)).join(', ')}) | ${fmt(sum(as, (m) => m.requests) / seconds)} | ${fmt((100 * sum(as, (m) => m.cpu)) / seconds)} | ${fmt(p50, 1)} / ${fmt(p99, 1)} | ${fmt(median(bs.map((m) => m.p99Ms)), 1)} | ${fmt(median(as.map(tail)), 1)} / ${fmt(median(bs.map(tail)), 1)} | ${fmt(paced.requests / paced.seconds)}, ${fmt(paced.p50Ms, 1)} / ${fmt(paced.p99Ms, 1)} (${fmt(pacedBare.requests / pacedBare.seconds)}, ${fmt(pacedBare.p50Ms, 1)} / ${fmt(pacedBare.p99Ms, 1)}) | ${sum([...as, paced], (m) => m.errors + m.non2xx)} | ${await historyShare(server.databaseUrl, flagCount, made)} | ${state([...as, ...bs])} |`;
  } finally {
    if (old) await old.server.remove();
    await stop(ceiling.child, 'SIGKILL');
    await server.remove();
  }
}

/**
 * History check: requests the database holds against the 200s wrk counted. A few more are
 * recorded than counted: wrk stops counting while its last requests are still being answered.
 */
async function historyShare(databaseUrl: string, flagCount: number, made: number): Promise<string> {
  const requests = (await recorded(databaseUrl)) / flagCount;
  return `${fmt(requests)} / ${fmt(made)} (${((100 * requests) / made).toFixed(1)}%)`;
}

/** WORKERS=auto against one process, both pinned to the CPUs wrk leaves free, alternated. */
async function workersCase(flagCount: number, pin: boolean): Promise<string> {
  const one = await guidon('1', false, pin);
  const auto = await guidon('auto', false, pin);
  try {
    const keyOne = await seed(one.url, flagCount);
    const keyAuto = await seed(auto.url, flagCount);
    await wrk(one.url, keyOne, 3);
    await wrk(auto.url, keyAuto, 3);
    const { as, bs } = await alternate(
      () => measure(auto.child.pid!, auto.url, keyAuto),
      () => measure(one.child.pid!, one.url, keyOne),
    );
    const rate = (ms: Measure[]) => sum(ms, (m) => m.requests) / sum(ms, (m) => m.seconds);
    const cpuRate = (ms: Measure[]) => sum(ms, (m) => m.requests) / sum(ms, (m) => m.cpu);
    const processes = childrenOf(auto.child.pid!).length || 1;
    const where = pin && pinned ? `server on CPU ${SERVER_CPUS}, wrk on CPU ${LOAD_CPUS}` : 'nothing pinned (wrk shares the CPUs)';
    return `| WORKERS=auto (${processes} worker${processes > 1 ? 's' : ''}) vs WORKERS=1, ${where} | ${flagCount} | ${fmt(rate(as))} vs ${fmt(rate(bs))} req/s: **${(rate(as) / rate(bs)).toFixed(2)}×** | ${fmt(cpuRate(as))} vs ${fmt(cpuRate(bs))} req per CPU-s (${(cpuRate(as) / cpuRate(bs)).toFixed(2)}×) | ${fmt(Math.max(...as.map((m) => m.p99Ms)), 1)} vs ${fmt(Math.max(...bs.map((m) => m.p99Ms)), 1)} | ${state([...as, ...bs])} |`;
  } finally {
    await one.remove();
    await auto.remove();
  }
}

/** RSS of one server under continuous load, sampled while wrk runs. */
async function soak(): Promise<void> {
  const flagCount = Number(process.env.BENCH_SOAK_FLAGS ?? 10);
  const every = Number(process.env.BENCH_SOAK_EVERY ?? 60);
  const server = await guidon('1');
  try {
    const sdkKey = await seed(server.url, flagCount);
    console.log(`\nRSS of one Guidon (${flagCount} flags) under load for ${SOAK_SECONDS} s, ${CONNECTIONS} connections, Node ${process.version}, ${new Date().toISOString()}\n`);
    console.log('| minute | RSS MB | req/s in the slice | p99 ms | busy % / steal % |');
    console.log('|---:|---:|---:|---:|---|');
    console.log(`| 0 (seeded, idle) | ${rssMb(server.child.pid!, true).toFixed(0)} | – | – | – |`);
    for (let t = every; t <= SOAK_SECONDS; t += every) {
      const m = await measure(server.child.pid!, server.url, sdkKey, every);
      console.log(`| ${fmt(t / 60, 1)} | ${rssMb(server.child.pid!, true).toFixed(0)} | ${fmt(m.requests / m.seconds)} | ${fmt(m.p99Ms, 1)} | ${state([m])} |`);
    }
  } finally {
    await server.remove();
  }
}

ensureWrk();
if (SOAK_SECONDS > 0) {
  await soak();
} else {
  console.log(`\n${SECONDS} s per measurement, ${ROUNDS} rounds alternated, ${CONNECTIONS} connections, wrk -t1, Node ${process.version}, ${cpus} CPUs (${pinned ? `wrk on CPU ${LOAD_CPUS}, servers on CPU ${SERVER_CPUS}` : 'nothing pinned'}), ${new Date().toISOString()}\n`);
  references = referenceBuilds();
  console.log(header);
  console.log('|---|---:|---:|---:|---:|---|---:|---:|---|---:|---|---|---:|---|---|');
  for (const count of FLAG_COUNTS) console.log(await evaluateCase(count));
  if (WITH_CONDITIONS) console.log(await evaluateCase(100, true));
  if (WITH_VARIANTS) console.log(await evaluateCase(100, false, true));
  if (WITH_PREREQUISITES) console.log(await evaluateCase(100, false, false, true));
  if (references.length > 0) {
    console.log(`\nAgainst a reference build (the first of ${references.map((r) => r.name).join(', ')} that can seed the case), same rounds, req per server CPU-second (change: this build against the reference)\n`);
    console.log('| case | reference build | reference | this build | change | per round | of bare: reference / this build | busy % / steal % |');
    console.log('|---|---|---:|---:|---:|---|---|---|');
    for (const row of comparisons) console.log(row);
  }
  sendAttributes = false;
  if (WITH_WORKERS) {
    console.log('\n| case | flags | throughput | per CPU-second | p99 ms | busy % / steal % |');
    console.log('|---|---:|---|---|---|---|');
    console.log(await workersCase(10, true));
    if (pinned && cpus === 2) console.log(await workersCase(10, false));
  }
}
rmSync(dirname(luaFile), { recursive: true, force: true });
