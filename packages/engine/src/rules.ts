/**
 * Rules compiled, one compiler for every type: a seed rule (user_id, user_email, email_domain) as
 * the normalized value it compares, a conditions rule as its conditions' ids; each with its
 * rollout and the outcome it serves. The seed rules of flags that try no rule one by one go into
 * one index for the whole set (SeedIndex): three map reads per context, whatever the number of
 * rules and flags. What each type matches: docs/api.md ("Evaluate").
 */
import { encodeAnswer, type PackedAnswer } from './answer-codec.js';
import type { ConditionTable } from './conditions.js';
import { NO_VARIANT, type EvaluationContext, type RuleDefinition } from './model.js';
import { matchCode } from './outcomes.js';
import { normalizeEmail, type Scratch } from './scratch.js';

const WHITESPACE = /\s/;

/**
 * Normalizes an email-domain rule value: accepts `@example.com` or `example.com`, trims,
 * lower-cases and returns `@example.com`. Returns null when the domain is empty, contains another
 * `@` or contains whitespace. A dot is not required (`@localhost` is accepted).
 */
export function normalizeEmailDomain(value: string): string | null {
  let v = value.trim().toLowerCase();
  if (v.charCodeAt(0) === 0x40 /* @ */) v = v.slice(1);
  if (v.length === 0 || v.includes('@') || WHITESPACE.test(v)) return null;
  return '@' + v;
}

/** Pragmatic email check (surrounding whitespace ignored): exactly one `@`, a non-empty local part, a non-empty domain, and no whitespace anywhere. */
export function looksLikeEmail(value: string): boolean {
  const v = value.trim();
  const at = v.indexOf('@');
  if (at <= 0 || at === v.length - 1) return false;
  if (v.indexOf('@', at + 1) !== -1) return false;
  return !WHITESPACE.test(v);
}

/** What a seed rule compares with the context. */
type Seed = 'user_id' | 'user_email' | 'email_domain';

/** An enabled rule that can serve someone. */
export interface CompiledRule {
  /** Its index in the flag's rules: which rule served. */
  readonly rank: number;
  /** A seed rule's kind (null for conditions) and the normalized value it compares. */
  readonly seed: Seed | null;
  readonly key: string;
  /** A conditions rule's conditions, as ids of the set's condition table. */
  readonly conditions: Int32Array | null;
  /** 1–100: served when the context's bucket is below it. */
  readonly rollout: number;
  /** What it answers (answer-codec.ts): the outcome code it serves, and its rank. */
  readonly answer: PackedAnswer;
}

/** A rule compiled; null for one that never serves (disabled, rollout 0, an empty value, no conditions, an unknown type). */
export function compileRule(rule: RuleDefinition, rank: number, table: ConditionTable): CompiledRule | null {
  const rollout = rule.rolloutPercentage ?? 100;
  if (rule.enabled !== true || !(rollout > 0)) return null;
  const code = matchCode(rule.type, rule.serve !== false);
  // One object literal, every field in it (V8 keeps them in the object: read on every evaluation).
  const compiled = (seed: Seed | null, key: string, conditions: Int32Array | null): CompiledRule => ({ rank, seed, key, conditions, rollout: Math.min(rollout, 100), answer: encodeAnswer(code, NO_VARIANT, rank) });
  const value = typeof rule.value === 'string' ? rule.value : '';
  switch (rule.type) {
    case 'user_id':
      // Exact, case-sensitive. An empty id never matches (an empty ctx.user_id means "no id").
      return value.length === 0 ? null : compiled('user_id', value, null);
    case 'user_email': {
      const email = normalizeEmail(value);
      return email.length === 0 ? null : compiled('user_email', email, null);
    }
    case 'email_domain': {
      const domain = normalizeEmailDomain(value);
      return domain === null ? null : compiled('email_domain', domain, null);
    }
    case 'conditions':
      // None (refused at save; a stored rule could only lose them by corruption) would be "everyone": never match instead, as an empty seed value.
      if (!Array.isArray(rule.conditions) || rule.conditions.length === 0) return null;
      return compiled(null, '', table.compile(rule.conditions));
    default:
      return null; // an unknown type (a newer schema) never matches
  }
}

/** Whether the context (the scratch's) matches the rule, its rollout aside. */
export function ruleMatches(rule: CompiledRule, ctx: EvaluationContext, scratch: Scratch, table: ConditionTable): boolean {
  if (rule.conditions !== null) return table.all(rule.conditions, ctx);
  switch (rule.seed) {
    case 'user_id':
      return ctx.user_id === rule.key;
    case 'user_email':
      return scratch.contextEmail() === rule.key;
    default:
      return scratch.contextDomain() === rule.key;
  }
}

/**
 * The seed rules (full rollout) of every flag that does not try its rules one by one: per
 * normalized value, the flags whose rules name it and each one's best (lowest) rank. For a
 * context, the best rank per flag is gathered once, lazily, from three map reads.
 */
export class SeedIndex {
  // Value → [flag, rank, flag, rank, …], a flag at most once per value (its lowest rank).
  private readonly byUserId = new Map<string, number[]>();
  private readonly byEmail = new Map<string, number[]>();
  private readonly byDomain = new Map<string, number[]>();
  private readonly best: Int32Array;
  private readonly stamps: Float64Array;
  /** The flags the current context matched, the first `matchedCount` of them. */
  readonly matched: Int32Array;
  private hits = 0;
  private gathered = -1;
  /** Whether any seed rule was added: a set without one reads no map per context. */
  private any = false;

  constructor(
    size: number,
    private readonly scratch: Scratch,
  ) {
    this.best = new Int32Array(size);
    this.stamps = new Float64Array(size);
    this.matched = new Int32Array(size);
  }

  /** Adds a flag's seed rule; the flag's rules arrive in rank order, flag after flag. */
  add(flag: number, rule: CompiledRule): void {
    this.any = true;
    const index = rule.seed === 'user_id' ? this.byUserId : rule.seed === 'user_email' ? this.byEmail : this.byDomain;
    const hits = index.get(rule.key);
    if (hits === undefined) index.set(rule.key, [flag, rule.rank]);
    else if (hits[hits.length - 2] !== flag) hits.push(flag, rule.rank);
  }

  /** The rank of the flag's best seed rule that the context matches, or -1. */
  rankOf(flag: number): number {
    if (this.gathered !== this.scratch.turn) this.gather();
    return this.stamps[flag] === this.gathered ? this.best[flag]! : -1;
  }

  /** How many flags a seed rule of which the context matches: `matched[0..count)`, each once. */
  matchedCount(): number {
    if (!this.any) return 0;
    if (this.gathered !== this.scratch.turn) this.gather();
    return this.hits;
  }

  private gather(): void {
    const { scratch } = this;
    this.gathered = scratch.turn;
    this.hits = 0;
    if (this.byUserId.size > 0) {
      const id = scratch.ctx.user_id;
      if (typeof id === 'string') this.apply(this.byUserId.get(id));
    }
    if (this.byEmail.size > 0) this.apply(this.byEmail.get(scratch.contextEmail()));
    if (this.byDomain.size > 0) {
      const domain = scratch.contextDomain();
      if (domain !== null) this.apply(this.byDomain.get(domain));
    }
  }

  /** One value's hits: a flag keeps its lowest rank (its rule order). */
  private apply(hits: number[] | undefined): void {
    if (hits === undefined) return;
    const turn = this.gathered;
    for (let k = 0; k < hits.length; k += 2) {
      const flag = hits[k]!;
      const rank = hits[k + 1]!;
      if (this.stamps[flag] !== turn) {
        this.stamps[flag] = turn;
        this.best[flag] = rank;
        this.matched[this.hits++] = flag;
      } else if (rank < this.best[flag]!) this.best[flag] = rank;
    }
  }
}
