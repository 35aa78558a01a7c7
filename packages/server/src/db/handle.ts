/** What an open database is to the rest of the server, whichever its kind (db/database.ts opens it). */
import type BetterSqlite3 from 'better-sqlite3';
import type { Kysely } from 'kysely';
import type { Dialect } from './migrations.js';
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

