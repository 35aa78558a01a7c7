/**
 * REGEX patterns: compiled with RE2 (re2js: linear time, no backtracking), each at most once per
 * flag set and once per validation, with the cost that bounds what a flag may hold
 * (docs/targeting.md, "What a flag may cost"; the figures behind it: docs/performance.md).
 */
import { RE2JS } from 're2js';
import { remembering } from './memo.js';

export const PATTERN_LIMITS = Object.freeze({
  /** Characters of a pattern. */
  length: 1000,
});

/** A pattern compiled, with what a search costs. */
export class CompiledPattern {
  /** Its program's instructions (re2js `programSize()`). */
  readonly size: number;
  /** A search of a text, remembering the last texts it searched (the set's scratch: patterns are per set). */
  readonly test: (text: string) => boolean;

  constructor(readonly regex: RE2JS) {
    this.size = regex.programSize();
    this.test = remembering((text) => regex.test(text));
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
