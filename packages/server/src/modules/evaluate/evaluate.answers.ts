import type { HistoryRecorder } from '../history/history.recorder.js';
import type { CompiledEnvironment } from './evaluate.cache.js';
import { contextOf, etagOf, evaluateAll, recordAll } from './evaluation.js';
import { OUTCOMES } from './outcomes.js';

/** An evaluate answer: its JSON (bytes when kept for reuse), and the ETag that hashes it (contract §12). */
export interface Answer {
  readonly body: Buffer | string;
  /** Of a string body: latin1 when it is ASCII (one byte per character, written as it is), else utf8. */
  readonly encoding: 'latin1' | 'utf8';
  /** In bytes. */
  readonly length: number;
  readonly etag: string;
}

/** Answers kept per environment: at most this many, and at most this many bytes of them. */
const SLOTS = 16;
const BYTES_PER_ENVIRONMENT = 128 * 1024;

interface Cached extends Answer {
  readonly body: Buffer;
  readonly codes: Uint8Array;
}

/**
 * The answers of one compiled environment. Each flag's JSON fragment (`"key":{…}`, with its comma)
 * is made once per outcome it gives; recent answers are kept by their outcome codes, so a request
 * whose every flag has the outcome of a recent request's reuses that request's bytes and ETag
 * instead of building and hashing them again. Bounded: the last SLOTS distinct answers, within
 * BYTES_PER_ENVIRONMENT bytes; a compiled environment is dropped, with its answers, on any change.
 * Where answers rarely repeat (many rollouts), new ones stop being kept: keeping costs a copy.
 */
class EnvironmentAnswers {
  /** Per flag, up to FRAGMENTS (code, fragment) pairs: a flag gives a handful of outcomes at most. */
  private readonly fragmentCodes: Int16Array;
  private readonly fragments: string[];
  /** Kept answers and the hash of their codes (a quick first test), replaced oldest first. */
  private readonly kept: Cached[] = [];
  private readonly keptHashes = new Int32Array(SLOTS);
  private next = 0;
  private hits = 0;
  private misses = 0;
  /** How many are kept: fewer for large answers, so that they stay within BYTES_PER_ENVIRONMENT (set by the first answer). */
  private capacity = 0;
  /** Reasons are ASCII, and flag keys are [a-z0-9_-]; a key from elsewhere makes the answer UTF-8. */
  private readonly encoding: 'latin1' | 'utf8';

  constructor(private readonly environment: CompiledEnvironment) {
    const count = environment.flags.length;
    this.fragmentCodes = new Int16Array(count * FRAGMENTS).fill(-1);
    this.fragments = new Array(count * FRAGMENTS);
    this.encoding = environment.jsonKeys.every((key) => /^[\x20-\x7e]*$/.test(key)) ? 'latin1' : 'utf8';
  }

  answer(codes: Uint8Array): Answer {
    const count = this.environment.flags.length;
    let h = 0x811c9dc5; // FNV-1a over the codes
    for (let i = 0; i < count; i++) h = Math.imul(h ^ codes[i]!, 0x01000193);
    for (let k = 0; k < this.kept.length; k++) {
      if (this.keptHashes[k] === h && sameCodes(this.kept[k]!.codes, codes, count)) {
        this.hits++;
        return this.kept[k]!;
      }
    }

    let json = '{"flags":{';
    for (let i = 0; i < count; i++) json += this.fragment(i, codes[i]!);
    json += '}}';
    const etag = etagOf(this.environment, codes);
    // Kept while at least one answer in nine is a reuse (or too few have been seen to tell).
    const { encoding } = this;
    if (++this.misses > 64 && this.hits * 8 < this.misses) return { body: json, encoding, length: encoding === 'latin1' ? json.length : Buffer.byteLength(json), etag };
    const body = Buffer.from(json, encoding); // latin1 of ASCII text: a copy, no encoding
    const answer: Cached = { body, encoding, length: body.length, etag, codes: codes.slice(0, count) };
    if (this.capacity === 0) this.capacity = Math.max(1, Math.min(SLOTS, Math.floor(BYTES_PER_ENVIRONMENT / body.length)));
    this.kept[this.next] = answer;
    this.keptHashes[this.next] = h;
    this.next = (this.next + 1) % this.capacity;
    return answer;
  }

  private fragment(flag: number, code: number): string {
    const base = flag * FRAGMENTS;
    for (let k = base; k < base + FRAGMENTS; k++) {
      const known = this.fragmentCodes[k];
      if (known === code) return this.fragments[k]!;
      if (known === -1) {
        this.fragmentCodes[k] = code;
        return (this.fragments[k] = this.environment.jsonKeys[flag]! + OUTCOMES[code]!.json);
      }
    }
    return this.environment.jsonKeys[flag]! + OUTCOMES[code]!.json; // more outcomes than expected: not kept
  }
}

/** Outcomes one flag can give: disabled; or one of three rule matches, then in/not in rollout or enabled globally. */
const FRAGMENTS = 6;

function sameCodes(a: Uint8Array, b: Uint8Array, count: number): boolean {
  for (let i = 0; i < count; i++) if (a[i] !== b[i]) return false;
  return true;
}

const byEnvironment = new WeakMap<CompiledEnvironment, EnvironmentAnswers>();

/** The answer for these outcome codes (one per flag of the environment, in order). */
export function answerOf(environment: CompiledEnvironment, codes: Uint8Array): Answer {
  let answers = byEnvironment.get(environment);
  if (!answers) byEnvironment.set(environment, (answers = new EnvironmentAnswers(environment)));
  return answers.answer(codes);
}

/**
 * What evaluate does for a request that passed its checks (contract §2), by whichever path it came
 * (evaluate.routes.ts, evaluate.direct.ts): every flag evaluated for the context, the request
 * recorded in history, and the answer.
 */
export function answerFor(environment: CompiledEnvironment, userId: string | null | undefined, userEmail: string | null | undefined, history: HistoryRecorder): Answer {
  const context = contextOf(userId, userEmail);
  const codes = evaluateAll(environment, context);
  recordAll(history, environment, context, codes);
  return answerOf(environment, codes);
}
