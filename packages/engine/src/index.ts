export { RULE_TYPES, NO_VARIANT, compileFlagSet, evaluateFlag, evaluateVariant, codeOf, variantOf, enabledOf, bucketOf, rolloutIdentifier, normalizeEmailDomain, looksLikeEmail, isRuleType } from './evaluate.js';
export type { RuleType, RuleDefinition, FlagDefinition, VariantDefinition, EvaluationContext, AttributeValue, CompileOptions, CompiledFlagSet } from './evaluate.js';
export { OPERATORS, CONDITION_LIMITS, BUILT_IN_ATTRIBUTES, conditionProblem, parseDate, parseNumber, parseVersion } from './conditions.js';
export type { Condition, Operator } from './conditions.js';
export { OUTCOMES, DISABLED_CODE, ENABLED_GLOBALLY_CODE, RULE_MATCH_CODES, RULE_OFF_CODES, NO_RULE_MATCHED_CODE, matchCode, inRolloutCode, notInRolloutCode, reasonKind } from './outcomes.js';
export type { Outcome, ReasonKind } from './outcomes.js';
export { murmur3_x86_32, murmur3_x86_32_bytes } from './murmur3.js';
export type { RulesetDocument } from './ruleset.js';
