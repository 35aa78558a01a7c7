/**
 * The Prometheus text of /metrics, made by prom-client from the counts (request-counts.ts) and the
 * sources read when scraped. Loaded only when METRICS_TOKEN is set (start-up time:
 * docs/performance.md). One registry per app, so several apps in one process (tests) do not
 * share counters.
 */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { passwordWork } from '../accounts/passwords.js';
import type { HistoryRecorder } from '../history/history.recorder.js';
import { DURATION_BUCKETS, type HistogramEntry, type RequestCounts } from './request-counts.js';
import { LAG_BUCKETS, type ScheduleCounts } from './schedule-counts.js';

/** What the metrics read of the compiled evaluate view (evaluate/evaluate.cache.ts). */
export interface CompiledView {
  readonly size: number;
  lagSeconds(): number;
}

export interface MetricSources {
  history: HistoryRecorder;
  evaluateCache: CompiledView;
}

export function prometheusRegistry(requests: RequestCounts, scheduled: ScheduleCounts, { history, evaluateCache }: MetricSources): Registry {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: 'guidon_' });
  // Every answer is counted in `requests` (prom-client's observe and inc validate and hash the
  // labels on each call), handed to these two metrics when /metrics is scraped. The text is prom-client's.
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
  // Scheduled changes and scheduled change requests (modules/due-work/due-changes.ts), by kind.
  new Counter({
    name: 'guidon_schedules_applied_total',
    help: 'Scheduled changes applied, by kind (schedule, change_request)',
    labelNames: ['kind'],
    registers: [registry],
    collect() {
      this.reset();
      for (const [kind, count] of scheduled.appliedByKind) this.inc({ kind }, count);
    },
  });
  new Counter({
    name: 'guidon_schedules_failed_total',
    help: 'Scheduled changes that failed when due (no longer valid, missed, not approved), by kind',
    labelNames: ['kind'],
    registers: [registry],
    collect() {
      this.reset();
      for (const [kind, count] of scheduled.failedByKind) this.inc({ kind }, count);
    },
  });
  new Histogram({
    name: 'guidon_schedule_lag_seconds',
    help: "Seconds from a scheduled change's time to its application (within 5 s; more after downtime, docs/change-management.md)",
    labelNames: ['kind'],
    buckets: [...LAG_BUCKETS],
    registers: [registry],
    collect() {
      setHistogramState(this, scheduled.lagState());
    },
  });

  return registry;
}

/**
 * Gives a prom-client Histogram its state, from its collect(), which prom-client calls before it
 * reads `hashMap` to write the text: so names, labels, their order, buckets and values are
 * written by prom-client exactly as if every answer had been observed. `hashMap` is
 * prom-client's own field, not its API: tests/hardening.test.ts compares the text with a
 * Histogram that observed the same answers, and prometheusRegistry throws if the field is gone.
 */
function setHistogramState(histogram: Histogram<string>, state: Record<string, HistogramEntry>): void {
  const internal = histogram as unknown as { hashMap?: Record<string, HistogramEntry> };
  if (typeof internal.hashMap !== 'object' || internal.hashMap === null) throw new Error('prom-client Histogram has no hashMap: metrics.ts needs updating for this prom-client version');
  internal.hashMap = state;
}

