import type { EvaluationResult } from '@guidon/engine';

/** One possible answer for a flag, with what the hot path needs of it precomputed. */
export interface Outcome {
  /** Small integer that stands for it in the history buffer (fits in a byte: see register). */
  readonly code: number;
  readonly enabled: boolean;
  readonly reason: string;
  /** `{"enabled":…,"reason":"…"}`, ready to be spliced into the evaluate answer. */
  readonly json: string;
}

/**
 * The engine returns a constant result object per possible outcome of a compiled flag; this maps
 * each of them, once, to its JSON and code. Distinct outcomes are few (reasons: 3 fixed, 3 rule
 * types, in/not in N% for N in 1..100), so codes stay below 256.
 */
export class Outcomes {
  private readonly byResult = new WeakMap<EvaluationResult, Outcome>();
  private readonly byReason = new Map<string, Outcome>();
  readonly table: Outcome[] = [];

  of(result: EvaluationResult): Outcome {
    return this.byResult.get(result) ?? this.register(result);
  }

  private register(result: EvaluationResult): Outcome {
    const key = `${result.enabled}:${result.reason}`;
    let outcome = this.byReason.get(key);
    if (!outcome) {
      if (this.table.length > 255) throw new Error('more than 256 distinct evaluation outcomes');
      outcome = Object.freeze({ code: this.table.length, enabled: result.enabled, reason: result.reason, json: JSON.stringify({ enabled: result.enabled, reason: result.reason }) });
      this.table.push(outcome);
      this.byReason.set(key, outcome);
    }
    this.byResult.set(result, outcome);
    return outcome;
  }
}
