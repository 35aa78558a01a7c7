/**
 * Micro-benchmark of the evaluation hot path.
 *
 *   npx tsc -b packages/engine && node packages/engine/dist/bench/engine.bench.js
 *
 * Prints a markdown table. Absolute numbers depend on the machine; the
 * "cost vs Map.get" column (ns per op divided by the ns of a trivial loop doing
 * one Map.get per iteration, measured in the same run) is more comparable
 * across noisy machines.
 *
 * Times are CPU time of the process (user + system), not the wall clock.
 * Optional env: BENCH_MS (target measured time per case, default 1000); BENCH_ENGINE (below).
 * bench/ab.mjs alternates this bench between two builds and keeps each case's best.
 */
import type { CompileOptions, CompiledFlagSet, Condition, EvaluationContext, FlagDefinition, RuleDefinition } from '../src/index.js';

/** BENCH_ENGINE: another build of the engine to measure with the same cases (its dist/src/index.js), e.g. main's, for a before and after. */
const engine: typeof import('../src/index.js') = await import(process.env['BENCH_ENGINE'] ?? '../src/index.js');
const { compileFlagSet, conditionProblem, OUTCOMES, RULE_TYPES } = engine;

const TARGET_NS = BigInt(Math.round(Number(process.env['BENCH_MS'] ?? 1000) * 1e6));
const WARMUP_NS = TARGET_NS / 4n;
const SIZE = 1 << 16; // pre-built inputs, indexed with `i & MASK`
const MASK = SIZE - 1;

/** Prevents dead-code elimination: every case folds its results into it. */
let sink = 0;

interface Case {
  name: string;
  /** evaluations (or Map.gets) per iteration of `run` */
  opsPerIter: number;
  run: (iterations: number) => number;
}

interface Measurement {
  name: string;
  opsPerSec: number;
  nsPerOp: number;
}

/** Nanoseconds of CPU (user + system) that `run(n)` took: steadier than the wall clock on a shared machine. */
function time(run: (n: number) => number, n: number): bigint {
  const t0 = process.cpuUsage();
  sink += run(n);
  const { user, system } = process.cpuUsage(t0);
  return BigInt(user + system) * 1000n;
}

/** Warm up (also lets the JIT optimize), calibrate to ~TARGET_NS, measure once. */
function measure(c: Case): Measurement {
  let n = 1000;
  let spent = 0n;
  // Warm-up + calibration: double n until one batch takes >= 1/10 of the warm-up budget.
  for (;;) {
    const dt = time(c.run, n);
    spent += dt;
    if (dt * 10n >= WARMUP_NS) {
      if (spent >= WARMUP_NS) break;
    } else {
      n *= 2;
    }
  }
  const perIterNs = Number(time(c.run, n)) / n;
  const iterations = Math.max(1, Math.round(Number(TARGET_NS) / perIterNs));
  const elapsed = Number(time(c.run, iterations));
  const ops = iterations * c.opsPerIter;
  return { name: c.name, opsPerSec: (ops / elapsed) * 1e9, nsPerOp: elapsed / ops };
}

// ---------------------------------------------------------------------------
// Inputs
// ---------------------------------------------------------------------------

/**
 * Contexts reach the server through JSON.parse, which yields flat strings.
 * Strings built with `+` / template literals are V8 ConsStrings whose
 * charCodeAt goes through an indirection, which would skew hashing numbers.
 */
function viaJson<T>(value: T): T {
  return JSON.parse(JSON.stringify(value)) as T;
}

const contexts: EvaluationContext[] = [];
for (let i = 0; i < SIZE; i++) {
  const id = `user-${i.toString(36)}-${(i * 2654435761) >>> 0}`;
  contexts.push({ user_id: id, user_email: `person${i}@company${i % 500}.example.com` });
}
viaJson(contexts).forEach((c, i) => (contexts[i] = c));
const userIds: string[] = contexts.map((c) => c.user_id!);
const oneCtx: EvaluationContext = viaJson({ user_id: 'user-42', user_email: 'someone@example.com' });

// Baseline: Map.get over keys from an array, same indexing pattern as the cases.
const baselineMap = new Map<string, number>();
for (let i = 0; i < 1000; i++) baselineMap.set(userIds[i]!, i);
const baselineCase: Case = {
  name: 'baseline: one `Map.get` per iteration',
  opsPerIter: 1,
  run(n) {
    const map = baselineMap;
    const keys = userIds;
    let acc = 0;
    for (let i = 0; i < n; i++) {
      const v = map.get(keys[(i & 1023)]!);
      if (v !== undefined) acc += v;
    }
    return acc;
  },
};

/** The answer's enabled member per outcome code, as the server reads it. */
const ENABLED = Uint8Array.from(OUTCOMES, (outcome) => Number(outcome.enabled));

/** One flag compiled alone, evaluated as the server evaluates a set (evaluateInto), one code out. */
function compileFlag(def: FlagDefinition, options?: CompileOptions): CompiledFlagSet {
  return compileFlagSet([def], options);
}

function singleFlagCase(name: string, flag: CompiledFlagSet, ctxs: readonly EvaluationContext[]): Case {
  const mask = ctxs.length - 1; // power of two
  const codes = new Uint8Array(1);
  return {
    name,
    opsPerIter: 1,
    run(n) {
      let acc = 0;
      for (let i = 0; i < n; i++) {
        flag.evaluateInto(ctxs[i & mask]!, codes);
        acc += ENABLED[codes[0]!]!;
      }
      return acc;
    },
  };
}

const disabledFlag = compileFlag({
  key: 'disabled',
  enabled: false,
  rolloutPercentage: 50,
  rules: [{ type: 'user_id', value: 'user-42', enabled: true }],
});
const globalFlag = compileFlag({ key: 'global', enabled: true, rolloutPercentage: 0, rules: [] });
const rolloutFlag = compileFlag({ key: 'checkout_v2', enabled: true, rolloutPercentage: 50, rules: [] });

// 1,000 mixed rules; rollout 0 so a miss measures only the lookups + fallthrough.
const manyRules: RuleDefinition[] = [];
for (let i = 0; i < 1000; i++) {
  const type = RULE_TYPES[i % 3]!;
  const value = type === 'user_id' ? `rule-user-${i}` : type === 'user_email' ? `Rule.User${i}@Example.com` : `@domain${i}.example`;
  manyRules.push({ type, value, enabled: i % 10 !== 9 });
}
const manyRulesFlag = compileFlag({ key: 'many_rules', enabled: true, rolloutPercentage: 0, rules: manyRules });
// The same three lookups with one rule of each type: matching cost must not depend on the rule count.
const threeRulesFlag = compileFlag({ key: 'three_rules', enabled: true, rolloutPercentage: 0, rules: manyRules.slice(0, 3) });
let hitCtxs: EvaluationContext[] = [];
let missCtxs: EvaluationContext[] = [];
for (let i = 0; i < 1024; i++) {
  const r = i % 900; // enabled rules only (i % 10 !== 9)
  const idx = r + Math.floor(r / 9);
  const type = RULE_TYPES[idx % 3]!;
  hitCtxs.push(
    type === 'user_id'
      ? { user_id: `rule-user-${idx}`, user_email: `nobody${i}@nowhere.example` }
      : type === 'user_email'
        ? { user_id: `x${i}`, user_email: `rule.user${idx}@example.com` }
        : { user_id: `x${i}`, user_email: `someone${i}@domain${idx}.example` },
  );
  missCtxs.push({ user_id: `miss-${i}`, user_email: `miss${i}@nowhere${i}.example` });
}
hitCtxs = viaJson(hitCtxs);
missCtxs = viaJson(missCtxs);

// A 100-flag environment: a realistic mix, all evaluated for one user per iteration.
const envDefs: FlagDefinition[] = [];
for (let f = 0; f < 100; f++) {
  const kind = f % 5;
  const rules: RuleDefinition[] = [];
  if (kind === 3 || kind === 4) {
    for (let r = 0; r < 20; r++) {
      const type = RULE_TYPES[r % 3]!;
      rules.push({
        type,
        value: type === 'user_id' ? userIds[(f * 131 + r * 17) & MASK]! : type === 'user_email' ? `vip${r}@example.com` : `@partner${f}-${r}.example`,
        enabled: true,
      });
    }
  }
  envDefs.push({
    key: `env_flag_${f}`,
    enabled: kind !== 0,
    rolloutPercentage: kind === 2 || kind === 4 ? (f * 7) % 100 : 0,
    rules,
  });
}
const envSet = compileFlagSet(envDefs);
const envCase: Case = {
  name: '100-flag environment, one user (per flag eval)',
  opsPerIter: envSet.size,
  run(n) {
    const codes = new Uint8Array(envSet.size);
    let acc = 0;
    for (let i = 0; i < n; i++) {
      envSet.evaluateInto(contexts[i & MASK]!, codes);
      acc += codes[i % codes.length]!;
    }
    return acc;
  },
};

// ---------------------------------------------------------------------------
// Conditions (docs/targeting.md): one flag with one condition per operator, over 1,024
// contexts whose attribute values vary (about half of them match), so that the engine's
// one-entry parse memos miss as they do from one request to the next.
// ---------------------------------------------------------------------------

const pickOf = <T>(items: readonly T[], i: number): T => items[(i * 2654435761) % items.length]!;
const attrContexts: EvaluationContext[] = viaJson(
  Array.from({ length: 1024 }, (_, i) => ({
    user_id: `user-${i}`,
    user_email: `person${i}@${pickOf(['corp.example', 'Partner3.example', 'gmail.com', 'corp.example.org'], i)}`,
    custom_attributes: {
      plan: pickOf(['free', 'pro', 'Enterprise', 'team', 'enterprise-plus'], i),
      account: `account-${(i * 7) % 2000}`,
      age: pickOf([17, 18, 25, 40, 65, '33', 'n/a'], i),
      signup: pickOf(['2024-03-01T10:00:00Z', '2025-07-15', '2026-01-01T00:00:00+01:00', '2023-12-31'], i),
      app_version: pickOf(['2.3.9', '2.4.0', '2.4.1', '2.10.0', '2.4.0-beta.1', '1.9.0', '3.0.0'], i),
      ip: pickOf(['10.1.2.3', '192.168.4.5', '203.0.113.9', '::ffff:10.9.8.7', '2001:db8::17'], i),
      beta: i % 3 === 0,
    },
  })),
);
const segments = new Map<string, readonly Condition[]>([
  ['enterprise', [{ attribute: 'plan', operator: 'STR_STARTS_WITH', values: ['enterprise'], case_insensitive: true }]],
  ['beta_testers', [{ attribute: 'beta', operator: 'IN', values: ['true'] }]],
]);
const thousandAccounts = Array.from({ length: 1000 }, (_, i) => `account-${i * 2}`);
const tenThousandAccounts = Array.from({ length: 10_000 }, (_, i) => `account-${i * 2}`);
const operatorConditions: [string, Condition][] = [
  ['IN, 5 values', { attribute: 'plan', operator: 'IN', values: ['pro', 'team', 'x', 'y', 'z'] }],
  ['IN, 1,000 values', { attribute: 'account', operator: 'IN', values: thousandAccounts }],
  ['IN, 10,000 values', { attribute: 'account', operator: 'IN', values: tenThousandAccounts }],
  ['IN, 5 values, case_insensitive', { attribute: 'plan', operator: 'IN', values: ['PRO', 'Team', 'x', 'y', 'z'], case_insensitive: true }],
  ['NOT_IN, 5 values', { attribute: 'plan', operator: 'NOT_IN', values: ['pro', 'team', 'x', 'y', 'z'] }],
  ['STR_CONTAINS', { attribute: 'plan', operator: 'STR_CONTAINS', values: ['prise'] }],
  ['STR_STARTS_WITH', { attribute: 'plan', operator: 'STR_STARTS_WITH', values: ['Ent', 'te'] }],
  ['STR_ENDS_WITH, case_insensitive', { attribute: 'user_email', operator: 'STR_ENDS_WITH', values: ['@CORP.EXAMPLE'], case_insensitive: true }],
  ['NUM_EQ', { attribute: 'age', operator: 'NUM_EQ', values: ['18'] }],
  ['NUM_GT', { attribute: 'age', operator: 'NUM_GT', values: ['30'] }],
  ['NUM_GTE', { attribute: 'age', operator: 'NUM_GTE', values: ['30'] }],
  ['NUM_LT', { attribute: 'age', operator: 'NUM_LT', values: ['30'] }],
  ['NUM_LTE', { attribute: 'age', operator: 'NUM_LTE', values: ['30'] }],
  ['DATE_AFTER', { attribute: 'signup', operator: 'DATE_AFTER', values: ['2025-01-01'] }],
  ['DATE_BEFORE', { attribute: 'signup', operator: 'DATE_BEFORE', values: ['2025-01-01T00:00:00Z'] }],
  ['DATE_AFTER on current_time (the clock)', { attribute: 'current_time', operator: 'DATE_AFTER', values: ['2025-01-01'] }],
  ['SEMVER_EQ', { attribute: 'app_version', operator: 'SEMVER_EQ', values: ['2.4.0'] }],
  ['SEMVER_GT', { attribute: 'app_version', operator: 'SEMVER_GT', values: ['2.4.0'] }],
  ['SEMVER_GTE', { attribute: 'app_version', operator: 'SEMVER_GTE', values: ['2.4.0'] }],
  ['SEMVER_LT', { attribute: 'app_version', operator: 'SEMVER_LT', values: ['2.4.0'] }],
  ['SEMVER_LTE', { attribute: 'app_version', operator: 'SEMVER_LTE', values: ['2.4.0'] }],
  ['REGEX', { attribute: 'user_email', operator: 'REGEX', values: ['@(corp|partner[0-9])\\.example$'] }],
  ['REGEX, case_insensitive', { attribute: 'user_email', operator: 'REGEX', values: ['@(corp|partner[0-9])\\.example$'], case_insensitive: true }],
  ['IN_CIDR, 2 ranges', { attribute: 'ip', operator: 'IN_CIDR', values: ['10.0.0.0/8', '2001:db8::/32'] }],
  ['EXISTS', { attribute: 'beta', operator: 'EXISTS' }],
  ['IN_SEGMENT, 2 segments', { operator: 'IN_SEGMENT', values: ['enterprise', 'beta_testers'] }],
];
const conditionsFlag = (key: string, conditions: Condition[]): FlagDefinition => ({
  key,
  enabled: true,
  rolloutPercentage: 0,
  everyoneElse: 'off',
  rules: [{ type: 'conditions', value: '', enabled: true, conditions }],
});
const operatorCases: Case[] = operatorConditions.map(([name, condition]) => {
  const problem = conditionProblem(condition, name);
  if (problem !== null) throw new Error(problem);
  const flag = compileFlag(conditionsFlag(`op_${name}`, [condition]), { environment: 'production', segments });
  const codes = new Uint8Array(1);
  let matched = 0;
  for (const ctx of attrContexts) {
    flag.evaluateInto(ctx, codes);
    matched += ENABLED[codes[0]!]!;
  }
  return singleFlagCase(`condition ${name} (${Math.round((matched / attrContexts.length) * 100)}% match)`, flag, attrContexts);
});

// The conditions environment: 100 flags, each with one rule of 3 conditions (a 1,000-value IN, a
// SEMVER_GTE, a REGEX), everyone else off. About half the contexts pass the IN of a flag.
const conditionsEnvDefs: FlagDefinition[] = Array.from({ length: 100 }, (_, f) =>
  conditionsFlag(`cond_flag_${f}`, [
    { attribute: 'account', operator: 'IN', values: Array.from({ length: 1000 }, (_, i) => `account-${(i * 2 + f) % 2000}`) },
    { attribute: 'app_version', operator: 'SEMVER_GTE', values: [`2.${f % 5}.0`] },
    { attribute: 'user_email', operator: 'REGEX', values: [`@(corp|partner${f % 10})\\.example$`], case_insensitive: true },
  ]),
);
const conditionsEnvSet = compileFlagSet(conditionsEnvDefs, { environment: 'production', segments });
const conditionsEnvCase: Case = {
  name: '100 flags × a 3-condition rule (1,000-value IN, SEMVER_GTE, REGEX), one user (per flag eval)',
  opsPerIter: conditionsEnvSet.size,
  run(n) {
    const codes = new Uint8Array(conditionsEnvSet.size);
    let acc = 0;
    for (let i = 0; i < n; i++) {
      conditionsEnvSet.evaluateInto(attrContexts[i & 1023]!, codes);
      acc += ENABLED[codes[i % codes.length]!]!;
    }
    return acc;
  },
};

// The variants environment: 100 flags as the wrk bench's variants case has them (off, on, 50% rollout, a rule),
// every second one serving one of three variants by weight.
const variantsEnvDefs: FlagDefinition[] = Array.from({ length: 100 }, (_, f) => ({
  key: `variant_flag_${f}`,
  enabled: f % 4 !== 0,
  rolloutPercentage: f % 4 === 2 ? 50 : 0,
  rules: f % 4 === 3 ? [{ type: 'user_id' as const, value: `vip-${f}`, enabled: true }] : [],
  ...(f % 2 === 1
    ? {
        variants: [
          { key: 'control', value: `Button ${f}`, weight: 500 },
          { key: 'bold', value: `BUTTON ${f}!`, weight: 300 },
          { key: 'quiet', value: `button ${f}`, weight: 200 },
        ],
        offVariant: 'control',
      }
    : {}),
}));
const variantsEnvSet = compileFlagSet(variantsEnvDefs, { environment: 'production' });
const variantsEnvCase: Case = {
  name: '100 flags, half with three variants by weight, distinct users (per flag eval, variants written)',
  opsPerIter: variantsEnvSet.size,
  run(n) {
    const codes = new Uint8Array(variantsEnvSet.size);
    const variants = new Uint8Array(variantsEnvSet.size);
    let acc = 0;
    for (let i = 0; i < n; i++) {
      variantsEnvSet.evaluateInto(contexts[i & 1023]!, codes, variants);
      acc += variants[i % variants.length]!;
    }
    return acc;
  },
};

// Prerequisites (docs/prerequisites.md). One flag with three, one of them chained (its parent has
// one of its own), read alone with evaluateFlag: its ancestors are evaluated first, each once. An
// engine without prerequisites (BENCH_ENGINE, a "before") ignores them: the same flags, stage 2 left out.
const prerequisiteDefs: FlagDefinition[] = [
  { key: 'payments', enabled: true, rolloutPercentage: 0, rules: [] },
  { key: 'region', enabled: true, rolloutPercentage: 50, rules: [] },
  { key: 'root', enabled: true, rolloutPercentage: 0, rules: [{ type: 'user_id', value: 'user-42', enabled: true }] },
  { key: 'chained', enabled: true, rolloutPercentage: 80, rules: [], prerequisites: [{ flagKey: 'root' }] },
  { key: 'checkout', enabled: true, rolloutPercentage: 30, rules: [], prerequisites: [{ flagKey: 'payments' }, { flagKey: 'region' }, { flagKey: 'chained' }] },
] as FlagDefinition[];
const prerequisiteSet = compileFlagSet(prerequisiteDefs);
const checkoutIndex = prerequisiteSet.keys.indexOf('checkout');
const prerequisiteCase: Case = {
  name: 'a flag with 3 prerequisites (one chained), alone, distinct user ids',
  opsPerIter: 1,
  run(n) {
    let acc = 0;
    for (let i = 0; i < n; i++) acc += prerequisiteSet.evaluateFlag(contexts[i & MASK]!, checkoutIndex) & 255;
    return acc;
  },
};

// The 100-flag environment above with a third of its flags depending on another (every third on
// the flag before it, which for some has its own: chains of two).
const dependentEnvDefs: FlagDefinition[] = envDefs.map((def, f) => (f % 3 === 2 ? { ...def, prerequisites: [{ flagKey: envDefs[f - 1]!.key }] } : def)) as FlagDefinition[];
const dependentEnvSet = compileFlagSet(dependentEnvDefs);
const dependentEnvCase: Case = {
  name: '100-flag environment, a third depending on another, one user (per flag eval)',
  opsPerIter: dependentEnvSet.size,
  run(n) {
    const codes = new Uint8Array(dependentEnvSet.size);
    let acc = 0;
    for (let i = 0; i < n; i++) {
      dependentEnvSet.evaluateInto(contexts[i & MASK]!, codes);
      acc += codes[i % codes.length]!;
    }
    return acc;
  },
};

// A parent that is always off (disabled), and a chain of 5 links all met (docs/prerequisites.md):
// the child alone with evaluateFlag (the dashboard's Try it, OFREP single), and an environment in
// which a fifth of the flags need a disabled flag and another fifth a flag on a rollout.
const offParentSet = compileFlagSet([
  { key: 'payments', enabled: false, rolloutPercentage: 0, rules: [] },
  { key: 'checkout', enabled: true, rolloutPercentage: 30, rules: [{ type: 'user_id', value: 'user-42', enabled: true }], prerequisites: [{ flagKey: 'payments' }] },
] as FlagDefinition[]);
const offParentCase: Case = {
  name: 'a flag whose parent is disabled, alone, distinct user ids',
  opsPerIter: 1,
  run(n) {
    let acc = 0;
    for (let i = 0; i < n; i++) acc += offParentSet.evaluateFlag(contexts[i & MASK]!, 1) & 255;
    return acc;
  },
};
const chainDefs = Array.from({ length: 6 }, (_, f) => ({
  key: `link_${f}`,
  enabled: true,
  rolloutPercentage: f === 5 ? 30 : 100,
  rules: [{ type: 'user_id', value: `vip-${f}`, enabled: true }],
  ...(f > 0 ? { prerequisites: [{ flagKey: `link_${f - 1}` }] } : {}),
})) as FlagDefinition[];
const chainSet = compileFlagSet(chainDefs);
const chainCase: Case = {
  name: 'a chain of 5 links, all met, the last alone, distinct user ids',
  opsPerIter: 1,
  run(n) {
    let acc = 0;
    for (let i = 0; i < n; i++) acc += chainSet.evaluateFlag(contexts[i & MASK]!, 5) & 255;
    return acc;
  },
};
const offParentEnvDefs: FlagDefinition[] = envDefs.map((def, f) => (f % 5 === 1 || f % 5 === 3 ? { ...def, prerequisites: [{ flagKey: envDefs[f - 1]!.key }] } : def)) as FlagDefinition[];
const offParentEnvSet = compileFlagSet(offParentEnvDefs);
const offParentEnvCase: Case = {
  name: '100-flag environment, a fifth needing a disabled flag, a fifth a rollout, one user (per flag eval)',
  opsPerIter: offParentEnvSet.size,
  run(n) {
    const codes = new Uint8Array(offParentEnvSet.size);
    let acc = 0;
    for (let i = 0; i < n; i++) {
      offParentEnvSet.evaluateInto(contexts[i & MASK]!, codes);
      acc += codes[i % codes.length]!;
    }
    return acc;
  },
};

const cases: Case[] = [
  singleFlagCase('disabled flag', disabledFlag, [oneCtx]),
  singleFlagCase('enabled flag, no rules', globalFlag, [oneCtx]),
  singleFlagCase('50% rollout, distinct user ids', rolloutFlag, contexts),
  singleFlagCase('1,000 mixed rules, hit', manyRulesFlag, hitCtxs),
  singleFlagCase('1,000 mixed rules, miss (3 lookups, then enabled globally)', manyRulesFlag, missCtxs),
  singleFlagCase('3 rules (one per type), miss', threeRulesFlag, missCtxs),
  envCase,
  ...operatorCases,
  conditionsEnvCase,
  variantsEnvCase,
  prerequisiteCase,
  dependentEnvCase,
  offParentCase,
  chainCase,
  offParentEnvCase,
];

// ---------------------------------------------------------------------------
// Run
// ---------------------------------------------------------------------------

// Run every case briefly first so shared call sites (e.g. `flag.evaluate`) see
// all the closure kinds, as in a server evaluating mixed flags; otherwise the
// first case measured would get a monomorphic, inlined call nobody gets in prod.
for (const c of [baselineCase, ...cases]) sink += c.run(20_000);

// How often the conditions environment's rules serve (so the figure can be judged): not timed.
const conditionsEnvServed = (() => {
  const codes = new Uint8Array(conditionsEnvSet.size);
  let served = 0;
  for (const ctx of attrContexts) {
    conditionsEnvSet.evaluateInto(ctx, codes);
    for (const code of codes) served += ENABLED[code]!;
  }
  return ((served / (attrContexts.length * conditionsEnvSet.size)) * 100).toFixed(0);
})();

const before = measure(baselineCase);
const results = cases.map(measure);
const after = measure(baselineCase);
const baselineNs = (before.nsPerOp + after.nsPerOp) / 2;
const baseline: Measurement = { name: baselineCase.name, opsPerSec: 1e9 / baselineNs, nsPerOp: baselineNs };

const fmtInt = (x: number): string => Math.round(x).toLocaleString('en-US');
const fmtNs = (x: number): string => (x < 10 ? x.toFixed(2) : x < 100 ? x.toFixed(1) : x.toFixed(0));

const lines = [
  `Node ${process.version}, ${process.platform}/${process.arch}, ~${Number(TARGET_NS) / 1e6} ms per case`,
  '',
  '| case | evals/s | ns/eval | cost vs Map.get |',
  '|---|---:|---:|---:|',
  ...[baseline, ...results].map(
    (m) => `| ${m.name} | ${fmtInt(m.opsPerSec)} | ${fmtNs(m.nsPerOp)} | ${(m.nsPerOp / baselineNs).toFixed(2)}× |`,
  ),
  '',
  `Baseline measured before and after the cases: ${fmtNs(before.nsPerOp)} ns and ${fmtNs(after.nsPerOp)} ns per Map.get (averaged).`,
  `100-flag environment: ${fmtNs((results[cases.indexOf(envCase)]!.nsPerOp * envSet.size) / 1000)} µs per user.`,
  `100 flags with a 3-condition rule each: ${fmtNs((results[cases.indexOf(conditionsEnvCase)]!.nsPerOp * conditionsEnvSet.size) / 1000)} µs per user` +
    ` (rules served ${conditionsEnvServed}% of the flag evaluations).`,
  `100 flags, half with variants: ${fmtNs((results[cases.indexOf(variantsEnvCase)]!.nsPerOp * variantsEnvSet.size) / 1000)} µs per user.`,
  `100 flags, a third depending on another: ${fmtNs((results[cases.indexOf(dependentEnvCase)]!.nsPerOp * dependentEnvSet.size) / 1000)} µs per user.`,
];
console.log(lines.join('\n'));
if (sink === 0.5) console.log(''); // keep `sink` observable
