/**
 * The worst case the limits allow (docs/targeting.md, "What a flag may cost"): flags built to
 * cost the most that flagProblem still accepts, evaluated for their costliest contexts (1,024-
 * character attributes, a new one each evaluation so that no memo helps), in CPU time.
 *
 *   npx tsc -b packages/engine && node packages/engine/dist/bench/worst-case.bench.js
 *
 * Part one checks the cost table's unit figures (COSTS) against what they stand for, per family
 * of costly input: measured ÷ table must stay under 1 for the bound to hold. Part two measures
 * the costliest pattern, condition and flag per family: each must stay under 1 ms (FLAG_LIMITS).
 * BENCH_EVALUATIONS: evaluations per case (default 200).
 */
import { RE2JS } from 're2js';
import { CONDITION_LIMITS, COSTS, FLAG_LIMITS, compileFlagSet, conditionProblem, flagProblem } from '../src/index.js';
import type { Condition, EvaluationContext, FlagDefinition, RuleDefinition } from '../src/index.js';
import { MAX_PROGRAM, searchCost } from '../src/operators.js';
import { CompiledPattern } from '../src/patterns.js';

const EVALUATIONS = Number(process.env['BENCH_EVALUATIONS'] ?? 200);
const L = CONDITION_LIMITS.customAttributeLength;

/** CPU µs (user + system) of one call. */
function cpu(run: () => void): number {
  const start = process.cpuUsage();
  run();
  const { user, system } = process.cpuUsage(start);
  return user + system;
}

const quantile = (sorted: readonly number[], q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;

/** Deterministic text of L characters from an alphabet. */
function randomText(alphabet: readonly string[], seed: number): string {
  let x = seed >>> 0 || 1;
  let text = '';
  for (let i = 0; i < L; i++) {
    x = (Math.imul(x, 1103515245) + 12345) >>> 0;
    text += alphabet[(x >>> 8) % alphabet.length];
  }
  return text;
}
/** Runs of k − 1 of a character, each cut by `!`: a counted repetition that never completes. */
const runs = (character: string, k: number) => `${character.repeat(Math.max(1, k - 1))}!`.repeat(Math.ceil(L / k)).slice(0, L);

/** A family of costly patterns: the pattern for a size k, and a text it reads slowly (a new one per seed). */
interface Family {
  name: string;
  pattern: (k: number, variant: number) => string;
  text: (k: number, seed: number) => string;
}

const CLASS_OF_120 = `[${Array.from({ length: 120 }, (_, i) => String.fromCodePoint(0x100 + 2 * i)).join('')}]`;
const FAMILIES: Family[] = [
  { name: 'counted class, runs that never complete', pattern: (k, v) => `[a-z]{${k}}${'!'.repeat(v)}`, text: (k, seed) => runs('abcdefgh'[seed % 8]!, k) },
  { name: 'DFA that multiplies: (a|b)*a(a|b){k}', pattern: (k, v) => `(?:a|b)*a(?:a|b){${k}}${'c'.repeat(v)}`, text: (_k, seed) => randomText(['a', 'b'], seed) },
  { name: 'the same, case-insensitive', pattern: (k, v) => `(?i)(?:a|b)*a(?:a|b){${k}}${'c'.repeat(v)}`, text: (_k, seed) => randomText(['a', 'A', 'b', 'B'], seed) },
  { name: '(.*a){k}', pattern: (k, v) => `(?:.*a){${k}}${'c'.repeat(v)}`, text: (_k, seed) => randomText(['a', 'b'], seed) },
  { name: 'a class of 120 characters (243 DFA classes)', pattern: (k, v) => `(?:${CLASS_OF_120}|a)*a(?:${CLASS_OF_120}|a){${k}}${'c'.repeat(v)}`, text: (_k, seed) => randomText([...'ĀĂĄĆĈĊČĎ', 'a', 'a'], seed) },
  { name: 'Unicode classes (NFA): (\\pL|\\pN){k}', pattern: (k, v) => `(?:\\pL|\\pN){${k}}${'!'.repeat(v)}`, text: (k, seed) => runs('éжa1'[seed % 4]!, k) },
  { name: 'Unicode classes, case-insensitive (NFA)', pattern: (k, v) => `(?i)(?:\\pL|\\pN)*\\pL(?:\\pL|\\pN){${k}}x${'!'.repeat(v)}`, text: (_k, seed) => randomText(['a', 'é', '1'], seed) },
];

// ---------------------------------------------------------------------------
// Part one: the cost table's unit figures against measurements
// ---------------------------------------------------------------------------

interface Check {
  what: string;
  measured: number;
  table: number;
}
const checks: Check[] = [];

/** Median CPU ns of a search of a costly text, over fresh patterns (cold caches) and texts. */
function searchNs(family: Family, k: number): { ns: number; pattern: CompiledPattern } {
  const samples: number[] = [];
  let pattern!: CompiledPattern;
  for (let rep = 0; rep < 12; rep++) {
    pattern = new CompiledPattern(RE2JS.compile(family.pattern(k, 0)));
    const texts = [0, 1, 2, 3].map((j) => family.text(k, rep * 4 + j + 1));
    samples.push(cpu(() => texts.forEach((text) => pattern.regex.test(text))) / texts.length);
  }
  samples.sort((a, b) => a - b);
  return { ns: quantile(samples, 0.5) * 1000, pattern };
}

for (const family of FAMILIES) {
  for (const k of [3, 30, 90]) {
    const { ns, pattern } = searchNs(family, k);
    if (pattern.size > MAX_PROGRAM) continue;
    checks.push({ what: `REGEX ${family.name}, ${pattern.size} instructions (${pattern.dfa ? 'DFA' : 'NFA'})`, measured: ns, table: searchCost(pattern) });
  }
}

/** Keeps results observable, so that the JIT cannot drop the work. */
let sink = 0;
function unitNs(run: (i: number) => boolean, count: number): number {
  const samples: number[] = [];
  for (let rep = 0; rep < 20; rep++) samples.push(cpu(() => { for (let i = 0; i < count; i++) sink += run(i) ? 1 : 0; }) / count);
  samples.sort((a, b) => a - b);
  return quantile(samples, 0.5) * 1000;
}
/** Texts as a context brings them: parsed from JSON (flat strings). */
const viaJson = <T>(value: T): T => JSON.parse(JSON.stringify(value)) as T;
const haystacks = viaJson(Array.from({ length: 64 }, (_, i) => `${'ab'.repeat(L / 2 - 1)}a${'bc'[i % 2]}`));
for (const [shape, needle] of [['(ab)^255 then another letter', (i: number) => `${'ab'.repeat(255)}${String.fromCharCode(100 + (i % 20))}`], ['a^511 then another letter', (i: number) => `${'a'.repeat(511)}${String.fromCharCode(100 + (i % 20))}`]] as const) {
  const needles = viaJson(Array.from({ length: 100 }, (_, i) => needle(i)));
  checks.push({ what: `STR_CONTAINS, one value ${shape}, in a 1,024-character text`, measured: unitNs((i) => haystacks[i & 63]!.includes(needles[i % 100]!), 6400), table: COSTS.string });
}

// ---------------------------------------------------------------------------
// Part two: the costliest flags the limits allow
// ---------------------------------------------------------------------------

const rule = (conditions: Condition[]): RuleDefinition => ({ type: 'conditions', value: '', enabled: true, conditions });
const flagOf = (rules: RuleDefinition[]): FlagDefinition => ({ key: 'worst', enabled: true, rolloutPercentage: 0, everyoneElse: 'off', rules });

/** Whether the limits accept the flag: every condition, then the rules together. */
function allowed(rules: RuleDefinition[]): boolean {
  for (const each of rules) for (const condition of each.conditions ?? []) if (conditionProblem(condition, 'c') !== null) return false;
  return flagProblem(rules, new Map()) === null;
}

interface Row {
  name: string;
  /** CPU µs per evaluation: the first after a compile (the set's caches cold; median of ten compiles), then the median, 90th percentile and max of the rest. */
  first: number;
  median: number;
  p90: number;
  max: number;
}
const rows: Row[] = [];

function measureFlag(name: string, rules: RuleDefinition[], context: (i: number) => EvaluationContext): void {
  if (!allowed(rules)) throw new Error(`${name}: the limits refuse it (${flagProblem(rules, new Map())})`);
  // The first evaluation of a set compiled anew (a save does that: its caches are cold), ten
  // times; the process has run this code before, as a server has.
  compileFlagSet([flagOf(rules)]).evaluateFlag(context(0), 0);
  const firsts: number[] = [];
  for (let again = 1; again <= 10; again++) {
    const fresh = compileFlagSet([flagOf(rules)]);
    const ctx = context(again);
    firsts.push(cpu(() => fresh.evaluateFlag(ctx, 0)));
  }
  firsts.sort((a, b) => a - b);
  const first = quantile(firsts, 0.5);
  const set = compileFlagSet([flagOf(rules)]);
  const samples: number[] = [];
  for (let i = 1; i <= EVALUATIONS; i++) {
    const ctx = context(i);
    samples.push(cpu(() => set.evaluateFlag(ctx, 0)));
  }
  samples.sort((a, b) => a - b);
  rows.push({ name, first, median: quantile(samples, 0.5), p90: quantile(samples, 0.9), max: samples.at(-1)! });
}

/** The largest k (pattern size) for which `make(k)` is allowed. */
function largest(make: (k: number) => RuleDefinition[]): number {
  let k = 1;
  while (k < 400 && allowed(make(k + 1))) k++;
  return k;
}

for (const family of FAMILIES) {
  const textFor = (k: number) => (i: number): EvaluationContext => ({ custom_attributes: { text: family.text(k, i + 1) } });
  // The costliest pattern: one, as large as a flag may hold.
  const one = (k: number) => [rule([{ attribute: 'text', operator: 'REGEX', values: [family.pattern(k, 0)] }])];
  const k1 = largest(one);
  measureFlag(`REGEX ${family.name}: one pattern, k = ${k1}`, one(k1), textFor(k1));
  // The costliest condition: ten patterns (distinct) as large as they may be together.
  const ten = (k: number) => [rule([{ attribute: 'text', operator: 'REGEX', values: Array.from({ length: 10 }, (_, v) => family.pattern(k, v)) }])];
  const k10 = largest(ten);
  if (k10 >= 2) measureFlag(`REGEX ${family.name}: one condition of 10 patterns, k = ${k10}`, ten(k10), textFor(k10));
  // The costliest flag of small patterns: as many distinct small patterns as fit, ten a rule.
  const many = (n: number) => Array.from({ length: Math.ceil(n / 10) }, (_, c) => rule([{ attribute: 'text', operator: 'REGEX', values: Array.from({ length: Math.min(10, n - c * 10) }, (_, v) => family.pattern(2, c * 10 + v)) }]));
  let n = 1;
  while (n < 1000 && allowed(many(n + 1))) n++;
  measureFlag(`REGEX ${family.name}: ${n} small patterns, k = 2`, many(n), textFor(2));
}

// STR_CONTAINS, negated (every value is tried): as many 100-value conditions as fit, over 100 attributes.
{
  const values = (c: number) => Array.from({ length: 100 }, (_, v) => `${'ab'.repeat(255)}${String.fromCharCode(100 + ((c + v) % 20))}`);
  const conditions = (count: number) => Array.from({ length: count }, (_, c): Condition => ({ attribute: `a${c}`, operator: 'STR_CONTAINS', values: values(c), negate: true, case_insensitive: c % 2 === 0 }));
  let count = 1;
  while (allowed([rule(conditions(count + 1))])) count++;
  const context = (i: number): EvaluationContext => ({ custom_attributes: Object.fromEntries(Array.from({ length: count }, (_, c) => [`a${c}`, `${'ab'.repeat(L / 2 - 1)}a${'bc'[(i + c) % 2]}`])) });
  measureFlag(`STR_CONTAINS, negated: ${count} conditions of 100 values of 511 characters`, [rule(conditions(count))], context);
}

// IN_CIDR over IPv6 ranges that an IPv6 address is in none of.
{
  const ranges = (n: number) => Array.from({ length: n }, (_, i) => `2001:db8:${(i >> 8).toString(16)}:${(i & 255).toString(16)}::/64`);
  let n = 100;
  while (allowed([rule([{ attribute: 'ip', operator: 'IN_CIDR', values: ranges(n + 100) }])])) n += 100;
  measureFlag(`IN_CIDR: ${n} IPv6 ranges, an address in none`, [rule([{ attribute: 'ip', operator: 'IN_CIDR', values: ranges(n) }])], (i) => ({ custom_attributes: { ip: `2001:db9::${i.toString(16)}` } }));
}

// The most conditions: 100 rules of 30 IN conditions on 100 attributes, each rule failing at its last.
{
  const rules = Array.from({ length: 100 }, (_, r) => rule(Array.from({ length: 30 }, (_, c): Condition => ({ attribute: `a${(r + c) % 100}`, operator: 'IN', values: c === 29 ? [`never-${r}`] : [`v${r}-${c}`, 'yes', 'also'] }))));
  measureFlag('IN: 100 rules × 30 conditions, each rule failing at its last', rules, (i) => ({ custom_attributes: Object.fromEntries(Array.from({ length: 100 }, (_, a) => [`a${a}`, i % 2 === 0 ? 'yes' : 'also'])) }));
}

// ---------------------------------------------------------------------------
// Report
// ---------------------------------------------------------------------------

const fmt = (n: number) => (n < 10 ? n.toFixed(1) : Math.round(n).toLocaleString('en-US'));
const lines = [
  `Node ${process.version}, ${process.platform}/${process.arch}; CPU time; budget ${FLAG_LIMITS.costNs / 1e6} ms a flag`,
  '',
  'The cost table against measurements (median of fresh patterns and texts; must stay under 1):',
  '',
  '| unit | measured ns | table ns | measured ÷ table |',
  '|---|---:|---:|---:|',
  ...checks.map((c) => `| ${c.what} | ${fmt(c.measured)} | ${fmt(c.table)} | ${(c.measured / c.table).toFixed(2)} |`),
  '',
  `The costliest flags the limits accept, one evaluation each for the costliest context (µs of CPU; ${EVALUATIONS} evaluations):`,
  '',
  '| flag | first after a compile (median of 10) | median | 90th pct | max |',
  '|---|---:|---:|---:|---:|',
  ...rows.map((r) => `| ${r.name} | ${fmt(r.first)} | ${fmt(r.median)} | ${fmt(r.p90)} | ${fmt(r.max)} |`),
  '',
  `Worst median ${fmt(Math.max(...rows.map((r) => r.median)))} µs, worst 90th percentile ${fmt(Math.max(...rows.map((r) => r.p90)))} µs a flag (the max column holds pauses of a shared machine and the collector).`,
];
console.log(lines.join('\n'));
if (sink === 0.5) console.log(''); // keep `sink` observable
