/**
 * The one outcome vocabulary: every answer evaluation can give for a flag, with its code, its
 * reason string (docs/api.md) and the OpenFeature reason it maps to (docs/sdk.md). The flag set
 * writes codes; the server's answers, history, OFREP and the OpenFeature providers all read this
 * table.
 */
import type { FlagDefinition, Outcome, ReasonKind, RuleType } from './model.js';

export const DISABLED_CODE = 0;
export const ENABLED_GLOBALLY_CODE = 1;
/** A rule of each type served its match (`serve` true). The conditions type came later: 205. */
export const RULE_MATCH_CODES: Readonly<Record<RuleType, number>> = Object.freeze({ user_id: 2, user_email: 3, email_domain: 4, conditions: 205 });
/** `everyone_else: "off"` and no rule served (docs/targeting.md). */
export const NO_RULE_MATCHED_CODE = 206;
/** A rule of each type served with `serve: false`: off, with the rule's reason (docs/targeting.md). */
export const RULE_OFF_CODES: Readonly<Record<RuleType, number>> = Object.freeze({ user_id: 207, user_email: 208, email_domain: 209, conditions: 210 });

/**
 * A prerequisite not met: PREREQUISITE_CODE + its position in the flag's prerequisites (0..9), so
 * that the one byte names which (the flag's definition names its key: the set's reasonOf).
 */
export const PREREQUISITE_CODE = 211;
export const PREREQUISITE_LIMIT = 10;
export const isPrerequisiteCode = (code: number): boolean => code >= PREREQUISITE_CODE && code < PREREQUISITE_CODE + PREREQUISITE_LIMIT;
/** The reason string of a flag whose prerequisite `flagKey` is not met (docs/prerequisites.md). */
export const prerequisiteReason = (flagKey: string): string => `Prerequisite ${flagKey} not met`;

/** The code of a rule of this type that serves `serve`. */
export const matchCode = (type: RuleType, serve: boolean): number => (serve ? RULE_MATCH_CODES : RULE_OFF_CODES)[type];
/** 4 + N for "in N% rollout", N = 1..100 (5..104). */
const IN_ROLLOUT_BASE = 4;
/** 104 + N for "not in N% rollout", N = 1..100 (105..204). */
const NOT_IN_ROLLOUT_BASE = 104;

export const inRolloutCode = (percentage: number): number => IN_ROLLOUT_BASE + percentage;
export const notInRolloutCode = (percentage: number): number => NOT_IN_ROLLOUT_BASE + percentage;

/** Stage 4's code for whom no rule served, when it does not depend on the bucket (everyone_else off, a rollout of 0 or 100), else -1. */
export function everyoneElseCode(def: Pick<FlagDefinition, 'everyoneElse' | 'rolloutPercentage'>): number {
  const n = def.rolloutPercentage;
  return def.everyoneElse === 'off' ? NO_RULE_MATCHED_CODE : !(n > 0) ? ENABLED_GLOBALLY_CODE : n >= 100 ? inRolloutCode(100) : -1;
}

/** Every outcome, indexed by code (0..n without a gap, each fits a byte). */
export const OUTCOMES: readonly Outcome[] = (() => {
  const all: Outcome[] = [];
  const add = (code: number, enabled: boolean, reason: string, kind: ReasonKind) => {
    if (all[code]) throw new Error(`outcome code ${code} given twice`);
    all[code] = Object.freeze({ code, enabled, reason, kind });
  };
  add(DISABLED_CODE, false, 'Flag is globally disabled', 'DISABLED');
  add(ENABLED_GLOBALLY_CODE, true, 'Flag enabled globally', 'STATIC');
  for (const [type, code] of Object.entries(RULE_MATCH_CODES)) add(code, true, `Matched ${type} targeting rule`, 'TARGETING_MATCH');
  for (let n = 1; n <= 100; n++) add(inRolloutCode(n), true, `User in ${n}% rollout`, 'SPLIT');
  for (let n = 1; n <= 100; n++) add(notInRolloutCode(n), false, `User not in ${n}% rollout`, 'SPLIT');
  add(NO_RULE_MATCHED_CODE, false, 'No targeting rule matched', 'DEFAULT');
  for (const [type, code] of Object.entries(RULE_OFF_CODES)) add(code, false, `Matched ${type} targeting rule`, 'TARGETING_MATCH');
  for (let p = 0; p < PREREQUISITE_LIMIT; p++) add(PREREQUISITE_CODE + p, false, `Prerequisite ${p + 1} not met`, 'PREREQUISITE_FAILED');
  if (all.length > 256 || all.some((entry) => entry === undefined)) throw new Error('outcome codes must fill 0..n without a gap and fit a byte');
  return Object.freeze(all);
})();

/** Per outcome code, 1 when it answers `enabled: true`. */
export const ENABLED = Uint8Array.from({ length: 256 }, (_, code) => (OUTCOMES[code]?.enabled === true ? 1 : 0));

const kinds = new Map(OUTCOMES.map((outcome) => [outcome.reason, outcome.kind]));

/**
 * The OpenFeature reason of one of Guidon's reason strings; undefined for any other text. Only for
 * what carries nothing but the string (an exposure sent to POST /sdk/v1/events, read by the
 * server's intake): whoever holds the code reads OUTCOMES[code].kind or CompiledFlagSet.reasonKind
 * instead, and evaluate gives the kind itself to whoever asks (X-Guidon-Answer: kind).
 */
export function reasonKind(reason: string): ReasonKind | undefined {
  return kinds.get(reason) ?? (reason.startsWith('Prerequisite ') && reason.endsWith(' not met') ? 'PREREQUISITE_FAILED' : undefined);
}
