/**
 * Results are computed in the background and kept (experiment_results): GET .../results answers
 * the latest computation at once. A running experiment whose environment got exposures or events
 * on this instance is computed again within CHECK_INTERVAL_MS of them, or after the rest that
 * follows the last background computation (REST_MS; one computation at a time, the oldest
 * waiting first); every running one once after a start; one never computed, or stopped since its
 * last computation, is computed when asked. Each computation runs on the results thread
 * (results.worker.ts), with a database connection of its own.
 */
import { Worker } from 'node:worker_threads';
import type { FastifyBaseLogger } from 'fastify';
import type { Config } from '../../config.js';
import type { Database } from '../../db/database.js';
import { RESULTS_WORKER_URL } from '../../paths.js';
import { fromJson, toIso } from '../../db/values.js';
import { LogThrottle } from '../../log-throttle.js';
import { withMetrics, type Experiment } from './experiments.repository.js';
import { listMetrics, type Metric } from './metrics.repository.js';
import type { Results } from './results.js';
import type { FromResultsWorker, ToResultsWorker } from './results.worker.js';
import { unitsCsv } from './units-csv.js';
import type { Readable } from 'node:stream';

const CHECK_INTERVAL_MS = 1000;
/**
 * After a background computation, the next waits this long: a running experiment that gets data
 * all the time is computed every few seconds, not back to back (which took a third of the server's
 * time at 50,000 items a second: docs/performance.md, "Experiments"). With the check's second,
 * data written after a computation is computed within 5 s (docs/experiments.md, "Results"); a
 * longer rest after a long computation would break that.
 */
const REST_MS = 3000;

export class ResultsService {
  private readonly dirtyEnvironments = new Set<string>();
  private timer: NodeJS.Timeout | undefined;
  /** The computation under way per experiment: a second ask joins it. */
  private readonly computing = new Map<string, Promise<Results>>();
  private chain: Promise<unknown> = Promise.resolve();
  private readonly failureLog = new LogThrottle();
  private closed = false;
  private restUntil = 0;

  private readonly worker: ResultsWorker;

  constructor(
    private readonly database: Database,
    databaseConfig: Config['database'],
    private readonly log: FastifyBaseLogger,
  ) {
    this.worker = new ResultsWorker(databaseConfig, log);
  }

  start(): void {
    this.timer = setInterval(() => void this.computeDirty(), CHECK_INTERVAL_MS);
    this.timer.unref();
    // Rows written after the last computation by a process that then stopped (its flush at
    // SIGTERM) or died trigger nothing: every running experiment is computed again once at start.
    void this.database.db
      .selectFrom('experiments')
      .select('environment_id')
      .distinct()
      .where('status', '=', 'running')
      .execute()
      .then(
        (rows) => this.markWritten(new Set(rows.map((row) => row.environment_id))),
        (error: unknown) => this.log.warn({ err: error }, 'running experiments not read at start; their results are computed with their next data'),
      );
  }

  async close(): Promise<void> {
    this.closed = true;
    clearInterval(this.timer);
    // A computation under way is dropped, not waited for (a million units took 26 s, past the
    // shutdown's backstop): every running experiment is computed again after a start.
    await this.worker.close();
    await this.chain.catch(() => undefined);
  }

  /** New rows in these environments: their running experiments are computed again soon. */
  markWritten(environmentIds: ReadonlySet<string>): void {
    for (const id of environmentIds) this.dirtyEnvironments.add(id);
  }

  /** The latest results; computed now when there are none yet or the experiment stopped after them. Null for a draft. */
  async resultsOf(experiment: Experiment): Promise<Results | null> {
    if (experiment.started_at === null) return null;
    const stored = await this.database.db.selectFrom('experiment_results').select(['computed_at', 'results']).where('experiment_id', '=', experiment.id).executeTakeFirst();
    const stale = !stored || (experiment.stopped_at !== null && Date.parse(toIso(stored.computed_at)) < Date.parse(experiment.stopped_at));
    if (!stale) return fromJson<Results>(stored.results as string | Results);
    return this.compute(experiment);
  }

  /** Computes and keeps the results, one computation at a time on this instance. */
  compute(experiment: Experiment): Promise<Results> {
    const under = this.computing.get(experiment.id);
    if (under) return under;
    const run = this.chain.then(async () => {
      const metrics = await listMetrics(this.database.db, experiment.project_id);
      const results = await this.worker.compute(experiment, metrics);
      const row = { experiment_id: experiment.id, computed_at: results.computed_at, results: JSON.stringify(results) };
      try {
        await this.database.db
          .insertInto('experiment_results')
          .values(row)
          .onConflict((conflict) => conflict.column('experiment_id').doUpdateSet({ computed_at: row.computed_at, results: row.results }))
          .execute();
      } catch (error) {
        // Deleted meanwhile (its row's foreign key): the answer stands, nothing to keep.
        if (this.failureLog.due()) this.log.warn({ err: error, experimentId: experiment.id }, 'experiment results not kept');
      }
      return results;
    });
    const done = run.finally(() => this.computing.delete(experiment.id));
    this.computing.set(experiment.id, done);
    this.chain = done.catch(() => undefined);
    return done;
  }

  /** GET .../units.csv: every exposed unit with its metrics' values, read now. */
  async unitsCsv(experiment: Experiment): Promise<Readable> {
    return unitsCsv(this.database, experiment, await listMetrics(this.database.db, experiment.project_id));
  }

  private async computeDirty(): Promise<void> {
    if (this.closed || this.dirtyEnvironments.size === 0 || this.computing.size > 0 || Date.now() < this.restUntil) return;
    const environments = [...this.dirtyEnvironments];
    this.dirtyEnvironments.clear();
    try {
      const rows = await this.database.db.selectFrom('experiments').selectAll().where('environment_id', 'in', environments).where('status', '=', 'running').execute();
      for (const experiment of await withMetrics(this.database.db, rows)) await this.compute(experiment);
      this.restUntil = Date.now() + REST_MS;
    } catch (error) {
      if (this.closed) return; // the thread stopped at shutdown
      for (const id of environments) this.dirtyEnvironments.add(id);
      if (this.failureLog.due()) this.log.error({ err: error }, 'computing experiment results failed; trying again');
    }
  }
}

/**
 * The results thread (results.worker.ts), started with the first computation: one computation at
 * a time (ResultsService chains them). A thread that dies fails what it was computing, and the
 * next computation starts another.
 */
class ResultsWorker {
  private worker: Worker | undefined;
  private readonly waiting = new Map<number, { resolve: (results: Results) => void; reject: (error: Error) => void }>();
  private lastId = 0;

  constructor(
    private readonly databaseConfig: Config['database'],
    private readonly log: FastifyBaseLogger,
  ) {}

  compute(experiment: Experiment, metrics: Metric[]): Promise<Results> {
    const worker = this.worker ?? this.start();
    const id = ++this.lastId;
    return new Promise((resolve, reject) => {
      this.waiting.set(id, { resolve, reject });
      worker.postMessage({ type: 'compute', id, experiment, metrics, now: Date.now() } satisfies ToResultsWorker);
    });
  }

  /** Stops the thread; a computation under way fails. The thread only reads: nothing is lost. */
  async close(): Promise<void> {
    const worker = this.worker;
    if (!worker) return;
    this.worker = undefined;
    await worker.terminate();
  }

  private start(): Worker {
    const worker = new Worker(RESULTS_WORKER_URL, { workerData: { database: this.databaseConfig } });
    this.worker = worker;
    worker.unref();
    worker.on('message', (message: FromResultsWorker) => {
      const waiting = this.waiting.get(message.id);
      this.waiting.delete(message.id);
      if (message.type === 'computed') waiting?.resolve(message.results);
      else waiting?.reject(new Error(`computing results failed: ${message.error}`));
    });
    worker.on('error', (error) => this.log.error({ err: error }, 'results worker failed'));
    worker.on('exit', () => {
      if (this.worker === worker) this.worker = undefined;
      for (const { reject } of this.waiting.values()) reject(new Error('the results worker stopped'));
      this.waiting.clear();
    });
    return worker;
  }
}
