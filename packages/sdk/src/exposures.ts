/**
 * Exposures and events for experiments (docs/experiments.md, "Sending exposures and events"):
 * both clients record an exposure when the application reads one flag, once per (flag version,
 * unit, arm), and `track()` records an event; the outbox batches both to POST /sdk/v1/events
 * (sender.ts: every interval, sooner when a batch is full, and at close()). Memory is bounded
 * twice: the exposures already seen (a ring of `maxSeenExposures` entries, the oldest forgotten:
 * such a unit is sent once more) and the items waiting (`maxQueuedEvents`, the oldest dropped and
 * counted; a batch kept to be sent again after a 429 or 503 adds at most as many).
 * Nothing here throws into the application or waits on the network.
 */
import { GuidonError } from './errors.js';
import type { GuidonContext } from './model.js';
import { BatchSender } from './sender.js';
import type { Transport } from './transport.js';

/** Items per request (Guidon takes 1,000: half leaves room for the 1 MiB limit). */
export const ITEMS_PER_BATCH = 500;
const EVENT_NAME = /^[A-Za-z0-9_.:-]{1,100}$/;
const MAX_UNIT = 256;
const MAX_KEY = 100;
const MAX_REASON = 200;

/** Exposure and event options, alike for the remote and the local client. */
export interface ExperimentOptions {
  /** Record an exposure when a flag is read (default true); track() works either way. */
  sendExposures?: boolean;
  /** How often exposures and events are sent (default 10 s; also when 500 wait, and at close()). */
  eventsIntervalMs?: number;
  /** Exposures and events waiting to be sent, at most (default 10,000): past it the oldest are dropped and counted. */
  maxQueuedEvents?: number;
  /** (flag, unit, arm) already sent that are remembered, at most (default 50,000): past it the oldest are forgotten (and sent again if seen again). */
  maxSeenExposures?: number;
}

/** What the outbox did, for monitoring (client.eventStats()). */
export interface EventStats {
  /** Exposures and events waiting to be sent (not counting a batch kept to be sent again). */
  queued: number;
  /** Items Guidon answered 202 for (accepted or ignored: its answer says which). */
  sent: number;
  /** Items given up: pushed out of a full queue, refused, or lost with their request. */
  dropped: number;
  /** track() calls refused here (a bad name, no unit, a value that is not a finite number). */
  invalid: number;
}

/**
 * The unit a context is counted as: its user_id, else its email (what a rollout hashes), or
 * undefined for none, for `anonymous` (never a unit) and for one Guidon would refuse (over 256 characters).
 */
export function unitOf(context: GuidonContext | { user_id?: unknown; user_email?: unknown } | undefined): string | undefined {
  if (!context) return undefined;
  const id = context.user_id;
  const unit = typeof id === 'string' && id !== '' ? id : typeof context.user_email === 'string' && context.user_email !== '' ? context.user_email : undefined;
  return unit === undefined || unit === 'anonymous' || unit.length > MAX_UNIT ? undefined : unit;
}

/**
 * The arms already recorded for one version of one flag, by unit: a bit per arm (an arm's number
 * under 31), so a read seen before costs one Map.get and no allocation. A new version of the flag
 * gets a new one: its units are recorded again.
 */
export type SeenArms = Map<string, number>;

/**
 * The exposures already recorded, bounded: a ring of the entries added to every flag's SeenArms,
 * the oldest deleted when it is full. Each entry is in the ring once (only the ring deletes).
 */
export class SeenExposures {
  private readonly arms: (SeenArms | undefined)[] = [];
  private readonly keys: string[] = [];
  private next = 0;

  constructor(private readonly max: number) {}

  /**
   * True the first time `arm` (a small number: a variant's index + 2, or 1 on, 0 off) is recorded
   * for `unit` in `seen`, and remembers it; false after.
   */
  first(seen: SeenArms, unit: string, arm: number): boolean {
    // The hot path, small enough to be inlined into the read: one Map.get, no allocation.
    if (arm < 31) {
      const had = seen.get(unit);
      if (had !== undefined && (had & (1 << arm)) !== 0) return false;
    }
    return this.remember(seen, unit, arm);
  }

  private remember(seen: SeenArms, unit: string, arm: number): boolean {
    // An arm past 30 has no bit: its own entry, keyed by unit and arm (flags with that many variants are rare).
    const key = arm < 31 ? unit : `${unit}\u0000${arm}`;
    const bit = arm < 31 ? 1 << arm : 1;
    const had = seen.get(key);
    if (had !== undefined) {
      if ((had & bit) !== 0) return false;
      seen.set(key, had | bit);
      return true;
    }
    if (this.max <= 0) return true;
    if (this.arms.length === this.max) this.arms[this.next]!.delete(this.keys[this.next]!);
    this.arms[this.next] = seen;
    this.keys[this.next] = key;
    this.next = (this.next + 1) % this.max;
    seen.set(key, bit);
    return true;
  }
}

/** POST /sdk/v1/events's body. */
interface Batch {
  environment: string;
  exposures?: { flag: string; unit: string; arm: string; reason: string; at: string }[];
  events?: { name: string; unit: string; value?: number; at: string }[];
}

const itemsIn = (batch: Batch) => (batch.exposures?.length ?? 0) + (batch.events?.length ?? 0);

export interface OutboxOptions extends ExperimentOptions {
  /** POST path of the intake, with the query naming the project when the credential needs it. */
  path: string;
  environment: string;
  onError: (error: GuidonError) => void;
}

/**
 * Exposures and events waiting to be sent, oldest first, in a ring of `maxQueuedEvents` kept as
 * columns: an item is references to strings that exist already (the flag key, the unit, the arm,
 * the reason) and two numbers, so recording one allocates nothing the garbage collector must move.
 */
export class Outbox {
  /** The flag of an exposure, the name of an event. */
  private readonly names: string[] = [];
  private readonly units: string[] = [];
  /** The arm of an exposure; undefined for an event. */
  private readonly arms: (string | undefined)[] = [];
  private readonly reasons: string[] = [];
  /** An event's value; NaN for none (a value is finite). */
  private readonly values: number[] = [];
  private readonly ats: number[] = [];
  private readonly max: number;
  private head = 0;
  private size = 0;
  private flushing = false;
  private readonly sender: BatchSender<Batch>;
  private readonly stats: EventStats = { queued: 0, sent: 0, dropped: 0, invalid: 0 };
  /** Dropped since the last round: said once per round in an error, not once per item. */
  private droppedUnsaid = 0;

  constructor(
    transport: Transport,
    private readonly options: OutboxOptions,
  ) {
    this.max = Math.max(1, options.maxQueuedEvents ?? 10_000);
    this.sender = new BatchSender<Batch>(transport, {
      path: options.path,
      intervalMs: options.eventsIntervalMs ?? 10_000,
      take: () => this.take(),
      // Sent again only when Guidon cannot have taken it (rate limited, unavailable, unreachable):
      // the intake has no idempotency key, and an event sent twice would count twice.
      keep: (error) => error.status === 429 || error.status === 503 || error.kind === 'network',
      what: 'Exposures and events',
      onError: options.onError,
      onDropped: (batch) => (this.stats.dropped += itemsIn(batch)),
      onSent: (batch) => (this.stats.sent += itemsIn(batch)),
    });
    this.sender.start();
  }

  exposure(flag: string, unit: string, arm: string, reason: string): void {
    // What the intake would refuse (and a 400 loses the whole batch): a key or arm past 100 characters is not sent, a reason is cut at 200.
    if (flag.length > MAX_KEY || arm.length > MAX_KEY) return;
    this.push(flag, unit, arm, reason.length > MAX_REASON ? reason.slice(0, MAX_REASON) : reason, Number.NaN);
  }

  /** track(): an event of `name` for the context's unit; one Guidon would refuse is counted invalid and said in an error. */
  track(name: unknown, context: GuidonContext | undefined, details: { value?: unknown } | undefined): void {
    try {
      const unit = unitOf(context);
      const value = details?.value;
      const problem =
        typeof name !== 'string' || !EVENT_NAME.test(name)
          ? `its name ${JSON.stringify(name)} is not 1–100 of A-Z a-z 0-9 _ . : -`
          : unit === undefined
            ? 'its context has no user_id or email (anonymous is not a unit)'
            : value !== undefined && (typeof value !== 'number' || !Number.isFinite(value))
              ? 'its value is not a finite number'
              : null;
      if (problem !== null) {
        this.stats.invalid++;
        this.options.onError(new GuidonError(`Event not recorded: ${problem}`, 'events'));
        return;
      }
      this.push(name as string, unit!, undefined, '', value === undefined ? Number.NaN : (value as number));
    } catch {
      this.stats.invalid++; // a context whose getters throw: nothing reaches the application
    }
  }

  eventStats(): EventStats {
    return { ...this.stats, queued: this.size };
  }

  /** Sends what waits, then stops; never rejects. */
  close(): Promise<void> {
    return this.sender.close();
  }

  private push(name: string, unit: string, arm: string | undefined, reason: string, value: number): void {
    if (this.size === this.max) {
      this.head = (this.head + 1) % this.max;
      this.size--;
      this.stats.dropped++;
      this.droppedUnsaid++;
    }
    const at = (this.head + this.size) % this.max;
    this.names[at] = name;
    this.units[at] = unit;
    this.arms[at] = arm;
    this.reasons[at] = reason;
    this.values[at] = value;
    this.ats[at] = Date.now();
    this.size++;
    // A full batch is sent now rather than at the interval (once: the round takes all that waits).
    if (this.size >= ITEMS_PER_BATCH && !this.flushing) {
      this.flushing = true;
      void this.sender.flush().finally(() => (this.flushing = false));
    }
  }

  /** Everything waiting, as batches of at most 500 items; the ring is emptied. */
  private take(): Batch[] {
    if (this.droppedUnsaid > 0) {
      this.options.onError(new GuidonError(`${this.droppedUnsaid} exposures and events dropped: more than ${this.max} waited to be sent`, 'events'));
      this.droppedUnsaid = 0;
    }
    const batches: Batch[] = [];
    while (this.size > 0) {
      const batch: Batch = { environment: this.options.environment };
      for (let n = 0; n < ITEMS_PER_BATCH && this.size > 0; n++) {
        const i = this.head;
        const at = new Date(this.ats[i]!).toISOString();
        const arm = this.arms[i];
        if (arm !== undefined) {
          (batch.exposures ??= []).push({ flag: this.names[i]!, unit: this.units[i]!, arm, reason: this.reasons[i]!, at });
        } else {
          const value = this.values[i]!;
          (batch.events ??= []).push(Number.isNaN(value) ? { name: this.names[i]!, unit: this.units[i]!, at } : { name: this.names[i]!, unit: this.units[i]!, value, at });
        }
        // Let go of the strings (a unit of a user long gone).
        this.names[i] = this.units[i] = this.reasons[i] = '';
        this.head = (this.head + 1) % this.max;
        this.size--;
      }
      batches.push(batch);
    }
    return batches;
  }
}
