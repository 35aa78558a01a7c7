/**
 * `node packages/server/dist/bench/start.bench.js` (in npm run bench): how long a server takes to
 * start, as an orchestrator sees it.
 *
 * Each start spawns `node <main.js>` on SQLite and times it from the spawn to the first 200 of
 * GET /ready (GET /health for a build that has no /ready), probed every 3 ms; beside the wall time,
 * the CPU time the process had used by then (its threads included), steadier when the machine is
 * shared. Two databases: an empty one (a new file each start: migrations included) and one with
 * 1,000 flags (a quarter with three rules each; seeded once, copied before each start).
 * BENCH_STARTS (10) starts per case and build.
 *
 * BENCH_BASE_MAIN_JS=<another build>/packages/server/dist/src/main.js measures that build too,
 * alternated start by start with this one, in the same run. The test harness's start (startServer
 * in packages/server/tests/harness.ts, in one process as a test file does: the first start loads
 * the modules, the others do not) is measured for each build as well.
 */
import { spawn, spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { get } from 'node:http';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { freePort, seed, waitForHealth } from './bench-seed.js';
import { busyBetween, cpuJiffies, loadAverage, median, processCpuSeconds } from './machine.js';

const STARTS = Number(process.env.BENCH_STARTS ?? 10);
const FLAGS = 1000;
const here = dirname(fileURLToPath(import.meta.url));
const builds = [
  ...(process.env.BENCH_BASE_MAIN_JS ? [{ name: 'base', mainJs: process.env.BENCH_BASE_MAIN_JS }] : []),
  { name: 'this build', mainJs: join(here, '..', 'src', 'main.js') },
];

/** The status of one GET, or 0 when nothing answers yet. */
const probe = (port: number, path: string) =>
  new Promise<number>((resolve) => {
    const request = get({ host: '127.0.0.1', port, path, agent: false, timeout: 1000 }, (response) => {
      response.resume();
      resolve(response.statusCode ?? 0);
    });
    request.on('error', () => resolve(0));
    request.on('timeout', () => request.destroy());
  });

/** The readiness path of a build: /ready, or /health where /ready is not found. */
const readinessPaths = new Map<string, string>();

interface Start {
  wallMs: number;
  cpuMs: number;
}

async function startOnce(mainJs: string, databaseFile: string): Promise<Start> {
  const port = await freePort();
  const env = { ...process.env, PORT: String(port), HOST: '127.0.0.1', DATABASE_URL: `sqlite:${databaseFile}`, LOG_LEVEL: 'warn' };
  const started = performance.now();
  const child = spawn(process.execPath, [mainJs], { env, stdio: ['ignore', 'ignore', 'inherit'] });
  const exited = new Promise((resolve) => child.once('exit', resolve));
  try {
    for (;;) {
      if (child.exitCode !== null) throw new Error(`${mainJs} exited with ${child.exitCode}`);
      const path = readinessPaths.get(mainJs) ?? '/ready';
      const status = await probe(port, path);
      if (status === 200) return { wallMs: performance.now() - started, cpuMs: processCpuSeconds(child.pid!) * 1000 };
      if (status === 404 && path === '/ready') readinessPaths.set(mainJs, '/health');
      if (status === 0 || status === 503) await new Promise((resolve) => setTimeout(resolve, 3));
    }
  } finally {
    child.kill('SIGKILL');
    await exited;
  }
}

/** A SQLite file with FLAGS flags, made by this build through its API. */
async function seededDatabase(dir: string): Promise<string> {
  const file = join(dir, 'seeded.db');
  const port = await freePort();
  const child = spawn(process.execPath, [builds.at(-1)!.mainJs], { env: { ...process.env, PORT: String(port), HOST: '127.0.0.1', DATABASE_URL: `sqlite:${file}`, RATE_LIMIT_AUTH: '0', LOG_LEVEL: 'warn' }, stdio: 'inherit' });
  const exited = new Promise((resolve) => child.once('exit', resolve));
  await waitForHealth(`http://127.0.0.1:${port}`, child);
  await seed(`http://127.0.0.1:${port}`, FLAGS);
  child.kill('SIGTERM'); // a clean stop checkpoints the write-ahead log into the file
  await exited;
  return file;
}

/** In a process of its own, as a test file: startServer() and close(), `count` times; the first start's time and the others'. */
function harnessStarts(dir: string, harnessJs: string, count: number): { firstMs: number; laterMs: number[] } {
  // A file, not --input-type=module -e: the history worker's thread inherits the process's flags.
  const script = join(dir, `harness-${Math.random().toString(36).slice(2)}.mjs`);
  writeFileSync(
    script, `const { startServer } = await import(${JSON.stringify(pathToFileURL(harnessJs).href)});
const times = [];
for (let i = 0; i < ${count}; i++) { const t = performance.now(); const server = await startServer(); times.push(performance.now() - t); await server.close(); }
console.log(JSON.stringify(times));`,
  );
  const run = spawnSync(process.execPath, [script], { encoding: 'utf8' });
  if (run.status !== 0) throw new Error(`harness starts failed: ${run.stderr}`);
  const times = JSON.parse(run.stdout.trim().split('\n').at(-1)!) as number[];
  return { firstMs: times[0]!, laterMs: times.slice(1) };
}

const f = (ms: number) => ms.toFixed(0);

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'guidon-start-bench-'));
  try {
    console.log(`start bench: ${STARTS} starts per case and build, alternated; load average ${loadAverage()}`);
    const seeded = await seededDatabase(dir);
    const rows: string[] = [];
    for (const [label, prepare] of [
      ['empty SQLite', (file: string) => void file],
      [`SQLite, ${FLAGS} flags`, (file: string) => copyFileSync(seeded, file)],
    ] as const) {
      const results = new Map(builds.map((build) => [build.name, [] as Start[]]));
      const before = cpuJiffies();
      for (let i = 0; i < STARTS; i++) {
        for (const build of builds) {
          const file = join(dir, `start-${i}-${build.name.replace(/\W/g, '')}.db`);
          prepare(file);
          results.get(build.name)!.push(await startOnce(build.mainJs, file));
          for (const suffix of ['', '-wal', '-shm']) if (existsSync(file + suffix)) rmSync(file + suffix);
        }
      }
      const { busyPct, stealPct } = busyBetween(before, cpuJiffies());
      for (const build of builds) {
        const starts = results.get(build.name)!;
        const wall = starts.map((start) => start.wallMs);
        const cpu = starts.map((start) => start.cpuMs);
        rows.push(`| ${build.name} | ${label} | ${readinessPaths.get(build.mainJs) ?? '/ready'} | ${f(median(wall))} | ${f(Math.max(...wall))} | ${f(median(cpu))} | ${f(Math.max(...cpu))} | ${busyPct.toFixed(0)} % (steal ${stealPct.toFixed(0)} %) |`);
      }
    }
    console.log('\n| build | database | until 200 of | wall median ms | wall max ms | CPU median ms | CPU max ms | machine busy |');
    console.log('|---|---|---|---:|---:|---:|---:|---:|');
    for (const row of rows) console.log(row);

    console.log('\n| build | test harness: first startServer() ms (modules loaded) | later starts: median ms | max ms |');
    console.log('|---|---:|---:|---:|');
    for (const build of builds) {
      const harnessJs = join(dirname(build.mainJs), '..', 'tests', 'harness.js');
      if (!existsSync(harnessJs)) continue;
      const { firstMs, laterMs } = harnessStarts(dir, harnessJs, STARTS + 1);
      console.log(`| ${build.name} | ${f(firstMs)} | ${f(median(laterMs))} | ${f(Math.max(...laterMs))} |`);
    }
    console.log(`\nload average at the end: ${loadAverage()}`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
