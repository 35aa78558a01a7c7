import { test } from 'node:test';
import assert from 'node:assert/strict';
import murmurhash3js from 'murmurhash3js';
import { NO_VARIANT, codeOf, compileFlagSet, evaluateVariant, variantOf, type EvaluationContext, type FlagDefinition, type VariantDefinition } from './evaluate.js';

/** docs/variants.md, computed with another library's murmur3: the first variant whose running total reaches the target. */
function expectedByWeight(flagKey: string, identifier: string, variants: readonly VariantDefinition[]): string {
  const target = (murmurhash3js.x86.hash32(unescape(encodeURIComponent(`${flagKey}:${identifier}`)), 86028157) % 1000) + 1;
  let total = 0;
  for (const variant of variants) if ((total += variant.weight) >= target) return variant.key;
  throw new Error('weights do not reach the target');
}

const colours: VariantDefinition[] = [
  { key: 'red', value: '#f00', weight: 200 },
  { key: 'green', value: '#0f0', weight: 300 },
  { key: 'blue', value: '#00f', weight: 500 },
];

const flag = (over: Partial<FlagDefinition> = {}): FlagDefinition => ({ key: 'banner', enabled: true, rolloutPercentage: 0, rules: [], variants: colours, offVariant: 'red', ...over });

test('a user gets the variant chosen by weight as docs/variants.md (and Unleash) hash it', () => {
  const set = compileFlagSet([flag()]);
  const seen = new Map<string, number>();
  for (let i = 0; i < 2000; i++) {
    const id = i % 3 === 0 ? `user-${i}` : `ü-${i}-é`;
    const variant = set.variants[0]![variantOf(set.evaluateFlag({ user_id: id }, 0))]!.key;
    assert.equal(variant, expectedByWeight('banner', id, colours), id);
    seen.set(variant, (seen.get(variant) ?? 0) + 1);
  }
  // The weights show in the distribution (2000 users: 20 / 30 / 50 % within a few points).
  assert.ok(Math.abs(seen.get('red')! / 2000 - 0.2) < 0.04 && Math.abs(seen.get('blue')! / 2000 - 0.5) < 0.04, JSON.stringify([...seen]));
  // No id: the email, then "anonymous", as for rollouts.
  assert.equal(evaluateVariant(flag(), { user_email: 'a@example.com' })!.key, expectedByWeight('banner', 'a@example.com', colours));
  assert.equal(evaluateVariant(flag(), {})!.key, expectedByWeight('banner', 'anonymous', colours));
});

test('weights at 0 and 1000, the off variant, a rule pinning a variant', () => {
  const all = [
    { key: 'a', value: 1, weight: 0 },
    { key: 'b', value: 2, weight: 1000 },
    { key: 'c', value: 3, weight: 0 },
  ];
  for (let i = 0; i < 200; i++) assert.equal(evaluateVariant(flag({ variants: all, offVariant: 'a' }), { user_id: `u${i}` })!.key, 'b');
  assert.equal(evaluateVariant(flag({ enabled: false }), { user_id: 'u1' })!.key, 'red', 'a disabled flag serves the off variant');
  assert.equal(evaluateVariant(flag({ rolloutPercentage: 100, everyoneElse: 'off' }), { user_id: 'u1' })!.key, 'red', 'everyone_else off: off variant');
  const pinned = flag({ rules: [{ type: 'user_id', value: 'vip', enabled: true, variant: 'green' }, { type: 'user_id', value: 'blocked', enabled: true, serve: false, variant: 'green' }] });
  assert.equal(evaluateVariant(pinned, { user_id: 'vip' })!.key, 'green');
  assert.equal(evaluateVariant(pinned, { user_id: 'blocked' })!.key, 'red', 'a rule that serves off serves the off variant');
  const conditions = flag({ rules: [{ type: 'conditions', value: '', enabled: true, conditions: [{ attribute: 'plan', operator: 'IN', values: ['pro'] }], variant: 'blue', rolloutPercentage: 100 }] });
  assert.equal(evaluateVariant(conditions, { user_id: 'x', custom_attributes: { plan: 'pro' } })!.key, 'blue');
  assert.equal(evaluateVariant(conditions, { user_id: 'x', custom_attributes: { plan: 'free' } })!.key, expectedByWeight('banner', 'x', colours));
  assert.equal(evaluateVariant({ key: 'plain', enabled: true, rolloutPercentage: 0, rules: [] }, {}), null, 'a flag without variants has none');
});

test('evaluateInto writes the variant of every flag, equal to evaluateFlag, and tells when answers leave the rollout-only shape', () => {
  const defs: FlagDefinition[] = [
    { key: 'plain', enabled: true, rolloutPercentage: 30, rules: [] },
    flag({ key: 'weighted' }),
    flag({ key: 'static', variants: [{ key: 'only', value: { a: 1 }, weight: 1000 }], offVariant: 'only', rolloutPercentage: 40 }),
    flag({ key: 'pinned', rules: [{ type: 'email_domain', value: '@corp.com', enabled: true, variant: 'blue' }], variants: [{ key: 'red', value: 'r', weight: 1000 }, { key: 'blue', value: 'b', weight: 0 }] }),
    flag({ key: 'off', enabled: false }),
  ];
  const set = compileFlagSet(defs);
  assert.equal(set.hasVariants, true);
  const codes = new Uint8Array(defs.length);
  const variants = new Uint8Array(defs.length);
  const contexts: EvaluationContext[] = [{}, { user_id: 'u1' }, { user_email: 'x@corp.com' }, { user_id: 'u2', user_email: 'y@corp.com' }, { user_email: 'z@else.com' }];
  for (const ctx of contexts) {
    const matched = set.evaluateInto(ctx, codes, variants);
    assert.equal(matched, ctx.user_email?.endsWith('@corp.com') === true, 'a rule served');
    assert.deepEqual([...set.splits], [1], 'the weighted flag chooses per user');
    for (let i = 0; i < defs.length; i++) {
      const packed = set.evaluateFlag(ctx, i);
      assert.equal(codeOf(packed), codes[i], `${defs[i]!.key} code`);
      assert.equal(variantOf(packed), variants[i], `${defs[i]!.key} variant`);
    }
    assert.equal(variants[0], NO_VARIANT);
    assert.equal(variants[4], 0, 'disabled: the off variant');
    assert.equal(set.variants[3]![variants[3]!]!.key, ctx.user_email?.endsWith('@corp.com') ? 'blue' : 'red');
    assert.equal(set.variants[2]![variants[2]!]!.key, 'only', 'one variant: on or off, the same');
  }
  // Without the weighted flag, an answer with no rule matched has its base variants but at rollout flags, where the code tells the variant.
  const noWeights = compileFlagSet(defs.filter((def) => def.key !== 'weighted'));
  assert.equal(noWeights.splits.length, 0);
  assert.equal(noWeights.evaluateInto({ user_id: 'u1' }, codes, variants), false);
  assert.deepEqual([...variants.subarray(0, 4)], [NO_VARIANT, 0, 0, 0]);
  assert.equal(noWeights.evaluateInto({ user_email: 'a@corp.com' }, codes, variants), true);
});

test('a bucketing key replaces the flag key in the variant hash and in the rollout hash (docs/flags-as-code.md)', () => {
  // The same flag under another key, with the old key as its bucketing key, serves everyone what the old one did.
  const set = compileFlagSet([flag({ key: 'banner', rolloutPercentage: 50 }), flag({ key: 'renamed_banner', bucketingKey: 'banner', rolloutPercentage: 50 }), flag({ key: 'renamed_banner', rolloutPercentage: 50 })]);
  let moved = 0;
  for (let i = 0; i < 500; i++) {
    const ctx: EvaluationContext = { user_id: `user-${i}` };
    const original = set.evaluateFlag(ctx, 0);
    assert.equal(set.evaluateFlag(ctx, 1), original, ctx.user_id);
    if (set.evaluateFlag(ctx, 2) !== original) moved++;
    assert.equal(set.answer(ctx, 1).kind, set.answer(ctx, 0).kind);
  }
  assert.ok(moved > 100, 'without the bucketing key, users change bucket');
  assert.equal(evaluateVariant(flag({ key: 'x', bucketingKey: null }), { user_id: 'u' })?.key, expectedByWeight('x', 'u', colours));
  assert.equal(evaluateVariant(flag({ key: 'x', bucketingKey: 'Old.Name:v1' }), { user_id: 'u' })?.key, expectedByWeight('Old.Name:v1', 'u', colours));
});
