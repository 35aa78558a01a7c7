export { RULE_TYPES, compileFlagSet, evaluateFlag, bucketOf, rolloutIdentifier, normalizeEmailDomain, looksLikeEmail, isRuleType } from './evaluate.js';
export type { RuleType, RuleDefinition, FlagDefinition, EvaluationContext, CompiledFlagSet } from './evaluate.js';
export { OUTCOMES, DISABLED_CODE, ENABLED_GLOBALLY_CODE, RULE_MATCH_CODES, inRolloutCode, notInRolloutCode, reasonKind } from './outcomes.js';
export type { Outcome, ReasonKind } from './outcomes.js';
export { murmur3_x86_32, murmur3_x86_32_bytes } from './murmur3.js';
