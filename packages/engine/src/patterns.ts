/**
 * REGEX patterns: compiled with RE2 (re2js: linear time, no backtracking), each at most once per
 * flag set and once per validation, with what bounds a search's cost and memory (the cost itself
 * is operators.ts's; the figures behind both: docs/performance.md, "What a flag may cost").
 */
import { RE2JS } from 're2js';
import { Remembering } from './memo.js';
import { CONDITION_LIMITS } from './model.js';

export const PATTERN_LIMITS = Object.freeze({
  /** Characters of a pattern. */
  length: CONDITION_LIMITS.patternLength,
  /**
   * Bytes of re2js's lazy DFA cache per pattern (its default is 8 MiB): what a pattern of at
   * most 80 instructions over few classes needs to keep its states (a counted class `[a-z]{78}`
   * needs about 62 KiB; at 32 KiB it searched in 0.7 ms instead of 11 µs). A pattern whose
   * states multiply drops to re2js's NFA after a few resets; and it bounds what a pattern holds.
   */
  dfaBytes: 64 * 1024,
  /**
   * Character classes (ranges of a DFA state's transition table) above which a pattern searches
   * with the NFA only: each new DFA state allocates a table this wide, and a pattern over large
   * Unicode classes (`\pL`, `(?i)` over them) built and dropped one per character (20–60 ms a
   * search, docs/performance.md).
   */
  dfaClasses: 256,
});

/** re2js's instruction codes (its `Inst`) and the empty-width flag of `^`, which the shape reads. */
const ALT = 1;
const ALT_MATCH = 2;
const MATCH = 6;
const FAIL = 5;
const RUNE = 8;
const RUNE_ANY_NOT_NL = 11;
const BEGIN_TEXT = 4;

/** What re2js does for a search (RE2.executeEngine), in the order it tries: what operators.ts costs. */
export interface PatternShape {
  /** The whole pattern is a literal: one `indexOf`, no automaton. */
  readonly literal: boolean;
  /** Passes of `indexOf` (or of one Aho–Corasick) over the text before the automaton: re2js's prefilter. */
  readonly scans: number;
  /** Anchored at the start (`^`, not `(?m)^`): only threads begun at 0 get past it. */
  readonly anchored: boolean;
  /** Characters a match may read at most; Infinity when the program loops (`*`, `+`, `{n,}`). */
  readonly longest: number;
  /** re2js's one-pass matcher answers (anchored, unambiguous): it runs the program once, no DFA. */
  readonly onepass: boolean;
  /** Classes of the DFA's transition tables (one table a DFA state). */
  readonly classes: number;
}

interface Inst {
  op: number;
  out: number;
  arg: number;
}

/**
 * The characters a match may read at most: the longest path of rune instructions from the start,
 * or Infinity when the program has a cycle (a loop may read the whole text).
 */
function longestMatch(prog: { start: number; numInst(): number; getInst(pc: number): Inst }): number {
  const memo = new Map<number, number>();
  const open = new Set<number>();
  // Recursive: the caller walks only programs of at most 1,000 instructions.
  const visit = (pc: number): number => {
    const known = memo.get(pc);
    if (known !== undefined) return known;
    if (open.has(pc)) return Infinity;
    open.add(pc);
    const inst = prog.getInst(pc);
    let length: number;
    if (inst.op === MATCH || inst.op === FAIL) length = 0;
    else if (inst.op === ALT || inst.op === ALT_MATCH) length = Math.max(visit(inst.out), visit(inst.arg));
    else length = visit(inst.out) + (inst.op >= RUNE && inst.op <= RUNE_ANY_NOT_NL ? 1 : 0);
    open.delete(pc);
    memo.set(pc, length);
    return length;
  };
  return visit(prog.start);
}

/** A pattern compiled, with what a search costs. */
export class CompiledPattern {
  /** Its program's instructions (re2js `programSize()`). */
  readonly size: number;
  /** Whether it searches with re2js's DFA first (false: the NFA only, slower per step: operators.ts costs it so). */
  readonly dfa: boolean;
  /** How re2js searches it (what operators.ts's searchCost reads). */
  readonly shape: PatternShape;
  /** Its searches, remembering the last texts it searched (the set's scratch: patterns are per set). */
  private readonly searches: Remembering<boolean>;

  constructor(readonly regex: RE2JS) {
    this.size = regex.programSize();
    // re2js makes its DFA on the first search; made here, it is bounded before any search.
    const dfa = regex.re2Input.dfa;
    dfa.maxMem = dfa.stateBudget = dfa.memBudget = PATTERN_LIMITS.dfaBytes;
    if (dfa.numClasses > PATTERN_LIMITS.dfaClasses) dfa.failed = true;
    this.dfa = !dfa.failed;
    const re2 = regex.re2Input;
    this.shape = {
      literal: re2.prefixComplete,
      scans: scansOf(re2.prefilter as Prefilter | null),
      anchored: (re2.cond & BEGIN_TEXT) !== 0,
      // Programs over MAX_PROGRAM are refused before they are costed: no need to walk them.
      longest: this.size <= 1000 ? longestMatch(re2.prog) : Infinity,
      onepass: re2.onepass !== null,
      classes: dfa.numClasses,
    };
    this.searches = new Remembering((text) => regex.test(text));
  }

  /** Whether the pattern is found in the text (RE2 semantics: a search, not anchored). */
  test(text: string): boolean {
    return this.searches.get(text);
  }
}

/** re2js's prefilter: literals the text must hold, checked by `indexOf` before the automaton runs. */
interface Prefilter {
  type: number;
  subs: Prefilter[];
  allExact: boolean;
}
const EXACT = 1;
const OR = 3;

/**
 * Passes over the text a prefilter makes at most, in `indexOf` passes: one a literal; four for an
 * OR of literals, searched with an Aho–Corasick automaton built on the first search (measured:
 * regex-cost.bench.ts).
 */
function scansOf(prefilter: Prefilter | null): number {
  if (prefilter === null) return 0;
  if (prefilter.type === EXACT) return 1;
  if (prefilter.type === OR && prefilter.allExact) return 4;
  return prefilter.subs.reduce((sum, sub) => sum + scansOf(sub), 0);
}

/**
 * The patterns of one flag set or one validation, compiled once each: a condition that repeats a
 * pattern 10,000 times compiles it once. A pattern RE2 cannot run is remembered as its problem.
 */
export class Patterns {
  private readonly byId = new Map<string, CompiledPattern | string>();
  /** How many times a pattern was compiled (distinct patterns, refused ones included). */
  compilations = 0;

  /** The compiled pattern, or why it cannot be (a message for a 400). */
  get(pattern: string, caseInsensitive: boolean): CompiledPattern | string {
    const id = `${caseInsensitive ? 'i' : ''}/${pattern}`;
    let compiled = this.byId.get(id);
    if (compiled === undefined) {
      this.compilations++;
      compiled = compile(pattern, caseInsensitive);
      this.byId.set(id, compiled);
    }
    return compiled;
  }

  /** Distinct patterns that compiled. */
  get size(): number {
    let count = 0;
    for (const compiled of this.byId.values()) if (typeof compiled !== 'string') count++;
    return count;
  }
}

function compile(pattern: string, caseInsensitive: boolean): CompiledPattern | string {
  if (pattern.length > PATTERN_LIMITS.length) return `a pattern is longer than ${PATTERN_LIMITS.length} characters`;
  let compiled: CompiledPattern;
  try {
    compiled = new CompiledPattern(RE2JS.compile(pattern, caseInsensitive ? RE2JS.CASE_INSENSITIVE : 0));
  } catch (error) {
    return `"${pattern}" is not a pattern RE2 runs in linear time (${(error as Error).message})`;
  }
  return compiled;
}
