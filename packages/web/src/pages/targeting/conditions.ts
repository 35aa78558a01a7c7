import type { Condition, Rule } from '../../api/client';
import { fields } from '../../api/fields';

/** An operator of the engine (docs/targeting.md), as the server's OpenAPI document names them. */
export type Operator = Condition['operator'];

/**
 * The operators in words, with an example value. Only the words live here: the engine's table
 * decides the rest and reaches the dashboard through the OpenAPI document (fields.ts). An operator
 * the engine adds does not compile here until it has its words.
 */
const WORDS: Record<Operator, { words: string; example: string }> = {
  IN: { words: 'is one of', example: 'beta' },
  NOT_IN: { words: 'is not one of', example: 'eu' },
  STR_CONTAINS: { words: 'contains', example: 'test' },
  STR_STARTS_WITH: { words: 'starts with', example: 'admin-' },
  STR_ENDS_WITH: { words: 'ends with', example: '.example.com' },
  NUM_EQ: { words: '=', example: '42' },
  NUM_GT: { words: '>', example: '42' },
  NUM_GTE: { words: '≥', example: '42' },
  NUM_LT: { words: '<', example: '42' },
  NUM_LTE: { words: '≤', example: '42' },
  DATE_AFTER: { words: 'after', example: '2026-12-31T18:00:00Z' },
  DATE_BEFORE: { words: 'before', example: '2026-12-31' },
  SEMVER_EQ: { words: 'version =', example: '2.4.0' },
  SEMVER_GT: { words: 'version >', example: '2.4.0' },
  SEMVER_GTE: { words: 'version ≥', example: '2.4.0' },
  SEMVER_LT: { words: 'version <', example: '2.4.0' },
  SEMVER_LTE: { words: 'version ≤', example: '2.4.0' },
  REGEX: { words: 'matches regex', example: '^qa-\\d+$' },
  IN_CIDR: { words: 'in network', example: '10.0.0.0/8' },
  EXISTS: { words: 'exists', example: '' },
  IN_SEGMENT: { words: 'is in segment', example: 'beta' },
};

/**
 * The operators in the engine's order, in the order the select offers them: `values`, how many a
 * condition takes (at most `maxValues`); `anyCase`, whether case_insensitive applies. The server
 * checks every condition again on save and its message is shown as it is.
 */
export const OPERATORS = Object.fromEntries(
  Object.entries(fields.operators).map(([operator, rules]) => [operator, { ...WORDS[operator as Operator], values: rules.values, maxValues: rules.max_values, anyCase: rules.case_insensitive }]),
) as Record<Operator, { words: string; example: string; values: 'many' | 'one' | 'none'; maxValues: number; anyCase: boolean }>;

/** What Guidon fills in itself; any other name is a custom attribute the app sends. */
export const BUILT_IN_ATTRIBUTES = fields.builtInAttributes;

const operatorOf = (condition: Condition) => (OPERATORS as Record<string, (typeof OPERATORS)[Operator]>)[condition.operator];

/** At most this many values are spelled out in a sentence; the rest are counted. */
const SHOWN_VALUES = 5;

function valueList(values: readonly string[]): string {
  const shown = values.slice(0, SHOWN_VALUES).join(', ');
  return values.length > SHOWN_VALUES ? `${shown} and ${values.length - SHOWN_VALUES} more` : shown;
}

/** "plan is one of beta, gamma", "not (country is one of fr)", "is in segment beta". */
export function conditionSentence(condition: Condition): string {
  const operator = operatorOf(condition);
  const words = operator?.words ?? condition.operator;
  const values = condition.values ?? [];
  const subject = condition.operator === 'IN_SEGMENT' ? words : `${condition.attribute ?? ''} ${words}`;
  const text = `${subject}${values.length > 0 ? ` ${valueList(values)}` : ''}${condition.case_insensitive ? ' (any case)' : ''}`;
  return condition.negate ? `not (${text})` : text;
}

export const conditionsSentence = (conditions: readonly Condition[]) => conditions.map(conditionSentence).join(' and ');

const SEED_ATTRIBUTE = { user_id: 'user_id is', user_email: 'user_email is', email_domain: 'email domain is' } as const;

/** Whom the rule matches: "plan is one of beta and app version ≥ 2.4.0", "email domain is @corp.com". */
export function ruleCondition(rule: Pick<Rule, 'rule_type' | 'rule_value' | 'conditions'>): string {
  return rule.rule_type === 'conditions' ? conditionsSentence(rule.conditions ?? []) : `${SEED_ATTRIBUTE[rule.rule_type]} ${rule.rule_value ?? ''}`;
}

/** The whole rule as it reads: "plan is one of beta and app version ≥ 2.4.0 → on (variant blue) for 50%". */
export function ruleSentence(rule: Pick<Rule, 'rule_type' | 'rule_value' | 'conditions' | 'serve' | 'rollout_percentage' | 'variant'>): string {
  const variant = rule.serve && rule.variant ? ` (variant ${rule.variant})` : '';
  return `${ruleCondition(rule)} → ${rule.serve ? 'on' : 'off'}${variant}${rule.rollout_percentage < 100 ? ` for ${rule.rollout_percentage}%` : ''}`;
}

/** Items of a pasted or typed list: one a line or separated by commas, trimmed, empty ones dropped. */
export const splitValues = (text: string) =>
  text
    .split(/[\n,]/)
    .map((item) => item.trim())
    .filter((item) => item !== '');

/** A condition as the editor holds it: always a values array, flags set. */
export const blankCondition = (): Condition => ({ attribute: '', operator: 'IN', values: [], negate: false, case_insensitive: false });

/** The body the API takes: IN_SEGMENT without an attribute, EXISTS without values, case only where it applies. */
export function toBody(condition: Condition): Condition {
  const operator = operatorOf(condition);
  return {
    attribute: condition.operator === 'IN_SEGMENT' ? null : (condition.attribute ?? '').trim(),
    operator: condition.operator,
    values: operator?.values === 'none' ? [] : (condition.values ?? []),
    negate: condition.negate ?? false,
    case_insensitive: operator?.anyCase ? (condition.case_insensitive ?? false) : false,
  };
}
