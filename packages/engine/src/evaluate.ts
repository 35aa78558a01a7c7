import { Murmur3Suffix, murmur3_x86_32, murmur3_x86_32_state, type Murmur3State } from './murmur3.js';
import { DISABLED_CODE, ENABLED_GLOBALLY_CODE, OUTCOMES, RULE_MATCH_CODES, inRolloutCode, notInRolloutCode, type Outcome } from './outcomes.js';

export type RuleType = 'user_id' | 'user_email' | 'email_domain';

export const RULE_TYPES: readonly RuleType[] = Object.freeze(['user_id', 'user_email', 'email_domain'] as const);

export function isRuleType(value: unknown): value is RuleType {
  return value === 'user_id' || value === 'user_email' || value === 'email_domain';
}

export interface RuleDefinition {
  type: RuleType;
  value: string;
  enabled: boolean;
}

/** rules must already be ordered: highest priority first, ties oldest first. The array index is the rank. */
export interface FlagDefinition {
  key: string;
  enabled: boolean;
  rolloutPercentage: number;
  rules: readonly RuleDefinition[];
}

export interface EvaluationContext {
  user_id?: string | undefined;
  user_email?: string | undefined;
}

// ---------------------------------------------------------------------------
// Validation / normalization helpers (shared with the server's validation)
// ---------------------------------------------------------------------------

const WHITESPACE = /\s/;

/**
 * Normalizes an email-domain rule value: accepts `@example.com` or
 * `example.com`, trims, lower-cases and returns `@example.com`.
 * Returns null when the domain is empty, contains another `@` or contains
 * whitespace. A dot is not required (`@localhost` is accepted).
 */
export function normalizeEmailDomain(value: string): string | null {
  let v = value.trim().toLowerCase();
  if (v.charCodeAt(0) === 0x40 /* @ */) v = v.slice(1);
  if (v.length === 0 || v.includes('@') || WHITESPACE.test(v)) return null;
  return '@' + v;
}

/**
 * Pragmatic email check (surrounding whitespace ignored): exactly one `@`,
 * a non-empty local part, a non-empty domain, and no whitespace anywhere.
 */
export function looksLikeEmail(value: string): boolean {
  const v = value.trim();
  const at = v.indexOf('@');
  if (at <= 0 || at === v.length - 1) return false;
  if (v.indexOf('@', at + 1) !== -1) return false;
  return !WHITESPACE.test(v);
}

/** Normalization applied to user_email rule values and to ctx.user_email. */
function normalizeEmail(value: string): string {
  return value.trim().toLowerCase();
}

// One-entry memo of the normalized context email and its `@domain`. A request
// usually evaluates every flag of an environment against the same context, so
// trim/toLowerCase/slice (and V8's hashing of the fresh strings on Map.get) run
// once per context instead of once per flag. Pure cache: results never depend
// on it. (Module state is per-isolate, so worker threads don't share it.)
let memoRaw: string | undefined;
let memoEmail = '';
/** undefined: not computed yet for memoRaw; null: the email has no `@` */
let memoDomain: string | null | undefined;

function contextEmail(raw: string): string {
  if (raw !== memoRaw) {
    memoEmail = normalizeEmail(raw);
    memoDomain = undefined;
    memoRaw = raw;
  }
  return memoEmail;
}

/** `@domain` after the last `@` of the normalized email, or null. Call contextEmail(raw) first. */
function contextDomain(): string | null {
  if (memoDomain === undefined) {
    const at = memoEmail.lastIndexOf('@');
    memoDomain = at === -1 ? null : memoEmail.slice(at);
  }
  return memoDomain;
}

// ---------------------------------------------------------------------------
// Bucketing
// ---------------------------------------------------------------------------

/** Bucket in [0, 100): murmur3_x86_32(`${flagKey}:${identifier}`, 0) % 100. */
export function bucketOf(flagKey: string, identifier: string): number {
  return murmur3_x86_32(`${flagKey}:${identifier}`, 0) % 100;
}

/** ctx.user_id if a non-empty string, else ctx.user_email (as given) if non-empty, else 'anonymous'. */
export function rolloutIdentifier(ctx: EvaluationContext): string {
  const id = ctx.user_id;
  if (typeof id === 'string' && id.length !== 0) return id;
  const email = ctx.user_email;
  if (typeof email === 'string' && email.length !== 0) return email;
  return 'anonymous';
}

// ---------------------------------------------------------------------------
// Compilation: every flag of an environment at once
// ---------------------------------------------------------------------------

/** Inserts value → rank, keeping the best (lowest) rank for duplicate values. */
function addRule(map: Map<string, number> | null, value: string, rank: number): Map<string, number> {
  const m = map ?? new Map<string, number>();
  if (!m.has(value)) m.set(value, rank); // ranks arrive in increasing order
  return m;
}

/** A flag's enabled targeting rules, by type: normalized value → rank (lower wins). null: none of that type. */
interface RuleMaps {
  byUserId: Map<string, number> | null;
  byEmail: Map<string, number> | null;
  byDomain: Map<string, number> | null;
}

function compileRules(rules: readonly RuleDefinition[]): RuleMaps {
  const maps: RuleMaps = { byUserId: null, byEmail: null, byDomain: null };
  for (let rank = 0; rank < rules.length; rank++) {
    const rule = rules[rank];
    if (rule === undefined || rule.enabled !== true || typeof rule.value !== 'string') continue;
    switch (rule.type) {
      case 'user_id':
        // Exact, case-sensitive. An empty id never matches (empty ctx.user_id means "no id").
        if (rule.value.length !== 0) maps.byUserId = addRule(maps.byUserId, rule.value, rank);
        break;
      case 'user_email': {
        const v = normalizeEmail(rule.value);
        if (v.length !== 0) maps.byEmail = addRule(maps.byEmail, v, rank);
        break;
      }
      case 'email_domain': {
        const v = normalizeEmailDomain(rule.value);
        if (v !== null) maps.byDomain = addRule(maps.byDomain, v, rank);
        break;
      }
      default:
        // Unknown rule types (e.g. from a newer schema) can never match.
        break;
    }
  }
  return maps;
}

/** rolloutIdentifier, inlined where it runs per flag (same semantics, tested for equivalence). */
function identifierOf(ctx: EvaluationContext): string {
  let id = ctx.user_id;
  if (typeof id !== 'string' || id.length === 0) {
    id = ctx.user_email;
    if (typeof id !== 'string' || id.length === 0) id = 'anonymous';
  }
  return id;
}

/**
 * The flags of one environment compiled together (contract §2): evaluating them for a context
 * writes one outcome code (outcomes.ts) per flag. A flag whose outcome cannot depend on the
 * context costs nothing per context, and the targeting rules of every flag are looked up with
 * three map reads per context in all, not three per flag.
 */
export interface CompiledFlagSet {
  readonly size: number;
  /** Each flag's key, in the set's order. */
  readonly keys: readonly string[];
  /**
   * Each flag's code for a context that matches none of its rules; meaningless for the flags in
   * `rollouts`, whose code then depends on the context's bucket.
   */
  readonly baseCodes: Uint8Array;
  /** The flags (ascending indexes) whose code, when no rule of theirs matches, comes from their rollout. */
  readonly rollouts: Uint32Array;
  /** Per flag of `rollouts`, its code when in the rollout (any other code there, with no rule matched, is the not-in one). */
  readonly inRolloutCodes: Uint8Array;
  /**
   * Writes each flag's code into codes[0..size). Returns true when a targeting rule matched:
   * then flags other than `rollouts` may differ from `baseCodes`.
   */
  evaluateInto(ctx: EvaluationContext, codes: Uint8Array): boolean;
  /** The code of the flag at `index` for a context: what evaluateInto writes there. */
  evaluateFlag(ctx: EvaluationContext, index: number): number;
}

/** The context's identifier, read once for all the rollouts of a flag set (evaluation is synchronous: one is enough). */
const identifier = new Murmur3Suffix();

export function compileFlagSet(defs: readonly FlagDefinition[]): CompiledFlagSet {
  const size = defs.length;
  const keys = Object.freeze(defs.map((def) => def.key));
  const baseCodes = new Uint8Array(size);
  const rollouts: number[] = [];
  /** Per flag, its place in `rollouts`, or -1. */
  const rolloutOf = new Int32Array(size).fill(-1);
  const rolloutPrefixes: Murmur3State[] = [];
  const rolloutPercentages: number[] = [];
  // Rule value → [flag, rank, flag, rank, …] over every flag of the set.
  const byUserId = new Map<string, number[]>();
  const byEmail = new Map<string, number[]>();
  const byDomain = new Map<string, number[]>();
  const index = (into: Map<string, number[]>, rules: Map<string, number> | null, flag: number) => {
    if (rules === null) return;
    for (const [value, rank] of rules) {
      const hits = into.get(value);
      if (hits) hits.push(flag, rank);
      else into.set(value, [flag, rank]);
    }
  };

  for (let flag = 0; flag < size; flag++) {
    const def = defs[flag]!;
    if (!def.enabled) {
      baseCodes[flag] = DISABLED_CODE;
      continue;
    }
    const rules = compileRules(def.rules);
    index(byUserId, rules.byUserId, flag);
    index(byEmail, rules.byEmail, flag);
    index(byDomain, rules.byDomain, flag);
    const n = def.rolloutPercentage;
    if (!(n > 0)) baseCodes[flag] = ENABLED_GLOBALLY_CODE;
    else if (n >= 100) baseCodes[flag] = inRolloutCode(100); // every bucket (0..99) is < n
    else {
      rolloutOf[flag] = rollouts.length;
      rollouts.push(flag);
      // bucketOf(key, id) === murmur3(`${key}:${id}`) % 100: the constant "<key>:" prefix is
      // absorbed once here, only the identifier is hashed per evaluation.
      rolloutPrefixes.push(murmur3_x86_32_state(def.key + ':', 0));
      rolloutPercentages.push(n);
    }
  }
  const inRolloutCodes = Uint8Array.from(rolloutPercentages, inRolloutCode);
  const notInRolloutCodes = Uint8Array.from(rolloutPercentages, notInRolloutCode);

  const matchUserId = RULE_MATCH_CODES.user_id;
  const matchEmail = RULE_MATCH_CODES.user_email;
  const matchDomain = RULE_MATCH_CODES.email_domain;
  const hasIdRules = byUserId.size > 0;
  const hasEmailRules = byEmail.size > 0 || byDomain.size > 0;
  // The best rank matched so far per flag, valid where matchedIn[flag] === the current context's turn.
  const bestRank = new Int32Array(size);
  const matchedIn = new Uint32Array(size);
  let turn = 0;

  /** Applies one rule value's matches: a flag takes the match of its lowest rank (its rule order). */
  const apply = (hits: number[], matchCode: number, codes: Uint8Array) => {
    for (let k = 0; k < hits.length; k += 2) {
      const flag = hits[k]!;
      const rank = hits[k + 1]!;
      if (matchedIn[flag] !== turn || rank < bestRank[flag]!) {
        matchedIn[flag] = turn;
        bestRank[flag] = rank;
        codes[flag] = matchCode;
      }
    }
  };

  const evaluateInto = (ctx: EvaluationContext, codes: Uint8Array): boolean => {
    codes.set(baseCodes);
    if (rollouts.length > 0) {
      identifier.prepare(identifierOf(ctx));
      for (let j = 0; j < rollouts.length; j++) {
        codes[rollouts[j]!] = identifier.finish(rolloutPrefixes[j]!) % 100 < rolloutPercentages[j]! ? inRolloutCodes[j]! : notInRolloutCodes[j]!;
      }
    }
    let matched = false;
    if (hasIdRules) {
      const id = ctx.user_id;
      const hits = typeof id === 'string' ? byUserId.get(id) : undefined;
      if (hits !== undefined) {
        turn = (turn + 1) >>> 0 || 1;
        matched = true;
        apply(hits, matchUserId, codes);
      }
    }
    if (hasEmailRules) {
      const raw = ctx.user_email;
      if (typeof raw === 'string' && raw.length !== 0) {
        const emailHits = byEmail.get(contextEmail(raw));
        const domain = contextDomain();
        const domainHits = domain === null ? undefined : byDomain.get(domain);
        if (emailHits !== undefined || domainHits !== undefined) {
          if (!matched) turn = (turn + 1) >>> 0 || 1;
          matched = true;
          if (emailHits !== undefined) apply(emailHits, matchEmail, codes);
          if (domainHits !== undefined) apply(domainHits, matchDomain, codes);
        }
      }
    }
    return matched;
  };

  const evaluateFlag = (ctx: EvaluationContext, flag: number): number => {
    let rank = -1;
    let code = 0;
    /** The flag's lowest rank among one rule value's hits (a value's hits hold each flag once). */
    const consider = (hits: number[] | undefined, matchCode: number) => {
      if (hits === undefined) return;
      for (let k = 0; k < hits.length; k += 2) {
        if (hits[k] === flag && (rank < 0 || hits[k + 1]! < rank)) {
          rank = hits[k + 1]!;
          code = matchCode;
        }
      }
    };
    if (hasIdRules && typeof ctx.user_id === 'string') consider(byUserId.get(ctx.user_id), matchUserId);
    const raw = ctx.user_email;
    if (hasEmailRules && typeof raw === 'string' && raw.length !== 0) {
      consider(byEmail.get(contextEmail(raw)), matchEmail);
      const domain = contextDomain();
      if (domain !== null) consider(byDomain.get(domain), matchDomain);
    }
    if (rank >= 0) return code;
    const j = rolloutOf[flag]!;
    if (j < 0) return baseCodes[flag]!;
    identifier.prepare(identifierOf(ctx));
    return identifier.finish(rolloutPrefixes[j]!) % 100 < rolloutPercentages[j]! ? inRolloutCodes[j]! : notInRolloutCodes[j]!;
  };

  return Object.freeze({ size, keys, baseCodes, rollouts: Uint32Array.from(rollouts), inRolloutCodes, evaluateInto, evaluateFlag });
}

/** The outcome of one flag for a context, compiled on the spot: for tests and one-off use, not for a hot path. */
export function evaluateFlag(def: FlagDefinition, ctx: EvaluationContext): Outcome {
  return OUTCOMES[compileFlagSet([def]).evaluateFlag(ctx, 0)]!;
}
