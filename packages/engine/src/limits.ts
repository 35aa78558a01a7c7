/**
 * What may be saved: a condition (its operator, attribute and values), and a flag's rules taken
 * together (their number, the size of their conditions, what evaluating them may cost), so that
 * evaluating one flag for any context stays within FLAG_LIMITS.costNs (docs/targeting.md, "What a
 * flag may cost"; docs/security.md). The server calls these at every save; the engine compiles
 * whatever it is given.
 */
import { CONDITION_LIMITS, type Condition, type RuleDefinition } from './model.js';
import { COSTS, conditionCost, conditionSignature, isOperator, OPERATOR_TABLE, OPERATORS, readValues } from './operators.js';
import { Patterns } from './patterns.js';

/** The limits of a flag's rules taken together, and of a segment's conditions. */
export const FLAG_LIMITS = Object.freeze({
  rules: 100,
  /** Bytes of a flag's conditions (all its rules) as JSON, and of a segment's. */
  conditionBytes: 256 * 1024,
  /** What evaluating one flag for the costliest context may cost, estimated from OPERATOR_TABLE's costs. */
  costNs: 1_000_000,
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

/** A flag's rules as flagProblem reads them: only their conditions count (a seed rule costs a map read). */
export type RuleConditions = Pick<RuleDefinition, 'conditions'>;

/**
 * What is wrong with a flag's rules taken together, or null: more than FLAG_LIMITS.rules, their
 * conditions over FLAG_LIMITS.conditionBytes, or an evaluation that may cost more than
 * FLAG_LIMITS.costNs for the costliest context (the segments that IN_SEGMENT names included, each
 * once). Each condition must have passed conditionProblem.
 */
export function flagProblem(rules: readonly RuleConditions[], segments: ReadonlyMap<string, readonly Condition[]>, patterns = new Patterns()): string | null {
  if (rules.length > FLAG_LIMITS.rules) return `A flag has at most ${FLAG_LIMITS.rules} rules (this one would have ${rules.length})`;
  const conditions = rules.flatMap((rule) => rule.conditions ?? []);
  const bytes = jsonBytes(conditions);
  if (bytes > FLAG_LIMITS.conditionBytes) return `The conditions of a flag's rules take at most ${kib(FLAG_LIMITS.conditionBytes)} as JSON (these take ${kib(bytes)})`;
  const named = new Set(conditions.flatMap((condition) => (condition.operator === 'IN_SEGMENT' ? [...(condition.values ?? [])] : [])));
  const all = [...conditions, ...[...named].flatMap((key) => segments.get(key) ?? [])];
  return costProblem(all, rules.length * COSTS.condition, patterns, 'The flag');
}

/** What is wrong with a segment's conditions taken together (their size and cost), or null. */
export function segmentProblem(conditions: readonly Condition[], patterns = new Patterns()): string | null {
  const bytes = jsonBytes(conditions);
  if (bytes > FLAG_LIMITS.conditionBytes) return `A segment's conditions take at most ${kib(FLAG_LIMITS.conditionBytes)} as JSON (these take ${kib(bytes)})`;
  return costProblem(conditions, 0, patterns, 'The segment');
}

/** Over budget: a message that says by how much and names the costliest condition. */
function costProblem(conditions: readonly Condition[], base: number, patterns: Patterns, what: string): string | null {
  // A condition repeated (in several rules, or in a rule and a segment) is tested once per context.
  const distinct = new Map(conditions.map((condition) => [conditionSignature(condition), condition]));
  let total = base;
  let costliest: { condition: Condition; cost: number } | undefined;
  for (const condition of distinct.values()) {
    const cost = conditionCost(condition, patterns);
    total += cost;
    if (costliest === undefined || cost > costliest.cost) costliest = { condition, cost };
  }
  if (total <= FLAG_LIMITS.costNs) return null;
  const { condition, cost } = costliest!;
  const on = condition.attribute ? ` on ${condition.attribute}` : '';
  return `${what}'s conditions may cost up to ${ms(total)} to evaluate for one context; at most ${ms(FLAG_LIMITS.costNs)} is allowed (the costliest: ${condition.operator}${on}, ${ms(cost)}). REGEX patterns cost by their compiled size and STR_ operators by their values: use fewer, or IN where exact values do`;
}

const jsonBytes = (value: unknown) => new TextEncoder().encode(JSON.stringify(value)).length;
const kib = (bytes: number) => `${Math.ceil(bytes / 1024)} KiB`;
const ms = (ns: number) => `${(ns / 1e6).toFixed(2)} ms`;
