/**
 * Local mode (contract §16; docs/local-evaluation.md): the SDK holds the environment's ruleset
 * and evaluates it in-process with the engine the server runs, synchronously, without a network
 * call per evaluation. For servers only: the ruleset names users, and its credential is an API
 * token. The ruleset is kept fresh by the stream (refetchRuleset), by polling with ETag while the
 * stream is away, and kept as it is while Guidon is away. Usage is counted per flag and variant
 * and reported every 10 s and on close().
 */
import { codeOf, compileFlagSet, enabledOf, NO_VARIANT, OUTCOMES, variantOf, type CompiledFlagSet, type Condition, type EvaluationContext, type FlagDefinition } from '@guidon/engine';
import { coalesced } from './coalesce.js';
import { backoffMs, GuidonError, type GuidonContext } from './client.js';
import { readSse } from './sse.js';
import { valueOr, type JsonValue, type ValueOf } from './values.js';

/** The ruleset format this SDK reads; a document of another format is refused (the previous ruleset is kept). */
export const RULESET_FORMAT = 1;

/** GET /sdk/v1/ruleset's document. */
export interface RulesetDocument {
  format: number;
  environment: string;
  revision: number;
  flags: FlagDefinition[];
  segments: Record<string, Condition[]>;
}

export interface LocalClientOptions {
  /** Where Guidon runs, e.g. https://flags.example.com */
  baseUrl: string;
  /** An API token of the project (gdn_…), never an SDK key: the ruleset names users. Keep it on the server. */
  apiToken: string;
  /** Environment key: production, staging, … */
  environment: string;
  mode: 'local';
  /** The project's id: needed only with a token of every project (a project-scoped token names its own). */
  project?: string;
  /** Follow changes over Server-Sent Events (default true); false polls instead. */
  stream?: boolean;
  /** Polling interval when not streaming, or while the stream is down (default 30 s). */
  pollIntervalMs?: number;
  /** Per request (default 5 s). */
  timeoutMs?: number;
  /** A ruleset to start from (a document, or its JSON text): evaluations answer from it until Guidon's arrives, and when Guidon cannot be reached at start. */
  bootstrap?: RulesetDocument | string;
  /** The path of a ruleset file (Node): the same as `bootstrap`, read at creation. Save one with `JSON.stringify(client.ruleset())` or `curl -H 'Authorization: Bearer gdn_…' …/sdk/v1/ruleset?environment=…`. */
  bootstrapFile?: string;
  /** Report usage to Guidon (default true): counts per flag and variant, every `usageIntervalMs` (default 10 s) and on close(). */
  sendUsage?: boolean;
  usageIntervalMs?: number;
  /** A fetch of your own (default: the global one). */
  fetch?: typeof fetch;
}

/** A flag's answer, as the `flags` member of POST /sdk/v1/evaluate gives it. */
export interface LocalFlagState {
  enabled: boolean;
  reason: string;
  /** For a flag with variants (contract §15): the variant's key and value. */
  variant?: string;
  value?: unknown;
}

/** Every flag for one context; reads never throw. */
export interface LocalFlagSet {
  isEnabled(key: string): boolean;
  reason(key: string): string;
  /** The variant's key, or undefined for a flag without variants (or unknown). */
  variant(key: string): string | undefined;
  /**
   * The variant's value when it has the fallback's JSON type (as getValue), else `fallback`
   * (a flag without variants, an unknown flag, no ruleset, a value of another type).
   */
  value<T extends JsonValue | object>(key: string, fallback: T): ValueOf<T>;
  /** What POST /sdk/v1/evaluate's `flags` would hold for this context. */
  allFlags(): Record<string, LocalFlagState>;
}

export interface LocalClientEvents {
  /** A ruleset is held: the first time, and again after recovering from an error. */
  ready: () => void;
  /** A new ruleset replaced the one held. */
  change: (change: { revision: number }) => void;
  /** A request, the stream or a ruleset failed (an unknown format…); the ruleset held is kept. */
  error: (error: GuidonError) => void;
  /** The ruleset is kept but may be out of date (the stream or Guidon is away). */
  stale: () => void;
}

export interface LocalClient {
  /** Resolves once the first fetch is done (or failed): true when a ruleset is held (Guidon's or the bootstrap). Never rejects. */
  ready(): Promise<boolean>;
  /** Evaluates every flag for the context, synchronously. Without a ruleset, every flag reads off. */
  evaluate(context?: GuidonContext): LocalFlagSet;
  /** The ruleset held (to keep as a bootstrap file), or undefined. */
  ruleset(): RulesetDocument | undefined;
  on<E extends keyof LocalClientEvents>(event: E, listener: LocalClientEvents[E]): () => void;
  /** Stops every timer and connection, and sends the last usage report. Never rejects. */
  close(): Promise<void>;
}

/** Reasons for answers Guidon's ruleset did not give. */
export const REASON_NO_RULESET = 'Fallback: no ruleset from Guidon';
export const REASON_UNKNOWN_FLAG = 'Flag not in the ruleset';

/** Three missed heartbeats (15 s each): the connection is dead even if no error says so. */
const STREAM_SILENCE_MS = 45_000;
/** Flags read one by one from a set before the rest are evaluated in one pass. */
const READS_BEFORE_ALL = 4;
/** Flags per usage report (the server takes at most 1,000). */
const FLAGS_PER_REPORT = 1000;

/** A ruleset compiled for evaluation, with what a flag set reads. */
interface Compiled {
  readonly document: RulesetDocument;
  readonly set: CompiledFlagSet;
  readonly indexes: ReadonlyMap<string, number>;
  /** Per flag: its usage counter (shared with the usage map by key). */
  readonly counters: readonly UsageCounter[];
}

interface UsageCounter {
  enabled: number;
  disabled: number;
  /** By variant key; null until one is counted. */
  variants: Map<string, number> | null;
}

/** One flag's counts in a usage report. */
interface FlagUsage {
  enabled: number;
  disabled: number;
  variants?: Record<string, number>;
}

/** Why a document cannot be used, or null. */
function documentProblem(document: unknown): string | null {
  if (typeof document !== 'object' || document === null) return 'the ruleset is not a JSON object';
  const doc = document as Partial<RulesetDocument>;
  if (doc.format !== RULESET_FORMAT) return `ruleset format ${JSON.stringify(doc.format)} is not one this SDK reads (${RULESET_FORMAT}): update @guidon/sdk`;
  if (!Array.isArray(doc.flags) || typeof doc.segments !== 'object' || doc.segments === null || typeof doc.environment !== 'string') return 'the ruleset lacks flags, segments or environment';
  return null;
}

/** Attributes as the engine takes them: null and other types read as absent, as the server's checks would refuse or drop them. */
function toEngineContext(context: GuidonContext | undefined): EvaluationContext {
  if (!context) return {};
  const { user_id, user_email, custom_attributes } = context;
  // The usual context is already what the engine takes: no copy on the hot path.
  if ((user_id === undefined || typeof user_id === 'string') && (user_email === undefined || typeof user_email === 'string') && (custom_attributes === undefined || (typeof custom_attributes === 'object' && custom_attributes !== null))) {
    return context as EvaluationContext;
  }
  return {
    user_id: typeof user_id === 'string' ? user_id : undefined,
    user_email: typeof user_email === 'string' ? user_email : undefined,
    custom_attributes: typeof custom_attributes === 'object' && custom_attributes !== null ? custom_attributes : undefined,
  };
}

/**
 * One context's flags. A flag is evaluated when it is read (the engine's one-flag path, tens of
 * nanoseconds), every flag at once by allFlags(); either way against the ruleset held when
 * evaluate() was called, so the answers of one set never mix two rulesets.
 */
class LocalFlags implements LocalFlagSet {
  /** Every flag's code and variant, once allFlags() asked for them. */
  private all: { codes: Uint8Array; variants: Uint8Array | undefined } | undefined;
  /** Flags already counted for this set (reading a flag twice is one evaluation): a bit each for the first 32, then bytes. */
  private countedLow = 0;
  private countedHigh: Uint8Array | undefined;
  private reads = 0;

  constructor(
    private readonly compiled: Compiled | undefined,
    private readonly context: EvaluationContext,
    private readonly counting: boolean,
  ) {}

  /** The flag's packed answer (engine's codeOf / variantOf), counted for usage; -1 for a flag not in the ruleset. */
  private read(key: string): number {
    const compiled = this.compiled;
    const index = compiled?.indexes.get(key);
    if (index === undefined) return -1;
    const packed = this.packed(index);
    if (this.counting) this.count(index, packed);
    return packed;
  }

  private packed(index: number): number {
    // A set read flag after flag is evaluated in one pass once it is clear several will be read (cheaper per flag).
    if (!this.all && ++this.reads > READS_BEFORE_ALL) this.evaluateAll();
    if (this.all) return this.all.codes[index]! | (((this.all.variants?.[index] ?? NO_VARIANT) + 1) << 8);
    return this.compiled!.set.evaluateFlag(this.context, index);
  }

  private evaluateAll(): void {
    const { set } = this.compiled!;
    const codes = new Uint8Array(set.size);
    const variants = set.hasVariants ? new Uint8Array(set.size) : undefined;
    set.evaluateInto(this.context, codes, variants);
    this.all = { codes, variants };
  }

  private count(index: number, packed: number): void {
    if (index < 32) {
      const bit = 1 << index;
      if (this.countedLow & bit) return;
      this.countedLow |= bit;
    } else {
      const counted = (this.countedHigh ??= new Uint8Array(this.compiled!.set.size));
      if (counted[index]) return;
      counted[index] = 1;
    }
    const counter = this.compiled!.counters[index]!;
    if (enabledOf(packed)) counter.enabled++;
    else counter.disabled++;
    const variant = variantOf(packed);
    if (variant !== NO_VARIANT) {
      const key = this.compiled!.set.variants[index]![variant]!.key;
      const variants = (counter.variants ??= new Map());
      variants.set(key, (variants.get(key) ?? 0) + 1);
    }
  }

  private chosen(index: number, packed: number) {
    const variant = variantOf(packed);
    return variant === NO_VARIANT ? undefined : this.compiled!.set.variants[index]?.[variant];
  }

  isEnabled(key: string): boolean {
    const packed = this.read(key);
    return packed >= 0 && enabledOf(packed);
  }

  reason(key: string): string {
    const packed = this.read(key);
    if (packed >= 0) return OUTCOMES[codeOf(packed)]!.reason;
    return this.compiled ? REASON_UNKNOWN_FLAG : REASON_NO_RULESET;
  }

  variant(key: string): string | undefined {
    const packed = this.read(key);
    return packed < 0 ? undefined : this.chosen(this.compiled!.indexes.get(key)!, packed)?.key;
  }

  value<T extends JsonValue | object>(key: string, fallback: T): ValueOf<T> {
    const packed = this.read(key);
    return valueOr(packed < 0 ? undefined : this.chosen(this.compiled!.indexes.get(key)!, packed), fallback);
  }

  allFlags(): Record<string, LocalFlagState> {
    const flags: Record<string, LocalFlagState> = {};
    const compiled = this.compiled;
    if (!compiled) return flags;
    const { set } = compiled;
    if (!this.all) this.evaluateAll();
    for (let i = 0; i < set.size; i++) {
      const packed = this.packed(i);
      if (this.counting) this.count(i, packed);
      const outcome = OUTCOMES[codeOf(packed)]!;
      const chosen = this.chosen(i, packed);
      flags[set.keys[i]!] = chosen === undefined ? { enabled: outcome.enabled, reason: outcome.reason } : { enabled: outcome.enabled, reason: outcome.reason, variant: chosen.key, value: chosen.value };
    }
    return flags;
  }
}

const NO_RULESET_FLAGS = new LocalFlags(undefined, {}, false);

/** Reads a file synchronously where Node's fs is at hand (not in browsers, where local mode has no place). */
function readFileSync(path: string): string {
  const getBuiltin = (globalThis as { process?: { getBuiltinModule?: (id: string) => unknown } }).process?.getBuiltinModule;
  const fs = getBuiltin?.('node:fs') as { readFileSync(path: string, encoding: 'utf8'): string } | undefined;
  if (!fs) throw new Error('bootstrapFile needs Node.js 20.16 or later (process.getBuiltinModule)');
  return fs.readFileSync(path, 'utf8');
}

class Local implements LocalClient {
  private readonly baseUrl: string;
  private readonly fetchImpl: typeof fetch;
  private readonly timeoutMs: number;
  private readonly pollIntervalMs: number;
  private readonly listeners: { [E in keyof LocalClientEvents]: Set<LocalClientEvents[E]> } = { ready: new Set(), change: new Set(), error: new Set(), stale: new Set() };
  private compiled: Compiled | undefined;
  private etag: string | undefined;
  private healthy = false;
  private closed: Promise<void> | undefined;
  private failures = 0;
  private firstFetch: Promise<boolean>;
  /** Fetches the ruleset (coalescing overlapping calls); resolves whether it is current. */
  private readonly refresh = coalesced(() => this.fetchOnce(), () => Boolean(this.closed));
  private pollTimer: ReturnType<typeof setTimeout> | undefined;
  private usageTimer: ReturnType<typeof setInterval> | undefined;
  private streamAbort: AbortController | undefined;
  private streamOpen = false;
  private lastEventId: string | undefined;
  private readonly inFlight = new Set<AbortController>();
  /** Usage since the last report, by flag key: one entry per flag of the rulesets held, so bounded whatever the traffic. */
  private usage = new Map<string, UsageCounter>();
  private usageSince = Date.now();
  /** Whether flag sets count their reads for usage reports. */
  private readonly counting: boolean;

  constructor(private readonly options: LocalClientOptions) {
    this.baseUrl = String(options.baseUrl ?? '').replace(/\/+$/, '');
    this.fetchImpl = options.fetch ?? ((input, init) => globalThis.fetch(input, init));
    this.timeoutMs = options.timeoutMs ?? 5000;
    this.pollIntervalMs = options.pollIntervalMs ?? 30_000;
    this.counting = options.sendUsage !== false;
    this.bootstrap();
    this.firstFetch = this.refresh().then(() => this.compiled !== undefined);
    if (options.stream !== false) void this.streamLoop();
    else this.schedulePoll();
    if (this.counting) {
      this.usageTimer = setInterval(() => void this.sendUsage(), options.usageIntervalMs ?? 10_000);
      (this.usageTimer as { unref?: () => void }).unref?.();
    }
  }

  ready(): Promise<boolean> {
    return this.firstFetch;
  }

  ruleset(): RulesetDocument | undefined {
    return this.compiled?.document;
  }

  evaluate(context?: GuidonContext): LocalFlagSet {
    const compiled = this.compiled;
    if (!compiled) return NO_RULESET_FLAGS;
    return new LocalFlags(compiled, toEngineContext(context), this.counting);
  }

  on<E extends keyof LocalClientEvents>(event: E, listener: LocalClientEvents[E]): () => void {
    const listeners = this.listeners[event] as Set<LocalClientEvents[E]> | undefined;
    listeners?.add(listener);
    return () => listeners?.delete(listener);
  }

  close(): Promise<void> {
    this.closed ??= (async () => {
      clearTimeout(this.pollTimer);
      clearInterval(this.usageTimer);
      this.streamAbort?.abort();
      for (const controller of this.inFlight) controller.abort();
      this.inFlight.clear();
      if (this.counting) await this.sendUsage(true);
    })();
    return this.closed;
  }

  // ---- the ruleset -------------------------------------------------------------------------

  private emit<E extends keyof LocalClientEvents>(event: E, ...args: Parameters<LocalClientEvents[E]>): void {
    if (this.closed) return;
    for (const listener of [...this.listeners[event]]) {
      try {
        (listener as (...a: Parameters<LocalClientEvents[E]>) => void)(...args);
      } catch {
        // A listener's error is the application's own; it must not stop the client.
      }
    }
  }

  private bootstrap(): void {
    const { bootstrap, bootstrapFile } = this.options;
    try {
      let document: unknown = bootstrap;
      if (document === undefined && bootstrapFile !== undefined) document = readFileSync(bootstrapFile);
      if (document === undefined) return;
      if (typeof document === 'string') document = JSON.parse(document);
      const problem = this.hold(document, undefined);
      if (problem) this.emitLater(new GuidonError(`Bootstrap ruleset refused: ${problem}`, 'ruleset'));
    } catch (error) {
      this.emitLater(new GuidonError(`Bootstrap ruleset unreadable: ${(error as Error)?.message ?? error}`, 'ruleset'));
    }
  }

  /** Errors found in the constructor are emitted once listeners had a chance to subscribe. */
  private emitLater(error: GuidonError): void {
    queueMicrotask(() => this.emit('error', error));
  }

  /** Compiles and holds a document; returns why it was refused (the previous one is kept), or null. */
  private hold(document: unknown, etag: string | undefined): string | null {
    const problem = documentProblem(document);
    if (problem) return problem;
    const doc = document as RulesetDocument;
    let set: CompiledFlagSet;
    try {
      set = compileFlagSet(doc.flags, { environment: doc.environment, segments: new Map(Object.entries(doc.segments)) });
    } catch (error) {
      return `the ruleset does not compile: ${(error as Error)?.message ?? error}`;
    }
    const counters = set.keys.map((key) => this.counterFor(key));
    const previous = this.compiled;
    this.compiled = { document: doc, set, indexes: new Map(set.keys.map((key, i) => [key, i])), counters };
    this.etag = etag;
    if (previous && previous.document.revision !== doc.revision) this.emit('change', { revision: doc.revision });
    return null;
  }

  /** The usage counter of a flag key (one per key: a new ruleset goes on counting where the last left off). */
  private counterFor(key: string): UsageCounter {
    let counter = this.usage.get(key);
    if (!counter) this.usage.set(key, (counter = { enabled: 0, disabled: 0, variants: null }));
    return counter;
  }

  private headers(extra: Record<string, string> = {}): Record<string, string> {
    return { authorization: `Bearer ${this.options.apiToken}`, ...extra };
  }

  private query(): string {
    const project = this.options.project ? `&project=${encodeURIComponent(this.options.project)}` : '';
    return `environment=${encodeURIComponent(this.options.environment)}${project}`;
  }

  private async fetchOnce(): Promise<boolean> {
    const controller = new AbortController();
    this.inFlight.add(controller);
    const timer = setTimeout(() => controller.abort(), this.timeoutMs);
    let error: GuidonError | undefined;
    try {
      const response = await this.fetchImpl(`${this.baseUrl}/sdk/v1/ruleset?${this.query()}`, {
        headers: this.headers(this.etag && this.compiled ? { 'if-none-match': this.etag } : {}),
        signal: controller.signal,
      });
      if (response.status === 200) {
        const problem = this.hold(await response.json(), response.headers.get('etag') ?? undefined);
        if (problem) error = new GuidonError(`Ruleset refused: ${problem}`, 'ruleset');
      } else if (response.status !== 304) {
        const text = await response.text().catch(() => '');
        let message = `Guidon answered ${response.status}`;
        try {
          message += `: ${JSON.parse(text).message}`;
        } catch {
          // not JSON: the status says enough
        }
        error = new GuidonError(message, 'http', response.status);
      }
    } catch (caught) {
      if (this.closed) return false;
      error = controller.signal.aborted
        ? new GuidonError(`No answer from Guidon within ${this.timeoutMs} ms`, 'timeout')
        : new GuidonError(`Could not reach Guidon: ${(caught as Error)?.message ?? caught}`, 'network');
    } finally {
      clearTimeout(timer);
      this.inFlight.delete(controller);
    }
    if (this.closed) return false;
    if (error) {
      this.failures++;
      const wasHealthy = this.healthy;
      this.healthy = false;
      this.emit('error', error);
      if (wasHealthy) this.emit('stale');
      return false;
    }
    this.failures = 0;
    if (!this.healthy) {
      this.healthy = true;
      this.emit('ready');
    }
    return true;
  }

  // ---- keeping up with changes -------------------------------------------------------------

  private schedulePoll(): void {
    if (this.closed || this.pollTimer !== undefined) return;
    const delay = this.failures > 0 ? Math.min(backoffMs(this.failures), this.pollIntervalMs) : this.pollIntervalMs;
    this.pollTimer = setTimeout(() => {
      this.pollTimer = undefined;
      void this.refresh().finally(() => {
        if (this.options.stream === false || !this.streamOpen) this.schedulePoll();
      });
    }, delay);
    (this.pollTimer as { unref?: () => void }).unref?.();
  }

  /** Follows GET /sdk/v1/stream with the token; while it is down, polls, and reconnects with backoff. */
  private async streamLoop(): Promise<void> {
    let attempt = 0;
    let wasDown = false;
    while (!this.closed) {
      const controller = new AbortController();
      this.streamAbort = controller;
      let silence = setTimeout(() => controller.abort(), this.timeoutMs);
      let error: GuidonError | undefined;
      try {
        const headers = this.headers({ accept: 'text/event-stream' });
        if (this.lastEventId !== undefined) headers['last-event-id'] = this.lastEventId;
        const response = await this.fetchImpl(`${this.baseUrl}/sdk/v1/stream?${this.query()}`, { headers, signal: controller.signal });
        if (response.status !== 200 || !response.body) {
          await response.body?.cancel().catch(() => undefined);
          throw new GuidonError(`Guidon refused the stream: ${response.status}`, 'stream', response.status);
        }
        attempt = 0;
        this.streamOpen = true;
        clearTimeout(this.pollTimer);
        this.pollTimer = undefined;
        // Changes made while the stream was down: one conditional request catches up.
        if (wasDown) void this.refresh();
        wasDown = false;
        const rearm = () => {
          clearTimeout(silence);
          silence = setTimeout(() => controller.abort(), STREAM_SILENCE_MS);
        };
        rearm();
        await readSse(
          response.body,
          (message) => {
            if (message.id !== undefined) this.lastEventId = message.id;
            if (message.event === 'message' && message.data.includes('refetchRuleset')) void this.refresh();
          },
          rearm,
        );
        error = new GuidonError('The stream ended', 'stream');
      } catch (caught) {
        if (this.closed) break;
        error = caught instanceof GuidonError ? caught : new GuidonError(`The stream failed: ${(caught as Error)?.message ?? caught}`, 'stream');
      } finally {
        clearTimeout(silence);
        this.streamOpen = false;
      }
      if (this.closed) break;
      if (!wasDown) {
        wasDown = true;
        this.emit('error', error);
        if (this.healthy) this.emit('stale');
      }
      this.schedulePoll();
      await new Promise<void>((resolve) => {
        const wake = new AbortController(); // close() ends the wait through streamAbort
        this.streamAbort = wake;
        const timer = setTimeout(resolve, backoffMs(attempt++));
        wake.signal.addEventListener('abort', () => (clearTimeout(timer), resolve()), { once: true });
      });
    }
  }

  // ---- usage -------------------------------------------------------------------------------

  /** Takes the counts since the last report, leaving the counters at zero (and dropping those of flags no longer held). */
  private takeUsage(): Record<string, FlagUsage> {
    const held = this.compiled?.indexes;
    const flags: Record<string, FlagUsage> = {};
    for (const [key, counter] of this.usage) {
      if (counter.enabled > 0 || counter.disabled > 0 || (counter.variants?.size ?? 0) > 0) {
        const report: FlagUsage = { enabled: counter.enabled, disabled: counter.disabled };
        if (counter.variants && counter.variants.size > 0) report.variants = Object.fromEntries(counter.variants);
        flags[key] = report;
        counter.enabled = 0;
        counter.disabled = 0;
        counter.variants = null;
      }
      if (!held?.has(key)) this.usage.delete(key);
    }
    return flags;
  }

  /** POST /sdk/v1/usage, at most 1,000 flags a report. Never throws; a report Guidon could not have counted (refused, 429, 5xx, no connection) is added back to the next one. */
  private async sendUsage(final = false): Promise<void> {
    const startedAt = new Date(this.usageSince).toISOString();
    this.usageSince = Date.now();
    const flags = this.takeUsage();
    const keys = Object.keys(flags);
    if (keys.length === 0) return;
    const endedAt = new Date().toISOString();
    for (let start = 0; start < keys.length; start += FLAGS_PER_REPORT) {
      const part = Object.fromEntries(keys.slice(start, start + FLAGS_PER_REPORT).map((key) => [key, flags[key]!]));
      const controller = new AbortController();
      const timer = setTimeout(() => controller.abort(), this.timeoutMs);
      if (!final) this.inFlight.add(controller);
      let sent = false;
      try {
        const response = await this.fetchImpl(`${this.baseUrl}/sdk/v1/usage${this.options.project ? `?project=${encodeURIComponent(this.options.project)}` : ''}`, {
          method: 'POST',
          headers: this.headers({ 'content-type': 'application/json' }),
          body: JSON.stringify({ environment: this.options.environment, started_at: startedAt, ended_at: endedAt, flags: part }),
          signal: controller.signal,
        });
        await response.body?.cancel().catch(() => undefined);
        sent = response.status === 202 || (response.status >= 400 && response.status < 500 && response.status !== 429);
        if (response.status !== 202) this.emit('error', new GuidonError(`Guidon refused a usage report: ${response.status}`, 'http', response.status));
      } catch (error) {
        // A timeout may have been counted: not sent again. A connection that failed was not.
        sent = controller.signal.aborted;
        this.emit('error', new GuidonError(`Could not send usage: ${(error as Error)?.message ?? error}`, 'network'));
      } finally {
        clearTimeout(timer);
        this.inFlight.delete(controller);
      }
      if (!sent && !final) this.addBack(part);
    }
  }

  private addBack(flags: Record<string, FlagUsage>): void {
    for (const [key, counts] of Object.entries(flags)) {
      const counter = this.usage.get(key);
      if (!counter) continue; // no longer held: dropped, as the server would ignore it
      counter.enabled += counts.enabled;
      counter.disabled += counts.disabled;
      for (const [variant, n] of Object.entries(counts.variants ?? {})) {
        const variants = (counter.variants ??= new Map());
        variants.set(variant, (variants.get(variant) ?? 0) + n);
      }
    }
  }
}

export function createLocalClient(options: LocalClientOptions): LocalClient {
  return new Local(options);
}
