import { REASONS, RULE_TYPES, type EvaluationResult } from '@guidon/engine';

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
 * Every outcome evaluation can give, by code. Codes are stored, so this order never changes:
 * 0 disabled, 1 enabled globally, 2–4 matched user_id / user_email / email_domain rule,
 * 4+N in N% rollout (N = 1..100), 104+N not in N% rollout (N = 1..100).
 */
export const OUTCOMES: readonly Outcome[] = (() => {
  const all = [outcome(0, false, REASONS.disabled), outcome(1, true, REASONS.enabledGlobally)];
  for (const type of RULE_TYPES) all.push(outcome(all.length, true, REASONS.matchedRule(type)));
  for (let n = 1; n <= 100; n++) all.push(outcome(4 + n, true, REASONS.inRollout(n)));
  for (let n = 1; n <= 100; n++) all.push(outcome(104 + n, false, REASONS.notInRollout(n)));
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
