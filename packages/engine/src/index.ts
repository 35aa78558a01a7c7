export {
  RULE_TYPES,
  REASONS,
  compileFlag,
  compileFlagSet,
  bucketOf,
  rolloutIdentifier,
  normalizeEmailDomain,
  looksLikeEmail,
  isRuleType,
} from './evaluate.js';
export type {
  RuleType,
  RuleDefinition,
  FlagDefinition,
  EvaluationContext,
  EvaluationResult,
  CompiledFlag,
  CompiledFlagSet,
  Reasons,
} from './evaluate.js';
export { murmur3_x86_32, murmur3_x86_32_bytes } from './murmur3.js';
