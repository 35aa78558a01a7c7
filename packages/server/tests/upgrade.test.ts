/**
 * Upgrades lose nothing: databases written by the release before teams (fixtures/,
 * see fixtures/README.md) migrate on start; every project's creator becomes its owner and
 * nothing that was there changes. Proven addresses add users.email_verified_at: the fixtures' accounts
 * never completed a password reset, so they come out unverified (docs/adr/0011-proven-addresses.md), still owners
 * of their own projects. (The upgrade of a teams database: proven-addresses.test.ts.)
 */
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { copyFileSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import type { Config } from '../src/config.js';
import { openDatabase, type Db } from '../src/db/database.js';
import { evaluate, request, startServer, type TestServer } from './harness.js';
import { createTestDatabase, onPostgres, type TestDatabase } from './test-database.js';

const fixtures = fileURLToPath(new URL('../../tests/fixtures/', import.meta.url));
const PASSWORD = 'fixture password';
// The fixtures were written with this JWT_SECRET (so the settings table holds none, and stays so).
const SAME_SECRET = { JWT_SECRET: 'fixture-secret-fixture-secret-fixture' };

/** Every row of the tables the old release had (history compared by count and content). */
async function oldData(db: Db): Promise<string> {
  const tables = ['users', 'settings', 'password_resets', 'projects', 'environments', 'flags', 'rules', 'evaluation_snapshots', 'evaluations', 'evaluation_counts'] as const;
  const dump: Record<string, unknown> = {};
  for (const table of tables) {
    const rows = await db.selectFrom(table).selectAll().execute();
    // Columns added since (proven addresses) are checked by checkUpgraded, not here.
    if (table === 'users') for (const row of rows as Record<string, unknown>[]) delete row.email_verified_at;
    // The conditions' columns (docs/targeting.md) take their defaults: the seed's behaviour (checked by checkUpgraded's evaluations).
    if (table === 'flags') for (const row of rows as Record<string, unknown>[]) if (row.everyone_else === 'rollout') delete row.everyone_else;
    // The variants' columns are null: no variants (the flags answer as before, checked by checkUpgraded); the bucketing_key of flags as code too; prerequisites too.
    const nullColumns: Partial<Record<(typeof tables)[number], string[]>> = { flags: ['variants', 'off_variant', 'bucketing_key', 'prerequisites'], rules: ['variant'], evaluation_snapshots: ['flag_variants', 'flag_prerequisites'] };
    for (const row of rows as Record<string, unknown>[]) for (const column of nullColumns[table] ?? []) if (row[column] === null) delete row[column];
    // The columns of scheduled changes and change requests take their defaults: no approvals needed, no change counted yet.
    const zeroColumns: Partial<Record<(typeof tables)[number], string[]>> = { environments: ['approvals_required'], flags: ['revision'] };
    for (const row of rows as Record<string, unknown>[]) for (const column of zeroColumns[table] ?? []) if (row[column] === 0) delete row[column];
    if (table === 'rules') {
      for (const row of rows as Record<string, unknown>[]) {
        if (row.conditions === null && row.rollout_percentage === 100 && (row.serve === 1 || row.serve === true)) for (const column of ['conditions', 'rollout_percentage', 'serve']) delete row[column];
      }
    }
    dump[table] = rows.map((row) => JSON.stringify(row, (_key, value) => (value?.type === 'Buffer' ? value.data : value))).sort();
  }
  return JSON.stringify(dump);
}

async function checkUpgraded(server: TestServer): Promise<void> {
  const login = async (email: string) => (await request(server, 'POST', '/auth/login', { body: { email, password: PASSWORD } })).body.token as string;
  const alice = await login('alice@example.com');
  const bob = await login('bob@example.com');
  assert.ok(alice && bob, 'the old accounts still log in');
  for (const token of [alice, bob]) assert.equal((await request(server, 'GET', '/api/me', { token })).body.email_verified, false, 'nothing proved the old addresses');

  const projects = await request(server, 'GET', '/api/projects', { token: alice });
  assert.deepEqual(projects.body.map((p: any) => [p.name, p.description, p.role]), [['Shop', 'the web shop', 'owner']]);
  const shop = projects.body[0];
  const members = await request(server, 'GET', `/api/projects/${shop.id}/members`, { token: alice });
  assert.deepEqual(members.body.map((m: any) => [m.email, m.role, m.status]), [['alice@example.com', 'owner', 'active']]);
  assert.equal((await request(server, 'GET', `/api/projects/${shop.id}`, { token: bob })).status, 404, 'still not bob’s');
  assert.deepEqual((await request(server, 'GET', '/api/projects', { token: bob })).body.map((p: any) => [p.name, p.role]), [['Blog', 'owner']]);

  // The owner can do what an owner does, at once.
  assert.equal((await request(server, 'PUT', `/api/projects/${shop.id}`, { token: alice, body: { description: 'the web shop' } })).status, 200);
  const environments = await request(server, 'GET', `/api/projects/${shop.id}/environments`, { token: alice });
  assert.deepEqual(environments.body.map((e: any) => e.key).sort(), ['production', 'qa', 'staging']);
  const production = environments.body.find((e: any) => e.key === 'production');
  const flags = await request(server, 'GET', `/api/projects/${shop.id}/environments/${production.id}/flags`, { token: alice });
  assert.deepEqual(flags.body.map((f: any) => [f.key, f.enabled, f.rollout_percentage]), [['new-checkout', true, 25], ['dark-mode', false, 0]]);
  const rules = await request(server, 'GET', `/api/projects/${shop.id}/environments/${production.id}/flags/${flags.body[0].id}/rules`, { token: alice });
  assert.deepEqual(rules.body.map((r: any) => [r.rule_type, r.rule_value, r.priority]), [['email_domain', '@example.com', 5]]);
  const evaluated = await evaluate(server, shop.sdk_key, 'production', { user_id: 'u1', user_email: 'a@example.com' });
  assert.equal(evaluated.status, 200);
  assert.equal(evaluated.body.flags['new-checkout']?.enabled, true);
  const history = await request(server, 'GET', `/api/projects/${shop.id}/evaluations`, { token: alice });
  assert.ok(history.body.items.length >= 2, 'the old history is still there');
}

describe('upgrading a database of the release before teams', () => {
  const cleanup: (() => Promise<void> | void)[] = [];
  after(async () => {
    for (const step of cleanup.reverse()) await step();
  });

  test('SQLite', { skip: onPostgres ? 'runs in the SQLite pass' : false }, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'guidon-upgrade-'));
    cleanup.push(() => rmSync(dir, { recursive: true, force: true }));
    const path = join(dir, 'guidon.db');
    copyFileSync(join(fixtures, 'pre-teams.sqlite.db'), path);
    const config: Config['database'] = { kind: 'sqlite', path };
    const untouched = await openDatabase(config, { migrate: false });
    const before = await oldData(untouched.db);
    await untouched.close();

    const server = await startServer(SAME_SECRET, { database: { url: `sqlite:${path}`, config, drop: async () => undefined } });
    cleanup.push(() => server.close());
    assert.equal(await oldData(server.database.db), before, 'the old tables are unchanged by the migration');
    await checkUpgraded(server);
  });

  test('PostgreSQL', { skip: onPostgres ? false : 'runs in the PostgreSQL pass' }, async () => {
    const database: TestDatabase = await createTestDatabase();
    cleanup.push(() => database.drop());
    // pg_dump's psql meta-commands (\restrict) are not SQL; the rest runs as one script.
    const script = readFileSync(join(fixtures, 'pre-teams.postgres.sql'), 'utf8').split('\n').filter((line) => !line.startsWith('\\')).join('\n');
    const client = new pg.Client({ connectionString: database.url });
    await client.connect();
    await client.query(script);
    await client.end();
    const untouched = await openDatabase(database.config, { migrate: false, poolSize: 1 });
    const before = await oldData(untouched.db);
    await untouched.close();

    const server = await startServer(SAME_SECRET, { database });
    cleanup.push(() => server.close());
    assert.equal(await oldData(server.database.db), before, 'the old tables are unchanged by the migration');
    await checkUpgraded(server);
  });
});
