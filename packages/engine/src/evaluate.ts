import { Murmur3Suffix, murmur3_x86_32, murmur3_x86_32_state, type Murmur3State } from './murmur3.js';
import { compileConditionIds, conditionScope, type Condition, type ConditionScope, type Matcher } from './conditions.js';
import { DISABLED_CODE, ENABLED, ENABLED_GLOBALLY_CODE, NO_RULE_MATCHED_CODE, OUTCOMES, inRolloutCode, matchCode, notInRolloutCode, type Outcome } from './outcomes.js';

export type RuleType = 'user_id' | 'user_email' | 'email_domain' | 'conditions';

export const RULE_TYPES: readonly RuleType[] = Object.freeze(['user_id', 'user_email', 'email_domain', 'conditions'] as const);

export function isRuleType(value: unknown): value is RuleType {
  return value === 'user_id' || value === 'user_email' || value === 'email_domain' || value === 'conditions';
}

export interface RuleDefinition {
  type: RuleType;
  /** The seed types' value; unused by `conditions`. */
  value: string;
  enabled: boolean;
  /** For `conditions` (contract §14): all must hold. */
  conditions?: readonly Condition[] | null | undefined;
  /** 0–100, default 100: a matched user is served by the rule when their §2 bucket is below it. */
  rolloutPercentage?: number | undefined;
  /** Default true: what the rule serves. */
  serve?: boolean | undefined;
  /** A key of the flag's variants (contract §15): the users the rule serves get that variant. */
  variant?: string | null | undefined;
}

/** One of a flag's variants (contract §15). */
export interface VariantDefinition {
  key: string;
  /** Any JSON value; all of one flag's values have one JSON type. */
  value: unknown;
  /** 0–1000; a flag's weights sum to 1000. */
  weight: number;
}

/** The variant index written for a flag without variants. */
export const NO_VARIANT = 255;

/** rules must already be ordered: highest priority first, ties oldest first. The array index is the rank. */
export interface FlagDefinition {
  key: string;
  enabled: boolean;
  rolloutPercentage: number;
  rules: readonly RuleDefinition[];
  /** Who no rule served (contract §14): `rollout` (default, §2 steps 3–4) or `off`. */
  everyoneElse?: 'rollout' | 'off' | undefined;
  /** Contract §15: 0–50 variants; none (or empty): the flag serves only on/off. */
  variants?: readonly VariantDefinition[] | null | undefined;
  /** The key of the variant served when the flag answers `enabled: false`; required with variants. */
  offVariant?: string | null | undefined;
}

/** A custom attribute's value (contract §14); null counts as absent. */
export type AttributeValue = string | number | boolean | null;

export interface EvaluationContext {
  user_id?: string | undefined;
  user_email?: string | undefined;
  custom_attributes?: Readonly<Record<string, AttributeValue | undefined>> | null | undefined;
}

/** What a flag set is compiled against besides its flags. */
export interface CompileOptions {
  /** The environment's key: the `environment` attribute. */
  environment?: string | undefined;
  /** The project's segments by key, for IN_SEGMENT. */
  segments?: ReadonlyMap<string, readonly Condition[]> | undefined;
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

/** Inserts value → hit, keeping the best (lowest) rank for duplicate values. */
function addRule(map: Map<string, number> | null, value: string, hit: number): Map<string, number> {
  const m = map ?? new Map<string, number>();
  if (!m.has(value)) m.set(value, hit); // ranks arrive in increasing order
  return m;
}

/** A rule's hit: its rank and the code it serves in one number, so that the lower number is the better rank. */
const hitOf = (rank: number, code: number) => rank * 256 + code;

/** A flag's enabled targeting rules, by type: normalized value → hit (rank and code; lower wins). null: none of that type. */
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
    const code = matchCode(rule.type, rule.serve !== false);
    switch (rule.type) {
      case 'user_id':
        // Exact, case-sensitive. An empty id never matches (empty ctx.user_id means "no id").
        if (rule.value.length !== 0) maps.byUserId = addRule(maps.byUserId, rule.value, hitOf(rank, code));
        break;
      case 'user_email': {
        const v = normalizeEmail(rule.value);
        if (v.length !== 0) maps.byEmail = addRule(maps.byEmail, v, hitOf(rank, code));
        break;
      }
      case 'email_domain': {
        const v = normalizeEmailDomain(rule.value);
        if (v !== null) maps.byDomain = addRule(maps.byDomain, v, hitOf(rank, code));
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
  /** Per flag, its variants (contract §15) in the flag's order, or null for a flag without. */
  readonly variants: readonly (readonly VariantDefinition[] | null)[];
  /** The flags (ascending) whose variant, when no rule serves them and they answer on, is chosen by weight: it differs per user. */
  readonly splits: Uint32Array;
  /** Whether any flag has variants: only then does evaluateInto write variant indexes. */
  readonly hasVariants: boolean;
  /** Each flag's variant index where its code is its base code and the variant does not depend on the user (NO_VARIANT for a flag without variants). */
  readonly baseVariants: Uint8Array;
  /**
   * Writes each flag's code into codes[0..size) and, when the set has variants and `variants` is
   * given, each flag's variant index into variants[0..size) (NO_VARIANT for a flag without).
   * Returns true when a targeting rule served: then flags other than `rollouts` and `splits` may
   * differ from `baseCodes` and `baseVariants`.
   */
  evaluateInto(ctx: EvaluationContext, codes: Uint8Array, variants?: Uint8Array): boolean;
  /**
   * The code of the flag at `index` for a context (what evaluateInto writes there); for a flag with
   * variants, its variant index + 1 in the bits above (`code | (variant + 1) << 8`): read with codeOf and variantOf.
   */
  evaluateFlag(ctx: EvaluationContext, index: number): number;
}

/** The code of evaluateFlag's packed answer. */
export const codeOf = (packed: number): number => packed & 255;
/** The variant index of evaluateFlag's packed answer (NO_VARIANT: the flag has none). */
export const variantOf = (packed: number): number => (packed >>> 8 || NO_VARIANT + 1) - 1;
/** Whether evaluateFlag's packed answer is `enabled: true` (a byte read: a hot path's check, where OUTCOMES[code].enabled costs tens of ns). */
export const enabledOf = (packed: number): boolean => ENABLED[packed & 255] === 1;

/** The context's identifier, read once for all the rollouts of a flag set (evaluation is synchronous: one is enough). */
const identifier = new Murmur3Suffix();

/** A rule of a flag evaluated rule by rule: one with conditions, or with a rollout of its own. */
interface CompiledRule {
  /** A seed type's test; null for conditions (conditionIds). */
  readonly match: Matcher | null;
  /** A conditions rule's conditions, as ids of the set's condition table. */
  readonly conditionIds: Int32Array | null;
  /** 1–100: served when the §2 bucket is below it. */
  readonly rollout: number;
  readonly code: number;
  /** Its rank among the flag's rules: which rule served, for its pinned variant. */
  readonly rank: number;
}

/** Unleash's variant hashing seed (contract §15). */
const VARIANT_SEED = 86028157;

/** How a flag with variants picks one (contract §15), compiled. */
interface CompiledVariants {
  /** The variant served to whom the flag answers `enabled: false`. */
  readonly off: number;
  /** Per rule rank, the variant it pins, or NO_VARIANT (chosen by weight). */
  readonly pinned: Uint8Array;
  /** The variant index when the weights leave no choice (one variant has them all), else -1. */
  readonly only: number;
  /** Running weight totals, in the flag's order. */
  readonly runningTotals: Uint16Array;
  /** "<key>:" absorbed into the variant hash's state. */
  readonly prefix: Murmur3State;
}

function compileVariants(def: FlagDefinition): CompiledVariants | null {
  const variants = def.variants;
  if (!Array.isArray(variants) || variants.length === 0 || variants.length >= NO_VARIANT) return null;
  const indexOf = (key: string | null | undefined) => {
    const i = typeof key === 'string' ? variants.findIndex((variant) => variant.key === key) : -1;
    return i < 0 ? NO_VARIANT : i;
  };
  const runningTotals = new Uint16Array(variants.length);
  let total = 0;
  for (let i = 0; i < variants.length; i++) runningTotals[i] = total += Math.max(0, Math.trunc(variants[i]!.weight) || 0);
  const positive = variants.filter((variant) => variant.weight > 0);
  // Off the API's checks (weights not summing to 1000) the last positive weight takes the rest.
  const off = indexOf(def.offVariant);
  return {
    off: off === NO_VARIANT ? 0 : off,
    pinned: Uint8Array.from(def.rules, (rule) => indexOf(rule.variant)),
    only: positive.length === 1 ? variants.indexOf(positive[0]!) : positive.length === 0 ? 0 : -1,
    runningTotals,
    prefix: murmur3_x86_32_state(def.key + ':', VARIANT_SEED),
  };
}

/** The variant chosen by weight: the first whose running total reaches murmur3 mod 1000 + 1 (contract §15). */
function weightedVariant(compiled: CompiledVariants): number {
  if (compiled.only >= 0) return compiled.only;
  const target = (identifier.finish(compiled.prefix) % 1000) + 1;
  const totals = compiled.runningTotals;
  for (let i = 0; i < totals.length; i++) if (totals[i]! >= target) return i;
  let last = totals.length - 1;
  while (last > 0 && totals[last] === totals[last - 1]) last--;
  return last;
}

/** Whether a flag's rules must be tried one by one, in order (else its rules go into the set's value maps). */
function needsRuleByRule(def: FlagDefinition): boolean {
  return def.rules.some((rule) => rule.enabled === true && (rule.type === 'conditions' || (rule.rolloutPercentage ?? 100) < 100));
}

/** An enabled rule that can serve someone, compiled; null for one that never serves. */
function compileRule(rule: RuleDefinition, rank: number, scope: ConditionScope): CompiledRule | null {
  const rollout = rule.rolloutPercentage ?? 100;
  if (rule.enabled !== true || !(rollout > 0)) return null;
  const code = matchCode(rule.type, rule.serve !== false);
  let match: Matcher | null = null;
  let conditionIds: Int32Array | null = null;
  switch (rule.type) {
    case 'user_id': {
      const id = rule.value;
      if (typeof id !== 'string' || id.length === 0) return null;
      match = (ctx) => ctx.user_id === id;
      break;
    }
    case 'user_email': {
      const email = typeof rule.value === 'string' ? normalizeEmail(rule.value) : '';
      if (email.length === 0) return null;
      match = (ctx) => typeof ctx.user_email === 'string' && ctx.user_email.length !== 0 && contextEmail(ctx.user_email) === email;
      break;
    }
    case 'email_domain': {
      const domain = typeof rule.value === 'string' ? normalizeEmailDomain(rule.value) : null;
      if (domain === null) return null;
      match = (ctx) => {
        const raw = ctx.user_email;
        if (typeof raw !== 'string' || raw.length === 0) return false;
        contextEmail(raw);
        return contextDomain() === domain;
      };
      break;
    }
    case 'conditions':
      // None (refused at save; a stored rule could only lose them by corruption) would be "everyone": never match instead, as an empty seed value.
      if (!Array.isArray(rule.conditions) || rule.conditions.length === 0) return null;
      conditionIds = compileConditionIds(rule.conditions, scope);
      break;
    default:
      return null; // an unknown type (a newer schema) never matches
  }
  return { match, conditionIds, rollout: Math.min(rollout, 100), code, rank };
}

export function compileFlagSet(defs: readonly FlagDefinition[], options: CompileOptions = {}): CompiledFlagSet {
  const size = defs.length;
  const keys = Object.freeze(defs.map((def) => def.key));
  const baseCodes = new Uint8Array(size);
  const scope = conditionScope(options.environment, options.segments);
  const { table } = scope;
  const rollouts: number[] = [];
  /** Per flag, its place in `rollouts`, or -1. */
  const rolloutOf = new Int32Array(size).fill(-1);
  const rolloutPrefixes: Murmur3State[] = [];
  const rolloutPercentages: number[] = [];
  /** The flags tried rule by rule, their rules in order, and the "<key>:" hash prefix of their bucket. */
  const ruleByRule: number[] = [];
  const ruleByRuleOf = new Int32Array(size).fill(-1);
  const ruleLists: (readonly CompiledRule[])[] = [];
  const bucketPrefixes: Murmur3State[] = [];
  // Rule value → [flag, hit, flag, hit, …] over every flag of the set (hitOf: rank and code).
  const byUserId = new Map<string, number[]>();
  const byEmail = new Map<string, number[]>();
  const byDomain = new Map<string, number[]>();
  /** The flags with variants, and how each picks one. */
  const variantFlags: number[] = [];
  const variantPlans: CompiledVariants[] = [];
  const baseVariants = new Uint8Array(size).fill(NO_VARIANT);
  const index = (into: Map<string, number[]>, rules: Map<string, number> | null, flag: number) => {
    if (rules === null) return;
    for (const [value, hit] of rules) {
      const hits = into.get(value);
      if (hits) hits.push(flag, hit);
      else into.set(value, [flag, hit]);
    }
  };

  for (let flag = 0; flag < size; flag++) {
    const def = defs[flag]!;
    const plan = compileVariants(def);
    if (plan !== null) {
      variantFlags.push(flag);
      variantPlans.push(plan);
      baseVariants[flag] = plan.off;
    }
    if (!def.enabled) {
      baseCodes[flag] = DISABLED_CODE;
      continue;
    }
    if (needsRuleByRule(def)) {
      ruleByRuleOf[flag] = ruleByRule.length;
      ruleByRule.push(flag);
      ruleLists.push(def.rules.map((rule, rank) => compileRule(rule, rank, scope)).filter((rule) => rule !== null));
      bucketPrefixes.push(murmur3_x86_32_state(def.key + ':', 0));
    } else {
      const rules = compileRules(def.rules);
      index(byUserId, rules.byUserId, flag);
      index(byEmail, rules.byEmail, flag);
      index(byDomain, rules.byDomain, flag);
    }
    const n = def.rolloutPercentage;
    if (def.everyoneElse === 'off') baseCodes[flag] = NO_RULE_MATCHED_CODE;
    else if (!(n > 0)) baseCodes[flag] = ENABLED_GLOBALLY_CODE;
    else if (n >= 100) baseCodes[flag] = inRolloutCode(100); // every bucket (0..99) is < n
    else {
      rolloutOf[flag] = rollouts.length;
      rollouts.push(flag);
      // bucketOf(key, id) === murmur3(`${key}:${id}`) % 100: the constant "<key>:" prefix is
      // absorbed once here, only the identifier is hashed per evaluation.
      rolloutPrefixes.push(murmur3_x86_32_state(def.key + ':', 0));
      rolloutPercentages.push(n);
    }
    // Where no rule serves and the weights leave no choice, the variant follows the code.
    if (plan !== null && enabledOf(baseCodes[flag]!) && rolloutOf[flag]! < 0) baseVariants[flag] = plan.only >= 0 ? plan.only : NO_VARIANT;
  }
  const inRolloutCodes = Uint8Array.from(rolloutPercentages, inRolloutCode);
  const notInRolloutCodes = Uint8Array.from(rolloutPercentages, notInRolloutCode);

  const hasIdRules = byUserId.size > 0;
  const hasEmailRules = byEmail.size > 0 || byDomain.size > 0;
  // The best hit matched so far per flag, valid where matchedIn[flag] === the current context's turn.
  const bestHit = new Int32Array(size);
  const matchedIn = new Uint32Array(size);
  let turn = 0;

  /** Applies one rule value's hits: a flag takes the hit of its lowest rank (its rule order). */
  const apply = (hits: number[], codes: Uint8Array) => {
    for (let k = 0; k < hits.length; k += 2) {
      const flag = hits[k]!;
      const hit = hits[k + 1]!;
      if (matchedIn[flag] !== turn || hit < bestHit[flag]!) {
        matchedIn[flag] = turn;
        bestHit[flag] = hit;
        codes[flag] = hit & 255;
      }
    }
  };

  /** Per rule-by-rule flag, the rank of the rule that served in the last evaluation (valid where served() returned a code). */
  const servedRanks = new Int32Array(ruleByRule.length);

  /** The code of the first rule of a rule-by-rule flag that serves the context, or -1. */
  const served = (j: number, ctx: EvaluationContext): number => {
    const rules = ruleLists[j]!;
    let bucket = -1;
    for (let r = 0; r < rules.length; r++) {
      const rule = rules[r]!;
      if (rule.conditionIds !== null ? !table.all(rule.conditionIds, ctx) : !rule.match!(ctx)) continue;
      if (rule.rollout < 100) {
        if (bucket < 0) {
          identifier.prepare(identifierOf(ctx));
          bucket = identifier.finish(bucketPrefixes[j]!) % 100;
        }
        if (bucket >= rule.rollout) continue;
      }
      servedRanks[j] = rule.rank;
      return rule.code;
    }
    return -1;
  };

  /**
   * The variant of a flag with variants (contract §15): the off variant when it answers off, else
   * the serving rule's pinned variant (rank >= 0), else by weight. Needs the identifier prepared
   * when the weights leave a choice.
   */
  const variantFor = (plan: CompiledVariants, code: number, rank: number): number => {
    if (!enabledOf(code)) return plan.off;
    if (rank >= 0) {
      const pinned = plan.pinned[rank]!;
      if (pinned !== NO_VARIANT) return pinned;
    }
    return weightedVariant(plan);
  };

  const evaluateInto = (ctx: EvaluationContext, codes: Uint8Array, variants?: Uint8Array): boolean => {
    const startTurn = turn;
    table.next();
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
        apply(hits, codes);
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
          if (emailHits !== undefined) apply(emailHits, codes);
          if (domainHits !== undefined) apply(domainHits, codes);
        }
      }
    }
    for (let j = 0; j < ruleByRule.length; j++) {
      const code = served(j, ctx);
      if (code >= 0) {
        codes[ruleByRule[j]!] = code;
        matched = true;
      } else servedRanks[j] = -1;
    }
    if (variants !== undefined && variantFlags.length > 0) {
      variants.set(baseVariants);
      identifier.prepare(identifierOf(ctx));
      for (let v = 0; v < variantFlags.length; v++) {
        const flag = variantFlags[v]!;
        const plan = variantPlans[v]!;
        const code = codes[flag]!;
        const byRule = ruleByRuleOf[flag]!;
        const rank = byRule >= 0 ? servedRanks[byRule]! : turn !== startTurn && matchedIn[flag] === turn ? bestHit[flag]! >> 8 : -1;
        variants[flag] = variantFor(plan, code, rank);
      }
    }
    return matched;
  };

  /** The flag's code and variant, packed as evaluateFlag answers. */
  const withVariant = (ctx: EvaluationContext, flag: number, code: number, rank: number): number => {
    const v = variantIndexOf[flag]!;
    if (v < 0) return code;
    identifier.prepare(identifierOf(ctx));
    return code | ((variantFor(variantPlans[v]!, code, rank) + 1) << 8);
  };

  const evaluateFlag = (ctx: EvaluationContext, flag: number): number => {
    const code = flagCode(ctx, flag);
    return withVariant(ctx, flag, code, servingRank);
  };

  /** The rank of the rule that served in flagCode's last answer (-1: none). */
  let servingRank = -1;

  /** The flag's code; sets servingRank. */
  const flagCode = (ctx: EvaluationContext, flag: number): number => {
    servingRank = -1;
    table.next();
    const byRule = ruleByRuleOf[flag]!;
    if (byRule >= 0) {
      const code = served(byRule, ctx);
      if (code >= 0) {
        servingRank = servedRanks[byRule]!;
        return code;
      }
    } else {
      let best = -1;
      /** The flag's lowest hit among one rule value's hits (a value's hits hold each flag once). */
      const consider = (hits: number[] | undefined) => {
        if (hits === undefined) return;
        for (let k = 0; k < hits.length; k += 2) if (hits[k] === flag && (best < 0 || hits[k + 1]! < best)) best = hits[k + 1]!;
      };
      if (hasIdRules && typeof ctx.user_id === 'string') consider(byUserId.get(ctx.user_id));
      const raw = ctx.user_email;
      if (hasEmailRules && typeof raw === 'string' && raw.length !== 0) {
        consider(byEmail.get(contextEmail(raw)));
        const domain = contextDomain();
        if (domain !== null) consider(byDomain.get(domain));
      }
      if (best >= 0) {
        servingRank = best >> 8;
        return best & 255;
      }
    }
    const j = rolloutOf[flag]!;
    if (j < 0) return baseCodes[flag]!;
    identifier.prepare(identifierOf(ctx));
    return identifier.finish(rolloutPrefixes[j]!) % 100 < rolloutPercentages[j]! ? inRolloutCodes[j]! : notInRolloutCodes[j]!;
  };

  const variantIndexOf = new Int32Array(size).fill(-1);
  variantFlags.forEach((flag, v) => (variantIndexOf[flag] = v));
  const variants = Object.freeze(defs.map((def, flag) => (variantIndexOf[flag]! >= 0 ? Object.freeze(def.variants!.map(({ key, value, weight }) => Object.freeze({ key, value, weight }))) : null)));

  const splits = Uint32Array.from(variantFlags.filter((flag, v) => defs[flag]!.enabled && variantPlans[v]!.only < 0));
  return Object.freeze({ size, keys, baseCodes, rollouts: Uint32Array.from(rollouts), inRolloutCodes, splits, variants, hasVariants: variantFlags.length > 0, baseVariants, evaluateInto, evaluateFlag });
}

/** The outcome of one flag for a context, compiled on the spot: for tests and one-off use, not for a hot path. */
export function evaluateFlag(def: FlagDefinition, ctx: EvaluationContext, options?: CompileOptions): Outcome {
  return OUTCOMES[codeOf(compileFlagSet([def], options).evaluateFlag(ctx, 0))]!;
}

/** The variant (key and value) one flag serves a context, compiled on the spot (null: the flag has no variants): for tests and one-off use. */
export function evaluateVariant(def: FlagDefinition, ctx: EvaluationContext, options?: CompileOptions): VariantDefinition | null {
  const set = compileFlagSet([def], options);
  return set.variants[0]?.[variantOf(set.evaluateFlag(ctx, 0))] ?? null;
}

