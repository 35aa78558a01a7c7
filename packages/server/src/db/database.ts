import { chmodSync, closeSync, existsSync, mkdirSync, openSync, statSync } from 'node:fs';
import { dirname } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import { Kysely, Migrator, PostgresDialect, SqliteDialect, sql, type PostgresPool, type PostgresPoolClient, type SqliteDatabase } from 'kysely';
import pg from 'pg';
import type { Config } from '../config.js';
import { translateDriverError } from './errors.js';
import { migrations, type Dialect } from './migrations.js';
import type { Schema } from './schema.js';

export type Db = Kysely<Schema>;

export interface OpenOptions {
  /** Run migrations first (the main process does; the history worker does not). */
  migrate?: boolean;
  /**
   * SQLite only. FULL (default): an acknowledged write survives a power cut. The history worker
   * uses NORMAL: its rows are written after the answer anyway, and a power cut in WAL mode loses
   * at most the last commits, never the database.
   */
  synchronous?: 'FULL' | 'NORMAL';
  /** PostgreSQL only: connections in the pool. */
  poolSize?: number;
  /** PostgreSQL only: an idle pooled connection failed (the pool replaces it). */
  onPoolError?: (error: Error) => void;
}

export interface Database {
  db: Db;
  dialect: Dialect;
  /** SQLite only: the driver's own handle, for the few writes that need its prepared statements (history). */
  sqlite?: BetterSqlite3.Database;
  /** Throws when the database does not answer (GET /health). */
  ping(): Promise<void>;
  close(): Promise<void>;
}

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

function sqliteAdapter(raw: BetterSqlite3.Database): SqliteDatabase {
  return {
    close: () => raw.close(),
    prepare(query) {
      const statement = translated(() => raw.prepare(query));
      return {
        reader: statement.reader,
        all: (parameters) => translated(() => statement.all(bindableInSqlite(parameters))),
        run: (parameters) => translated(() => statement.run(bindableInSqlite(parameters))),
        iterate: (parameters) => translated(() => statement.iterate(bindableInSqlite(parameters))),
      };
    },
  };
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
  const db = new Kysely<Schema>({ dialect: new SqliteDialect({ database: sqliteAdapter(raw) }) });
  return {
    db,
    dialect: 'sqlite',
    sqlite: raw,
    ping: async () => pingSqlite(raw),
    close: () => db.destroy(),
  };
}

/**
 * A database that does not answer must not hold requests: a connection (or a free pool slot)
 * within 2 s, a statement within 30 s (server side), and an answer within 35 s even when the
 * server is unreachable (client side). Past them, requests get 503 (Unavailable).
 */
const POSTGRES_TIMEOUTS = { connectionTimeoutMillis: 2000, statement_timeout: 30_000, query_timeout: 35_000, keepAlive: true } as const;

/** The pool as Kysely sees it, with "database away" errors translated (db/errors.ts). */
function translatingPool(pool: pg.Pool): PostgresPool {
  return {
    async connect() {
      const client = await pool.connect().catch((error: unknown) => Promise.reject(translateDriverError(error)));
      let broken: unknown;
      const wrapped = {
        query: (...args: unknown[]) =>
          (client.query as (...a: unknown[]) => Promise<unknown>)(...args).catch((error: unknown) => {
            const translatedError = translateDriverError(error);
            if (translatedError !== error) broken = error; // this connection is not reused
            throw translatedError;
          }),
        release: () => client.release(broken as Error | undefined),
      };
      return wrapped as unknown as PostgresPoolClient;
    },
    end: () => pool.end(),
  };
}

/**
 * pg emits 'error' on a pooled client whose connection drops while it is checked out between
 * queries (or still connecting); with no listener Node ends the process. The pool and the query
 * see the failure anyway and the pool replaces the client, so this listener only keeps us alive.
 */
class PoolClient extends pg.Client {
  constructor(config?: string | pg.ClientConfig) {
    super(config);
    this.on('error', () => undefined);
  }
}

function openPostgres(url: string, options: OpenOptions): Database {
  const pool = new pg.Pool({ connectionString: url, max: options.poolSize ?? 10, ...POSTGRES_TIMEOUTS, Client: PoolClient });
  pool.on('error', (error) => options.onPoolError?.(error));
  const db = new Kysely<Schema>({ dialect: new PostgresDialect({ pool: translatingPool(pool) }) });
  return {
    db,
    dialect: 'postgres',
    ping: async () => {
      await sql`select 1`.execute(db);
    },
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
  const database = config.kind === 'sqlite' ? openSqlite(config.path, options) : openPostgres(config.url, options);
  if (options.migrate ?? true) await migrate(database.db, database.dialect);
  return database;
}
