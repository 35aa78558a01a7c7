/**
 * Outcome codes are stored in evaluation history forever (one byte per evaluated flag): this
 * table is frozen. A test failure here means stored history would be read back wrong: give a new
 * outcome a new code instead of changing one.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { OUTCOMES, RULE_MATCH_CODES, RULE_OFF_CODES, reasonKind } from './index.js';

const FROZEN: [number, boolean, string, string][] = [
  [0, false, 'Flag is globally disabled', 'DISABLED'],
  [1, true, 'Flag enabled globally', 'STATIC'],
  [2, true, 'Matched user_id targeting rule', 'TARGETING_MATCH'],
  [3, true, 'Matched user_email targeting rule', 'TARGETING_MATCH'],
  [4, true, 'Matched email_domain targeting rule', 'TARGETING_MATCH'],
  ...Array.from({ length: 100 }, (_, i): [number, boolean, string, string] => [5 + i, true, `User in ${i + 1}% rollout`, 'SPLIT']),
  ...Array.from({ length: 100 }, (_, i): [number, boolean, string, string] => [105 + i, false, `User not in ${i + 1}% rollout`, 'SPLIT']),
  // docs/targeting.md: conditions, everyone_else "off", and rules that serve false.
  [205, true, 'Matched conditions targeting rule', 'TARGETING_MATCH'],
  [206, false, 'No targeting rule matched', 'DEFAULT'],
  [207, false, 'Matched user_id targeting rule', 'TARGETING_MATCH'],
  [208, false, 'Matched user_email targeting rule', 'TARGETING_MATCH'],
  [209, false, 'Matched email_domain targeting rule', 'TARGETING_MATCH'],
  [210, false, 'Matched conditions targeting rule', 'TARGETING_MATCH'],
  // Prerequisites (docs/prerequisites.md): the unmet one's position; the flag set names its key.
  ...Array.from({ length: 10 }, (_, i): [number, boolean, string, string] => [211 + i, false, `Prerequisite ${i + 1} not met`, 'PREREQUISITE_FAILED']),
];

test('every outcome keeps its code', () => {
  assert.deepEqual(
    OUTCOMES.map((outcome) => [outcome.code, outcome.enabled, outcome.reason, outcome.kind]),
    FROZEN,
  );
  for (const [code, outcome] of OUTCOMES.entries()) assert.equal(outcome.code, code, 'indexed by code');
});

test('rule codes are written out per rule type, not taken from the order of a list', () => {
  assert.deepEqual({ ...RULE_MATCH_CODES }, { user_id: 2, user_email: 3, email_domain: 4, conditions: 205 });
  assert.deepEqual({ ...RULE_OFF_CODES }, { user_id: 207, user_email: 208, email_domain: 209, conditions: 210 });
  assert.ok(Object.isFrozen(RULE_MATCH_CODES) && Object.isFrozen(RULE_OFF_CODES));
});

test('a reason string names its OpenFeature reason; other texts name none', () => {
  for (const outcome of OUTCOMES) assert.equal(reasonKind(outcome.reason), outcome.kind);
  assert.equal(reasonKind('Bootstrap value'), undefined);
  assert.equal(reasonKind('Prerequisite new_payment_api not met'), 'PREREQUISITE_FAILED');
});
