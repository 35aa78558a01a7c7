/**
 * npm run bench (or `node packages/server/dist/bench/worst-case.bench.js` alone, after npm run
 * build): while the costliest flag the limits accept (docs/targeting.md, "What a flag may cost")
 * is evaluated for its costliest context in a loop, does GET /health still answer at once?
 *
 * Starts the real server (dist/src/main.js) as its own process on a fresh SQLite file, saves
 * through the API a flag whose one rule holds the costliest pattern flagProblem accepts (the
 * engine's worst-case bench measures each family; Unicode classes, case-insensitive, cost the
 * most per evaluation), then for BENCH_SECONDS (default 10) keeps BENCH_CONNECTIONS
 * (default 4) evaluate requests in flight, each with a new 1,024-character attribute, while
 * asking GET /health every 20 ms; the same again against a flag that costs nothing, as the
 * baseline. Prints the /health latencies (idle, beside each load), the evaluate rate and the
 * server's CPU per evaluate request (from /proc).
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { conditionProblem, flagProblem, type Condition } from '@guidon/engine';
import { benchProject, call, freePort, waitForHealth } from './bench-seed.js';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 4);
const mainJs = join(dirname(fileURLToPath(import.meta.url)), '..', 'src', 'main.js');
const CLOCK_TICKS = 100;
const L = 1024;

/**
 * The costliest pattern the limits accept, of the family the engine's worst-case bench finds
 * costliest per evaluation (Unicode classes, case-insensitive: re2js's NFA only): the largest k.
 */
function costliestCondition(): { condition: Condition; k: number } {
  const make = (k: number): Condition => ({ attribute: 'text', operator: 'REGEX', values: [`(?i)(?:\\pL|\\pN)*\\pL(?:\\pL|\\pN){${k}}x`] });
  let k = 1;
  const accepted = (condition: Condition) => conditionProblem(condition, 'c') === null && flagProblem([{ conditions: [condition] }], new Map()) === null;
  while (accepted(make(k + 1))) k++;
  return { condition: make(k), k };
}
/** Letters and digits that never end in x: every thread of the pattern stays alive to the end. */
function costliestText(_k: number, n: number): string {
  let x = n + 1;
  let text = '';
  for (let i = 0; i < L; i++) {
    x = (Math.imul(x, 1103515245) + 12345) >>> 0;
    text += 'aé1'[(x >>> 8) % 3];
  }
  return text;
}

function cpuSeconds(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS;
}

async function healthLatencies(url: string, until: () => boolean): Promise<number[]> {
  const latencies: number[] = [];
  while (!until()) {
    const start = performance.now();
    const answer = await fetch(`${url}/health`);
    await answer.arrayBuffer();
    if (!answer.ok) throw new Error(`/health answered ${answer.status}`);
    latencies.push(performance.now() - start);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return latencies.sort((a, b) => a - b);
}

const quantile = (sorted: readonly number[], q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
const summary = (sorted: readonly number[]) => `p50 ${quantile(sorted, 0.5).toFixed(1)} ms, p99 ${quantile(sorted, 0.99).toFixed(1)} ms, max ${sorted.at(-1)!.toFixed(1)} ms (${sorted.length} requests)`;

const dir = mkdtempSync(join(tmpdir(), 'guidon-worst-'));
const port = await freePort();
const url = `http://127.0.0.1:${port}`;
const child = spawn(process.execPath, [mainJs], {
  env: { ...process.env, PORT: String(port), HOST: '127.0.0.1', DATABASE_URL: `sqlite:${join(dir, 'guidon.db')}`, WORKERS: '1', RATE_LIMIT_EVALUATE: '0', RATE_LIMIT_AUTH: '0', LOG_LEVEL: 'warn' },
  stdio: 'inherit',
});
/** BENCH_SECONDS of CONNECTIONS evaluate requests in flight on one environment, /health asked beside them. */
async function phase(sdkKey: string, environment: string, k: number) {
  let n = 0;
  let requests = 0;
  const end = Date.now() + SECONDS * 1000;
  const cpu0 = cpuSeconds(child.pid!);
  const load = Array.from({ length: CONNECTIONS }, async () => {
    while (Date.now() < end) {
      const answer = await fetch(`${url}/sdk/v1/evaluate`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-sdk-key': sdkKey },
        body: JSON.stringify({ environment, context: { user_id: `u${n}`, custom_attributes: { text: costliestText(k, n++) } } }),
      });
      await answer.arrayBuffer();
      if (answer.status !== 200) throw new Error(`evaluate answered ${answer.status}`);
      requests++;
    }
  });
  const health = await healthLatencies(url, () => Date.now() > end);
  await Promise.all(load);
  const cpu = cpuSeconds(child.pid!) - cpu0;
  return `${(requests / SECONDS).toFixed(0)} evaluate requests/s, ${((cpu / requests) * 1000).toFixed(2)} ms of server CPU each | ${summary(health)}`;
}

try {
  await waitForHealth(url, child);
  const { token, project, production } = await benchProject(url);
  const environments = await call(url, 'GET', `/api/projects/${project.id}/environments`, token);
  const staging = environments.find((env: { key: string }) => env.key === 'staging');
  const { condition, k } = costliestCondition();
  // The worst flag in production; in staging, the same request shape against a flag that costs nothing.
  for (const [environment, conditions] of [[production, [condition]], [staging, [{ attribute: 'text', operator: 'IN', values: ['x'] }]]] as const) {
    const flags = `/api/projects/${project.id}/environments/${environment.id}/flags`;
    const flag = await call(url, 'POST', flags, token, { name: 'Worst', key: 'worst', enabled: true, everyone_else: 'off' });
    await call(url, 'POST', `${flags}/${flag.id}/rules`, token, { rule_type: 'conditions', conditions });
  }
  const idle = await healthLatencies(url, (() => { const until = Date.now() + 2000; return () => Date.now() > until; })());
  const cheap = await phase(project.sdk_key, 'staging', k);
  const worst = await phase(project.sdk_key, 'production', k);
  const loadAverage = readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');
  console.log(
    [
      `Node ${process.version}, ${SECONDS} s a phase, ${CONNECTIONS} evaluate requests in flight, ${new Date().toISOString()}, load average ${loadAverage}`,
      '',
      `The flag: one rule, REGEX ${JSON.stringify(condition.values![0])} (the costliest of its family that the limits accept); each context a new 1,024-character attribute of letters and digits it never matches. Baseline: the same requests to an environment whose flag holds an IN condition.`,
      '',
      '| phase | evaluate | GET /health latency |',
      '|---|---|---|',
      `| idle | – | ${summary(idle)} |`,
      `| baseline: a flag that costs nothing | ${cheap} |`,
      `| the costliest flag | ${worst} |`,
    ].join('\n'),
  );
} finally {
  child.kill('SIGTERM');
  await new Promise((resolve) => child.once('exit', resolve));
  rmSync(dir, { recursive: true, force: true });
}
