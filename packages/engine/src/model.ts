/**
 * The engine's vocabulary: what a flag, a rule, a condition and a context are, and what an
 * evaluation answers. Types and the closed lists that define them; this file imports nothing, so
 * every other file of the engine can import it without a circle (docs/adr/0007-engine-shape.md).
 * What the fields mean: docs/targeting.md and docs/variants.md.
 */

export type RuleType = 'user_id' | 'user_email' | 'email_domain' | 'conditions';

export const RULE_TYPES: readonly RuleType[] = Object.freeze(['user_id', 'user_email', 'email_domain', 'conditions'] as const);

export function isRuleType(value: unknown): value is RuleType {
  return value === 'user_id' || value === 'user_email' || value === 'email_domain' || value === 'conditions';
}

/**
 * The operators of a condition. Each has one entry in operators.ts (`OPERATOR_TABLE`, a
 * `Record<Operator, …>`): a name here without its entry there does not compile.
 */
export type Operator =
  | 'IN' | 'NOT_IN'
  | 'STR_CONTAINS' | 'STR_STARTS_WITH' | 'STR_ENDS_WITH'
  | 'NUM_EQ' | 'NUM_GT' | 'NUM_GTE' | 'NUM_LT' | 'NUM_LTE'
  | 'DATE_AFTER' | 'DATE_BEFORE'
  | 'SEMVER_EQ' | 'SEMVER_GT' | 'SEMVER_GTE' | 'SEMVER_LT' | 'SEMVER_LTE'
  | 'REGEX' | 'IN_CIDR' | 'EXISTS' | 'IN_SEGMENT';

export interface Condition {
  /** Absent for IN_SEGMENT. */
  attribute?: string | null | undefined;
  operator: Operator;
  /** None for EXISTS; segment keys for IN_SEGMENT. */
  values?: readonly string[] | null | undefined;
  negate?: boolean | undefined;
  case_insensitive?: boolean | undefined;
}

/** The limits of a condition and of the context it reads (docs/targeting.md). */
export const CONDITION_LIMITS = Object.freeze({
  conditionsPerRule: 30,
  /** The most values a condition takes (IN, NOT_IN, IN_CIDR, IN_SEGMENT); STR_ operators take 100, REGEX 10 (operators.ts). */
  valuesPerCondition: 10_000,
  valueLength: 1024,
  attributeNameLength: 64,
  /** Characters of a REGEX pattern. */
  patternLength: 1000,
  customAttributes: 100,
  /** Characters of an attribute's text: what the costs of operators.ts are measured for. */
  customAttributeLength: 1024,
});

/** Attributes Guidon fills itself; a custom attribute of one of these names is ignored (but current_time, which it may override). */
export const BUILT_IN_ATTRIBUTES = Object.freeze(['user_id', 'user_email', 'email_domain', 'environment', 'current_time'] as const);

export interface RuleDefinition {
  type: RuleType;
  /** The seed types' value; unused by `conditions`. */
  value: string;
  enabled: boolean;
  /** For `conditions`: all must hold. */
  conditions?: readonly Condition[] | null | undefined;
  /** 0–100, default 100: a matched user is served by the rule when their bucket is below it. */
  rolloutPercentage?: number | undefined;
  /** Default true: what the rule serves. */
  serve?: boolean | undefined;
  /** A key of the flag's variants: the users the rule serves get that variant. */
  variant?: string | null | undefined;
}

/** One of a flag's variants. */
export interface VariantDefinition {
  key: string;
  /** Any JSON value; all of one flag's values have one JSON type. */
  value: unknown;
  /** 0–1000; a flag's weights sum to 1000. */
  weight: number;
}

/**
 * A flag this one needs (docs/prerequisites.md): the flag of the same set named by key, answering
 * `enabled` as given (default true) and, when `variants` is given, one of those variants.
 */
export interface PrerequisiteDefinition {
  flagKey: string;
  enabled?: boolean | undefined;
  variants?: readonly string[] | null | undefined;
}

/** rules must already be ordered: highest priority first, ties oldest first. The array index is the rank. */
export interface FlagDefinition {
  key: string;
  enabled: boolean;
  rolloutPercentage: number;
  rules: readonly RuleDefinition[];
  /** Who no rule served: `rollout` (default) or `off`. */
  everyoneElse?: 'rollout' | 'off' | undefined;
  /** 0–50 variants; none (or empty): the flag serves only on/off. */
  variants?: readonly VariantDefinition[] | null | undefined;
  /** The key of the variant served when the flag answers `enabled: false`; required with variants. */
  offVariant?: string | null | undefined;
  /** 0–10 flags of the same set that must be met, in order, before the rules are consulted. */
  prerequisites?: readonly PrerequisiteDefinition[] | null | undefined;
  /**
   * What the rollout and variant hashes take in place of `key` (null or absent: `key`), so that a
   * flag renamed on its way from another system keeps its users' buckets (docs/flags-as-code.md).
   */
  bucketingKey?: string | null | undefined;
}

/** The name a flag's rollout and variant hashes are keyed by: its bucketing key, else its key. */
export function hashKeyOf(def: Pick<FlagDefinition, 'key' | 'bucketingKey'>): string {
  return typeof def.bucketingKey === 'string' && def.bucketingKey !== '' ? def.bucketingKey : def.key;
}

/** A custom attribute's value; null counts as absent. */
export type AttributeValue = string | number | boolean | null;

export interface EvaluationContext {
  user_id?: string | undefined;
  user_email?: string | undefined;
  custom_attributes?: Readonly<Record<string, AttributeValue | undefined>> | null | undefined;
}

/** What a flag set is compiled against besides its flags. */
export interface CompileOptions {
  /** The environment's key: the `environment` attribute. */
  environment?: string | undefined;
  /** The project's segments by key, for IN_SEGMENT. */
  segments?: ReadonlyMap<string, readonly Condition[]> | undefined;
}

/** OpenFeature's resolution reasons that Guidon gives (docs/sdk.md, OFREP). */
export type ReasonKind = 'DISABLED' | 'STATIC' | 'TARGETING_MATCH' | 'SPLIT' | 'DEFAULT' | 'PREREQUISITE_FAILED';

export interface Outcome {
  /**
   * Its byte in stored evaluation history: the same in every process and release. Codes are
   * written out in outcomes.ts and never change; a new outcome takes the next free code.
   */
  readonly code: number;
  readonly enabled: boolean;
  /** The reason string of the evaluate answer. */
  readonly reason: string;
  readonly kind: ReasonKind;
}

/** The variant index written for a flag without variants. */
export const NO_VARIANT = 255;

/** One flag's answer for a context, with why: what explain and the providers read. */
export interface Answer {
  readonly outcome: Outcome;
  /** The variant's index in the flag's variants, or NO_VARIANT for a flag without. */
  readonly variant: number;
  /** The rank (index in the flag's rules) of the rule that served, or -1 when none did. */
  readonly rule: number;
  /** The reason string: the outcome's, or "Prerequisite <key> not met". */
  readonly reason: string;
  /** The unmet prerequisite's key, or null. */
  readonly prerequisite: string | null;
  /** The OpenFeature reason: the outcome's, but SPLIT where the weights chose the variant of a flag otherwise the same for everyone. */
  readonly kind: ReasonKind;
}

/**
 * The flags of one environment compiled together: evaluating them for a context writes one
 * outcome code (outcomes.ts) per flag. A flag whose outcome cannot depend on the context costs
 * nothing per context, and the seed rules of every flag are looked up with three map reads per
 * context in all, not three per flag.
 */
export interface CompiledFlagSet {
  readonly size: number;
  /** Each flag's key, in the set's order. */
  readonly keys: readonly string[];
  /**
   * Each flag's code for a context that no rule of it serves; meaningless for the flags in
   * `rollouts`, whose code then depends on the context's bucket.
   */
  readonly baseCodes: Uint8Array;
  /** The flags (ascending indexes) whose code, when no rule of theirs serves, comes from their rollout. */
  readonly rollouts: Uint32Array;
  /** Per flag of `rollouts`, its code when in the rollout (any other code there, with no rule served, is the not-in one). */
  readonly inRolloutCodes: Uint8Array;
  /** Per flag, its variants in the flag's order, or null for a flag without. */
  readonly variants: readonly (readonly VariantDefinition[] | null)[];
  /** The flags (ascending) whose variant, when no rule serves them and they answer on, is chosen by weight: it differs per user. */
  readonly splits: Uint32Array;
  /** Whether any flag has variants: only then does evaluateInto write variant indexes. */
  readonly hasVariants: boolean;
  /** Each flag's variant index where its code is its base code and the variant does not depend on the user (NO_VARIANT for a flag without variants). */
  readonly baseVariants: Uint8Array;
  /** Distinct REGEX patterns compiled for the set (each once, however many conditions name it). */
  readonly patternCount: number;
  /**
   * Writes each flag's code into codes[0..size) and, when the set has variants and `variants` is
   * given, each flag's variant index into variants[0..size) (NO_VARIANT for a flag without).
   * Returns true when a targeting rule served: then flags other than `rollouts` and `splits` may
   * differ from `baseCodes` and `baseVariants`.
   */
  evaluateInto(ctx: EvaluationContext, codes: Uint8Array, variants?: Uint8Array): boolean;
  /**
   * The answer of the flag at `index` for a context: its code (what evaluateInto writes there)
   * and variant, packed (answer-codec.ts: read with codeOf and variantOf), without the rule.
   */
  evaluateFlag(ctx: EvaluationContext, index: number): number;
  /** The flag's answer with the rule that served and its OpenFeature reason: for explain and one-off use. */
  answer(ctx: EvaluationContext, index: number): Answer;
  /** The OpenFeature reason of the flag at `index` answering `code` (SPLIT where the weights chose; docs/variants.md). */
  reasonKind(index: number, code: number): ReasonKind;
  /** The reason string of the flag at `index` answering `code`: the outcome's, or for an unmet prerequisite "Prerequisite <key> not met". */
  reasonOf(index: number, code: number): string;
  /** The key of the unmet prerequisite that `code` names for the flag at `index`, or null when `code` is not a prerequisite's. */
  prerequisiteOf(index: number, code: number): string | null;
}
