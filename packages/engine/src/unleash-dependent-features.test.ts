/**
 * Unleash's client specification for dependent features (17-dependent-features.json in the
 * Unleash/client-specification repository, Apache-2.0) restated as Guidon flags, through an
 * adapter: each feature becomes a FlagDefinition (its strategy a rule or the rollout, its
 * `dependencies` its prerequisites, its variants Guidon's with a weight-0 `disabled` variant as
 * the off variant, Unleash's name for "no variant"), each expected answer is checked against the
 * compiled set, enabled and variant.
 *
 * Where docs/prerequisites.md and Unleash differ, Guidon's rules win and the case is listed in
 * DIFFERENT with the reason:
 * - a transitive dependency: Unleash allows one level (a parent that has dependencies of its own
 *   switches the child off); Guidon allows chains of up to 5 links.
 * - `variants: ["disabled"]` on a parent without variants: Unleash's default variant is named
 *   "disabled", so the child is on; a Guidon flag without variants serves none, and naming a
 *   variant it does not have is refused when saved.
 * `variants: []` (any variant, in Unleash) is refused when saved in Guidon; the adapter writes it
 * as no `variants`, which means the same.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { compileFlagSet, OUTCOMES, variantOf } from './index.js';
import type { FlagDefinition, PrerequisiteDefinition, RuleDefinition } from './index.js';

interface Dependency {
  feature: string;
  enabled?: boolean;
  variants?: string[];
}
interface Feature {
  name: string;
  enabled: boolean;
  /** Unleash's strategy, as the specification has it: on for everyone, or only where `environment` is one of these. */
  environments?: string[];
  variant?: string;
  dependencies?: Dependency[];
}

const CHILD = 'child.variant';
const PARENT = 'parent.variant';
const child = (name: string, dependencies: Dependency[], enabled = true): Feature => ({ name, enabled, variant: CHILD, dependencies });

// The specification's features (names and shapes as it has them).
const FEATURES: Feature[] = [
  { name: 'parent.enabled', enabled: true },
  { name: 'parent.disabled', enabled: false },
  { name: 'parent.with.variant', enabled: true, variant: PARENT },
  { name: 'parent.with.constraint', enabled: true, environments: ['prod'], variant: PARENT },
  { name: 'child.with.matching.constraint', enabled: true, environments: ['prod'], variant: CHILD, dependencies: [{ feature: 'parent.with.constraint' }] },
  { name: 'child.with.non.matching.constraint', enabled: true, environments: ['dev'], variant: CHILD, dependencies: [{ feature: 'parent.with.constraint' }] },
  { name: 'parent.with.cycle', enabled: true, variant: PARENT, dependencies: [{ feature: 'child.with.cycle' }] },
  { name: 'child.with.cycle', enabled: true, variant: PARENT, dependencies: [{ feature: 'parent.with.cycle' }] },
  { name: 'child.with.transitive.dependency', enabled: true, variant: PARENT, dependencies: [{ feature: 'parent.enabled.child.enabled' }] },
  child('parent.enabled.child.enabled', [{ feature: 'parent.enabled' }]),
  child('parent.enabled.child.disabled', [{ feature: 'parent.enabled' }], false),
  child('parent.disabled.child.enabled', [{ feature: 'parent.disabled' }]),
  child('parent.disabled.child.disabled', [{ feature: 'parent.disabled' }], false),
  child('parent.default.variant.child.enabled', [{ feature: 'parent.enabled', variants: ['disabled'] }]),
  child('parent.disabled.satisfied.child.enabled', [{ feature: 'parent.disabled', enabled: false }]),
  child('parent.disabled.not.satisfied.child.enabled', [{ feature: 'parent.enabled', enabled: false }]),
  child('parent.single.variant.child.enabled', [{ feature: 'parent.with.variant', variants: [PARENT] }]),
  child('parent.multiple.variants.child.enabled', [{ feature: 'parent.with.variant', variants: [PARENT, 'nonmatching.variant'] }]),
  child('parent.empty.variants.child.enabled', [{ feature: 'parent.with.variant', variants: [] }]),
  child('parent.non.matching.variant.child.enabled', [{ feature: 'parent.with.variant', variants: ['nonmatching.variant'] }]),
  child('multiple.parents.satisfied.child.enabled', [{ feature: 'parent.enabled' }, { feature: 'parent.disabled', enabled: false }]),
  child('multiple.parents.not.satisfied.child.enabled', [{ feature: 'parent.enabled' }, { feature: 'parent.disabled' }]),
  child('parents.not.exist.child.enabled', [{ feature: 'parent.not.exist' }]),
];

// The specification's expectations: toggle, context environment, enabled (its variant test
// expects the child's variant when enabled, "disabled" otherwise).
const EXPECTED: [string, string | undefined, boolean][] = [
  ['parent.enabled.child.enabled', undefined, true],
  ['parent.enabled.child.disabled', undefined, false],
  ['parent.disabled.child.enabled', undefined, false],
  ['parent.disabled.child.disabled', undefined, false],
  ['parent.disabled.satisfied.child.enabled', undefined, true],
  ['parent.disabled.not.satisfied.child.enabled', undefined, false],
  ['parent.single.variant.child.enabled', undefined, true],
  ['parent.multiple.variants.child.enabled', undefined, true],
  ['parent.empty.variants.child.enabled', undefined, true],
  ['parent.non.matching.variant.child.enabled', undefined, false],
  ['multiple.parents.satisfied.child.enabled', undefined, true],
  ['multiple.parents.not.satisfied.child.enabled', undefined, false],
  ['parents.not.exist.child.enabled', undefined, false],
  ['child.with.cycle', undefined, false],
  ['child.with.transitive.dependency', undefined, false],
  ['child.with.matching.constraint', 'prod', true],
  ['child.with.non.matching.constraint', 'dev', false],
  ['parent.default.variant.child.enabled', undefined, true],
];

/** Cases where docs/prerequisites.md answers otherwise, with Guidon's answer (see the header). */
const DIFFERENT = new Map<string, boolean>([
  ['child.with.transitive.dependency', true],
  ['parent.default.variant.child.enabled', false],
]);

function adapt(feature: Feature): FlagDefinition {
  const rules: RuleDefinition[] = feature.environments
    ? [{ type: 'conditions', value: '', enabled: true, conditions: [{ attribute: 'environment', operator: 'IN', values: feature.environments }] }]
    : [];
  const prerequisites: PrerequisiteDefinition[] = (feature.dependencies ?? []).map((dependency) => ({
    flagKey: dependency.feature,
    enabled: dependency.enabled ?? true,
    variants: dependency.variants && dependency.variants.length > 0 ? dependency.variants : null,
  }));
  return {
    key: feature.name,
    enabled: feature.enabled,
    rolloutPercentage: 100,
    everyoneElse: feature.environments ? 'off' : 'rollout',
    rules,
    variants: feature.variant ? [{ key: feature.variant, value: 'variantValue', weight: 1000 }, { key: 'disabled', value: '', weight: 0 }] : null,
    offVariant: feature.variant ? 'disabled' : null,
    prerequisites,
  };
}

test('Unleash client specification 17, dependent features: every case docs/prerequisites.md can express answers as Unleash does', () => {
  const defs = FEATURES.map(adapt);
  for (const [toggle, environment, unleash] of EXPECTED) {
    const set = compileFlagSet(defs, { environment });
    const index = set.keys.indexOf(toggle);
    const packed = set.evaluateFlag({}, index);
    const enabled = OUTCOMES[packed & 255]!.enabled;
    const expected = DIFFERENT.get(toggle) ?? unleash;
    assert.equal(enabled, expected, `${toggle}${DIFFERENT.has(toggle) ? ' (differs from Unleash on purpose)' : ''}`);
    const variant = set.variants[index]?.[variantOf(packed)]?.key;
    assert.equal(variant, expected ? variantWhenOn(toggle) : 'disabled', `${toggle}: variant`);
    // The whole set answers the same as the flag alone.
    const codes = new Uint8Array(set.size);
    set.evaluateInto({}, codes);
    assert.equal(codes[index], packed & 255, `${toggle}: in the set`);
  }
  assert.equal(EXPECTED.length - DIFFERENT.size, 16, 'sixteen of eighteen cases as Unleash');
});

/** The variant a case's toggle serves when on: the specification's children serve child.variant, except the two that reuse the parent's. */
function variantWhenOn(toggle: string): string {
  return FEATURES.find((feature) => feature.name === toggle)!.variant!;
}
