/**
 * The packed answer (answer-codec.ts): what is encoded reads back, every field apart, and the
 * layout the SDK and the server have read since variants came (a variant's index + 1 in the
 * second byte) stays the same.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { codeOf, encodeAnswer, enabledOf, MAX_RANK, NO_RULE, NO_VARIANT, OUTCOMES, ruleOf, ruleServed, variantOf, withoutRule, withVariant } from './index.js';

test('every code, variant and rank reads back as encoded', () => {
  const variants = [NO_VARIANT, 0, 1, 49, 254];
  const ranks = [NO_RULE, 0, 1, 99, MAX_RANK];
  for (let code = 0; code < OUTCOMES.length; code++) {
    for (const variant of variants) {
      for (const rank of ranks) {
        const packed = encodeAnswer(code, variant, rank);
        assert.equal(codeOf(packed), code);
        assert.equal(variantOf(packed), variant);
        assert.equal(ruleOf(packed), rank);
        assert.equal(ruleServed(packed), rank !== NO_RULE);
        assert.equal(enabledOf(packed), OUTCOMES[code]!.enabled);
        assert.ok(packed >= 0 && Number.isInteger(packed), 'a non-negative small integer (an Int32Array holds it)');
        assert.ok(packed <= 0x7fffffff);
      }
    }
  }
});

test('defaults: no variant, no rule', () => {
  const packed = encodeAnswer(7);
  assert.equal(packed, 7, 'a code alone is the code');
  assert.equal(variantOf(packed), NO_VARIANT);
  assert.equal(ruleOf(packed), NO_RULE);
  assert.equal(ruleServed(packed), false);
});

test('a rank past MAX_RANK is answered as MAX_RANK', () => {
  assert.equal(ruleOf(encodeAnswer(2, NO_VARIANT, MAX_RANK + 10)), MAX_RANK);
});

test('withVariant adds a variant to an answer that has none; withoutRule drops the rule only', () => {
  const ruled = encodeAnswer(205, NO_VARIANT, 3);
  const packed = withVariant(ruled, 4);
  assert.equal(packed, encodeAnswer(205, 4, 3));
  assert.equal(withVariant(ruled, NO_VARIANT), ruled, 'NO_VARIANT leaves the variant byte 0');
  assert.equal(withoutRule(packed), encodeAnswer(205, 4));
  assert.equal(ruleOf(withoutRule(packed)), NO_RULE);
});

test('the layout: the code in the first byte, the variant + 1 in the second, the rank + 1 above', () => {
  assert.equal(encodeAnswer(1, 0), 1 | (1 << 8));
  assert.equal(encodeAnswer(1, 2, 5), 1 | (3 << 8) | (6 << 16));
  assert.equal(encodeAnswer(206, NO_VARIANT, NO_RULE), 206);
  // A Uint8Array of variants holds NO_VARIANT for "none": variantOf's answer fits it as it is.
  const bytes = new Uint8Array(1);
  bytes[0] = variantOf(encodeAnswer(0));
  assert.equal(bytes[0], NO_VARIANT);
});
