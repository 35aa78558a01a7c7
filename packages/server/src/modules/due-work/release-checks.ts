/**
 * Checks every running or paused release when its check is due, on every instance, each check
 * decided once (docs/releases.md, "Restarts and instances"). An instance leases a due release
 * with one conditional update (claimed_until, as the scheduler leases schedules), analyses it
 * outside any transaction (releases/analysis.ts reads the rows in pages), then takes the decision in a
 * transaction that first checks the release is still where the analysis found it: a lease that
 * ran out, or another instance, cannot make a step twice. State lives in the database only, so a
 * restart or a failover goes on from the last decision.
 */
import type { FastifyBaseLogger } from 'fastify';
import type { Database } from '../../db/database.js';
import { fromJson, toIso } from '../../db/values.js';
import { AlreadySettled } from '../../errors.js';
import { nextTurn } from '../../pace.js';
import type { Mailer } from '../accounts/mailer.js';
import type { ProjectWrites } from '../changes/project-writes.js';
import { listMetrics } from '../experiments/metrics.repository.js';
import { analyse } from '../releases/analysis.js';
import { decideWrite, recordWait, type CheckedState } from '../releases/release-writes.js';
import { stepStartsOf, type Guardrail, type ReleaseRow } from '../releases/releases.repository.js';
import { LIVE_STATUSES } from '../releases/releases.schemas.js';
import { Poller } from './poller.js';

/** For tests (passed through buildApp, not a setting). */
export interface ReleaseCheckOptions {
  /** How often due checks are looked for (default 1 s). */
  pollIntervalMs?: number;
  /** Milliseconds per second of a release's hold and check interval (default 1000): tests run a release's minutes in seconds. */
  msPerSecond?: number;
}

/** Long enough for an analysis; an instance that dies leaves its release to another after it. */
const LEASE_MS = 60_000;
/** A check that failed (the database busy or away a moment) is tried again after this many of a release's seconds, not after its lease: a harmful release must not run on for a minute. */
const RETRY_SECONDS = 10;
const BATCH = 20;

export class ReleaseChecks {
  private readonly poller: Poller;
  private readonly msPerSecond: number;

  constructor(
    private readonly database: Database,
    private readonly writes: ProjectWrites,
    private readonly mailer: Mailer,
    private readonly log: FastifyBaseLogger,
    options: ReleaseCheckOptions = {},
  ) {
    this.msPerSecond = options.msPerSecond ?? 1000;
    this.poller = new Poller('release checks', options.pollIntervalMs ?? 1000, () => this.checkDue(), log);
  }

  /** A release's due time for its next check, from now. */
  private nextCheckAt(checkSeconds: number, now = Date.now()): string {
    return new Date(now + checkSeconds * this.msPerSecond).toISOString();
  }

  start(): void {
    this.poller.start();
  }

  close(): Promise<void> {
    return this.poller.close();
  }

  private async checkDue(): Promise<void> {
    const db = this.database.db;
    const now = new Date().toISOString();
    const due = await db
      .selectFrom('releases')
      .select(['id', 'next_check_at'])
      .where('status', 'in', LIVE_STATUSES)
      .where('next_check_at', '<=', now)
      .where((eb) => eb.or([eb('claimed_until', 'is', null), eb('claimed_until', '<', now)]))
      .orderBy('next_check_at')
      .limit(BATCH)
      .execute();
    for (const { id, next_check_at } of due) {
      if (this.poller.closing) return;
      // One conditional update leases it: the instance whose update matched owns this check.
      const leased = await db
        .updateTable('releases')
        .set({ claimed_until: new Date(Date.now() + LEASE_MS).toISOString() })
        .where('id', '=', id)
        .where('next_check_at', '=', next_check_at)
        .where((eb) => eb.or([eb('claimed_until', 'is', null), eb('claimed_until', '<', now)]))
        .returningAll()
        .executeTakeFirst();
      if (!leased) continue;
      try {
        await this.check(leased);
      } catch (error) {
        if (!(error instanceof AlreadySettled)) {
          this.poller.itemFailed(error, { releaseId: id }, `a check failed; it is tried again in ${RETRY_SECONDS} s`);
          await this.retrySoon(leased).catch(() => undefined); // the database still away: the lease ends by itself
        }
      }
      await nextTurn();
    }
  }

  /** Shortens this instance's lease on a release whose check failed, so that any instance checks it again soon. */
  private async retrySoon(leased: ReleaseRow): Promise<void> {
    await this.database.db
      .updateTable('releases')
      .set({ claimed_until: new Date(Date.now() + RETRY_SECONDS * this.msPerSecond).toISOString() })
      .where('id', '=', leased.id)
      .where('claimed_until', '=', leased.claimed_until)
      .execute();
  }

  private async check(row: ReleaseRow): Promise<void> {
    const flag = await this.database.db.selectFrom('flags').select(['key', 'bucketing_key']).where('id', '=', row.flag_id).executeTakeFirst();
    if (!flag) return; // deleting the flag ended the release in the same write; nothing to check
    const metrics = new Map((await listMetrics(this.database.db, row.project_id)).map((metric) => [metric.id, metric]));
    const now = Date.now();
    const check = await analyse(
      this.database,
      {
        steps: fromJson<number[]>(row.steps as string),
        stepStarts: stepStartsOf(row),
        currentStep: row.current_step,
        paused: row.status === 'paused',
        environmentId: row.environment_id,
        flag: { key: flag.key, bucketingKey: flag.bucketing_key },
        treatment: row.treatment,
        control: row.control,
        holdMs: row.hold_seconds * this.msPerSecond,
        minUnits: row.min_units,
        guardrails: fromJson<Guardrail[]>(row.guardrails as string),
      },
      metrics,
      now,
    );
    const checked: CheckedState = { id: row.id, status: row.status, current_step: row.current_step, next_check_at: toIso(row.next_check_at!) };
    const nextCheckAt = this.nextCheckAt(row.check_seconds);
    if (check.decision === 'wait') return recordWait(this.database.db, checked, check, nextCheckAt);
    const author = { user_id: row.created_by_user_id, email: row.created_by_email, token_id: null };
    const after = await this.writes.apply(author, row.project_id, (trx, record) => decideWrite(trx, record, checked, check, nextCheckAt), { release_id: row.id });
    if (check.decision === 'roll_back' && row.created_by_email) {
      this.mailer.sendReleaseRolledBack(row.created_by_email, { flagKey: row.flag_key, releaseId: after.id, explanation: check.explanation }).catch((error: unknown) => this.log.error({ err: error, releaseId: row.id }, 'could not email the rollback'));
    }
  }
}
