/**
 * The conditions of a flag set, compiled once per change (docs/targeting.md): each distinct
 * condition once, its result memoized for the context being evaluated; a rule's conditions as a
 * list of ids, cheapest first; segments inlined into the rules that name them. An evaluation never
 * parses a rule's values: sets, numbers, dates, versions, ranges and RE2 patterns are made here.
 */
import type { Condition, CompileOptions, EvaluationContext } from './model.js';
import { BUILT_IN_ATTRIBUTES } from './model.js';
import { conditionCost, conditionSignature, readValues, specOf, type Build, type Test } from './operators.js';
import { Patterns } from './patterns.js';
import type { Scratch } from './scratch.js';

/** Whether a context meets a condition, a rule's conditions, a segment. */
export type Matcher = (ctx: EvaluationContext) => boolean;

/** The attribute's string form in a context, or undefined when it is absent. */
type Reader = (ctx: EvaluationContext) => string | undefined;

const FROM_CONTEXT_ONLY: ReadonlySet<string> = new Set(BUILT_IN_ATTRIBUTES.filter((name) => name !== 'current_time'));

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

function readerOf(attribute: string, environment: string | undefined): Reader {
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
    case 'environment':
      return () => environment;
    case 'current_time':
      return (ctx) => customValue(ctx, 'current_time') ?? new Date().toISOString();
    default:
      if (FROM_CONTEXT_ONLY.has(attribute)) return () => undefined;
      return (ctx) => customValue(ctx, attribute);
  }
}

/** IN_SEGMENT names no attribute: its test reads the context. */
const PRESENT: Reader = () => '';
const NEVER: Test = () => false;

/** A typed array twice as long, its values kept. */
function doubled<T extends Uint8Array | Float64Array>(array: T): T {
  const bigger = new (array.constructor as new (length: number) => T)(array.length * 2);
  bigger.set(array);
  return bigger;
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
  /** Per condition id, 1 when it lists `lastValue` (read in ConditionTable.all's loop). */
  listed = new Uint8Array(16);
  lastValue: string | undefined;
  /** The conditions that list `lastValue`. */
  lastIds: readonly number[] = [];
  /** Per condition id, the flags gated by it (ConditionTable.gate). */
  readonly gated: number[][] = [];

  constructor(
    /** The attribute's slot in the table, and whether its values are compared lower-cased. */
    readonly slot: number,
    readonly folded: boolean,
  ) {}

  /** A new condition's id, listing its values. */
  add(values: readonly string[]): number {
    const id = this.count++;
    if (id >= this.listed.length) this.listed = doubled(this.listed);
    this.gated.push([]);
    for (const value of values) {
      const ids = this.index.get(value);
      if (ids === undefined) this.index.set(value, [id]);
      else if (ids[ids.length - 1] !== id) ids.push(id);
    }
    return id;
  }

  /** Makes `listed` say which conditions list `value`: one map read per distinct value in a row. */
  look(value: string): void {
    for (const listed of this.lastIds) this.listed[listed] = 0;
    this.lastIds = this.index.get(value) ?? [];
    for (const listed of this.lastIds) this.listed[listed] = 1;
    this.lastValue = value;
  }
}

/**
 * The distinct conditions of a flag set, each with its result memoized for the context being
 * evaluated (the scratch's turn). Flags often repeat a condition (the same version floor, pattern
 * or segment): it is tested once per context, and a rule's conditions are a loop over ids here
 * rather than a chain of closures (calls through many different closures were most of an
 * evaluation's time).
 */
export class ConditionTable implements Build {
  readonly patterns = new Patterns();
  private readonly environment: string | undefined;
  private readonly segmentConditions: ReadonlyMap<string, readonly Condition[]>;
  private readonly segments = new Map<string, Matcher>();
  private readonly ids = new Map<string, number>();
  private readonly matchers: (Matcher | undefined)[] = [];
  private stamps = new Float64Array(16);
  private results = new Uint8Array(16);

  /**
   * IN / NOT_IN conditions, the most common and the most numerous (a thousand flags may each list
   * their own customers), are answered here from their attribute's SharedSets without a call
   * through a closure: per condition id, its attribute's slot (-1: another operator), its shared
   * sets and its id there, and bits.
   */
  private readonly inSlot: number[] = [];
  private readonly inSets: (SharedSets | undefined)[] = [];
  private readonly inSetIds: number[] = [];
  /** Bits: 1 NOT_IN (listed → false, missing → true), 2 negate, 4 case_insensitive. */
  private readonly inFlags: number[] = [];
  private readonly sets = new Map<string, SharedSets>();
  /** The shared sets that gate some flag (gate), each once. */
  private readonly gatedSets: SharedSets[] = [];
  /** Attribute values read for the current context, by slot (read once however many conditions name the attribute). */
  private readonly slots = new Map<string, number>();
  private readonly readers: Reader[] = [];
  private slotStamps = new Float64Array(8);
  private readonly slotValues: (string | undefined)[] = [];

  constructor(
    readonly scratch: Scratch,
    options: CompileOptions,
  ) {
    this.environment = options.environment;
    this.segmentConditions = options.segments ?? new Map();
  }

  /** All of the conditions (AND), as ids for `all`, cheapest first (they are pure: a miss skips the costly ones). */
  compile(conditions: readonly Condition[]): Int32Array {
    const ordered = conditions.map((condition, i) => ({ condition, i, cost: this.costOf(condition) })).sort((a, b) => a.cost - b.cost || a.i - b.i);
    return Int32Array.from(ordered, ({ condition }) => this.idOf(condition));
  }

  /** Whether the context (the scratch's) meets every condition of ids, in their order. */
  all(ids: Int32Array, ctx: EvaluationContext): boolean {
    const { stamps, results } = this;
    const turn = this.scratch.turn;
    for (let i = 0; i < ids.length; i++) {
      const id = ids[i]!;
      if (stamps[id] === turn) {
        if (results[id] === 0) return false;
        continue;
      }
      const slot = this.inSlot[id]!;
      let result: boolean;
      if (slot >= 0) {
        // Missing → NOT_IN holds; present → listed or not; then negate.
        const flags = this.inFlags[id]!;
        let value = this.slotStamps[slot] === turn ? this.slotValues[slot] : this.read(slot, ctx);
        if (value === undefined) result = (flags & 1) === 1;
        else {
          if ((flags & 4) !== 0) value = this.scratch.lowerCase.get(value);
          // Whether the condition lists the value (SharedSets, written out: this loop is the hot path).
          const sets = this.inSets[id]!;
          if (value !== sets.lastValue) sets.look(value);
          result = (sets.listed[this.inSetIds[id]!] === 1) !== ((flags & 1) === 1);
        }
        if ((flags & 2) !== 0) result = !result;
      } else result = this.matchers[id]!(ctx);
      stamps[id] = turn;
      results[id] = result ? 1 : 0;
      if (!result) return false;
    }
    return true;
  }

  /**
   * The condition of `ids` that a rule cannot match without and that is answered from a shared
   * set: an IN (not NOT_IN, not negated) condition's id, or -1. A flag whose every rule has one is
   * gated: it is evaluated only for a context whose value one of its gates lists (gatedFlags).
   */
  gateOf(ids: Int32Array): number {
    for (const id of ids) if (this.inSlot[id]! >= 0 && (this.inFlags[id]! & 3) === 0) return id;
    return -1;
  }

  /** Gates a flag by a condition of gateOf; 1 when the flag was not already gated by it, else 0 (the room gatedFlags needs). */
  gate(id: number, flag: number): number {
    const sets = this.inSets[id]!;
    if (!this.gatedSets.includes(sets)) this.gatedSets.push(sets);
    const flags = sets.gated[this.inSetIds[id]!]!;
    if (flags[flags.length - 1] === flag) return 0;
    flags.push(flag);
    return 1;
  }

  /**
   * The gated flags that one of their gates lets through for the context (the scratch's), into
   * `out`, their count: one map read per gated attribute, whatever the number of flags. A flag
   * gated by several conditions may be there more than once.
   */
  gatedFlags(ctx: EvaluationContext, out: Int32Array): number {
    const turn = this.scratch.turn;
    let count = 0;
    for (const sets of this.gatedSets) {
      const slot = sets.slot;
      let value = this.slotStamps[slot] === turn ? this.slotValues[slot] : this.read(slot, ctx);
      if (value === undefined) continue; // IN does not hold for a missing attribute
      if (sets.folded) value = this.scratch.lowerCase.get(value);
      if (value !== sets.lastValue) sets.look(value);
      for (const id of sets.lastIds) {
        const flags = sets.gated[id]!;
        for (let i = 0; i < flags.length; i++) out[count++] = flags[i]!;
      }
    }
    return count;
  }

  /** A segment by key (Build.segment): an unknown key (deleted meanwhile) matches nobody. */
  segment(key: string): Matcher {
    let matcher = this.segments.get(key);
    if (matcher === undefined) {
      // A segment's own conditions hold no IN_SEGMENT (refused at save), so this cannot recurse.
      const own = (this.segmentConditions.get(key) ?? []).filter((condition) => condition.operator !== 'IN_SEGMENT');
      const ids = this.compile(own);
      matcher = own.length === 0 ? () => false : (ctx) => this.all(ids, ctx); // an empty segment holds nobody, not everybody
      this.segments.set(key, matcher);
    }
    return matcher;
  }

  /** A condition's cost (operators.ts), its segments' included: what orders a rule's conditions. */
  private costOf(condition: Condition): number {
    const own = conditionCost(condition, this.patterns);
    if (condition.operator !== 'IN_SEGMENT') return own;
    let segments = 0;
    for (const key of condition.values ?? []) for (const inner of this.segmentConditions.get(key) ?? []) if (inner.operator !== 'IN_SEGMENT') segments += conditionCost(inner, this.patterns);
    return own + segments;
  }

  /** The id of a condition, compiled when first seen. */
  private idOf(condition: Condition): number {
    const { attribute, negate, case_insensitive } = condition;
    const signature = conditionSignature(condition);
    let id = this.ids.get(signature);
    if (id !== undefined) return id;
    id = this.matchers.length;
    this.ids.set(signature, id);
    if (id >= this.stamps.length) {
      this.stamps = doubled(this.stamps);
      this.results = doubled(this.results);
    }
    // The id is taken before compiling: an IN_SEGMENT compiles its segments' conditions first.
    // Every per-id array gets an element (no holes: V8 reads packed arrays faster).
    this.matchers.push(undefined);
    this.inSlot.push(-1);
    this.inSets.push(undefined);
    this.inSetIds.push(0);
    this.inFlags.push(0);
    const spec = specOf(condition);
    if (spec.indexed) {
      const folded = case_insensitive === true;
      const key = `${folded ? 'i' : ''}\u0000${attribute ?? ''}`;
      let shared = this.sets.get(key);
      if (shared === undefined) this.sets.set(key, (shared = new SharedSets(this.slotOf(attribute ?? ''), folded)));
      this.inSlot[id] = shared.slot;
      this.inSets[id] = shared;
      this.inSetIds[id] = shared.add(readValues(condition, this.patterns).values as string[]);
      this.inFlags[id] = (spec.whenMissing ? 1 : 0) | (negate === true ? 2 : 0) | (folded ? 4 : 0);
    } else this.matchers[id] = this.matcherOf(condition);
    return id;
  }

  /** One condition: present attribute → its operator's test; missing → the operator's whenMissing; then negate. */
  private matcherOf(condition: Condition): Matcher {
    const spec = specOf(condition);
    const read = spec.noAttribute ? PRESENT : readerOf(condition.attribute ?? '', this.environment);
    const { values, refused } = readValues(condition, this.patterns);
    // A value refused at save matches nobody; a condition left with none never holds.
    const test = refused !== undefined && values.length === 0 ? NEVER : spec.test!(values, condition.case_insensitive === true, this);
    const whenMissing = spec.whenMissing;
    return condition.negate === true
      ? (ctx) => {
          const value = read(ctx);
          return !(value === undefined ? whenMissing : test(value, ctx));
        }
      : (ctx) => {
          const value = read(ctx);
          return value === undefined ? whenMissing : test(value, ctx);
        };
  }

  private slotOf(attribute: string): number {
    let slot = this.slots.get(attribute);
    if (slot === undefined) {
      slot = this.readers.push(readerOf(attribute, this.environment)) - 1;
      this.slots.set(attribute, slot);
      if (slot >= this.slotStamps.length) this.slotStamps = doubled(this.slotStamps);
    }
    return slot;
  }

  private read(slot: number, ctx: EvaluationContext): string | undefined {
    const value = this.readers[slot]!(ctx);
    this.slotStamps[slot] = this.scratch.turn;
    this.slotValues[slot] = value;
    return value;
  }
}
