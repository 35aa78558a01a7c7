/**
 * Conditions on any attribute (contract §14): what each operator means, how a condition is
 * checked when saved, and how it is compiled once per change so that an evaluation never parses
 * a rule's values: sets for IN/NOT_IN, numbers, dates, versions, CIDRs and RE2 patterns made at
 * compile time, segments inlined into the rules that name them.
 */
import ipaddr from 'ipaddr.js';
import { RE2JS } from 're2js';
import semver from 'semver';
import type { EvaluationContext } from './evaluate.js';

export const OPERATORS = Object.freeze([
  'IN', 'NOT_IN',
  'STR_CONTAINS', 'STR_STARTS_WITH', 'STR_ENDS_WITH',
  'NUM_EQ', 'NUM_GT', 'NUM_GTE', 'NUM_LT', 'NUM_LTE',
  'DATE_AFTER', 'DATE_BEFORE',
  'SEMVER_EQ', 'SEMVER_GT', 'SEMVER_GTE', 'SEMVER_LT', 'SEMVER_LTE',
  'REGEX', 'IN_CIDR', 'EXISTS', 'IN_SEGMENT',
] as const);
export type Operator = (typeof OPERATORS)[number];

export interface Condition {
  /** Absent for IN_SEGMENT. */
  attribute?: string | null | undefined;
  operator: Operator;
  /** None for EXISTS; segment keys for IN_SEGMENT. */
  values?: readonly string[] | null | undefined;
  negate?: boolean | undefined;
  case_insensitive?: boolean | undefined;
}

/** Limits of contract §14. */
export const CONDITION_LIMITS = Object.freeze({
  conditionsPerRule: 30,
  valuesPerCondition: 10_000,
  valueLength: 1024,
  attributeNameLength: 64,
  patternLength: 1000,
  customAttributes: 100,
  customAttributeLength: 1024,
});

/** Attributes Guidon fills itself; a custom attribute of one of these names is ignored. */
export const BUILT_IN_ATTRIBUTES = Object.freeze(['user_id', 'user_email', 'email_domain', 'environment', 'current_time'] as const);
const FROM_CONTEXT_ONLY = new Set(['user_id', 'user_email', 'email_domain', 'environment']);

const CASE_INSENSITIVE_OPERATORS = new Set<Operator>(['IN', 'NOT_IN', 'STR_CONTAINS', 'STR_STARTS_WITH', 'STR_ENDS_WITH', 'REGEX']);
const ONE_VALUE = (operator: Operator) => operator.startsWith('NUM_') || operator.startsWith('DATE_') || operator.startsWith('SEMVER_');

// ---------------------------------------------------------------------------
// Reading values: the same parsers at save and at evaluation
// ---------------------------------------------------------------------------

/** A finite number written as a number (surrounding spaces allowed), else undefined. */
export function parseNumber(text: string): number | undefined {
  if (text.trim() === '') return undefined;
  const number = Number(text);
  return Number.isFinite(number) ? number : undefined;
}

const ISO_8601 = /^\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?(Z|[+-]\d{2}:?\d{2})?)?$/i;

/** Milliseconds since the epoch of an ISO 8601 date or date-time (one without an offset is UTC), else undefined. */
export function parseDate(text: string): number | undefined {
  const match = ISO_8601.exec(text);
  if (match === null) return undefined;
  // Date.parse rolls a day past the month's end over ("2026-02-30" is 2 March): refuse it.
  const [year, month, day] = [Number(text.slice(0, 4)), Number(text.slice(5, 7)), Number(text.slice(8, 10))];
  if (month < 1 || month > 12 || day < 1 || day > new Date(Date.UTC(year, month, 0)).getUTCDate()) return undefined;
  const dateOnly = text.length === 10;
  const time = Date.parse(dateOnly || match[1] !== undefined ? text : `${text}Z`);
  return Number.isFinite(time) ? time : undefined;
}

const VERSION = /^\d+\.\d+\.\d+(?:-[0-9A-Za-z.-]+)?$/;

/** A version `x.y.z[-pre]` (contract §14), else undefined. */
export function parseVersion(text: string): semver.SemVer | undefined {
  if (!VERSION.test(text)) return undefined;
  return semver.parse(text) ?? undefined;
}

/**
 * An IPv4 address only as four decimal parts: ipaddr.js alone also reads "10.1", "167772161" and
 * octal "012.0.0.1" (= 10.0.0.1), which no one means by an address in a context or a rule.
 */
function isAddress(text: string): boolean {
  return ipaddr.IPv4.isValidFourPartDecimal(text) || ipaddr.IPv6.isValid(text);
}

const DOTTED_QUAD = /^(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(?:\.(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}$/;

/**
 * An attribute's address at evaluation: an IPv4 address (also one written IPv4-mapped) as its
 * 32-bit number, an IPv6 address as ipaddr.js's. IPv4 is read by hand: ipaddr.js's isValid,
 * process and toIPv4MappedAddress try both families, throw inside or re-parse a string, and
 * cost 1–30 µs an evaluation.
 */
function parseAddress(text: string): number | ipaddr.IPv6 | undefined {
  if (DOTTED_QUAD.test(text)) return ipv4Number(text.split('.').map(Number));
  if (!text.includes(':')) return undefined;
  const mapped = text.length <= 22 && /^::ffff:/i.test(text) ? text.slice(7) : '';
  if (DOTTED_QUAD.test(mapped)) return ipv4Number(mapped.split('.').map(Number)); // the usual IPv4-mapped form
  let address: ipaddr.IPv6;
  try {
    address = ipaddr.IPv6.parse(text);
  } catch {
    return undefined;
  }
  return address.isIPv4MappedAddress() ? ipv4Number(address.toIPv4Address().octets) : address;
}

function ipv4Number(octets: readonly number[]): number {
  return ((octets[0]! << 24) | (octets[1]! << 16) | (octets[2]! << 8) | octets[3]!) >>> 0;
}

/** Whether two IPv4 numbers share their first `bits` bits. */
function sameNetwork(a: number, b: number, bits: number): boolean {
  return bits === 0 || (a ^ b) >>> (32 - bits) === 0;
}

function parseCidr(text: string): [ipaddr.IPv4 | ipaddr.IPv6, number] | undefined {
  const [address, prefix, ...rest] = text.split('/');
  if (rest.length > 0 || !isAddress(address!) || (prefix !== undefined && !/^\d{1,3}$/.test(prefix))) return undefined;
  try {
    return ipaddr.parseCIDR(prefix !== undefined ? text : `${text}/${text.includes(':') ? 128 : 32}`);
  } catch {
    return undefined;
  }
}

function compilePattern(pattern: string, caseInsensitive: boolean): RE2JS {
  return RE2JS.compile(pattern, caseInsensitive ? RE2JS.CASE_INSENSITIVE : 0);
}

// ---------------------------------------------------------------------------
// Checking a condition when it is saved
// ---------------------------------------------------------------------------

/**
 * What is wrong with a condition (contract §14), as a message that names it and its operator, or
 * null. `where` names it (e.g. `conditions[2]`). Segment keys are the server's to check.
 */
export function conditionProblem(condition: Condition, where: string, options: { inSegment?: boolean } = {}): string | null {
  const { operator } = condition;
  if (!(OPERATORS as readonly string[]).includes(operator)) return `${where}: unknown operator "${String(operator)}" (one of ${OPERATORS.join(', ')})`;
  const named = `${where} (${operator})`;
  const values = condition.values ?? [];
  const attribute = condition.attribute ?? null;
  if (operator === 'IN_SEGMENT') {
    if (options.inSegment) return `${named}: a segment cannot use IN_SEGMENT`;
    if (attribute !== null) return `${named}: takes no attribute, only segment keys as values`;
  } else {
    if (typeof attribute !== 'string' || attribute.trim() === '') return `${named}: an attribute is required`;
    if ([...attribute].length > CONDITION_LIMITS.attributeNameLength) return `${named}: the attribute name is longer than ${CONDITION_LIMITS.attributeNameLength} characters`;
  }
  if (operator === 'EXISTS') {
    if (values.length > 0) return `${named}: takes no values`;
  } else {
    if (values.length === 0) return `${named}: at least one value is required`;
    if (values.length > CONDITION_LIMITS.valuesPerCondition) return `${named}: at most ${CONDITION_LIMITS.valuesPerCondition} values`;
  }
  for (const value of values) {
    if (typeof value !== 'string') return `${named}: values must be strings`;
    if ([...value].length > CONDITION_LIMITS.valueLength) return `${named}: a value is longer than ${CONDITION_LIMITS.valueLength} characters`;
  }
  if (condition.case_insensitive === true && !CASE_INSENSITIVE_OPERATORS.has(operator)) return `${named}: case_insensitive applies only to IN, NOT_IN, the STR_ operators and REGEX`;
  if (ONE_VALUE(operator) && values.length !== 1) return `${named}: takes exactly one value`;
  const value = values[0]!;
  if (operator.startsWith('NUM_') && parseNumber(value) === undefined) return `${named}: "${value}" is not a number`;
  if (operator.startsWith('DATE_') && parseDate(value) === undefined) return `${named}: "${value}" is not an ISO 8601 date such as 2026-12-31 or 2026-12-31T18:00:00Z`;
  if (operator.startsWith('SEMVER_') && parseVersion(value) === undefined) return `${named}: "${value}" is not a version x.y.z or x.y.z-pre`;
  if (operator === 'IN_CIDR') {
    const bad = values.find((cidr) => parseCidr(cidr) === undefined);
    if (bad !== undefined) return `${named}: "${bad}" is not an IP address or CIDR range`;
  }
  if (operator === 'REGEX') {
    for (const pattern of values) {
      if (pattern.length > CONDITION_LIMITS.patternLength) return `${named}: a pattern is longer than ${CONDITION_LIMITS.patternLength} characters`;
      try {
        compilePattern(pattern, condition.case_insensitive === true);
      } catch (error) {
        return `${named}: "${pattern}" is not a pattern RE2 runs in linear time (${(error as Error).message})`;
      }
    }
  }
  return null;
}

// ---------------------------------------------------------------------------
// Compiling
// ---------------------------------------------------------------------------

/** Whether a context meets a condition, a rule's conditions, a segment. */
export type Matcher = (ctx: EvaluationContext) => boolean;

/** What the compilation of one flag set shares: the environment's key, segments, patterns compiled once. */
export interface ConditionScope {
  readonly environment: string | undefined;
  readonly segments: ReadonlyMap<string, readonly Condition[]>;
  /** Compiled segments and patterns, by key: each compiled once per flag set. */
  readonly segmentMatchers: Map<string, Matcher>;
  readonly patterns: Map<string, (text: string) => boolean>;
  /** The IN / NOT_IN value sets of every condition on one attribute, as one index (SharedSets). */
  readonly sets: Map<string, SharedSets>;
  /** Every distinct condition of the flag set, tested at most once per context. */
  readonly table: ConditionTable;
  /** Each IN / NOT_IN condition's place in `sets` (inSetOf). */
  readonly inSetByCondition: Map<Condition, { shared: SharedSets; id: number }>;
}

export function conditionScope(environment: string | undefined, segments: ReadonlyMap<string, readonly Condition[]> | undefined): ConditionScope {
  return { environment, segments: segments ?? new Map(), segmentMatchers: new Map(), patterns: new Map(), sets: new Map(), table: new ConditionTable(), inSetByCondition: new Map() };
}

/**
 * The distinct conditions of a flag set, each with its result memoized for the context being
 * evaluated. Flags often repeat a condition (the same version floor, pattern or segment): it is
 * tested once per context, and a rule's conditions are a loop over ids here rather than a chain
 * of closures (calls through many different closures were most of an evaluation's time).
 */
export class ConditionTable {
  private readonly ids = new Map<string, number>();
  private readonly matchers: Matcher[] = [];
  private stamps = new Uint32Array(16);
  private results = new Uint8Array(16);
  private turn = 1;
  private context: EvaluationContext | undefined;

  /** A new context begins: no result so far holds for it. (A context object is also told apart by identity.) */
  next(): void {
    this.turn = (this.turn + 1) >>> 0;
    if (this.turn === 0) {
      this.stamps.fill(0);
      this.slotStamps.fill(0);
      this.turn = 1;
    }
    this.context = undefined;
  }

  /**
   * IN / NOT_IN conditions, the most common and the most numerous (a thousand flags may each list
   * their own customers), are tested here without a call through a closure: per condition id,
   * its attribute's slot (-1: another operator), its shared set and its id there, and flags.
   */
  private inSlot: number[] = [];
  private inSets: (SharedSets | undefined)[] = [];
  private inSetIds: number[] = [];
  /** Bits: 1 NOT_IN, 2 negate, 4 case_insensitive. */
  private inFlags: number[] = [];
  /** Attribute values read for the current context, by slot (read once however many conditions name the attribute). */
  private readonly slots = new Map<string, number>();
  private readonly readers: ((ctx: EvaluationContext) => string | undefined)[] = [];
  private slotStamps = new Uint32Array(8);
  private slotValues: (string | undefined)[] = [];

  /** The id of a condition, compiled when first seen. */
  idOf(condition: Condition, scope: ConditionScope): number {
    const { attribute, operator, values, negate, case_insensitive } = condition;
    const signature = JSON.stringify([attribute ?? null, operator, values ?? null, negate === true, case_insensitive === true]);
    let id = this.ids.get(signature);
    if (id !== undefined) return id;
    id = this.matchers.push(compileCondition(condition, scope)) - 1;
    this.ids.set(signature, id);
    if (id >= this.stamps.length) {
      this.stamps = doubled(this.stamps);
      this.results = doubled(this.results);
    }
    const set = operator === 'IN' || operator === 'NOT_IN' ? inSetOf(condition, scope) : undefined;
    this.inSlot[id] = set === undefined ? -1 : this.slotOf(attribute ?? '', scope);
    this.inSets[id] = set?.shared;
    this.inSetIds[id] = set?.id ?? 0;
    this.inFlags[id] = (operator === 'NOT_IN' ? 1 : 0) | (negate === true ? 2 : 0) | (case_insensitive === true ? 4 : 0);
    return id;
  }

  private slotOf(attribute: string, scope: ConditionScope): number {
    let slot = this.slots.get(attribute);
    if (slot === undefined) {
      slot = this.readers.push(readerOf(attribute, scope)) - 1;
      this.slots.set(attribute, slot);
      if (slot >= this.slotStamps.length) this.slotStamps = doubled(this.slotStamps);
    }
    return slot;
  }

  /** Whether the context meets every condition of ids (in their order). */
  all(ids: Int32Array, ctx: EvaluationContext): boolean {
    if (ctx !== this.context) {
      if (this.context !== undefined) this.next();
      this.context = ctx;
    }
    const { stamps, results, turn } = this;
    for (let i = 0; i < ids.length; i++) {
      const id = ids[i]!;
      if (stamps[id] === turn) {
        if (results[id] === 0) return false;
        continue;
      }
      const slot = this.inSlot[id]!;
      let result: boolean;
      if (slot >= 0) {
        // compileCondition's IN / NOT_IN, inline: missing → NOT_IN holds, present → listed or not; then negate.
        const flags = this.inFlags[id]!;
        let value = this.slotStamps[slot] === turn ? this.slotValues[slot] : this.read(slot, ctx);
        if (value === undefined) result = (flags & 1) === 1;
        else {
          if ((flags & 4) !== 0) value = lowerCase(value);
          result = this.inSets[id]!.has(value, this.inSetIds[id]!) !== ((flags & 1) === 1);
        }
        if ((flags & 2) !== 0) result = !result;
      } else result = this.matchers[id]!(ctx);
      stamps[id] = turn;
      results[id] = result ? 1 : 0;
      if (!result) return false;
    }
    return true;
  }

  private read(slot: number, ctx: EvaluationContext): string | undefined {
    const value = this.readers[slot]!(ctx);
    this.slotStamps[slot] = this.turn;
    this.slotValues[slot] = value;
    return value;
  }
}

/** A typed array twice as long, its values kept. */
function doubled<T extends Uint8Array | Uint32Array>(array: T): T {
  const bigger = new (array.constructor as new (length: number) => T)(array.length * 2);
  bigger.set(array);
  return bigger;
}

/** An IN / NOT_IN condition's values in its attribute's shared index: made once per condition of the flag set. */
function inSetOf(condition: Condition, scope: ConditionScope): { shared: SharedSets; id: number } {
  let set = scope.inSetByCondition.get(condition);
  if (set === undefined) {
    const folded = condition.case_insensitive === true;
    const values = condition.values ?? [];
    const key = `${folded ? 'i' : ''}\u0000${condition.attribute ?? ''}`;
    let shared = scope.sets.get(key);
    if (shared === undefined) scope.sets.set(key, (shared = new SharedSets()));
    set = { shared, id: shared.add(folded ? values.map((value) => value.toLowerCase()) : values) };
    scope.inSetByCondition.set(condition, set);
  }
  return set;
}

/**
 * The value sets of the IN / NOT_IN conditions on one attribute, across the flag set: one map
 * from value to the conditions that list it. A context's value is looked up once, whatever the
 * number of conditions (a thousand sets of a thousand values each were a cache miss apiece);
 * each condition then reads one byte.
 */
class SharedSets {
  private readonly index = new Map<string, number[]>();
  private count = 0;
  private listed = new Uint8Array(16);
  private lastValue: string | undefined;
  private lastIds: readonly number[] = [];

  /** A new condition's id, listing its values. */
  add(values: readonly string[]): number {
    const id = this.count++;
    if (id >= this.listed.length) this.listed = doubled(this.listed);
    for (const value of values) {
      const ids = this.index.get(value);
      if (ids === undefined) this.index.set(value, [id]);
      else if (ids[ids.length - 1] !== id) ids.push(id);
    }
    return id;
  }

  /** Whether condition `id` lists `value`: one map read per distinct value in a row. */
  has(value: string, id: number): boolean {
    if (value !== this.lastValue) {
      for (const listed of this.lastIds) this.listed[listed] = 0;
      this.lastIds = this.index.get(value) ?? [];
      for (const listed of this.lastIds) this.listed[listed] = 1;
      this.lastValue = value;
    }
    return this.listed[id] === 1;
  }
}

/** The attribute's string form in a context, or undefined when it is absent. */
type Reader = (ctx: EvaluationContext) => string | undefined;

function customValue(ctx: EvaluationContext, name: string): string | undefined {
  const attributes = ctx.custom_attributes;
  if (attributes === undefined || attributes === null) return undefined;
  const value = attributes[name];
  switch (typeof value) {
    case 'string':
      return value;
    case 'number':
    case 'boolean':
      return String(value);
    default:
      return undefined; // null, and what is not an own value (toString…)
  }
}

function readerOf(attribute: string, scope: ConditionScope): Reader {
  switch (attribute) {
    case 'user_id':
      return (ctx) => (typeof ctx.user_id === 'string' ? ctx.user_id : undefined);
    case 'user_email':
      return (ctx) => (typeof ctx.user_email === 'string' ? ctx.user_email : undefined);
    case 'email_domain':
      return (ctx) => {
        const email = ctx.user_email;
        if (typeof email !== 'string') return undefined;
        const at = email.lastIndexOf('@');
        return at === -1 ? undefined : email.slice(at + 1).trim().toLowerCase();
      };
    case 'environment': {
      const key = scope.environment;
      return () => key;
    }
    case 'current_time':
      return (ctx) => customValue(ctx, 'current_time') ?? new Date().toISOString();
    default:
      if (FROM_CONTEXT_ONLY.has(attribute)) return () => undefined;
      return (ctx) => customValue(ctx, attribute);
  }
}

/** A one-entry memo per parser: the flags of a request read the same attribute, parsed once. */
function memo<T>(parse: (text: string) => T): (text: string) => T {
  let lastText: string | undefined;
  let last: T;
  return (text) => {
    if (text !== lastText) {
      last = parse(text);
      lastText = text;
    }
    return last;
  };
}
/** Texts a remembering parser keeps at most, and the longest it keeps. */
const REMEMBERED = 128;
const REMEMBERED_LENGTH = 256;
/** What a remembering parser keeps for a text it could not parse. */
const NOTHING: unique symbol = Symbol('nothing');

/**
 * A memo that also remembers the last REMEMBERED texts (emptied when full): attribute values
 * repeat across requests (app versions, user agents, countries), and a REGEX search or a version
 * parse costs tens of times a map read. Bounded: at most REMEMBERED texts of at most
 * REMEMBERED_LENGTH characters per parser or pattern.
 */
function remembering<T>(parse: (text: string) => T): (text: string) => T {
  // An unparsable text is remembered as NOTHING: a miss then costs one map read, not two.
  const seen = new Map<string, T | typeof NOTHING>();
  return memo((text) => {
    const known = seen.get(text);
    if (known !== undefined) return known === NOTHING ? (undefined as T) : known;
    const result = parse(text);
    if (text.length <= REMEMBERED_LENGTH) {
      if (seen.size >= REMEMBERED) seen.clear();
      seen.set(text, result === undefined ? NOTHING : result);
    }
    return result;
  });
}

const lowerCase = memo((text: string) => text.toLowerCase());
const numberOf = memo(parseNumber);
const dateOf = remembering(parseDate);
const versionOf = remembering(parseVersion);
const addressOf = remembering(parseAddress);

/** The test of a present attribute value, for one condition. */
function testOf(condition: Condition, scope: ConditionScope): (value: string) => boolean {
  const values = condition.values ?? [];
  const folded = condition.case_insensitive === true;
  const fold = folded ? lowerCase : (text: string) => text;
  const foldedValues = folded ? values.map((value) => value.toLowerCase()) : values;
  switch (condition.operator) {
    case 'IN':
    case 'NOT_IN': {
      const { shared, id } = inSetOf(condition, scope);
      return condition.operator === 'IN' ? (value) => shared.has(fold(value), id) : (value) => !shared.has(fold(value), id);
    }
    case 'STR_CONTAINS':
      return (value) => foldedValues.some((part) => fold(value).includes(part));
    case 'STR_STARTS_WITH':
      return (value) => foldedValues.some((part) => fold(value).startsWith(part));
    case 'STR_ENDS_WITH':
      return (value) => foldedValues.some((part) => fold(value).endsWith(part));
    case 'NUM_EQ':
    case 'NUM_GT':
    case 'NUM_GTE':
    case 'NUM_LT':
    case 'NUM_LTE': {
      const bound = parseNumber(values[0] ?? '');
      if (bound === undefined) return () => false;
      const compare = comparison(condition.operator);
      return (value) => {
        const number = numberOf(value);
        return number !== undefined && compare(number - bound);
      };
    }
    case 'DATE_AFTER':
    case 'DATE_BEFORE': {
      const bound = parseDate(values[0] ?? '');
      if (bound === undefined) return () => false;
      return condition.operator === 'DATE_AFTER'
        ? (value) => {
            const time = dateOf(value);
            return time !== undefined && time > bound;
          }
        : (value) => {
            const time = dateOf(value);
            return time !== undefined && time < bound;
          };
    }
    case 'SEMVER_EQ':
    case 'SEMVER_GT':
    case 'SEMVER_GTE':
    case 'SEMVER_LT':
    case 'SEMVER_LTE': {
      const bound = parseVersion(values[0] ?? '');
      if (bound === undefined) return () => false;
      const compare = comparison(condition.operator);
      return (value) => {
        const version = versionOf(value);
        // semver's compare tests each numeric part with a regex (~230 ns); the parts are numbers already.
        return version !== undefined && compare(version.major - bound.major || version.minor - bound.minor || version.patch - bound.patch || version.comparePre(bound));
      };
    }
    case 'REGEX': {
      const patterns: ((value: string) => boolean)[] = [];
      for (const pattern of values) {
        const id = `${folded ? 'i' : ''}/${pattern}`;
        let search = scope.patterns.get(id);
        if (search === undefined) {
          let compiled: RE2JS;
          try {
            compiled = compilePattern(pattern, folded);
          } catch {
            continue; // refused at save; a stored one that no longer compiles matches nothing
          }
          // Shared by every flag of the set that uses the pattern: they search the same attribute once.
          search = remembering((text: string) => compiled.test(text));
          scope.patterns.set(id, search);
        }
        patterns.push(search);
      }
      return (value) => patterns.some((search) => search(value));
    }
    case 'IN_CIDR': {
      // Each range as the IPv4 range it holds (an IPv4-mapped IPv6 range is one; an IPv6 range
      // holding all of ::ffff:0:0/96, such as ::/0, holds every IPv4 address) or as an IPv6 one.
      const v4: [number, number][] = [];
      const v6: [ipaddr.IPv6, number][] = [];
      const mappedBlock = ipaddr.IPv6.parse('::ffff:0:0');
      for (const range of values.map(parseCidr)) {
        if (range === undefined) continue;
        const [network, bits] = range;
        if (network.kind() === 'ipv4') v4.push([ipv4Number((network as ipaddr.IPv4).octets), bits]);
        else {
          const address = network as ipaddr.IPv6;
          v6.push([address, bits]);
          if (bits >= 96 && address.isIPv4MappedAddress()) v4.push([ipv4Number(address.toIPv4Address().octets), bits - 96]);
          else if (bits < 96 && mappedBlock.match(address, bits)) v4.push([0, 0]);
        }
      }
      return (value) => {
        const address = addressOf(value);
        if (address === undefined) return false;
        if (typeof address === 'number') {
          for (const [network, bits] of v4) if (sameNetwork(address, network, bits)) return true;
          return false;
        }
        for (const range of v6) if (address.match(range)) return true;
        return false;
      };
    }
    case 'EXISTS':
      return () => true;
    default:
      return () => false;
  }
}

/** NUM_ and SEMVER_ comparisons, on the sign of (attribute − value). */
function comparison(operator: Operator): (difference: number) => boolean {
  switch (operator.slice(operator.indexOf('_') + 1)) {
    case 'EQ':
      return (difference) => difference === 0;
    case 'GT':
      return (difference) => difference > 0;
    case 'GTE':
      return (difference) => difference >= 0;
    case 'LT':
      return (difference) => difference < 0;
    default:
      return (difference) => difference <= 0;
  }
}

/** One condition: present attribute → its operator; missing → false but NOT_IN; then negate. */
export function compileCondition(condition: Condition, scope: ConditionScope): Matcher {
  const negate = condition.negate === true;
  if (condition.operator === 'IN_SEGMENT') {
    const segments = (condition.values ?? []).map((key) => segmentMatcher(key, scope));
    return negate ? (ctx) => !segments.some((segment) => segment(ctx)) : (ctx) => segments.some((segment) => segment(ctx));
  }
  const read = readerOf(condition.attribute ?? '', scope);
  const test = testOf(condition, scope);
  const whenMissing = condition.operator === 'NOT_IN';
  return negate
    ? (ctx) => {
        const value = read(ctx);
        return !(value === undefined ? whenMissing : test(value));
      }
    : (ctx) => {
        const value = read(ctx);
        return value === undefined ? whenMissing : test(value);
      };
}

/** All of the conditions (AND), as ids of the scope's table: `scope.table.all(ids, ctx)`; true for none. */
export function compileConditionIds(conditions: readonly Condition[], scope: ConditionScope): Int32Array {
  // Conditions are pure and AND-ed: the cheap ones run first, so a miss skips the costly ones.
  const ordered = conditions.map((condition, i) => ({ condition, i })).sort((a, b) => costOf(a.condition) - costOf(b.condition) || a.i - b.i);
  return Int32Array.from(ordered, ({ condition }) => scope.table.idOf(condition, scope));
}

/** All of the conditions (AND); true for none. */
export function compileConditions(conditions: readonly Condition[], scope: ConditionScope): Matcher {
  const ids = compileConditionIds(conditions, scope);
  const { table } = scope;
  return (ctx) => table.all(ids, ctx);
}

/** A rough rank of what an operator costs per evaluation (the engine bench's figures). */
function costOf(condition: Condition): number {
  const operator = condition.operator;
  if (operator === 'EXISTS') return 0;
  if (operator === 'IN' || operator === 'NOT_IN') return 1;
  if (operator.startsWith('STR_') || operator.startsWith('NUM_')) return 2;
  if (operator.startsWith('SEMVER_') || operator.startsWith('DATE_')) return 3;
  if (operator === 'IN_CIDR') return 4;
  if (operator === 'IN_SEGMENT') return 5;
  return 6; // REGEX
}

/** A segment by key: an unknown key (deleted meanwhile) matches nobody. */
function segmentMatcher(key: string, scope: ConditionScope): Matcher {
  let matcher = scope.segmentMatchers.get(key);
  if (matcher === undefined) {
    const conditions = scope.segments.get(key);
    // A segment's own conditions hold no IN_SEGMENT (refused at save), so this cannot recurse.
    const own = (conditions ?? []).filter((condition) => condition.operator !== 'IN_SEGMENT');
    matcher = own.length === 0 ? () => false : compileConditions(own, scope); // an empty segment holds nobody, not everybody
    scope.segmentMatchers.set(key, matcher);
  }
  return matcher;
}
