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

/** A pattern compiled, with what a search costs. */
export class CompiledPattern {
  /** Its program's instructions (re2js `programSize()`). */
  readonly size: number;
  /** Whether it searches with re2js's DFA first (false: the NFA only, slower per step: operators.ts costs it so). */
  readonly dfa: boolean;
  /** Its searches, remembering the last texts it searched (the set's scratch: patterns are per set). */
  private readonly searches: Remembering<boolean>;

  constructor(readonly regex: RE2JS) {
    this.size = regex.programSize();
    // re2js makes its DFA on the first search; made here, it is bounded before any search.
    const dfa = regex.re2Input.dfa;
    dfa.maxMem = dfa.stateBudget = dfa.memBudget = PATTERN_LIMITS.dfaBytes;
    if (dfa.numClasses > PATTERN_LIMITS.dfaClasses) dfa.failed = true;
    this.dfa = !dfa.failed;
    this.searches = new Remembering((text) => regex.test(text));
  }

  /** Whether the pattern is found in the text (RE2 semantics: a search, not anchored). */
  test(text: string): boolean {
    return this.searches.get(text);
  }
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
