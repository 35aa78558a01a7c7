import { chmodSync, closeSync, existsSync, mkdirSync, openSync, statSync } from 'node:fs';
import { dirname } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import { CompiledQuery, Kysely, Migrator, SqliteDialect, SqliteDriver, sql, type DatabaseConnection, type Driver, type SqliteDatabase, type SqliteDialectConfig } from 'kysely';
import type { Config } from '../config.js';
import { translateDriverError } from './errors.js';
import type { Database, Db, OpenOptions } from './handle.js';
import { migrations, type Dialect } from './migrations.js';
import type { Schema } from './schema.js';

export type { Database, Db, OpenOptions } from './handle.js';

/** better-sqlite3 refuses to bind booleans; store them as 0/1 like SQLite itself does. */
function bindableInSqlite(parameters: ReadonlyArray<unknown>): unknown[] {
  return parameters.map((value) => (typeof value === 'boolean' ? Number(value) : value));
}

/** Runs a driver call, turning "database away" errors into Unavailable (db/errors.ts). */
function translated<T>(call: () => T): T {
  try {
    return call();
  } catch (error) {
    throw translateDriverError(error);
  }
}

/** Prepared statements kept per connection, the least recently used dropped first. */
const KEPT_STATEMENTS = 500;

/**
 * Kysely prepares every query it runs; preparing was the largest part of a simple indexed read
 * (an API token's, on each ruleset fetch and stream open: docs/performance.md). The statements
 * of the last KEPT_STATEMENTS distinct queries are kept and run again: better-sqlite3 runs a
 * statement synchronously, so one is never in use twice at once, and SQLite prepares it again by
 * itself after a schema change. A streamed read (iterate) gets a statement of its own.
 */
function sqliteAdapter(raw: BetterSqlite3.Database): SqliteDatabase {
  const statements = new Map<string, BetterSqlite3.Statement>();
  const kept = (query: string): BetterSqlite3.Statement => {
    let statement = statements.get(query);
    if (statement) statements.delete(query); // re-inserted below: most recently used last
    else statement = translated(() => raw.prepare(query));
    statements.set(query, statement);
    if (statements.size > KEPT_STATEMENTS) statements.delete(statements.keys().next().value!);
    return statement;
  };
  return {
    close: () => raw.close(),
    prepare(query) {
      const statement = kept(query);
      return {
        reader: statement.reader,
        all: (parameters) => translated(() => statement.all(bindableInSqlite(parameters))),
        run: (parameters) => translated(() => statement.run(bindableInSqlite(parameters))),
        iterate: (parameters) => translated(() => raw.prepare(query).iterate(bindableInSqlite(parameters))),
      };
    },
  };
}

/**
 * Transactions take the write lock when they begin (BEGIN IMMEDIATE), waiting for it up to the busy
 * timeout. Other connections write the same file (the intake's thread, intake.writer.ts), and a
 * deferred transaction that read before one of their commits cannot write after it: SQLite fails
 * it with "database is locked" at once, without waiting. Kysely serializes this connection's
 * transactions anyway, so taking the lock early costs no concurrency on this thread.
 */
class ImmediateSqliteDialect extends SqliteDialect {
  constructor(private readonly settings: SqliteDialectConfig) {
    super(settings);
  }

  override createDriver(): Driver {
    return new (class extends SqliteDriver {
      override async beginTransaction(connection: DatabaseConnection): Promise<void> {
        await connection.executeQuery(CompiledQuery.raw('begin immediate'));
      }
    })(this.settings);
  }
}

/**
 * SQLite's health: taking the write lock proves more than `select 1` (which a locked or
 * read-only database still answers). Waits at most 1 s for the lock: the wait blocks the thread.
 */
function pingSqlite(raw: BetterSqlite3.Database): void {
  if (raw.inTransaction) return; // a transaction of ours is running: the database answers
  const busyTimeout = raw.pragma('busy_timeout', { simple: true }) as number;
  raw.pragma('busy_timeout = 1000');
  try {
    translated(() => raw.exec('begin immediate'));
    raw.exec('rollback');
  } finally {
    raw.pragma(`busy_timeout = ${busyTimeout}`);
  }
}

/**
 * Creates a file (and the folders it needs) readable by this process's user only: 0600, and 0700
 * for a folder made here. An existing file keeps its content; a group- or world-readable one is
 * narrowed to 0600 (when we may: a file of another user is left as it is).
 */
export function createPrivateFile(path: string): void {
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  closeSync(openSync(path, 'a', 0o600));
  narrowToOwner(path);
}

function narrowToOwner(path: string): void {
  try {
    if ((statSync(path).mode & 0o077) !== 0) chmodSync(path, 0o600);
  } catch {
    // gone meanwhile, or not ours to change
  }
}

/**
 * The database holds password hashes and the generated JWT secret. SQLite creates its -wal and
 * -shm files with the database file's mode, so a 0600 database file covers all three.
 */
function openSqlite(path: string, options: OpenOptions): Database {
  if (path !== ':memory:') {
    createPrivateFile(path);
    for (const companion of [`${path}-wal`, `${path}-shm`]) if (existsSync(companion)) narrowToOwner(companion);
  }
  const raw = new BetterSqlite3(path);
  raw.pragma('journal_mode = WAL');
  // FULL: an acknowledged write survives a power cut, not only a process crash.
  raw.pragma(`synchronous = ${options.synchronous ?? 'FULL'}`);
  raw.pragma('foreign_keys = ON');
  raw.pragma('busy_timeout = 5000');
  const db = new Kysely<Schema>({ dialect: new ImmediateSqliteDialect({ database: sqliteAdapter(raw) }) });
  return {
    db,
    dialect: 'sqlite',
    sqlite: raw,
    ping: async () => pingSqlite(raw),
    close: () => db.destroy(),
  };
}

/**
 * Processes that start together (replicas) migrate once. On PostgreSQL Kysely holds an advisory
 * lock for the run. On SQLite it holds none and runs the DDL outside any transaction, so two
 * processes on a fresh file both created the same tables: the run is one IMMEDIATE transaction
 * instead, and a second process waits for the write lock (the busy timeout), then finds nothing to do.
 */
async function migrate(db: Db, dialect: Dialect): Promise<void> {
  const migrator = new Migrator({ db, provider: { getMigrations: async () => migrations(dialect) } });
  if (dialect === 'sqlite') await sql`begin immediate`.execute(db);
  try {
    const { error } = await migrator.migrateToLatest();
    if (error) throw error;
    if (dialect === 'sqlite') await sql`commit`.execute(db);
  } catch (error) {
    if (dialect === 'sqlite') await sql`rollback`.execute(db);
    throw error;
  }
}

export async function openDatabase(config: Config['database'], options: OpenOptions = {}): Promise<Database> {
  // PostgreSQL's driver is loaded only where it is used (start-up time: docs/performance.md).
  const database = config.kind === 'sqlite' ? openSqlite(config.path, options) : (await import('./postgres.js')).openPostgres(config.url, options);
  if (options.migrate ?? true) await migrate(database.db, database.dialect);
  return database;
}
