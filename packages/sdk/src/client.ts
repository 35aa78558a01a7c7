import { Lru } from './lru.js';
import { coalesced } from './coalesce.js';
import { readSse } from './sse.js';
import { createLocalClient, type LocalClient, type LocalClientOptions } from './local.js';
import { sameVariant, valueOr, variantOf, type JsonValue, type ValueOf } from './values.js';

/** Who a flag is evaluated for (Guidon's evaluate context). */
export interface GuidonContext {
  user_id?: string | null;
  user_email?: string | null;
  /** Attributes that conditions can name (contract §14): at most 100, names 1–64 characters, values up to 1,024 characters. */
  custom_attributes?: Record<string, string | number | boolean | null> | null;
}

export interface FlagState {
  enabled: boolean;
  /** Guidon's reason, e.g. "Matched user_id targeting rule"; one of the REASON_* constants for a value Guidon did not give. */
  reason: string;
  /** Only for a flag with variants (contract §15): the key of the variant served. */
  variant?: string;
  /** Only for a flag with variants: the variant's value (any JSON). */
  value?: JsonValue;
}

export type Flags = Record<string, FlagState>;

export interface ClientOptions {
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

/** Why a flag has its value when Guidon did not give it. */
export const REASON_BOOTSTRAP = 'Bootstrap value';
export const REASON_FALLBACK = 'Fallback: no answer from Guidon';
export const REASON_NOT_FOUND = 'Flag not returned by Guidon';

/** What went wrong talking to Guidon; handed to 'error' listeners, never thrown. */
export class GuidonError extends Error {
  constructor(
    message: string,
    readonly kind: 'http' | 'network' | 'timeout' | 'stream' | 'ruleset',
    /** The HTTP status, for kind 'http' (and a stream refused with one). */
    readonly status?: number,
    /** From a 429's Retry-After. */
    readonly retryAfterMs?: number,
  ) {
    super(message);
    this.name = 'GuidonError';
  }
}

/** Flags for one context, as forContext answers them. */
export interface FlagSet {
  isEnabled(key: string): boolean;
  reason(key: string): string;
  /** The value the flag serves when it has variants and the value is of the default's JSON type; else the default. Never throws. */
  getValue<T extends JsonValue | object>(key: string, defaultValue: T): ValueOf<T>;
  /** The key of the variant the flag serves; undefined for a flag without variants or without an answer. */
  getVariant(key: string): string | undefined;
  allFlags(): Flags;
}

export interface ClientEvents {
  /** The client has flags from Guidon: the first time, and again after recovering from an error. */
  ready: () => void;
  /** Flags whose value or reason changed. */
  change: (change: { keys: string[] }) => void;
  /** A request or the stream failed; flags read as the fallbacks say (or the last known set). */
  error: (error: GuidonError) => void;
  /** Flags are kept but may be out of date (the stream is down, or an error with keepLastKnownOnError). */
  stale: () => void;
}

export interface GuidonClient {
  /** Resolves once the first answer (or failure) is in: true when the client has flags from Guidon. Never rejects. */
  ready(): Promise<boolean>;
  isEnabled(key: string): boolean;
  reason(key: string): string;
  /** The value the flag serves when it has variants and the value is of the default's JSON type; else the default. Never throws. */
  getValue<T extends JsonValue | object>(key: string, defaultValue: T): ValueOf<T>;
  /** The key of the variant the flag serves; undefined for a flag without variants or without an answer. */
  getVariant(key: string): string | undefined;
  allFlags(): Flags;
  /** Evaluates for another user; resolves like ready(). */
  identify(context: GuidonContext): Promise<boolean>;
  /** Flags for a per-request context, from a bounded cache that changes invalidate (server-side use). */
  forContext(context: GuidonContext): Promise<FlagSet>;
  on<E extends keyof ClientEvents>(event: E, listener: ClientEvents[E]): () => void;
  /** Stops every timer and connection. */
  close(): void;
}

type Answer = { kind: 'flags'; flags: Flags; etag: string | undefined } | { kind: 'not-modified' } | { kind: 'failed'; error: GuidonError };

const BACKOFF_BASE_MS = 1000;
const BACKOFF_MAX_MS = 30_000;
/** Three missed heartbeats (15 s each): the connection is dead even if no error says so. */
const STREAM_SILENCE_MS = 45_000;

/** Exponential backoff with jitter: between half and all of min(max, base·2^attempt). */
export function backoffMs(attempt: number): number {
  const ceiling = Math.min(BACKOFF_MAX_MS, BACKOFF_BASE_MS * 2 ** Math.min(attempt, 16));
  return ceiling / 2 + Math.random() * (ceiling / 2);
}

function retryAfterMs(header: string | null): number | undefined {
  if (!header) return undefined;
  const seconds = Number(header);
  if (Number.isFinite(seconds)) return Math.max(0, seconds * 1000);
  const date = Date.parse(header);
  return Number.isNaN(date) ? undefined : Math.max(0, date - Date.now());
}

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

class Client implements GuidonClient {
  private readonly baseUrl: string;
  private readonly fetchImpl: typeof fetch;
  private readonly timeoutMs: number;
  private readonly pollIntervalMs: number;
  private readonly fallback: Flags = {};
  private readonly storage: Pick<Storage, 'getItem' | 'setItem'> | undefined;
  private readonly listeners: { [E in keyof ClientEvents]: Set<ClientEvents[E]> } = { ready: new Set(), change: new Set(), error: new Set(), stale: new Set() };

  private context: GuidonContext;
  private flags: Flags;
  /** Where `flags` came from: only a set from Guidon (or kept from it) is sent back with If-None-Match. */
  private source: 'fallback' | 'storage' | 'server' = 'fallback';
  private etag: string | undefined;
  private healthy = false;
  private closed = false;
  private failures = 0;
  /** Set by a 429: no request before then. */
  private notBefore = 0;
  private firstAnswer: Promise<boolean>;
  /** Fetches the client's own flags (coalescing overlapping calls); resolves whether it has flags from Guidon. */
  private readonly refresh = coalesced(() => this.refreshOnce(), () => Boolean(this.closed));
  private pollTimer: ReturnType<typeof setTimeout> | undefined;
  private streamAbort: AbortController | undefined;
  private lastEventId: string | undefined;
  private readonly inFlight = new Set<AbortController>();
  private readonly contexts: Lru<string, { flags: Flags | undefined; etag: string | undefined; freshUntil: number; pending?: Promise<FlagSet> }>;
  private readonly contextTtlMs: number;

  constructor(private readonly options: ClientOptions) {
    this.baseUrl = String(options.baseUrl ?? '').replace(/\/+$/, '');
    this.fetchImpl = options.fetch ?? ((input, init) => globalThis.fetch(input, init));
    this.timeoutMs = options.timeoutMs ?? 5000;
    this.pollIntervalMs = options.pollIntervalMs ?? 30_000;
    for (const [key, enabled] of Object.entries(options.bootstrap ?? {})) this.fallback[key] = { enabled: enabled === true, reason: REASON_BOOTSTRAP };
    this.storage = options.storage === false ? undefined : (options.storage ?? defaultStorage());
    this.contexts = new Lru(options.contextCache?.max ?? 1000);
    this.contextTtlMs = options.contextCache?.ttlMs ?? 60_000;
    this.context = { ...options.context };
    this.flags = { ...this.fallback };
    this.restoreStored();
    this.firstAnswer = this.refresh();
    if (options.stream !== false) void this.streamLoop();
    else this.schedulePoll();
  }

  ready(): Promise<boolean> {
    return this.firstAnswer;
  }

  isEnabled(key: string): boolean {
    return this.flagState(this.flags, key, this.source !== 'fallback').enabled;
  }

  reason(key: string): string {
    return this.flagState(this.flags, key, this.source !== 'fallback').reason;
  }

  getValue<T extends JsonValue | object>(key: string, defaultValue: T): ValueOf<T> {
    return valueOr(this.ownFlag(key), defaultValue);
  }

  getVariant(key: string): string | undefined {
    return variantOf(this.ownFlag(key));
  }

  allFlags(): Flags {
    return { ...this.flags };
  }

  identify(context: GuidonContext): Promise<boolean> {
    // The current flags stay until the new user's arrive (no flicker); the request is unconditional.
    this.context = { ...context };
    this.etag = undefined;
    this.restoreStored();
    return this.refresh();
  }

  on<E extends keyof ClientEvents>(event: E, listener: ClientEvents[E]): () => void {
    const listeners = this.listeners[event] as Set<ClientEvents[E]> | undefined;
    listeners?.add(listener);
    return () => listeners?.delete(listener);
  }

  close(): void {
    this.closed = true;
    clearTimeout(this.pollTimer);
    this.streamAbort?.abort();
    for (const controller of this.inFlight) controller.abort();
    this.inFlight.clear();
    this.contexts.clear();
  }

  async forContext(context: GuidonContext): Promise<FlagSet> {
    const key = contextKey(context);
    let entry = this.contexts.get(key);
    if (entry?.flags && entry.freshUntil > Date.now()) return this.flagSet(entry.flags, true);
    if (entry?.pending) return entry.pending;
    if (!entry) this.contexts.set(key, (entry = { flags: undefined, etag: undefined, freshUntil: 0 }));
    const cached = entry;
    cached.pending = (async () => {
      const answer = await this.evaluate(context, cached.flags ? cached.etag : undefined);
      if (answer.kind === 'flags') Object.assign(cached, { flags: answer.flags, etag: answer.etag, freshUntil: Date.now() + this.contextTtlMs });
      else if (answer.kind === 'not-modified') cached.freshUntil = Date.now() + this.contextTtlMs;
      else {
        this.emit('error', answer.error);
        if (!this.options.keepLastKnownOnError) cached.flags = undefined;
        return cached.flags ? this.flagSet(cached.flags, true) : this.flagSet(this.fallback, false);
      }
      return this.flagSet(cached.flags!, true);
    })().finally(() => (cached.pending = undefined));
    return cached.pending;
  }

  // ---- answers ---------------------------------------------------------------------------

  /** A flag of a set Guidon answered, else (no answer) its bootstrap value, else false. */
  private flagState(flags: Flags, key: string, fromGuidon: boolean): FlagState {
    const state = flags[key];
    if (state) return state;
    if (fromGuidon) return { enabled: false, reason: REASON_NOT_FOUND };
    return this.fallback[key] ?? { enabled: false, reason: REASON_FALLBACK };
  }

  private flagSet(flags: Flags, fromGuidon: boolean): FlagSet {
    const own = (key: string) => (fromGuidon && Object.hasOwn(flags, key) ? flags[key] : undefined);
    return {
      isEnabled: (key) => this.flagState(flags, key, fromGuidon).enabled,
      reason: (key) => this.flagState(flags, key, fromGuidon).reason,
      getValue: (key, defaultValue) => valueOr(own(key), defaultValue),
      getVariant: (key) => variantOf(own(key)),
      allFlags: () => ({ ...flags }),
    };
  }

  /** A flag as Guidon answered it (also kept or stored), for its variant and value; undefined before any answer and for a bootstrap. */
  private ownFlag(key: string): FlagState | undefined {
    return this.source !== 'fallback' && Object.hasOwn(this.flags, key) ? this.flags[key] : undefined;
  }

  private emit<E extends keyof ClientEvents>(event: E, ...args: Parameters<ClientEvents[E]>): void {
    if (this.closed) return;
    for (const listener of [...this.listeners[event]]) {
      try {
        (listener as (...a: Parameters<ClientEvents[E]>) => void)(...args);
      } catch {
        // A listener's error is the application's own; it must not stop the client.
      }
    }
  }

  private setFlags(flags: Flags, source: Client['source'], etag: string | undefined): void {
    const keys = changedKeys(this.flags, flags);
    this.flags = flags;
    this.source = source;
    this.etag = etag;
    if (keys.length > 0) this.emit('change', { keys });
  }

  // ---- one evaluate request --------------------------------------------------------------

  /** POST /sdk/v1/evaluate with a timeout; never throws. */
  private async evaluate(context: GuidonContext, etag: string | undefined): Promise<Answer> {
    const wait = this.notBefore - Date.now();
    if (wait > 0) return { kind: 'failed', error: new GuidonError('Rate limited by Guidon; waiting for Retry-After', 'http', 429, wait) };
    const controller = new AbortController();
    this.inFlight.add(controller);
    const timer = setTimeout(() => controller.abort(), this.timeoutMs);
    try {
      const headers: Record<string, string> = { 'content-type': 'application/json', 'x-sdk-key': this.options.sdkKey };
      if (etag) headers['if-none-match'] = etag;
      const response = await this.fetchImpl(`${this.baseUrl}/sdk/v1/evaluate`, {
        method: 'POST',
        headers,
        body: JSON.stringify({ environment: this.options.environment, context: { user_id: context.user_id ?? null, user_email: context.user_email ?? null, ...(context.custom_attributes ? { custom_attributes: context.custom_attributes } : {}) } }),
        signal: controller.signal,
      });
      if (response.status === 304) return { kind: 'not-modified' };
      if (response.status !== 200) {
        const retryAfter = response.status === 429 ? retryAfterMs(response.headers.get('retry-after')) : undefined;
        if (retryAfter !== undefined) this.notBefore = Date.now() + retryAfter;
        const text = await response.text().catch(() => '');
        let message = `Guidon answered ${response.status}`;
        try {
          message += `: ${JSON.parse(text).message}`;
        } catch {
          // not JSON: the status says enough
        }
        return { kind: 'failed', error: new GuidonError(message, 'http', response.status, retryAfter) };
      }
      const body = (await response.json()) as { flags?: Flags };
      if (!body || typeof body.flags !== 'object' || body.flags === null) return { kind: 'failed', error: new GuidonError('Guidon answered 200 without flags', 'http', 200) };
      return { kind: 'flags', flags: body.flags, etag: response.headers.get('etag') ?? undefined };
    } catch (error) {
      if (controller.signal.aborted && !this.closed) return { kind: 'failed', error: new GuidonError(`No answer from Guidon within ${this.timeoutMs} ms`, 'timeout') };
      return { kind: 'failed', error: new GuidonError(`Could not reach Guidon: ${(error as Error)?.message ?? error}`, 'network') };
    } finally {
      clearTimeout(timer);
      this.inFlight.delete(controller);
    }
  }

  private async refreshOnce(): Promise<boolean> {
    const context = this.context;
    const answer = await this.evaluate(context, this.source === 'fallback' ? undefined : this.etag);
    if (this.closed) return false;
    if (context !== this.context) return this.refreshOnce(); // identify() was called meanwhile
    if (answer.kind === 'failed') {
      this.failures++;
      const keep = this.options.keepLastKnownOnError && this.source !== 'fallback';
      if (!keep) this.setFlags({ ...this.fallback }, 'fallback', undefined);
      const wasHealthy = this.healthy;
      this.healthy = false;
      this.emit('error', answer.error);
      if (keep && wasHealthy) this.emit('stale');
      return false;
    }
    this.failures = 0;
    if (answer.kind === 'flags') {
      this.setFlags(answer.flags, 'server', answer.etag);
      this.store(answer.flags, answer.etag);
    } else {
      this.source = 'server';
    }
    if (!this.healthy) {
      this.healthy = true;
      this.emit('ready');
    }
    return true;
  }

  // ---- keeping up with changes -------------------------------------------------------------

  private schedulePoll(): void {
    if (this.closed || this.pollTimer !== undefined) return;
    const delay = Math.max(this.notBefore - Date.now(), this.failures > 0 ? Math.min(backoffMs(this.failures), this.pollIntervalMs) : this.pollIntervalMs);
    this.pollTimer = setTimeout(() => {
      this.pollTimer = undefined;
      void this.refresh().finally(() => {
        if (this.options.stream === false || !this.streamOpen) this.schedulePoll();
      });
    }, delay);
  }

  private streamOpen = false;

  /** Follows GET /sdk/v1/stream; while it is down, polls, and reconnects with backoff. */
  private async streamLoop(): Promise<void> {
    let attempt = 0;
    let wasDown = false;
    while (!this.closed) {
      const controller = new AbortController();
      this.streamAbort = controller;
      let silence = setTimeout(() => controller.abort(), this.timeoutMs);
      let error: GuidonError | undefined;
      try {
        const headers: Record<string, string> = { accept: 'text/event-stream', 'x-sdk-key': this.options.sdkKey };
        if (this.lastEventId !== undefined) headers['last-event-id'] = this.lastEventId;
        const url = `${this.baseUrl}/sdk/v1/stream?environment=${encodeURIComponent(this.options.environment)}`;
        const response = await this.fetchImpl(url, { headers, signal: controller.signal });
        if (response.status !== 200 || !response.body) {
          const retryAfter = response.status === 429 ? retryAfterMs(response.headers.get('retry-after')) : undefined;
          if (retryAfter !== undefined) this.notBefore = Date.now() + retryAfter;
          await response.body?.cancel().catch(() => undefined);
          throw new GuidonError(`Guidon refused the stream: ${response.status}`, 'stream', response.status, retryAfter);
        }
        attempt = 0;
        this.streamOpen = true;
        clearTimeout(this.pollTimer);
        this.pollTimer = undefined;
        // Changes made while the stream was down: one conditional request catches up.
        if (wasDown) {
          for (const entry of this.contexts.values()) entry.freshUntil = 0;
          void this.refresh();
        }
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
            if (message.event !== 'message' || !message.data.includes('refetchEvaluation')) return;
            for (const entry of this.contexts.values()) entry.freshUntil = 0;
            void this.refresh();
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
      // Until it is back: changes may be missed, so poll, and say so.
      for (const entry of this.contexts.values()) entry.freshUntil = Math.min(entry.freshUntil, Date.now() + this.pollIntervalMs);
      if (!wasDown) {
        wasDown = true;
        this.emit('error', error);
        if (this.healthy) this.emit('stale');
      }
      this.schedulePoll();
      const delay = Math.max(backoffMs(attempt++), this.notBefore - Date.now());
      await new Promise<void>((resolve) => {
        const wake = new AbortController(); // close() ends the wait through streamAbort
        this.streamAbort = wake;
        const timer = setTimeout(resolve, delay);
        wake.signal.addEventListener('abort', () => (clearTimeout(timer), resolve()), { once: true });
      });
    }
  }

  // ---- across page loads (browsers) --------------------------------------------------------

  private storageKey(): string {
    return `guidon:${this.baseUrl}:${this.options.environment}:${contextKey(this.context)}`;
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

/** A Guidon client: call ready() before the first read if you can wait; reads never throw. With `mode: 'local'`, a server-side client that evaluates in-process (local.ts). */
export function createClient(options: LocalClientOptions): LocalClient;
export function createClient(options: ClientOptions): GuidonClient;
export function createClient(options: ClientOptions | LocalClientOptions): GuidonClient | LocalClient {
  if ((options as Partial<LocalClientOptions>).mode === 'local') return createLocalClient(options as LocalClientOptions);
  return new Client(options as ClientOptions);
}
