/**
 * The local client (docs/local-evaluation.md): it holds the environment's ruleset and evaluates
 * it in-process with the engine the server runs, synchronously, without a network call per
 * evaluation. For servers only: the ruleset names users, and its credential is an API token.
 * The transport keeps the ruleset fresh (transport.ts: the stream's refetchRuleset, polls with
 * ETag while it is away) and it stays as it is while Guidon is away; usage.ts reports what was
 * counted.
 */
import { applyRulesetPatch, codeOf, compileFlagSet, enabledOf, encodeAnswer, NO_VARIANT, OUTCOMES, variantOf, type CompiledFlagSet, type EvaluationContext, type PackedAnswer, type ReasonKind, type RulesetDocument } from '@guidon/engine';
import { Emitter } from './emitter.js';
import { GuidonError } from './errors.js';
import { Outbox, SeenExposures, unitOf, type EventStats, type ExperimentOptions, type SeenArms } from './exposures.js';
import type { FlagState, GuidonContext, JsonValue, ValueOf } from './model.js';
import { REASON_NO_RULESET, REASON_UNKNOWN_FLAG } from './reasons.js';
import { Follower, Transport } from './transport.js';
import { Usage, type UsageCounter } from './usage.js';
import { valueOr } from './values.js';

/**
 * The newest ruleset format this SDK reads (2: flags may have prerequisites; 1: none); a document
 * of another format is refused (the previous ruleset is kept).
 */
export const RULESET_FORMAT: RulesetDocument['format'] = 2;
const READABLE_FORMATS: readonly unknown[] = [1, 2];

export interface LocalClientOptions extends ExperimentOptions {
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
export type LocalFlagState = FlagState;

/**
 * One flag as flag() reads it, with what its answer is as the engine knows it (never read from
 * the reason's text): OpenFeature's name for it (SPLIT where the weights chose; docs/variants.md)
 * and the key of the unmet prerequisite (docs/prerequisites.md).
 */
export interface LocalResolution {
  state: LocalFlagState;
  /** Absent for a flag not in the ruleset, or without a ruleset. */
  kind?: ReasonKind;
  /** Only with kind PREREQUISITE_FAILED. */
  prerequisite?: string;
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
  /** One flag as isEnabled, reason and variant read it, with the variant's value as the ruleset has it. */
  flag(key: string): LocalFlagState;
  /** What POST /sdk/v1/evaluate's `flags` would hold for this context. */
  allFlags(): Record<string, LocalFlagState>;
  /** flag(key), read once (counted and exposed as flag() is), with its kind and unmet prerequisite: what the OpenFeature providers answer with. */
  resolution(key: string): LocalResolution;
}

export interface LocalClientEvents {
  /** The ruleset held is current: the first time, and again after it was stale or failed. */
  ready: () => void;
  /** A new ruleset changed these flags' definitions (or the segments they name). */
  change: (change: { revision: number; keys: string[] }) => void;
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
  /** Records an event of the context's unit (its user_id, else its email) for experiments: `value` a finite number (absent: 1). Never throws. */
  track(name: string, context: GuidonContext, details?: { value?: number }): void;
  /** What was sent of the exposures and events, dropped, and waits. */
  eventStats(): EventStats;
  /** Stops every timer and connection, and sends the last usage report, exposures and events. Never rejects. */
  close(): Promise<void>;
}

/** Flags read one by one from a set before the rest are evaluated in one pass. */
const READS_BEFORE_ALL = 4;

/** A ruleset compiled for evaluation, with what a flag set reads. */
interface Compiled {
  readonly document: RulesetDocument;
  readonly set: CompiledFlagSet;
  readonly indexes: ReadonlyMap<string, number>;
  /** Per flag: its usage counter (shared with the usage reports by key). */
  readonly counters: readonly UsageCounter[];
  /** Per flag: the arms recorded by unit for its version in this ruleset (the same Map while its definition is the same); empty without exposures. */
  readonly seen: readonly SeenArms[];
}

/** Where a flag set records exposures: the client's outbox and what it already recorded. */
interface Exposing {
  readonly outbox: Outbox;
  readonly seen: SeenExposures;
}

/** Why a document cannot be used, or null. */
function documentProblem(document: unknown): string | null {
  if (typeof document !== 'object' || document === null) return 'the ruleset is not a JSON object';
  const doc = document as Partial<RulesetDocument>;
  if (!READABLE_FORMATS.includes(doc.format)) return `ruleset format ${JSON.stringify(doc.format)} is not one this SDK reads (${RULESET_FORMAT}): update @guidon/sdk`;
  if (!Array.isArray(doc.flags) || typeof doc.segments !== 'object' || doc.segments === null || typeof doc.environment !== 'string') return 'the ruleset lacks flags, segments or environment';
  return null;
}

/** Per flag key, its definition with the segments it names, as text: two rulesets' texts differ where a flag's answers may. */
function definitions(document: RulesetDocument): Map<string, string> {
  const texts = new Map<string, string>();
  for (const flag of document.flags) {
    const segments = (flag.rules ?? []).flatMap((rule) => (rule.conditions ?? []).flatMap((condition) => (condition.operator === 'IN_SEGMENT' ? (condition.values ?? []) : [])));
    texts.set(flag.key, JSON.stringify([flag, segments.map((key) => document.segments[key] ?? null)]));
  }
  return texts;
}

/** The keys of the flags added, removed or defined otherwise from one ruleset to the next. */
function changedFlags(before: RulesetDocument, after: RulesetDocument): string[] {
  const was = definitions(before);
  const keys: string[] = [];
  for (const [key, text] of definitions(after)) {
    if (was.get(key) !== text) keys.push(key);
    was.delete(key);
  }
  return keys.concat([...was.keys()]);
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
  /** The index of the flag use() read last. */
  private usedIndex = 0;
  /** The context's unit when exposures are recorded, else undefined. */
  private readonly unit: string | undefined;

  constructor(
    private readonly compiled: Compiled | undefined,
    private readonly context: EvaluationContext,
    private readonly counting: boolean,
    private readonly exposing?: Exposing,
  ) {
    this.unit = exposing ? unitOf(context) : undefined;
  }

  /** The flag's packed answer (the engine's answer-codec.ts), counted for usage; -1 for a flag not in the ruleset. */
  private read(key: string): number {
    const compiled = this.compiled;
    const index = compiled?.indexes.get(key);
    if (index === undefined) return -1;
    const packed = this.packed(index);
    if (this.counting) this.count(index, packed);
    return packed;
  }

  /**
   * Reads a flag the application uses: counted, and recorded as an exposure the first time for its
   * version, unit and arm. Its index is left in `usedIndex` for the caller (one Map.get of the key, not two).
   */
  private use(key: string): number {
    const index = this.compiled?.indexes.get(key);
    if (index === undefined) return -1;
    const packed = this.packed(index);
    if (this.counting) this.count(index, packed);
    const unit = this.unit;
    if (unit !== undefined) {
      // The arm as a small number: the variant's index + 2, else 1 on, 0 off.
      const variant = variantOf(packed);
      const arm = variant === NO_VARIANT ? (enabledOf(packed) ? 1 : 0) : variant + 2;
      // Seen before (the usual read): one Map.get here, inline; the rest only the first time.
      const had = this.compiled!.seen[index]!.get(unit);
      if (had === undefined || arm > 30 || (had & (1 << arm)) === 0) this.expose(index, packed, arm, unit);
    }
    this.usedIndex = index;
    return packed;
  }

  /** Records the exposure unless exposures.ts has it already; its strings are made only then. */
  private expose(index: number, packed: number, arm: number, unit: string): void {
    const compiled = this.compiled!;
    const { outbox, seen } = this.exposing!;
    if (!seen.first(compiled.seen[index]!, unit, arm)) return;
    const variant = variantOf(packed);
    const armKey = variant === NO_VARIANT ? (enabledOf(packed) ? 'on' : 'off') : compiled.set.variants[index]![variant]!.key;
    outbox.exposure(compiled.set.keys[index]!, unit, armKey, compiled.set.reasonOf(index, codeOf(packed)));
  }

  private packed(index: number): PackedAnswer {
    // A set read flag after flag is evaluated in one pass once it is clear several will be read (cheaper per flag).
    if (!this.all && ++this.reads > READS_BEFORE_ALL) this.evaluateAll();
    if (this.all) return encodeAnswer(this.all.codes[index]!, this.all.variants?.[index] ?? NO_VARIANT);
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
    const packed = this.use(key);
    return packed >= 0 && enabledOf(packed);
  }

  reason(key: string): string {
    const packed = this.read(key);
    if (packed >= 0) return this.compiled!.set.reasonOf(this.compiled!.indexes.get(key)!, codeOf(packed));
    return this.compiled ? REASON_UNKNOWN_FLAG : REASON_NO_RULESET;
  }

  variant(key: string): string | undefined {
    const packed = this.use(key);
    return packed < 0 ? undefined : this.chosen(this.usedIndex, packed)?.key;
  }

  value<T extends JsonValue | object>(key: string, fallback: T): ValueOf<T> {
    const packed = this.use(key);
    return valueOr(packed < 0 ? undefined : this.chosen(this.usedIndex, packed), fallback);
  }

  flag(key: string): LocalFlagState {
    const packed = this.use(key);
    if (packed < 0) return { enabled: false, reason: this.compiled ? REASON_UNKNOWN_FLAG : REASON_NO_RULESET };
    return this.state(this.usedIndex, packed);
  }

  resolution(key: string): LocalResolution {
    const packed = this.use(key);
    if (packed < 0) return { state: { enabled: false, reason: this.compiled ? REASON_UNKNOWN_FLAG : REASON_NO_RULESET } };
    const index = this.usedIndex;
    const { set } = this.compiled!;
    const code = codeOf(packed);
    const prerequisite = set.prerequisiteOf(index, code);
    const state = this.state(index, packed);
    const kind = set.reasonKind(index, code);
    return prerequisite === null ? { state, kind } : { state, kind, prerequisite };
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
      flags[set.keys[i]!] = this.state(i, packed);
    }
    return flags;
  }

  private state(index: number, packed: number): LocalFlagState {
    const code = codeOf(packed);
    const { enabled } = OUTCOMES[code]!;
    // An unmet prerequisite's reason names the parent (docs/prerequisites.md).
    const reason = this.compiled!.set.reasonOf(index, code);
    const chosen = this.chosen(index, packed);
    return chosen === undefined ? { enabled, reason } : { enabled, reason, variant: chosen.key, value: chosen.value as JsonValue };
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

class LocalModeClient implements LocalClient {
  private readonly transport: Transport;
  private readonly follower: Follower;
  private readonly events = new Emitter<LocalClientEvents>();
  /** Counts what flag sets read, for the usage reports; undefined with `sendUsage: false`. */
  private readonly usage: Usage | undefined;
  /** Whether flag sets count their reads: a boolean of its own, as the evaluation path reads it (derived from `usage` there, it cost 2 of 33 ns: docs/performance.md). */
  private readonly counting: boolean;
  /** Exposures and events (exposures.ts); `exposing` undefined with `sendExposures: false`. */
  private readonly outbox: Outbox;
  private readonly exposing: Exposing | undefined;
  private compiled: Compiled | undefined;
  private etag: string | undefined;
  /** Ruleset requests under way: a patch is not applied meanwhile (their answer could be older than it); the fetch runs again instead. */
  private fetching = 0;
  private closed: Promise<void> | undefined;
  private readonly firstFetch: Promise<boolean>;

  constructor(private readonly options: LocalClientOptions) {
    this.transport = new Transport({ baseUrl: options.baseUrl, headers: { authorization: `Bearer ${options.apiToken}` }, timeoutMs: options.timeoutMs, fetch: options.fetch });
    const project = options.project ? `project=${encodeURIComponent(options.project)}` : '';
    const query = `environment=${encodeURIComponent(options.environment)}${project && `&${project}`}`;
    this.follower = new Follower(this.transport, {
      streamPath: `/sdk/v1/stream?${query}`,
      refetch: 'refetchRuleset',
      stream: options.stream !== false,
      pollIntervalMs: options.pollIntervalMs ?? 30_000,
      fetchOnce: () => this.fetchRuleset(`/sdk/v1/ruleset?${query}`),
      holds: () => this.compiled !== undefined,
      handled: (data) => this.applyMessage(data),
      emit: (event, ...args) => this.events.emit(event, ...args),
    });
    this.counting = options.sendUsage !== false;
    if (this.counting) {
      this.usage = new Usage(this.transport, {
        path: `/sdk/v1/usage${project && `?${project}`}`,
        environment: options.environment,
        intervalMs: options.usageIntervalMs ?? 10_000,
        holds: (key) => this.compiled?.indexes.has(key) === true,
        onError: (error) => this.events.emit('error', error),
      });
    }
    this.outbox = new Outbox(new Transport({ baseUrl: options.baseUrl, headers: { authorization: `Bearer ${options.apiToken}` }, timeoutMs: options.timeoutMs, fetch: options.fetch }), {
      ...options,
      // Its own transport: a 429 of the intake holds back exposures and events, not the ruleset.
      path: `/sdk/v1/events${project && `?${project}`}`,
      onError: (error) => this.events.emit('error', error),
    });
    this.exposing = options.sendExposures === false ? undefined : { outbox: this.outbox, seen: new SeenExposures(options.maxSeenExposures ?? 50_000) };
    this.bootstrap();
    this.firstFetch = this.follower.refresh().then(() => this.compiled !== undefined);
    this.follower.start();
    this.usage?.start();
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
    return new LocalFlags(compiled, toEngineContext(context), this.counting, this.exposing);
  }

  track(name: string, context: GuidonContext, details?: { value?: number }): void {
    this.outbox.track(name, context, details);
  }

  eventStats(): EventStats {
    return this.outbox.eventStats();
  }

  on<E extends keyof LocalClientEvents>(event: E, listener: LocalClientEvents[E]): () => void {
    return this.events.on(event, listener);
  }

  close(): Promise<void> {
    this.closed ??= (async () => {
      this.events.silence();
      this.follower.close();
      this.transport.close();
      await Promise.all([this.usage?.close(), this.outbox.close()]);
    })();
    return this.closed;
  }

  // ---- the ruleset -------------------------------------------------------------------------

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
    queueMicrotask(() => this.events.emit('error', error));
  }

  /** GET /sdk/v1/ruleset with the ETag of the ruleset held, for the follower; resolves the failure, or undefined. */
  private async fetchRuleset(path: string): Promise<GuidonError | undefined> {
    this.fetching++;
    let answer;
    try {
      answer = await this.transport.request(path, { etag: this.compiled ? this.etag : undefined });
    } finally {
      this.fetching--;
    }
    if (answer.kind === 'failed') return answer.error;
    const problem = answer.kind === 'ok' ? this.hold(answer.body, answer.etag) : null;
    return problem === null ? undefined : new GuidonError(`Ruleset refused: ${problem}`, 'ruleset');
  }

  /**
   * A stream's refetchRuleset message (docs/local-evaluation.md, "Freshness: the stream"): nothing to do when
   * it names the ETag held; its patch applied when it starts from the ETag held, and the document
   * it makes held as a fetched one would be; the whole ruleset held when the message carries it (a
   * change too big for a patch). False (the follower fetches) in every other case: no patch,
   * another ETag, a patch that does not fit or a document refused.
   */
  private applyMessage(data: string): boolean {
    const compiled = this.compiled;
    if (compiled === undefined || this.etag === undefined || this.fetching > 0) return false;
    const message = JSON.parse(data) as { type?: unknown; revision?: unknown; etag?: unknown; patch?: { from?: unknown }; ruleset?: unknown } | null;
    if (message?.type !== 'refetchRuleset' || typeof message.etag !== 'string') return false;
    if (message.etag === this.etag) return true;
    if (message.ruleset !== undefined) return this.hold(message.ruleset, message.etag) === null;
    if (typeof message.revision !== 'number' || message.patch?.from !== this.etag) return false;
    const document = applyRulesetPatch(compiled.document, message.patch, message.revision);
    return document !== null && this.hold(document, message.etag) === null;
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
    const usage = this.usage;
    const counters = usage ? set.keys.map((key) => usage.counterFor(key)) : [];
    const previous = this.compiled;
    const keys = previous ? changedFlags(previous.document, doc) : [];
    // A flag defined as before keeps the exposures recorded; a changed one is a new version, recorded again.
    const changed = new Set(keys);
    const kept = (key: string) => (previous && !changed.has(key) ? previous.seen[previous.indexes.get(key) ?? -1] : undefined);
    const seen = this.exposing ? set.keys.map((key) => kept(key) ?? new Map<string, number>()) : [];
    this.compiled = { document: doc, set, indexes: new Map(set.keys.map((key, i) => [key, i])), counters, seen };
    this.etag = etag;
    if (keys.length > 0) this.events.emit('change', { revision: doc.revision, keys });
    return null;
  }
}

export function createLocalClient(options: LocalClientOptions): LocalClient {
  return new LocalModeClient(options);
}
