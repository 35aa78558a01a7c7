/**
 * How both clients talk to Guidon (docs/adr/0008-sdk-shape.md). `Transport` sends one request:
 * its timeout, the message of an error body, and Retry-After, which holds every later request.
 * `Follower` keeps a client's state current: the change stream, polling while it is away (or
 * instead of it), back-off, and what the client's ready, stale and error events say about it.
 * The clients say only what to fetch and what to do with it.
 */
import { coalesced } from './coalesce.js';
import { GuidonError } from './errors.js';
import { readSse } from './sse.js';

const BACKOFF_BASE_MS = 1000;
const BACKOFF_MAX_MS = 30_000;
/** Three missed heartbeats (15 s each): the connection is dead even if no error says so. */
const STREAM_SILENCE_MS = 45_000;

/** Exponential backoff with jitter: between half and all of min(max, base·2^attempt). */
function backoffMs(attempt: number): number {
  const ceiling = Math.min(BACKOFF_MAX_MS, BACKOFF_BASE_MS * 2 ** Math.min(attempt, 16));
  return ceiling / 2 + Math.random() * (ceiling / 2);
}

/** Retry-After in milliseconds (seconds or an HTTP date), or undefined. */
function retryAfterMs(header: string | null): number | undefined {
  if (!header) return undefined;
  const seconds = Number(header);
  if (Number.isFinite(seconds)) return Math.max(0, seconds * 1000);
  const date = Date.parse(header);
  return Number.isNaN(date) ? undefined : Math.max(0, date - Date.now());
}

/** The longest spread the SDK waits out (docs/sdk.md, "Spread refetches"): a larger one is taken as this. */
const MAX_SPREAD_MS = 30_000;

/**
 * After a reconnect that named the revision it had seen (Last-Event-ID), how long the client
 * waits for the server's word before it fetches to catch up: Guidon says at once that nothing was
 * missed (an id without data) or sends the change (docs/sdk.md, "Reconnecting"); a server that
 * says neither (older builds) is caught up with by a fetch after this.
 */
const CATCH_UP_WAIT_MS = 1000;

/**
 * The moment within a change message's `spread` (ms) this client fetches at: a uniform draw, so
 * that the server's clients arrive at the rate it announced rather than all at once. 0 without one.
 */
function spreadDelayMs(data: string): number {
  let spread: unknown;
  try {
    spread = (JSON.parse(data) as { spread?: unknown } | null)?.spread;
  } catch {
    return 0;
  }
  return typeof spread === 'number' && spread > 0 ? Math.random() * Math.min(spread, MAX_SPREAD_MS) : 0;
}

const messageOf = (error: unknown): string => String((error as Error)?.message ?? error);

/** Every timer of the SDK: it never keeps a Node process alive on its own (close() ends a client; a pending poll does not hold an exit). */
export function later(run: () => void, ms: number): ReturnType<typeof setTimeout> {
  const timer = setTimeout(run, ms);
  (timer as { unref?: () => void }).unref?.();
  return timer;
}

/** What one request came to. `failed` never carries an exception: the SDK never throws into the application. */
export type Answer =
  | { kind: 'ok'; status: number; body: unknown; etag: string | undefined }
  | { kind: 'not-modified' }
  | { kind: 'failed'; error: GuidonError };

const failed = (error: GuidonError): Answer => ({ kind: 'failed', error });

export interface TransportOptions {
  /** Where Guidon runs, e.g. https://flags.example.com */
  baseUrl: string;
  /** The credential, as headers. */
  headers: Record<string, string>;
  /** Per request, and for the stream to open (default 5 s). */
  timeoutMs?: number;
  /** A fetch of your own (default: the global one). */
  fetch?: typeof fetch;
}

export interface RequestOptions {
  method?: 'GET' | 'POST';
  /** A body, sent as JSON. */
  json?: unknown;
  /** Sent as If-None-Match: 304 answers `not-modified`. */
  etag?: string;
  /** Sent besides the credential. */
  headers?: Record<string, string>;
  /** Sent even after close() (the local client's last usage report). */
  evenClosed?: boolean;
}

export class Transport {
  readonly timeoutMs: number;
  private readonly baseUrl: string;
  private readonly fetchImpl: typeof fetch;
  /** Set by a Retry-After on a request's 429 or 503: no request before then. */
  private notBefore = 0;
  private closed = false;
  private readonly inFlight = new Set<AbortController>();

  constructor(private readonly options: TransportOptions) {
    this.baseUrl = String(options.baseUrl ?? '').replace(/\/+$/, '');
    this.timeoutMs = options.timeoutMs ?? 5000;
    this.fetchImpl = options.fetch ?? ((input, init) => globalThis.fetch(input, init));
  }

  /** How long a Retry-After still holds requests back (0: not at all). */
  waitMs(): number {
    return Math.max(0, this.notBefore - Date.now());
  }

  /** One request, its answer's body read within the timeout and parsed as JSON. Never throws. */
  async request(path: string, init: RequestOptions = {}): Promise<Answer> {
    const wait = this.waitMs();
    if (wait > 0) return failed(new GuidonError('Rate limited by Guidon; waiting for Retry-After', 'http', 429, wait));
    if (this.closed && !init.evenClosed) return failed(new GuidonError('The client is closed', 'network'));
    const controller = new AbortController();
    let timedOut = false;
    const timer = later(() => {
      timedOut = true;
      controller.abort();
    }, this.timeoutMs);
    this.inFlight.add(controller);
    try {
      const headers: Record<string, string> = { ...this.options.headers, ...init.headers };
      if (init.json !== undefined) headers['content-type'] = 'application/json';
      if (init.etag !== undefined) headers['if-none-match'] = init.etag;
      const body = init.json === undefined ? undefined : JSON.stringify(init.json);
      const response = await this.fetchImpl(`${this.baseUrl}${path}`, { method: init.method ?? 'GET', headers, body, signal: controller.signal });
      if (response.status === 304) {
        await response.body?.cancel().catch(() => undefined);
        return { kind: 'not-modified' };
      }
      if (response.status < 200 || response.status > 299) return failed(await this.refusal(response, 'http'));
      const text = await response.text();
      try {
        return { kind: 'ok', status: response.status, body: text === '' ? undefined : JSON.parse(text), etag: response.headers.get('etag') ?? undefined };
      } catch {
        return failed(new GuidonError(`Guidon answered ${response.status} with a body that is not JSON`, 'http', response.status));
      }
    } catch (error) {
      if (timedOut) return failed(new GuidonError(`No answer from Guidon within ${this.timeoutMs} ms`, 'timeout'));
      return failed(new GuidonError(`Could not reach Guidon: ${messageOf(error)}`, 'network'));
    } finally {
      clearTimeout(timer);
      this.inFlight.delete(controller);
    }
  }

  /** Opens the change stream: its body, or why Guidon refused it. Throws what fetch throws (the follower's loop catches it). */
  async stream(path: string, lastEventId: string | undefined, signal: AbortSignal, extraHeaders: Record<string, string> = {}): Promise<ReadableStream<Uint8Array> | GuidonError> {
    const headers: Record<string, string> = { ...this.options.headers, ...extraHeaders, accept: 'text/event-stream' };
    if (lastEventId !== undefined) headers['last-event-id'] = lastEventId;
    const response = await this.fetchImpl(`${this.baseUrl}${path}`, { headers, signal });
    if (response.status === 200 && response.body) return response.body;
    return this.refusal(response, 'stream');
  }

  /** Aborts every request under way; later ones fail at once (but `evenClosed`). */
  close(): void {
    this.closed = true;
    for (const controller of this.inFlight) controller.abort();
    this.inFlight.clear();
  }

  /**
   * A non-2xx answer as an error, with the body's message. A request's Retry-After holds every
   * request back; the stream's only the stream (its limit counts open streams, not requests).
   */
  private async refusal(response: Response, kind: 'http' | 'stream'): Promise<GuidonError> {
    const retryAfter = response.status === 429 || response.status === 503 ? retryAfterMs(response.headers.get('retry-after')) : undefined;
    if (retryAfter !== undefined && kind === 'http') this.notBefore = Math.max(this.notBefore, Date.now() + retryAfter);
    const text = await response.text().catch(() => '');
    let message = kind === 'stream' ? `Guidon refused the stream: ${response.status}` : `Guidon answered ${response.status}`;
    try {
      const said = (JSON.parse(text) as { message?: unknown } | null)?.message;
      if (typeof said === 'string') message += `: ${said}`;
    } catch {
      // not JSON: the status says enough
    }
    return new GuidonError(message, kind, response.status, retryAfter);
  }
}

/** The events a follower reports through its client. */
export interface HealthEvents {
  /** The client has current data: the first time, and again after it was stale or failed. */
  ready: () => void;
  /** The client keeps data that may be out of date: a fetch failed, or the stream broke. */
  stale: () => void;
  error: (error: GuidonError) => void;
}

export interface FollowOptions {
  /** The change stream's path and query. */
  streamPath: string;
  /** The message type that asks for a fetch: refetchEvaluation (remote) or refetchRuleset (local). */
  refetch: string;
  /** Headers of the stream's request beyond the credential, asked each time it opens (the remote client's context). */
  streamHeaders?: () => Record<string, string>;
  /** Follow the stream (true), or only poll. */
  stream: boolean;
  /** How often to poll when not streaming, and while the stream is away. */
  pollIntervalMs: number;
  /** One fetch of the client's state, which the client applies: resolves its failure, or undefined. */
  fetchOnce: () => Promise<GuidonError | undefined>;
  /** Whether the client holds Guidon's data (answered or kept): only such data goes stale. */
  holds: () => boolean;
  emit: <E extends keyof HealthEvents>(event: E, ...args: Parameters<HealthEvents[E]>) => void;
  /**
   * A message that asks for a fetch, before it: true when the client brought its state up to date
   * from the message itself (the local client's patch, docs/local-evaluation.md), and no fetch follows.
   */
  handled?: (data: string) => boolean;
  /** Changes were announced (or may have been missed while the stream was away), before the fetch. */
  onChange?: () => void;
  /** The stream broke: changes may be missed until it is back. */
  onOutage?: () => void;
}

/** Keeps a client's state current: stream, polls, back-off, and its health events. */
export class Follower {
  /** Fetches once; overlapping calls share a run, which goes once more after (the state may have moved meanwhile). Resolves whether it succeeded. */
  readonly refresh: () => Promise<boolean>;
  /** Whether the data is current: since the last successful fetch, nothing failed and the stream did not break. */
  private current = false;
  /** How many times the data fell stale: a fetch asked before the last fall does not make it current. */
  private falls = 0;
  private failures = 0;
  private closed = false;
  private pollTimer: ReturnType<typeof setTimeout> | undefined;
  /** A fetch a change message asked for, waiting for this client's moment within the message's spread. */
  private spreadTimer: ReturnType<typeof setTimeout> | undefined;
  private streamOpen = false;
  /** Ends the stream, or the wait before the next attempt. */
  private streamAbort: AbortController | undefined;
  private lastEventId: string | undefined;
  /** reopenStream() ended the stream: the loop opens it again at once, with no outage. */
  private reopening = false;
  /** Fetches under way: a message's content is not taken over an answer still to come. */
  private fetching = 0;
  /** After a reconnect, the fetch that catches up, unless the server's word comes first (CATCH_UP_WAIT_MS). */
  private catchUpTimer: ReturnType<typeof setTimeout> | undefined;

  constructor(
    private readonly transport: Transport,
    private readonly options: FollowOptions,
  ) {
    this.refresh = coalesced(() => this.fetch(), () => this.closed);
  }

  /** Starts following: the stream, or polls. */
  start(): void {
    if (this.options.stream) void this.streamLoop();
    else this.schedulePoll();
  }

  /** Opens the stream again at once when it is open (its headers changed: the remote client's context); no error, no stale. */
  reopenStream(): void {
    if (!this.streamOpen) return; // an attempt under way or to come asks streamHeaders anew, or the client's handled() sees the old context
    this.reopening = true;
    this.streamAbort?.abort();
  }

  close(): void {
    this.closed = true;
    clearTimeout(this.pollTimer);
    clearTimeout(this.spreadTimer);
    clearTimeout(this.catchUpTimer);
    this.streamAbort?.abort();
  }

  private async fetch(): Promise<boolean> {
    const fallsBefore = this.falls;
    this.fetching++;
    // Whatever the client does with an answer, nothing it throws reaches the application.
    const error = await this.options
      .fetchOnce()
      .catch((caught: unknown) => new GuidonError(`Could not use Guidon's answer: ${messageOf(caught)}`, 'http'))
      .finally(() => this.fetching--);
    if (this.closed) return false;
    if (error) {
      this.failures++;
      this.options.emit('error', error);
      this.fall();
      // Tried again after the back-off, also while the stream is open (no poll runs then): a
      // failed catch-up after a reconnect would otherwise leave the data stale until the next change.
      this.schedulePoll();
      return false;
    }
    this.failures = 0;
    // An answer asked before the stream broke says nothing of the changes since: the fetch that
    // follows (the reconnect's, or the next poll) makes the data current.
    if (!this.current && this.falls === fallsBefore) this.becameCurrent();
    return true;
  }

  /** A fetch failed or the stream broke: data held is now stale. */
  private fall(): void {
    if (!this.current) return;
    this.current = false;
    this.falls++;
    if (this.options.holds()) this.options.emit('stale');
  }

  private schedulePoll(): void {
    if (this.closed || this.pollTimer !== undefined) return;
    const interval = this.options.pollIntervalMs;
    const delay = Math.max(this.transport.waitMs(), this.failures > 0 ? Math.min(backoffMs(this.failures), interval) : interval);
    this.pollTimer = later(() => {
      this.pollTimer = undefined;
      void this.refresh().finally(() => {
        if (!this.options.stream || !this.streamOpen) this.schedulePoll();
      });
    }, delay);
  }

  /** Follows the stream; while it is away, polls, and reconnects with back-off (and after a Retry-After). */
  private async streamLoop(): Promise<void> {
    let attempt = 0;
    let away = false;
    while (!this.closed) {
      const controller = new AbortController();
      this.streamAbort = controller;
      let silence = later(() => controller.abort(), this.transport.timeoutMs);
      let error: GuidonError;
      const sentId = this.lastEventId;
      try {
        const body = await this.transport.stream(this.options.streamPath, sentId, controller.signal, this.options.streamHeaders?.());
        if (body instanceof GuidonError) throw body;
        attempt = 0;
        this.streamOpen = true;
        clearTimeout(this.pollTimer);
        this.pollTimer = undefined;
        // Changes made while the stream was away: the server sends them, or says none were made, for
        // the revision named; a client that could name none catches up with a conditional request.
        if (away && sentId === undefined) this.changed();
        else if (away) {
          this.catchUpTimer = later(() => {
            this.catchUpTimer = undefined;
            this.changed();
          }, CATCH_UP_WAIT_MS);
        }
        away = false;
        const rearm = () => {
          clearTimeout(silence);
          silence = later(() => controller.abort(), STREAM_SILENCE_MS);
        };
        rearm();
        await readSse(
          body,
          (message) => {
            if (message.event !== 'message' || !message.data.includes(this.options.refetch)) return;
            this.stopCatchUp();
            // Brought up to date from the message itself (a patch, an answer): no fetch.
            if (this.handles(message.data)) this.options.onChange?.();
            else this.changed(spreadDelayMs(message.data));
          },
          rearm,
          // The revision of each message, or the one the stream started from: sent back when it reconnects.
          (id) => {
            // The revision named on reconnecting, and no change with it: nothing was missed.
            if (this.catchUpTimer !== undefined && id === sentId) this.missedNothing();
            this.lastEventId = id;
          },
        );
        error = new GuidonError('The stream ended', 'stream');
      } catch (caught) {
        error = caught instanceof GuidonError ? caught : new GuidonError(`The stream failed: ${messageOf(caught)}`, 'stream');
      } finally {
        clearTimeout(silence);
        this.stopCatchUp();
        this.streamOpen = false;
      }
      if (this.closed) break;
      if (this.reopening) {
        // Last-Event-ID goes with it: a change made meanwhile comes as a message at once.
        this.reopening = false;
        continue;
      }
      this.options.onOutage?.();
      if (!away) {
        away = true;
        this.options.emit('error', error);
        this.fall();
      }
      this.schedulePoll();
      await this.pause(Math.max(backoffMs(attempt++), error.retryAfterMs ?? 0, this.transport.waitMs()));
    }
  }

  /**
   * Whether the client took the message's content itself; false (a fetch follows) when it cannot or
   * throws. Never while a fetch is under way: its answer, asked before this change, would be laid
   * over the message's (identify() during a change). Data that is not current (a reconnect's
   * catch-up) is brought up to date by a message too, unless a fetch is also waiting.
   */
  private handles(data: string): boolean {
    if (!this.options.handled || this.fetching > 0 || (!this.current && this.spreadTimer !== undefined)) return false;
    let taken: boolean;
    try {
      taken = this.options.handled(data);
    } catch {
      return false;
    }
    if (taken && !this.current) this.becameCurrent();
    return taken;
  }

  private stopCatchUp(): void {
    clearTimeout(this.catchUpTimer);
    this.catchUpTimer = undefined;
  }

  /** The server said the stream missed no change: the data is current, unless a fetch since failed or is still to come (then it is fetched). */
  private missedNothing(): void {
    this.stopCatchUp();
    if (this.current || this.fetching > 0 || this.spreadTimer !== undefined) return;
    if (this.failures === 0 && this.options.holds()) this.becameCurrent();
    else this.changed();
  }

  private becameCurrent(): void {
    this.current = true;
    this.options.emit('ready');
  }

  /** A change: the fetch now, or after `delayMs` (its moment within a spread); one already waiting is not put off. */
  private changed(delayMs = 0): void {
    this.options.onChange?.();
    if (delayMs > 0) {
      this.spreadTimer ??= later(() => {
        this.spreadTimer = undefined;
        void this.refresh();
      }, delayMs);
      return;
    }
    clearTimeout(this.spreadTimer);
    this.spreadTimer = undefined;
    void this.refresh();
  }

  /** Waits `ms`, or until close(). */
  private pause(ms: number): Promise<void> {
    return new Promise<void>((resolve) => {
      const wake = new AbortController();
      this.streamAbort = wake;
      const timer = later(resolve, ms);
      wake.signal.addEventListener('abort', () => (clearTimeout(timer), resolve()), { once: true });
    });
  }
}
