import type { FastifyBaseLogger } from 'fastify';
import type { Db } from '../../db/database.js';
import { LogThrottle } from '../../log-throttle.js';
import type { HistoryRecorder } from '../history/history.recorder.js';
import { releaseAnswer, streamAnswerFor, type SentAnswer, type SentContext } from '../evaluate/evaluate.answers.js';
import type { CompiledEnvironment, CompiledProject, EvaluateCache } from '../evaluate/evaluate.cache.js';
import { currentSdkKey } from '../evaluate/evaluate.repository.js';
import { sdkKeyHash } from '../evaluate/sdk-key.js';
import { rulesetAnswer, rulesetPatch, type RulesetAnswer } from '../local-evaluation/ruleset.document.js';

/** One open Server-Sent Events answer. */
export interface OpenStream {
  readonly projectId: string;
  readonly environment: string;
  readonly keyHash: string;
  /** `ruleset`: opened with an API token by an SDK in local mode (docs/local-evaluation.md): it is told to refetch the ruleset, and a key rotation does not concern it. */
  readonly kind?: 'evaluation' | 'ruleset';
  /**
   * An SDK-key stream opened with X-Guidon-Context (docs/sdk.md, "The answer in the message"):
   * each change's message carries the evaluate answer for this context, with each flag's kind when
   * `withKinds`, so its client need not ask.
   */
  readonly answering?: { readonly context: SentContext; readonly withKinds: boolean; sent?: SentAnswer };
  write(chunk: string | Buffer): void;
  /** Ends the answer; with retryMs, an SSE `retry:` field first (how long the client waits before it reconnects). */
  close(retryMs?: number): void;
}

export interface StreamHubOptions {
  /** A comment line this often keeps proxies and load balancers from closing idle streams (docs/sdk.md: 15 s). */
  heartbeatMs: number;
  /**
   * A project's first change after a quiet spell is sent at once; the changes that follow it
   * within this window wait for its end and are sent as one message.
   */
  coalesceMs: number;
  /** The fetches a second this instance asks for after a change (config.ts, refetchRate); 0: none asked. */
  refetchRate: number;
  /** Where the answers carried in messages are recorded, as evaluate records its answers; without it no message carries an answer. */
  history: HistoryRecorder | null;
}

/**
 * The message a stream gets for a change: its id is the project's revision, for Last-Event-ID.
 * With a spread (ms, above 0), its clients fetch at a moment of their own within it (refetchSpreadMs).
 */
export function refetchMessage(revision: number, spreadMs = 0): string {
  const data = JSON.stringify({ type: 'refetchEvaluation', etag: String(revision), lastModified: Math.floor(Date.now() / 1000), ...(spreadMs > 0 && { spread: spreadMs }) });
  return `id: ${revision}\nevent: message\ndata: ${data}\n\n`;
}

/**
 * The message a local-mode SDK's stream gets for a change (docs/local-evaluation.md), with the
 * ETag of the environment's new ruleset: an SDK that holds it (a change of another environment,
 * two changes it fetched at once) need not fetch it. With `patch` (JSON text, rulesetPatch), the
 * change itself: an SDK holding the document the patch starts from applies it instead of fetching.
 * With `ruleset` (the document's JSON text), a change too big for a patch, whole: any SDK holds it.
 * With a spread, as refetchMessage.
 */
export function rulesetMessage(revision: number, etag: string, carried: { patch?: string; ruleset?: string } = {}, spreadMs = 0): string {
  const data = JSON.stringify({ type: 'refetchRuleset', revision, etag, ...(spreadMs > 0 && { spread: spreadMs }) });
  const change = carried.patch !== undefined ? `,"patch":${carried.patch}` : carried.ruleset !== undefined ? `,"ruleset":${carried.ruleset}` : '';
  return `id: ${revision}\nevent: message\ndata: ${change === '' ? data : `${data.slice(0, -1)}${change}}`}\n\n`;
}

/**
 * The largest ruleset a message carries whole, when the change is too big for a patch (docs/local-evaluation.md):
 * a 100-flag ruleset is about 14 KiB; a 1,000-flag one (144 KiB) is fetched, compressed, instead.
 */
const RULESET_IN_MESSAGE_MAX_BYTES = 64 * 1024;

/** The ruleset carried whole in a message, when it is at most RULESET_IN_MESSAGE_MAX_BYTES; else nothing (the client fetches it). */
const wholeRuleset = (answer: RulesetAnswer): { ruleset?: string } => (answer.body.length <= RULESET_IN_MESSAGE_MAX_BYTES ? { ruleset: answer.body.toString('utf8') } : {});

/** The longest spread a message announces, however many streams: a client waits at most this long for a change. */
const MAX_SPREAD_MS = 30_000;

/**
 * Over how long (ms) the clients of `streams` open streams should fetch after a change so that
 * they arrive at `rate` a second, not all at once (docs/sdk.md, "Spread refetches"): 10,000 at
 * once overflowed the listen queue, and the dropped connections came back a second later.
 * Zero when there is no rate or it is not needed.
 */
function refetchSpreadMs(streams: number, rate: number): number {
  return rate <= 0 ? 0 : Math.min(MAX_SPREAD_MS, Math.floor((streams * 1000) / rate));
}

/**
 * A change message with the evaluate answer for a stream's context (docs/sdk.md, "The answer in
 * the message"): `answer`, what POST /sdk/v1/evaluate answers for it now, byte for byte; or, after
 * an answer the stream was sent, `answerChanges`, only its flags whose answer differs, from the
 * answer whose ETag is `answerFrom`. `answerEtag`: the new answer's ETag. Recorded in the history
 * as evaluate records it; what was sent is kept on the stream for the next change.
 */
function answeredMessage(message: string, environment: CompiledEnvironment, answering: NonNullable<OpenStream['answering']>, history: HistoryRecorder): Buffer {
  const previous = answering.sent;
  const answer = streamAnswerFor(environment, answering.context, history, answering.withKinds, previous);
  answering.sent = answer.sent;
  const end = message.lastIndexOf('}'); // the data line's JSON object ends there
  const etag = `,"answerEtag":${JSON.stringify(answer.sent.etag)}`;
  if (answer.changes !== undefined) return Buffer.from(`${message.slice(0, end)},"answerFrom":${JSON.stringify(previous!.etag)}${etag},"answerChanges":${answer.changes}${message.slice(end)}`);
  const chunk = Buffer.concat([Buffer.from(`${message.slice(0, end)}${etag},"answer":`), answer.whole.body, Buffer.from(message.slice(end))]);
  releaseAnswer(answer.whole);
  return chunk;
}

/**
 * What a message with an answer costs in plain messages' writes, for WRITE_SLICE: one for
 * evaluating it (5–10 µs), and one per 2 KiB written (a whole 100-flag answer is 6–8 KB, the
 * changes of one toggle a few hundred bytes; docs/performance.md).
 */
const answerWork = (chunk: string | Buffer) => 1 + (chunk.length >> 11);

/**
 * Streams written to between two turns of the event loop when a change fans out: about 1 ms of
 * writes, so evaluate requests wait no longer (500 held them 10–20 ms; docs/performance.md).
 */
const WRITE_SLICE = 100;

/**
 * How long after a change a stream that opens without Last-Event-ID is told to refetch at once:
 * its client's first fetch may have been answered before the change, and the change's message
 * went out before the stream was there (docs/sdk.md). Longer than an SDK's request timeout (5 s)
 * plus its stream's opening; a client that fetched before the change and took longer is not covered.
 */
const RECENT_CHANGE_MS = 10_000;

/** A stream's heartbeats are spread over this many ticks of the heartbeat period, so that each tick writes to a slice of the streams, not all at once. */
const HEARTBEAT_SLICES = 15;

/**
 * Fans changes out to the open streams. It listens to the compiled view's invalidations, so
 * every change reaches it the way it reaches evaluate: a local write, another instance's
 * notification, or the revision check. Per changed project it reads the current SDK key once
 * and recompiles the project once (which also warms the cache for the refetches that follow),
 * then writes one message to each stream; streams of a rotated-out key, a deleted project or a
 * deleted environment are closed.
 */
export class StreamHub {
  private readonly byProject = new Map<string, Set<OpenStream>>();
  /**
   * Per project and environment, the ruleset this instance last told its local-mode SDKs about
   * (or the one their streams opened on): the next change's patch starts from it. An SDK holding
   * another one (fetched from another instance, or a message missed) does not match the patch's
   * `from` and fetches.
   */
  private readonly sent = new Map<string, Map<string, RulesetAnswer>>();
  private readonly pending = new Map<string, NodeJS.Timeout>();
  /** When each project last changed, as this instance heard of it; forgotten after RECENT_CHANGE_MS. */
  private readonly lastChange = new Map<string, number>();
  private readonly startedAt = Date.now();
  /** Per project, when its last change went out to be sent: within the window after, the next one waits. */
  private readonly lastSentAt = new Map<string, number>();
  /** Per project, the change being written to its streams (settled, never rejected): the next one waits for it. */
  private readonly sending = new Map<string, Promise<void>>();
  private closed = false;
  private readonly heartbeat: NodeJS.Timeout;
  /** The streams by the heartbeat slice they are in; one slice gets its comment line per tick. */
  private readonly slices: Set<OpenStream>[] = Array.from({ length: HEARTBEAT_SLICES }, () => new Set());
  private readonly sliceOf = new Map<OpenStream, Set<OpenStream>>();
  private tick = 0;
  private readonly unsubscribe: () => void;
  private readonly options: StreamHubOptions;
  /** The database away: each waiting change is retried every second; said at most every 10 s. */
  private readonly failureLog = new LogThrottle();
  /** A stream's answer that throws: said at most every 10 s. */
  private readonly answerFailureLog = new LogThrottle();

  constructor(
    private readonly db: Db,
    private readonly cache: EvaluateCache,
    private readonly log: FastifyBaseLogger,
    options: Partial<StreamHubOptions> = {},
  ) {
    this.options = { heartbeatMs: 15_000, coalesceMs: 50, refetchRate: 0, history: null, ...options };
    this.unsubscribe = cache.onInvalidate((projectId) => {
      this.lastChange.set(projectId, Date.now());
      this.changed(projectId);
    });
    this.heartbeat = setInterval(() => this.beat(), this.options.heartbeatMs / HEARTBEAT_SLICES);
    this.heartbeat.unref();
  }

  get size(): number {
    let count = 0;
    for (const streams of this.byProject.values()) count += streams.size;
    return count;
  }

  /**
   * Follows the stream from now on. `openedFrom` is the compiled project it was authorized
   * against: when a change dropped it meanwhile (a key rotation committing while the stream
   * opened), the stream's key and environment are checked again at once, as for any change.
   */
  add(stream: OpenStream, openedFrom: CompiledProject): void {
    let streams = this.byProject.get(stream.projectId);
    if (!streams) this.byProject.set(stream.projectId, (streams = new Set()));
    streams.add(stream);
    if (stream.kind === 'ruleset') {
      let sent = this.sent.get(stream.projectId);
      if (!sent) this.sent.set(stream.projectId, (sent = new Map()));
      const environment = openedFrom.environments.get(stream.environment);
      if (!sent.has(stream.environment) && environment) sent.set(stream.environment, rulesetAnswer(environment, openedFrom.revision));
    }
    // The slice just beaten: its first comment line comes one period after it opened.
    const slice = this.slices[(this.tick + HEARTBEAT_SLICES - 1) % HEARTBEAT_SLICES]!;
    slice.add(stream);
    this.sliceOf.set(stream, slice);
    if (!this.cache.holds(openedFrom)) this.changed(stream.projectId);
  }

  /**
   * What a stream is sent as it opens, before add(). A reconnect behind (its Last-Event-ID names
   * another revision): the change's message as a change would send it to this stream, with the
   * spread, the stream's whole answer when it names a context, the whole ruleset when small
   * enough; its client then need not fetch, or fetches within the spread (an instance that stops
   * sends its streams' clients to the others at once). A first stream shortly after a change
   * (changedLately): the plain message with the spread, as its client has just fetched and most
   * likely holds the change already (its ETag says). Otherwise the revision it starts from, as an
   * id without data: a reconnecting client that named it knows it missed nothing (docs/sdk.md,
   * "Reconnecting").
   */
  openingMessage(stream: OpenStream, project: CompiledProject, environment: CompiledEnvironment, lastEventId: string | undefined): string | Buffer {
    const reconnect = lastEventId !== undefined;
    const behind = reconnect ? lastEventId !== String(project.revision) : this.changedLately(project.projectId);
    if (!behind) return `id: ${project.revision}\n\n`;
    const spreadMs = refetchSpreadMs((this.byProject.get(project.projectId)?.size ?? 0) + 1, this.options.refetchRate);
    if (stream.kind === 'ruleset') {
      const answer = rulesetAnswer(environment, project.revision);
      return rulesetMessage(project.revision, answer.etag, reconnect ? wholeRuleset(answer) : {}, spreadMs);
    }
    const message = refetchMessage(project.revision, spreadMs);
    return reconnect && stream.answering && this.options.history ? this.withAnswer(message, environment, stream.answering, this.options.history) : message;
  }

  /**
   * Whether the project changed within RECENT_CHANGE_MS; in the first RECENT_CHANGE_MS of this
   * instance, every project may have (a change made just before it started is not known here).
   */
  changedLately(projectId: string): boolean {
    return Date.now() - (this.lastChange.get(projectId) ?? this.startedAt) < RECENT_CHANGE_MS;
  }

  remove(stream: OpenStream): void {
    const streams = this.byProject.get(stream.projectId);
    if (!streams?.delete(stream)) return;
    if (streams.size === 0) {
      this.byProject.delete(stream.projectId);
      this.sent.delete(stream.projectId);
      this.lastSentAt.delete(stream.projectId);
    }
    this.sliceOf.get(stream)?.delete(stream);
    this.sliceOf.delete(stream);
  }

  /**
   * Ends every stream (before the server closes, which waits for open answers), each with a retry
   * hint of 1–3 s: the clients reconnect, through the load balancer, to another instance, spread
   * over two seconds rather than all at once.
   */
  close(): void {
    this.closed = true;
    this.unsubscribe();
    clearInterval(this.heartbeat);
    for (const timer of this.pending.values()) clearTimeout(timer);
    this.pending.clear();
    for (const streams of [...this.byProject.values()]) for (const stream of [...streams]) stream.close(1000 + Math.floor(Math.random() * 2000));
    this.byProject.clear();
    this.sent.clear();
    this.lastSentAt.clear();
    for (const slice of this.slices) slice.clear();
    this.sliceOf.clear();
  }

  private changed(projectId: string): void {
    if (!this.byProject.has(projectId) || this.pending.has(projectId)) return;
    const sinceLast = Date.now() - (this.lastSentAt.get(projectId) ?? -Infinity);
    this.pending.set(
      projectId,
      setTimeout(() => {
        this.pending.delete(projectId);
        this.lastSentAt.set(projectId, Date.now());
        // After the project's previous change is written to every stream: each stream gets the changes in order.
        const run = (this.sending.get(projectId) ?? Promise.resolve()).then(() => this.refresh(projectId));
        const settled = run.then(
          () => undefined,
          () => undefined,
        );
        this.sending.set(projectId, settled);
        void settled.then(() => {
          if (this.sending.get(projectId) === settled) this.sending.delete(projectId);
        });
        run.then(
          () => {
            if (this.failureLog.recovered()) this.log.info('open streams: changes are sent again');
          },
          (error: unknown) => {
            // The database is away: try again shortly, the change is still to be sent.
            if (this.failureLog.due()) this.log.warn({ err: error, projectId }, 'could not send a change to the open streams; retrying');
            setTimeout(() => this.changed(projectId), 1000).unref();
          },
        );
      }, Math.max(0, this.options.coalesceMs - sinceLast)),
    );
  }

  private async refresh(projectId: string): Promise<void> {
    const sdkKey = await currentSdkKey(this.db, projectId);
    const project = sdkKey === null ? null : await this.cache.project(sdkKey);
    const streams = this.byProject.get(projectId);
    if (!streams) return;
    const keyHash = sdkKey === null ? null : sdkKeyHash(sdkKey);
    // Every client of the project on this instance may fetch (a remote one always does; a local one when no patch fits it).
    const spreadMs = refetchSpreadMs(streams.size, this.options.refetchRate);
    const message = project ? refetchMessage(project.revision, spreadMs) : '';
    // Per environment: its ruleset, built once here for every SDK about to fetch it, and its ETag.
    const forRuleset = new Map<string, string>();
    let work = 0;
    for (const stream of [...streams]) {
      // A slice at a time, other requests (evaluate) served in between: 10,000 writes at once held them 100 ms and more.
      if (work >= WRITE_SLICE) {
        work = 0;
        await new Promise((resolve) => setImmediate(resolve));
        if (this.closed) return;
      }
      if (!streams.has(stream)) continue; // gone meanwhile
      const ruleset = stream.kind === 'ruleset';
      const environment = project?.environments.get(stream.environment);
      work += 1;
      if (!project || !environment || (!ruleset && stream.keyHash !== keyHash)) stream.close();
      else if (ruleset) {
        let forEnvironment = forRuleset.get(stream.environment);
        if (forEnvironment === undefined) forRuleset.set(stream.environment, (forEnvironment = this.rulesetChange(projectId, environment, project.revision, spreadMs)));
        stream.write(forEnvironment);
      } else if (stream.answering && this.options.history) {
        const chunk = this.withAnswer(message, environment, stream.answering, this.options.history);
        work += answerWork(chunk);
        stream.write(chunk);
      } else stream.write(message);
    }
  }

  /**
   * The message with the stream's answer; the plain message (its client fetches, and evaluate
   * answers or fails on its own) when evaluating throws: one stream's context must not stop the
   * change from reaching the others.
   */
  private withAnswer(message: string, environment: CompiledEnvironment, answering: NonNullable<OpenStream['answering']>, history: HistoryRecorder): string | Buffer {
    try {
      return answeredMessage(message, environment, answering, history);
    } catch (error) {
      if (this.answerFailureLog.due()) this.log.error({ err: error }, 'open streams: a stream\'s answer could not be evaluated; it was sent the plain message');
      return message;
    }
  }

  /** The message for an environment's change, with the patch from the ruleset last sent when it is small, else the ruleset when that is; what it sends is remembered for the next. */
  private rulesetChange(projectId: string, environment: CompiledEnvironment, revision: number, spreadMs: number): string {
    const answer = rulesetAnswer(environment, revision);
    let sent = this.sent.get(projectId);
    if (!sent) this.sent.set(projectId, (sent = new Map()));
    const before = sent.get(environment.key);
    sent.set(environment.key, answer);
    if (before === undefined || before.etag === answer.etag) return rulesetMessage(revision, answer.etag, {}, spreadMs);
    const patch = rulesetPatch(before, answer);
    if (patch !== null) return rulesetMessage(revision, answer.etag, { patch }, spreadMs);
    // Too big for a patch: the whole ruleset, when small enough, rather than every client fetching it.
    return rulesetMessage(revision, answer.etag, wholeRuleset(answer), spreadMs);
  }

  private beat(): void {
    this.tick = (this.tick + 1) % HEARTBEAT_SLICES;
    if (this.tick === 0) {
      const forgotten = Date.now() - RECENT_CHANGE_MS;
      for (const [projectId, at] of this.lastChange) if (at <= forgotten) this.lastChange.delete(projectId);
    }
    for (const stream of this.slices[this.tick]!) stream.write(':\n\n');
  }
}
