import { test } from 'node:test';
import assert from 'node:assert/strict';
import { OUTCOMES, RULE_TYPES, codeOf, compileFlagSet, murmur3_x86_32, normalizeEmailDomain, variantOf } from './index.js';
import type { Condition, EvaluationContext, FlagDefinition, RuleDefinition } from './index.js';

/**
 * docs/api.md read literally, with nothing compiled: the first enabled rule (in the given order)
 * that matches, else the rollout bucket, else enabled globally. The compiled set must agree.
 */
function reference(def: FlagDefinition, ctx: EvaluationContext): { enabled: boolean; reason: string } {
  if (!def.enabled) return { enabled: false, reason: 'Flag is globally disabled' };
  const email = typeof ctx.user_email === 'string' ? ctx.user_email.trim().toLowerCase() : '';
  const domain = email.includes('@') ? email.slice(email.lastIndexOf('@') + 1) : null;
  for (const rule of def.rules) {
    if (!rule.enabled) continue;
    const matches =
      rule.type === 'user_id'
        ? rule.value !== '' && ctx.user_id === rule.value
        : rule.type === 'user_email'
          ? email !== '' && rule.value.trim().toLowerCase() === email
          : (() => {
              const wanted = normalizeEmailDomain(rule.value);
              return email !== '' && domain !== null && wanted !== null && wanted === `@${domain}`;
            })();
    if (matches) return { enabled: true, reason: `Matched ${rule.type} targeting rule` };
  }
  const n = def.rolloutPercentage;
  if (n > 0) {
    const id = ctx.user_id ? ctx.user_id : ctx.user_email ? ctx.user_email : 'anonymous';
    const bucket = murmur3_x86_32(`${def.key}:${id}`, 0) % 100;
    return bucket < n ? { enabled: true, reason: `User in ${n}% rollout` } : { enabled: false, reason: `User not in ${n}% rollout` };
  }
  return { enabled: true, reason: 'Flag enabled globally' };
}

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
  return { next, pick };
}

// Small pools, so that rules and contexts collide often; with case, spaces and odd shapes.
const IDS = ['', 'u1', 'u2', 'U1', ' u1', 'vip', 'user-9', 'é'];
const EMAILS = ['', 'a@x.com', 'A@X.com ', ' b@y.org', 'c@x.com', 'no-at', 'd@', '@x.com', 'e@sub.x.com', 'a@b@x.com'];
const DOMAINS = ['x.com', '@X.com', ' y.org', 'sub.x.com', '', '@', 'localhost', 'b@x.com'];

function generate(seed: number): { flags: FlagDefinition[]; contexts: EvaluationContext[] } {
  const { next, pick } = random(seed);
  const flags: FlagDefinition[] = [];
  const count = Math.floor(next() * 40);
  for (let i = 0; i < count; i++) {
    const rules: RuleDefinition[] = [];
    const ruleCount = next() < 0.5 ? 0 : Math.floor(next() * 6);
    for (let r = 0; r < ruleCount; r++) {
      const type = pick(RULE_TYPES.filter((seedType) => seedType !== 'conditions')); // conditions: conditions.test.ts
      const value = type === 'user_id' ? pick(IDS) : type === 'user_email' ? pick(EMAILS) : pick(DOMAINS);
      rules.push({ type, value, enabled: next() < 0.85 });
    }
    flags.push({ key: `flag_${i}_${seed % 97}`, enabled: next() < 0.8, rolloutPercentage: pick([0, 0, 1, 25, 50, 99, 100]), rules });
  }
  const contexts: EvaluationContext[] = [{}];
  for (let c = 0; c < 60; c++) {
    const context: EvaluationContext = {};
    if (next() < 0.8) context.user_id = pick([...IDS, `random-${c}`]);
    if (next() < 0.8) context.user_email = pick([...EMAILS, `r${c}@x.com`]);
    contexts.push(context);
  }
  return { flags, contexts };
}

test('a flag set gives every flag what docs/api.md gives it, for any context, whole or one flag at a time', () => {
  for (let seed = 1; seed <= 400; seed++) {
    const { flags, contexts } = generate(seed);
    const set = compileFlagSet(flags);
    const codes = new Uint8Array(flags.length);
    for (const context of contexts) {
      const matched = set.evaluateInto(context, codes);
      let differsFromBase = false;
      flags.forEach((flag, i) => {
        const where = `seed ${seed}, flag ${i}, context ${JSON.stringify(context)}`;
        const { enabled, reason } = OUTCOMES[codes[i]!]!;
        assert.deepEqual({ enabled, reason }, reference(flag, context), where);
        assert.equal(set.evaluateFlag(context, i), codes[i], where);
        if (codes[i] !== set.baseCodes[i] && !set.rollouts.includes(i)) differsFromBase = true;
      });
      // The promise the answer builder relies on: no match, no change outside the rollouts.
      if (!matched) assert.equal(differsFromBase, false, `seed ${seed}: ${JSON.stringify(context)}`);
    }
  }
});

test('a flag set: lowest rank wins across rule types, and the next context starts afresh', () => {
  const flags: FlagDefinition[] = [
    { key: 'a', enabled: true, rolloutPercentage: 0, rules: [{ type: 'email_domain', value: 'x.com', enabled: true }, { type: 'user_id', value: 'u1', enabled: true }] },
    { key: 'b', enabled: true, rolloutPercentage: 50, rules: [{ type: 'user_id', value: 'u1', enabled: true }, { type: 'user_email', value: 'A@x.com', enabled: true }] },
    { key: 'c', enabled: false, rolloutPercentage: 0, rules: [{ type: 'user_id', value: 'u1', enabled: true }] },
  ];
  const reasons = OUTCOMES.map((outcome) => outcome.reason);
  const set = compileFlagSet(flags);
  const codes = new Uint8Array(3);
  assert.equal(set.evaluateInto({ user_id: 'u1', user_email: 'a@x.com' }, codes), true);
  assert.deepEqual([...codes].map((code) => reasons[code]), ['Matched email_domain targeting rule', 'Matched user_id targeting rule', 'Flag is globally disabled']);
  assert.equal(set.evaluateInto({ user_id: 'u2', user_email: 'a@y.com' }, codes), false);
  assert.equal(reasons[codes[0]!], 'Flag enabled globally');
  assert.deepEqual([...set.rollouts], [1]);
});

/**
 * docs/prerequisites.md read literally, with nothing compiled: a flag's parents evaluated by
 * recursion (a flag on the path is a cycle: not met), then docs/api.md (reference above).
 */
function referenceWithPrerequisites(flags: readonly FlagDefinition[], index: number, ctx: EvaluationContext, path: ReadonlySet<number> = new Set()): { enabled: boolean; reason: string } {
  const def = flags[index]!;
  if (!def.enabled) return { enabled: false, reason: 'Flag is globally disabled' };
  for (const p of def.prerequisites ?? []) {
    const parent = flags.findIndex((flag) => flag.key === p.flagKey);
    const met = parent >= 0 && !path.has(parent) && referenceWithPrerequisites(flags, parent, ctx, new Set([...path, index])).enabled === (p.enabled ?? true);
    if (!met) return { enabled: false, reason: `Prerequisite ${p.flagKey} not met` };
  }
  return reference(def, ctx);
}

test('with prerequisites (chains in any order of the set, state off, missing parents): the set gives what the recursive reading gives', () => {
  let unmet = 0;
  for (let seed = 1; seed <= 300; seed++) {
    const { flags, contexts } = generate(seed);
    const { next, pick } = random(seed * 7919);
    // A random rank: a flag names only flags ranked before it (what may be saved has no cycle),
    // whatever their place in the set.
    const rank = flags.map(() => next());
    for (const [i, flag] of flags.entries()) {
      const earlier = flags.filter((_other, j) => rank[j]! < rank[i]!);
      if (next() < 0.4) continue;
      const parents = new Set<string>();
      for (let n = 1 + Math.floor(next() * 3); n > 0; n--) parents.add(next() < 0.1 || earlier.length === 0 ? 'missing' : pick(earlier).key);
      flag.prerequisites = [...parents].map((flagKey) => (next() < 0.2 ? { flagKey, enabled: false } : { flagKey }));
      if (i % 7 === 0) flag.prerequisites = flag.prerequisites.slice(0, 1);
    }
    const set = compileFlagSet(flags);
    const codes = new Uint8Array(flags.length);
    for (const context of contexts) {
      const matched = set.evaluateInto(context, codes);
      let differsFromBase = false;
      flags.forEach((_flag, i) => {
        const where = `seed ${seed}, flag ${i}, context ${JSON.stringify(context)}`;
        const expected = referenceWithPrerequisites(flags, i, context);
        assert.deepEqual({ enabled: OUTCOMES[codes[i]!]!.enabled, reason: set.reasonOf(i, codes[i]!) }, expected, where);
        assert.equal(set.evaluateFlag(context, i), codes[i], where);
        if (expected.reason.startsWith('Prerequisite')) unmet++;
        if (codes[i] !== set.baseCodes[i] && !set.rollouts.includes(i)) differsFromBase = true;
      });
      if (!matched) assert.equal(differsFromBase, false, `seed ${seed}: ${JSON.stringify(context)}`);
    }
  }
  assert.ok(unmet > 1000, `${unmet} unmet prerequisites seen`);
});

test('flags gated by an IN condition answer as when evaluated alone: rules listed or not, several gates, variants, rollouts', () => {
  // Flags whose every rule needs an IN condition's value run only when a gate lists the context's
  // value (ConditionTable.gateOf); the others keep their base answer. evaluateFlag takes no gate.
  const PLANS = ['free', 'Pro', 'pro', 'team', 'enterprise', ''];
  const CUSTOMERS = Array.from({ length: 12 }, (_, k) => `c-${k}`);
  let gatedRuns = 0;
  for (let seed = 1; seed <= 300; seed++) {
    const { next, pick } = random(seed);
    const some = (pool: readonly string[]) => pool.filter(() => next() < 0.3);
    const gate = (): Condition => {
      const attribute = pick(['plan', 'customer', 'customer']);
      const values = some(attribute === 'plan' ? PLANS : CUSTOMERS);
      return { attribute, operator: pick(['IN', 'IN', 'IN', 'NOT_IN']), values: values.length > 0 ? values : ['c-0'], ...(next() < 0.2 ? { negate: true } : {}), ...(next() < 0.3 ? { case_insensitive: true } : {}) };
    };
    const other = (): Condition => pick<Condition>([{ attribute: 'version', operator: 'SEMVER_GTE', values: ['2.0.0'] }, { attribute: 'plan', operator: 'STR_STARTS_WITH', values: ['p'] }, gate()]);
    const flags: FlagDefinition[] = [];
    const count = 1 + Math.floor(next() * 30);
    for (let i = 0; i < count; i++) {
      const rules: RuleDefinition[] = Array.from({ length: Math.floor(next() * 4) }, () => ({
        type: 'conditions' as const,
        value: '',
        enabled: next() < 0.9,
        conditions: next() < 0.5 ? [gate()] : [other(), gate()],
        ...(next() < 0.2 ? { rolloutPercentage: pick([0, 30, 100]) } : {}),
        ...(next() < 0.2 ? { serve: false } : {}),
        ...(next() < 0.3 ? { variant: pick(['a', 'b']) } : {}),
      }));
      const flag: FlagDefinition = { key: `flag_${i}`, enabled: next() < 0.9, rolloutPercentage: pick([0, 50, 100]), rules, everyoneElse: pick(['off', 'rollout', 'rollout'] as const) };
      const weights = pick([null, [1000, 0], [500, 500]]);
      if (weights !== null) {
        flag.variants = [{ key: 'a', value: 'A', weight: weights[0]! }, { key: 'b', value: 'B', weight: weights[1]! }];
        flag.offVariant = pick(['a', 'b']);
      } else for (const rule of rules) delete rule.variant;
      flags.push(flag);
    }
    const set = compileFlagSet(flags);
    const codes = new Uint8Array(set.size);
    const variants = new Uint8Array(set.size);
    for (let c = 0; c < 40; c++) {
      const attributes: Record<string, string> = {};
      if (next() < 0.8) attributes.plan = pick([...PLANS, 'PRO', 'Team']);
      if (next() < 0.8) attributes.customer = pick([...CUSTOMERS, 'C-1', 'c-99']);
      if (next() < 0.5) attributes.version = pick(['1.0.0', '2.1.0']);
      const context: EvaluationContext = { user_id: `u-${c}`, custom_attributes: attributes };
      const served = set.evaluateInto(context, codes, variants);
      flags.forEach((flag, i) => {
        const where = `seed ${seed}, flag ${i} ${JSON.stringify(flag)}, context ${JSON.stringify(context)}`;
        const alone = set.evaluateFlag(context, i);
        assert.equal(codes[i], codeOf(alone), where);
        if (set.variants[i] !== null) assert.equal(variants[i], variantOf(alone), where);
        if (!served && !set.rollouts.includes(i)) assert.equal(codes[i], set.baseCodes[i], where);
        if (OUTCOMES[codes[i]!]!.reason.startsWith('Matched ')) gatedRuns++;
      });
    }
  }
  assert.ok(gatedRuns > 1000, `rules served too rarely to prove much (${gatedRuns})`);
});
