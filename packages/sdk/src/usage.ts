/**
 * The local client's usage reports (docs/local-evaluation.md, "Usage reports"): counts per flag
 * and variant, sent to POST /sdk/v1/usage every interval and on close. Each report carries a
 * `report_id`; one whose answer was lost (a timeout, a cut connection, a 5xx, a 429) is sent again
 * as it was, and Guidon counts it once. Counts made meanwhile wait in the counters. The sending
 * is sender.ts's, shared with exposures and events.
 */
import type { GuidonError } from './errors.js';
import { BatchSender } from './sender.js';
import type { Transport } from './transport.js';

/** One flag's counts since the last report. */
export interface UsageCounter {
  enabled: number;
  disabled: number;
  /** By variant key; null until one is counted. */
  variants: Map<string, number> | null;
}

/** One flag's counts in a report. */
interface FlagUsage {
  enabled: number;
  disabled: number;
  variants?: Record<string, number>;
}

interface Report {
  report_id: string;
  environment: string;
  started_at: string;
  ended_at: string;
  flags: Record<string, FlagUsage>;
}

/** Flags per report (Guidon takes at most 1,000). */
const FLAGS_PER_REPORT = 1000;

export interface UsageOptions {
  /** POST path, with the query naming the project when the token needs it. */
  path: string;
  environment: string;
  intervalMs: number;
  /** Whether the ruleset held has this flag: counters of other flags go once reported. */
  holds: (key: string) => boolean;
  onError: (error: GuidonError) => void;
}

export class Usage {
  /** By flag key: one per flag of the rulesets held, so bounded whatever the traffic. */
  private readonly counters = new Map<string, UsageCounter>();
  private since = Date.now();
  private readonly sender: BatchSender<Report>;

  constructor(
    transport: Transport,
    private readonly options: UsageOptions,
  ) {
    this.sender = new BatchSender(transport, {
      path: options.path,
      intervalMs: options.intervalMs,
      take: () => this.takeReports(),
      // Refused as it is (400, 401, 403, 404): sending it again would not help. Anything else may come
      // out otherwise, and the report_id makes a report sent twice count once.
      keep: ({ status }) => !(status !== undefined && status >= 400 && status < 500 && status !== 429),
      what: 'Usage report',
      onError: options.onError,
    });
  }

  /** Reports every interval from now on. */
  start(): void {
    this.sender.start();
  }

  /** The counter of a flag key (one per key: a new ruleset goes on counting where the last left off). */
  counterFor(key: string): UsageCounter {
    let counter = this.counters.get(key);
    if (!counter) this.counters.set(key, (counter = { enabled: 0, disabled: 0, variants: null }));
    return counter;
  }

  /** Sends what is left, once; never rejects. */
  close(): Promise<void> {
    return this.sender.close();
  }
  /** The counts since the last report, as reports of at most 1,000 flags; the counters go back to zero. */
  private takeReports(): Report[] {
    const started_at = new Date(this.since).toISOString();
    this.since = Date.now();
    const ended_at = new Date(this.since).toISOString();
    const flags = this.takeCounts();
    const keys = Object.keys(flags);
    const reports: Report[] = [];
    for (let start = 0; start < keys.length; start += FLAGS_PER_REPORT) {
      const part = Object.fromEntries(keys.slice(start, start + FLAGS_PER_REPORT).map((key) => [key, flags[key]!]));
      reports.push({ report_id: globalThis.crypto.randomUUID(), environment: this.options.environment, started_at, ended_at, flags: part });
    }
    return reports;
  }

  private takeCounts(): Record<string, FlagUsage> {
    const flags: Record<string, FlagUsage> = {};
    for (const [key, counter] of this.counters) {
      if (counter.enabled > 0 || counter.disabled > 0 || (counter.variants?.size ?? 0) > 0) {
        const usage: FlagUsage = { enabled: counter.enabled, disabled: counter.disabled };
        if (counter.variants && counter.variants.size > 0) usage.variants = Object.fromEntries(counter.variants);
        flags[key] = usage;
        counter.enabled = 0;
        counter.disabled = 0;
        counter.variants = null;
      }
      if (!this.options.holds(key)) this.counters.delete(key);
    }
    return flags;
  }
}
