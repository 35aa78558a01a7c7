/**
 * Outcome codes are stored in evaluation history forever (one byte per evaluated flag): this
 * table is frozen. A test failure here means stored history would be read back wrong: give a new
 * outcome a new code instead of changing one.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { OUTCOMES, RULE_MATCH_CODES } from '../src/modules/evaluate/outcomes.js';

const FROZEN: [number, boolean, string][] = [
  [0, false, 'Flag is globally disabled'],
  [1, true, 'Flag enabled globally'],
  [2, true, 'Matched user_id targeting rule'],
  [3, true, 'Matched user_email targeting rule'],
  [4, true, 'Matched email_domain targeting rule'],
  ...Array.from({ length: 100 }, (_, i): [number, boolean, string] => [5 + i, true, `User in ${i + 1}% rollout`]),
  ...Array.from({ length: 100 }, (_, i): [number, boolean, string] => [105 + i, false, `User not in ${i + 1}% rollout`]),
];

test('every outcome keeps its code', () => {
  assert.deepEqual(
    OUTCOMES.map((outcome) => [outcome.code, outcome.enabled, outcome.reason]),
    FROZEN,
  );
  for (const [code, outcome] of OUTCOMES.entries()) assert.equal(outcome.code, code, 'indexed by code');
});

test('rule codes are written out per rule type, not taken from the order of a list', () => {
  assert.deepEqual({ ...RULE_MATCH_CODES }, { user_id: 2, user_email: 3, email_domain: 4 });
  assert.ok(Object.isFrozen(RULE_MATCH_CODES));
});
