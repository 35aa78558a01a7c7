import { test } from 'node:test';
import assert from 'node:assert/strict';
import { compileFlagSet, compilePrerequisites, codeOf, OUTCOMES, prerequisitesProblem, variantOf } from './index.js';
import type { EvaluationContext, FlagDefinition, PrerequisiteDefinition } from './index.js';

const flag = (key: string, more: Partial<FlagDefinition> = {}): FlagDefinition => ({ key, enabled: true, rolloutPercentage: 0, rules: [], ...more });
const needs = (flagKey: string, more: Partial<PrerequisiteDefinition> = {}): PrerequisiteDefinition => ({ flagKey, ...more });

/** The whole set's answer and each flag alone: they must agree; returns key → reason. */
function answers(defs: FlagDefinition[], ctx: EvaluationContext = { user_id: 'u1' }): Record<string, { enabled: boolean; reason: string; variant: string | null; prerequisite: string | null }> {
  const set = compileFlagSet(defs);
  const codes = new Uint8Array(set.size);
  const variants = new Uint8Array(set.size);
  set.evaluateInto(ctx, codes, variants);
  const plain = new Uint8Array(set.size);
  set.evaluateInto(ctx, plain);
  const out: Record<string, { enabled: boolean; reason: string; variant: string | null; prerequisite: string | null }> = {};
  defs.forEach((def, i) => {
    const packed = set.evaluateFlag(ctx, i);
    assert.equal(codeOf(packed), codes[i], `${def.key}: alone and in the set agree`);
    assert.equal(plain[i], codes[i], `${def.key}: with and without variants asked`);
    const answer = set.answer(ctx, i);
    assert.equal(answer.outcome.code, codes[i]);
    const v = set.variants[i]?.[variantOf(packed)]?.key ?? null;
    if (set.variants[i] !== null) assert.equal(variantOf(packed), variants[i]);
    out[def.key] = { enabled: OUTCOMES[codes[i]!]!.enabled, reason: set.reasonOf(i, codes[i]!), variant: v, prerequisite: answer.prerequisite };
    assert.equal(answer.reason, out[def.key]!.reason);
    if (answer.prerequisite !== null) assert.equal(answer.kind, 'PREREQUISITE_FAILED');
  });
  return out;
}

test('a met prerequisite leaves the flag to its rules', () => {
  const got = answers([flag('child', { prerequisites: [needs('parent')] }), flag('parent')]);
  assert.deepEqual(got.child, { enabled: true, reason: 'Flag enabled globally', variant: null, prerequisite: null });
});

test('an unmet prerequisite switches the flag off with its own reason, naming the first unmet', () => {
  const got = answers([flag('a'), flag('b', { enabled: false }), flag('c', { enabled: false }), flag('child', { prerequisites: [needs('a'), needs('b'), needs('c')] })]);
  assert.deepEqual(got.child, { enabled: false, reason: 'Prerequisite b not met', variant: null, prerequisite: 'b' });
});

test('required state off', () => {
  assert.equal(answers([flag('p', { enabled: false }), flag('c', { prerequisites: [needs('p', { enabled: false })] })]).c!.enabled, true);
  assert.equal(answers([flag('p'), flag('c', { prerequisites: [needs('p', { enabled: false })] })]).c!.reason, 'Prerequisite p not met');
});

test('a missing parent is not met', () => {
  assert.equal(answers([flag('c', { prerequisites: [needs('gone')] })]).c!.reason, 'Prerequisite gone not met');
});

test('a disabled flag is disabled before its prerequisites are consulted', () => {
  assert.equal(answers([flag('c', { enabled: false, prerequisites: [needs('gone')] })]).c!.reason, 'Flag is globally disabled');
});

test('chains: an unmet grandparent switches off the whole chain, each with its own parent named', () => {
  const chain = [flag('f5', { prerequisites: [needs('f4')] }), flag('f4', { prerequisites: [needs('f3')] }), flag('f3', { prerequisites: [needs('f2')] }), flag('f2', { prerequisites: [needs('f1')] }), flag('f1', { prerequisites: [needs('f0')] }), flag('f0')];
  const on = answers(chain);
  for (const key of ['f5', 'f4', 'f3', 'f2', 'f1']) assert.equal(on[key]!.enabled, true);
  chain[5] = flag('f0', { enabled: false });
  const off = answers(chain);
  assert.equal(off.f1!.reason, 'Prerequisite f0 not met');
  assert.equal(off.f5!.reason, 'Prerequisite f4 not met');
});

test('rollout parents: the child follows the parent per user', () => {
  const defs = [flag('child', { prerequisites: [needs('parent')] }), flag('parent', { rolloutPercentage: 50 })];
  for (let u = 0; u < 50; u++) {
    const got = answers(defs, { user_id: `user-${u}` });
    assert.equal(got.child!.enabled, got.parent!.enabled);
    if (!got.parent!.enabled) assert.equal(got.child!.reason, 'Prerequisite parent not met');
  }
});

test('variant-bound prerequisites, and the off variant of a child switched off', () => {
  const variants = [{ key: 'a', value: 'A', weight: 500 }, { key: 'b', value: 'B', weight: 500 }];
  const child = flag('child', { prerequisites: [needs('exp', { variants: ['b'] })], variants: [{ key: 'on', value: 1, weight: 1000 }, { key: 'off', value: 0, weight: 0 }], offVariant: 'off' });
  const defs = [child, flag('exp', { variants, offVariant: 'a' })];
  let seen = 0;
  for (let u = 0; u < 40; u++) {
    const got = answers(defs, { user_id: `user-${u}` });
    if (got.exp!.variant === 'b') {
      seen |= 1;
      assert.deepEqual([got.child!.enabled, got.child!.variant], [true, 'on']);
    } else {
      seen |= 2;
      assert.deepEqual([got.child!.enabled, got.child!.reason, got.child!.variant], [false, 'Prerequisite exp not met', 'off']);
    }
  }
  assert.equal(seen, 3);
  // A parent without variants never meets a variant-bound prerequisite.
  assert.equal(answers([flag('c', { prerequisites: [needs('p', { variants: ['x'] })] }), flag('p')]).c!.enabled, false);
});

test('each flag is evaluated once per context: one order, parents first, a diamond\'s top once', () => {
  const defs = [flag('d', { prerequisites: [needs('b'), needs('c')] }), flag('b', { prerequisites: [needs('a')] }), flag('c', { prerequisites: [needs('a')] }), flag('a')];
  const { dependents, closures } = compilePrerequisites(defs);
  const order = [...dependents].map((i) => defs[i]!.key);
  assert.equal(new Set(order).size, order.length);
  assert.ok(order.indexOf('b') < order.indexOf('d') && order.indexOf('c') < order.indexOf('d'));
  const closure = [...closures[0]!].map((i) => defs[i]!.key);
  assert.deepEqual([...closure].sort(), ['a', 'b', 'c', 'd']);
  assert.equal(closure[0], 'a');
  assert.equal(closure.at(-1), 'd');
});

test('a cycle in a set (never saved, but a ruleset may be hand-made) compiles: its links are never met', () => {
  const got = answers([flag('x', { prerequisites: [needs('y')] }), flag('y', { prerequisites: [needs('x')] })]);
  assert.equal(got.x!.enabled || got.y!.enabled, false);
});

test('the same answers after a seed rule serves a parent', () => {
  const defs = [flag('child', { prerequisites: [needs('parent')] }), flag('parent', { everyoneElse: 'off', rules: [{ type: 'user_id', value: 'vip', enabled: true }] })];
  assert.equal(answers(defs, { user_id: 'vip' }).child!.enabled, true);
  assert.equal(answers(defs, { user_id: 'other' }).child!.reason, 'Prerequisite parent not met');
});

test('what may be saved', () => {
  const v = [{ key: 'a' }, { key: 'b' }];
  const others = [{ key: 'p', variants: v }, { key: 'q', prerequisites: [needs('r')] }, { key: 'r' }];
  assert.equal(prerequisitesProblem({ key: 'c', prerequisites: [needs('p'), needs('missing')] }, others), null);
  assert.match(prerequisitesProblem({ key: 'c', prerequisites: [needs('c')] }, others)!, /own prerequisite \(c → c\)/);
  assert.match(prerequisitesProblem({ key: 'c', prerequisites: [needs('p', { variants: ['z'] })] }, others)!, /no variant "z"/);
  assert.match(prerequisitesProblem({ key: 'c', prerequisites: [needs('p', { variants: [] })] }, others)!, /at least one/);
  assert.match(prerequisitesProblem({ key: 'c', prerequisites: [needs('p', { enabled: false, variants: ['a'] })] }, others)!, /only with enabled true/);
  assert.match(prerequisitesProblem({ key: 'r', prerequisites: [needs('q')] }, others)!, /a cycle \(r → q → r\)/);
  const chain = [0, 1, 2, 3, 4].map((i) => ({ key: `f${i}`, prerequisites: i === 0 ? [] : [needs(`f${i - 1}`)] }));
  assert.equal(prerequisitesProblem({ key: 'f5', prerequisites: [needs('f4')] }, chain), null);
  assert.match(prerequisitesProblem({ key: 'f6', prerequisites: [needs('f5')] }, [...chain, { key: 'f5', prerequisites: [needs('f4')] }])!, /deeper than 5 links \(f6 → f5 → f4 → f3 → f2 → f1 → f0\)/);
  // Depth counted through the flag being saved: giving f0 a parent makes the chain below too deep.
  assert.match(prerequisitesProblem({ key: 'f0', prerequisites: [needs('top')] }, [...chain.slice(1), { key: 'f5', prerequisites: [needs('f4')] }, { key: 'top' }])!, /deeper than 5/);
  assert.match(prerequisitesProblem({ key: 'c', prerequisites: Array.from({ length: 11 }, (_, i) => needs(`p${i}`)) }, others)!, /at most 10/);
});
