/**
 * Every operator of a condition in one table: how many values it takes, whether case_insensitive
 * applies, what it does with a missing attribute, what a test costs, how a value is read (at save
 * and at compile), and the test of a present attribute. Adding an operator is one entry here (and
 * its name in model.ts's `Operator`, which makes this `Record` incomplete until the entry exists).
 * What each means: docs/targeting.md; costs: docs/performance.md ("What a flag may cost").
 */
import { CONDITION_LIMITS, type Condition, type EvaluationContext, type Operator } from './model.js';
import { PATTERN_LIMITS, type CompiledPattern, type Patterns } from './patterns.js';
import type { Scratch } from './scratch.js';
import { compareVersions, inRanges, parseCidr, parseDate, parseNumber, parseVersion, splitRanges } from './values.js';

/** A value an operator does not accept, and why (the message of a 400). */
export class Refused {
  constructor(readonly message: string) {}
}

/** The test of a present attribute's text (IN_SEGMENT, which names no attribute, tests the context). */
export type Test = (value: string, ctx: EvaluationContext) => boolean;

/** What building a test may use: the set's scratch (memos by value), its patterns, its segments. */
export interface Build {
  readonly scratch: Scratch;
  readonly patterns: Patterns;
  /** Whether the context is in the segment (an unknown key: nobody). */
  segment(key: string): (ctx: EvaluationContext) => boolean;
}

export interface OperatorSpec<Parsed = unknown> {
  /** Values a condition takes: any number (1..maxValues), exactly one, or none. */
  readonly arity: 'many' | 'one' | 'none';
  readonly maxValues: number;
  readonly caseInsensitive: boolean;
  /** The result, before negate, when the attribute is missing. */
  readonly whenMissing: boolean;
  /**
   * IN and NOT_IN: answered from the attribute's value index that the set shares among all such
   * conditions (conditions.ts): one map read per context whatever the number of conditions; the
   * result is `listed !== whenMissing`. Such an operator has no `test`.
   */
  readonly indexed?: true;
  /** IN_SEGMENT: names no attribute; its values are segment keys. */
  readonly noAttribute?: true;
  /** A value as the test takes it, or why it is refused. */
  parse(value: string, caseInsensitive: boolean, patterns: Patterns): Parsed | Refused;
  /**
   * Nanoseconds a test of these values may cost, at most, for the costliest context (a
   * 1,024-character attribute seen for the first time): what bounds a flag at save, and what
   * orders a rule's conditions, cheapest first.
   */
  cost(values: readonly Parsed[]): number;
  /** The test of a present attribute (none for `indexed` operators). */
  test?(values: readonly Parsed[], caseInsensitive: boolean, build: Build): Test;
}

/**
 * Costs, in ns, of the parts of a test at their worst (a 1,024-character attribute the set has
 * not seen), measured by the engine bench's calibration (docs/performance.md) with a margin.
 */
export const COSTS = Object.freeze({
  /** Reading the attribute, calling the test, remembering its result. */
  condition: 150,
  /** Lower-casing the attribute (once per context, whatever the number of conditions). */
  fold: 1_000,
  /** One STR_ value against the attribute (`includes` of a long value in a 1,024-character text: up to 2.5 µs). */
  string: 3_500,
  /** Parsing the attribute as a number, a date or a version (once per context). */
  parse: 3_000,
  /** Parsing the attribute as an IP address (ipaddr.js reads a 1,024-character text in about 15 µs). */
  address: 20_000,
  /** One IPv6 range (an IPv4 one costs less). */
  range: 150,
  /** A REGEX search: per character of the attribute, plus per instruction of the pattern per character (with re2js's DFA, or its NFA only). */
  searchPerCharacter: 20,
  searchPerStep: 11,
  /** Raised from 25: a cold pattern over Unicode classes measured up to 35 ns a step (regex-cost.bench.ts). */
  nfaSearchPerStep: 60,
  /** One pass of `indexOf` (a literal pattern, or re2js's prefilter), per character of the attribute, near-matches at every place. */
  scanPerCharacter: 12,
  /** One instruction of re2js's one-pass matcher (a pattern without loops runs each at most once). */
  onepassPerStep: 16,
  /** One entry of a new DFA state's transition table (allocated and filled with null). */
  tablePerClass: 2,
});

const text = (value: string) => value;
const folded = (caseInsensitive: boolean) => (value: string) => (caseInsensitive ? value.toLowerCase() : value);
const fold = (caseInsensitive: boolean, scratch: Scratch) => (caseInsensitive ? (value: string) => scratch.lowerCase.get(value) : text);

/** IN (listed) and NOT_IN (not listed): the set's value index answers them. */
const listed = (whenMissing: boolean): OperatorSpec<string> => ({
  arity: 'many',
  maxValues: 10_000,
  caseInsensitive: true,
  whenMissing,
  indexed: true,
  parse: (value, caseInsensitive) => folded(caseInsensitive)(value),
  cost: () => COSTS.condition,
});

/**
 * STR_ operators: `test` builds the test from the values and how the attribute is read (folded or
 * not). Each operator's test is a function of its own, looping (not `some` with a closure a test).
 */
const strings = (test: (parts: readonly string[], read: (text: string) => string) => Test): OperatorSpec<string> => ({
  arity: 'many',
  maxValues: 100,
  caseInsensitive: true,
  whenMissing: false,
  parse: (value, caseInsensitive) => folded(caseInsensitive)(value),
  cost: (values) => COSTS.condition + values.length * COSTS.string,
  test: (parts, caseInsensitive, { scratch }) => test(parts, fold(caseInsensitive, scratch)),
});

/**
 * NUM_, DATE_ and SEMVER_ compare the attribute with their value on the sign of (attribute −
 * value). The comparison is a number read inline, and each family has its own test function: a
 * call through one of five closures per test cost them twice as much (docs/performance.md).
 */
const EQ = 0;
const GT = 1;
const GTE = 2;
const LT = 3;
const LTE = 4;
const holds = (comparison: number, sign: number): boolean =>
  comparison === EQ ? sign === 0 : comparison === GT ? sign > 0 : comparison === GTE ? sign >= 0 : comparison === LT ? sign < 0 : sign <= 0;

/** An operator of one value, read by `parse`, whose test `test` builds for a comparison. */
function compared<T>(parse: (text: string) => T | undefined, problem: (value: string) => string, test: (bound: T, comparison: number, scratch: Scratch) => Test) {
  return (comparison: number): OperatorSpec<T> => ({
    arity: 'one',
    maxValues: 1,
    caseInsensitive: false,
    whenMissing: false,
    parse: (value) => parse(value) ?? new Refused(problem(value)),
    cost: () => COSTS.condition + COSTS.parse,
    test: ([bound], _caseInsensitive, { scratch }) => test(bound!, comparison, scratch),
  });
}

const number = compared(parseNumber, (value) => `"${value}" is not a number`, (bound, comparison, scratch) => (value) => {
  const attribute = scratch.number.get(value);
  return attribute !== undefined && holds(comparison, attribute - bound);
});
const date = compared(parseDate, (value) => `"${value}" is not an ISO 8601 date such as 2026-12-31 or 2026-12-31T18:00:00Z`, (bound, comparison, scratch) => (value) => {
  const attribute = scratch.date.get(value);
  return attribute !== undefined && holds(comparison, attribute - bound);
});
const version = compared(parseVersion, (value) => `"${value}" is not a version x.y.z or x.y.z-pre`, (bound, comparison, scratch) => (value) => {
  const attribute = scratch.version.get(value);
  return attribute !== undefined && holds(comparison, compareVersions(attribute, bound));
});

type Cidr = NonNullable<ReturnType<typeof parseCidr>>;

export const OPERATOR_TABLE: { readonly [O in Operator]: OperatorSpec } = Object.freeze({
  IN: listed(false),
  NOT_IN: listed(true),
  STR_CONTAINS: strings((parts, read) => (value) => {
    const subject = read(value);
    for (let i = 0; i < parts.length; i++) if (subject.includes(parts[i]!)) return true;
    return false;
  }),
  STR_STARTS_WITH: strings((parts, read) => (value) => {
    const subject = read(value);
    for (let i = 0; i < parts.length; i++) if (subject.startsWith(parts[i]!)) return true;
    return false;
  }),
  STR_ENDS_WITH: strings((parts, read) => (value) => {
    const subject = read(value);
    for (let i = 0; i < parts.length; i++) if (subject.endsWith(parts[i]!)) return true;
    return false;
  }),
  NUM_EQ: number(EQ),
  NUM_GT: number(GT),
  NUM_GTE: number(GTE),
  NUM_LT: number(LT),
  NUM_LTE: number(LTE),
  DATE_AFTER: date(GT),
  DATE_BEFORE: date(LT),
  SEMVER_EQ: version(EQ),
  SEMVER_GT: version(GT),
  SEMVER_GTE: version(GTE),
  SEMVER_LT: version(LT),
  SEMVER_LTE: version(LTE),
  REGEX: {
    arity: 'many',
    maxValues: 10,
    caseInsensitive: true,
    whenMissing: false,
    parse: (value, caseInsensitive, patterns) => {
      const compiled = patterns.get(value, caseInsensitive);
      if (typeof compiled === 'string') return new Refused(compiled);
      if (compiled.size > MAX_PROGRAM) return new Refused(`"${clip(value)}" compiles to ${compiled.size} instructions, over the ${MAX_PROGRAM} a pattern may have (a search costs up to that many steps per character of the attribute): shorten its repetitions or split it`);
      return compiled;
    },
    // Identical patterns of a condition search once (the pattern remembers its last text).
    cost: (patterns) => COSTS.condition + [...new Set(patterns)].reduce((sum, pattern) => sum + searchCost(pattern), 0),
    test(patterns) {
      // Shared by every flag of the set that uses the pattern: they search the same attribute once.
      const distinct = [...new Set(patterns)];
      return (value) => {
        for (let i = 0; i < distinct.length; i++) if (distinct[i]!.test(value)) return true;
        return false;
      };
    },
  } satisfies OperatorSpec<CompiledPattern>,
  IN_CIDR: {
    arity: 'many',
    maxValues: 10_000,
    caseInsensitive: false,
    whenMissing: false,
    parse: (value) => parseCidr(value) ?? new Refused(`"${value}" is not an IP address or CIDR range`),
    cost: (ranges) => COSTS.condition + COSTS.address + ranges.length * COSTS.range,
    test(ranges, _caseInsensitive, { scratch }) {
      const split = splitRanges(ranges);
      return (value) => {
        const address = scratch.address.get(value);
        return address !== undefined && inRanges(address, split);
      };
    },
  } satisfies OperatorSpec<Cidr>,
  EXISTS: {
    arity: 'none',
    maxValues: 0,
    caseInsensitive: false,
    whenMissing: false,
    parse: text,
    cost: () => COSTS.condition,
    test: () => () => true,
  } satisfies OperatorSpec<string>,
  IN_SEGMENT: {
    arity: 'many',
    maxValues: 10_000,
    caseInsensitive: false,
    whenMissing: false,
    noAttribute: true,
    parse: text,
    // The segments' own conditions are counted where the flag is checked (limits.ts), once per segment.
    cost: (keys) => COSTS.condition * (1 + keys.length),
    test(keys, _caseInsensitive, build) {
      const segments = keys.map((key) => build.segment(key));
      return (_value, ctx) => {
        for (let i = 0; i < segments.length; i++) if (segments[i]!(ctx)) return true;
        return false;
      };
    },
  } satisfies OperatorSpec<string>,
}) as { readonly [O in Operator]: OperatorSpec };

/**
 * What a REGEX search of the costliest attribute may cost, following re2js's path for the pattern
 * (RE2.executeEngine; docs/targeting.md, "What a flag may cost"). The general bound: every
 * character may make a DFA state (or an NFA step) over every instruction (a pattern with a loop
 * is costed so). Cheaper where the pattern's shape proves it (patterns.ts): a literal is one
 * `indexOf`; a one-pass pattern without loops runs each instruction at most once; an anchored
 * pattern without loops makes at most `longest` + 6 DFA states a search (its threads die after `longest`
 * characters; then only the restart state remains, in its word / non-word / newline variants,
 * and the end), as long as they fit the DFA's memory, so it is never reset twice in a search.
 * Never above the general bound.
 */
export function searchCost(pattern: CompiledPattern): number {
  const n = CONDITION_LIMITS.customAttributeLength;
  const general = n * (COSTS.searchPerCharacter + (pattern.dfa ? COSTS.searchPerStep : COSTS.nfaSearchPerStep) * pattern.size);
  const { literal, scans, anchored, longest, onepass, classes } = pattern.shape;
  if (literal) return Math.min(general, n * COSTS.scanPerCharacter);
  const prefilter = scans * n * COSTS.scanPerCharacter;
  if (longest === Infinity) return general;
  if (onepass) return Math.min(general, prefilter + n * COSTS.searchPerCharacter + pattern.size * COSTS.onepassPerStep);
  if (pattern.dfa && anchored) {
    const states = Math.min(n, longest) + 6;
    if (states * dfaStateBytes(pattern.size, classes) <= PATTERN_LIMITS.dfaBytes) {
      const built = states * (pattern.size * COSTS.searchPerStep + (classes + 1) * COSTS.tablePerClass);
      return Math.min(general, prefilter + n * COSTS.searchPerCharacter + built);
    }
  }
  return general;
}

/** Bytes re2js counts for a DFA state of at most `size` instructions, its table included (its DFA.stateCost and allocTable). */
const dfaStateBytes = (size: number, classes: number) => 150 + 8 * size + 40 + 8 * size + 48 + 8 * (classes + 1);

/** Instructions a REGEX pattern may compile to: the largest whose search alone fits a flag's budget (limits.ts checks that it does). */
export const MAX_PROGRAM = 80;

/** A pattern shortened for a message. */
const clip = (text: string) => (text.length > 60 ? `${text.slice(0, 57)}…` : text);

/** The operators, in the table's order (the dashboard offers them in it). */
export const OPERATORS = Object.freeze(Object.keys(OPERATOR_TABLE) as Operator[]);

export function isOperator(value: unknown): value is Operator {
  return typeof value === 'string' && Object.prototype.hasOwnProperty.call(OPERATOR_TABLE, value);
}

/** What tells two conditions apart: equal signatures test the same, so a set tests them once per context. */
export const conditionSignature = (condition: Condition): string =>
  JSON.stringify([condition.attribute ?? null, condition.operator, condition.values ?? null, condition.negate === true, condition.case_insensitive === true]);

/** The operator's entry (the caller has checked the operator). */
export const specOf = (condition: Condition): OperatorSpec => OPERATOR_TABLE[condition.operator];

/**
 * A condition's values as its operator reads them, and the first value it refused, if any. At
 * save a refused value is a 400; in a set compiled from what was stored before a limit existed, a
 * refused value matches nobody (the others still count).
 */
export function readValues(condition: Condition, patterns: Patterns): { values: unknown[]; refused: Refused | undefined } {
  const spec = specOf(condition);
  const caseInsensitive = condition.case_insensitive === true;
  const values: unknown[] = [];
  let refused: Refused | undefined;
  for (const value of condition.values ?? []) {
    const read = spec.parse(value, caseInsensitive, patterns);
    if (read instanceof Refused) refused ??= read;
    else values.push(read);
  }
  return { values, refused };
}

/** What testing a condition may cost (ns; OperatorSpec.cost), without the segments IN_SEGMENT names. */
export function conditionCost(condition: Condition, patterns: Patterns): number {
  const spec = specOf(condition);
  const folds = condition.case_insensitive === true && spec.caseInsensitive && condition.operator !== 'REGEX';
  return spec.cost(readValues(condition, patterns).values) + (folds ? COSTS.fold : 0);
}
