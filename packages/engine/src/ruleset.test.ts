/**
 * applyRulesetPatch (ruleset.ts) on its own: what it makes of a patch, and that a patch that does
 * not fit the document gives null (the client then fetches) and changes nothing. That a server's
 * patch gives the server's next document is proven over HTTP in
 * packages/server/tests/ruleset-patch.test.ts.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { applyRulesetPatch, type FlagDefinition, type RulesetDocument } from './index.js';

const flag = (key: string, enabled = true): FlagDefinition => ({ key, enabled, rolloutPercentage: 100, everyoneElse: 'rollout', rules: [] });

const document = (): RulesetDocument => ({
  format: 1,
  environment: 'production',
  revision: 7,
  flags: [flag('a'), flag('b'), flag('c')],
  segments: { beta: [{ attribute: 'plan', operator: 'IN', values: ['beta'] }], early: [{ attribute: 'plan', operator: 'IN', values: ['early'] }] },
});

const patch = (fields: Record<string, unknown> = {}) => ({ from: 'W/"x"', format: 1, flags: [], removed: [], segments: {}, ...fields });

describe('applyRulesetPatch', () => {
  test('changes, adds at the end, removes, takes an order, replaces and drops segments (keys sorted), and keeps the environment', () => {
    const before = document();
    const copy = structuredClone(before);
    const after = applyRulesetPatch(before, patch({ format: 2, flags: [flag('b', false), flag('d')], removed: ['a'], segments: { early: null, alpha: [{ attribute: 'x', operator: 'EXISTS' }] } }), 8);
    assert.deepEqual(after, {
      format: 2,
      environment: 'production',
      revision: 8,
      flags: [flag('b', false), flag('c'), flag('d')],
      segments: { alpha: [{ attribute: 'x', operator: 'EXISTS' }], beta: before.segments.beta },
    });
    assert.deepEqual(Object.keys(after!.segments), ['alpha', 'beta']);
    assert.deepEqual(before, copy, 'the document held is not changed');
    const reordered = applyRulesetPatch(before, patch({ flags: [flag('a2')], removed: ['a'], order: ['a2', 'b', 'c'] }), 8);
    assert.deepEqual(reordered!.flags.map((f) => f.key), ['a2', 'b', 'c']);
  });

  test('a patch that does not fit gives null', () => {
    const cases: [string, unknown][] = [
      ['not an object', 'patch'],
      ['no flags', { ...patch(), flags: undefined }],
      ['an unknown format', patch({ format: 3 })],
      ['removes a flag that is not there', patch({ removed: ['zzz'] })],
      ['a flag without a key', patch({ flags: [{ enabled: true }] })],
      ['an order naming an unknown key', patch({ order: ['a', 'b', 'zzz'] })],
      ['an order missing a key', patch({ order: ['a', 'b'] })],
      ['an order naming a key twice', patch({ order: ['a', 'b', 'b'] })],
      ['segment conditions that are not a list', patch({ segments: { beta: 'x' } })],
    ];
    for (const [what, bad] of cases) assert.equal(applyRulesetPatch(document(), bad, 8), null, what);
    assert.equal(applyRulesetPatch(document(), patch(), Number.NaN), null, 'a revision that is not a number');
  });
});
