import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import {
  OUTCOMES,
  RULE_TYPES,
  bucketOf,
  compileFlagSet,
  isRuleType,
  looksLikeEmail,
  normalizeEmailDomain,
  rolloutIdentifier,
} from './index.js';
import type { EvaluationContext, FlagDefinition, RuleDefinition, RuleType } from './index.js';
import { murmur3_x86_32 } from './murmur3.js';

function flag(partial: Partial<FlagDefinition>): FlagDefinition {
  return { key: 'test_flag', enabled: true, rolloutPercentage: 0, rules: [], ...partial };
}
function rule(type: RuleType, value: string, enabled = true): RuleDefinition {
  return { type, value, enabled };
}
/** One flag compiled alone: its answer as the evaluate endpoint shows it ({enabled, reason}). */
function compileFlag(def: FlagDefinition) {
  const set = compileFlagSet([def]);
  return {
    key: set.keys[0]!,
    evaluate(ctx: EvaluationContext) {
      const { enabled, reason } = OUTCOMES[set.evaluateFlag(ctx, 0)]!;
      return { enabled, reason };
    },
  };
}
function evaluate(def: FlagDefinition, ctx: EvaluationContext) {
  return compileFlag(def).evaluate(ctx);
}

/** Finds a user id whose bucket for `key` satisfies `pred` (deterministic). */
function findUser(key: string, pred: (bucket: number) => boolean): string {
  for (let i = 0; i < 100_000; i++) {
    const id = `user_${i}`;
    if (pred(bucketOf(key, id))) return id;
  }
  throw new Error('no such user');
}

describe('reasons', () => {
  test('reason strings are exact', () => {
    const reason = (code: number) => OUTCOMES[code]!.reason;
    assert.equal(reason(0), 'Flag is globally disabled');
    assert.equal(reason(1), 'Flag enabled globally');
    assert.equal(reason(2), 'Matched user_id targeting rule');
    assert.equal(reason(3), 'Matched user_email targeting rule');
    assert.equal(reason(4), 'Matched email_domain targeting rule');
    assert.equal(reason(34), 'User in 30% rollout');
    assert.equal(reason(134), 'User not in 30% rollout');
  });

  test('RULE_TYPES and isRuleType', () => {
    assert.deepEqual([...RULE_TYPES], ['user_id', 'user_email', 'email_domain', 'conditions']);
    assert.ok(Object.isFrozen(RULE_TYPES));
    for (const t of RULE_TYPES) assert.equal(isRuleType(t), true);
    assert.equal(isRuleType('USER_ID'), false);
    assert.equal(isRuleType('country'), false);
    assert.equal(isRuleType(undefined), false);
  });
});

describe('bucketing', () => {
  test('bucketOf vectors', () => {
    assert.equal(bucketOf('dark_mode', 'user_1'), 47);
    assert.equal(bucketOf('new_checkout', 'alice@example.com'), 13);
    assert.equal(bucketOf('f', 'anonymous'), 71);
    assert.equal(bucketOf('beta-ui', 'u-123'), 25);
    assert.equal(bucketOf('flag', 'user123'), 78);
  });

  test('bucketOf is murmur3 of "key:identifier" mod 100', () => {
    for (const [k, id] of [['a', 'b'], ['checkout', 'jos\u00e9@example.com'], ['x:y', 'z']] as const) {
      assert.equal(bucketOf(k, id), murmur3_x86_32(`${k}:${id}`, 0) % 100);
    }
  });

  test('rolloutIdentifier: user_id, then user_email as given, then anonymous', () => {
    assert.equal(rolloutIdentifier({ user_id: 'u1', user_email: 'a@b.com' }), 'u1');
    assert.equal(rolloutIdentifier({ user_email: 'Alice@Example.com' }), 'Alice@Example.com');
    assert.equal(rolloutIdentifier({ user_id: '', user_email: 'a@b.com' }), 'a@b.com');
    assert.equal(rolloutIdentifier({ user_id: undefined, user_email: 'a@b.com' }), 'a@b.com');
    assert.equal(rolloutIdentifier({ user_id: '', user_email: '' }), 'anonymous');
    assert.equal(rolloutIdentifier({}), 'anonymous');
  });
});

describe('evaluation', () => {
  test('disabled flag: disabled reason, rules and rollout not consulted', () => {
    const def = flag({
      enabled: false,
      rolloutPercentage: 100,
      rules: [rule('user_id', 'u1'), rule('user_email', 'a@b.com'), rule('email_domain', '@b.com')],
    });
    for (const ctx of [{ user_id: 'u1', user_email: 'a@b.com' }, {}]) {
      assert.deepEqual(evaluate(def, ctx), { enabled: false, reason: 'Flag is globally disabled' });
    }
  });

  test('enabled flag with no rules and rollout 0: enabled globally', () => {
    const def = flag({ rolloutPercentage: 0 });
    assert.deepEqual(evaluate(def, { user_id: 'u1' }), { enabled: true, reason: 'Flag enabled globally' });
    assert.deepEqual(evaluate(def, {}), { enabled: true, reason: 'Flag enabled globally' });
  });

  test('rules that do not match fall through to enabled globally when rollout is 0', () => {
    const def = flag({ rules: [rule('user_id', 'someone_else'), rule('email_domain', '@corp.com')] });
    assert.deepEqual(evaluate(def, { user_id: 'u1', user_email: 'a@other.com' }), {
      enabled: true,
      reason: 'Flag enabled globally',
    });
  });

  test('each rule type matches with its reason', () => {
    const def = flag({
      rolloutPercentage: 0,
      rules: [rule('user_id', 'u1'), rule('user_email', 'alice@example.com'), rule('email_domain', '@corp.com')],
    });
    assert.deepEqual(evaluate(def, { user_id: 'u1' }), { enabled: true, reason: 'Matched user_id targeting rule' });
    assert.deepEqual(evaluate(def, { user_email: 'alice@example.com' }), {
      enabled: true,
      reason: 'Matched user_email targeting rule',
    });
    assert.deepEqual(evaluate(def, { user_email: 'bob@corp.com' }), {
      enabled: true,
      reason: 'Matched email_domain targeting rule',
    });
  });

  test('rank order wins across rule types (first matching rule in array order)', () => {
    const ctx = { user_id: 'u1', user_email: 'alice@corp.com' };
    const id = rule('user_id', 'u1');
    const email = rule('user_email', 'alice@corp.com');
    const domain = rule('email_domain', '@corp.com');
    assert.equal(evaluate(flag({ rules: [domain, email, id] }), ctx).reason, 'Matched email_domain targeting rule');
    assert.equal(evaluate(flag({ rules: [email, domain, id] }), ctx).reason, 'Matched user_email targeting rule');
    assert.equal(evaluate(flag({ rules: [id, domain, email] }), ctx).reason, 'Matched user_id targeting rule');
    assert.equal(evaluate(flag({ rules: [domain, id] }), ctx).reason, 'Matched email_domain targeting rule');
    assert.equal(evaluate(flag({ rules: [email, id] }), ctx).reason, 'Matched user_email targeting rule');
    // Non-matching higher-rank rules do not stop a lower-rank match.
    const other = rule('user_id', 'nobody');
    assert.equal(evaluate(flag({ rules: [other, domain, id] }), ctx).reason, 'Matched email_domain targeting rule');
    // Same with no match at rank 0, so every lookup has to compare ranks.
    assert.equal(evaluate(flag({ rules: [other, id, email, domain] }), ctx).reason, 'Matched user_id targeting rule');
    assert.equal(evaluate(flag({ rules: [other, id, domain, email] }), ctx).reason, 'Matched user_id targeting rule');
    assert.equal(evaluate(flag({ rules: [other, email, domain, id] }), ctx).reason, 'Matched user_email targeting rule');
    assert.equal(evaluate(flag({ rules: [other, domain, email, id] }), ctx).reason, 'Matched email_domain targeting rule');
  });

  test('duplicate rule values keep the best (lowest) rank', () => {
    const ctx = { user_id: 'u1', user_email: 'alice@corp.com' };
    const def = flag({
      rules: [rule('user_id', 'u1'), rule('email_domain', '@corp.com'), rule('user_id', 'u1')],
    });
    assert.equal(evaluate(def, ctx).reason, 'Matched user_id targeting rule');
    const def2 = flag({
      rules: [rule('email_domain', '@corp.com'), rule('user_id', 'u1'), rule('email_domain', 'CORP.com')],
    });
    assert.equal(evaluate(def2, ctx).reason, 'Matched email_domain targeting rule');
  });

  test('disabled rules are ignored (including for ranking)', () => {
    const ctx = { user_id: 'u1', user_email: 'alice@corp.com' };
    assert.deepEqual(evaluate(flag({ rules: [rule('user_id', 'u1', false)] }), ctx), {
      enabled: true,
      reason: 'Flag enabled globally',
    });
    const def = flag({
      rolloutPercentage: 0,
      rules: [rule('user_id', 'u1', false), rule('email_domain', '@corp.com')],
    });
    assert.equal(evaluate(def, ctx).reason, 'Matched email_domain targeting rule');
    // A disabled duplicate with a better rank must not shadow the enabled one.
    const def2 = flag({
      rules: [rule('email_domain', '@corp.com', false), rule('user_id', 'u1'), rule('email_domain', '@corp.com')],
    });
    assert.equal(evaluate(def2, ctx).reason, 'Matched user_id targeting rule');
  });

  test('rules win over rollout', () => {
    const key = 'rules_vs_rollout';
    const outUser = findUser(key, (b) => b >= 10);
    const def = flag({ key, rolloutPercentage: 10, rules: [rule('user_id', outUser)] });
    assert.deepEqual(evaluate(def, { user_id: outUser }), { enabled: true, reason: 'Matched user_id targeting rule' });
    // Sanity: without the rule the same user is out of the rollout.
    assert.deepEqual(evaluate(flag({ key, rolloutPercentage: 10 }), { user_id: outUser }), {
      enabled: false,
      reason: 'User not in 10% rollout',
    });
  });

  test('user_id matching is exact and case-sensitive', () => {
    const def = flag({ rules: [rule('user_id', 'User1')] });
    assert.equal(evaluate(def, { user_id: 'User1' }).reason, 'Matched user_id targeting rule');
    assert.equal(evaluate(def, { user_id: 'user1' }).reason, 'Flag enabled globally');
    assert.equal(evaluate(def, { user_id: 'User1 ' }).reason, 'Flag enabled globally');
    assert.equal(evaluate(def, { user_id: 'User' }).reason, 'Flag enabled globally');
    // user_id rules never match on email.
    assert.equal(evaluate(def, { user_email: 'User1' }).reason, 'Flag enabled globally');
  });

  test('user_email matching is case-insensitive and trims the rule value', () => {
    const def = flag({ rules: [rule('user_email', '  Alice@Example.COM ')] });
    for (const email of ['alice@example.com', 'ALICE@EXAMPLE.COM', 'Alice@example.Com']) {
      assert.equal(evaluate(def, { user_email: email }).reason, 'Matched user_email targeting rule', email);
    }
    assert.equal(evaluate(def, { user_email: 'alice@example.co' }).reason, 'Flag enabled globally');
    assert.equal(evaluate(def, { user_email: 'xalice@example.com' }).reason, 'Flag enabled globally');
    assert.equal(evaluate(def, { user_id: 'alice@example.com' }).reason, 'Flag enabled globally');
  });

  test('email_domain matching is case-insensitive and exact on the domain after the last @', () => {
    const def = flag({ rules: [rule('email_domain', '@Corp.com')] });
    const match = (email: string) => evaluate(def, { user_email: email }).reason === 'Matched email_domain targeting rule';
    assert.equal(match('a@corp.com'), true);
    assert.equal(match('A@CORP.COM'), true);
    assert.equal(match('weird@name@corp.com'), true);
    assert.equal(match('a@notcorp.com'), false);
    assert.equal(match('a@eu.corp.com'), false);
    assert.equal(match('a@corp.com.evil.io'), false);
    assert.equal(match('a@corp.co'), false);
    assert.equal(match('corp.com'), false);
    assert.equal(match('a@corp.com@evil.io'), false);
    assert.equal(match(''), false);
  });

  test('email_domain rule value without @ is normalized at compile time', () => {
    const def = flag({ rules: [rule('email_domain', ' Example.com ')] });
    assert.equal(evaluate(def, { user_email: 'bob@example.com' }).reason, 'Matched email_domain targeting rule');
    assert.equal(evaluate(def, { user_email: 'bob@sub.example.com' }).reason, 'Flag enabled globally');
  });

  test('invalid or empty rule values never match', () => {
    const def = flag({
      rules: [rule('user_id', ''), rule('user_email', '   '), rule('email_domain', '@'), rule('email_domain', 'a b.com')],
    });
    assert.equal(evaluate(def, { user_id: '', user_email: '' }).reason, 'Flag enabled globally');
    assert.equal(evaluate(def, { user_email: 'x@a b.com' }).reason, 'Flag enabled globally');
    assert.equal(evaluate(def, { user_email: 'x@' }).reason, 'Flag enabled globally');
  });

  test('rollout: in and out reasons, using bucketOf(flag key, user_id)', () => {
    const key = 'rollout_flag';
    const def = flag({ key, rolloutPercentage: 30 });
    const inUser = findUser(key, (b) => b < 30);
    const edgeIn = findUser(key, (b) => b === 29);
    const edgeOut = findUser(key, (b) => b === 30);
    assert.deepEqual(evaluate(def, { user_id: inUser }), { enabled: true, reason: 'User in 30% rollout' });
    assert.deepEqual(evaluate(def, { user_id: edgeIn }), { enabled: true, reason: 'User in 30% rollout' });
    assert.deepEqual(evaluate(def, { user_id: edgeOut }), { enabled: false, reason: 'User not in 30% rollout' });
    // The bucket uses the flag key: the same user can land differently on another flag.
    for (let i = 0; i < 500; i++) {
      const id = `user_${i}`;
      const expected = bucketOf(key, id) < 30;
      assert.equal(evaluate(def, { user_id: id }).enabled, expected, id);
    }
  });

  test('rollout identifier falls back to email (as given), then anonymous; empty user_id falls back', () => {
    // Pick keys whose bucket for the fallback identifier is known, so each case
    // would give a different answer if the wrong identifier were used.
    const pick = (pred: (k: string) => boolean): string => {
      for (let i = 0; i < 100_000; i++) if (pred(`flag_${i}`)) return `flag_${i}`;
      throw new Error('no key');
    };
    const email = 'Alice@Example.com';

    const k1 = pick((k) => bucketOf(k, email) < 50 && bucketOf(k, email.toLowerCase()) >= 50 && bucketOf(k, 'anonymous') >= 50 && bucketOf(k, '') >= 50);
    const d1 = flag({ key: k1, rolloutPercentage: 50 });
    assert.deepEqual(evaluate(d1, { user_email: email }), { enabled: true, reason: 'User in 50% rollout' });
    assert.deepEqual(evaluate(d1, { user_id: '', user_email: email }), { enabled: true, reason: 'User in 50% rollout' });

    const k2 = pick((k) => bucketOf(k, 'anonymous') < 50 && bucketOf(k, '') >= 50);
    const d2 = flag({ key: k2, rolloutPercentage: 50 });
    assert.deepEqual(evaluate(d2, {}), { enabled: true, reason: 'User in 50% rollout' });
    assert.deepEqual(evaluate(d2, { user_id: '', user_email: '' }), { enabled: true, reason: 'User in 50% rollout' });

    const k3 = pick((k) => bucketOf(k, 'u1') < 50 && bucketOf(k, email) >= 50);
    const d3 = flag({ key: k3, rolloutPercentage: 50 });
    assert.deepEqual(evaluate(d3, { user_id: 'u1', user_email: email }), { enabled: true, reason: 'User in 50% rollout' });
  });

  test('compiled evaluation agrees with bucketOf(key, rolloutIdentifier(ctx))', () => {
    const contexts: EvaluationContext[] = [];
    for (let i = 0; i < 300; i++) {
      contexts.push({ user_id: `id-${i}` }, { user_email: `User${i}@Example.com` }, { user_id: '', user_email: `é${i}@x.fr` });
    }
    contexts.push({}, { user_id: '', user_email: '' });
    for (const pct of [1, 25, 50, 99]) {
      const def = flag({ key: `agree_${pct}`, rolloutPercentage: pct });
      const compiled = compileFlag(def);
      for (const ctx of contexts) {
        const expected = bucketOf(def.key, rolloutIdentifier(ctx)) < pct;
        assert.equal(compiled.evaluate(ctx).enabled, expected, JSON.stringify(ctx));
      }
    }
  });

  test('rollout 100: everyone is in', () => {
    const def = flag({ key: 'full', rolloutPercentage: 100 });
    for (let i = 0; i < 1000; i++) {
      assert.deepEqual(evaluate(def, { user_id: `u${i}` }), { enabled: true, reason: 'User in 100% rollout' });
    }
    assert.deepEqual(evaluate(def, {}), { enabled: true, reason: 'User in 100% rollout' });
  });

  test('rollout 0 with enabled flag: enabled globally for everyone', () => {
    const def = flag({ key: 'zero', rolloutPercentage: 0 });
    for (let i = 0; i < 200; i++) {
      assert.deepEqual(evaluate(def, { user_id: `u${i}` }), { enabled: true, reason: 'Flag enabled globally' });
    }
  });

  test('rollout distribution: 10k users at 30% land within 27-33%', () => {
    const compiled = compileFlag(flag({ key: 'distribution_check', rolloutPercentage: 30 }));
    let on = 0;
    const n = 10_000;
    for (let i = 0; i < n; i++) if (compiled.evaluate({ user_id: `user-${i}` }).enabled) on++;
    const share = on / n;
    assert.ok(share >= 0.27 && share <= 0.33, `share ${share}`);
  });

  test('a compiled set names its flags; outcomes are frozen constants', () => {
    const set = compileFlagSet([flag({ key: 'k', rolloutPercentage: 50, rules: [rule('user_id', 'u1')] }), flag({ key: 'd', enabled: false })]);
    assert.deepEqual(set.keys, ['k', 'd']);
    assert.ok(Object.isFrozen(set.keys));
    assert.ok(OUTCOMES.every((outcome) => Object.isFrozen(outcome)));
    assert.equal(set.evaluateFlag({}, 1), set.evaluateFlag({ user_id: 'u1' }, 1));
  });

  test('compiled flag does not observe later mutation of the definition', () => {
    const rules = [rule('user_id', 'u1')];
    const def = flag({ rules });
    const c = compileFlag(def);
    rules[0]!.value = 'u2';
    def.enabled = false;
    assert.equal(c.evaluate({ user_id: 'u1' }).reason, 'Matched user_id targeting rule');
  });

  test('context email normalization is not stale across contexts and flags', () => {
    const domainFlag = compileFlag(flag({ key: 'dom', rules: [rule('email_domain', '@a.com')] }));
    const emailFlag = compileFlag(flag({ key: 'em', rules: [rule('user_email', 'p@a.com')] }));
    const M_DOMAIN = 'Matched email_domain targeting rule';
    const M_EMAIL = 'Matched user_email targeting rule';
    const GLOBAL = 'Flag enabled globally';
    const seq: [ReturnType<typeof compileFlag>, string, string][] = [
      [domainFlag, 'p@a.com', M_DOMAIN],
      [emailFlag, 'q@b.com', GLOBAL], // new email seen by a flag that does not need the domain
      [domainFlag, 'q@b.com', GLOBAL], // must not reuse '@a.com'
      [domainFlag, 'P@A.COM', M_DOMAIN],
      [emailFlag, 'P@A.COM', M_EMAIL],
      [emailFlag, 'p@a.com.', GLOBAL],
      [domainFlag, 'no-at-sign', GLOBAL],
      [domainFlag, 'r@a.com', M_DOMAIN],
      [emailFlag, 'p@a.com', M_EMAIL],
    ];
    for (const [f, email, expected] of seq) {
      assert.equal(f.evaluate({ user_email: email }).reason, expected, `${f.key} ${email}`);
    }
  });

  test('scales to many rules: 1,000 mixed rules, lowest matching rank wins', () => {
    const rules: RuleDefinition[] = [];
    for (let i = 0; i < 1000; i++) {
      const t = RULE_TYPES[i % 3]!;
      rules.push(rule(t, t === 'user_id' ? `uid${i}` : t === 'user_email' ? `e${i}@x.com` : `@d${i}.com`));
    }
    const c = compileFlag(flag({ rules }));
    assert.equal(c.evaluate({ user_id: 'uid999' }).reason, 'Matched user_id targeting rule');
    assert.equal(c.evaluate({ user_email: 'E997@X.com' }).reason, 'Matched user_email targeting rule');
    assert.equal(c.evaluate({ user_email: 'who@d998.com' }).reason, 'Matched email_domain targeting rule');
    // uid999 (rank 999) loses to @d2.com (rank 2).
    assert.equal(c.evaluate({ user_id: 'uid999', user_email: 'z@d2.com' }).reason, 'Matched email_domain targeting rule');
    assert.equal(c.evaluate({ user_id: 'nobody', user_email: 'z@nowhere.com' }).reason, 'Flag enabled globally');
  });
});

describe('validation helpers', () => {
  test('normalizeEmailDomain', () => {
    assert.equal(normalizeEmailDomain('@example.com'), '@example.com');
    assert.equal(normalizeEmailDomain('example.com'), '@example.com');
    assert.equal(normalizeEmailDomain('  @Example.COM  '), '@example.com');
    assert.equal(normalizeEmailDomain('localhost'), '@localhost');
    assert.equal(normalizeEmailDomain(''), null);
    assert.equal(normalizeEmailDomain('   '), null);
    assert.equal(normalizeEmailDomain('@'), null);
    assert.equal(normalizeEmailDomain('@@example.com'), null);
    assert.equal(normalizeEmailDomain('a@example.com'), null);
    assert.equal(normalizeEmailDomain('exa mple.com'), null);
    assert.equal(normalizeEmailDomain('example.com\t.org'), null);
  });

  test('looksLikeEmail', () => {
    assert.equal(looksLikeEmail('alice@example.com'), true);
    assert.equal(looksLikeEmail('a@b'), true);
    assert.equal(looksLikeEmail('  alice@example.com '), true);
    assert.equal(looksLikeEmail(''), false);
    assert.equal(looksLikeEmail('alice'), false);
    assert.equal(looksLikeEmail('@example.com'), false);
    assert.equal(looksLikeEmail('alice@'), false);
    assert.equal(looksLikeEmail('a@b@c.com'), false);
    assert.equal(looksLikeEmail('al ice@example.com'), false);
    assert.equal(looksLikeEmail('alice@exa mple.com'), false);
  });
});

describe('bucketing key', () => {
  test('the rollout hashes the bucketing key in place of the flag key', () => {
    // bucketOf('dark_mode', 'user_1') is 47: a 48% rollout takes user_1 in, a 47% one leaves them out.
    for (const [n, enabled] of [[48, true], [47, false]] as const) {
      const set = compileFlagSet([flag({ key: 'night_theme', bucketingKey: 'dark_mode', rolloutPercentage: n })]);
      assert.equal(OUTCOMES[set.evaluateFlag({ user_id: 'user_1' }, 0) & 255]!.enabled, enabled, String(n));
    }
    for (let i = 0; i < 200; i++) {
      const id = `u-${i}`;
      const set = compileFlagSet([flag({ key: 'other', bucketingKey: 'beta-ui', rolloutPercentage: 30 })]);
      assert.equal(OUTCOMES[set.evaluateFlag({ user_id: id }, 0) & 255]!.enabled, bucketOf('beta-ui', id) < 30, id);
    }
  });
});
