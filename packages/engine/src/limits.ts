/**
 * What may be saved: a condition (its operator, attribute and values; docs/targeting.md). The
 * server calls this at every save; the engine compiles whatever it is given.
 */
import type { Condition } from './model.js';
import { isOperator, OPERATOR_TABLE, OPERATORS, readValues } from './operators.js';
import { PATTERN_LIMITS, Patterns } from './patterns.js';

/** The limits of a condition and of the context it reads (docs/targeting.md). */
export const CONDITION_LIMITS = Object.freeze({
  conditionsPerRule: 30,
  /** The most values a condition takes (OPERATOR_TABLE's maxValues). */
  valuesPerCondition: 10_000,
  valueLength: 1024,
  attributeNameLength: 64,
  patternLength: PATTERN_LIMITS.length,
  customAttributes: 100,
  customAttributeLength: 1024,
});

/** Where a condition is checked, and with what it shares compiled patterns. */
export interface CheckOptions {
  /** A segment's own condition: IN_SEGMENT is refused. */
  inSegment?: boolean | undefined;
  /** Patterns compiled so far in this save: each distinct pattern is compiled once. */
  patterns?: Patterns | undefined;
}
/**
 * What is wrong with a condition, as a message that names it and its operator, or null. `where`
 * names it (e.g. `conditions[2]`). Counts and lengths are checked before any value is read, so a
 * condition with 10,000 patterns is refused without compiling one. Segment keys are the server's
 * to check.
 */
export function conditionProblem(condition: Condition, where: string, options: CheckOptions = {}): string | null {
  const { operator } = condition;
  if (!isOperator(operator)) return `${where}: unknown operator "${String(operator)}" (one of ${OPERATORS.join(', ')})`;
  const spec = OPERATOR_TABLE[operator];
  const named = `${where} (${operator})`;
  const values = condition.values ?? [];
  const attribute = condition.attribute ?? null;
  if (spec.noAttribute) {
    if (options.inSegment) return `${named}: a segment cannot use ${operator}`;
    if (attribute !== null) return `${named}: takes no attribute, only segment keys as values`;
  } else {
    if (typeof attribute !== 'string' || attribute.trim() === '') return `${named}: an attribute is required`;
    if ([...attribute].length > CONDITION_LIMITS.attributeNameLength) return `${named}: the attribute name is longer than ${CONDITION_LIMITS.attributeNameLength} characters`;
  }
  if (spec.arity === 'none') {
    if (values.length > 0) return `${named}: takes no values`;
  } else if (values.length === 0) return `${named}: at least one value is required`;
  else if (spec.arity === 'one' && values.length !== 1) return `${named}: takes exactly one value`;
  else if (values.length > spec.maxValues) return `${named}: at most ${spec.maxValues} values`;
  for (const value of values) {
    if (typeof value !== 'string') return `${named}: values must be strings`;
    if ([...value].length > CONDITION_LIMITS.valueLength) return `${named}: a value is longer than ${CONDITION_LIMITS.valueLength} characters`;
  }
  if (condition.case_insensitive === true && !spec.caseInsensitive) return `${named}: case_insensitive applies only to ${OPERATORS.filter((name) => OPERATOR_TABLE[name].caseInsensitive).join(', ')}`;
  const { refused } = readValues(condition, options.patterns ?? new Patterns());
  return refused === undefined ? null : `${named}: ${refused.message}`;
}

