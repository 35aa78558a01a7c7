import { compileFlagSet, type CompileOptions, type EvaluationContext } from '@guidon/engine';
import type { ExplainedRule, ExplainFlag } from './explain.repository.js';

export interface Explanation {
  enabled: boolean;
  reason: string;
  /** The rule that served the context, or null when none did (disabled, rollout, everyone else). */
  rule: ExplainedRule | null;
  /** The first prerequisite not met (its flag's key), or null (docs/prerequisites.md). */
  prerequisite: string | null;
}

/** What each flag gives a context and which rule served it: the engine's answer names the rule (its rank, the index in `rules` and `stored`). */
export function explainFlags(flags: readonly ExplainFlag[], context: EvaluationContext, options: CompileOptions): Record<string, Explanation> {
  const set = compileFlagSet(flags, options);
  return Object.fromEntries(
    flags.map((flag, i) => {
      const { outcome, reason, prerequisite, rule } = set.answer(context, i);
      return [flag.key, { enabled: outcome.enabled, reason, rule: rule >= 0 ? flag.stored[rule]! : null, prerequisite }];
    }),
  );
}
