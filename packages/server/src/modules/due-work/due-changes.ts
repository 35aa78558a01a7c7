/**
 * Applies what is due, on every instance, each item exactly once (docs/change-management.md):
 * pending schedules and scheduled change requests whose time has come. Every instance polls
 * (once a second by default) and leases a batch of due items in one statement (PostgreSQL skips
 * rows another instance is leasing); each is then applied in its own transaction, which moves it
 * from pending (or scheduled) exactly once, so even a lease that ran out cannot apply it twice. An
 * item found more than 24 hours late (no instance ran meanwhile) fails as missed.
 *
 * Fair between projects: a batch takes at most PER_PROJECT items of each project, the earliest of
 * each first, and applies them round-robin (every project's first, then every project's second...);
 * batches follow one another without waiting while items are due. A project with hundreds due at
 * once delays another project's item by one batch at most, not by its whole backlog.
 */
import type { FastifyBaseLogger } from 'fastify';
import { sql } from 'kysely';
import type { Db } from '../../db/database.js';
import { toIso } from '../../db/values.js';
import { AlreadySettled, AppError, Unavailable } from '../../errors.js';
import { nextTurn } from '../../pace.js';
import type { ProjectWrites } from '../changes/project-writes.js';
import { authorOf, type RequestRow } from '../change-requests/change-requests.repository.js';
import { applyRequest, failMissedRequest } from '../change-requests/change-requests.writes.js';
import { applyScheduleWrite, failScheduleWrite, MISSED_AFTER_MS } from '../schedules/schedule-writes.js';
import { creatorOf, type ScheduleRow } from '../schedules/schedules.repository.js';
import { Poller } from './poller.js';

/** For tests (passed through buildApp, not a setting). */
export interface SchedulerOptions {
  /** How often due items are looked for (default 1 s: applied within about a second of their time). */
  pollIntervalMs?: number;
}

/** What the metrics count (metrics/metrics.ts). */
export interface ScheduleObserver {
  applied(kind: 'schedule' | 'change_request', lagSeconds: number): void;
  failed(kind: 'schedule' | 'change_request'): void;
}

const BATCH = 50;
/** The most items of one project in a batch: the rest of the batch is left to the other projects' due items. */
const PER_PROJECT = 10;
/** Long enough for a batch to apply; an instance that dies leaves its items to others after it. */
const LEASE_MS = 30_000;
const lagOf = (due: string | Date, applied: string) => (Date.parse(applied) - Date.parse(toIso(due))) / 1000;

export class DueChanges {
  private readonly poller: Poller;

  constructor(
    private readonly db: Db,
    private readonly dialect: 'sqlite' | 'postgres',
    private readonly writes: ProjectWrites,
    private readonly observer: ScheduleObserver,
    log: FastifyBaseLogger,
    options: SchedulerOptions = {},
  ) {
    this.poller = new Poller('due changes', options.pollIntervalMs ?? 1000, () => this.applyDue(), log);
  }

  start(): void {
    this.poller.start();
  }

  close(): Promise<void> {
    return this.poller.close();
  }

  /** Batch after batch while items are due (each batch fair between projects), until none is left. */
  private async applyDue(): Promise<void> {
    while (!this.poller.closing) {
      const now = Date.now();
      const [at, leaseUntil] = [new Date(now).toISOString(), new Date(now + LEASE_MS).toISOString()];
      const schedules = await this.leaseSchedules(at, leaseUntil);
      for (const schedule of schedules) await this.each(() => this.applySchedule(schedule, now));
      const requests = await this.leaseRequests(at, leaseUntil);
      for (const request of requests) await this.each(() => this.applyRequest(request, now));
      if (schedules.length === 0 && requests.length === 0) return;
    }
  }

  /**
   * Leases to this instance up to a batch of the rows due at `now` (with `status`, their time
   * passed, no live lease) until `leaseUntil`, in one statement: no other instance takes them
   * meanwhile (PostgreSQL skips the rows another is leasing; the one statement is atomic on
   * SQLite), and one that dies leaves them to be taken when the lease ends. Whether one is applied
   * is decided again in the transaction that applies it: a status that moves once. The batch holds
   * at most PER_PROJECT rows of a project (its earliest), and is returned in round-robin order.
   * Two thin calls, one per table (typed by it), around the one query of the due rows (dueNow).
   */
  private async leaseSchedules(now: string, leaseUntil: string): Promise<ScheduleRow[]> {
    const due = await this.dueNow('schedules', 'pending', 'at', now);
    if (!due) return [];
    const leased = await this.db.updateTable('schedules').set({ claimed_until: leaseUntil }).where('id', 'in', due).where('status', '=', 'pending').returningAll().execute();
    return roundRobin(leased, 'at');
  }

  private async leaseRequests(now: string, leaseUntil: string): Promise<RequestRow[]> {
    const due = await this.dueNow('change_requests', 'scheduled', 'apply_at', now);
    if (!due) return [];
    const leased = await this.db.updateTable('change_requests').set({ claimed_until: leaseUntil }).where('id', 'in', due).where('status', '=', 'scheduled').returningAll().execute();
    return roundRobin(leased, 'apply_at');
  }

  /** The ids of the batch due at `now` (to lease in a statement), or null when none is due. */
  private async dueNow(table: 'schedules' | 'change_requests', status: string, dueColumn: 'at' | 'apply_at', now: string) {
    // Each due row's place in its project's queue (1 for its earliest).
    const ranked = this.db
      .selectFrom(table)
      .select(['id', dueColumn, sql<number>`row_number() over (partition by project_id order by ${sql.ref(dueColumn)}, id)`.as('place')])
      .where('status', '=', status)
      .where(dueColumn, '<=', now)
      .where((eb) => eb.or([eb('claimed_until', 'is', null), eb('claimed_until', '<', now)]));
    const picked = this.db.selectFrom(ranked.as('ranked')).select('ranked.id').where('ranked.place', '<=', PER_PROJECT).orderBy('ranked.place').orderBy(`ranked.${dueColumn}`).limit(BATCH);
    // Looked at first with a plain read: on SQLite an UPDATE takes the write lock even when it
    // matches nothing, and better-sqlite3 waits for it synchronously, so a writer holding the
    // database (a backup, another process) would stall the event loop every poll.
    if ((await picked.execute()).length === 0) return null;
    // PostgreSQL locks (FOR UPDATE, SKIP LOCKED) rows of a plain select, not of one with a window function: the picked rows are selected again.
    return this.dialect === 'postgres' ? this.db.selectFrom(table).select('id').where('id', 'in', picked).forUpdate().skipLocked() : picked;
  }

  /**
   * One item: a failure that is not its own (the database away) leaves it to be tried again when
   * its lease ends, and the batch goes on. Then a turn of the event loop: on SQLite a batch of 50
   * would otherwise hold it for all 50 transactions.
   */
  private async each(apply: () => Promise<void>): Promise<void> {
    try {
      await apply();
    } catch (error) {
      this.poller.itemFailed(error, {}, 'could not apply a due change; it is tried again in 30 s');
    }
    await nextTurn();
  }

  private async applyRequest(request: RequestRow, now: number): Promise<void> {
    if (await this.failedAsMissed({ kind: 'change_request', row: request }, now)) return;
    try {
      const applied = await applyRequest(this.writes, this.db, { projectId: request.project_id, requestId: request.id }, authorOf(request), 'scheduled');
      this.observer.applied('change_request', lagOf(request.apply_at!, applied.applied_at!));
    } catch (error) {
      if (error instanceof AlreadySettled) return;
      if (!(error instanceof AppError) || error instanceof Unavailable) throw error;
      this.observer.failed('change_request'); // failed or outdated, as applyRequest recorded
    }
  }

  private async applySchedule(schedule: ScheduleRow, now: number): Promise<void> {
    const origin = { schedule_id: schedule.id };
    if (await this.failedAsMissed({ kind: 'schedule', row: schedule }, now)) return;
    try {
      const applied = await this.writes.apply(creatorOf(schedule), schedule.project_id, (trx, record) => applyScheduleWrite(trx, record, schedule), origin);
      this.observer.applied('schedule', lagOf(applied.at, applied.applied_at!));
    } catch (error) {
      if (error instanceof AlreadySettled) return;
      // Refused as the PUT would now be refused (or needs approval): failed, with why. Anything else: tried again after the lease.
      if (!(error instanceof AppError) || error instanceof Unavailable) throw error;
      await this.failSchedule(schedule, error.message);
      this.observer.failed('schedule');
    }
  }

  /**
   * The one way a due item fails as missed: found more than MISSED_AFTER_MS after its time (no
   * instance ran meanwhile), it is failed "missed" instead of applied late. The write is the one
   * that fails its kind when refused, and differs as the rows do: a schedule fails as its creator
   * (schedule.failed), a change request as its author (change_request.failed, changes described).
   */
  private async failedAsMissed(item: { kind: 'schedule'; row: ScheduleRow } | { kind: 'change_request'; row: RequestRow }, now: number): Promise<boolean> {
    const due = item.kind === 'schedule' ? item.row.at : item.row.apply_at!;
    const missed = now - Date.parse(toIso(due)) > MISSED_AFTER_MS;
    if (!missed) return false;
    if (item.kind === 'schedule') await this.failSchedule(item.row, 'missed');
    else await failMissedRequest(this.writes, item.row, 'missed');
    this.observer.failed(item.kind);
    return true;
  }

  private async failSchedule(schedule: ScheduleRow, reason: string): Promise<void> {
    await this.writes.apply(creatorOf(schedule), schedule.project_id, (trx, record) => failScheduleWrite(trx, record, schedule.id, reason), { schedule_id: schedule.id });
  }
}

/** Rows in the order to apply them: each project's earliest first, then each project's second, and so on (by due time within a round). */
function roundRobin<T extends { id: string; project_id: string }>(rows: T[], dueColumn: keyof T): T[] {
  const due = (row: T) => Date.parse(toIso(row[dueColumn] as string | Date));
  const byDue = [...rows].sort((a, b) => due(a) - due(b) || (a.id < b.id ? -1 : 1));
  const seen = new Map<string, number>();
  const placed = byDue.map((row) => {
    const place = (seen.get(row.project_id) ?? 0) + 1;
    seen.set(row.project_id, place);
    return { row, place };
  });
  return placed.sort((a, b) => a.place - b.place || due(a.row) - due(b.row)).map(({ row }) => row);
}
