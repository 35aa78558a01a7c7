import type { HistogramEntry } from './request-counts.js';

/** guidon_schedule_lag_seconds's upper bounds (seconds); +Inf is implied. Applied within 5 s, or late after downtime. */
export const LAG_BUCKETS = [0.1, 0.25, 0.5, 1, 2, 5, 10, 60, 600, 3600, 86_400] as const;

type Kind = 'schedule' | 'change_request';

/**
 * What the scheduler (modules/due-work/due-changes.ts) reports: scheduled changes applied and failed, and how
 * late each was applied, by kind; handed to prom-client when /metrics is scraped (prometheus.ts).
 */
export class ScheduleCounts {
  readonly appliedByKind = new Map<Kind, number>();
  readonly failedByKind = new Map<Kind, number>();
  private readonly lags = new Map<Kind, { buckets: number[]; sum: number; count: number }>();

  applied(kind: Kind, lagSeconds: number): void {
    this.appliedByKind.set(kind, (this.appliedByKind.get(kind) ?? 0) + 1);
    let lag = this.lags.get(kind);
    if (!lag) this.lags.set(kind, (lag = { buckets: LAG_BUCKETS.map(() => 0), sum: 0, count: 0 }));
    const seconds = Math.max(0, lagSeconds);
    const bucket = LAG_BUCKETS.findIndex((bound) => seconds <= bound);
    if (bucket !== -1) lag.buckets[bucket]!++;
    lag.sum += seconds;
    lag.count++;
  }

  failed(kind: Kind): void {
    this.failedByKind.set(kind, (this.failedByKind.get(kind) ?? 0) + 1);
  }

  /** The lag histogram as prom-client holds one (prometheus.ts, setHistogramState). */
  lagState(): Record<string, HistogramEntry> {
    const state: Record<string, HistogramEntry> = {};
    for (const [kind, { buckets, sum, count }] of this.lags) {
      state[`kind ${kind}`] = { labels: { kind }, bucketValues: Object.fromEntries(LAG_BUCKETS.map((bound, i) => [bound, buckets[i]!])), sum, count };
    }
    return state;
  }
}
