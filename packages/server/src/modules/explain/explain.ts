import { evaluateFlag, type CompileOptions, type EvaluationContext } from '@guidon/engine';
import type { ExplainedRule, ExplainFlag } from './explain.repository.js';

export interface Explanation {
  enabled: boolean;
  reason: string;
  /** The rule that served the context, or null when none did (disabled, rollout, everyone else). */
  rule: ExplainedRule | null;
}

/**
 * Which rule served a context, with the engine's public API only: the flag's own answer, and when
 * that answer came from a rule, the first enabled rule (in evaluation order) that serves the
 * context when it is the flag's only rule and no one else is served. A rule whose own rollout
 * leaves the user out does not serve, just as evaluation then goes on to the next rule, so the
 * first such rule is the one that served.
 */
export function explainFlag(flag: ExplainFlag, context: EvaluationContext, options: CompileOptions): Explanation {
  const { enabled, reason, kind } = evaluateFlag(flag, context, options);
  if (kind !== 'TARGETING_MATCH') return { enabled, reason, rule: null };
  for (let i = 0; i < flag.rules.length; i++) {
    const rule = flag.rules[i]!;
    if (!rule.enabled) continue;
    const alone = evaluateFlag({ key: flag.key, enabled: true, rolloutPercentage: 0, everyoneElse: 'off', rules: [rule] }, context, options);
    if (alone.kind === 'TARGETING_MATCH') return { enabled, reason, rule: flag.stored[i]! };
  }
  return { enabled, reason, rule: null };
}
