import { test } from 'node:test';
import assert from 'node:assert/strict';
import { compileFlagSet, compilePrerequisites, codeOf, OUTCOMES, prerequisiteProblems, prerequisitesProblem, variantOf } from './index.js';
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

test('the whole graph in one pass agrees with a search of every path, on random graphs', () => {
  // The reference: from each flag, every path up and down walked out (exponential, fine for 9 flags).
  let seed = 7;
  const random = () => ((seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) / 2 ** 32);
  for (let round = 0; round < 400; round++) {
    const keys = Array.from({ length: 9 }, (_, i) => `k${i}`);
    const flags = keys.map((key) => ({ key, prerequisites: keys.filter((other) => other !== key && random() < 0.18).map((other) => needs(other)) }));
    const parentsOf = (key: string) => flags.find((f) => f.key === key)!.prerequisites.map((p) => p.flagKey);
    const cycleAbove = (key: string, path: string[]): boolean => path.includes(key) || parentsOf(key).some((p) => cycleAbove(p, [...path, key]));
    const longestUp = (key: string): number => Math.max(0, ...parentsOf(key).map((p) => longestUp(p) + 1));
    const longestDown = (key: string): number => Math.max(0, ...flags.filter((f) => parentsOf(f.key).includes(key) && !cycleAbove(f.key, [])).map((f) => longestDown(f.key) + 1));
    const problems = prerequisiteProblems(flags, keys);
    for (const key of keys) {
      const got = problems.get(key) ?? 'none';
      if (cycleAbove(key, [])) assert.match(got, /a cycle \(/, `round ${round}, ${key}`);
      else if (longestUp(key) + longestDown(key) > 5) assert.match(got, /deeper than 5 links/, `round ${round}, ${key}`);
      else assert.equal(got, 'none', `round ${round}, ${key}`);
    }
  }
});

test('a cycle is named from the flag on it, each link a prerequisite', () => {
  const flags = [{ key: 'a', prerequisites: [needs('b')] }, { key: 'b', prerequisites: [needs('c')] }, { key: 'c', prerequisites: [needs('a')] }, { key: 'd', prerequisites: [needs('a')] }];
  const problems = prerequisiteProblems(flags, ['b', 'd']);
  assert.equal(problems.get('b'), 'prerequisites: a cycle (b → c → a → b)');
  assert.match(problems.get('d')!, /^prerequisites: a cycle \((a → b → c → a|b → c → a → b|c → a → b → c)\)$/);
});

test('a parent that answers the same for every context is folded: the child answers off naming it, as its base code, with no rule consulted', () => {
  const variants = [{ key: 'a', value: 'A', weight: 1000 }, { key: 'b', value: 'B', weight: 0 }];
  const defs = [
    flag('off', { enabled: false }),
    flag('child', { rolloutPercentage: 50, rules: [{ type: 'user_id', value: 'vip', enabled: true }], prerequisites: [needs('off')] }),
    flag('grandchild', { prerequisites: [needs('child')] }),
    flag('always_on'),
    flag('not_wanted_on', { prerequisites: [needs('always_on', { enabled: false })] }),
    flag('only_a', { variants, offVariant: 'b' }),
    flag('wants_b', { prerequisites: [needs('always_on'), needs('only_a', { variants: ['b'] })] }),
    flag('missing', { prerequisites: [needs('nowhere')] }),
  ];
  const set = compileFlagSet(defs);
  const expected: Record<string, string> = { child: 'off', grandchild: 'child', not_wanted_on: 'always_on', wants_b: 'only_a', missing: 'nowhere' };
  for (const [key, parent] of Object.entries(expected)) {
    const i = set.keys.indexOf(key);
    assert.equal(set.reasonOf(i, set.baseCodes[i]!), `Prerequisite ${parent} not met`, `${key}: folded into its base code`);
    assert.ok(!set.rollouts.includes(i), `${key}: no rollout to run`);
  }
  for (const user_id of ['vip', 'u1', 'u2', 'u3']) {
    const got = answers(defs, { user_id });
    for (const [key, parent] of Object.entries(expected)) assert.deepEqual([got[key]!.enabled, got[key]!.prerequisite], [false, parent], `${key} for ${user_id}`);
    // Nothing but the base codes: no rule served, so the whole-set answer says so.
    assert.equal(compileFlagSet(defs).evaluateInto({ user_id }, new Uint8Array(defs.length)), false);
  }
});

test('not folded where an earlier prerequisite varies per context: its reason comes first for whom it is not met', () => {
  const defs = [flag('half', { rolloutPercentage: 50 }), flag('off', { enabled: false }), flag('child', { prerequisites: [needs('half'), needs('off')] })];
  const reasons = new Set<string>();
  for (let u = 0; u < 40; u++) reasons.add(answers(defs, { user_id: `user-${u}` }).child!.reason);
  assert.deepEqual([...reasons].sort(), ['Prerequisite half not met', 'Prerequisite off not met']);
});

test('folded or not, every flag answers as a plain recursive reading of the prerequisites would (random sets)', () => {
  let seed = 7;
  const random = () => ((seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) / 2 ** 32);
  const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)]!;
  const variants = [{ key: 'a', value: 'A', weight: 700 }, { key: 'b', value: 'B', weight: 300 }];
  const single = [{ key: 'a', value: 'A', weight: 1000 }, { key: 'b', value: 'B', weight: 0 }];
  for (let round = 0; round < 150; round++) {
    const defs: FlagDefinition[] = [];
    for (let f = 0; f < 8; f++) {
      const shape = pick(['disabled', 'on', 'off', 'rollout', 'rule', 'variants', 'single']);
      const def = flag(`f${f}`, {
        enabled: shape !== 'disabled',
        rolloutPercentage: shape === 'rollout' ? 40 : shape === 'on' ? 100 : 0,
        ...(shape === 'off' ? { everyoneElse: 'off' as const } : {}),
        ...(shape === 'rule' ? { everyoneElse: 'off' as const, rules: [{ type: 'user_id' as const, value: 'user-1', enabled: true }] } : {}),
        ...(shape === 'variants' ? { variants, offVariant: 'b' } : shape === 'single' ? { variants: single, offVariant: 'b' } : {}),
      });
      // Parents among the earlier flags only: no cycles.
      const count = f === 0 ? 0 : Math.floor(random() * 3);
      const parents = new Set(Array.from({ length: count }, () => `f${Math.floor(random() * f)}`));
      if (random() < 0.1) parents.add('missing');
      if (parents.size > 0) def.prerequisites = [...parents].map((key) => (random() < 0.3 ? needs(key, { enabled: false }) : random() < 0.3 ? needs(key, { variants: ['a'] }) : needs(key)));
      defs.push(def);
    }
    const byKey = new Map(defs.map((def) => [def.key, def]));
    for (let u = 0; u < 6; u++) {
      const ctx = { user_id: `user-${u}` };
      const reference = (def: FlagDefinition): { enabled: boolean; reason: string; variant: string | null } => {
        const alone = compileFlagSet([{ ...def, prerequisites: [] }]);
        const own = alone.evaluateFlag(ctx, 0);
        const variantKey = (packed: number) => alone.variants[0]?.[variantOf(packed)]?.key ?? null;
        if (!def.enabled) return { enabled: false, reason: OUTCOMES[codeOf(own)]!.reason, variant: variantKey(own) };
        for (const p of def.prerequisites ?? []) {
          const parentDef = byKey.get(p.flagKey);
          const parent = parentDef === undefined ? null : reference(parentDef);
          const met = parent !== null && parent.enabled === (p.enabled !== false) && (p.variants === undefined || p.variants === null || p.variants.includes(parent.variant ?? ''));
          if (!met) return { enabled: false, reason: `Prerequisite ${p.flagKey} not met`, variant: def.variants ? def.offVariant! : null };
        }
        return { enabled: OUTCOMES[codeOf(own)]!.enabled, reason: OUTCOMES[codeOf(own)]!.reason, variant: variantKey(own) };
      };
      const got = answers(defs, ctx);
      for (const def of defs) {
        const { enabled, reason, variant } = got[def.key]!;
        assert.deepEqual({ enabled, reason, variant }, reference(def), `round ${round}, ${def.key} for ${ctx.user_id}: ${JSON.stringify(defs)}`);
      }
    }
  }
});
