import { OUTCOMES, codeOf, compileFlagSet, evaluateFlag, type CompileOptions, type EvaluationContext, type Outcome } from '@guidon/engine';
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
export function explainFlags(flags: readonly ExplainFlag[], context: EvaluationContext, options: CompileOptions): Record<string, Explanation> {
  // Every flag's answer from one compiled set, as evaluate computes it; rules one by one only for flags a rule served.
  const set = compileFlagSet(flags, options);
  return Object.fromEntries(flags.map((flag, i) => [flag.key, explainFlag(flag, OUTCOMES[codeOf(set.evaluateFlag(context, i))]!, context, options)]));
}

function explainFlag(flag: ExplainFlag, { enabled, reason, kind }: Outcome, context: EvaluationContext, options: CompileOptions): Explanation {
  if (kind !== 'TARGETING_MATCH') return { enabled, reason, rule: null };
  for (let i = 0; i < flag.rules.length; i++) {
    const rule = flag.rules[i]!;
    if (!rule.enabled) continue;
    const alone = evaluateFlag({ key: flag.key, enabled: true, rolloutPercentage: 0, everyoneElse: 'off', rules: [rule] }, context, options);
    if (alone.kind === 'TARGETING_MATCH') return { enabled, reason, rule: flag.stored[i]! };
  }
  return { enabled, reason, rule: null };
}
