/**
 * What evaluating means, in one place for every SDK surface (evaluate, OFREP, the stream): the
 * outcome of each flag, the ETag of an answer, and the history it leaves. The routes only differ
 * in the JSON they build from the outcomes (the engine's outcome table).
 */
import { hash } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import { codeOf, variantOf, type EvaluationContext } from '@guidon/engine';
import { isStorable, toStorable } from '../../http/well-formed.js';
import type { HistoryRecorder } from '../history/history.recorder.js';
import type { EnvironmentView } from './environment-view.js';

export type { EvaluationContext };

/** The context as the engine takes it, from the fields of a request. */
export function contextOf(userId: string | null | undefined, userEmail: string | null | undefined, customAttributes?: EvaluationContext['custom_attributes']): EvaluationContext {
  return { user_id: userId ?? undefined, user_email: userEmail ?? undefined, custom_attributes: customAttributes ?? undefined };
}

/** What evaluating every flag gave; reused, since a request is evaluated synchronously. */
export interface Evaluated {
  /**
   * The outcome code of each flag, in the environment's order, then, when the environment has
   * variants, each flag's variant index (its outcomeWidth; more bytes may follow).
   */
  readonly codes: Uint8Array;
  /** False: no targeting rule matched, so only the environment's rollout and split flags may differ from its base codes and variants. */
  readonly ruleMatched: boolean;
}
const evaluated = { codes: new Uint8Array(2048), ruleMatched: false };
/** evaluated.codes from byte `variantsAt` on: where the variant indexes go (kept, not made per request). */
let variants = evaluated.codes.subarray(0);
let variantsAt = 0;

/** Evaluates every flag of the environment; the result is valid until the next call. */
export function evaluateAll(environment: EnvironmentView, context: EvaluationContext): Evaluated {
  const { flagSet } = environment;
  if (environment.outcomeWidth > evaluated.codes.length) evaluated.codes = new Uint8Array(environment.outcomeWidth * 2);
  if (!flagSet.hasVariants) {
    evaluated.ruleMatched = flagSet.evaluateInto(context, evaluated.codes);
    return evaluated;
  }
  if (variantsAt !== flagSet.size || variants.buffer !== evaluated.codes.buffer) {
    variants = evaluated.codes.subarray(flagSet.size);
    variantsAt = flagSet.size;
  }
  evaluated.ruleMatched = flagSet.evaluateInto(context, evaluated.codes, variants);
  return evaluated;
}

const one = new Uint8Array(2);

/** Evaluates one flag and records it in history, as a one-flag evaluate would; returns evaluateFlag's packed code and variant (codeOf, variantOf). */
export function evaluateOne(history: HistoryRecorder, environment: EnvironmentView, index: number, context: EvaluationContext): number {
  const packed = environment.flagSet.evaluateFlag(context, index);
  one[0] = codeOf(packed);
  one[1] = variantOf(packed);
  history.record(environment.oneFlagView(index), storableUserId(context), one, 1);
  return packed;
}

/** Records the evaluation of every flag of the environment (what evaluateAll gave). */
export function recordAll(history: HistoryRecorder, environment: EnvironmentView, context: EvaluationContext, { codes, ruleMatched }: Evaluated): void {
  if (environment.flagSet.size > 0) history.record(environment, storableUserId(context), codes, environment.flagSet.size, ruleMatched ? undefined : environment.countingBase);
}

const storableUserId = ({ user_id }: EvaluationContext) => (user_id === undefined ? null : isStorable(user_id) ? user_id : toStorable(user_id));

let scratch = new Uint8Array(1024 + 20);

/**
 * A weak ETag that hashes the answer (docs/sdk.md). An answer is fully determined by its flag
 * keys, in order (and variants: keysDigest), and each flag's outcome code (the engine's table,
 * fixed forever) and variant index, so the tag
 * hashes that compact form: the same answer gives the same tag on every instance, a context whose
 * attributes change the answer gets a new one, and 1,000 flags hash 1 KB instead of 60 KB of JSON.
 */
export function etagOf(environment: EnvironmentView, codes: Uint8Array): string {
  const count = environment.outcomeWidth;
  if (scratch.length < count + 20) scratch = new Uint8Array((count + 20) * 2);
  scratch.set(environment.keysDigest, 0);
  scratch.set(codes.subarray(0, count), 20);
  return `W/"${hash('sha1', scratch.subarray(0, count + 20), 'base64url')}"`;
}

/** Whether If-None-Match names this ETag (a list, `*`, weak or strong: comparison is weak, RFC 9110). */
export function notModified(headers: IncomingHttpHeaders, etag: string): boolean {
  const header = headers['if-none-match'];
  if (typeof header !== 'string' || header === '') return false;
  if (header.trim() === '*') return true;
  const opaque = etag.slice(2);
  for (const candidate of header.split(',')) {
    const tag = candidate.trim();
    if ((tag.startsWith('W/') ? tag.slice(2) : tag) === opaque) return true;
  }
  return false;
}
