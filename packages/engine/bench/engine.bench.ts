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
 * Optional env: BENCH_MS (target measured time per case, default 1000).
 */
import { compileFlagSet, OUTCOMES, RULE_TYPES } from '../src/index.js';
import type { CompiledFlagSet, EvaluationContext, FlagDefinition, RuleDefinition } from '../src/index.js';

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

function time(run: (n: number) => number, n: number): bigint {
  const t0 = process.hrtime.bigint();
  sink += run(n);
  return process.hrtime.bigint() - t0;
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
function compileFlag(def: FlagDefinition): CompiledFlagSet {
  return compileFlagSet([def]);
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

const cases: Case[] = [
  singleFlagCase('disabled flag', disabledFlag, [oneCtx]),
  singleFlagCase('enabled flag, no rules', globalFlag, [oneCtx]),
  singleFlagCase('50% rollout, distinct user ids', rolloutFlag, contexts),
  singleFlagCase('1,000 mixed rules, hit', manyRulesFlag, hitCtxs),
  singleFlagCase('1,000 mixed rules, miss (3 lookups, then enabled globally)', manyRulesFlag, missCtxs),
  singleFlagCase('3 rules (one per type), miss', threeRulesFlag, missCtxs),
  envCase,
];

// ---------------------------------------------------------------------------
// Run
// ---------------------------------------------------------------------------

// Run every case briefly first so shared call sites (e.g. `flag.evaluate`) see
// all the closure kinds, as in a server evaluating mixed flags; otherwise the
// first case measured would get a monomorphic, inlined call nobody gets in prod.
for (const c of [baselineCase, ...cases]) sink += c.run(20_000);

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
  `100-flag environment: ${fmtNs((results[results.length - 1]!.nsPerOp * envSet.size) / 1000)} µs per user.`,
];
console.log(lines.join('\n'));
if (sink === 0.5) console.log(''); // keep `sink` observable
