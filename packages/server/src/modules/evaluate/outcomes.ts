import { REASONS, RULE_TYPES, type EvaluationResult, type RuleType } from '@guidon/engine';

/** One possible answer for a flag, with what the hot path needs of it precomputed. */
export interface Outcome {
  /** Its byte in stored history: the same in every process and release (see OUTCOMES). */
  readonly code: number;
  readonly enabled: boolean;
  readonly reason: string;
  /** `{"enabled":…,"reason":"…"}`, ready to be spliced into the evaluate answer. */
  readonly json: string;
}

function outcome(code: number, enabled: boolean, reason: string): Outcome {
  return Object.freeze({ code, enabled, reason, json: JSON.stringify({ enabled, reason }) });
}

/**
 * The stored code of each outcome. Codes are kept in history forever, so each is written out here
 * and never changes (tests/outcome-codes.test.ts holds the frozen table): a new rule type takes
 * the next free code (205 on), never a place in a list.
 */
export const RULE_MATCH_CODES: Readonly<Record<RuleType, number>> = Object.freeze({ user_id: 2, user_email: 3, email_domain: 4 });
export const DISABLED_CODE = 0;
export const ENABLED_GLOBALLY_CODE = 1;
/** 4 + N for "in N% rollout", N = 1..100 (5..104). */
export const IN_ROLLOUT_BASE = 4;
/** 104 + N for "not in N% rollout", N = 1..100 (105..204). */
export const NOT_IN_ROLLOUT_BASE = 104;

/** Every outcome evaluation can give, indexed by code. */
export const OUTCOMES: readonly Outcome[] = (() => {
  const all: Outcome[] = [];
  const add = (code: number, enabled: boolean, reason: string) => {
    if (all[code]) throw new Error(`outcome code ${code} given twice`);
    all[code] = outcome(code, enabled, reason);
  };
  add(DISABLED_CODE, false, REASONS.disabled);
  add(ENABLED_GLOBALLY_CODE, true, REASONS.enabledGlobally);
  for (const type of RULE_TYPES) add(RULE_MATCH_CODES[type], true, REASONS.matchedRule(type));
  for (let n = 1; n <= 100; n++) add(IN_ROLLOUT_BASE + n, true, REASONS.inRollout(n));
  for (let n = 1; n <= 100; n++) add(NOT_IN_ROLLOUT_BASE + n, false, REASONS.notInRollout(n));
  if (all.length > 256 || all.some((entry) => entry === undefined)) throw new Error('outcome codes must fill 0..n without a gap and fit a byte');
  return Object.freeze(all);
})();

const byAnswer = new Map(OUTCOMES.map((o) => [`${o.enabled}:${o.reason}`, o]));
const byResult = new WeakMap<EvaluationResult, Outcome>();

/** The outcome of an engine result. The engine returns constant result objects, so this is one WeakMap hit. */
export function outcomeOf(result: EvaluationResult): Outcome {
  let found = byResult.get(result);
  if (!found) {
    found = byAnswer.get(`${result.enabled}:${result.reason}`);
    if (!found) throw new Error(`evaluation gave an outcome without a code: ${result.reason}`);
    byResult.set(result, found);
  }
  return found;
}
