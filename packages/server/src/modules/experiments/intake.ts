/**
 * What applications send (docs/experiments.md, "Sending exposures and events"): each batch is
 * sorted into what is kept and what is ignored (counted by reason), and what is kept waits here
 * until the next flush, at most FLUSH_INTERVAL_MS: durable within a second, and written at
 * shutdown. Only exposures of flags a running experiment of their environment watches, with an
 * arm of that experiment, are kept; events are kept when a metric of the project counts their name.
 */
import type { FastifyBaseLogger } from 'fastify';
import BetterSqlite3 from 'better-sqlite3';
import { sql } from 'kysely';
import type { Database } from '../../db/database.js';
import { Unavailable } from '../../errors.js';
import { LogThrottle } from '../../log-throttle.js';
import { nextTurn } from '../../pace.js';
import { fromJson } from '../../db/values.js';
import { isForeignKeyViolation } from '../../db/errors.js';
import type { EvaluateCache } from '../evaluate/evaluate.cache.js';
import type { EventsBody } from './intake.schemas.js';

/** An `at` older than this, or further ahead than FUTURE_MS, is ignored (clocks and retries, not history). */
export const OLDEST_MS = 24 * 60 * 60 * 1000;
export const FUTURE_MS = 5 * 60 * 1000;
/** The identifier the engine buckets a context without one by: never a unit. */
const ANONYMOUS = 'anonymous';
/** A reason of the engine's that says a targeting rule served the unit (engine outcomes.ts): the rollout did not choose its arm. */
const SERVED_BY_RULE = /^Matched .* targeting rule$|^TARGETING_MATCH$/;

export type IgnoredReason = 'not_watched' | 'unknown_arm' | 'served_by_rule' | 'anonymous' | 'too_old' | 'in_future' | 'no_metric';

interface ExposureRow {
  environment_id: string;
  flag_key: string;
  unit: string;
  arm: string;
  at: number;
}
interface EventRow {
  environment_id: string;
  name: string;
  unit: string;
  value: number;
  at: number;
}

/** What a project keeps: per environment, the watched flags with their arms; in every environment, the event names its metrics count (CUPED reads events from before an experiment starts). */
interface ProjectWatch {
  flags: ReadonlyMap<string, ReadonlyMap<string, ReadonlySet<string>>>;
  events: ReadonlySet<string>;
}
const NO_FLAGS: ReadonlyMap<string, ReadonlySet<string>> = new Map();

export interface IntakeOptions {
  flushIntervalMs: number;
  /** Rows waiting at most; a batch that would go beyond is refused with 503 (never accepted and then lost). */
  maxPendingRows: number;
  /** Rows per transaction. */
  rowsPerCommit: number;
}

const DEFAULTS: IntakeOptions = { flushIntervalMs: 250, maxPendingRows: 500_000, rowsPerCommit: 1000 };
/** Rows per INSERT statement (6 parameters each: within SQLite's 32,766). */
const ROWS_PER_STATEMENT = 500;
/**
 * The rows' parameters in the order of their table's insert, in one array (no array per row):
 * the unit's id is looked up in `units` by (environment, unit) as the row is inserted.
 */
function parametersOf(rows: readonly (ExposureRow | EventRow)[]): unknown[] {
  const parameters = new Array<unknown>(rows.length * 6);
  let at = 0;
  for (const row of rows) {
    parameters[at++] = row.environment_id;
    parameters[at++] = 'flag_key' in row ? row.flag_key : row.name;
    parameters[at++] = row.environment_id;
    parameters[at++] = row.unit;
    parameters[at++] = 'flag_key' in row ? row.arm : row.value;
    parameters[at++] = row.at;
  }
  return parameters;
}

/** The rows' (environment, unit) pairs, each once, sorted (two instances add overlapping units in the same order: no deadlock on PostgreSQL). */
function unitsOf(rows: readonly (ExposureRow | EventRow)[]): { environment_id: string; unit: string }[] {
  const seen = new Map<string, { environment_id: string; unit: string }>();
  for (const row of rows) {
    const key = `${row.environment_id}\u0000${row.unit}`;
    if (!seen.has(key)) seen.set(key, { environment_id: row.environment_id, unit: row.unit });
  }
  return [...seen.keys()].sort().map((key) => seen.get(key)!);
}

export class EventIntake {
  private readonly options: IntakeOptions;
  /** By project: each environment's watch, read from the database once per change of the project. */
  private readonly watched = new Map<string, Promise<ProjectWatch>>();
  private exposures: ExposureRow[] = [];
  private events: EventRow[] = [];
  private timer: NodeJS.Timeout | undefined;
  private flushing: Promise<void> | null = null;
  private readonly failureLog = new LogThrottle();
  private readonly writtenListeners = new Set<(environmentIds: ReadonlySet<string>) => void>();

  constructor(
    private readonly database: Database,
    cache: EvaluateCache,
    private readonly log: FastifyBaseLogger,
    options: Partial<IntakeOptions> = {},
  ) {
    this.options = { ...DEFAULTS, ...options };
    // An experiment started or stopped, a metric added: every write of the project drops its watch.
    cache.onInvalidate((projectId) => this.watched.delete(projectId));
  }

  start(): void {
    this.timer = setInterval(() => void this.flush(), this.options.flushIntervalMs);
    this.timer.unref();
  }

  /** Called after each flush with the environments that got rows (the results computer listens). */
  onWritten(listener: (environmentIds: ReadonlySet<string>) => void): void {
    this.writtenListeners.add(listener);
  }

  get pendingRows(): number {
    return this.exposures.length + this.events.length;
  }

  /** Sorts one batch; what is kept is written within a flush interval. */
  async accept(projectId: string, environmentId: string, body: EventsBody, now = Date.now()): Promise<{ accepted: number; ignored: Partial<Record<IgnoredReason, number>> }> {
    const items = (body.exposures?.length ?? 0) + (body.events?.length ?? 0);
    if (this.pendingRows + items > this.options.maxPendingRows) throw new Unavailable('Exposures and events are arriving faster than they can be written; try again shortly');
    const watch = await this.watchOf(projectId);
    const watchedFlags = watch.flags.get(environmentId) ?? NO_FLAGS;
    const ignored: Partial<Record<IgnoredReason, number>> = {};
    const ignore = (reason: IgnoredReason) => {
      ignored[reason] = (ignored[reason] ?? 0) + 1;
    };
    const timeOf = (at: string | undefined): number | IgnoredReason => {
      if (at === undefined) return now;
      const time = Date.parse(at);
      if (time < now - OLDEST_MS) return 'too_old';
      if (time > now + FUTURE_MS) return 'in_future';
      return time;
    };
    let accepted = 0;
    for (const exposure of body.exposures ?? []) {
      const arms = watchedFlags.get(exposure.flag);
      const at = timeOf(exposure.at);
      if (exposure.unit === ANONYMOUS) ignore('anonymous');
      else if (typeof at !== 'number') ignore(at);
      else if (!arms) ignore('not_watched');
      else if (!arms.has(exposure.arm)) ignore('unknown_arm');
      else if (exposure.reason !== undefined && SERVED_BY_RULE.test(exposure.reason)) ignore('served_by_rule');
      else {
        this.exposures.push({ environment_id: environmentId, flag_key: exposure.flag, unit: exposure.unit, arm: exposure.arm, at });
        accepted++;
      }
    }
    for (const event of body.events ?? []) {
      const at = timeOf(event.at);
      if (event.unit === ANONYMOUS) ignore('anonymous');
      else if (typeof at !== 'number') ignore(at);
      else if (!watch.events.has(event.name)) ignore('no_metric');
      else {
        this.events.push({ environment_id: environmentId, name: event.name, unit: event.unit, value: event.value ?? 1, at });
        accepted++;
      }
    }
    return { accepted, ignored };
  }

  /** Writes what waits (one flush at a time; a call during one waits for it and then flushes again). */
  async flush(): Promise<void> {
    while (this.flushing) await this.flushing;
    if (this.pendingRows === 0) return;
    this.flushing = this.write().finally(() => (this.flushing = null));
    await this.flushing;
  }

  /** Stops the timer and writes what waits. */
  async close(): Promise<void> {
    clearInterval(this.timer);
    await this.flush();
    this.connection?.close();
  }

  private async write(): Promise<void> {
    const exposures = this.exposures;
    const events = this.events;
    this.exposures = [];
    this.events = [];
    const environments = new Set<string>();
    const step = this.options.rowsPerCommit;
    let exposuresWritten = 0;
    let eventsWritten = 0;
    try {
      // A commit per thousand rows, a turn of the event loop between: no write holds the thread long.
      while (exposuresWritten < exposures.length) {
        const group = exposures.slice(exposuresWritten, exposuresWritten + step);
        await this.writeGroup('exposures', group);
        exposuresWritten += group.length;
        for (const row of group) environments.add(row.environment_id);
        await nextTurn();
      }
      while (eventsWritten < events.length) {
        const group = events.slice(eventsWritten, eventsWritten + step);
        await this.writeGroup('events', group);
        eventsWritten += group.length;
        for (const row of group) environments.add(row.environment_id);
        await nextTurn();
      }
      if (this.failureLog.recovered()) this.log.info('exposures and events written again');
    } catch (error) {
      // The database away: what was not written waits for the next flush, within the bound.
      this.requeue(exposures.slice(exposuresWritten), events.slice(eventsWritten), error);
    }
    if (environments.size > 0) for (const listener of this.writtenListeners) listener(environments);
  }

  /** A group's rows; those of an environment deleted since they were accepted are dropped (its rows went with it). */
  private async writeGroup(table: 'exposures' | 'events', rows: ExposureRow[] | EventRow[]): Promise<void> {
    try {
      await this.writeRows(table, rows);
    } catch (error) {
      if (!isForeignKeyViolation(error)) throw error;
      const ids = [...new Set(rows.map((row) => row.environment_id))];
      const existing = new Set((await this.database.db.selectFrom('environments').select('id').where('id', 'in', ids).execute()).map((row) => row.id));
      await this.writeRows(table, (rows as (ExposureRow | EventRow)[]).filter((row) => existing.has(row.environment_id)) as ExposureRow[] | EventRow[]);
    }
  }

  /** One transaction of rows: their units added to `units` if new, then the rows, in statements of ROWS_PER_STATEMENT. */
  private async writeRows(table: 'exposures' | 'events', rows: ExposureRow[] | EventRow[]): Promise<void> {
    const units = unitsOf(rows);
    const sqlite = this.sqliteConnection();
    if (!sqlite) {
      await this.database.db.transaction().execute(async (trx) => {
        for (let i = 0; i < units.length; i += ROWS_PER_STATEMENT) {
          await trx
            .insertInto('units')
            .values(units.slice(i, i + ROWS_PER_STATEMENT))
            .onConflict((conflict) => conflict.doNothing())
            .execute();
        }
        for (let i = 0; i < rows.length; i += ROWS_PER_STATEMENT) {
          const chunk: (ExposureRow | EventRow)[] = rows.slice(i, i + ROWS_PER_STATEMENT);
          await trx
            .insertInto(table)
            .values(
              chunk.map((row) => {
                const unit_id = sql<number>`(select id from units where environment_id = ${row.environment_id} and unit = ${row.unit})`;
                return 'flag_key' in row
                  ? { environment_id: row.environment_id, flag_key: row.flag_key, unit_id, arm: row.arm, at: row.at }
                  : { environment_id: row.environment_id, name: row.name, unit_id, value: row.value, at: row.at };
              }) as never,
            )
            .execute();
        }
      });
      return;
    }
    const write = sqlite.transaction(() => {
      for (let i = 0; i < units.length; i += ROWS_PER_STATEMENT) {
        const chunk = units.slice(i, i + ROWS_PER_STATEMENT);
        this.statement(sqlite, 'units', chunk.length).run(chunk.flatMap((unit) => [unit.environment_id, unit.unit]));
      }
      for (let i = 0; i < rows.length; i += ROWS_PER_STATEMENT) {
        const chunk: (ExposureRow | EventRow)[] = rows.slice(i, i + ROWS_PER_STATEMENT);
        this.statement(sqlite, table, chunk.length).run(parametersOf(chunk));
      }
    });
    // The write lock held by a transaction of the server's own connection (which waits for this
    // thread to go on): give it turns until it commits, for up to a few seconds.
    for (let attempt = 0; ; attempt++) {
      try {
        write.immediate();
        return;
      } catch (error) {
        if ((error as { code?: string }).code !== 'SQLITE_BUSY' || attempt >= 500) throw error;
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
    }
  }

  /**
   * SQLite: a connection of the intake's own, with the driver's prepared statements (no query
   * built per chunk: a third of the intake's time through Kysely) and synchronous = NORMAL, as the
   * history worker's: in WAL mode a crash of the process loses nothing written, a power cut at most
   * the last commits, and no commit waits for the disk. busy_timeout 0: it must never block this
   * thread waiting for a lock that this thread's other connection holds.
   */
  private sqliteConnection(): BetterSqlite3.Database | null {
    const main = this.database.sqlite;
    if (!main) return null;
    if (!this.connection) {
      this.connection = new BetterSqlite3(main.name);
      this.connection.pragma('journal_mode = WAL');
      this.connection.pragma('synchronous = NORMAL');
      this.connection.pragma('busy_timeout = 0');
      this.connection.pragma('foreign_keys = ON');
    }
    return this.connection;
  }
  private connection: BetterSqlite3.Database | undefined;

  private readonly statements = new Map<string, BetterSqlite3.Statement>();

  private statement(sqlite: BetterSqlite3.Database, table: 'exposures' | 'events' | 'units', rows: number): BetterSqlite3.Statement {
    const key = `${table}:${rows}`;
    let statement = this.statements.get(key);
    if (!statement) {
      const unitId = '(select id from units where environment_id = ? and unit = ?)';
      const [columns, row, conflict] =
        table === 'units'
          ? ['(environment_id, unit)', '(?, ?)', ' on conflict do nothing']
          : table === 'exposures'
            ? ['(environment_id, flag_key, unit_id, arm, at)', `(?, ?, ${unitId}, ?, ?)`, '']
            : ['(environment_id, name, unit_id, value, at)', `(?, ?, ${unitId}, ?, ?)`, ''];
      statement = sqlite.prepare(`insert into ${table} ${columns} values ${Array(rows).fill(row).join(', ')}${conflict}`);
      // Two sizes in use per table: the full chunk and the last one of a flush; others are rare.
      if (this.statements.size > 24) this.statements.clear();
      this.statements.set(key, statement);
    }
    return statement;
  }

  private requeue(exposures: ExposureRow[], events: EventRow[], error: unknown): void {
    if (this.failureLog.due()) this.log.error({ err: error }, 'writing exposures and events failed; keeping them for the next flush');
    if (exposures.length + events.length > this.options.maxPendingRows - this.pendingRows) {
      this.log.error({ rows: exposures.length + events.length }, 'exposures and events dropped: the database stayed away past the pending bound');
      return;
    }
    this.exposures = exposures.concat(this.exposures);
    this.events = events.concat(this.events);
  }

  private watchOf(projectId: string): Promise<ProjectWatch> {
    let watch = this.watched.get(projectId);
    if (!watch) {
      watch = this.readWatch(projectId);
      this.watched.set(projectId, watch);
      watch.catch(() => this.watched.delete(projectId));
    }
    return watch;
  }

  private async readWatch(projectId: string): Promise<ProjectWatch> {
    const [running, metrics] = await Promise.all([
      this.database.db.selectFrom('experiments').select(['environment_id', 'flag_key', 'expected_shares']).where('project_id', '=', projectId).where('status', '=', 'running').execute(),
      this.database.db.selectFrom('metrics').select('event').where('project_id', '=', projectId).execute(),
    ]);
    const flags = new Map<string, Map<string, ReadonlySet<string>>>();
    for (const experiment of running) {
      let watched = flags.get(experiment.environment_id);
      if (!watched) flags.set(experiment.environment_id, (watched = new Map()));
      watched.set(experiment.flag_key, new Set(Object.keys(fromJson<Record<string, number>>(experiment.expected_shares!))));
    }
    return { flags, events: new Set(metrics.map((metric) => metric.event)) };
  }
}
