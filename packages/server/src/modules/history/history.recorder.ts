import { Worker } from 'node:worker_threads';
import type { FastifyBaseLogger } from 'fastify';
import type { Config } from '../../config.js';
import { NO_VARIANT, OUTCOMES, type CompiledFlagSet } from '@guidon/engine';
import { variantOffsets, type Batch, type BatchEnvironment, type FromWorker, type HourCounts, type ToWorker } from './history.protocol.js';
import { HISTORY_WORKER_URL } from '../../paths.js';

export interface RecorderOptions {
  /** Rows (flag evaluations) waiting, in the current batch or handed to the worker and not yet written, at most; beyond it rows are dropped and counted. */
  maxPendingRows: number;
  /** The same bound in requests (each also holds its user id and time): small environments reach this one first. */
  maxPendingRequests: number;
  flushIntervalMs: number;
  /** A batch is handed over early once it holds this many rows. */
  maxBatchRows: number;
  retentionDays: number;
  /** How often old history is pruned. */
  pruneIntervalMs: number;
  /** At shutdown, how long the last flush may take before its rows are given up (and counted). */
  closeTimeoutMs: number;
}

/** The first prune of history past its retention, after a start. */
const FIRST_PRUNE_MS = 10_000;

const DEFAULTS: RecorderOptions = {
  // About 16 MB of outcome codes, and 200,000 requests' user ids and times (some 15 MB).
  maxPendingRows: 16_000_000,
  maxPendingRequests: 200_000,
  flushIntervalMs: 1000,
  maxBatchRows: 2_000_000,
  retentionDays: 30,
  pruneIntervalMs: 60 * 60 * 1000,
  closeTimeoutMs: 10_000,
};

const HOUR_MS = 60 * 60 * 1000;

/** 1 where the outcome code means enabled: counting reads a byte, not an object, per flag. */
const ENABLED_CODE = Uint8Array.from(OUTCOMES, (outcome) => Number(outcome.enabled));

/**
 * What a request's outcome codes are when no targeting rule matched it: the flag set's base codes,
 * except at its rollout and split flags (`varying`), which alone may differ (the engine's
 * invariant, which the answer template relies on too). Such a request counts only its varying
 * flags; the others are added at hand-over, once per environment, as many times as such requests
 * came (at 1,000 flags with a quarter rollouts: a quarter of the counting).
 */
export interface CountingBase {
  readonly varying: Uint32Array;
  /** 1 where the flag's base code is enabled and the flag is not varying; 0 elsewhere. */
  readonly fixedEnabled: Uint8Array;
  /** The flags' base variants, NO_VARIANT at varying flags. */
  readonly fixedVariants: Uint8Array;
}

export function countingBase(flagSet: CompiledFlagSet): CountingBase {
  const varying = Uint32Array.from(new Set([...flagSet.rollouts, ...flagSet.splits])).sort();
  const fixedEnabled = Uint8Array.from(flagSet.baseCodes, (code) => ENABLED_CODE[code]!);
  const fixedVariants = Uint8Array.from(flagSet.baseVariants);
  for (const index of varying) {
    fixedEnabled[index] = 0;
    fixedVariants[index] = NO_VARIANT;
  }
  return { varying, fixedEnabled, fixedVariants };
}

/** A flag's variant counted `times` (variants: per flag, per variant; offsets: where each flag's counts start, -1 for a flag without variants). */
function countVariant(variants: Uint32Array, offsets: Int32Array, flag: number, variant: number, times = 1): void {
  const at = offsets[flag]!;
  if (at >= 0 && variant !== NO_VARIANT) variants[at + variant]! += times;
}

interface EnvironmentCounts {
  environment: BatchEnvironment;
  enabled: Uint32Array;
  /**
   * Requests counted: each counts every flag of the environment once, so a flag's disabled count
   * is this less its enabled count (made at hand-over). Counting one array per request instead of
   * two took a third off the count's instructions at 1,000 flags (docs/performance.md).
   */
  evaluations: number;
  /** The base of the requests counted by it (CountingBase), and how many they were. */
  base?: CountingBase;
  unmatched: number;
  /** With variants: per flag, per variant (HourCounts.variants). */
  variants?: Uint32Array;
  variantOffsets?: Int32Array;
}

/**
 * The current batch under construction. One builder serves every batch (clear() after build()):
 * its arrays keep the size they grew to, where a new builder each second would allocate them
 * again, growing, megabytes a second at 100 flags, and V8 answered that outside memory with
 * full garbage collections that set evaluate's p99 (docs/performance.md).
 */
class BatchBuilder {
  readonly environments: BatchEnvironment[] = [];
  private readonly environmentIndex = new Map<BatchEnvironment, number>();
  private requestEnvironment = new Uint32Array(1024);
  private requestTime = new Float64Array(1024);
  private users = Buffer.allocUnsafeSlow(64 * 1024);
  private usersLength = 0;
  private userLengths = new Int32Array(1024);
  private codes = new Uint8Array(64 * 1024);
  private codeLength = 0;
  requests = 0;

  add(environment: BatchEnvironment, userId: string | null, time: number, codes: Uint8Array, count: number): void {
    let index = this.environmentIndex.get(environment);
    if (index === undefined) {
      index = this.environments.push(environment) - 1;
      this.environmentIndex.set(environment, index);
    }
    if (this.requests === this.requestTime.length) {
      this.requestEnvironment = grow(this.requestEnvironment, this.requests * 2);
      this.requestTime = grow(this.requestTime, this.requests * 2);
      this.userLengths = grow(this.userLengths, this.requests * 2);
    }
    if (userId === null) {
      this.userLengths[this.requests] = -1;
    } else {
      if (this.usersLength + userId.length * 3 > this.users.length) {
        const bigger = Buffer.allocUnsafeSlow(Math.max(this.users.length * 2, this.usersLength + userId.length * 3));
        this.users.copy(bigger, 0, 0, this.usersLength);
        this.users = bigger;
      }
      const written = this.users.write(userId, this.usersLength, 'utf8');
      this.userLengths[this.requests] = written;
      this.usersLength += written;
    }
    const width = environment.flagVariants == null ? count : count * 2;
    if (this.codeLength + width > this.codes.length) this.codes = grow(this.codes, Math.max(this.codes.length * 2, this.codeLength + width));
    this.requestEnvironment[this.requests] = index;
    this.requestTime[this.requests] = time;
    this.requests++;
    this.codes.set(width === codes.length ? codes : codes.subarray(0, width), this.codeLength);
    this.codeLength += width;
    this.rowCount += count;
  }

  /** Flag evaluations held (a request's variant bytes are not rows of their own). */
  private rowCount = 0;

  get rows(): number {
    return this.rowCount;
  }

  /** Empty again, arrays kept (at most what maxBatchRows and maxPendingRequests let a batch grow to): build() copied out what it handed over. */
  clear(): void {
    this.environments.length = 0;
    this.environmentIndex.clear();
    this.usersLength = 0;
    this.codeLength = 0;
    this.rowCount = 0;
    this.requests = 0;
  }

  build(id: number, counts: HourCounts[]): Batch {
    return {
      id,
      environments: this.environments.map(describe),
      requestEnvironment: this.requestEnvironment.slice(0, this.requests),
      requestTime: this.requestTime.slice(0, this.requests),
      users: Uint8Array.prototype.slice.call(this.users, 0, this.usersLength),
      userLengths: this.userLengths.slice(0, this.requests),
      codes: this.codes.slice(0, this.codeLength),
      rows: this.rowCount,
      counts,
    };
  }
}

/** Only the data: the compiled environment also holds functions, which cannot cross to a thread. */
const describe = ({ environmentId, snapshotId, flagIds, flagKeys, flagVariants, flagPrerequisites }: BatchEnvironment): BatchEnvironment => ({ environmentId, snapshotId, flagIds, flagKeys, flagVariants: flagVariants ?? null, flagPrerequisites: flagPrerequisites ?? null });

function grow<T extends Uint32Array | Int32Array | Float64Array | Uint8Array>(array: T, length: number): T {
  const bigger = new (array.constructor as new (length: number) => T)(length);
  bigger.set(array);
  return bigger;
}

/**
 * Evaluation history, kept off the evaluate path: record() packs a request's outcomes into the
 * current batch (one byte per flag) and counts them per flag and hour; at most a second later the
 * batch goes to a worker thread, which writes the rows on its own database connection. Memory is
 * bounded: past maxPendingRows (or maxPendingRequests), rows are dropped and counted, while the hourly counts stay exact.
 */
export class HistoryRecorder {
  private readonly batch = new BatchBuilder();
  private counts = new Map<BatchEnvironment, EnvironmentCounts>();
  private hour = Math.floor(Date.now() / HOUR_MS);
  private pendingRows = 0;
  private pendingRequests = 0;
  /** Requests in each batch handed to the worker and not yet written. */
  private readonly requestsInBatch = new Map<number, number>();
  /** Started on the first message for it, not with the app: a start does not pay for its thread. */
  private worker: Worker | undefined;
  private closed: Promise<void> | undefined;
  private readonly timers: NodeJS.Timeout[] = [];
  private lastDropWarning = 0;
  private readonly options: RecorderOptions;
  private nextBatchId = 0;
  /** Hourly counts handed to the worker and not yet confirmed stored, by batch: handed over again if it fails or dies. */
  private readonly unconfirmedCounts = new Map<number, HourCounts[]>();
  /** Counts to hand over again with the next batch. */
  private carriedCounts: HourCounts[] = [];
  private nextRequestId = 0;
  /** deleteHistory calls waiting for the worker. */
  private readonly deletions = new Map<number, () => void>();
  /**
   * Since start, in evaluated flags: recorded; written; dropped (too many waiting); discarded
   * (environment deleted first); failed (database error, a dying worker, or given up at
   * shutdown). countRetries: hourly counts handed over again.
   */
  readonly stats = { recorded: 0, written: 0, dropped: 0, discarded: 0, failed: 0, countRetries: 0 };

  constructor(
    private readonly database: Config['database'],
    private readonly log: FastifyBaseLogger,
    options: Partial<RecorderOptions> = {},
  ) {
    this.options = { ...DEFAULTS, ...options };
  }

  /**
   * Starts the worker thread, which loads and opens its own database connection. Messages sent
   * meanwhile wait in its port until it listens.
   */
  private spawnWorker(): Worker {
    const worker = new Worker(HISTORY_WORKER_URL, { workerData: { database: this.database } });
    this.worker = worker;
    worker.on('exit', (code) => this.onWorkerExit(worker, code));
    worker.on('error', (error) => this.log.error({ err: error }, 'history worker failed'));
    worker.on('message', (message: FromWorker) => this.onWorkerMessage(message));
    return worker;
  }

  /** A worker that dies is replaced; what it had been handed and not written yet is lost, and counted. */
  private onWorkerExit(worker: Worker, code: number): void {
    if (this.closed || worker !== this.worker) return;
    const lost = this.pendingRows - this.batch.rows;
    this.stats.failed += lost;
    this.pendingRows -= lost;
    this.pendingRequests = this.batch.requests;
    this.requestsInBatch.clear();
    // Its rows are lost, its counts are not: they go to the next worker.
    for (const counts of this.unconfirmedCounts.values()) this.carriedCounts.push(...counts);
    this.unconfirmedCounts.clear();
    this.settleDeletions(); // the cascade of the environment delete does the rest
    this.log.error({ code, lost }, 'history worker stopped; starting a new one (rows it held are lost and counted as failed; hourly counts are kept)');
    this.spawnWorker();
  }

  /**
   * Starts handing over every flush interval. The worker's thread starts with the first batch (or
   * the first prune, FIRST_PRUNE_MS after start), not now: loading Kysely and SQLite in another
   * isolate competed with the start on a small machine (start-up time: docs/performance.md).
   */
  start(): void {
    this.timers.push(setInterval(() => this.handOver(), this.options.flushIntervalMs));
    const prune = () => this.send({ type: 'prune', retentionDays: this.options.retentionDays });
    this.timers.push(setTimeout(prune, FIRST_PRUNE_MS));
    this.timers.push(setInterval(prune, this.options.pruneIntervalMs));
    for (const timer of this.timers) timer.unref();
  }

  /**
   * Called by evaluate after answering: codes[0..count) are the outcome codes of the environment's
   * flags, in order, followed by their variant indexes (codes[count..2 count)) when the environment has variants.
   * `unmatched`: no targeting rule matched the request, so its codes are that base's but at its
   * varying flags (CountingBase); undefined: any codes.
   */
  record(environment: BatchEnvironment, userId: string | null, codes: Uint8Array, count: number, unmatched?: CountingBase): void {
    const now = Date.now();
    const hour = Math.floor(now / HOUR_MS);
    if (hour !== this.hour) {
      this.handOver(); // the counts so far belong to the hour that just ended
      this.hour = hour;
    }
    this.count(environment, codes, count, unmatched);
    this.stats.recorded += count;
    if (this.pendingRows + count > this.options.maxPendingRows || this.pendingRequests >= this.options.maxPendingRequests) {
      this.drop(count);
      return;
    }
    this.batch.add(environment, userId, now, codes, count);
    this.pendingRows += count;
    this.pendingRequests++;
    // Early, rows only: the counts go once per flush interval (a thousand-flag environment would
    // otherwise upsert a thousand count rows every few hundred requests).
    if (this.batch.rows >= this.options.maxBatchRows) this.handOver(false);
  }

  /**
   * Deletes the history of these environments in bounded steps on the worker's connection (not
   * on this thread's event loop); resolves when it is gone. Call before deleting the environments.
   */
  deleteHistory(environmentIds: string[]): Promise<void> {
    if (environmentIds.length === 0 || this.closed) return Promise.resolve();
    const requestId = this.nextRequestId++;
    return new Promise((resolve) => {
      this.deletions.set(requestId, resolve);
      this.send({ type: 'deleteHistory', requestId, environmentIds });
    });
  }

  private settleDeletions(): void {
    for (const resolve of this.deletions.values()) resolve();
    this.deletions.clear();
  }

  /** Counts since start, in evaluated flags. */
  metrics() {
    return { ...this.stats, pending: this.pendingRows };
  }

  /** Hands the rows recorded so far to the worker, and the hourly counts unless withCounts is false. */
  handOver(withCounts = true): void {
    if (this.batch.requests === 0 && (!withCounts || (this.counts.size === 0 && this.carriedCounts.length === 0))) return;
    const counts: HourCounts[] = [];
    if (withCounts) {
      for (const { environment, enabled, evaluations, base, unmatched, variants, variantOffsets: offsets } of this.counts.values()) {
        if (base !== undefined && unmatched > 0) {
          for (let i = 0; i < enabled.length; i++) {
            enabled[i]! += unmatched * base.fixedEnabled[i]!;
            if (variants !== undefined && offsets !== undefined) countVariant(variants, offsets, i, base.fixedVariants[i]!, unmatched);
          }
        }
        const disabled = Uint32Array.from(enabled, (on) => evaluations - on);
        counts.push({ environment: describe(environment), hourStart: new Date(this.hour * HOUR_MS).toISOString(), enabled, disabled, ...(variants ? { variants } : {}) });
      }
      counts.push(...this.carriedCounts);
      this.counts = new Map();
      this.carriedCounts = [];
    }
    const batch = this.batch.build(this.nextBatchId++, counts);
    this.batch.clear();
    this.unconfirmedCounts.set(batch.id, counts);
    this.requestsInBatch.set(batch.id, batch.requestTime.length);
    this.send({ type: 'batch', batch });
  }

  /**
   * Hands over what is left and waits until the worker has written it (graceful shutdown), for
   * closeTimeoutMs at most: then what is still waiting is given up, counted as failed and logged,
   * and the worker is stopped (not awaited: it may be stuck in a database call).
   */
  close(): Promise<void> {
    this.closed ??= (async () => {
      for (const timer of this.timers) clearInterval(timer);
      this.handOver();
      const worker = this.worker;
      if (worker === undefined) return this.settleDeletions(); // never needed: nothing to write
      let deadline: NodeJS.Timeout | undefined;
      const finished = await new Promise<boolean>((resolve) => {
        worker.on('message', (message: FromWorker) => message.type === 'closed' && resolve(true));
        worker.once('exit', () => resolve(true)); // a worker that dies now must not hold the shutdown
        deadline = setTimeout(() => resolve(false), this.options.closeTimeoutMs);
        this.send({ type: 'close' });
      });
      clearTimeout(deadline);
      if (!finished) {
        const dropped = this.pendingRows;
        this.stats.failed += dropped;
        this.pendingRows = 0;
        this.pendingRequests = 0;
        this.log.error({ dropped, unstoredHourlyCounts: this.unconfirmedCounts.size > 0, timeoutMs: this.options.closeTimeoutMs }, 'history flush did not finish in time at shutdown: rows dropped');
      }
      this.settleDeletions();
      void worker.terminate();
    })();
    return this.closed;
  }

  private count(environment: BatchEnvironment, codes: Uint8Array, count: number, unmatched: CountingBase | undefined): void {
    let counts = this.counts.get(environment);
    if (!counts) {
      counts = { environment, enabled: new Uint32Array(count), evaluations: 0, base: unmatched, unmatched: 0 };
      if (environment.flagVariants != null) {
        const { offsets, length } = variantOffsets(environment);
        counts.variants = new Uint32Array(length);
        counts.variantOffsets = offsets;
      }
      this.counts.set(environment, counts);
    }
    counts.evaluations++;
    const { enabled, variants, variantOffsets: offsets } = counts;
    counts.base ??= unmatched;
    if (unmatched !== undefined && unmatched === counts.base) {
      counts.unmatched++;
      const { varying } = unmatched;
      for (let j = 0; j < varying.length; j++) {
        const i = varying[j]!;
        enabled[i]! += ENABLED_CODE[codes[i]!]!;
        if (variants !== undefined && offsets !== undefined) countVariant(variants, offsets, i, codes[count + i]!);
      }
      return;
    }
    for (let i = 0; i < count; i++) enabled[i]! += ENABLED_CODE[codes[i]!]!;
    if (variants !== undefined && offsets !== undefined) for (let i = 0; i < count; i++) countVariant(variants, offsets, i, codes[count + i]!);
  }

  private drop(count: number): void {
    this.stats.dropped += count;
    const now = Date.now();
    if (now - this.lastDropWarning > 10_000) {
      this.lastDropWarning = now;
      this.log.warn({ dropped: this.stats.dropped, pendingRows: this.pendingRows }, 'evaluation history is falling behind: rows dropped (hourly counts stay exact)');
    }
  }

  private send(message: ToWorker): void {
    const worker = this.worker ?? this.spawnWorker();
    if (message.type === 'batch') {
      const { batch } = message;
      worker.postMessage(message, [batch.requestEnvironment.buffer, batch.requestTime.buffer, batch.codes.buffer, batch.users.buffer, batch.userLengths.buffer] as ArrayBuffer[]);
    } else {
      worker.postMessage(message);
    }
  }

  private onWorkerMessage(message: FromWorker): void {
    if (message.type === 'written') {
      this.pendingRows -= message.rows + message.discarded + message.failed;
      this.pendingRequests -= this.requestsInBatch.get(message.batchId) ?? 0;
      this.requestsInBatch.delete(message.batchId);
      this.stats.written += message.rows;
      this.stats.discarded += message.discarded;
      this.stats.failed += message.failed;
      const counts = this.unconfirmedCounts.get(message.batchId);
      this.unconfirmedCounts.delete(message.batchId);
      if (!message.countsStored && counts && !this.closed) {
        this.stats.countRetries++;
        this.carriedCounts.push(...counts);
      }
    } else if (message.type === 'historyDeleted') {
      if (message.error) this.log.error({ error: message.error }, 'could not delete evaluation history in steps; the cascade deletes it');
      this.deletions.get(message.requestId)?.();
      this.deletions.delete(message.requestId);
    } else if (message.type === 'log') {
      this.log[message.level](message.details ?? {}, message.message);
    }
  }
}
