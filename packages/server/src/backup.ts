/**
 * npm run backup -- <file>: a consistent copy of the running SQLite database (DATABASE_URL), taken
 * with SQLite's online backup API while the server keeps reading and writing. Written to
 * <file>.partial, checked, then renamed: <file> is only ever a complete backup. Like the database
 * (it holds the password hashes and the generated JWT secret), the copy is readable by its user
 * only (0600). PostgreSQL has its own tools (pg_dump; docs/operations.md).
 */
import { existsSync, renameSync, rmSync } from 'node:fs';
import { resolve } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import { ConfigError, loadConfig } from './config.js';
import { createPrivateFile } from './db/database.js';

async function backup(target: string): Promise<void> {
  const config = loadConfig();
  if (config.database.kind !== 'sqlite') {
    throw new ConfigError('npm run backup copies a SQLite database; for PostgreSQL use pg_dump (docs/operations.md)');
  }
  if (!existsSync(config.database.path)) throw new ConfigError(`no database at ${config.database.path}`);
  const partial = `${target}.partial`;
  rmSync(partial, { force: true });
  createPrivateFile(partial); // SQLite writes into it (and its journal) keeping this mode
  const source = new BetterSqlite3(config.database.path, { fileMustExist: true });
  source.pragma('busy_timeout = 5000');
  try {
    const { totalPages } = await source.backup(partial);
    // Read-write, so that closing it removes the -wal and -shm files the check opens beside the copy.
    const copy = new BetterSqlite3(partial);
    try {
      const integrity = copy.pragma('integrity_check', { simple: true });
      if (integrity !== 'ok') throw new Error(`the copy fails integrity_check: ${String(integrity)}`);
    } finally {
      copy.close();
    }
    renameSync(partial, target);
    console.log(`backed up ${config.database.path} to ${target} (${totalPages} pages)`);
  } catch (error) {
    rmSync(partial, { force: true });
    throw error;
  } finally {
    source.close();
  }
}

const target = process.argv[2];
if (!target) {
  console.error('usage: npm run backup -- <file>');
  process.exit(2);
}
// npm runs scripts from the project folder; a relative <file> means the caller's folder.
backup(resolve(process.env.INIT_CWD ?? '.', target)).catch((error: unknown) => {
  console.error(error instanceof ConfigError ? `Backup failed: ${error.message}` : error);
  process.exit(1);
});
