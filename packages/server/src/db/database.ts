import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import { Kysely, Migrator, SqliteDialect, sql, type SqliteDatabase } from 'kysely';
import type { Config } from '../config.js';
import { migrations, type Dialect } from './migrations.js';
import type { Schema } from './schema.js';

export type Db = Kysely<Schema>;

export interface Database {
  db: Db;
  dialect: Dialect;
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

function openSqlite(path: string): Db {
  if (path !== ':memory:') mkdirSync(dirname(path), { recursive: true });
  const raw = new BetterSqlite3(path);
  raw.pragma('journal_mode = WAL');
  // FULL: an acknowledged write survives a power cut, not only a process crash.
  raw.pragma('synchronous = FULL');
  raw.pragma('foreign_keys = ON');
  raw.pragma('busy_timeout = 5000');
  return new Kysely<Schema>({ dialect: new SqliteDialect({ database: sqliteAdapter(raw) }) });
}

async function migrate(db: Db, dialect: Dialect): Promise<void> {
  const migrator = new Migrator({ db, provider: { getMigrations: async () => migrations(dialect) } });
  const { error } = await migrator.migrateToLatest();
  if (error) throw error;
}

export async function openDatabase(config: Config['database']): Promise<Database> {
  if (config.kind !== 'sqlite') throw new Error('PostgreSQL support is not built yet');
  const db = openSqlite(config.path);
  await migrate(db, 'sqlite');
  return {
    db,
    dialect: 'sqlite',
    ping: async () => {
      await sql`select 1`.execute(db);
    },
    close: () => db.destroy(),
  };
}
