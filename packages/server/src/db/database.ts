import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import { Kysely, Migrator, PostgresDialect, SqliteDialect, sql, type SqliteDatabase } from 'kysely';
import pg from 'pg';
import type { Config } from '../config.js';
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

function sqliteAdapter(raw: BetterSqlite3.Database): SqliteDatabase {
  return {
    close: () => raw.close(),
    prepare(query) {
      const statement = raw.prepare(query);
      return {
        reader: statement.reader,
        all: (parameters) => statement.all(bindableInSqlite(parameters)),
        run: (parameters) => statement.run(bindableInSqlite(parameters)),
        iterate: (parameters) => statement.iterate(bindableInSqlite(parameters)),
      };
    },
  };
}

function openSqlite(path: string, options: OpenOptions): Database {
  if (path !== ':memory:') mkdirSync(dirname(path), { recursive: true });
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
    ping: async () => {
      await sql`select 1`.execute(db);
    },
    close: () => db.destroy(),
  };
}

function openPostgres(url: string, options: OpenOptions): Database {
  const pool = new pg.Pool({ connectionString: url, max: options.poolSize ?? 10 });
  pool.on('error', (error) => options.onPoolError?.(error));
  const db = new Kysely<Schema>({ dialect: new PostgresDialect({ pool }) });
  return {
    db,
    dialect: 'postgres',
    ping: async () => {
      await sql`select 1`.execute(db);
    },
    close: () => db.destroy(),
  };
}

async function migrate(db: Db, dialect: Dialect): Promise<void> {
  const migrator = new Migrator({ db, provider: { getMigrations: async () => migrations(dialect) } });
  const { error } = await migrator.migrateToLatest();
  if (error) throw error;
}

export async function openDatabase(config: Config['database'], options: OpenOptions = {}): Promise<Database> {
  const database = config.kind === 'sqlite' ? openSqlite(config.path, options) : openPostgres(config.url, options);
  if (options.migrate ?? true) await migrate(database.db, database.dialect);
  return database;
}
