/** What the benchmarks share: starting and watching a server, an HTTP call to the API, and the project they load. */
import type { ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { sql } from 'kysely';
import { loadConfig } from '../src/config.js';
import { openDatabase } from '../src/db/database.js';

export { freePort } from '../tests/harness.js';

/** A bench server's database: a SQLite file in `dir`, or a new PostgreSQL database on BENCH_DATABASE_URL's server when it is set; `drop` removes it. */
export async function benchDatabase(dir: string): Promise<{ url: string; drop(): Promise<void> }> {
  const postgresUrl = process.env.BENCH_DATABASE_URL;
  if (!postgresUrl) return { url: `sqlite:${join(dir, 'guidon.db')}`, drop: async () => {} };
  const { default: pg } = await import('pg');
  const name = `guidon_bench_${process.pid}_${Date.now()}`;
  const admin = async (statement: string) => {
    const client = new pg.Client({ connectionString: postgresUrl });
    await client.connect();
    await client.query(statement);
    await client.end();
  };
  await admin(`create database ${name}`);
  const url = new URL(postgresUrl);
  url.pathname = `/${name}`;
  return { url: url.toString(), drop: () => admin(`drop database if exists ${name} with (force)`) };
}

/** Resolves once GET url + path answers 2xx; throws if the server exits first or after timeoutMs. */
export async function waitForHealth(url: string, child: ChildProcess, path = '/health', timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`server exited with ${child.exitCode}`);
    if (await fetch(url + path).then((r) => r.ok, () => false)) return;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`${url}${path} did not answer`);
}

/**
 * Node's flags as a build's `npm start` runs its server (its package.json; docs/deploy.md says
 * why): each build is measured as it is deployed, so a change of those flags shows as a change.
 */
export function startFlagsOf(entry: string): string[] {
  const root = join(dirname(entry), '..', '..', '..', '..');
  const start: string = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')).scripts?.start ?? '';
  const flags = /node ((?:--\S+ )*)packages\/server\/dist\/src\/main\.js/.exec(start)?.[1] ?? '';
  return flags.split(' ').filter(Boolean);
}

/** Stops a server process (SIGTERM: it closes as in production) and resolves once it has exited. */
export function stop(child: ChildProcess, signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill(signal);
  return exited;
}

/** The processes a process started (the workers of WORKERS). */
export function childrenOf(pid: number): number[] {
  try {
    return readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
  } catch {
    return [];
  }
}

/** Resident memory of a process, with its child processes' when withChildren. */
export function rssMb(pid: number, withChildren = false): number {
  let kb = 0;
  for (const each of withChildren ? [pid, ...childrenOf(pid)] : [pid]) {
    const match = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${each}/status`, 'utf8'));
    kb += match ? Number(match[1]) : 0;
  }
  return kb / 1024;
}

/** Flag evaluations the history holds (a byte per flag in each stored request). */
export async function recorded(databaseUrl: string): Promise<number> {
  const database = await openDatabase(loadConfig({ DATABASE_URL: databaseUrl }).database, { migrate: false, poolSize: 1 });
  try {
    // A row holds a byte per flag, and a second one per flag when its snapshot has variants (flag_variants).
    const result = await sql<{ recorded: number | string }>`select coalesce(sum(case when s.flag_variants is null then length(e.outcomes) else length(e.outcomes) / 2 end), 0) as recorded
      from evaluations e join evaluation_snapshots s on s.id = e.snapshot_id`.execute(database.db);
    return Number(result.rows[0]?.recorded ?? 0);
  } finally {
    await database.close();
  }
}

export async function call(url: string, method: string, path: string, token: string | null, body?: unknown): Promise<any> {
  const response = await fetch(url + path, {
    method,
    headers: { ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...(token ? { authorization: `Bearer ${token}` } : {}) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const json = await response.json();
  if (!response.ok) throw new Error(`${method} ${path}: ${response.status} ${JSON.stringify(json)}`);
  return json;
}

/** A user's token and a new project with its production environment. */
export async function benchProject(url: string): Promise<{ token: string; project: any; production: any }> {
  const credentials = { email: 'bench@example.com', password: 'benchmark password' };
  await call(url, 'POST', '/auth/register', null, credentials);
  const { token } = await call(url, 'POST', '/auth/login', null, credentials);
  const project = await call(url, 'POST', '/api/projects', token, { name: 'Bench' });
  const environments = await call(url, 'GET', `/api/projects/${project.id}/environments`, token);
  const production = environments.find((env: { key: string }) => env.key === 'production');
  return { token, project, production };
}

/** One project, `count` flags: a quarter off, on, 50% rollout, and on with user_id/email/domain rules. */
export async function seed(url: string, count: number): Promise<string> {
  const { token, project, production } = await benchProject(url);
  const flags = `/api/projects/${project.id}/environments/${production.id}/flags`;
  for (let i = 0; i < count; i++) {
    const kind = i % 4;
    const flag = await call(url, 'POST', flags, token, {
      name: `Flag ${i}`,
      key: `flag_${i}`,
      enabled: kind !== 0,
      rollout_percentage: kind === 2 ? 50 : 0,
    });
    if (kind === 3) {
      const rules = `${flags}/${flag.id}/rules`;
      await call(url, 'POST', rules, token, { rule_type: 'user_id', rule_value: `vip-${i}`, priority: 2 });
      await call(url, 'POST', rules, token, { rule_type: 'user_email', rule_value: `ceo-${i}@example.com`, priority: 1 });
      await call(url, 'POST', rules, token, { rule_type: 'email_domain', rule_value: `partner-${i}.com` });
    }
  }
  return project.sdk_key;
}

/** The user agents the bench's contexts send, and patterns over them (the conditions case's REGEX condition). */
export const AGENTS = ['Mozilla/5.0 (X11; Linux x86_64) Chrome/131.0', 'Mozilla/5.0 (iPhone; CPU iPhone OS 18_0) Mobile/15E148', 'okhttp/4.12.0 Android'];
const PATTERNS = ['Chrome/1[0-9]{2}', 'iPhone|iPad', '(?i)android', 'Linux x86_64', 'Mobile/[0-9A-F]+'];

/**
 * The conditions environment: `count` flags, each on only for whom one rule of three conditions
 * serves: a 1,000-value IN (each flag its own slice of customers), a SEMVER_GTE and a REGEX.
 */
export async function seedConditions(url: string, count: number): Promise<string> {
  const { token, project, production } = await benchProject(url);
  const flags = `/api/projects/${project.id}/environments/${production.id}/flags`;
  for (let i = 0; i < count; i++) {
    const flag = await call(url, 'POST', flags, token, { name: `Flag ${i}`, key: `flag_${i}`, enabled: true, everyone_else: 'off' });
    const customers = Array.from({ length: 1000 }, (_, k) => `customer-${(i * 37 + k) % 5000}`);
    await call(url, 'POST', `${flags}/${flag.id}/rules`, token, {
      rule_type: 'conditions',
      conditions: [
        { attribute: 'customer', operator: 'IN', values: customers },
        { attribute: 'app_version', operator: 'SEMVER_GTE', values: [`2.${i % 8}.0`] },
        { attribute: 'agent', operator: 'REGEX', values: [PATTERNS[i % PATTERNS.length]!] },
      ],
    });
  }
  return project.sdk_key;
}

/**
 * The variants environment: `count` flags as seed() makes them, and every second one also serves
 * one of three string variants by weight (so every answer differs per user at those flags).
 */
export async function seedVariants(url: string, count: number): Promise<string> {
  const { token, project, production } = await benchProject(url);
  const flags = `/api/projects/${project.id}/environments/${production.id}/flags`;
  for (let i = 0; i < count; i++) {
    const kind = i % 4;
    const flag = await call(url, 'POST', flags, token, { name: `Flag ${i}`, key: `flag_${i}`, enabled: kind !== 0, rollout_percentage: kind === 2 ? 50 : 0 });
    if (i % 2 === 1) {
      const variants = [
        { key: 'control', value: `Button ${i}`, weight: 500 },
        { key: 'bold', value: `BUTTON ${i}!`, weight: 300 },
        { key: 'quiet', value: `button ${i}`, weight: 200 },
      ];
      await call(url, 'PUT', `${flags}/${flag.id}`, token, { variants, off_variant: 'control' });
    }
    if (kind === 3) await call(url, 'POST', `${flags}/${flag.id}/rules`, token, { rule_type: 'user_id', rule_value: `vip-${i}` });
  }
  return project.sdk_key;
}

/**
 * Prerequisites (docs/prerequisites.md): `count` flags as seed() makes them, and half of them need
 * another: per ten flags, flag 1 needs flag 0, then 3 needs 1, 5 needs 3, 7 needs 5 and 9 needs 7,
 * chains of 1 to 5 links. Flag 0 of a ten is off (disabled) in every second ten, so those chains are
 * off for everyone, and a 50% rollout in the others, so those depend on the user.
 */
export async function seedPrerequisites(url: string, count: number): Promise<string> {
  const { token, project, production } = await benchProject(url);
  const flags = `/api/projects/${project.id}/environments/${production.id}/flags`;
  for (let i = 0; i < count; i++) {
    const kind = i % 4;
    const parent = i % 10 === 1 ? i - 1 : i % 2 === 1 ? i - 2 : -1;
    const flag = await call(url, 'POST', flags, token, {
      name: `Flag ${i}`,
      key: `flag_${i}`,
      enabled: kind !== 0,
      rollout_percentage: kind === 2 ? 50 : 0,
      ...(parent >= 0 ? { prerequisites: [{ flag_key: `flag_${parent}` }] } : {}),
    });
    if (kind === 3) await call(url, 'POST', `${flags}/${flag.id}/rules`, token, { rule_type: 'user_id', rule_value: `vip-${i}` });
  }
  return project.sdk_key;
}
