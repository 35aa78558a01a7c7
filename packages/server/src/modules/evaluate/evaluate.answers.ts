import { NO_VARIANT, OUTCOMES, isPrerequisiteCode } from '@guidon/engine';
import type { Static } from 'typebox';
import { noteAttributes } from '../attributes/attributes.seen.js';
import type { HistoryRecorder } from '../history/history.recorder.js';
import type { EnvironmentView } from './environment-view.js';
import { contextOf, etagOf, evaluateAll, recordAll, type Evaluated } from './evaluation.js';
import type { EvaluateContext } from './evaluate.schemas.js';

/** A context as a client sent it (evaluate's body, a stream's X-Guidon-Context). */
export type SentContext = Static<typeof EvaluateContext>;

/** `{"enabled":…,"reason":"…"}` per outcome code, ready to be spliced into an answer. */
const OUTCOME_JSON: readonly string[] = OUTCOMES.map(({ enabled, reason }) => JSON.stringify({ enabled, reason }));

/** An evaluate answer: its JSON bytes, and the ETag that hashes it (docs/sdk.md). */
export interface Answer {
  readonly body: Buffer;
  readonly etag: string;
  /** Where body was written, when in a slab: see releaseAnswer. */
  readonly slab?: Slab;
}

/** Answers kept per environment: at most this many, and at most this many bytes of them. */
const SLOTS = 16;
const BYTES_PER_ENVIRONMENT = 128 * 1024;
/** Misses after which an environment whose answers never repeated tries keeping them again (trying copies 64 answers, which then live long enough to be promoted: not often). */
const RELEARN_AFTER = 1_000_000;

interface Cached extends Answer {
  readonly codes: Uint8Array;
}

/**
 * Answer bytes are written one after another into slabs: one allocation for many answers. A slab
 * is written again only once it is full and every answer written in it was released (sent:
 * releaseAnswer); an answer never released just keeps its slab from being reused. Answers of
 * 62 KB (1,000 flags) allocated anew each time cost V8 more in garbage collection than building
 * them; reused slabs do not. An answer larger than a quarter of a slab gets a buffer of its own.
 */
const SLAB_BYTES = 1024 * 1024;
/** Free slabs kept for reuse at most (the rest are left to the garbage collector). */
const FREE_SLABS = 16;

class Slab {
  readonly buffer = Buffer.allocUnsafeSlow(SLAB_BYTES);
  used = 0;
  /** Answers written here and not released yet. */
  outstanding = 0;
}

let slab = new Slab();
const freeSlabs: Slab[] = [];

function slabFor(length: number): Slab | undefined {
  if (length > SLAB_BYTES / 4) return undefined;
  if (slab.used + length > SLAB_BYTES) {
    const full = slab;
    slab = freeSlabs.pop() ?? new Slab();
    slab.used = 0;
    if (full.outstanding === 0 && freeSlabs.length < FREE_SLABS) freeSlabs.push(full);
  }
  return slab;
}

/** Room for an answer of `length` bytes: in the current slab (counted as outstanding), or a buffer of its own. */
function answerBuffer(length: number): { body: Buffer; slab: Slab | undefined } {
  const at = slabFor(length);
  if (at === undefined) return { body: Buffer.allocUnsafeSlow(length), slab: undefined };
  const body = at.buffer.subarray(at.used, at.used + length);
  at.used += length;
  at.outstanding++;
  return { body, slab: at };
}

/** The answer's bytes were sent (or will never be): its slab may be written again once all of its answers are. */
export function releaseAnswer(answer: Answer): void {
  const at = answer.slab;
  if (at === undefined || --at.outstanding !== 0 || at === slab) return;
  if (freeSlabs.length < FREE_SLABS) freeSlabs.push(at);
}

/** Varying flags per prepared piece: every combination of their states, made when first needed. */
const GROUP = 3;
/** States a varying flag with variants may take before the template gives up on an answer (4 bits each). */
const STATES = 16;

/**
 * The bytes of the answers where no targeting rule matched, prepared per compiled environment:
 * then only the varying flags differ between answers (rollout flags: in or out; flags whose
 * variants are chosen by weight: which variant), so the answer is the same bytes up to the first
 * varying flag (`head`), then per GROUP varying flags the piece for their combination of states:
 * their fragments and the unchanging fragments up to the next group. An answer is
 * 1 + (varying flags / GROUP) copies of prepared bytes, whatever the number of flags. Each piece
 * repeats its unchanging fragments, so the pieces take up to 2^GROUP times the bytes of an answer
 * (about 500 KB at 1,000 flags) without variants, more with them. Smaller groups take less memory
 * but more copies: GROUP 1 was 2–4 % slower at 1,000 flags (docs/performance.md).
 */
class AnswerTemplate {
  readonly head: Buffer;
  /** The varying flags, ascending. */
  private readonly varying: Uint32Array;
  /** Per varying flag: its in-rollout code when its state is in/out (a flag without variants), else -1 (states). */
  private readonly inCodes: Int16Array;
  /** Per varying flag with variants, the (code | variant << 8) of each state seen, -1 after the last. */
  private readonly states: Int32Array;
  /** Bits per state in a piece's combination: 1 without variants, 4 with. */
  private readonly bits: number;
  /** Pieces by group << (GROUP * bits) | combination: an array without variants (8 per group), a map with (4,096 per group, few used). */
  private readonly pieces: (Buffer | undefined)[] | Map<number, Buffer>;
  /** The pieces of the answer being written (reused). */
  private readonly chosen: Buffer[];

  constructor(
    private readonly environment: EnvironmentView,
    private readonly fragment: (flag: number, code: number, variant: number) => string,
  ) {
    const { rollouts, inRolloutCodes, splits, size } = environment.flagSet;
    const inCodeOf = new Map<number, number>();
    rollouts.forEach((flag, j) => inCodeOf.set(flag, inRolloutCodes[j]!));
    this.varying = Uint32Array.from(new Set([...rollouts, ...splits])).sort();
    // A rollout flag with variants takes more than two states (its off variant, or its on one).
    this.inCodes = Int16Array.from(this.varying, (flag) => (environment.flagSet.variants[flag] === null ? inCodeOf.get(flag)! : -1));
    this.states = new Int32Array(this.varying.length * STATES).fill(-1);
    this.bits = this.inCodes.some((code) => code < 0) ? 4 : 1;
    const size0 = this.varying.length > 0 ? this.varying[0]! : size;
    this.head = Buffer.from('{"flags":{' + this.unchanging(0, size0), 'utf8');
    const groups = Math.ceil(this.varying.length / GROUP);
    this.pieces = this.bits === 1 ? new Array(groups << GROUP) : new Map();
    this.chosen = new Array(groups);
  }

  /**
   * The answer for codes (and variants) that differ from the environment's base only at its
   * varying flags; undefined when a flag took more states than the template keeps (build it then).
   */
  write(codes: Uint8Array): { body: Buffer; slab: Slab | undefined } | undefined {
    const length = Array.isArray(this.pieces) ? this.chooseInOrOut(codes, this.pieces) : this.chooseStates(codes, this.pieces);
    if (length < 0) return undefined;
    const { chosen } = this;
    const written = answerBuffer(length);
    const { body } = written;
    body.set(this.head, 0);
    let offset = this.head.length;
    for (let group = 0; group < chosen.length; group++) {
      const piece = chosen[group]!;
      body.set(piece, offset);
      offset += piece.length;
    }
    return written;
  }

  /**
   * Without variants each varying flag is in or out: its bit is a comparison. A loop of its own,
   * without the states' branch and the map, costs a fifth less at 1,000 flags (docs/performance.md).
   * Fills `chosen`, returns the answer's length.
   */
  private chooseInOrOut(codes: Uint8Array, pieces: (Buffer | undefined)[]): number {
    const { varying, inCodes, chosen } = this;
    let length = this.head.length;
    for (let group = 0, j = 0; j < varying.length; group++) {
      let combination = 0;
      const end = Math.min(j + GROUP, varying.length);
      for (let bit = 0; j < end; j++, bit++) if (codes[varying[j]!] === inCodes[j]) combination |= 1 << bit;
      const key = (group << GROUP) | combination;
      const piece = pieces[key] ?? this.piece(group, key, codes);
      chosen[group] = piece;
      length += piece.length;
    }
    return length;
  }

  /** With variants: each varying flag's state number (stateOf), 4 bits each. -1 when a flag took more states than kept. */
  private chooseStates(codes: Uint8Array, pieces: Map<number, Buffer>): number {
    const { varying, inCodes, chosen, bits } = this;
    let length = this.head.length;
    for (let group = 0, j = 0; j < varying.length; group++) {
      let combination = 0;
      const end = Math.min(j + GROUP, varying.length);
      for (let shift = 0; j < end; j++, shift += bits) {
        const flag = varying[j]!;
        const inCode = inCodes[j]!;
        const state = inCode >= 0 ? (codes[flag] === inCode ? 1 : 0) : this.stateOf(j, codes[flag]! | (variantAt(this.environment, codes, flag) << 8));
        if (state < 0) return -1;
        combination |= state << shift;
      }
      const key = (group << (GROUP * bits)) | combination;
      const piece = pieces.get(key) ?? this.piece(group, key, codes);
      chosen[group] = piece;
      length += piece.length;
    }
    return length;
  }

  /** The state number of a varying flag with variants for its (code | variant << 8); -1 past STATES. */
  private stateOf(j: number, id: number): number {
    const base = j * STATES;
    for (let k = 0; k < STATES; k++) {
      const known = this.states[base + k]!;
      if (known === id) return k;
      if (known === -1) {
        this.states[base + k] = id;
        return k;
      }
    }
    return -1;
  }

  private piece(group: number, key: number, codes: Uint8Array): Buffer {
    const { varying } = this;
    const { size } = this.environment.flagSet;
    let json = '';
    const end = Math.min((group + 1) * GROUP, varying.length);
    for (let j = group * GROUP; j < end; j++) {
      const flag = varying[j]!;
      json += this.fragment(flag, codes[flag]!, variantAt(this.environment, codes, flag)) + this.unchanging(flag + 1, j + 1 < varying.length ? varying[j + 1]! : size);
    }
    const piece = Buffer.from(json, 'utf8');
    if (Array.isArray(this.pieces)) this.pieces[key] = piece;
    else this.pieces.set(key, piece);
    return piece;
  }

  /** The fragments of flags [from, to) at their base codes, and the closing braces after the last flag. */
  private unchanging(from: number, to: number): string {
    const { baseCodes, baseVariants, size } = this.environment.flagSet;
    let json = '';
    for (let flag = from; flag < to; flag++) json += this.fragment(flag, baseCodes[flag]!, baseVariants[flag]!);
    return to === size ? json + '}}' : json;
  }
}

/**
 * The answers of one compiled environment. Each flag's JSON fragment (`"key":{…}`, with its comma)
 * is made once per outcome it gives; recent answers are kept by their outcome codes, so a request
 * whose every flag has the outcome of a recent request's reuses that request's bytes and ETag
 * instead of building and hashing them again. Bounded: the last SLOTS distinct answers, within
 * BYTES_PER_ENVIRONMENT bytes; a compiled environment is dropped, with its answers, on any change.
 * Where answers rarely repeat (many rollouts), new ones stop being kept: keeping costs a copy.
 */
export class EnvironmentAnswers {
  /** `"<key>":` for each flag, with the separating comma in front from the second on. */
  private readonly jsonKeys: readonly string[];
  /** Per flag, up to FRAGMENTS (code and variant: code | variant << 8, fragment) pairs: a flag gives a handful of outcomes at most. */
  private readonly fragmentCodes: Int32Array;
  private readonly fragments: string[];
  /** The same fragments as UTF-8 bytes, made when an answer is built from them. */
  private readonly fragmentBytes: (Buffer | undefined)[];
  /** Fragments kept per flag: FRAGMENTS, twice as many with variants (a (code, variant) pair each). */
  private readonly perFlag: number;
  /** The fragments of the answer being built (reused). */
  private readonly chosen: Buffer[];
  private readonly template: AnswerTemplate;
  /** Kept answers and the hash of their codes (a quick first test), replaced oldest first. */
  private readonly kept: Cached[] = [];
  private readonly keptHashes = new Int32Array(SLOTS);
  private next = 0;
  private hits = 0;
  private misses = 0;
  /** How many are kept: fewer for large answers, so that they stay within BYTES_PER_ENVIRONMENT (set by the first answer). */
  private capacity = 0;

  /** With `withKinds`, each flag's answer also carries its kind (and an unmet prerequisite's key): the answer to `X-Guidon-Answer: kind` (docs/api.md). */
  constructor(
    private readonly environment: EnvironmentView,
    private readonly withKinds = false,
  ) {
    const count = environment.flagSet.size;
    this.jsonKeys = environment.quotedKeys.map((key, i) => `${i === 0 ? '' : ','}${key}:`);
    this.perFlag = environment.flagSet.hasVariants ? FRAGMENTS * 2 : FRAGMENTS;
    this.fragmentCodes = new Int32Array(count * this.perFlag).fill(-1);
    this.fragments = new Array(count * this.perFlag);
    this.fragmentBytes = new Array(count * this.perFlag);
    this.chosen = new Array(count);
    this.template = new AnswerTemplate(environment, (flag, code, variant) => this.fragment(flag, code, variant));
  }

  answer({ codes, ruleMatched }: Evaluated): Answer {
    const count = this.environment.outcomeWidth;
    // Where no answer was ever reused, looking costs more than it finds: look again now and then.
    if (this.hits === 0 && this.misses >= RELEARN_AFTER) this.misses = 0;
    const looking = this.hits > 0 || this.misses <= 64;
    let h = 0x811c9dc5; // FNV-1a over the codes
    if (looking) {
      for (let i = 0; i < count; i++) h = Math.imul(h ^ codes[i]!, 0x01000193);
      for (let k = 0; k < this.kept.length; k++) {
        if (this.keptHashes[k] === h && sameCodes(this.kept[k]!.codes, codes, count)) {
          this.hits++;
          return this.kept[k]!;
        }
      }
    }

    const { body, slab: at } = (ruleMatched ? undefined : this.template.write(codes)) ?? this.built(codes);
    const etag = this.etag(codes);
    // Kept while at least one answer in nine is a reuse (or too few have been seen to tell).
    if (++this.misses > 64 && this.hits * 8 < this.misses) return { body, etag, slab: at };
    // A copy of its own: a kept answer must not hold a slab.
    const answer: Cached = { body: Buffer.from(body), etag, codes: codes.slice(0, count) };
    releaseAnswer({ body, etag, slab: at });
    if (this.capacity === 0) this.capacity = Math.max(1, Math.min(SLOTS, Math.floor(BYTES_PER_ENVIRONMENT / body.length)));
    this.kept[this.next] = answer;
    this.keptHashes[this.next] = h;
    this.next = (this.next + 1) % this.capacity;
    return answer;
  }

  /** Any answer, fragment by fragment (where a targeting rule matched: the template does not apply), copied as bytes. */
  private built(codes: Uint8Array): { body: Buffer; slab: Slab | undefined } {
    const { size } = this.environment.flagSet;
    const { chosen } = this;
    let length = HEAD.length + TAIL.length;
    for (let i = 0; i < size; i++) {
      const bytes = this.fragmentBuffer(i, codes[i]!, variantAt(this.environment, codes, i));
      chosen[i] = bytes;
      length += bytes.length;
    }
    const written = answerBuffer(length);
    const { body } = written;
    body.set(HEAD, 0);
    let offset = HEAD.length;
    for (let i = 0; i < size; i++) {
      const bytes = chosen[i]!;
      body.set(bytes, offset);
      offset += bytes.length;
    }
    body.set(TAIL, offset);
    return written;
  }

  /** The slot of a flag's (code, variant) fragment, made when first needed; -1 past the slots kept. */
  private slotOf(flag: number, code: number, variant: number): number {
    const base = flag * this.perFlag;
    const id = code | (variant << 8);
    for (let k = base; k < base + this.perFlag; k++) {
      const known = this.fragmentCodes[k];
      if (known === id) return k;
      if (known === -1) {
        this.fragmentCodes[k] = id;
        this.fragments[k] = this.made(flag, code, variant);
        return k;
      }
    }
    return -1;
  }

  private fragmentBuffer(flag: number, code: number, variant: number): Buffer {
    const k = this.slotOf(flag, code, variant);
    if (k < 0) return Buffer.from(this.made(flag, code, variant), 'utf8'); // more outcomes than expected: not kept
    return (this.fragmentBytes[k] ??= Buffer.from(this.fragments[k]!, 'utf8'));
  }

  /** The ETag of the answer for `codes` (the one with kinds has its own). */
  etag(codes: Uint8Array): string {
    const etag = etagOf(this.environment, codes);
    return this.withKinds ? kindsEtag(etag) : etag;
  }

  /** A flag's `"<key>":{…}` in the answer for `codes`, as the answer writes it, without the comma before it. */
  flagJson(flag: number, codes: Uint8Array): string {
    const fragment = this.fragment(flag, codes[flag]!, variantAt(this.environment, codes, flag));
    return flag === 0 ? fragment : fragment.slice(1);
  }

  private fragment(flag: number, code: number, variant: number): string {
    const k = this.slotOf(flag, code, variant);
    return k < 0 ? this.made(flag, code, variant) : this.fragments[k]!; // past the slots: not kept
  }

  /**
   * `"<key>":{"enabled":…,"reason":"…"}`, with `"variant"` and `"value"` for a flag with variants
   * (docs/variants.md), and with kinds asked for, `"kind"` and an unmet prerequisite's key.
   */
  private made(flag: number, code: number, variant: number): string {
    const { flagSet } = this.environment;
    const members = variant === NO_VARIANT ? undefined : this.environment.variantMembers[flag]?.[variant];
    // An unmet prerequisite's reason names the parent: the flag's own (docs/prerequisites.md).
    const outcome = isPrerequisiteCode(code) ? JSON.stringify({ enabled: false, reason: flagSet.reasonOf(flag, code) }) : OUTCOME_JSON[code]!;
    let json = members === undefined ? outcome : outcome.slice(0, -1) + members + '}';
    if (this.withKinds) {
      const prerequisite = flagSet.prerequisiteOf(flag, code);
      json = `${json.slice(0, -1)},"kind":"${flagSet.reasonKind(flag, code)}"${prerequisite === null ? '' : `,"prerequisite":${JSON.stringify(prerequisite)}`}}`;
    }
    return this.jsonKeys[flag]! + json;
  }
}

/** The variant index of a flag in an evaluation's bytes (codes, then variants when the environment has any: outcomeWidth). */
const variantAt = (environment: EnvironmentView, codes: Uint8Array, flag: number): number => (environment.flagSet.hasVariants ? codes[environment.flagSet.size + flag]! : NO_VARIANT);

/** The ETag of an answer with kinds: not the plain answer's, whose bytes differ. */
const kindsEtag = (etag: string) => `${etag.slice(0, -1)}.k"`;

/** Outcomes one flag usually gives: disabled, its rules' matches, then in/not in rollout, enabled globally or no rule matched. */
const FRAGMENTS = 8;
const HEAD = Buffer.from('{"flags":{');
const TAIL = Buffer.from('}}');

function sameCodes(a: Uint8Array, b: Uint8Array, count: number): boolean {
  for (let i = 0; i < count; i++) if (a[i] !== b[i]) return false;
  return true;
}

/** A compiled environment with its two answer caches (evaluate.cache.ts): plain, and with kinds. */
type AnsweringEnvironment = EnvironmentView & { readonly answers: EnvironmentAnswers; readonly answersWithKinds: EnvironmentAnswers };

/** What a change stream's client was last sent (streams/streams.hub.ts): the answer's codes, in the environment and answers they were made in, and its ETag. */
export interface SentAnswer {
  readonly environment: EnvironmentView;
  readonly answers: EnvironmentAnswers;
  readonly codes: Uint8Array;
  readonly etag: string;
}

/** Whether two compilations answer the same flags in the same order (their codes then line up position by position). */
const sameFlags = (a: EnvironmentView, b: EnvironmentView) => a.outcomeWidth === b.outcomeWidth && a.flagSet.hasVariants === b.flagSet.hasVariants && Buffer.compare(a.keysDigest, b.keysDigest) === 0;

/**
 * answerFor for a change stream's message (docs/sdk.md, "The answer in the message"): evaluated
 * and recorded as evaluate does. After `previous`, in a compilation with the same flags in the same
 * order, `changes`: `{"flags":{…}}` with only the flags whose `"<key>":{…}` is not what `previous`
 * gave (about 100 bytes for one toggle, not the 6–8 KB of a 100-flag answer); else `whole`.
 * `sent` is what the client then holds.
 */
export function streamAnswerFor(
  environment: AnsweringEnvironment,
  given: SentContext,
  history: HistoryRecorder,
  withKinds: boolean,
  previous: SentAnswer | undefined,
): { whole: Answer; changes?: undefined; sent: SentAnswer } | { whole?: undefined; changes: string; sent: SentAnswer } {
  const evaluated = evaluatedFor(environment, given, history);
  const answers = withKinds ? environment.answersWithKinds : environment.answers;
  const codes = evaluated.codes.slice(0, environment.outcomeWidth);
  if (previous === undefined || !sameFlags(previous.environment, environment)) {
    const whole = answers.answer(evaluated);
    return { whole, sent: { environment, answers, codes, etag: whole.etag } };
  }
  const changed: string[] = [];
  for (let flag = 0; flag < environment.flagSet.size; flag++) {
    const now = answers.flagJson(flag, codes);
    if (now !== previous.answers.flagJson(flag, previous.codes)) changed.push(now);
  }
  const etag = answers.etag(codes);
  return { changes: `{"flags":{${changed.join(',')}}}`, sent: { environment, answers, codes, etag } };
}

/**
 * What evaluate does for a request that passed its checks (docs/api.md), by whichever path it came
 * (evaluate.routes.ts, evaluate.direct.ts): every flag evaluated for the context, the request
 * recorded in history, and the answer (with each flag's kind when the request asked for it).
 */
export function answerFor(
  environment: AnsweringEnvironment,
  sent: SentContext | undefined,
  history: HistoryRecorder,
  withKinds: boolean,
): Answer {
  const evaluated = evaluatedFor(environment, sent, history);
  return (withKinds ? environment.answersWithKinds : environment.answers).answer(evaluated);
}

/** Every flag evaluated for a context as a client sent it, its attributes noted and the evaluation recorded in the history: what evaluate and a change stream's answer both do. */
function evaluatedFor(environment: AnsweringEnvironment, sent: SentContext | undefined, history: HistoryRecorder): Evaluated {
  const context = contextOf(sent?.user_id, sent?.user_email, sent?.custom_attributes);
  noteAttributes(environment.environmentId, sent?.custom_attributes);
  const evaluated = evaluateAll(environment, context);
  recordAll(history, environment, context, evaluated);
  return evaluated;
}
