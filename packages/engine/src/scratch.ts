/**
 * A flag set's scratch space: what one evaluation reads more than once, computed once per context
 * and kept on the set (never in a module), so that nothing has to be "prepared" before a call for
 * the call to be right. Evaluation is synchronous: one context at a time per set.
 */
import { Memo, Remembering } from './memo.js';
import { Murmur3Suffix, type Murmur3State } from './murmur3.js';
import type { EvaluationContext } from './model.js';
import { parseAddress, parseDate, parseNumber, parseVersion } from './values.js';

/** ctx.user_id if a non-empty string, else ctx.user_email (as given) if non-empty, else 'anonymous'. */
export function rolloutIdentifier(ctx: EvaluationContext): string {
  let id = ctx.user_id;
  if (typeof id !== 'string' || id.length === 0) {
    id = ctx.user_email;
    if (typeof id !== 'string' || id.length === 0) id = 'anonymous';
  }
  return id;
}

/** What a user_email rule value and the context's email are compared as. */
export const normalizeEmail = (value: string): string => value.trim().toLowerCase();

export class Scratch {
  /**
   * The current context's number: results stamped with another are stale. A double, so that it
   * never wraps (stamps are Float64Arrays).
   */
  turn = 0;
  ctx: EvaluationContext = {};
  private identifierTurn = -1;
  private readonly identifier = new Murmur3Suffix();
  // The normalized email and its `@domain`, by the raw email they were made from: the flags of a
  // request read them many times (a memo by value, so it holds across contexts too).
  private rawEmail: string | undefined;
  private email = '';
  /** undefined: not computed yet for rawEmail; null: the email has no `@`. */
  private domain: string | null | undefined;

  // Attribute texts as each operator reads them, by value: a request's flags read the same
  // attribute many times, and values repeat across requests (app versions, user agents).
  readonly lowerCase = new Memo((text: string) => text.toLowerCase());
  readonly number = new Memo(parseNumber);
  readonly date = new Remembering(parseDate);
  readonly version = new Remembering(parseVersion);
  readonly address = new Remembering(parseAddress);

  /** A new context: every result stamped before is stale. */
  begin(ctx: EvaluationContext): void {
    this.turn++;
    this.ctx = ctx;
  }

  /** murmur3 of `prefix` followed by the context's rollout identifier: its bucket and its variant hash. */
  hash(prefix: Murmur3State): number {
    if (this.identifierTurn !== this.turn) {
      this.identifier.prepare(rolloutIdentifier(this.ctx));
      this.identifierTurn = this.turn;
    }
    return this.identifier.finish(prefix);
  }

  /** The context's email, trimmed and lower-cased; '' when it has none. */
  contextEmail(): string {
    const raw = this.ctx.user_email;
    if (typeof raw !== 'string' || raw.length === 0) return '';
    if (raw !== this.rawEmail) {
      this.email = normalizeEmail(raw);
      this.domain = undefined;
      this.rawEmail = raw;
    }
    return this.email;
  }

  /** `@domain` after the last `@` of the context's normalized email, or null. */
  contextDomain(): string | null {
    const email = this.contextEmail();
    if (email === '') return null;
    if (this.domain === undefined) {
      const at = email.lastIndexOf('@');
      this.domain = at === -1 ? null : email.slice(at);
    }
    return this.domain;
  }
}
