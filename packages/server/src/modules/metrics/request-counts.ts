/** Every answer counted with a few Map lookups and additions: what /metrics reports (prometheus.ts). */

/** guidon_http_request_duration_seconds's upper bounds (seconds); +Inf is implied. */
export const DURATION_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5] as const;
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
export class RequestCounts {
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
export interface HistogramEntry {
  labels: Record<string, string>;
  /** Per upper bound, non-cumulative counts; prom-client adds them up, then +Inf (count), _sum, _count. */
  bucketValues: Record<number, number>;
  sum: number;
  count: number;
}
