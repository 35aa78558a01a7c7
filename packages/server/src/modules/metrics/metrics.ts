import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { Config } from '../../config.js';
import type { ApiPlugin } from '../../http/plugin.js';
import type { HistoryRecorder } from '../history/history.recorder.js';
import { passwordWork } from '../accounts/passwords.js';

/**
 * The Prometheus metrics of this process (docs/operations.md). One registry per app, so several
 * apps in one process (tests) do not share counters.
 */
/** What the metrics read of the compiled evaluate view (evaluate/evaluate.cache.ts), which itself counts its answers here. */
interface CompiledView {
  readonly size: number;
  lagSeconds(): number;
}

export function createMetrics({ history, evaluateCache }: { history: HistoryRecorder; evaluateCache: CompiledView }) {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: 'guidon_' });
  // Every answer is counted here (onResponse, and evaluate's direct path): prom-client's observe
  // and inc validate and hash the labels on each call, so the counts are kept below, per label
  // set, and handed to these two metrics when /metrics is scraped. The text is prom-client's.
  const requests = new RequestCounts();
  const requestDuration = new Histogram({
    name: 'guidon_http_request_duration_seconds',
    help: 'HTTP requests by route (the route pattern, not the URL), method and status; _count is the request count',
    labelNames: ['method', 'route', 'status'],
    buckets: [...DURATION_BUCKETS],
    registers: [registry],
    collect() {
      setHistogramState(this, requests.histogramState());
    },
  });
  setHistogramState(requestDuration, requests.histogramState()); // empty; throws now rather than at the first scrape if prom-client changed
  new Counter({
    name: 'guidon_evaluate_requests_total',
    help: 'POST /sdk/v1/evaluate answers by status',
    labelNames: ['status'],
    registers: [registry],
    collect() {
      this.reset();
      for (const [status, cell] of requests.evaluateByStatus) this.inc({ status }, cell.value);
    },
  });
  // Totals kept elsewhere, read when scraped.
  new Counter({
    name: 'guidon_flag_evaluations_total',
    help: 'Flags evaluated (one per flag of each answered evaluate or OFREP request)',
    registers: [registry],
    collect() {
      this.reset();
      this.inc(history.stats.recorded);
    },
  });
  new Counter({
    name: 'guidon_history_rows_total',
    help: 'Evaluation history rows (one per evaluated flag) by fate: written; dropped (writer behind); discarded (environment deleted first); failed (database error, or lost at shutdown)',
    labelNames: ['state'],
    registers: [registry],
    collect() {
      this.reset();
      for (const state of ['written', 'dropped', 'discarded', 'failed'] as const) this.inc({ state }, history.stats[state]);
    },
  });
  new Gauge({
    name: 'guidon_history_pending_rows',
    help: 'Evaluation history rows waiting to be written',
    registers: [registry],
    collect() {
      this.set(history.metrics().pending);
    },
  });
  new Counter({
    name: 'guidon_history_count_retries_total',
    help: 'Hourly counts handed to the writer again after it could not store them (counts are never dropped)',
    registers: [registry],
    collect() {
      this.reset();
      this.inc(history.stats.countRetries);
    },
  });
  new Gauge({
    name: 'guidon_compiled_projects',
    help: 'Entries in the compiled evaluate cache (one per SDK key)',
    registers: [registry],
    collect() {
      this.set(evaluateCache.size);
    },
  });
  new Gauge({
    name: 'guidon_change_feed_lag_seconds',
    help: 'Seconds since a revision check last confirmed every compiled project current (how stale one can be if a notification was lost)',
    registers: [registry],
    collect() {
      this.set(evaluateCache.lagSeconds());
    },
  });
  new Counter({
    name: 'guidon_password_hashes_total',
    help: 'argon2id password hashes computed (register, reset)',
    registers: [registry],
    collect() {
      this.reset();
      this.inc(passwordWork.hashes);
    },
  });

  // Scheduled changes and scheduled change requests (modules/scheduler), counted as they apply.
  const schedulesApplied = new Counter({ name: 'guidon_schedules_applied_total', help: 'Scheduled changes applied, by kind (schedule, change_request)', labelNames: ['kind'], registers: [registry] });
  const schedulesFailed = new Counter({ name: 'guidon_schedules_failed_total', help: 'Scheduled changes that failed when due (no longer valid, missed, not approved), by kind', labelNames: ['kind'], registers: [registry] });
  const scheduleLag = new Histogram({
    name: 'guidon_schedule_lag_seconds',
    help: 'Seconds from a scheduled change\'s time to its application (applied within 5 s of it; more after downtime, docs/change-management.md)',
    labelNames: ['kind'],
    buckets: [0.1, 0.25, 0.5, 1, 2, 5, 10, 60, 600, 3600, 86_400],
    registers: [registry],
  });
  const scheduled = {
    applied(kind: string, lagSeconds: number): void {
      schedulesApplied.inc({ kind });
      scheduleLag.observe({ kind }, Math.max(0, lagSeconds));
    },
    failed(kind: string): void {
      schedulesFailed.inc({ kind });
    },
  };

  /** One answered request (route: the route pattern). */
  const count = (method: string, route: string, statusCode: number, seconds: number): void => requests.count(method, route, statusCode, seconds);

  return {
    registry,
    /** For the scheduler (modules/scheduler): each scheduled change applied or failed. */
    scheduled,
    /** For answers sent without Fastify (evaluate's direct path, evaluate.direct.ts). */
    count,
    /** onResponse hook for the whole app. */
    observe(request: FastifyRequest, reply: FastifyReply, done: () => void): void {
      // Unknown URLs share one label: bounded cardinality.
      count(request.method, request.routeOptions.url ?? 'unmatched', reply.statusCode, reply.elapsedTime / 1000);
      done();
    },
  };
}

export type Metrics = ReturnType<typeof createMetrics>;

/** guidon_http_request_duration_seconds's upper bounds (seconds); +Inf is implied. */
const DURATION_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5] as const;
const EVALUATE_ROUTE = '/sdk/v1/evaluate';

/** One label set of the request histogram, with what prom-client would keep for it. */
interface Series {
  /** In prom-client's order (the order observe was given them): method, route, status. */
  readonly labels: { method: string; route: string; status: string };
  /** Per upper bound, the answers that took at most that long and more than the bound before (not cumulative). */
  readonly buckets: number[];
  sum: number;
  count: number;
  /** The evaluate counter's cell of this status, for the evaluate route; else null. */
  readonly evaluate: { value: number } | null;
}

/**
 * The request histogram's and the evaluate counter's counts, per label set, recorded with a few
 * Map lookups and additions (no label objects, no hashing, no closure per answer).
 */
class RequestCounts {
  /** method → route → status code → series. */
  private readonly byMethod = new Map<string, Map<string, Map<number, Series>>>();
  /** Every series, in the order of its first answer (prom-client's order of label sets). */
  private readonly series: Series[] = [];
  /** guidon_evaluate_requests_total by status, in the order of each status's first answer. */
  readonly evaluateByStatus = new Map<string, { value: number }>();

  count(method: string, route: string, statusCode: number, seconds: number): void {
    if (!Number.isFinite(seconds)) return; // prom-client's observe would have thrown: not recorded either way
    const series = this.seriesOf(method, route, statusCode);
    const buckets = series.buckets;
    for (let i = 0; i < DURATION_BUCKETS.length; i++) {
      if (seconds <= DURATION_BUCKETS[i]!) {
        buckets[i]!++;
        break;
      }
    }
    series.sum += seconds;
    series.count++;
    if (series.evaluate !== null) series.evaluate.value++;
  }

  private seriesOf(method: string, route: string, statusCode: number): Series {
    let byRoute = this.byMethod.get(method);
    if (byRoute === undefined) this.byMethod.set(method, (byRoute = new Map()));
    let byStatus = byRoute.get(route);
    if (byStatus === undefined) byRoute.set(route, (byStatus = new Map()));
    let series = byStatus.get(statusCode);
    if (series === undefined) {
      const status = String(statusCode);
      let evaluate: { value: number } | null = null;
      if (route === EVALUATE_ROUTE) {
        evaluate = this.evaluateByStatus.get(status) ?? { value: 0 };
        this.evaluateByStatus.set(status, evaluate);
      }
      series = { labels: { method, route, status }, buckets: DURATION_BUCKETS.map(() => 0), sum: 0, count: 0, evaluate };
      byStatus.set(statusCode, series);
      this.series.push(series);
    }
    return series;
  }

  /** The histogram as prom-client holds one (see setHistogramState), from the counts so far. */
  histogramState(): Record<string, HistogramEntry> {
    const state: Record<string, HistogramEntry> = {};
    for (let i = 0; i < this.series.length; i++) {
      const { labels, buckets, sum, count } = this.series[i]!;
      const bucketValues: Record<number, number> = {};
      for (let b = 0; b < DURATION_BUCKETS.length; b++) bucketValues[DURATION_BUCKETS[b]!] = buckets[b]!;
      state[`series ${i}`] = { labels, bucketValues, sum, count }; // not an integer key: kept in this order
    }
    return state;
  }
}

/** prom-client 15's state of one label set of a histogram (lib/histogram.js, createBaseValues). */
interface HistogramEntry {
  labels: Record<string, string>;
  /** Per upper bound, non-cumulative counts; prom-client adds them up, then +Inf (count), _sum, _count. */
  bucketValues: Record<number, number>;
  sum: number;
  count: number;
}

/**
 * Gives a prom-client Histogram its state, from its collect(), which prom-client calls before it
 * reads `hashMap` to write the text: so names, labels, their order, buckets and values are
 * written by prom-client exactly as if every answer had been observed. `hashMap` is
 * prom-client's own field, not its API: tests/hardening.test.ts compares the text with a
 * Histogram that observed the same answers, and createMetrics throws at start-up if the field is gone.
 */
function setHistogramState(histogram: Histogram<string>, state: Record<string, HistogramEntry>): void {
  const internal = histogram as unknown as { hashMap?: Record<string, HistogramEntry> };
  if (typeof internal.hashMap !== 'object' || internal.hashMap === null) throw new Error('prom-client Histogram has no hashMap: metrics.ts needs updating for this prom-client version');
  internal.hashMap = state;
}

const digest = (text: string) => createHash('sha256').update(text).digest();

/** GET /metrics for Prometheus: only with METRICS_TOKEN set, and only to a request bearing it; else 404, as if absent. */
export const metricsRoutes = (metrics: Metrics): ApiPlugin<{ config: Readonly<Config> }> => async (app, { config }) => {
  const expected = config.metricsToken === null ? null : digest(config.metricsToken);
  app.get('/metrics', { schema: { hide: true }, logLevel: 'warn' }, async (request, reply) => {
    const given = /^Bearer\s+(\S+)\s*$/i.exec(request.headers.authorization ?? '')?.[1];
    if (!expected || given === undefined || !timingSafeEqual(digest(given), expected)) {
      return reply.callNotFound();
    }
    return reply.type(metrics.registry.contentType).send(await metrics.registry.metrics());
  });
};
