import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import ipaddr from 'ipaddr.js';
import semver from 'semver';
import { RE2JS } from 're2js';
import { OPERATORS, OUTCOMES, compileFlagSet, conditionProblem, evaluateFlag, murmur3_x86_32, normalizeEmailDomain } from './index.js';
import type { AttributeValue, CompileOptions, Condition, EvaluationContext, FlagDefinition, Operator, RuleDefinition } from './index.js';

// ===========================================================================
// The reference: docs/api.md and docs/targeting.md read literally, nothing compiled, nothing cached.
// Written from docs/targeting.md's words, not from conditions.ts.
// ===========================================================================

interface Answer {
  enabled: boolean;
  reason: string;
}

interface World {
  environment: string | undefined;
  segments: ReadonlyMap<string, readonly Condition[]>;
}

/** The attribute's string form as conditions read it (docs/targeting.md, The context), or undefined when absent. */
function refAttribute(ctx: EvaluationContext, name: string, world: World): string | undefined {
  const custom = (key: string): string | undefined => {
    const attrs = ctx.custom_attributes;
    if (attrs === undefined || attrs === null || !Object.prototype.hasOwnProperty.call(attrs, key)) return undefined;
    const value = attrs[key];
    if (typeof value === 'string') return value;
    if (typeof value === 'number' || typeof value === 'boolean') return String(value);
    return undefined; // null counts as absent
  };
  switch (name) {
    case 'user_id':
      return typeof ctx.user_id === 'string' ? ctx.user_id : undefined;
    case 'user_email':
      return typeof ctx.user_email === 'string' ? ctx.user_email : undefined;
    case 'email_domain': {
      // The lower-cased part after the last @ of user_email.
      if (typeof ctx.user_email !== 'string') return undefined;
      const parts = ctx.user_email.split('@');
      return parts.length < 2 ? undefined : parts[parts.length - 1]!.toLowerCase();
    }
    case 'environment':
      return world.environment;
    case 'current_time':
      return custom('current_time') ?? new Date().toISOString();
    default:
      return custom(name);
  }
}

/** A decimal number (what a person writes), else undefined. */
function refNumber(text: string): number | undefined {
  if (!/^\s*[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?\s*$/.test(text)) return undefined;
  const n = parseFloat(text);
  return Number.isFinite(n) ? n : undefined;
}

/** ISO 8601 calendar date or date-time; no offset means UTC. Fields checked by hand. */
function refDate(text: string): number | undefined {
  const m = /^(\d{4})-(\d{2})-(\d{2})(?:[Tt ](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d+))?)?(?:([Zz])|([+-])(\d{2}):?(\d{2}))?)?$/.exec(text);
  if (m === null) return undefined;
  const [year, month, day] = [Number(m[1]), Number(m[2]), Number(m[3])];
  if (month < 1 || month > 12) return undefined;
  const daysInMonth = new Date(Date.UTC(year, month, 0)).getUTCDate();
  if (day < 1 || day > daysInMonth) return undefined;
  const hour = Number(m[4] ?? 0);
  const minute = Number(m[5] ?? 0);
  const second = Number(m[6] ?? 0);
  if (hour > 23 || minute > 59 || second > 59) return undefined;
  const millis = m[7] === undefined ? 0 : Math.floor(Number(`0.${m[7]}`) * 1000);
  let time = Date.UTC(year, month - 1, day, hour, minute, second, millis);
  if (year < 100) time = new Date(time).setUTCFullYear(year);
  if (m[9] !== undefined) time -= (m[9] === '+' ? 1 : -1) * (Number(m[10]) * 60 + Number(m[11])) * 60_000;
  return time;
}

/** x.y.z[-pre] only (no `v`, no build metadata), semver's own precedence. */
function refVersion(text: string): string | undefined {
  if (text.includes('+') || text.startsWith('v') || text.startsWith('=') || text.trim() !== text) return undefined;
  return semver.valid(text) ?? undefined;
}

/** Everything as IPv6, an IPv4 address as its IPv4-mapped form; IPv4 only in dotted-quad decimal. */
function refAddress(text: string): ipaddr.IPv6 | undefined {
  if (ipaddr.IPv4.isValidFourPartDecimal(text)) return ipaddr.IPv4.parse(text).toIPv4MappedAddress();
  if (!text.includes(':') || !ipaddr.IPv6.isValid(text)) return undefined;
  return ipaddr.IPv6.parse(text);
}
function refRange(text: string): [ipaddr.IPv6, number] | undefined {
  const [address, prefix, ...rest] = text.split('/');
  if (rest.length > 0) return undefined;
  const parsed = refAddress(address!);
  if (parsed === undefined) return undefined;
  const v4 = ipaddr.IPv4.isValidFourPartDecimal(address!);
  const max = v4 ? 32 : 128;
  if (prefix !== undefined && !/^\d{1,3}$/.test(prefix)) return undefined;
  const bits = prefix === undefined ? max : Number(prefix);
  if (bits > max) return undefined;
  return [parsed, v4 ? bits + 96 : bits];
}

/** The four-way compare of the NUM_/SEMVER_ operators (docs/targeting.md) on (attribute cmp value). */
function refCompare(op: string, c: number): boolean {
  if (op.endsWith('_EQ')) return c === 0;
  if (op.endsWith('_GTE')) return c >= 0;
  if (op.endsWith('_GT')) return c > 0;
  if (op.endsWith('_LTE')) return c <= 0;
  return c < 0;
}

function refCondition(cond: Condition, ctx: EvaluationContext, world: World): boolean {
  const values = cond.values ?? [];
  let result: boolean;
  if (cond.operator === 'IN_SEGMENT') {
    result = values.some((key) => {
      const conditions = world.segments.get(key);
      return conditions !== undefined && conditions.every((c) => refCondition(c, ctx, world));
    });
  } else {
    const raw = refAttribute(ctx, cond.attribute!, world);
    if (raw === undefined) {
      result = cond.operator === 'NOT_IN';
    } else {
      const ci = cond.case_insensitive === true;
      const f = (s: string) => (ci ? s.toLowerCase() : s);
      const a = f(raw);
      switch (cond.operator) {
        case 'IN':
          result = values.some((v) => f(v) === a);
          break;
        case 'NOT_IN':
          result = !values.some((v) => f(v) === a);
          break;
        case 'STR_CONTAINS':
          result = values.some((v) => a.includes(f(v)));
          break;
        case 'STR_STARTS_WITH':
          result = values.some((v) => a.startsWith(f(v)));
          break;
        case 'STR_ENDS_WITH':
          result = values.some((v) => a.endsWith(f(v)));
          break;
        case 'NUM_EQ':
        case 'NUM_GT':
        case 'NUM_GTE':
        case 'NUM_LT':
        case 'NUM_LTE': {
          const x = refNumber(raw);
          const y = refNumber(values[0]!);
          result = x !== undefined && y !== undefined && refCompare(cond.operator, x === y ? 0 : x < y ? -1 : 1);
          break;
        }
        case 'DATE_AFTER':
        case 'DATE_BEFORE': {
          const x = refDate(raw);
          const y = refDate(values[0]!);
          result = x !== undefined && y !== undefined && (cond.operator === 'DATE_AFTER' ? x > y : x < y);
          break;
        }
        case 'SEMVER_EQ':
        case 'SEMVER_GT':
        case 'SEMVER_GTE':
        case 'SEMVER_LT':
        case 'SEMVER_LTE': {
          const x = refVersion(raw);
          const y = refVersion(values[0]!);
          result = x !== undefined && y !== undefined && refCompare(cond.operator, semver.compare(x, y));
          break;
        }
        case 'REGEX':
          result = values.some((p) => new RegExp(p, ci ? 'i' : '').test(raw));
          break;
        case 'IN_CIDR': {
          const address = refAddress(raw);
          result = address !== undefined && values.some((v) => {
            const range = refRange(v);
            return range !== undefined && address.match(range);
          });
          break;
        }
        case 'EXISTS':
          result = true;
          break;
        default:
          result = false;
      }
    }
  }
  return cond.negate === true ? !result : result;
}

function refBucket(key: string, ctx: EvaluationContext): number {
  const id = typeof ctx.user_id === 'string' && ctx.user_id !== '' ? ctx.user_id : typeof ctx.user_email === 'string' && ctx.user_email !== '' ? ctx.user_email : 'anonymous';
  return murmur3_x86_32(`${key}:${id}`, 0) % 100;
}

function refRuleMatches(rule: RuleDefinition, ctx: EvaluationContext, world: World): boolean {
  const email = typeof ctx.user_email === 'string' ? ctx.user_email.trim().toLowerCase() : '';
  switch (rule.type) {
    case 'user_id':
      return rule.value !== '' && ctx.user_id === rule.value;
    case 'user_email':
      return email !== '' && rule.value.trim().toLowerCase() === email;
    case 'email_domain': {
      const wanted = normalizeEmailDomain(rule.value);
      return email.includes('@') && wanted !== null && wanted === email.slice(email.lastIndexOf('@'));
    }
    case 'conditions':
      return (rule.conditions ?? []).every((c) => refCondition(c, ctx, world));
  }
}

/** A flag's evaluation (disabled, rules by priority, the rollout) with the per-rule rollout, serve and everyone_else of docs/targeting.md. */
function reference(def: FlagDefinition, ctx: EvaluationContext, world: World): Answer {
  if (!def.enabled) return { enabled: false, reason: 'Flag is globally disabled' };
  for (const rule of def.rules) {
    if (!rule.enabled || !refRuleMatches(rule, ctx, world)) continue;
    if (refBucket(def.key, ctx) < (rule.rolloutPercentage ?? 100)) return { enabled: rule.serve !== false, reason: `Matched ${rule.type} targeting rule` };
  }
  if (def.everyoneElse === 'off') return { enabled: false, reason: 'No targeting rule matched' };
  const n = def.rolloutPercentage;
  if (n > 0) return refBucket(def.key, ctx) < n ? { enabled: true, reason: `User in ${n}% rollout` } : { enabled: false, reason: `User not in ${n}% rollout` };
  return { enabled: true, reason: 'Flag enabled globally' };
}

// ===========================================================================
// Random flags, segments and contexts
// ===========================================================================

/** Deterministic pseudo-random numbers (mulberry32), so a failure names its seed. */
function random(seed: number) {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const pick = <T>(items: readonly T[]): T => items[Math.floor(next() * items.length)]!;
  const some = <T>(items: readonly T[], max: number): T[] => Array.from({ length: 1 + Math.floor(next() * max) }, () => pick(items));
  return { next, pick, some };
}

// Small pools, so that conditions and contexts collide often. Dates are far from now (2000–2021,
// 2099), so that a condition on the clock gives the same answer whenever the test runs.
const IDS = ['', 'u1', 'U1', 'vip', 'user-9', 'é', '10.0.0.7', '2.4.0'];
const EMAILS = ['', 'a@x.com', 'A@X.COM', ' b@y.org', 'c@x.com', 'no-at', 'd@', '@x.com', 'e@sub.x.com', 'a@b@X.com'];
const DOMAINS = ['x.com', '@X.com', ' y.org', 'sub.x.com', '', 'b@x.com'];
const STRINGS = ['pro', 'Pro', 'enterprise', 'Enterprise Plus', 'free', 'de', 'DE', 'fr', 'x.com', 'y.org', '', 'true', 'TRUE', '18', 'ent', 'a', 'u1', 'production'];
const NUMBERS_TEXT = ['18', '18.0', '3.5', '-1', '0', '1e3', '65', ' 7 ', '7abc', 'abc', '', '.5'];
const DATES = ['2020-03-01', '2020-06-15T12:00:00Z', '2020-06-15T13:00:00+01:00', '2020-06-15T12:00:00.500Z', '2020-06-15 12:00', '2000-01-01', '2099-01-01', '2021-01-01T00:00:00-0500', '2020-02-29'];
const BAD_DATES = ['yesterday', '2020-13-01', '2020-06-15T25:00:00Z', '15/06/2020', ''];
const VERSIONS = ['1.2.3', '2.4.0', '2.4.0-beta.1', '2.4.0-alpha', '2.10.0', '0.0.1', '10.0.0', '2.4.1'];
const BAD_VERSIONS = ['v2.4.0', '2.4', 'x', '2.4.0+build', '01.2.3', ''];
const ADDRESSES = ['10.1.2.3', '192.168.0.5', '::ffff:10.0.0.1', '2001:db8::1', '2001:db9::1', '8.8.8.8', '::1', '10.200.0.1', '192.168.0.4', '::ffff:c0a8:4', '0.0.0.0', '255.255.255.255'];
const BAD_ADDRESSES = ['not-an-ip', '300.1.1.1', '10.0.0', '', '10.0.0.1/8'];
const CIDRS = ['10.0.0.0/8', '192.168.0.0/16', '2001:db8::/32', '::ffff:10.0.0.0/104', '10.1.2.3', '8.8.8.8/32', '0.0.0.0/0', '::1/128', '::/0', '::ffff:0:0/96', '10.128.0.0/9', '192.168.0.5/31'];
// Patterns that mean the same in RE2 and in JavaScript.
const PATTERNS = ['^pro$', 'ent', '^2\\.4', '@x\\.com$', '[0-9]+', 'a|b', '^$', '\\d{2}', 'E.*e', '^u[0-9]$', '\\.'];

const CUSTOM_NAMES = ['plan', 'country', 'version', 'age', 'ip', 'signup', 'beta', 'constructor'];
const BUILT_INS = ['user_id', 'user_email', 'email_domain', 'environment', 'current_time'];
const SEGMENT_KEYS = ['beta', 'eu', 'staff', 'big'];

function customValue(name: string, r: ReturnType<typeof random>): AttributeValue {
  const { next, pick } = r;
  if (next() < 0.08) return null;
  switch (name) {
    case 'age':
      return next() < 0.5 ? pick([17, 18, 65, 3.5, -1, 0, 1000, 1e21]) : pick([...NUMBERS_TEXT, true]);
    case 'version':
      return pick([...VERSIONS, ...BAD_VERSIONS]);
    case 'ip':
      return pick([...ADDRESSES, ...BAD_ADDRESSES]);
    case 'signup':
    case 'current_time':
      return next() < 0.9 ? pick([...DATES, ...BAD_DATES]) : 5;
    case 'beta':
      return pick([true, false, 'true']);
    default:
      return pick(STRINGS);
  }
}

function values(operator: Operator, r: ReturnType<typeof random>): string[] {
  const { pick, some } = r;
  if (operator.startsWith('NUM_')) return [pick(['18', '3.5', '-1', '0', '1e3', '65', '7'])];
  if (operator.startsWith('DATE_')) return [pick(DATES)];
  if (operator.startsWith('SEMVER_')) return [pick(VERSIONS)];
  switch (operator) {
    case 'EXISTS':
      return [];
    case 'REGEX':
      return some(PATTERNS, 2);
    case 'IN_CIDR':
      return some(CIDRS, 3);
    case 'IN_SEGMENT':
      return some([...SEGMENT_KEYS, 'unknown'], 2);
    default:
      return some([...STRINGS, ...IDS, ...EMAILS, ...VERSIONS, ...ADDRESSES, 'ENTERPRISE', 'Pro'], 4);
  }
}

function condition(r: ReturnType<typeof random>, inSegment: boolean): Condition {
  const { next, pick } = r;
  const operator = pick(OPERATORS.filter((op) => !inSegment || op !== 'IN_SEGMENT'));
  const attribute = operator === 'IN_SEGMENT' ? undefined : pick([...CUSTOM_NAMES, ...CUSTOM_NAMES, ...BUILT_INS]);
  const cond: Condition = { operator, values: values(operator, r) };
  if (attribute !== undefined) cond.attribute = attribute;
  if (next() < 0.25) cond.negate = true;
  if (['IN', 'NOT_IN', 'STR_CONTAINS', 'STR_STARTS_WITH', 'STR_ENDS_WITH', 'REGEX'].includes(operator) && next() < 0.35) cond.case_insensitive = true;
  assert.equal(conditionProblem(cond, 'conditions[0]', { inSegment }), null, `generated an invalid condition ${JSON.stringify(cond)}`);
  return cond;
}

interface Case {
  flags: FlagDefinition[];
  contexts: EvaluationContext[];
  options: CompileOptions;
  world: World;
}

function generate(seed: number): Case {
  const r = random(seed);
  const { next, pick } = r;
  const segments = new Map<string, Condition[]>();
  for (const key of SEGMENT_KEYS) if (next() < 0.85) segments.set(key, Array.from({ length: 1 + Math.floor(next() * 3) }, () => condition(r, true)));
  const environment = pick(['production', 'staging', undefined]);
  const flags: FlagDefinition[] = [];
  const count = 1 + Math.floor(next() * 16);
  for (let i = 0; i < count; i++) {
    const rules: RuleDefinition[] = [];
    const ruleCount = Math.floor(next() * 5);
    for (let k = 0; k < ruleCount; k++) {
      const type = pick(['user_id', 'user_email', 'email_domain', 'conditions', 'conditions', 'conditions'] as const);
      const rule: RuleDefinition =
        type === 'conditions'
          ? { type, value: '', enabled: next() < 0.9, conditions: Array.from({ length: 1 + Math.floor(next() * 3) }, () => condition(r, false)) }
          : { type, value: type === 'user_id' ? pick(IDS) : type === 'user_email' ? pick(EMAILS) : pick(DOMAINS), enabled: next() < 0.9 };
      const rollout = pick([undefined, undefined, 0, 50, 100, 1, 30, 99]);
      if (rollout !== undefined) rule.rolloutPercentage = rollout;
      const serve = pick([undefined, undefined, true, false]);
      if (serve !== undefined) rule.serve = serve;
      rules.push(rule);
    }
    const flag: FlagDefinition = { key: `flag_${seed}_${i}`, enabled: next() < 0.85, rolloutPercentage: pick([0, 0, 1, 25, 50, 100]), rules };
    const everyoneElse = pick([undefined, 'rollout', 'off'] as const);
    if (everyoneElse !== undefined) flag.everyoneElse = everyoneElse;
    flags.push(flag);
  }
  const contexts: EvaluationContext[] = [{}];
  for (let c = 0; c < 40; c++) {
    const ctx: EvaluationContext = {};
    if (next() < 0.7) ctx.user_id = pick([...IDS, `random-${c}`]);
    if (next() < 0.7) ctx.user_email = pick([...EMAILS, `r${c}@x.com`]);
    if (next() < 0.85) {
      const attrs: Record<string, AttributeValue> = {};
      for (const name of [...CUSTOM_NAMES.filter((n) => n !== 'constructor'), 'current_time', 'user_id', 'email_domain', 'environment', 'user_email']) {
        if (next() < 0.5) attrs[name] = BUILT_INS.includes(name) && name !== 'current_time' ? pick(STRINGS) : customValue(name, r);
      }
      ctx.custom_attributes = attrs;
    }
    // As the server hands it over: parsed from JSON.
    contexts.push(JSON.parse(JSON.stringify(ctx)) as EvaluationContext);
  }
  return { flags, contexts, options: { environment, segments }, world: { environment, segments } };
}

const SEEDS = Number(process.env['GUIDON_PROPERTY_SEEDS'] ?? 300);

describe('property: the compiled engine agrees with a plain reading of the evaluation order and the conditions', () => {
  test(`${SEEDS} random flag sets × 41 contexts: evaluateInto, evaluateFlag and the baseCodes invariant`, (t) => {
    let evaluations = 0;
    let ruleServed = 0;
    for (let seed = 1; seed <= SEEDS; seed++) {
      const { flags, contexts, options, world } = generate(seed);
      const set = compileFlagSet(flags, options);
      const rollouts = new Set(set.rollouts);
      const codes = new Uint8Array(set.size);
      for (let c = 0; c < contexts.length; c++) {
        const ctx = contexts[c]!;
        const served = set.evaluateInto(ctx, codes);
        let anyRuleServed = false;
        for (let f = 0; f < flags.length; f++) {
          // Built only for a failure: the message names the seed and everything needed to replay it.
          const where = () => `seed ${seed}, flag ${f} ${JSON.stringify(flags[f])}, environment ${String(options.environment)}, segments ${JSON.stringify([...world.segments])}, context ${JSON.stringify(ctx)}`;
          const same = (outcome: Answer, what: string) => {
            if (outcome.enabled !== expected.enabled || outcome.reason !== expected.reason) assert.deepEqual({ enabled: outcome.enabled, reason: outcome.reason }, expected, `${what}: ${where()}`);
          };
          const expected = reference(flags[f]!, ctx, world);
          if (expected.reason.startsWith('Matched ')) anyRuleServed = true;
          same(OUTCOMES[codes[f]!]!, 'evaluateInto');
          same(OUTCOMES[set.evaluateFlag(ctx, f)]!, 'evaluateFlag');
          if (!served && !rollouts.has(f) && codes[f] !== set.baseCodes[f]) assert.fail(`evaluateInto returned false but a flag outside rollouts left baseCodes: ${where()}`);
          // The flag compiled alone (no neighbours sharing its rule maps) answers the same.
          if (c === 1) same(evaluateFlag(flags[f]!, ctx, options), 'evaluateFlag(def)');
          evaluations++;
        }
        if (anyRuleServed) ruleServed++;
        assert.ok(served || !anyRuleServed, `seed ${seed}: a rule served but evaluateInto returned false, context ${JSON.stringify(ctx)}`);
      }
    }
    t.diagnostic(`${evaluations} flag evaluations compared, each both ways; a rule served in ${ruleServed} contexts`);
    assert.ok(evaluations >= 5000, `only ${evaluations} evaluations`);
    assert.ok(ruleServed > SEEDS, `rules served too rarely to prove much (${ruleServed} contexts)`);
  });

  test('the reference reads the clock for current_time when the context does not give it', () => {
    const past = { attribute: 'current_time', operator: 'DATE_AFTER', values: ['2001-01-01'] } as const;
    const future = { attribute: 'current_time', operator: 'DATE_BEFORE', values: ['2999-01-01'] } as const;
    const world: World = { environment: undefined, segments: new Map() };
    assert.equal(refCondition(past, {}, world), true);
    assert.equal(refCondition(future, {}, world), true);
    assert.equal(refCondition(past, { custom_attributes: { current_time: '2000-06-01' } }, world), false);
  });
});

// ===========================================================================
// Table: every operator × present / missing / unparsable / negate / case_insensitive
// ===========================================================================

const ENV: CompileOptions = { environment: 'production' };

/** Whether a flag with one rule of these conditions serves the context (everyone else off). */
function holds(conditions: Condition | Condition[], ctx: EvaluationContext, options: CompileOptions = ENV): boolean {
  const def: FlagDefinition = {
    key: 'f',
    enabled: true,
    rolloutPercentage: 0,
    everyoneElse: 'off',
    rules: [{ type: 'conditions', value: '', enabled: true, conditions: Array.isArray(conditions) ? conditions : [conditions] }],
  };
  const outcome = evaluateFlag(def, ctx, options);
  // The whole-set path must agree with the one-flag path.
  const set = compileFlagSet([def], options);
  const codes = new Uint8Array(1);
  set.evaluateInto(ctx, codes);
  assert.equal(codes[0], outcome.code, 'evaluateInto and evaluateFlag differ');
  assert.ok(outcome.enabled ? outcome.reason === 'Matched conditions targeting rule' : outcome.reason === 'No targeting rule matched');
  return outcome.enabled;
}

const on = (value: AttributeValue): EvaluationContext => ({ custom_attributes: { a: value } });

interface Row {
  operator: Operator;
  values: string[];
  /** Attribute values that make the condition true, and ones that make it false. */
  yes: AttributeValue[];
  no: AttributeValue[];
  /** Present but unreadable for this operator: false (true when negated). */
  unparsable?: AttributeValue[];
  /** For the case-folding operators: a value that matches only with case_insensitive. */
  otherCase?: AttributeValue;
}

const TABLE: Row[] = [
  { operator: 'IN', values: ['pro', 'Enterprise', '18', 'true'], yes: ['pro', 'Enterprise', 18, true], no: ['pr', 'pro ', 18.5, false, ''], otherCase: 'PRO' },
  { operator: 'NOT_IN', values: ['pro', 'Enterprise'], yes: ['free', '', 'pro '], no: ['pro', 'Enterprise'], otherCase: 'enterprise' },
  { operator: 'STR_CONTAINS', values: ['ent', 'zz'], yes: ['parents', 'ent', 'xzzx'], no: ['Enterprise', 'en', 'ENT'], otherCase: 'PARENT' },
  { operator: 'STR_STARTS_WITH', values: ['Ent', 'pro'], yes: ['Enterprise', 'pro', 'program'], no: ['rent', 'xpro'], otherCase: 'ENTRY' },
  { operator: 'STR_ENDS_WITH', values: ['@corp.com', '.de'], yes: ['a@corp.com', 'x.de'], no: ['a@corp.com.au', 'de'], otherCase: 'A@CORP.COM' },
  { operator: 'NUM_EQ', values: ['18'], yes: [18, '18', '18.0', ' 18 ', '1.8e1'], no: [17, '19', -18], unparsable: ['eighteen', '', '18abc', true] },
  { operator: 'NUM_GT', values: ['3.5'], yes: [4, '3.51', 1e21], no: [3.5, '3', -4], unparsable: ['x', false] },
  { operator: 'NUM_GTE', values: ['-1'], yes: [-1, '0', 100], no: [-1.5, '-2'], unparsable: ['-'] },
  { operator: 'NUM_LT', values: ['0'], yes: [-0.1, '-5'], no: [0, '-0', 1], unparsable: ['zero'] },
  { operator: 'NUM_LTE', values: ['1e3'], yes: [1000, '999.99'], no: [1000.5, '1e4'], unparsable: ['1,000'] },
  {
    operator: 'DATE_AFTER',
    values: ['2020-06-15T12:00:00Z'],
    yes: ['2020-06-15T12:00:01Z', '2020-06-15T13:30:00+01:00', '2020-06-16', '2021-01-01T00:00:00.000Z'],
    no: ['2020-06-15T12:00:00Z', '2020-06-15T13:00:00+01:00', '2020-06-15', '2000-01-01'],
    unparsable: ['yesterday', '15/06/2020', '2020-13-01', 1592222400000, true],
  },
  { operator: 'DATE_BEFORE', values: ['2020-06-15'], yes: ['2020-06-14T23:59:59Z', '2020-06-15T01:00:00+02:00'], no: ['2020-06-15', '2020-06-15T00:00:00Z', '2099-01-01'], unparsable: ['June 1st'] },
  { operator: 'SEMVER_EQ', values: ['2.4.0'], yes: ['2.4.0'], no: ['2.4.1', '2.4.0-beta.1'], unparsable: ['2.4', 'v2.4.0', 'two', 2.4] },
  { operator: 'SEMVER_GT', values: ['2.4.0-beta.1'], yes: ['2.4.0-beta.2', '2.4.0', '2.10.0'], no: ['2.4.0-beta.1', '2.4.0-alpha', '2.3.99'], unparsable: ['latest'] },
  { operator: 'SEMVER_GTE', values: ['2.4.0'], yes: ['2.4.0', '2.10.0', '3.0.0-rc.1'], no: ['2.4.0-rc.1', '2.3.9', '1.99.99'], unparsable: ['2.4.0.1', ''] },
  { operator: 'SEMVER_LT', values: ['1.0.0'], yes: ['0.9.9', '1.0.0-alpha'], no: ['1.0.0', '10.0.0'], unparsable: ['1'] },
  { operator: 'SEMVER_LTE', values: ['1.0.0'], yes: ['1.0.0', '0.0.1'], no: ['1.0.1'], unparsable: ['1.0.0.0'] },
  { operator: 'REGEX', values: ['^beta-[0-9]+$', 'internal'], yes: ['beta-12', 'an internal user'], no: ['beta-', 'Beta-1x', 'INTERNAL'], otherCase: 'BETA-7' },
  {
    operator: 'IN_CIDR',
    values: ['10.0.0.0/8', '2001:db8::/32', '192.168.1.7'],
    yes: ['10.1.2.3', '::ffff:10.0.0.1', '2001:db8::42', '192.168.1.7'],
    no: ['11.0.0.1', '2001:db9::1', '192.168.1.8', '::1'],
    unparsable: ['not an ip', '300.1.1.1', '', 10],
  },
  { operator: 'EXISTS', values: [], yes: ['', 'x', 0, false], no: [] },
];

describe('operators, table-driven (docs/targeting.md)', () => {
  for (const row of TABLE) {
    const cond = (extra: Partial<Condition> = {}): Condition => ({ attribute: 'a', operator: row.operator, values: row.values, ...extra });
    test(`${row.operator}: present, missing, unparsable, negate, case_insensitive`, () => {
      assert.equal(conditionProblem(cond(), 'conditions[0]'), null);
      for (const value of row.yes) {
        assert.equal(holds(cond(), on(value)), true, `${row.operator} ${JSON.stringify(row.values)} on ${JSON.stringify(value)}`);
        assert.equal(holds(cond({ negate: true }), on(value)), false, `negated ${row.operator} on ${JSON.stringify(value)}`);
      }
      for (const value of row.no) {
        assert.equal(holds(cond(), on(value)), false, `${row.operator} ${JSON.stringify(row.values)} on ${JSON.stringify(value)}`);
        assert.equal(holds(cond({ negate: true }), on(value)), true, `negated ${row.operator} on ${JSON.stringify(value)}`);
      }
      // Missing: absent, null, no custom attributes at all, an inherited name.
      const missing = [{}, on(null), { custom_attributes: null }, { custom_attributes: { b: 'x' } }];
      for (const ctx of missing) {
        assert.equal(holds(cond(), ctx), row.operator === 'NOT_IN', `${row.operator} on a missing attribute ${JSON.stringify(ctx)}`);
        assert.equal(holds(cond({ negate: true }), ctx), row.operator !== 'NOT_IN', `negated ${row.operator} on a missing attribute`);
      }
      assert.equal(holds({ ...cond(), attribute: 'toString' }, on('x')), row.operator === 'NOT_IN', 'an inherited property is not an attribute');
      for (const value of row.unparsable ?? []) {
        assert.equal(holds(cond(), on(value)), false, `${row.operator} on unparsable ${JSON.stringify(value)}`);
        assert.equal(holds(cond({ negate: true }), on(value)), true, `negated ${row.operator} on unparsable ${JSON.stringify(value)}`);
      }
      if (row.otherCase !== undefined) {
        const plain = row.operator === 'NOT_IN';
        assert.equal(holds(cond(), on(row.otherCase)), plain, `${row.operator} is case-sensitive by default`);
        assert.equal(holds(cond({ case_insensitive: true }), on(row.otherCase)), !plain, `${row.operator} with case_insensitive`);
        assert.equal(holds(cond({ case_insensitive: true, negate: true }), on(row.otherCase)), plain, `negated ${row.operator} with case_insensitive`);
        for (const value of row.yes) assert.equal(holds(cond({ case_insensitive: true }), on(value)), true);
      } else if (row.operator !== 'EXISTS') {
        assert.match(conditionProblem(cond({ case_insensitive: true }), 'conditions[3]') ?? '', /^conditions\[3\] \(.+\): case_insensitive applies only/);
      }
    });
  }

  test('every operator but IN_SEGMENT is in the table', () => {
    assert.deepEqual(new Set(TABLE.map((row) => row.operator)), new Set(OPERATORS.filter((op) => op !== 'IN_SEGMENT')));
  });

  test('IN_SEGMENT: any segment may match; unknown segments match nobody; negate inverts', () => {
    const segments = new Map<string, Condition[]>([
      ['eu', [{ attribute: 'country', operator: 'IN', values: ['DE', 'FR'] }]],
      ['pro', [{ attribute: 'plan', operator: 'IN', values: ['pro'] }, { attribute: 'age', operator: 'NUM_GTE', values: ['18'] }]],
    ]);
    const options = { environment: 'production', segments };
    const cond: Condition = { operator: 'IN_SEGMENT', values: ['eu', 'pro', 'gone'] };
    const ctx = (attrs: Record<string, AttributeValue>) => ({ custom_attributes: attrs });
    assert.equal(holds(cond, ctx({ country: 'DE' }), options), true);
    assert.equal(holds(cond, ctx({ plan: 'pro', age: 30 }), options), true);
    assert.equal(holds(cond, ctx({ plan: 'pro', age: 17 }), options), false, 'all conditions of a segment must hold');
    assert.equal(holds(cond, ctx({}), options), false);
    assert.equal(holds({ ...cond, negate: true }, ctx({ country: 'US' }), options), true);
    assert.equal(holds({ ...cond, negate: true }, ctx({ country: 'FR' }), options), false);
    assert.equal(holds({ operator: 'IN_SEGMENT', values: ['gone'] }, ctx({ country: 'DE' }), options), false);
    assert.equal(holds({ operator: 'IN_SEGMENT', values: ['eu'] }, ctx({ country: 'DE' }), { environment: 'production' }), false, 'without segments, nobody is in one');
  });
});

describe('attributes (docs/targeting.md)', () => {
  test('email_domain is the lower-cased part after the last @, without the @', () => {
    const domainIs = (value: string, email: string | undefined) =>
      holds({ attribute: 'email_domain', operator: 'IN', values: [value] }, email === undefined ? {} : { user_email: email });
    assert.equal(domainIs('corp.com', 'Ann@Corp.COM'), true);
    assert.equal(domainIs('corp.com', 'a@b@corp.com'), true);
    assert.equal(domainIs('corp.com', ' a@Corp.com '), true, 'surrounding spaces are not part of the domain (docs/adr/0017-condition-edge-cases.md)');
    assert.equal(domainIs('@corp.com', 'a@corp.com'), false, 'no @ prefix');
    assert.equal(domainIs('corp.com', 'a@eu.corp.com'), false);
    assert.equal(holds({ attribute: 'email_domain', operator: 'EXISTS' }, { user_email: 'no-at-sign' }), false, 'an email without @ has no domain');
    assert.equal(holds({ attribute: 'email_domain', operator: 'EXISTS' }, {}), false);
    assert.equal(holds({ attribute: 'email_domain', operator: 'STR_ENDS_WITH', values: ['.corp.com'] }, { user_email: 'x@EU.Corp.com' }), true);
  });

  test('user_id and user_email come from the context, case kept', () => {
    assert.equal(holds({ attribute: 'user_id', operator: 'STR_STARTS_WITH', values: ['u-'] }, { user_id: 'u-1' }), true);
    assert.equal(holds({ attribute: 'user_email', operator: 'IN', values: ['Ann@Corp.com'] }, { user_email: 'Ann@Corp.com' }), true);
    assert.equal(holds({ attribute: 'user_email', operator: 'IN', values: ['ann@corp.com'] }, { user_email: 'Ann@Corp.com' }), false);
    assert.equal(holds({ attribute: 'user_email', operator: 'IN', values: ['ann@corp.com'], case_insensitive: true }, { user_email: 'Ann@Corp.com' }), true);
  });

  test('environment is the evaluated environment key', () => {
    const cond: Condition = { attribute: 'environment', operator: 'IN', values: ['production'] };
    assert.equal(holds(cond, {}, { environment: 'production' }), true);
    assert.equal(holds(cond, {}, { environment: 'staging' }), false);
    assert.equal(holds({ attribute: 'environment', operator: 'EXISTS' }, {}, {}), false, 'no environment given at compile time: absent');
  });

  test('a custom attribute named user_id, user_email, email_domain or environment is ignored', () => {
    const custom = { custom_attributes: { user_id: 'evil', user_email: 'evil@evil.com', email_domain: 'evil.com', environment: 'evil' } };
    for (const attribute of ['user_id', 'user_email', 'email_domain']) {
      assert.equal(holds({ attribute, operator: 'EXISTS' }, custom), false, `${attribute} from custom_attributes`);
      assert.equal(holds({ attribute, operator: 'STR_CONTAINS', values: ['evil'] }, { ...custom, user_id: 'good', user_email: 'good@good.com' }), false);
    }
    assert.equal(holds({ attribute: 'environment', operator: 'IN', values: ['evil'] }, custom, { environment: 'production' }), false);
    assert.equal(holds({ attribute: 'environment', operator: 'IN', values: ['production'] }, custom, { environment: 'production' }), true);
    assert.equal(holds({ attribute: 'user_id', operator: 'IN', values: ['good'] }, { ...custom, user_id: 'good' }), true);
  });

  test('current_time is the clock unless custom_attributes.current_time is given', () => {
    const after2001: Condition = { attribute: 'current_time', operator: 'DATE_AFTER', values: ['2001-01-01'] };
    const before2999: Condition = { attribute: 'current_time', operator: 'DATE_BEFORE', values: ['2999-01-01T00:00:00Z'] };
    assert.equal(holds([after2001, before2999], {}), true, 'the clock is now');
    assert.equal(holds({ attribute: 'current_time', operator: 'EXISTS' }, {}), true);
    assert.equal(holds(after2001, { custom_attributes: { current_time: '2000-12-31T23:59:59Z' } }), false, 'the override wins');
    assert.equal(holds(after2001, { custom_attributes: { current_time: '2001-01-01T00:00:01+00:00' } }), true);
    assert.equal(holds(after2001, { custom_attributes: { current_time: 'not a date' } }), false, 'an unparsable override is not replaced by the clock');
    assert.equal(holds(after2001, { custom_attributes: { current_time: null } }), true, 'null counts as absent: the clock');
  });

  test('numbers and booleans are read through their string form', () => {
    assert.equal(holds({ attribute: 'a', operator: 'IN', values: ['1'] }, on(1.0)), true);
    assert.equal(holds({ attribute: 'a', operator: 'IN', values: ['1.0'] }, on(1.0)), false);
    assert.equal(holds({ attribute: 'a', operator: 'IN', values: ['false'] }, on(false)), true);
    assert.equal(holds({ attribute: 'a', operator: 'STR_STARTS_WITH', values: ['1e+'] }, on(1e21)), true);
  });

  test('conditions of a rule are ANDed, values ORed', () => {
    const rule: Condition[] = [
      { attribute: 'plan', operator: 'IN', values: ['pro', 'enterprise'] },
      { attribute: 'version', operator: 'SEMVER_GTE', values: ['2.4.0'] },
    ];
    assert.equal(holds(rule, { custom_attributes: { plan: 'enterprise', version: '2.4.0' } }), true);
    assert.equal(holds(rule, { custom_attributes: { plan: 'enterprise', version: '2.3.0' } }), false);
    assert.equal(holds(rule, { custom_attributes: { plan: 'free', version: '3.0.0' } }), false);
  });
});

describe('scale and pathological input', () => {
  test('10,000 values in an IN condition: each of them matches, others do not', () => {
    const values = Array.from({ length: 10_000 }, (_, i) => `account-${i}`);
    const cond: Condition = { attribute: 'account', operator: 'IN', values };
    assert.equal(conditionProblem(cond, 'conditions[0]'), null);
    const set = compileFlagSet([{ key: 'big', enabled: true, rolloutPercentage: 0, everyoneElse: 'off', rules: [{ type: 'conditions', value: '', enabled: true, conditions: [cond] }] }]);
    for (const i of [0, 1, 4999, 9999]) assert.equal(OUTCOMES[set.evaluateFlag({ custom_attributes: { account: `account-${i}` } }, 0)]!.enabled, true);
    assert.equal(OUTCOMES[set.evaluateFlag({ custom_attributes: { account: 'account-10000' } }, 0)]!.enabled, false);
    const folded = compileFlagSet([{ key: 'big', enabled: true, rolloutPercentage: 0, everyoneElse: 'off', rules: [{ type: 'conditions', value: '', enabled: true, conditions: [{ ...cond, case_insensitive: true }] }] }]);
    assert.equal(OUTCOMES[folded.evaluateFlag({ custom_attributes: { account: 'ACCOUNT-9999' } }, 0)]!.enabled, true);
    assert.match(conditionProblem({ ...cond, values: [...values, 'one-more'] }, 'conditions[4]') ?? '', /^conditions\[4\] \(IN\): at most 10000 values/);
  });

  test('REGEX answers as an RE2 search: the text\'s edges, newlines, flags, surrogates', () => {
    const patterns = ['^pro$', 'ent', '@x\\.com$', 'a|b', '^$', '', '^', '$', '\\bfoo\\b', '\\B', '(?m)^b$', '(?i)ÉTÉ', '\\Aa', 'a\\z', '.', '^.$', 'a.b', '(?U)a+', '^\\p{L}+$', '😀', '[^a]', 'x*'];
    const texts = ['', 'pro', 'a\nb', 'a\nb\n', '\n', 'foo bar', 'xfoo', 'u@x.com', 'été', '😀', '\uD83D', 'a\uD83Db', '\uDE00', 'ab', 'a', 'b', 'a\r\nb', 'x\u2028y'];
    for (const case_insensitive of [false, true]) {
      for (const pattern of patterns) {
        const search = RE2JS.compile(pattern, case_insensitive ? RE2JS.CASE_INSENSITIVE : 0);
        for (const text of texts) assert.equal(holds({ attribute: 'a', operator: 'REGEX', values: [pattern], case_insensitive }, on(text)), search.test(text), `${JSON.stringify(pattern)} on ${JSON.stringify(text)}`);
      }
    }
  });

  test('a pathological regex (a+)+$ on a 1,024-character input answers (RE2: linear time)', () => {
    const cond: Condition = { attribute: 'a', operator: 'REGEX', values: ['(a+)+$'] };
    assert.equal(conditionProblem(cond, 'conditions[0]'), null);
    const input = 'a'.repeat(1023) + '!';
    assert.equal(input.length, 1024);
    // A backtracking engine would not come back from this within the age of the universe.
    assert.equal(holds(cond, on(input)), false);
    assert.equal(holds(cond, on('a'.repeat(1024))), true);
    assert.equal(holds({ ...cond, values: ['(x+x+)+y'] }, on('x'.repeat(1024))), false);
  });

  test('IN_CIDR: an IPv4-mapped IPv6 address is its IPv4 address, both ways', () => {
    const v4range: Condition = { attribute: 'ip', operator: 'IN_CIDR', values: ['192.168.0.0/16'] };
    const mappedRange: Condition = { attribute: 'ip', operator: 'IN_CIDR', values: ['::ffff:192.168.0.0/112'] };
    const ip = (address: string) => ({ custom_attributes: { ip: address } });
    assert.equal(holds(v4range, ip('::ffff:192.168.3.4')), true);
    assert.equal(holds(v4range, ip('::ffff:c0a8:304')), true);
    assert.equal(holds(v4range, ip('::ffff:10.0.0.1')), false);
    assert.equal(holds(mappedRange, ip('192.168.3.4')), true);
    assert.equal(holds(mappedRange, ip('192.169.0.1')), false);
    assert.equal(holds({ ...v4range, values: ['0.0.0.0/0'] }, ip('2001:db8::1')), false, 'an IPv6 address is in no IPv4 range');
    assert.equal(holds({ ...v4range, values: ['::/0'] }, ip('10.0.0.1')), true, '::/0 holds every address, IPv4 too');
    assert.equal(holds({ ...v4range, values: ['2001:db8::/32'] }, ip('10.0.0.1')), false);
    assert.equal(holds({ ...v4range, values: ['0.0.0.0/0'] }, ip('255.255.255.255')), true);
    assert.equal(holds({ ...v4range, values: ['192.168.0.4/31'] }, ip('192.168.0.5')), true);
    assert.equal(holds({ ...v4range, values: ['192.168.0.4/31'] }, ip('192.168.0.6')), false);
  });

  test('IN_CIDR reads only dotted-quad IPv4 (no octal, hex or shortened forms)', () => {
    const cond: Condition = { attribute: 'ip', operator: 'IN_CIDR', values: ['10.0.0.0/8'] };
    const ip = (address: string) => ({ custom_attributes: { ip: address } });
    for (const odd of ['012.0.0.1', '0x0a.0.0.1', '167772161', '10.1', '10']) assert.equal(holds(cond, ip(odd)), false, `${odd} is not read as an address in 10/8`);
    assert.equal(holds({ ...cond, values: ['12.0.0.0/8'] }, ip('012.0.0.1')), false, '012.0.0.1 is no address at all');
    for (const bad of ['10/8', '012.0.0.0/8', '0x0a000000/8', '10.0.0.0/33', '10.0.0.0/', '::/129', '10.0.0.0/8/8']) {
      assert.match(conditionProblem({ ...cond, values: [bad] }, 'conditions[1]') ?? '', /^conditions\[1\] \(IN_CIDR\): ".*" is not an IP address or CIDR range$/, bad);
    }
  });
});

describe('conditionProblem: each message names the condition and its operator (docs/targeting.md)', () => {
  const cases: [Condition, RegExp, { inSegment?: boolean }?][] = [
    [{ attribute: 'a', operator: 'LIKE' as Operator, values: ['x'] }, /^conditions\[2\]: unknown operator "LIKE"/],
    [{ attribute: '', operator: 'IN', values: ['x'] }, /^conditions\[2\] \(IN\): an attribute is required$/],
    [{ operator: 'STR_CONTAINS', values: ['x'] }, /^conditions\[2\] \(STR_CONTAINS\): an attribute is required$/],
    [{ attribute: 'x'.repeat(65), operator: 'IN', values: ['x'] }, /^conditions\[2\] \(IN\): the attribute name is longer than 64 characters$/],
    [{ attribute: 'a', operator: 'IN', values: [] }, /^conditions\[2\] \(IN\): at least one value is required$/],
    [{ attribute: 'a', operator: 'IN' }, /^conditions\[2\] \(IN\): at least one value is required$/],
    [{ attribute: 'a', operator: 'IN', values: ['x'.repeat(1025)] }, /^conditions\[2\] \(IN\): a value is longer than 1024 characters$/],
    [{ attribute: 'a', operator: 'IN', values: [5 as unknown as string] }, /^conditions\[2\] \(IN\): values must be strings$/],
    [{ attribute: 'a', operator: 'EXISTS', values: ['x'] }, /^conditions\[2\] \(EXISTS\): takes no values$/],
    [{ attribute: 'a', operator: 'NUM_GT', values: ['1', '2'] }, /^conditions\[2\] \(NUM_GT\): takes exactly one value$/],
    [{ attribute: 'a', operator: 'NUM_GT', values: ['ten'] }, /^conditions\[2\] \(NUM_GT\): "ten" is not a number$/],
    [{ attribute: 'a', operator: 'DATE_AFTER', values: ['2026-01-01', '2027-01-01'] }, /^conditions\[2\] \(DATE_AFTER\): takes exactly one value$/],
    [{ attribute: 'a', operator: 'DATE_AFTER', values: ['next week'] }, /^conditions\[2\] \(DATE_AFTER\): "next week" is not an ISO 8601 date/],
    [{ attribute: 'a', operator: 'DATE_BEFORE', values: ['2026-02-30'] }, /^conditions\[2\] \(DATE_BEFORE\): "2026-02-30" is not an ISO 8601 date/],
    [{ attribute: 'a', operator: 'DATE_BEFORE', values: ['2026-13-01T00:00:00Z'] }, /^conditions\[2\] \(DATE_BEFORE\): .* is not an ISO 8601 date/],
    [{ attribute: 'a', operator: 'SEMVER_GTE', values: ['2.4'] }, /^conditions\[2\] \(SEMVER_GTE\): "2.4" is not a version x.y.z or x.y.z-pre$/],
    [{ attribute: 'a', operator: 'SEMVER_EQ', values: ['v2.4.0'] }, /^conditions\[2\] \(SEMVER_EQ\): "v2.4.0" is not a version/],
    [{ attribute: 'a', operator: 'SEMVER_LT', values: ['1.0.0+build.5'] }, /^conditions\[2\] \(SEMVER_LT\): "1.0.0\+build.5" is not a version/],
    [{ attribute: 'a', operator: 'IN_CIDR', values: ['10.0.0.0/8', 'office'] }, /^conditions\[2\] \(IN_CIDR\): "office" is not an IP address or CIDR range$/],
    [{ attribute: 'a', operator: 'REGEX', values: ['(a)\\1'] }, /^conditions\[2\] \(REGEX\): "\(a\)\\1" is not a pattern RE2 runs in linear time/],
    [{ attribute: 'a', operator: 'REGEX', values: ['(?=a)b'] }, /^conditions\[2\] \(REGEX\): .* is not a pattern RE2 runs in linear time/],
    [{ attribute: 'a', operator: 'REGEX', values: ['(?<!a)b'] }, /^conditions\[2\] \(REGEX\): .* is not a pattern RE2 runs in linear time/],
    [{ attribute: 'a', operator: 'REGEX', values: ['[unclosed'] }, /^conditions\[2\] \(REGEX\): "\[unclosed" is not a pattern/],
    [{ attribute: 'a', operator: 'REGEX', values: ['a'.repeat(1001)] }, /^conditions\[2\] \(REGEX\): a pattern is longer than 1000 characters$/],
    [{ attribute: 'a', operator: 'NUM_EQ', values: ['1'], case_insensitive: true }, /^conditions\[2\] \(NUM_EQ\): case_insensitive applies only to/],
    [{ attribute: 'a', operator: 'IN_SEGMENT', values: ['beta'] }, /^conditions\[2\] \(IN_SEGMENT\): takes no attribute/],
    [{ operator: 'IN_SEGMENT', values: [] }, /^conditions\[2\] \(IN_SEGMENT\): at least one value is required$/],
    [{ operator: 'IN_SEGMENT', values: ['beta'] }, /^conditions\[2\] \(IN_SEGMENT\): a segment cannot use IN_SEGMENT$/, { inSegment: true }],
  ];
  for (const [cond, message, options] of cases) {
    test(`${cond.operator} ${JSON.stringify(cond.values ?? null).slice(0, 40)} → ${message.source.slice(0, 60)}`, () => {
      assert.match(conditionProblem(cond, 'conditions[2]', options) ?? 'null (accepted)', message);
    });
  }

  test('valid conditions of every operator are accepted', () => {
    const valid: Condition[] = [
      { attribute: 'a', operator: 'EXISTS' },
      { attribute: 'a', operator: 'EXISTS', values: [] },
      { operator: 'IN_SEGMENT', values: ['beta', 'eu'] },
      { attribute: 'a', operator: 'DATE_AFTER', values: ['2026-12-31'] },
      { attribute: 'a', operator: 'DATE_AFTER', values: ['2026-12-31T18:00:00+01:00'] },
      { attribute: 'a', operator: 'DATE_AFTER', values: ['2024-02-29T18:00:00.123Z'] },
      { attribute: 'a', operator: 'SEMVER_LT', values: ['1.0.0-rc.1'] },
      { attribute: 'a', operator: 'IN_CIDR', values: ['10.0.0.0/8', '::1', '2001:db8::/32', '::ffff:10.0.0.0/104', '10.0.0.1'] },
      { attribute: 'a', operator: 'REGEX', values: ['^[a-z]+\\d*$', '(a+)+$'], case_insensitive: true },
      { attribute: 'x'.repeat(64), operator: 'STR_CONTAINS', values: ['x'.repeat(1024)], negate: true, case_insensitive: true },
    ];
    for (const cond of valid) assert.equal(conditionProblem(cond, 'conditions[0]'), null, JSON.stringify(cond).slice(0, 200));
  });
});

describe('rules and flags around conditions (docs/targeting.md)', () => {
  const rule = (extra: Partial<RuleDefinition>): RuleDefinition => ({ type: 'conditions', value: '', enabled: true, conditions: [{ attribute: 'plan', operator: 'IN', values: ['pro'] }], ...extra });
  const pro: EvaluationContext = { user_id: 'dark_mode_user', custom_attributes: { plan: 'pro' } };

  test('serve false turns the flag off for the users a rule matches, with the rule reason', () => {
    const outcome = evaluateFlag({ key: 'f', enabled: true, rolloutPercentage: 0, rules: [rule({ serve: false })] }, pro);
    assert.deepEqual([outcome.enabled, outcome.reason], [false, 'Matched conditions targeting rule']);
    const seedOff = evaluateFlag({ key: 'f', enabled: true, rolloutPercentage: 0, rules: [{ type: 'user_id', value: 'dark_mode_user', enabled: true, serve: false }] }, pro);
    assert.deepEqual([seedOff.enabled, seedOff.reason], [false, 'Matched user_id targeting rule']);
  });

  test('a per-rule rollout serves the users whose rollout bucket is below it; others go on to the next rule', () => {
    // bucket(dark_mode, user_1) = 47 (docs/api.md vectors).
    const ctx: EvaluationContext = { user_id: 'user_1', custom_attributes: { plan: 'pro' } };
    const def = (percent: number): FlagDefinition => ({ key: 'dark_mode', enabled: true, rolloutPercentage: 0, rules: [rule({ rolloutPercentage: percent }), { type: 'user_id', value: 'user_1', enabled: true, serve: false }] });
    assert.equal(evaluateFlag(def(48), ctx).reason, 'Matched conditions targeting rule');
    assert.equal(evaluateFlag(def(47), ctx).reason, 'Matched user_id targeting rule');
    assert.equal(evaluateFlag(def(0), ctx).reason, 'Matched user_id targeting rule');
    assert.equal(evaluateFlag(def(100), ctx).enabled, true);
  });

  test('a conditions rule without conditions, or an empty segment, matches nobody (never everybody)', () => {
    for (const conditions of [[], null, undefined]) {
      const outcome = evaluateFlag({ key: 'f', enabled: true, rolloutPercentage: 0, everyoneElse: 'off', rules: [{ type: 'conditions', value: '', enabled: true, conditions }] }, pro);
      assert.equal(outcome.reason, 'No targeting rule matched', JSON.stringify(conditions));
    }
    const segments = new Map<string, Condition[]>([['empty', []], ['only_segments', [{ operator: 'IN_SEGMENT', values: ['empty'] }]]]);
    for (const key of ['empty', 'only_segments']) {
      assert.equal(holds({ operator: 'IN_SEGMENT', values: [key] }, pro, { segments }), false, key);
    }
  });

  test('everyone_else off: a user no rule served gets false, "No targeting rule matched"; the rollout is not consulted', () => {
    const outcome = evaluateFlag({ key: 'f', enabled: true, rolloutPercentage: 100, everyoneElse: 'off', rules: [rule({})] }, { custom_attributes: { plan: 'free' } });
    assert.deepEqual([outcome.enabled, outcome.reason], [false, 'No targeting rule matched']);
    const disabled = evaluateFlag({ key: 'f', enabled: false, rolloutPercentage: 100, everyoneElse: 'off', rules: [rule({})] }, pro);
    assert.equal(disabled.reason, 'Flag is globally disabled');
  });
});
