import type { FastifyBaseLogger } from 'fastify';
import type { Insertable } from 'kysely';
import type { Db } from '../../db/database.js';
import { isForeignKeyViolation } from '../../db/errors.js';
import type { EvaluationsTable } from '../../db/schema.js';

export type EvaluationRow = Insertable<EvaluationsTable>;

export interface HistoryWriterOptions {
  /** Rows held in memory at most; beyond it new rows are dropped and counted. */
  maxBuffered: number;
  flushIntervalMs: number;
  /** Rows per INSERT statement (keeps under SQLite's and PostgreSQL's bound-parameter limits). */
  rowsPerInsert: number;
}

const DEFAULTS: HistoryWriterOptions = { maxBuffered: 100_000, flushIntervalMs: 1000, rowsPerInsert: 500 };

/**
 * Evaluation history, written after the evaluate answer has gone: rows wait in a bounded buffer
 * and are inserted in batches (multi-row inserts, one transaction) at most flushIntervalMs later.
 */
export class HistoryWriter {
  private buffer: EvaluationRow[] = [];
  private timer: NodeJS.Timeout | undefined;
  private flushing: Promise<void> | undefined;
  private readonly options: HistoryWriterOptions;
  /** Rows not kept because the buffer was full. */
  dropped = 0;
  written = 0;

  constructor(
    private readonly db: Db,
    private readonly log: FastifyBaseLogger,
    options: Partial<HistoryWriterOptions> = {},
  ) {
    this.options = { ...DEFAULTS, ...options };
  }

  start(): void {
    this.timer = setInterval(() => void this.flush(), this.options.flushIntervalMs);
    this.timer.unref();
  }

  record(rows: EvaluationRow[]): void {
    const room = this.options.maxBuffered - this.buffer.length;
    if (rows.length > room) {
      this.dropped += rows.length - Math.max(room, 0);
      if (room > 0) this.buffer.push(...rows.slice(0, room));
      this.log.warn({ dropped: this.dropped }, 'evaluation history buffer is full: rows dropped');
      return;
    }
    for (const row of rows) this.buffer.push(row);
  }

  /** Writes what is buffered; one flush at a time. */
  flush(): Promise<void> {
    this.flushing ??= this.writeBuffered().finally(() => {
      this.flushing = undefined;
    });
    return this.flushing;
  }

  /** Stops the timer and writes everything still buffered (graceful shutdown). */
  async close(): Promise<void> {
    clearInterval(this.timer);
    await this.flush();
    if (this.buffer.length > 0) await this.flush();
  }

  private async writeBuffered(): Promise<void> {
    if (this.buffer.length === 0) return;
    let rows = this.buffer;
    this.buffer = [];
    try {
      try {
        await this.insert(rows);
      } catch (error) {
        if (!isForeignKeyViolation(error)) throw error;
        // An environment was deleted while its rows waited: its history goes with it, the rest is kept.
        rows = await this.withLiveEnvironments(rows);
        await this.insert(rows);
      }
      this.written += rows.length;
    } catch (error) {
      this.dropped += rows.length;
      this.log.error({ err: error, rows: rows.length }, 'could not write evaluation history');
    }
  }

  private async insert(rows: EvaluationRow[]): Promise<void> {
    await this.db.transaction().execute(async (trx) => {
      for (let start = 0; start < rows.length; start += this.options.rowsPerInsert) {
        await trx.insertInto('evaluations').values(rows.slice(start, start + this.options.rowsPerInsert)).execute();
      }
    });
  }

  private async withLiveEnvironments(rows: EvaluationRow[]): Promise<EvaluationRow[]> {
    const ids = [...new Set(rows.map((row) => row.environment_id))];
    const live = await this.db.selectFrom('environments').select('id').where('id', 'in', ids).execute();
    const liveIds = new Set(live.map((env) => env.id));
    return rows.filter((row) => liveIds.has(row.environment_id));
  }
}
