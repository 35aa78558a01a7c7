/**
 * The remote client (docs/sdk.md): Guidon evaluates, the client keeps the answer for its user
 * (and a bounded cache of answers for other contexts), the bootstrap values until then and when
 * Guidon is away, and the last answer across page loads. Requests and the change stream are the
 * transport's (transport.ts).
 */
import { Emitter } from './emitter.js';
import { GuidonError } from './errors.js';
import { Outbox, SeenExposures, unitOf, type EventStats, type ExperimentOptions, type SeenArms } from './exposures.js';
import { Lru } from './lru.js';
import type { FlagState, Flags, GuidonContext, JsonValue, ValueOf } from './model.js';
import { REASON_BOOTSTRAP, REASON_FALLBACK, REASON_NOT_FOUND } from './reasons.js';
import { Follower, Transport } from './transport.js';
import { sameVariant, valueOr, variantOf } from './values.js';

export interface ClientOptions extends ExperimentOptions {
  /** Where Guidon runs, e.g. https://flags.example.com */
  baseUrl: string;
  /** The project's SDK key (sdk_…). */
  sdkKey: string;
  /** Environment key: production, staging, … */
  environment: string;
  /** The user this client evaluates for; change it with identify(). */
  context?: GuidonContext;
  /** Values to use before the first answer and whenever Guidon cannot be reached (else false). */
  bootstrap?: Record<string, boolean>;
  /** Follow changes over Server-Sent Events (default true); false polls instead. */
  stream?: boolean;
  /** Polling interval when not streaming, or while the stream is down (default 30 s). */
  pollIntervalMs?: number;
  /** Per request (default 5 s). */
  timeoutMs?: number;
  /** On an error, keep the last set Guidon answered instead of falling back (default false). */
  keepLastKnownOnError?: boolean;
  /** forContext's cache: at most `max` contexts (default 1000), each trusted for `ttlMs` (default 60 s) unless a change arrives first. */
  contextCache?: { max?: number; ttlMs?: number };
  /** Where the last answer is kept across page loads (default: localStorage when there is one); false for none. */
  storage?: Pick<Storage, 'getItem' | 'setItem'> | false;
  /** A fetch of your own (default: the global one). */
  fetch?: typeof fetch;
}

/** Flags for one context, as forContext answers them. */
export interface FlagSet {
  isEnabled(key: string): boolean;
  reason(key: string): string;
  /** The value the flag serves when it has variants and the value is of the default's JSON type; else the default. Never throws. */
  getValue<T extends JsonValue | object>(key: string, defaultValue: T): ValueOf<T>;
  /** The key of the variant the flag serves; undefined for a flag without variants or without an answer. */
  getVariant(key: string): string | undefined;
  /** One flag as isEnabled, reason, getVariant read it, with the variant's value as Guidon gave it. */
  flag(key: string): FlagState;
  allFlags(): Flags;
}

export interface ClientEvents {
  /** The client has current flags from Guidon: the first time, and again after it was stale or failed. */
  ready: () => void;
  /** Flags whose value or reason changed. */
  change: (change: { keys: string[] }) => void;
  /** A request or the stream failed; flags read as the fallbacks say (or the last known set). */
  error: (error: GuidonError) => void;
  /** Flags are kept but may be out of date (the stream broke, or an error with keepLastKnownOnError). */
  stale: () => void;
}

export interface GuidonClient extends FlagSet {
  /** Resolves once the first answer (or failure) is in: true when the client has flags from Guidon. Never rejects. */
  ready(): Promise<boolean>;
  /** Evaluates for another user; resolves like ready(). */
  identify(context: GuidonContext): Promise<boolean>;
  /** Flags for a per-request context, from a bounded cache that changes invalidate (server-side use). */
  forContext(context: GuidonContext): Promise<FlagSet>;
  on<E extends keyof ClientEvents>(event: E, listener: ClientEvents[E]): () => void;
  /** Records an event of a unit (the context's user_id, else its email; default: the client's context) for experiments: `value` a finite number (absent: 1). Never throws. */
  track(name: string, context?: GuidonContext, details?: { value?: number }): void;
  /** What was sent of the exposures and events, dropped, and waits. */
  eventStats(): EventStats;
  /** Stops every timer and connection, and sends the exposures and events that wait. Never rejects. */
  close(): Promise<void>;
}

/** One version of a flag as this client holds it: the arms recorded by unit, and the numbers given to its variants' keys for that. */
interface FlagVersion {
  readonly arms: SeenArms;
  readonly numbers: Map<string, number>;
}

type Evaluation = { kind: 'flags'; flags: Flags; etag: string | undefined } | { kind: 'not-modified' } | { kind: 'failed'; error: GuidonError };

/** Asks evaluate for each flag's kind and unmet prerequisite besides its reason (docs/api.md): the providers need not read the reason's text, nor ask again. */
const KINDS = Object.freeze({ 'x-guidon-answer': 'kind' });
/** The longest X-Guidon-Context the client sends (the server takes 8 KiB): a longer context's stream carries no answers. */
const MAX_CONTEXT_HEADER = 8192;

/** A context as evaluate's body and X-Guidon-Context send it. */
const sentContext = (context: GuidonContext) => ({ user_id: context.user_id ?? null, user_email: context.user_email ?? null, ...(context.custom_attributes ? { custom_attributes: context.custom_attributes } : {}) });

const contextKey = (context: GuidonContext) =>
  JSON.stringify([context.user_id ?? null, context.user_email ?? null, context.custom_attributes ? Object.entries(context.custom_attributes).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)) : null]);

function changedKeys(before: Flags, after: Flags): string[] {
  const keys: string[] = [];
  for (const key of Object.keys(after)) if (before[key]?.enabled !== after[key]!.enabled || before[key]?.reason !== after[key]!.reason || !sameVariant(before[key], after[key])) keys.push(key);
  for (const key of Object.keys(before)) if (!(key in after)) keys.push(key);
  return keys;
}

function defaultStorage(): Pick<Storage, 'getItem' | 'setItem'> | undefined {
  try {
    return typeof localStorage === 'undefined' ? undefined : localStorage;
  } catch {
    return undefined; // a browser that refuses storage access
  }
}

class RemoteClient implements GuidonClient {
  private readonly transport: Transport;
  private readonly follower: Follower;
  private readonly events = new Emitter<ClientEvents>();
  private readonly fallback: Flags = {};
  private readonly storage: Pick<Storage, 'getItem' | 'setItem'> | undefined;
  private readonly storagePrefix: string;
  private context: GuidonContext;
  private flags: Flags;
  /** Where `flags` came from: only a set from Guidon (or kept from it) is sent back with If-None-Match. */
  private source: 'fallback' | 'storage' | 'server' = 'fallback';
  private etag: string | undefined;
  private closed = false;
  private readonly firstAnswer: Promise<boolean>;
  private readonly contexts: Lru<string, { flags: Flags | undefined; etag: string | undefined; freshUntil: number; pending?: Promise<FlagSet> }>;
  private readonly contextTtlMs: number;
  private readonly outbox: Outbox;
  /** undefined with `sendExposures: false`. */
  private readonly seen: SeenExposures | undefined;
  /** By flag key, its current version's exposures; deleted when an answer for the flag changes (a new version, recorded again). */
  private readonly versions = new Map<string, FlagVersion>();
  /** The client's context's unit (exposures.ts). */
  private unit: string | undefined;
  private closing: Promise<void> | undefined;
  /** The context the open stream named in X-Guidon-Context: its messages' answers are for it. */
  private streamContext: GuidonContext | undefined;

  constructor(private readonly options: ClientOptions) {
    this.transport = new Transport({ baseUrl: options.baseUrl, headers: { 'x-sdk-key': options.sdkKey }, timeoutMs: options.timeoutMs, fetch: options.fetch });
    const pollIntervalMs = options.pollIntervalMs ?? 30_000;
    this.follower = new Follower(this.transport, {
      streamPath: `/sdk/v1/stream?environment=${encodeURIComponent(options.environment)}`,
      refetch: 'refetchEvaluation',
      stream: options.stream !== false,
      streamHeaders: () => this.streamHeaders(),
      handled: (data) => this.takeAnswer(data),
      pollIntervalMs,
      fetchOnce: () => this.fetchOwn(),
      holds: () => this.source !== 'fallback',
      emit: (event, ...args) => this.events.emit(event, ...args),
      onChange: () => {
        for (const entry of this.contexts.values()) entry.freshUntil = 0;
      },
      // Until the stream is back changes may be missed: cached contexts are trusted no longer than a poll.
      onOutage: () => {
        for (const entry of this.contexts.values()) entry.freshUntil = Math.min(entry.freshUntil, Date.now() + pollIntervalMs);
      },
    });
    for (const [key, enabled] of Object.entries(options.bootstrap ?? {})) this.fallback[key] = { enabled: enabled === true, reason: REASON_BOOTSTRAP };
    this.storage = options.storage === false ? undefined : (options.storage ?? defaultStorage());
    this.storagePrefix = `guidon:${String(options.baseUrl ?? '').replace(/\/+$/, '')}:${options.environment}:`;
    this.contexts = new Lru(options.contextCache?.max ?? 1000);
    this.contextTtlMs = options.contextCache?.ttlMs ?? 60_000;
    this.context = { ...options.context };
    // Its own transport: a 429 of the intake holds back exposures and events, not evaluations.
    this.outbox = new Outbox(new Transport({ baseUrl: options.baseUrl, headers: { 'x-sdk-key': options.sdkKey }, timeoutMs: options.timeoutMs, fetch: options.fetch }), {
      ...options,
      path: '/sdk/v1/events',
      onError: (error) => this.events.emit('error', error),
    });
    this.seen = options.sendExposures === false ? undefined : new SeenExposures(options.maxSeenExposures ?? 50_000);
    this.unit = unitOf(this.context);
    this.flags = { ...this.fallback };
    this.restoreStored();
    this.firstAnswer = this.follower.refresh();
    this.follower.start();
  }

  ready(): Promise<boolean> {
    return this.firstAnswer;
  }

  isEnabled(key: string): boolean {
    return this.flag(key).enabled;
  }

  reason(key: string): string {
    return this.flag(key).reason;
  }

  getValue<T extends JsonValue | object>(key: string, defaultValue: T): ValueOf<T> {
    return valueOr(this.usedFlag(key), defaultValue);
  }

  getVariant(key: string): string | undefined {
    return variantOf(this.usedFlag(key));
  }

  flag(key: string): FlagState {
    this.usedFlag(key);
    return this.flagState(this.flags, key, this.source !== 'fallback');
  }

  track(name: string, context?: GuidonContext, details?: { value?: number }): void {
    this.outbox.track(name, context ?? this.context, details);
  }

  eventStats(): EventStats {
    return this.outbox.eventStats();
  }

  allFlags(): Flags {
    return { ...this.flags };
  }

  identify(context: GuidonContext): Promise<boolean> {
    // The current flags stay until the new user's arrive (no flicker); the request is unconditional.
    this.context = { ...context };
    this.unit = unitOf(this.context);
    this.etag = undefined;
    this.restoreStored();
    this.follower.reopenStream(); // its messages answer for the new context from now on
    return this.follower.refresh();
  }

  on<E extends keyof ClientEvents>(event: E, listener: ClientEvents[E]): () => void {
    return this.events.on(event, listener);
  }

  close(): Promise<void> {
    this.closing ??= (async () => {
      this.closed = true;
      this.events.silence();
      this.follower.close();
      this.transport.close();
      this.contexts.clear();
      await this.outbox.close();
    })();
    return this.closing;
  }

  async forContext(context: GuidonContext): Promise<FlagSet> {
    const key = contextKey(context);
    let entry = this.contexts.get(key);
    if (entry?.flags && entry.freshUntil > Date.now()) return this.flagSet(entry.flags, true, context);
    if (entry?.pending) return entry.pending;
    if (!entry) this.contexts.set(key, (entry = { flags: undefined, etag: undefined, freshUntil: 0 }));
    const cached = entry;
    cached.pending = (async () => {
      const answer = await this.evaluate(context, cached.flags ? cached.etag : undefined);
      if (answer.kind === 'flags') {
        if (cached.flags) this.newVersions(changedKeys(cached.flags, answer.flags));
        Object.assign(cached, { flags: answer.flags, etag: answer.etag, freshUntil: Date.now() + this.contextTtlMs });
      }
      else if (answer.kind === 'not-modified') cached.freshUntil = Date.now() + this.contextTtlMs;
      else {
        this.events.emit('error', answer.error);
        if (!this.options.keepLastKnownOnError) cached.flags = undefined;
        return cached.flags ? this.flagSet(cached.flags, true, context) : this.flagSet(this.fallback, false, context);
      }
      return this.flagSet(cached.flags!, true, context);
    })().finally(() => (cached.pending = undefined));
    return cached.pending;
  }

  // ---- answers ---------------------------------------------------------------------------

  /** A flag of a set Guidon answered, else (no answer) its bootstrap value, else false. */
  private flagState(flags: Flags, key: string, fromGuidon: boolean): FlagState {
    const state = Object.hasOwn(flags, key) ? flags[key] : undefined;
    if (state) return state;
    if (fromGuidon) return { enabled: false, reason: REASON_NOT_FOUND };
    return this.fallback[key] ?? { enabled: false, reason: REASON_FALLBACK };
  }

  private flagSet(flags: Flags, fromGuidon: boolean, context: GuidonContext): FlagSet {
    const unit = this.seen ? unitOf(context) : undefined;
    /** A flag the application uses: recorded as an exposure when Guidon answered it. */
    const used = (key: string) => {
      const state = fromGuidon && Object.hasOwn(flags, key) ? flags[key] : undefined;
      if (state && unit !== undefined) this.expose(key, state, unit);
      return state;
    };
    const flag = (key: string) => this.flagState(flags, key, fromGuidon);
    return {
      isEnabled: (key) => (used(key), flag(key).enabled),
      reason: (key) => flag(key).reason,
      getValue: (key, defaultValue) => valueOr(used(key), defaultValue),
      getVariant: (key) => variantOf(used(key)),
      flag: (key) => (used(key), flag(key)),
      allFlags: () => ({ ...flags }),
    };
  }

  /** A flag as Guidon answered it (also kept or stored), for its variant and value; undefined before any answer and for a bootstrap. Recorded as an exposure: the application uses it. */
  private usedFlag(key: string): FlagState | undefined {
    const state = this.source !== 'fallback' && Object.hasOwn(this.flags, key) ? this.flags[key] : undefined;
    if (state && this.unit !== undefined && this.seen) this.expose(key, state, this.unit);
    return state;
  }

  // ---- exposures (exposures.ts) -------------------------------------------------------------

  /** Records the arm a unit was served, once per version of the flag; never throws. */
  private expose(key: string, state: FlagState, unit: string): void {
    if (this.closed || typeof state !== 'object' || state === null) return;
    const variant = typeof state.variant === 'string' ? state.variant : undefined;
    let version = this.versions.get(key);
    if (!version) this.versions.set(key, (version = { arms: new Map(), numbers: new Map() }));
    let arm = state.enabled === true ? 1 : 0;
    if (variant !== undefined) {
      arm = version.numbers.get(variant) ?? version.numbers.size + 2;
      if (arm === version.numbers.size + 2) version.numbers.set(variant, arm);
    }
    if (!this.seen!.first(version.arms, unit, arm)) return;
    this.outbox.exposure(key, unit, variant ?? (state.enabled === true ? 'on' : 'off'), String(state.reason));
  }

  /** Flags whose answer changed: their next reads are a new version's, recorded again. */
  private newVersions(keys: readonly string[]): void {
    for (const key of keys) this.versions.delete(key);
  }

  private setFlags(flags: Flags, source: RemoteClient['source'], etag: string | undefined): void {
    const keys = changedKeys(this.flags, flags);
    if (source !== 'fallback') this.newVersions(keys);
    this.flags = flags;
    this.source = source;
    this.etag = etag;
    if (keys.length > 0) this.events.emit('change', { keys });
  }

  // ---- fetching -----------------------------------------------------------------------------

  /** POST /sdk/v1/evaluate, each flag's answer with its kind (what the OpenFeature providers answer with); never throws. */
  private async evaluate(context: GuidonContext, etag: string | undefined): Promise<Evaluation> {
    const answer = await this.transport.request('/sdk/v1/evaluate', {
      method: 'POST',
      etag,
      headers: KINDS,
      json: { environment: this.options.environment, context: sentContext(context) },
    });
    if (answer.kind !== 'ok') return answer;
    const flags = (answer.body as { flags?: unknown } | undefined)?.flags;
    if (typeof flags !== 'object' || flags === null) return { kind: 'failed', error: new GuidonError(`Guidon answered ${answer.status} without flags`, 'http', answer.status) };
    return { kind: 'flags', flags: flags as Flags, etag: answer.etag };
  }

  /**
   * The stream's headers, as it opens: its messages carry the answer for the client's context
   * (docs/sdk.md, "The answer in the message"), unless the context is too long for a header.
   */
  private streamHeaders(): Record<string, string> {
    const encoded = encodeURIComponent(JSON.stringify(sentContext(this.context)));
    this.streamContext = encoded.length <= MAX_CONTEXT_HEADER ? this.context : undefined;
    return this.streamContext ? { ...KINDS, 'x-guidon-context': encoded } : {};
  }

  /**
   * A change message's answer, taken as a fetch's would be when it was evaluated for the client's
   * context (the one the stream opened with): the whole `answer`, or `answerChanges` (the flags
   * whose answer changed) over the answer held when that is the one `answerFrom` names. False: the
   * client fetches.
   */
  private takeAnswer(data: string): boolean {
    if (this.streamContext !== this.context) return false;
    const message = JSON.parse(data) as { answer?: { flags?: unknown }; answerChanges?: { flags?: unknown }; answerFrom?: unknown; answerEtag?: unknown } | null;
    if (typeof message?.answerEtag !== 'string') return false;
    let flags = message.answer?.flags;
    const changes = message.answerChanges?.flags;
    if (typeof changes === 'object' && changes !== null) flags = message.answerFrom === this.etag && this.etag !== undefined ? { ...this.flags, ...changes } : undefined;
    if (typeof flags !== 'object' || flags === null) return false;
    this.setFlags(flags as Flags, 'server', message.answerEtag);
    this.store(flags as Flags, message.answerEtag);
    return true;
  }

  /** The client's own flags, for the follower; resolves the failure, or undefined. */
  private async fetchOwn(): Promise<GuidonError | undefined> {
    const context = this.context;
    const answer = await this.evaluate(context, this.source === 'fallback' ? undefined : this.etag);
    if (this.closed) return undefined;
    if (context !== this.context) return this.fetchOwn(); // identify() was called meanwhile
    if (answer.kind === 'failed') {
      if (!(this.options.keepLastKnownOnError && this.source !== 'fallback')) this.setFlags({ ...this.fallback }, 'fallback', undefined);
      return answer.error;
    }
    if (answer.kind === 'flags') {
      this.setFlags(answer.flags, 'server', answer.etag);
      this.store(answer.flags, answer.etag);
    } else {
      this.source = 'server';
    }
    return undefined;
  }

  // ---- across page loads (browsers) --------------------------------------------------------

  private storageKey(): string {
    return this.storagePrefix + contextKey(this.context);
  }

  private restoreStored(): void {
    if (!this.storage) return;
    try {
      const stored = JSON.parse(this.storage.getItem(this.storageKey()) ?? 'null') as { flags: Flags; etag?: string } | null;
      if (stored && typeof stored.flags === 'object' && stored.flags !== null) this.setFlags(stored.flags, 'storage', stored.etag);
    } catch {
      // unreadable: start from the fallbacks
    }
  }

  private store(flags: Flags, etag: string | undefined): void {
    try {
      this.storage?.setItem(this.storageKey(), JSON.stringify({ flags, etag }));
    } catch {
      // full or refused: the next load fetches again
    }
  }
}

/** A remote client: call ready() before the first read if you can wait; reads never throw. */
export function createRemoteClient(options: ClientOptions): GuidonClient {
  return new RemoteClient(options);
}
