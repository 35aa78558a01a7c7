/**
 * The database a test runs on: a fresh SQLite file, or with GUIDON_TEST_DATABASE=postgres a fresh
 * PostgreSQL database (guidon_test_<random>) on the machine's server, dropped afterwards.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import type { Config } from '../src/config.js';

export const onPostgres = process.env.GUIDON_TEST_DATABASE === 'postgres';
export const POSTGRES_ADMIN_URL = process.env.GUIDON_TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

export interface TestDatabase {
  /** For DATABASE_URL. */
  url: string;
  config: Config['database'];
  drop(): Promise<void>;
}

async function asAdmin(statement: string): Promise<void> {
  const admin = new pg.Client({ connectionString: POSTGRES_ADMIN_URL });
  await admin.connect();
  try {
    await admin.query(statement);
  } finally {
    await admin.end();
  }
}

export async function createTestDatabase(): Promise<TestDatabase> {
  if (!onPostgres) {
    const dir = mkdtempSync(join(tmpdir(), 'guidon-test-'));
    const path = join(dir, 'guidon.db');
    return { url: `sqlite:${path}`, config: { kind: 'sqlite', path }, drop: async () => rmSync(dir, { recursive: true, force: true }) };
  }
  const name = `guidon_test_${randomBytes(6).toString('hex')}`;
  await asAdmin(`create database ${name}`);
  const url = new URL(POSTGRES_ADMIN_URL);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    config: { kind: 'postgres', url: url.toString() },
    drop: () => asAdmin(`drop database if exists ${name} with (force)`),
  };
}
