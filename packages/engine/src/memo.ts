/**
 * Memos of pure functions of a text. Each flag set makes its own (scratch.ts, patterns.ts):
 * results never depend on them, and no module holds one. Classes rather than closures: every set's
 * memo then runs the same `get`, which V8 inlines where a test calls it.
 */

/** A one-entry memo: the flags of a request read the same attribute, computed once. */
export class Memo<T> {
  private lastText: string | undefined;
  private last: T | undefined;

  constructor(protected readonly compute: (text: string) => T) {}

  get(text: string): T {
    if (text !== this.lastText) {
      this.last = this.miss(text);
      this.lastText = text;
    }
    return this.last as T;
  }

  protected miss(text: string): T {
    return this.compute(text);
  }
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
export class Remembering<T> extends Memo<T> {
  // An undefined result is remembered as NOTHING: a miss then costs one map read, not two.
  private readonly seen = new Map<string, T | typeof NOTHING>();

  protected override miss(text: string): T {
    const known = this.seen.get(text);
    if (known !== undefined) return known === NOTHING ? (undefined as T) : known;
    const result = this.compute(text);
    if (text.length <= REMEMBERED_LENGTH) {
      if (this.seen.size >= REMEMBERED) this.seen.clear();
      this.seen.set(text, result === undefined ? NOTHING : result);
    }
    return result;
  }
}
