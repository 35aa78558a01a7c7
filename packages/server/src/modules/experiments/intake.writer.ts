/**
 * How the intake's rows reach the database (intake.ts): each group of rows in one transaction,
 * their units first added to `units` (0018_units) and each row inserted with its unit's id. The
 * writing runs on a thread of its own (intake.worker.ts) with a connection of its own: SQLite's
 * commits, and on PostgreSQL building each statement's thousands of parameters and reading back
 * the new units' ids, would otherwise hold the thread that answers evaluate (docs/performance.md,
 * "Experiments").
 */
import { Worker } from 'node:worker_threads';
import BetterSqlite3 from 'better-sqlite3';
import { sql } from 'kysely';
import type { Config } from '../../config.js';
import type { Database } from '../../db/database.js';
import { isForeignKeyViolation } from '../../db/errors.js';
import { INTAKE_WORKER_URL } from '../../paths.js';

export interface ExposureRow {
  environment_id: string;
  flag_key: string;
  unit: string;
  arm: string;
  at: number;
}
export interface EventRow {
  environment_id: string;
  name: string;
  unit: string;
  value: number;
  at: number;
}
export type Table = 'exposures' | 'events';
type Row = ExposureRow | EventRow;

/**
 * The rows one batch keeps, as they wait on the server's thread for a flush: one string, not an
 * object a row. What waits there outlives young-generation collections, and copying every row's
 * objects paused evaluate for 10–30 ms at 50,000 items a second (docs/performance.md,
 * "Experiments"); a string is copied whole, and to the intake's thread too. rowsOf reads them back.
 */
export interface PackedRows {
  environmentId: string;
  count: number;
  /** JSON: [flag_key, unit, arm, at] for an exposure, [name, unit, value, at] for an event. */
  json: string;
}
export type ExposureTuple = [flagKey: string, unit: string, arm: string, at: number];
export type EventTuple = [name: string, unit: string, value: number, at: number];
export const packRows = (environmentId: string, tuples: ExposureTuple[] | EventTuple[]): PackedRows => ({ environmentId, count: tuples.length, json: JSON.stringify(tuples) });

/** The rows of packed batches (on the intake's thread). */
export function rowsOf(table: Table, batches: readonly PackedRows[]): Row[] {
  const rows: Row[] = [];
  for (const { environmentId: environment_id, json } of batches) {
    if (table === 'exposures') for (const [flag_key, unit, arm, at] of JSON.parse(json) as ExposureTuple[]) rows.push({ environment_id, flag_key, unit, arm, at });
    else for (const [name, unit, value, at] of JSON.parse(json) as EventTuple[]) rows.push({ environment_id, name, unit, value, at });
  }
  return rows;
}

/** The rows of one commit: whole batches of one table. */
export interface RowGroup {
  table: Table;
  batches: PackedRows[];
  rows: number;
}

export interface RowWriter {
  /**
   * Writes one group of rows, all or none; those of an environment deleted since they were
   * accepted are dropped (its rows went with it). Answers the environments whose rows were written.
   */
  write(table: Table, rows: Row[]): Promise<Set<string>>;
  close(): Promise<void>;
}

/** Rows per INSERT statement (5 parameters each: within SQLite's 32,766). */
const ROWS_PER_STATEMENT = 500;
/** Unit ids the SQLite writer keeps (some 100 bytes each). */
const CACHED_UNITS = 200_000;

/** The rows' parameters in the order of their table's insert, in one array (no array per row), each with its unit's id. */
function parametersOf(rows: readonly Row[], idOf: (row: Row) => number): unknown[] {
  const parameters = new Array<unknown>(rows.length * 5);
  let at = 0;
  for (const row of rows) {
    parameters[at++] = row.environment_id;
    parameters[at++] = 'flag_key' in row ? row.flag_key : row.name;
    parameters[at++] = idOf(row);
    parameters[at++] = 'flag_key' in row ? row.arm : row.value;
    parameters[at++] = row.at;
  }
  return parameters;
}

/** The rows' (environment, unit) pairs, each once, sorted (two instances add overlapping units in the same order: no deadlock on PostgreSQL). */
function unitsOf(rows: readonly Row[]): { environment_id: string; unit: string }[] {
  const seen = new Map<string, { environment_id: string; unit: string }>();
  for (const row of rows) {
    const key = `${row.environment_id}\u0000${row.unit}`;
    if (!seen.has(key)) seen.set(key, { environment_id: row.environment_id, unit: row.unit });
  }
  return [...seen.keys()].sort().map((key) => seen.get(key)!);
}

const environmentsOf = (rows: readonly Row[]) => new Set(rows.map((row) => row.environment_id));

/**
 * SQLite, on the intake's thread: a connection of its own, with the driver's prepared statements
 * (no query built per chunk: a third of the intake's time through Kysely) and synchronous =
 * NORMAL, as the history worker's: in WAL mode a crash of the process loses nothing written, a
 * power cut at most the last commits, and no commit waits for the disk. Waiting for the write lock
 * (the server's connection writing) blocks this thread only, up to 5 s.
 */
export class SqliteRowWriter {
  private readonly connection: BetterSqlite3.Database;
  private readonly statements = new Map<string, BetterSqlite3.Statement>();
  private readonly unitId: BetterSqlite3.Statement;
  /**
   * `environment \0 unit` → units.id, for units committed: a row of a known unit is inserted with
   * its id, without a look-up in SQL (the look-up per row made the writer too slow for 50,000
   * items a second: docs/performance.md, "Experiments"). Ids are kept only after their commit
   * (SQLite may give a rolled-back id to another unit), and forgotten all at once past the bound.
   */
  private readonly unitIds = new Map<string, number>();

  constructor(path: string) {
    this.connection = new BetterSqlite3(path);
    this.connection.pragma('journal_mode = WAL');
    this.connection.pragma('synchronous = NORMAL');
    this.connection.pragma('busy_timeout = 5000');
    this.connection.pragma('foreign_keys = ON');
    this.unitId = this.connection.prepare('select id from units where environment_id = ? and unit = ?').pluck();
  }

  write(table: Table, rows: Row[]): Set<string> {
    try {
      this.writeRows(table, rows);
      return environmentsOf(rows);
    } catch (error) {
      if (!isForeignKeyViolation(error)) throw error;
      const ids = [...environmentsOf(rows)];
      const existing = new Set(this.connection.prepare(`select id from environments where id in (${ids.map(() => '?').join(', ')})`).pluck().all(...ids) as string[]);
      const kept = rows.filter((row) => existing.has(row.environment_id));
      this.writeRows(table, kept);
      return environmentsOf(kept);
    }
  }

  close(): void {
    this.connection.close();
  }

  private writeRows(table: Table, rows: Row[]): void {
    const added = new Map<string, number>();
    this.connection.transaction(() => {
      const unknown = unitsOf(rows.filter((row) => !this.unitIds.has(`${row.environment_id}\u0000${row.unit}`)));
      for (let i = 0; i < unknown.length; i += ROWS_PER_STATEMENT) {
        const chunk = unknown.slice(i, i + ROWS_PER_STATEMENT);
        this.statement('units', chunk.length).run(chunk.flatMap((unit) => [unit.environment_id, unit.unit]));
      }
      for (const { environment_id, unit } of unknown) {
        const id = this.unitId.get(environment_id, unit) as number | undefined;
        // Undefined only for a unit of an environment deleted meanwhile: its row fails on the environment's foreign key.
        if (id !== undefined) added.set(`${environment_id}\u0000${unit}`, id);
      }
      const idOf = (row: Row) => this.unitIds.get(`${row.environment_id}\u0000${row.unit}`) ?? added.get(`${row.environment_id}\u0000${row.unit}`) ?? 0;
      for (let i = 0; i < rows.length; i += ROWS_PER_STATEMENT) {
        const chunk = rows.slice(i, i + ROWS_PER_STATEMENT);
        this.statement(table, chunk.length).run(parametersOf(chunk, idOf));
      }
    }).immediate();
    if (this.unitIds.size + added.size > CACHED_UNITS) this.unitIds.clear();
    for (const [key, id] of added) this.unitIds.set(key, id);
  }

  private statement(table: Table | 'units', rows: number): BetterSqlite3.Statement {
    const key = `${table}:${rows}`;
    let statement = this.statements.get(key);
    if (!statement) {
      const [columns, conflict] =
        table === 'units'
          ? ['(environment_id, unit)', ' on conflict do nothing']
          : table === 'exposures'
            ? ['(environment_id, flag_key, unit_id, arm, at)', '']
            : ['(environment_id, name, unit_id, value, at)', ''];
      const row = table === 'units' ? '(?, ?)' : '(?, ?, ?, ?, ?)';
      statement = this.connection.prepare(`insert into ${table} ${columns} values ${Array(rows).fill(row).join(', ')}${conflict}`);
      // Two sizes in use per table: the full chunk and the last one of a flush; others are rare.
      if (this.statements.size > 24) this.statements.clear();
      this.statements.set(key, statement);
    }
    return statement;
  }
}

/**
 * PostgreSQL, on the intake's thread: a pool of one connection of its own, through Kysely; the ids
 * of units committed kept as SqliteRowWriter keeps them. The tables have no foreign key to
 * `environments` here (0019_intake_rows_unchecked: PostgreSQL checked it row by row): each
 * statement locks the group's environments once, `for key share` as a foreign key check does, and
 * writes only the rows of those that still exist. An environment deleted meanwhile waits for the
 * statement and then deletes its rows by trigger; one deleted before it has none written.
 */
export class PostgresRowWriter implements RowWriter {
  private readonly unitIds = new Map<string, number>();

  /** The database is the writer's: close() closes it. */
  constructor(private readonly database: Database) {}

  async close(): Promise<void> {
    await this.database.close();
  }

  /**
   * Each statement takes its columns as arrays (unnest): one statement a group, its parameters
   * five arrays instead of five per row, which PostgreSQL parses and binds in a fraction of the
   * time (its CPU is the evaluate thread's on a small machine: docs/performance.md, "Experiments");
   * the rows' strings go as dictionaries, their numbers as literals. Without new units a group is
   * that one statement, committed on its own: no transaction's round trips. New units are
   * committed first (a unit without rows, should the rows' statement fail, only waits for them),
   * then their ids read.
   */
  async write(table: Table, rows: Row[]): Promise<Set<string>> {
    const db = this.database.db;
    const added = new Map<string, number>();
    const unknown = unitsOf(rows.filter((row) => !this.unitIds.has(`${row.environment_id}\u0000${row.unit}`)));
    if (unknown.length > 0) {
      const environments = unknown.map((unit) => unit.environment_id);
      const units = unknown.map((unit) => unit.unit);
      await sql`with kept as (${lockEnvironments(environments)})
        insert into units (environment_id, unit) select wanted.environment_id, wanted.unit from unnest(${environments}::uuid[], ${units}::text[]) with ordinality as wanted(environment_id, unit, n)
        join kept on kept.id = wanted.environment_id order by wanted.n on conflict do nothing`.execute(db);
      // A statement of its own: it sees the units another instance committed while this insert waited for them.
      const found = await sql<{ id: string; environment_id: string; unit: string }>`
        select u.id, u.environment_id, u.unit from units u
        join unnest(${environments}::uuid[], ${units}::text[]) as wanted(environment_id, unit) on u.environment_id = wanted.environment_id and u.unit = wanted.unit`.execute(db);
      for (const unit of found.rows) added.set(`${unit.environment_id}\u0000${unit.unit}`, Number(unit.id));
    }
    // A unit not found is one of an environment deleted meanwhile: its rows are not written.
    const idOf = (row: Row) => this.unitIds.get(`${row.environment_id}\u0000${row.unit}`) ?? added.get(`${row.environment_id}\u0000${row.unit}`) ?? 0;
    const environments = dictionary(rows.map((row) => row.environment_id));
    const ids = numbers(rows.map(idOf));
    const ats = numbers(rows.map((row) => row.at));
    let insert;
    if (table === 'exposures') {
      const flags = dictionary((rows as ExposureRow[]).map((row) => row.flag_key));
      const arms = dictionary((rows as ExposureRow[]).map((row) => row.arm));
      insert = sql`insert into exposures (environment_id, flag_key, unit_id, arm, at)
        select kept.id, (${flags.keys}::text[])[r.flag], r.unit_id, (${arms.keys}::text[])[r.arm], r.at
        from unnest(${environments.positions}::int[], ${flags.positions}::int[], ${ids}::bigint[], ${arms.positions}::int[], ${ats}::bigint[]) as r(environment, flag, unit_id, arm, at)
        join kept on kept.id = (${environments.keys}::uuid[])[r.environment]`;
    } else {
      const names = dictionary((rows as EventRow[]).map((row) => row.name));
      insert = sql`insert into events (environment_id, name, unit_id, value, at)
        select kept.id, (${names.keys}::text[])[r.name], r.unit_id, r.value, r.at
        from unnest(${environments.positions}::int[], ${names.positions}::int[], ${ids}::bigint[], ${numbers((rows as EventRow[]).map((row) => row.value))}::float8[], ${ats}::bigint[]) as r(environment, name, unit_id, value, at)
        join kept on kept.id = (${environments.keys}::uuid[])[r.environment]`;
    }
    // A data-modifying WITH runs to its end whatever the query reads: the answer is the environments written.
    const written = await sql<{ id: string }>`with kept as materialized (${lockEnvironments(environments.keys)}), inserted as (${insert}) select id from kept`.execute(db);
    if (this.unitIds.size + added.size > CACHED_UNITS) this.unitIds.clear();
    for (const [key, id] of added) this.unitIds.set(key, id);
    return new Set(written.rows.map((row) => row.id));
  }
}

/**
 * A column of few distinct values (environments, flags, arms, event names) as those values once and
 * each row's position among them (from 1, as PostgreSQL's arrays): a third of the bytes for
 * PostgreSQL to parse, and no escaping of each row's strings here.
 */
function dictionary(values: readonly string[]): { keys: string[]; positions: string } {
  const positionOf = new Map<string, number>();
  const positions = new Array<number>(values.length);
  for (let i = 0; i < values.length; i++) {
    let position = positionOf.get(values[i]!);
    if (position === undefined) positionOf.set(values[i]!, (position = positionOf.size + 1));
    positions[i] = position;
  }
  return { keys: [...positionOf.keys()], positions: numbers(positions) };
}

/** Finite numbers as one array literal (`{1,2.5,3}`): a single string parameter, where the driver would quote and escape each. */
const numbers = (values: readonly number[]) => `{${values.join(',')}}`;

/** The environments among these that exist, locked until the statement ends as a foreign key check locks them (a delete waits). */
const lockEnvironments = (ids: readonly string[]) => sql`select id from environments where id = any(${[...new Set(ids)]}::uuid[]) order by id for key share`;

/** `flush` numbers the groups of one flush: after one fails, the thread fails the flush's later ones without trying them. */
export type ToIntakeWorker = { type: 'write'; id: number; flush: number; table: Table; batches: PackedRows[] } | { type: 'close' };
export type FromIntakeWorker = { type: 'written'; id: number; environments: string[] } | { type: 'failed'; id: number; error: string; code?: string } | { type: 'closed' };

/**
 * The rows handed to the intake's thread (intake.worker.ts), started with the first
 * write. A thread that dies fails the groups it held (the intake keeps their rows for the next
 * flush), and the next write starts another.
 */
export class ThreadRowWriter {
  private worker: Worker | undefined;
  private readonly waiting = new Map<number, { resolve: (environments: Set<string>) => void; reject: (error: Error) => void }>();
  private lastId = 0;
  private lastFlush = 0;

  constructor(private readonly databaseConfig: Config['database']) {}

  /**
   * Hands the groups of one flush to the thread without waiting for each to be written (it writes
   * them in order), one group's copy per turn of this thread so that evaluate is answered between
   * them. The thread then goes from one commit to the next: waiting here for each group's answer
   * left it idle for a turn of this busy thread per group, and on PostgreSQL the intake fell
   * behind 50,000 items a second (docs/performance.md, "Experiments"). Each promise settles with
   * its group: the environments written, or the failure (the later groups of a flush fail
   * untried after one fails).
   */
  async writeAll(groups: readonly RowGroup[]): Promise<Promise<Set<string>>[]> {
    const flush = ++this.lastFlush;
    const writes: Promise<Set<string>>[] = [];
    for (const group of groups) {
      if (writes.length > 0) await new Promise(setImmediate);
      const write = this.write(group.table, group.batches, flush);
      write.catch(() => {}); // the caller handles it; a failure before it has every promise is not unhandled
      writes.push(write);
    }
    return writes;
  }

  private write(table: Table, batches: PackedRows[], flush: number): Promise<Set<string>> {
    const worker = this.worker ?? this.start();
    const id = ++this.lastId;
    return new Promise((resolve, reject) => {
      this.waiting.set(id, { resolve, reject });
      worker.postMessage({ type: 'write', id, flush, table, batches } satisfies ToIntakeWorker);
    });
  }

  async close(): Promise<void> {
    const worker = this.worker;
    if (!worker) return;
    this.worker = undefined;
    await new Promise<void>((resolve) => {
      worker.once('exit', () => resolve());
      worker.on('message', (message: FromIntakeWorker) => message.type === 'closed' && void worker.terminate());
      worker.postMessage({ type: 'close' } satisfies ToIntakeWorker);
    });
  }

  private start(): Worker {
    const worker = new Worker(INTAKE_WORKER_URL, { workerData: { database: this.databaseConfig } });
    this.worker = worker;
    worker.unref();
    worker.on('message', (message: FromIntakeWorker) => {
      if (message.type === 'closed') return;
      const waiting = this.waiting.get(message.id);
      this.waiting.delete(message.id);
      if (message.type === 'written') waiting?.resolve(new Set(message.environments));
      else waiting?.reject(Object.assign(new Error(message.error), { code: message.code }));
    });
    worker.on('error', (error) => this.failAll(error));
    worker.on('exit', () => {
      if (this.worker === worker) this.worker = undefined;
      this.failAll(new Error('the intake worker stopped'));
    });
    return worker;
  }

  private failAll(error: Error): void {
    for (const { reject } of this.waiting.values()) reject(error);
    this.waiting.clear();
  }
}
