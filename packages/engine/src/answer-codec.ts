/**
 * The pipeline's answer for one flag, packed in one small integer, and the only place that knows
 * its layout (the pipeline, prerequisites, the server and the SDK all read and write it here):
 *
 *   bits  0–7   the outcome code (outcomes.ts)
 *   bits  8–15  the variant's index + 1; 0: no variant (NO_VARIANT)
 *   bits 16–30  the served rule's rank + 1; 0: no rule served
 *
 * A number rather than an object: the pipeline answers millions of flags a second and a small
 * integer costs no allocation. Every function here is a line or two, which V8 inlines.
 */
import { NO_VARIANT } from './model.js';
import { ENABLED } from './outcomes.js';

/** An answer packed as above. */
export type PackedAnswer = number;

const VARIANT_SHIFT = 8;
const RULE_SHIFT = 16;
/** Any answer at or above this one names a served rule. */
const RULE_UNIT = 1 << RULE_SHIFT;
/** The highest rank an answer holds: a rank past it (a flag of more than 32,766 rules; the server allows 100) is answered as it. */
export const MAX_RANK = 0x7ffe;
/** The rank of an answer that no rule served. */
export const NO_RULE = -1;

/** An answer: `code`, `variant` (a variant's index, or NO_VARIANT) and `rank` (a rule's rank, or NO_RULE). */
export function encodeAnswer(code: number, variant: number = NO_VARIANT, rank: number = NO_RULE): PackedAnswer {
  // NO_VARIANT + 1 is 256: masked to 0, "no variant".
  return code | (((variant + 1) & 255) << VARIANT_SHIFT) | (Math.min(rank + 1, MAX_RANK + 1) << RULE_SHIFT);
}

/** `answer` (which has no variant yet) with the variant `variant` (an index, or NO_VARIANT). */
export const withVariant = (answer: PackedAnswer, variant: number): PackedAnswer => answer | (((variant + 1) & 255) << VARIANT_SHIFT);

/** The outcome code. */
export const codeOf = (packed: PackedAnswer): number => packed & 255;

/** The variant's index, or NO_VARIANT (255): also what a Uint8Array of variants holds for "none". */
// ((byte - 1) & 255) without a branch: byte 0 gives 255; the rule's bits above fall out of the mask.
export const variantOf = (packed: PackedAnswer): number => ((packed >>> VARIANT_SHIFT) + 255) & 255;

/** The served rule's rank, or NO_RULE. */
export const ruleOf = (packed: PackedAnswer): number => (packed >>> RULE_SHIFT) - 1;

/** Whether a rule served. */
export const ruleServed = (packed: PackedAnswer): boolean => packed >= RULE_UNIT;

/** The answer without its rule: the code and variant, what CompiledFlagSet.evaluateFlag gives. */
export const withoutRule = (packed: PackedAnswer): PackedAnswer => packed & (RULE_UNIT - 1);

/** Whether the answer is `enabled: true` (a byte read: a hot path's check, where OUTCOMES[code].enabled costs tens of ns). */
export const enabledOf = (packed: PackedAnswer): boolean => ENABLED[packed & 255] === 1;
