import { looksLikeEmail, normalizeEmailDomain, type Patterns, type RuleType } from '@guidon/engine';
import { Invalid } from '../../errors.js';
import { conditionProblems, storedConditions } from '../segments/segments.repository.js';

const MAX_RULE_VALUE_LENGTH = 320;

export type SentConditions = Parameters<typeof conditionProblems>[0];

/** docs/api.md: the stored form of a rule value, or Invalid. */
export function checkedRuleValue(type: RuleType, raw: string): string {
  const value = raw.trim();
  if (value === '') throw new Invalid('rule_value must not be empty');
  if ([...value].length > MAX_RULE_VALUE_LENGTH) throw new Invalid(`rule_value must be at most ${MAX_RULE_VALUE_LENGTH} characters`);
  if (type === 'user_email' && !looksLikeEmail(value)) throw new Invalid('rule_value must be an email address for a user_email rule');
  if (type === 'email_domain') {
    const domain = normalizeEmailDomain(value);
    if (domain === null) throw new Invalid('rule_value must be a domain such as example.com or @example.com for an email_domain rule');
    return domain;
  }
  return value;
}

/**
 * Every problem of what a rule targets: a seed type's value (docs/api.md) or a conditions rule's
 * conditions (docs/targeting.md, against the project's segment keys). `where` names a condition
 * in a message; `patterns`: those compiled so far in this save.
 */
export function ruleTargetProblems(type: RuleType, value: string | null | undefined, conditions: SentConditions | null | undefined, segmentKeys: ReadonlySet<string>, where?: (i: number) => string, patterns?: Patterns): string[] {
  if (type === 'conditions') {
    if (value !== undefined && value !== null) return ['rule_value must be absent or null for a conditions rule'];
    if (!conditions) return ['conditions are required for a conditions rule'];
    return conditionProblems(conditions, segmentKeys, where, patterns);
  }
  if (conditions) return [`conditions apply only to rule_type conditions, not ${type}`];
  if (value === undefined || value === null) return [`rule_value is required for a ${type} rule`];
  try {
    checkedRuleValue(type, value);
    return [];
  } catch (error) {
    if (error instanceof Invalid) return [error.message];
    throw error;
  }
}

/** What a rule targets, as stored, or Invalid naming the first problem. */
export function checkedRuleTarget(type: RuleType, value: string | null | undefined, conditions: SentConditions | null | undefined, segmentKeys: ReadonlySet<string>) {
  const [problem] = ruleTargetProblems(type, value, conditions, segmentKeys);
  if (problem !== undefined) throw new Invalid(problem);
  return type === 'conditions' ? { rule_value: '', conditions: storedConditions(conditions!) } : { rule_value: checkedRuleValue(type, value!), conditions: null };
}
