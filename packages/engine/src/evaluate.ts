import { Murmur3Suffix, murmur3_x86_32, murmur3_x86_32_continue, murmur3_x86_32_state, type Murmur3State } from './murmur3.js';

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

export interface EvaluationResult {
  readonly enabled: boolean;
  readonly reason: string;
}

export interface CompiledFlag {
  readonly key: string;
  evaluate(ctx: EvaluationContext): EvaluationResult;
}

export interface Reasons {
  readonly disabled: 'Flag is globally disabled';
  readonly enabledGlobally: 'Flag enabled globally';
  matchedRule(type: RuleType): string;
  inRollout(n: number): string;
  notInRollout(n: number): string;
}

export const REASONS: Reasons = Object.freeze({
  disabled: 'Flag is globally disabled',
  enabledGlobally: 'Flag enabled globally',
  matchedRule: (type: RuleType): string => `Matched ${type} targeting rule`,
  inRollout: (n: number): string => `User in ${n}% rollout`,
  notInRollout: (n: number): string => `User not in ${n}% rollout`,
} as const);

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
// Compilation
// ---------------------------------------------------------------------------

function result(enabled: boolean, reason: string): EvaluationResult {
  return Object.freeze({ enabled, reason });
}

const DISABLED = result(false, REASONS.disabled);
const ENABLED_GLOBALLY = result(true, REASONS.enabledGlobally);
const MATCHED_USER_ID = result(true, REASONS.matchedRule('user_id'));
const MATCHED_USER_EMAIL = result(true, REASONS.matchedRule('user_email'));
const MATCHED_EMAIL_DOMAIN = result(true, REASONS.matchedRule('email_domain'));

type Evaluate = (ctx: EvaluationContext) => EvaluationResult;

const evaluateDisabled: Evaluate = () => DISABLED;
const evaluateEnabledGlobally: Evaluate = () => ENABLED_GLOBALLY;

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

/**
 * What happens when no rule matched: a fixed result (enabled globally, or a rollout of 100%),
 * or a rollout decided by the bucket of the context's identifier.
 */
type Fallthrough =
  | { readonly fixed: EvaluationResult }
  | { readonly fixed: null; readonly n: number; readonly prefix: Murmur3State; readonly inRollout: EvaluationResult; readonly notInRollout: EvaluationResult };

function fallthroughOf(key: string, rolloutPercentage: number): Fallthrough {
  const n = rolloutPercentage;
  if (!(n > 0)) return { fixed: ENABLED_GLOBALLY };
  const inRollout = result(true, REASONS.inRollout(n));
  if (n >= 100) return { fixed: inRollout }; // every bucket (0..99) is < n
  // bucketOf(key, id) === murmur3(`${key}:${id}`) % 100: absorb the constant
  // "<key>:" prefix once here, hash only the identifier per evaluation.
  return { fixed: null, n, prefix: murmur3_x86_32_state(key + ':', 0), inRollout, notInRollout: result(false, REASONS.notInRollout(n)) };
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

function compileFallthrough(key: string, rolloutPercentage: number): Evaluate {
  const fallthrough = fallthroughOf(key, rolloutPercentage);
  if (fallthrough.fixed !== null) {
    const fixed = fallthrough.fixed;
    return fixed === ENABLED_GLOBALLY ? evaluateEnabledGlobally : () => fixed;
  }
  const { n, prefix, inRollout, notInRollout } = fallthrough;
  return (ctx) => (murmur3_x86_32_continue(prefix, identifierOf(ctx)) % 100 < n ? inRollout : notInRollout);
}

export function compileFlag(def: FlagDefinition): CompiledFlag {
  const key = def.key;
  if (!def.enabled) return Object.freeze({ key, evaluate: evaluateDisabled });

  const { byUserId, byEmail, byDomain } = compileRules(def.rules);

  const fallthrough = compileFallthrough(key, def.rolloutPercentage);
  if (byUserId === null && byEmail === null && byDomain === null) {
    return Object.freeze({ key, evaluate: fallthrough });
  }

  const idMap = byUserId;
  const emailMap = byEmail;
  const domainMap = byDomain;
  const needsEmail = emailMap !== null || domainMap !== null;

  const evaluate: Evaluate = (ctx) => {
    let bestRank = -1;
    let best: EvaluationResult = ENABLED_GLOBALLY; // placeholder; only read when bestRank >= 0

    if (idMap !== null) {
      const id = ctx.user_id;
      if (typeof id === 'string') {
        const r = idMap.get(id);
        if (r !== undefined) {
          bestRank = r;
          best = MATCHED_USER_ID;
        }
      }
    }

    if (needsEmail && bestRank !== 0) {
      const raw = ctx.user_email;
      if (typeof raw === 'string' && raw.length !== 0) {
        const email = contextEmail(raw);
        if (emailMap !== null) {
          const r = emailMap.get(email);
          if (r !== undefined && (bestRank < 0 || r < bestRank)) {
            bestRank = r;
            best = MATCHED_USER_EMAIL;
          }
        }
        if (domainMap !== null) {
          const domain = contextDomain();
          if (domain !== null) {
            const r = domainMap.get(domain);
            if (r !== undefined && (bestRank < 0 || r < bestRank)) {
              bestRank = r;
              best = MATCHED_EMAIL_DOMAIN;
            }
          }
        }
      }
    }

    return bestRank >= 0 ? best : fallthrough(ctx);
  };

  return Object.freeze({ key, evaluate });
}

// ---------------------------------------------------------------------------
// Every flag of an environment at once
// ---------------------------------------------------------------------------

/**
 * The flags of one environment compiled together, for evaluating all of them for one context
 * (what evaluate does). Results are written as small numbers chosen by the caller (`codeOf`),
 * one per flag. Same results as compileFlag, flag by flag (tested for equivalence); faster on
 * large environments: a flag whose result cannot depend on the context costs nothing per
 * context, and the targeting rules of every flag are looked up with three map reads per
 * context in all, not three per flag.
 */
export interface CompiledFlagSet {
  readonly size: number;
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
}

/** The context's identifier, read once for all the rollouts of a flag set (evaluation is synchronous: one is enough). */
const identifier = new Murmur3Suffix();

/** codeOf: the caller's code (0..255) for a result; called while compiling, never per context. */
export function compileFlagSet(defs: readonly FlagDefinition[], codeOf: (result: EvaluationResult) => number): CompiledFlagSet {
  const size = defs.length;
  const baseCodes = new Uint8Array(size);
  const rollouts: number[] = [];
  const rolloutPrefixes: Murmur3State[] = [];
  const rolloutPercentages: number[] = [];
  const inCodes: number[] = [];
  const outCodes: number[] = [];
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
  const code = (of: EvaluationResult) => {
    const n = codeOf(of);
    if (!(Number.isInteger(n) && n >= 0 && n <= 255)) throw new Error(`code ${n} for "${of.reason}" does not fit a byte`);
    return n;
  };

  for (let flag = 0; flag < size; flag++) {
    const def = defs[flag]!;
    if (!def.enabled) {
      baseCodes[flag] = code(DISABLED);
      continue;
    }
    const rules = compileRules(def.rules);
    index(byUserId, rules.byUserId, flag);
    index(byEmail, rules.byEmail, flag);
    index(byDomain, rules.byDomain, flag);
    const fallthrough = fallthroughOf(def.key, def.rolloutPercentage);
    if (fallthrough.fixed !== null) {
      baseCodes[flag] = code(fallthrough.fixed);
    } else {
      rollouts.push(flag);
      rolloutPrefixes.push(fallthrough.prefix);
      rolloutPercentages.push(fallthrough.n);
      inCodes.push(code(fallthrough.inRollout));
      outCodes.push(code(fallthrough.notInRollout));
    }
  }

  const matchUserId = code(MATCHED_USER_ID);
  const matchEmail = code(MATCHED_USER_EMAIL);
  const matchDomain = code(MATCHED_EMAIL_DOMAIN);
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
        codes[rollouts[j]!] = identifier.finish(rolloutPrefixes[j]!) % 100 < rolloutPercentages[j]! ? inCodes[j]! : outCodes[j]!;
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

  return Object.freeze({ size, baseCodes, rollouts: Uint32Array.from(rollouts), inRolloutCodes: Uint8Array.from(inCodes), evaluateInto });
}
