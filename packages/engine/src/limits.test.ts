/**
 * What a flag may hold, so that evaluating it for any context stays bounded (docs/targeting.md,
 * "What a flag may cost"): the limits are checked at save by conditionProblem, flagProblem and
 * segmentProblem; patterns compile once; a set compiled from what was stored before the limits
 * matches nobody with a pattern they refuse. Times are the bench's (worst-case.bench.ts), not here.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { COSTS, FLAG_LIMITS, OUTCOMES, PATTERN_LIMITS, Patterns, compileFlagSet, conditionProblem, flagProblem, segmentProblem } from './index.js';
import type { Condition, FlagDefinition, RuleDefinition } from './index.js';
import { MAX_PROGRAM, searchCost } from './operators.js';
import { CompiledPattern } from './patterns.js';
import { RE2JS } from 're2js';

const regex = (values: string[], extra: Partial<Condition> = {}): Condition => ({ attribute: 'text', operator: 'REGEX', values, ...extra });
const rule = (conditions: Condition[]): RuleDefinition => ({ type: 'conditions', value: '', enabled: true, conditions });

test('REGEX: at most 10 patterns a condition, each at most MAX_PROGRAM instructions; counted before any is compiled', () => {
  const review = Array.from({ length: 20 }, (_, i) => `(?:\\pL|\\pN){${901 + i}}`);
  assert.equal(conditionProblem(regex(review), 'conditions[0]'), 'conditions[0] (REGEX): at most 10 values');
  assert.equal(conditionProblem(regex(review.slice(0, 10)), 'conditions[0]')?.startsWith(`conditions[0] (REGEX): "(?:\\pL|\\pN){901}" compiles to 903 instructions, over the ${MAX_PROGRAM} a pattern may have`), true);
  const patterns = new Patterns();
  const copies = Array.from({ length: 10_000 }, () => '(?:\\pL|\\pN){999}');
  assert.equal(conditionProblem(regex(copies), 'conditions[3]', { patterns }), 'conditions[3] (REGEX): at most 10 values');
  assert.equal(patterns.compilations, 0, 'refused by count before compiling');
  // a{n} compiles to n + 2 instructions.
  const largest = `a{${MAX_PROGRAM - 2}}`;
  const smaller = `a{${MAX_PROGRAM - 3}}`;
  assert.equal(conditionProblem(regex(Array.from({ length: 10 }, () => largest)), 'conditions[0]', { patterns }), null);
  assert.equal(conditionProblem(regex([smaller, largest, smaller]), 'conditions[1]', { patterns }), null);
  assert.equal(patterns.compilations, 2, 'identical patterns compiled once per save, across conditions');
  assert.match(conditionProblem(regex([`a{${MAX_PROGRAM - 1}}`]), 'conditions[0]') ?? '', new RegExp(`compiles to ${MAX_PROGRAM + 1} instructions, over the ${MAX_PROGRAM}`));
});

test('STR_ operators take at most 100 values; IN, NOT_IN and IN_CIDR keep 10,000', () => {
  const values = (n: number) => Array.from({ length: n }, (_, i) => `v${i}`);
  for (const operator of ['STR_CONTAINS', 'STR_STARTS_WITH', 'STR_ENDS_WITH'] as const) {
    assert.equal(conditionProblem({ attribute: 'a', operator, values: values(100) }, 'c'), null);
    assert.equal(conditionProblem({ attribute: 'a', operator, values: values(101) }, 'c'), `c (${operator}): at most 100 values`);
  }
  for (const operator of ['IN', 'NOT_IN'] as const) assert.equal(conditionProblem({ attribute: 'a', operator, values: values(10_000) }, 'c'), null);
  assert.equal(conditionProblem({ attribute: 'a', operator: 'IN_CIDR', values: Array.from({ length: 10_000 }, (_, i) => `10.${i >> 8}.${i & 255}.0/24`) }, 'c'), null);
});

test('a flag: at most 100 rules, 256 KiB of conditions, and what its conditions may cost within the budget', () => {
  const segments = new Map<string, Condition[]>();
  const seeds = Array.from({ length: 100 }, (_, i): RuleDefinition => ({ type: 'user_id', value: `u${i}`, enabled: true }));
  assert.equal(flagProblem(seeds, segments), null);
  assert.equal(flagProblem([...seeds, seeds[0]!], segments), 'A flag has at most 100 rules (this one would have 101)');

  const big = { attribute: 'account', operator: 'IN' as const, values: Array.from({ length: 10_000 }, (_, i) => `account-number-${i}`) };
  assert.equal(flagProblem([rule([big])], segments), null);
  assert.match(flagProblem([rule([big]), rule([{ ...big, attribute: 'other' }])], segments) ?? '', /^The conditions of a flag's rules take at most 256 KiB as JSON \(these take \d+ KiB\)$/);

  // The review's third reproduction, within today's per-condition limit: 30 negated STR_CONTAINS of 100 values.
  const contains = Array.from({ length: 30 }, (_, i): Condition => ({ attribute: `a${i}`, operator: 'STR_CONTAINS', values: Array.from({ length: 100 }, (_, k) => `needle-${k}`), negate: true }));
  assert.match(flagProblem([rule(contains)], segments) ?? '', /^The flag's conditions may cost up to [\d.]+ ms to evaluate for one context; at most 1\.00 ms is allowed \(the costliest: STR_CONTAINS on a\d+, [\d.]+ ms\)/);
  assert.equal(flagProblem([rule(contains.slice(0, 2))], segments), null);

  // Repeating a condition costs nothing more (a set tests it once per context); a segment counts once.
  const pattern = regex(['^(?:a|b)*a(?:a|b){30}$']);
  assert.ok(COSTS.condition + searchCost(new CompiledPattern(RE2JS.compile('^(?:a|b)*a(?:a|b){30}$'))) < FLAG_LIMITS.costNs / 2);
  assert.equal(flagProblem(Array.from({ length: 50 }, () => rule([pattern])), segments), null);
  const inSegment: Condition = { operator: 'IN_SEGMENT', values: ['heavy'] };
  segments.set('heavy', [regex(['(?:a|b)*a(?:a|b){60}'])]);
  assert.equal(flagProblem([rule([inSegment]), rule([inSegment])], segments), null);
  segments.set('heavier', [regex(['(?:a|b)*a(?:a|b){61}'])]);
  assert.match(flagProblem([rule([inSegment]), rule([{ operator: 'IN_SEGMENT', values: ['heavier'] }])], segments) ?? '', /may cost up to/, 'two costly segments together');
});

test('the largest pattern a condition may hold fits a flag alone; a segment is held to the same limits', () => {
  assert.ok(COSTS.condition + searchCost(new CompiledPattern(RE2JS.compile(`a{${MAX_PROGRAM - 2}}`))) + COSTS.condition <= FLAG_LIMITS.costNs);
  assert.equal(segmentProblem([regex(['(?:a|b)*a(?:a|b){60}'])]), null);
  assert.match(segmentProblem([regex(['(?:a|b)*a(?:a|b){60}']), regex(['(?:a|b)*b(?:a|b){60}'])]) ?? '', /^The segment's conditions may cost up to/);
  const big = { attribute: 'account', operator: 'IN' as const, values: Array.from({ length: 10_000 }, (_, i) => `account-number-${i}-of-the-list`) };
  assert.match(segmentProblem([big]) ?? '', /^A segment's conditions take at most 256 KiB as JSON/);
});

test('a flag set compiles each distinct pattern once, and bounds its search cache', () => {
  const conditions = [regex(['^beta-[0-9]+$', '^beta-[0-9]+$']), regex(['^beta-[0-9]+$'], { negate: true })];
  const defs: FlagDefinition[] = ['f', 'g'].map((key) => ({ key, enabled: true, rolloutPercentage: 0, everyoneElse: 'off', rules: [rule(conditions.slice(0, 1)), rule(conditions)] }));
  const set = compileFlagSet(defs);
  assert.equal(set.patternCount, 1);
  assert.equal(OUTCOMES[set.evaluateFlag({ custom_attributes: { text: 'beta-7' } }, 1)]!.enabled, true);
  const compiled = new CompiledPattern(RE2JS.compile('(?:\\pL|\\pN){5}'));
  assert.equal(compiled.regex.re2Input.dfa.maxMem, PATTERN_LIMITS.dfaBytes, 'the DFA cache is bounded');
  assert.equal(compiled.dfa, false, 'large Unicode classes search with the NFA only');
  assert.equal(new CompiledPattern(RE2JS.compile('^[a-z]+$')).dfa, true);
});

test('a set compiled from what was stored before the limits: a pattern over MAX_PROGRAM matches nobody, the others still do', () => {
  const def: FlagDefinition = { key: 'old', enabled: true, rolloutPercentage: 0, everyoneElse: 'off', rules: [rule([regex(['(?:\\pL|\\pN){901}', '^ok$'])])] };
  const set = compileFlagSet([def]);
  assert.equal(OUTCOMES[set.evaluateFlag({ custom_attributes: { text: 'é'.repeat(901) } }, 0)]!.enabled, false);
  assert.equal(OUTCOMES[set.evaluateFlag({ custom_attributes: { text: 'ok' } }, 0)]!.enabled, true);
  const alone = compileFlagSet([{ ...def, rules: [rule([regex(['(?:\\pL|\\pN){901}'], { negate: true })])] }]);
  assert.equal(OUTCOMES[alone.evaluateFlag({ custom_attributes: { text: 'x' } }, 0)]!.enabled, true, 'a condition left with no pattern is false; negated, true');
});

/** A pattern as a condition compiles it. */
const compiled = (pattern: string, caseInsensitive = false) => new CompiledPattern(RE2JS.compile(pattern, caseInsensitive ? RE2JS.CASE_INSENSITIVE : 0));
/** The general bound (every character a DFA state or an NFA step over every instruction): what searchCost never exceeds. */
const general = (pattern: CompiledPattern) => 1024 * (COSTS.searchPerCharacter + (pattern.dfa ? COSTS.searchPerStep : COSTS.nfaSearchPerStep) * pattern.size);

test("REGEX cost: ten anchored literals (^ab0c$ … ^ab9c$) are one condition a flag may hold, as the 10 values a REGEX condition allows", () => {
  const ten = regex(Array.from({ length: 10 }, (_, i) => `^ab${i}c$`));
  assert.equal(conditionProblem(ten, 'conditions[0]'), null);
  assert.equal(flagProblem([rule([ten])], new Map()), null);
  // Case-insensitive, and with literals of every shape beside them.
  assert.equal(flagProblem([rule([{ ...ten, case_insensitive: true }, regex(['ab0c', '^(?:alpha|beta|gamma)$', '^user-[0-9]{1,6}$'])])], new Map()), null);
});

test('REGEX cost: what may cost over 1 ms is still refused (counted repetitions, Unicode classes, many alternations, costly patterns together)', () => {
  assert.match(conditionProblem(regex(['(?:\\pL|\\pN){999}']), 'c') ?? '', /instructions, over the/);
  assert.match(conditionProblem(regex(['[a-z]{200}']), 'c') ?? '', /instructions, over the/);
  assert.match(conditionProblem(regex([`(?:${Array.from({ length: 60 }, (_, i) => `w${i}x`).join('|')})`]), 'c') ?? '', /instructions, over the/);
  // Under MAX_PROGRAM, refused by the flag's budget: re2js's NFA over Unicode classes, DFAs that multiply, together.
  for (const patterns of [['(?:\\pL|\\pN){25}!'], ['[a-z]{78}', '[a-z]{77}!'], Array.from({ length: 4 }, (_, v) => `(?:a|b)*a(?:a|b){20}${'c'.repeat(v)}`)]) {
    assert.equal(conditionProblem(regex(patterns), 'c'), null, patterns.join(' '));
    assert.match(flagProblem([rule([regex(patterns)])], new Map()) ?? '', /may cost up to/, patterns.join(' '));
  }
});

test("REGEX cost: a pattern's shape follows re2js's path (a literal, one-pass, anchored, the longest match)", () => {
  assert.deepEqual({ ...compiled('ab0c').shape, classes: 0 }, { literal: true, scans: 1, anchored: false, longest: 4, onepass: false, classes: 0 });
  assert.deepEqual({ ...compiled('^ab0c$').shape, classes: 0 }, { literal: false, scans: 1, anchored: true, longest: 4, onepass: true, classes: 0 });
  assert.equal(compiled('^(?:alpha|beta)$').shape.scans, 4, 'an OR of literals: one Aho–Corasick pass, costed as four');
  assert.equal(compiled('^a[b-d]{2,5}$').shape.longest, 6);
  for (const loop of ['^a*b', '^(?:ab)+$', '^a{2,}$', '^.*$']) assert.equal(compiled(loop).shape.longest, Infinity, loop);
  assert.equal(compiled('(?m)^ab$').shape.anchored, false, 'a line start is not the text start');
  assert.equal(compiled('^\\pL+$').shape.onepass, true);
});

test('REGEX cost: never above the general bound; a pattern that contains another costs at least as much; a loop or a lost anchor never lowers it', () => {
  const corpus = ['^ab0c$', 'ab0c', '^(?:alpha|beta)$', '^[a-z]+$', '^user-[0-9]{1,6}$', '^(?:ab|a)(?:bc|c)d$', '@(corp|partner[0-9])\\.example$', '(?:a|b)*a(?:a|b){20}', '^\\pL+$', '(?:\\pL|\\pN){25}!', '[a-z]{78}'];
  for (const pattern of corpus) for (const ci of [false, true]) {
    const p = compiled(pattern, ci);
    assert.ok(searchCost(p) <= general(p), pattern);
    assert.ok(searchCost(p) >= 1024 * Math.min(COSTS.searchPerCharacter, COSTS.scanPerCharacter), `${pattern}: at least a pass over the text`);
  }
  // Each pattern contains the one before it, anchored as it is.
  const chains = [
    ['^ab0c$', '^ab0c[a-z]$', '^ab0c[a-z]{2,9}$', '^ab0c[a-z]+$', '^(?:ab0c[a-z]+|x)$'],
    ['ab0c', 'ab0c[a-z]', 'ab0c[a-z]+', '(?:x|ab0c)[a-z]+'],
    ['^a$', '^(?:a|bc)$', '^(?:a|bc)(?:d|ef)$', '^(?:a|bc)(?:d|ef)*$'],
    ['^(?:ab|a)c$', '^(?:ab|a)(?:bc|c)d$', '^(?:ab|a)(?:bc|c)d+$'],
    ['^\\pL$', '^\\pL+$', '^(?:\\pL|\\pN)+!$'],
    ['\\pL', '\\pL+', '(?:\\pL|\\pN)+!'],
  ];
  for (const chain of chains) for (let i = 1; i < chain.length; i++) assert.ok(searchCost(compiled(chain[i]!)) >= searchCost(compiled(chain[i - 1]!)), `${chain[i]} ≥ ${chain[i - 1]}`);
  // The same pattern without its anchor, or with its repetition unbounded.
  for (const [cheaper, costlier] of [['^ab0c$', 'ab0c$'], ['^a[b-d]{2,5}$', '^a[b-d]{2,}$'], ['^ab0c$', '^ab0c+$'], ['^(?:ab|a)(?:bc|c)d$', '(?:ab|a)(?:bc|c)d$']] as const) assert.ok(searchCost(compiled(costlier)) >= searchCost(compiled(cheaper)), `${costlier} ≥ ${cheaper}`);
});
