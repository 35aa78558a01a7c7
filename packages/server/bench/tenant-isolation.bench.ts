/**
 * npm run bench (or `node packages/server/dist/bench/tenant-isolation.bench.js` alone, after npm
 * run build): does one tenant's heaviest request hold another tenant's? For each case one project
 * sends the worst input the limits accept (docs/security.md, "Imports") while another project's
 * probe asks GET /health and POST /sdk/v1/evaluate every 20 ms; prints how long the heavy request
 * took and the probe's latencies beside it (idle first, as the baseline).
 *
 * Cases: an import of a parent and 1,200 children (dry run, then applied); a 4.7 MiB flat YAML
 * body and a nested-flow one; SCHEDULES schedules of one project due at the same second as one of
 * another project (how late each project's are applied); last, an import that makes costly the 300
 * segments one flag names, leaving the flag out of the document (refused: the flag would go over
 * its cost).
 *
 * Runs this build, and each build of BENCH_REFERENCE (comma-separated commits or tags; default none;
 * reference-build.ts builds it) in the same run, on SQLite, or on PostgreSQL with
 * BENCH_DATABASE_URL=postgres://… (a fresh database per server is created there).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { benchDatabase, benchProject, call, freePort, stop, waitForHealth } from './bench-seed.js';
import { referenceBuilds } from './reference-build.js';

const SCHEDULES = Number(process.env.BENCH_SCHEDULES ?? 300);
/** A case still running after this is reported as such (a build that never answers one). */
const CASE_SECONDS = Number(process.env.BENCH_CASE_SECONDS ?? 120);
const thisBuild = join(dirname(fileURLToPath(import.meta.url)), '..', 'src', 'main.js');
const postgresUrl = process.env.BENCH_DATABASE_URL ?? null;

const quantile = (sorted: readonly number[], q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? NaN;
const ms = (value: number) => `${value.toFixed(value < 10 ? 1 : 0)} ms`;

interface Server {
  url: string;
  child: ChildProcess;
  close(): Promise<void>;
}

async function startServer(mainJs: string): Promise<Server> {
  const dir = mkdtempSync(join(tmpdir(), 'guidon-isolation-'));
  const database = await benchDatabase(dir);
  const databaseUrl = database.url;
  const dropDatabase = database.drop;
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const child = spawn(process.execPath, [mainJs], {
    env: { ...process.env, PORT: String(port), HOST: '127.0.0.1', DATABASE_URL: databaseUrl, WORKERS: '1', RATE_LIMIT_EVALUATE: '0', RATE_LIMIT_AUTH: '0', LOG_LEVEL: 'error' },
    stdio: 'inherit',
  });
  await waitForHealth(url, child);
  return {
    url,
    child,
    close: async () => {
      // A build stalled by a case (the costly segments, before the fix) does not hear SIGTERM.
      const killed = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await stop(child);
      clearTimeout(killed);
      await dropDatabase();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Another tenant: /health and one evaluate every 20 ms until `done`; their latencies, sorted (a request unanswered after 10 s counts as 10 s). */
async function probe(url: string, sdkKey: string, done: () => boolean): Promise<{ health: number[]; evaluate: number[] }> {
  const health: number[] = [];
  const evaluate: number[] = [];
  const timed = async (into: number[], send: (signal: AbortSignal) => Promise<Response>) => {
    const start = performance.now();
    await send(AbortSignal.timeout(10_000))
      .then((answer) => answer.arrayBuffer())
      .catch(() => undefined);
    into.push(performance.now() - start);
  };
  let n = 0;
  while (!done()) {
    await timed(health, (signal) => fetch(`${url}/health`, { signal }));
    const body = JSON.stringify({ environment: 'production', context: { user_id: `u${n++}` } });
    await timed(evaluate, (signal) => fetch(`${url}/sdk/v1/evaluate`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-sdk-key': sdkKey }, body, signal }));
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return { health: health.sort((a, b) => a - b), evaluate: evaluate.sort((a, b) => a - b) };
}

/** Cases to leave out (BENCH_SKIP, comma-separated beginnings of their names): one that stalls a build for minutes spoils the cases after it. */
const skipped = (process.env.BENCH_SKIP ?? '').split(',').map((prefix) => prefix.trim()).filter(Boolean);

/** Runs `heavy` while the other tenant probes; the row of the table. */
async function measure(name: string, server: Server, sdkKey: string, heavy: () => Promise<string>): Promise<string> {
  if (skipped.some((prefix) => name.startsWith(prefix))) return `| ${name} | left out (BENCH_SKIP) | | | |`;
  let done = false;
  const probing = probe(server.url, sdkKey, () => done);
  await new Promise((resolve) => setTimeout(resolve, 100));
  const start = performance.now();
  const outcome = await Promise.race([heavy(), new Promise<string>((resolve) => setTimeout(() => resolve(`no answer within ${CASE_SECONDS} s`), CASE_SECONDS * 1000).unref())]).catch((error: Error) => `failed: ${error.message}`);
  const took = performance.now() - start;
  done = true;
  const { health, evaluate } = await probing;
  console.error(`  ${name}: ${outcome} in ${ms(took)}`);
  return `| ${name} | ${outcome} | ${ms(took)} | ${ms(quantile(health, 0.99))} / ${ms(health.at(-1)!)} | ${ms(quantile(evaluate, 0.99))} / ${ms(evaluate.at(-1)!)} |`;
}

async function post(url: string, path: string, token: string, body: string, type = 'application/json'): Promise<string> {
  const answer = await fetch(`${url}${path}`, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': type }, body });
  const text = await answer.text();
  return `${answer.status}${answer.ok ? '' : ` ${(JSON.parse(text) as { message?: string }).message?.slice(0, 60) ?? ''}…`}`;
}

const wideDocument = JSON.stringify({
  guidon: 1,
  environments: [{ key: 'production', name: 'Production' }],
  segments: [],
  flags: [
    { key: 'parent', name: 'Parent', environments: { production: { enabled: true } } },
    ...Array.from({ length: 1200 }, (_, i) => ({ key: `child_${i}`, name: `Child ${i}`, environments: { production: { enabled: true, prerequisites: [{ flag_key: 'parent' }] } } })),
  ],
});
const costly = (letter: string) => ({ attribute: 'text', operator: 'REGEX', values: [`(?:a|b)*${letter}(?:a|b){60}`] });
const segmentsDocument = (heavy: boolean) =>
  JSON.stringify({
    guidon: 1,
    environments: [{ key: 'production', name: 'Production' }],
    segments: Array.from({ length: 300 }, (_, i) => ({ key: `s${i}`, name: `S${i}`, conditions: heavy ? [costly(String.fromCharCode(97 + (i % 26)))] : [{ attribute: 'plan', operator: 'IN', values: [`p${i}`] }] })),
    // The costly version leaves the flag out: the import must find it through the segments it names.
    flags: heavy ? [] : [{ key: 'names_all', name: 'Names all', environments: { production: { enabled: true, rules: [{ rule_type: 'conditions', conditions: [{ operator: 'IN_SEGMENT', values: Array.from({ length: 300 }, (_, i) => `s${i}`) }] }] } } }],
  });
/** 4.7 MiB of flat YAML: a mapping of short keys (the review's case). */
const flatYaml = `guidon: 1\nextra:\n${Array.from({ length: 260_000 }, (_, i) => `  k${i}: v${i}`).join('\n')}\n`;
/** Nested flow collections, about 5 ms a KiB for the parser. */
const nestedYaml = `guidon: 1\nflags: ${'['.repeat(40)}${Array(20_000).fill('{a: [1, {b: [2, 3]}]}').join(', ')}${']'.repeat(40)}\n`;

async function schedulesCase(server: Server, token: string, busy: { id: string }, busyEnv: string, quiet: { id: string }, quietEnv: string): Promise<string> {
  const flagIn = async (project: { id: string }, env: string, key: string) => call(server.url, 'POST', `/api/projects/${project.id}/environments/${env}/flags`, token, { name: key, key });
  const at = new Date(Date.now() + 8000 + SCHEDULES * 15).toISOString();
  for (let i = 0; i < SCHEDULES; i++) {
    const flag = await flagIn(busy, busyEnv, `due_${i}`);
    await call(server.url, 'POST', `/api/projects/${busy.id}/environments/${busyEnv}/flags/${flag.id}/schedules`, token, { at, change: { enabled: true } });
  }
  const lone = await flagIn(quiet, quietEnv, 'due_alone');
  await call(server.url, 'POST', `/api/projects/${quiet.id}/environments/${quietEnv}/flags/${lone.id}/schedules`, token, { at, change: { enabled: true } });
  const lateness = async (project: { id: string }) => {
    const list = (await call(server.url, 'GET', `/api/projects/${project.id}/schedules`, token)) as { status: string; at: string; applied_at: string | null }[];
    return list;
  };
  const deadline = Date.parse(at) + 60_000;
  for (;;) {
    const all = [...(await lateness(busy)), ...(await lateness(quiet))];
    if (all.every((schedule) => schedule.status !== 'pending') || Date.now() > deadline) break;
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  const late = async (project: { id: string }) => (await lateness(project)).map((schedule) => (schedule.applied_at ? Date.parse(schedule.applied_at) - Date.parse(schedule.at) : Infinity)).sort((a, b) => a - b);
  const busyLate = await late(busy);
  const quietLate = await late(quiet);
  return `${SCHEDULES} due: the busy project's last ${ms(busyLate.at(-1)!)} late, the other project's ${ms(quietLate[0]!)} late`;
}

async function run(label: string, mainJs: string): Promise<string[]> {
  const server = await startServer(mainJs);
  try {
    const { token, project: prober } = await benchProject(server.url);
    const proberEnvs = await call(server.url, 'GET', `/api/projects/${prober.id}/environments`, token);
    const proberProduction = proberEnvs.find((env: { key: string }) => env.key === 'production');
    await call(server.url, 'POST', `/api/projects/${prober.id}/environments/${proberProduction.id}/flags`, token, { name: 'Probe', key: 'probe', enabled: true, rollout_percentage: 50 });
    const sdkKey = prober.sdk_key as string;
    const project = async (name: string) => {
      const created = await call(server.url, 'POST', '/api/projects', token, { name });
      const envs = await call(server.url, 'GET', `/api/projects/${created.id}/environments`, token);
      return { project: created, production: envs.find((env: { key: string }) => env.key === 'production').id as string };
    };
    const rows: string[] = [];
    const idle = await measure('idle (nothing heavy)', server, sdkKey, async () => (await new Promise((resolve) => setTimeout(resolve, 2000)), '–'));
    rows.push(idle);
    const wide = await project('Wide');
    rows.push(await measure('import 1,200 children of one parent, dry run', server, sdkKey, () => post(server.url, `/api/projects/${wide.project.id}/import`, token, wideDocument)));
    rows.push(await measure('the same, applied', server, sdkKey, () => post(server.url, `/api/projects/${wide.project.id}/import?dry_run=false`, token, wideDocument)));
    const yamlProject = await project('Yaml');
    rows.push(await measure('YAML: 4.7 MiB flat', server, sdkKey, () => post(server.url, `/api/projects/${yamlProject.project.id}/import`, token, flatYaml, 'application/yaml')));
    rows.push(await measure(`YAML: nested flow, ${Math.round(nestedYaml.length / 1024)} KiB`, server, sdkKey, () => post(server.url, `/api/projects/${yamlProject.project.id}/import`, token, nestedYaml, 'application/yaml')));
    const busy = await project('Busy');
    const quiet = await project('Quiet');
    rows.push(await measure('schedules', server, sdkKey, () => schedulesCase(server, token, busy.project, busy.production, quiet.project, quiet.production)));
    // Last: a build that accepts it may be stalled by it (the review's finding), which would spoil the cases after.
    const costlyProject = await project('Costly');
    await post(server.url, `/api/projects/${costlyProject.project.id}/import?dry_run=false`, token, segmentsDocument(false));
    rows.push(await measure('import: 300 segments that one flag names made costly (refused)', server, sdkKey, () => post(server.url, `/api/projects/${costlyProject.project.id}/import?dry_run=false`, token, segmentsDocument(true))));
    return [`\n${label}\n`, '| case | answer | took | the other tenant: /health p99 / max | evaluate p99 / max |', '|---|---|---|---|---|', ...rows];
  } finally {
    await server.close();
  }
}

const loadAverage = readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');
console.log(`Node ${process.version}, ${postgresUrl ? 'PostgreSQL' : 'SQLite'}, ${new Date().toISOString()}, load average ${loadAverage}`);
const references = process.env.BENCH_REFERENCE ? referenceBuilds() : [];
for (const line of await run('This build', thisBuild)) console.log(line);
for (const reference of references) for (const line of await run(`Reference ${reference.name} (${reference.sha.slice(0, 7)})`, reference.mainJs)) console.log(line);
