/**
 * Memos for pure functions of a text. Each flag set makes its own (scratch.ts, patterns.ts):
 * results never depend on them, and no module holds one.
 */

/** A one-entry memo: the flags of a request read the same attribute, computed once. */
export function memo<T>(compute: (text: string) => T): (text: string) => T {
  let lastText: string | undefined;
  let last: T;
  return (text) => {
    if (text !== lastText) {
      last = compute(text);
      lastText = text;
    }
    return last;
  };
}

/** Texts a remembering memo keeps at most, and the longest it keeps. */
const REMEMBERED = 128;
const REMEMBERED_LENGTH = 256;
/** What a remembering memo keeps for a text whose result is undefined. */
const NOTHING: unique symbol = Symbol('nothing');

/**
 * A memo that also remembers the last REMEMBERED texts (emptied when full): attribute values
 * repeat across requests (app versions, user agents, countries), and a REGEX search or a version
 * parse costs tens of times a map read. Bounded: at most REMEMBERED texts of at most
 * REMEMBERED_LENGTH characters.
 */
export function remembering<T>(compute: (text: string) => T): (text: string) => T {
  // An undefined result is remembered as NOTHING: a miss then costs one map read, not two.
  const seen = new Map<string, T | typeof NOTHING>();
  return memo((text) => {
    const known = seen.get(text);
    if (known !== undefined) return known === NOTHING ? (undefined as T) : known;
    const result = compute(text);
    if (text.length <= REMEMBERED_LENGTH) {
      if (seen.size >= REMEMBERED) seen.clear();
      seen.set(text, result === undefined ? NOTHING : result);
    }
    return result;
  });
}
