/**
 * What applications send (docs/experiments.md, "Sending exposures and events"): each batch is
 * sorted into what is kept and what is ignored (counted by reason), and what is kept waits here
 * until the next flush, at most FLUSH_INTERVAL_MS: durable within a second, and written at
 * shutdown. Only exposures of flags a running experiment or a live guarded release
 * (docs/releases.md) of their environment watches, with an
 * arm of that experiment, are kept; events are kept when a metric of the project counts their name.
 */
import { reasonKind } from '@guidon/engine';
import type { FastifyBaseLogger } from 'fastify';
import type { Config } from '../../config.js';
import type { Database } from '../../db/database.js';
import { Unavailable } from '../../errors.js';
import { LogThrottle } from '../../log-throttle.js';
import { fromJson } from '../../db/values.js';
import type { EvaluateCache } from '../evaluate/evaluate.cache.js';
import type { EventsBody } from './intake.schemas.js';
import { packRows, ThreadRowWriter, type EventTuple, type ExposureTuple, type PackedRows, type RowGroup } from './intake.writer.js';

/** An `at` older than this, or further ahead than FUTURE_MS, is ignored (clocks and retries, not history). */
export const OLDEST_MS = 24 * 60 * 60 * 1000;
export const FUTURE_MS = 5 * 60 * 1000;
/** The identifier the engine buckets a context without one by: never a unit. */
const ANONYMOUS = 'anonymous';
/**
 * Whether an exposure's reason says a targeting rule served the unit, so that the rollout did not
 * choose its arm: one of the engine's reason strings of that kind (its one table, engine
 * outcomes.ts), or OpenFeature's TARGETING_MATCH, which the providers send.
 */
const servedByRule = (reason: string) => (reasonKind(reason) ?? reason) === 'TARGETING_MATCH';

export type IgnoredReason = 'not_watched' | 'unknown_arm' | 'served_by_rule' | 'anonymous' | 'too_old' | 'in_future' | 'no_metric';

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

export class EventIntake {
  private readonly options: IntakeOptions;
  /** By project: each environment's watch, read from the database once per change of the project. */
  private readonly watched = new Map<string, Promise<ProjectWatch>>();
  /** Kept and waiting for the next flush, batch by batch; `waiting` counts their rows. */
  private exposures: PackedRows[] = [];
  private events: PackedRows[] = [];
  private waiting = 0;
  private timer: NodeJS.Timeout | undefined;
  private flushing: Promise<void> | null = null;
  private readonly failureLog = new LogThrottle();
  private readonly writtenListeners = new Set<(environmentIds: ReadonlySet<string>) => void>();
  /** Rows of the flush under way not yet written. */
  private writing = 0;
  /** The intake's own thread writes, on a connection of its own (intake.writer.ts). */
  private readonly writer: ThreadRowWriter;

  constructor(
    private readonly database: Database,
    databaseConfig: Config['database'],
    cache: EvaluateCache,
    private readonly log: FastifyBaseLogger,
    options: Partial<IntakeOptions> = {},
  ) {
    this.options = { ...DEFAULTS, ...options };
    this.writer = new ThreadRowWriter(databaseConfig);
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

  /** Rows accepted and not yet written: waiting for the next flush, or in the flush under way. */
  get pendingRows(): number {
    return this.waiting + this.writing;
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
    const exposures: ExposureTuple[] = [];
    const events: EventTuple[] = [];
    for (const exposure of body.exposures ?? []) {
      const arms = watchedFlags.get(exposure.flag);
      const at = timeOf(exposure.at);
      if (exposure.unit === ANONYMOUS) ignore('anonymous');
      else if (typeof at !== 'number') ignore(at);
      else if (!arms) ignore('not_watched');
      else if (!arms.has(exposure.arm)) ignore('unknown_arm');
      else if (exposure.reason !== undefined && servedByRule(exposure.reason)) ignore('served_by_rule');
      else exposures.push([exposure.flag, exposure.unit, exposure.arm, at]);
    }
    for (const event of body.events ?? []) {
      const at = timeOf(event.at);
      if (event.unit === ANONYMOUS) ignore('anonymous');
      else if (typeof at !== 'number') ignore(at);
      else if (!watch.events.has(event.name)) ignore('no_metric');
      else events.push([event.name, event.unit, event.value ?? 1, at]);
    }
    if (exposures.length > 0) this.exposures.push(packRows(environmentId, exposures));
    if (events.length > 0) this.events.push(packRows(environmentId, events));
    this.waiting += exposures.length + events.length;
    return { accepted: exposures.length + events.length, ignored };
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
    await this.writer.close();
  }

  private async write(): Promise<void> {
    const groups = [...this.groupsOf('exposures', this.exposures), ...this.groupsOf('events', this.events)];
    this.exposures = [];
    this.events = [];
    this.writing = this.waiting;
    this.waiting = 0;
    // A commit per thousand rows or so (whole batches), each on the intake's thread, in order.
    const writes = await this.writer.writeAll(groups);
    const outcomes = await Promise.allSettled(writes.map((write, i) => write.finally(() => (this.writing -= groups[i]!.rows))));
    this.writing = 0;
    const environments = new Set<string>();
    const failed: RowGroup[] = [];
    let failure: unknown;
    outcomes.forEach((outcome, i) => {
      if (outcome.status === 'fulfilled') for (const id of outcome.value) environments.add(id);
      else {
        failed.push(groups[i]!);
        failure ??= outcome.reason;
      }
    });
    // The database away: what was not written waits for the next flush (the bound is checked as batches arrive).
    if (failed.length > 0) this.requeue(failed, failure);
    else if (this.failureLog.recovered()) this.log.info('exposures and events written again');
    if (environments.size > 0) for (const listener of this.writtenListeners) listener(environments);
  }

  /** Whole batches, in order, grouped to at least rowsPerCommit rows (the last group fewer). */
  private groupsOf(table: RowGroup['table'], batches: readonly PackedRows[]): RowGroup[] {
    const groups: RowGroup[] = [];
    let group: RowGroup | undefined;
    for (const batch of batches) {
      if (!group || group.rows >= this.options.rowsPerCommit) groups.push((group = { table, batches: [], rows: 0 }));
      group.batches.push(batch);
      group.rows += batch.count;
    }
    return groups;
  }

  private requeue(failed: readonly RowGroup[], error: unknown): void {
    if (this.failureLog.due()) this.log.error({ err: error }, 'writing exposures and events failed; keeping them for the next flush');
    const batchesOf = (table: RowGroup['table']) => failed.flatMap((group) => (group.table === table ? group.batches : []));
    this.exposures = batchesOf('exposures').concat(this.exposures);
    this.events = batchesOf('events').concat(this.events);
    this.waiting += failed.reduce((rows, group) => rows + group.rows, 0);
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
    const [running, releases, metrics] = await Promise.all([
      this.database.db.selectFrom('experiments').select(['environment_id', 'flag_key', 'expected_shares']).where('project_id', '=', projectId).where('status', '=', 'running').execute(),
      this.database.db.selectFrom('releases').select(['environment_id', 'flag_key', 'treatment', 'control']).where('project_id', '=', projectId).where('status', 'in', ['running', 'paused']).execute(),
      this.database.db.selectFrom('metrics').select('event').where('project_id', '=', projectId).execute(),
    ]);
    const flags = new Map<string, Map<string, ReadonlySet<string>>>();
    const watch = (environmentId: string, flagKey: string, arms: readonly string[]) => {
      let watched = flags.get(environmentId);
      if (!watched) flags.set(environmentId, (watched = new Map()));
      watched.set(flagKey, new Set([...(watched.get(flagKey) ?? []), ...arms]));
    };
    for (const experiment of running) watch(experiment.environment_id, experiment.flag_key, Object.keys(fromJson<Record<string, number>>(experiment.expected_shares!)));
    // A guarded release compares its treatment with its control (docs/releases.md).
    for (const release of releases) watch(release.environment_id, release.flag_key, [release.treatment, release.control]);
    return { flags, events: new Set(metrics.map((metric) => metric.event)) };
  }
}
