/**
 * @guidon/sdk in local mode (docs/local-evaluation.md) against the real server: equivalence with
 * POST /sdk/v1/evaluate on random environments (every rule type, operator, segments, variants,
 * rollouts) and contexts (≥ 10,000 contexts a run, every
 * flag of the environment each), freshness over the stream (≤ 1 s), the last ruleset kept while
 * the server is away and caught up after a restart, a ruleset of an unknown format
 * refused, the file bootstrap, and usage reports feeding the metrics, each counted once.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createClient, type GuidonError, type JsonValue, type LocalClient, type LocalClientOptions } from '@guidon/sdk';
import { eventually, flagsPath, freePort, newFlag, newProject, newUser, request, startServer, type TestProject, type TestServer, type TestUser } from '@guidon/server/dist/tests/harness.js';
import { createTestDatabase, onPostgres } from '@guidon/server/dist/tests/test-database.js';
import { startChildServer, type ChildServer } from '@guidon/server/dist/tests/child-server.js';
import { startCuttingProxy } from '@guidon/server/dist/tests/cutting-proxy.js';

const clients: LocalClient[] = [];
function local(options: Omit<LocalClientOptions, 'mode'>): LocalClient {
  const made = createClient({ ...options, mode: 'local' });
  clients.push(made);
  return made;
}
after(() => Promise.all(clients.map((c) => c.close())));

async function apiToken(server: TestServer, user: TestUser, project: TestProject): Promise<string> {
  const created = await request(server, 'POST', '/api/tokens', { token: user.token, body: { name: 'local', project_id: project.id, role: 'viewer' } });
  assert.equal(created.status, 201, created.text);
  return created.body.token;
}

function errorsOf(c: LocalClient): GuidonError[] {
  const seen: GuidonError[] = [];
  c.on('error', (error) => seen.push(error));
  return seen;
}

/** mulberry32: a small seeded PRNG, so a failing run can be replayed with its seed. */
function prng(seed: number) {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const int = (n: number) => Math.floor(next() * n);
  const pick = <T>(items: readonly T[]): T => items[int(items.length)]!;
  const chance = (p: number) => next() < p;
  return { next, int, pick, chance };
}
type Random = ReturnType<typeof prng>;

const USER_IDS = ['u1', 'u2', 'u3', 'vip', 'alice', 'bob', 'Bob', 'user-42', ''];
const EMAILS = ['a@corp.com', 'B@Corp.com', 'c@notcorp.com', 'd@eu.corp.com', 'alice@example.com', 'x@example.org', 'no-at-sign', ''];
const PLANS = ['free', 'pro', 'enterprise', 'Pro', 'beta'];
const VERSIONS = ['1.0.0', '2.3.9', '2.4.0', '2.4.1-beta', '3.0.0', 'not-a-version', '10.2.3'];
const DATES = ['2025-01-01', '2026-06-15T10:00:00Z', '2027-03-01T00:00:00+02:00', 'yesterday'];
const IPS = ['10.1.2.3', '192.168.0.7', '8.8.8.8', '::1', 'nope'];
const COUNTRIES = ['fr', 'de', 'us', 'FR', 'jp'];

/** A random condition on one of the attributes the contexts carry. */
function condition(r: Random, segments: readonly string[]): Record<string, unknown> {
  const flags = () => ({ ...(r.chance(0.2) ? { negate: true } : {}) });
  switch (r.int(11)) {
    case 0:
      return { attribute: 'plan', operator: r.pick(['IN', 'NOT_IN']), values: PLANS.filter(() => r.chance(0.4)).concat('pro'), ...(r.chance(0.3) ? { case_insensitive: true } : {}), ...flags() };
    case 1:
      return { attribute: 'plan', operator: r.pick(['STR_CONTAINS', 'STR_STARTS_WITH', 'STR_ENDS_WITH']), values: [r.pick(['r', 'pr', 'o', 'ent', 'E'])], ...(r.chance(0.3) ? { case_insensitive: true } : {}), ...flags() };
    case 2:
      return { attribute: 'age', operator: r.pick(['NUM_EQ', 'NUM_GT', 'NUM_GTE', 'NUM_LT', 'NUM_LTE']), values: [String(r.pick([18, 21, 30.5, 65]))], ...flags() };
    case 3:
      return { attribute: 'app_version', operator: r.pick(['SEMVER_EQ', 'SEMVER_GT', 'SEMVER_GTE', 'SEMVER_LT', 'SEMVER_LTE']), values: [r.pick(['2.4.0', '1.0.0', '3.0.0', '2.4.1-beta'])], ...flags() };
    case 4:
      return { attribute: 'signup', operator: r.pick(['DATE_AFTER', 'DATE_BEFORE']), values: [r.pick(['2026-01-01', '2026-06-15T10:00:00Z'])], ...flags() };
    case 5:
      return { attribute: 'ip', operator: 'IN_CIDR', values: [r.pick(['10.0.0.0/8', '192.168.0.0/16', '::1/128'])], ...flags() };
    case 6:
      return { attribute: 'user_email', operator: 'REGEX', values: [r.pick(['@corp\\.com$', '^a', 'example'])], ...(r.chance(0.3) ? { case_insensitive: true } : {}), ...flags() };
    case 7:
      return { attribute: r.pick(['beta', 'plan', 'missing']), operator: 'EXISTS', ...flags() };
    case 8:
      return segments.length > 0 ? { operator: 'IN_SEGMENT', values: [r.pick(segments)], ...flags() } : { attribute: 'country', operator: 'IN', values: ['fr'] };
    case 9:
      return { attribute: r.pick(['email_domain', 'environment', 'user_id']), operator: 'IN', values: [r.pick(['corp.com', 'production', 'staging', 'u1', 'vip'])], ...flags() };
    default:
      return { attribute: 'country', operator: r.pick(['IN', 'NOT_IN']), values: COUNTRIES.filter(() => r.chance(0.5)).concat('fr'), ...flags() };
  }
}

/** A random context drawn from the same pools as the rules (so that rules match often). */
function context(r: Random): Record<string, unknown> {
  const ctx: Record<string, unknown> = {};
  if (r.chance(0.8)) ctx.user_id = r.chance(0.8) ? r.pick(USER_IDS) : `user-${r.int(100_000)}`;
  if (r.chance(0.6)) ctx.user_email = r.pick(EMAILS);
  if (r.chance(0.8)) {
    const attributes: Record<string, unknown> = {};
    if (r.chance(0.6)) attributes.plan = r.pick(PLANS);
    if (r.chance(0.5)) attributes.age = r.pick([17, 18, 21, 30.5, 64, '30', 'old', true]);
    if (r.chance(0.5)) attributes.app_version = r.pick(VERSIONS);
    if (r.chance(0.4)) attributes.signup = r.pick(DATES);
    if (r.chance(0.4)) attributes.ip = r.pick(IPS);
    if (r.chance(0.4)) attributes.country = r.pick(COUNTRIES);
    if (r.chance(0.3)) attributes.beta = r.pick([true, false, 'yes', null]);
    if (r.chance(0.1)) attributes.environment = 'staging'; // ignored: the evaluated environment wins
    ctx.custom_attributes = attributes;
  }
  return ctx;
}

/** A default of the value's JSON type (what an application passes to value()). */
function defaultLike(value: unknown): JsonValue {
  if (Array.isArray(value)) return [];
  if (value === null) return null;
  if (typeof value === 'object') return {};
  return typeof value === 'string' ? '' : typeof value === 'number' ? 0 : false;
}

/** 2–4 variants of one JSON type, weights summing to 1000 (some 0, sometimes one with all). */
function randomVariants(r: Random): { key: string; value: unknown; weight: number }[] {
  const count = 2 + r.int(3);
  const type = r.int(4);
  const weights = Array.from({ length: count }, () => 0);
  if (r.chance(0.2)) weights[r.int(count)] = 1000;
  else for (let left = 1000, i = 0; i < count; i++) left -= weights[i] = i === count - 1 ? left : r.int(left + 1);
  return weights.map((weight, i) => ({
    key: `v${i}`,
    value: type === 0 ? `text ${i}` : type === 1 ? i * 10 + 0.5 : type === 2 ? i % 2 === 0 : { arm: i, list: [i, 'x'] },
    weight,
  }));
}

/** Fills the project's production environment with random segments, flags and rules through the API. */
async function randomEnvironment(server: TestServer, user: TestUser, project: TestProject, r: Random): Promise<void> {
  const api = async (method: string, path: string, body: unknown) => {
    const answer = await request(server, method, path, { token: user.token, body });
    assert.ok(answer.status < 300, `${method} ${path} ${JSON.stringify(body)}: ${answer.status} ${answer.text}`);
    return answer.body;
  };
  const segments: string[] = [];
  for (let s = 0; s < 3; s++) {
    const key = `seg-${s}`;
    await api('POST', `/api/projects/${project.id}/segments`, { key, name: key, conditions: Array.from({ length: 1 + r.int(2) }, () => condition(r, [])) });
    segments.push(key);
  }
  const made: { id: string; key: string; variants: string[] }[] = [];
  for (let f = 0; f < 12; f++) {
    const variants = r.chance(0.4) ? randomVariants(r) : [];
    const flag = await api('POST', flagsPath(project), {
      key: `flag-${f}`,
      name: `flag ${f}`,
      enabled: r.chance(0.85),
      rollout_percentage: r.pick([0, 0, 100, 10, 50, 1 + r.int(99)]),
      ...(variants.length > 0 ? { variants, off_variant: r.pick(variants).key } : {}),
    });
    made.push({ id: flag.id, key: flag.key, variants: variants.map((variant) => variant.key) });
    if (r.chance(0.25)) await api('PUT', `${flagsPath(project)}/${flag.id}`, { everyone_else: 'off' });
    for (let n = r.int(5); n > 0; n--) {
      const common = { priority: r.int(4), enabled: r.chance(0.85), ...(r.chance(0.3) ? { rollout_percentage: r.int(101) } : {}), ...(r.chance(0.25) ? { serve: false } : {}) };
      const type = r.pick(['user_id', 'user_email', 'email_domain', 'conditions', 'conditions']);
      const body =
        type === 'user_id'
          ? { rule_type: type, rule_value: r.pick(USER_IDS.filter(Boolean)) }
          : type === 'user_email'
            ? { rule_type: type, rule_value: r.pick(['a@corp.com', 'b@corp.com', 'alice@example.com']) }
            : type === 'email_domain'
              ? { rule_type: type, rule_value: r.pick(['corp.com', '@example.com', 'eu.corp.com']) }
              : { rule_type: type, conditions: Array.from({ length: 1 + r.int(3) }, () => condition(r, segments)) };
      const pinned = variants.length > 0 && !('serve' in common) && r.chance(0.5) ? { variant: r.pick(variants).key } : {};
      await api('POST', `${flagsPath(project)}/${flag.id}/rules`, { ...body, ...common, ...pinned });
    }
  }
  // Prerequisites (docs/prerequisites.md) on earlier flags (no cycle), a missing one now and then,
  // some bound to variants or to the off state; a chain the server finds too deep is left out.
  for (const [f, flag] of made.entries()) {
    if (f === 0 || !r.chance(0.4)) continue;
    const parents = new Map<string, Record<string, unknown>>();
    for (let n = 1 + r.int(3); n > 0; n--) {
      const parent = r.chance(0.1) ? { key: 'ghost', variants: [] } : made[r.int(f)]!;
      const bound = parent.variants.length > 0 && r.chance(0.5) ? { variants: [r.pick(parent.variants)] } : r.chance(0.2) ? { enabled: false } : {};
      parents.set(parent.key, { flag_key: parent.key, ...bound });
    }
    const answer = await request(server, 'PUT', `${flagsPath(project)}/${flag.id}`, { token: user.token, body: { prerequisites: [...parents.values()] } });
    if (answer.status === 400 && /deeper than/.test(answer.text)) continue;
    assert.equal(answer.status, 200, answer.text);
  }
}

describe('local evaluation equals POST /sdk/v1/evaluate', () => {
  let server: TestServer;
  before(async () => {
    server = await startServer();
  });
  after(() => server.close());

  test('random environments and contexts: ≥ 10,000 contexts, every flag of each compared', async () => {
    const seed = Number(process.env.GUIDON_PROPERTY_SEED ?? Date.now() % 1_000_000);
    const r = prng(seed);
    const environments = 5;
    const contextsPerEnvironment = 2000;
    let compared = 0;
    const reasons = new Set<string>();
    const variantsServed = new Set<string>();
    for (let e = 0; e < environments; e++) {
      const user = await newUser(server);
      const project = await newProject(server, user, `property ${e}`);
      await randomEnvironment(server, user, project, r);
      const c = local({ baseUrl: server.url, apiToken: await apiToken(server, user, project), environment: 'production', sendUsage: false });
      assert.equal(await c.ready(), true);
      // Batches of concurrent requests: the server answers them in parallel, the comparison is per context.
      for (let done = 0; done < contextsPerEnvironment; done += 50) {
        const batch = Array.from({ length: 50 }, () => context(r));
        const answers = await Promise.all(batch.map((ctx) => request(server, 'POST', '/sdk/v1/evaluate', { sdkKey: project.sdk_key, body: { environment: 'production', context: ctx } })));
        batch.forEach((ctx, i) => {
          assert.equal(answers[i]!.status, 200, answers[i]!.text);
          const what = `seed ${seed}, environment ${e}, context ${JSON.stringify(ctx)}`;
          assert.deepEqual(c.evaluate(ctx as never).allFlags(), answers[i]!.body.flags, what);
          // Read one by one (the engine's one-flag path) the flags answer the same.
          const one = c.evaluate(ctx as never);
          for (const [key, expected] of Object.entries(answers[i]!.body.flags as Record<string, { enabled: boolean; reason: string; variant?: string; value?: unknown }>)) {
            assert.equal(one.isEnabled(key), expected.enabled, `${what}: ${key}`);
            assert.equal(one.reason(key), expected.reason, `${what}: ${key}`);
            assert.equal(one.variant(key), expected.variant, `${what}: ${key}`);
            if ('variant' in expected) {
              // The value, asked with a default of its own JSON type; a default of another type is answered back.
              assert.deepEqual(one.value(key, defaultLike(expected.value)), expected.value, `${what}: ${key}`);
              const other = typeof expected.value === 'string' ? 0 : 'fallback';
              assert.equal(one.value(key, other), other, `${what}: ${key}`);
            } else assert.equal(one.value(key, 'fallback'), 'fallback', `${what}: ${key}`);
          }
          compared++;
          for (const { reason, variant } of Object.values(answers[i]!.body.flags as Record<string, { reason: string; variant?: string }>)) {
            reasons.add(reason.replace(/\d+%/, 'N%').replace(/^Prerequisite .* not met$/, 'Prerequisite P not met'));
            if (variant !== undefined) variantsServed.add(variant);
          }
        });
      }
    }
    assert.ok(compared >= 10_000, `${compared} contexts`);
    // The random environments reach every kind of answer (else the comparison would prove little).
    for (const reason of ['Flag is globally disabled', 'Flag enabled globally', 'Matched user_id targeting rule', 'Matched user_email targeting rule', 'Matched email_domain targeting rule', 'Matched conditions targeting rule', 'User in N% rollout', 'User not in N% rollout', 'No targeting rule matched', 'Prerequisite P not met']) {
      assert.ok(reasons.has(reason), `seed ${seed}: no answer "${reason}" in ${[...reasons].join(', ')}`);
    }
    assert.ok(variantsServed.size >= 3, `seed ${seed}: variants served: ${[...variantsServed].join(', ')}`);
  });
});

describe('local mode against a running Guidon', () => {
  let server: TestServer;
  let user: TestUser;
  let project: TestProject;
  let token: string;
  const flagIds: Record<string, string> = {};

  before(async () => {
    server = await startServer();
    user = await newUser(server);
    project = await newProject(server, user);
    token = await apiToken(server, user, project);
    flagIds.checkout = (await newFlag(server, user, project, { key: 'checkout', enabled: false })).id;
    flagIds.beta = (await newFlag(server, user, project, { key: 'beta', enabled: true })).id;
    await request(server, 'POST', `${flagsPath(project)}/${flagIds.beta}/rules`, { token: user.token, body: { rule_type: 'user_id', rule_value: 'vip', serve: true } });
    await request(server, 'PUT', `${flagsPath(project)}/${flagIds.beta}`, { token: user.token, body: { everyone_else: 'off' } });
  });
  after(() => server.close());

  // Usage off unless a test is about it: another test's reports must not land in its counts.
  const options = (extra: Partial<LocalClientOptions> = {}) => ({ baseUrl: server.url, apiToken: token, environment: 'production', sendUsage: false, ...extra });
  const toggle = (key: string) => request(server, 'POST', `${flagsPath(project)}/${flagIds[key]}/toggle`, { token: user.token });

  test('ready(), then synchronous answers: isEnabled, reason, variant, value, allFlags; unknown flags read off', async () => {
    const c = local(options());
    assert.equal(await c.ready(), true);
    const vip = c.evaluate({ user_id: 'vip' });
    assert.equal(vip.isEnabled('beta'), true);
    assert.equal(vip.reason('beta'), 'Matched user_id targeting rule');
    assert.equal(vip.isEnabled('checkout'), false);
    assert.equal(vip.reason('checkout'), 'Flag is globally disabled');
    assert.equal(vip.variant('beta'), undefined, 'a flag without variants');
    assert.equal(vip.value('beta', 'fallback'), 'fallback');
    assert.equal(vip.isEnabled('nope'), false);
    assert.equal(vip.reason('nope'), 'Flag not in the ruleset');
    assert.deepEqual(c.evaluate({ user_id: 'someone' }).allFlags(), { checkout: { enabled: false, reason: 'Flag is globally disabled' }, beta: { enabled: false, reason: 'No targeting rule matched' } });
    // The kind comes from the engine with the state, the reason's text unchanged.
    assert.deepEqual(vip.resolution('beta'), { state: { enabled: true, reason: 'Matched user_id targeting rule' }, kind: 'TARGETING_MATCH' });
    assert.deepEqual(vip.resolution('checkout'), { state: { enabled: false, reason: 'Flag is globally disabled' }, kind: 'DISABLED' });
    assert.deepEqual(c.evaluate({ user_id: 'someone' }).resolution('beta'), { state: { enabled: false, reason: 'No targeting rule matched' }, kind: 'DEFAULT' });
    assert.deepEqual(vip.resolution('nope'), { state: { enabled: false, reason: 'Flag not in the ruleset' } });
    assert.equal(c.ruleset()?.format, 1);
  });

  test('prerequisites: the local client answers as evaluate does, and a parent toggled changes the child', async () => {
    const child = await newFlag(server, user, project, { key: 'child_of_beta', enabled: true, prerequisites: [{ flag_key: 'beta' }] });
    const c = local(options({ pollIntervalMs: 60_000 }));
    assert.equal(await c.ready(), true);
    await eventually(() => c.ruleset()?.flags.some((flag) => flag.key === 'child_of_beta') === true, 'the child in the ruleset');
    assert.equal(c.ruleset()?.format, 2);
    assert.deepEqual(c.evaluate({ user_id: 'vip' }).flag('child_of_beta'), { enabled: true, reason: 'Flag enabled globally' });
    assert.deepEqual(c.evaluate({ user_id: 'someone' }).flag('child_of_beta'), { enabled: false, reason: 'Prerequisite beta not met' });
    assert.deepEqual(c.evaluate({ user_id: 'someone' }).resolution('child_of_beta'), { state: { enabled: false, reason: 'Prerequisite beta not met' }, kind: 'PREREQUISITE_FAILED', prerequisite: 'beta' });
    // (What evaluate answers for the same is compared in the random environments above; no remote
    // evaluation here, which would add to the usage counts the tests below read.)
    await eventually(() => c.ruleset() !== undefined, 'ready');
    assert.equal((await request(server, 'PUT', `${flagsPath(project)}/${flagIds.beta}`, { token: user.token, body: { everyone_else: 'rollout' } })).status, 200);
    await eventually(() => c.evaluate({ user_id: 'someone' }).isEnabled('child_of_beta'), 'the child on for everyone once its parent is');
    assert.equal((await request(server, 'PUT', `${flagsPath(project)}/${flagIds.beta}`, { token: user.token, body: { everyone_else: 'off' } })).status, 200);
    await eventually(() => !c.evaluate({ user_id: 'someone' }).isEnabled('child_of_beta'), 'the child off again');
    assert.equal((await request(server, 'DELETE', `${flagsPath(project)}/${child.id}`, { token: user.token })).status, 204);
  });

  test('a change reaches the local client (the stream)', async () => {
    const c = local(options({ pollIntervalMs: 60_000 }));
    assert.equal(await c.ready(), true);
    const changes: number[] = [];
    c.on('change', ({ revision }) => changes.push(revision));
    await new Promise((resolve) => setTimeout(resolve, 200)); // the stream is open
    for (let i = 0; i < 3; i++) {
      const before = c.evaluate().isEnabled('checkout');
      await toggle('checkout');
      await eventually(() => c.evaluate().isEnabled('checkout') !== before, `toggle ${i} seen locally`);
    }
    assert.ok(changes.length >= 3);
  });

  /**
   * A fetch that counts the ruleset requests (and may change answers' ETag until `counted.rewriting`
   * is set false): the requests still go to the server.
   */
  const rulesetCounter = (rewriteEtag?: string) => {
    const counted = { ruleset: 0, streams: 0, rewriting: rewriteEtag !== undefined };
    const counting: typeof fetch = async (input, init) => {
      const response = await fetch(input, init);
      if (String(input).includes('/sdk/v1/stream')) counted.streams++;
      if (!String(input).includes('/sdk/v1/ruleset')) return response;
      counted.ruleset++;
      if (!counted.rewriting || rewriteEtag === undefined || response.status !== 200) return response;
      // As if this answer came from elsewhere with another ETag (another instance's older revision).
      const headers = new Headers(response.headers);
      headers.set('etag', rewriteEtag);
      headers.delete('content-encoding');
      headers.delete('content-length');
      return new Response(await response.text(), { status: response.status, headers });
    };
    return { counted, counting };
  };

  /** A client fetching through `counting`, ready, and its stream followed by the server. */
  const following = async (counted: ReturnType<typeof rulesetCounter>['counted'], counting: typeof fetch) => {
    const c = local(options({ pollIntervalMs: 60_000, fetch: counting }));
    assert.equal(await c.ready(), true);
    await eventually(() => counted.streams === 1, 'the stream opened');
    await new Promise((resolve) => setTimeout(resolve, 200)); // the server follows the stream
    return c;
  };

  test('a change travels in the stream message: the client applies its patch, fetches no ruleset, and holds what a fetch gives', async () => {
    const { counted, counting } = rulesetCounter();
    const c = await following(counted, counting);
    const fetchedAtStart = counted.ruleset;
    const changes: string[][] = [];
    c.on('change', ({ keys }) => changes.push(keys));
    for (let i = 0; i < 3; i++) {
      const before = c.evaluate().isEnabled('checkout');
      await toggle('checkout');
      await eventually(() => c.evaluate().isEnabled('checkout') !== before, `toggle ${i} seen locally`);
    }
    assert.equal(counted.ruleset, fetchedAtStart, 'no ruleset request: the patches carried the changes');
    assert.deepEqual(changes, [['checkout'], ['checkout'], ['checkout']], 'a change event per patch, naming the flag');
    const fresh = await request(server, 'GET', '/sdk/v1/ruleset?environment=production', { headers: { authorization: `Bearer ${token}` } });
    assert.deepEqual(c.ruleset(), fresh.body, 'the patched ruleset is the one the server answers');
  });

  test('a client holding another ETag than the patch starts from fetches the ruleset, and then holds the current one', async () => {
    const { counted, counting } = rulesetCounter('W/"from-elsewhere"');
    const c = await following(counted, counting);
    // Until now every answer came "from elsewhere": also the fetch a stream opened shortly after a change asks for (docs/sdk.md).
    counted.rewriting = false;
    const fetchedAtStart = counted.ruleset;
    const before = c.evaluate().isEnabled('checkout');
    await toggle('checkout');
    await eventually(() => c.evaluate().isEnabled('checkout') !== before, 'the toggle seen locally');
    assert.equal(counted.ruleset, fetchedAtStart + 1, 'the patch did not start from its ETag: one fetch');
    const fresh = await request(server, 'GET', '/sdk/v1/ruleset?environment=production', { headers: { authorization: `Bearer ${token}` } });
    assert.deepEqual(c.ruleset(), fresh.body);
    // Its ETag is now the server's: the next change travels as a patch.
    const again = c.evaluate().isEnabled('checkout');
    await toggle('checkout');
    await eventually(() => c.evaluate().isEnabled('checkout') !== again, 'the next toggle seen locally');
    assert.equal(counted.ruleset, fetchedAtStart + 1, 'the next change is patched');
  });

  test('a change too big for a patch travels whole: the client holds the ruleset from the message, fetches none, and holds what a fetch gives', async () => {
    const { counted, counting } = rulesetCounter();
    const c = await following(counted, counting);
    const fetchedAtStart = counted.ruleset;
    // Three 7,000-character values: a patch over 16 KiB, a ruleset under 64 KiB (docs/local-evaluation.md).
    const created = await request(server, 'POST', flagsPath(project), {
      token: user.token,
      body: { key: 'large', name: 'large', enabled: true, variants: ['p', 'q', 'r'].map((key, i) => ({ key, value: key.repeat(7000), weight: i === 0 ? 400 : 300 })), off_variant: 'p' },
    });
    assert.equal(created.status, 201, created.text);
    await eventually(() => c.evaluate().variant('large') !== undefined, 'the large flag held locally');
    assert.equal(counted.ruleset, fetchedAtStart, 'no ruleset request: the message carried it');
    const fresh = await request(server, 'GET', '/sdk/v1/ruleset?environment=production', { headers: { authorization: `Bearer ${token}` } });
    assert.deepEqual(c.ruleset(), fresh.body);
    assert.equal((await request(server, 'DELETE', `${flagsPath(project)}/${created.body.id}`, { token: user.token })).status, 204);
  });

  test('a change made while the stream was away comes with the reconnect, the ruleset whole: the client fetches none (docs/sdk.md, "Reconnecting")', async (t) => {
    const proxy = await startCuttingProxy(server.url);
    t.after(() => proxy.close());
    const c = local(options({ baseUrl: proxy.url, pollIntervalMs: 600_000 }));
    const events: string[] = [];
    for (const event of ['ready', 'stale'] as const) c.on(event, () => events.push(event));
    assert.equal(await c.ready(), true);
    await eventually(() => proxy.forwarded.includes('/sdk/v1/stream'), 'the stream open');
    await new Promise((resolve) => setTimeout(resolve, 300)); // its opening read
    const before = c.evaluate().isEnabled('checkout');
    const fetched = () => proxy.forwarded.filter((path) => path === '/sdk/v1/ruleset').length;
    const fetchedBefore = fetched();
    proxy.cutStreams(true);
    await eventually(() => events.join() === 'ready,stale', 'stale once the stream broke');
    await toggle('checkout');
    proxy.releaseStreams();
    await eventually(() => events.join() === 'ready,stale,ready' && c.evaluate().isEnabled('checkout') !== before, 'the change held, ready again');
    assert.equal(fetched(), fetchedBefore, 'no ruleset request');
    const fresh = await request(server, 'GET', '/sdk/v1/ruleset?environment=production', { headers: { authorization: `Bearer ${token}` } });
    assert.deepEqual(c.ruleset(), fresh.body);
  });

  test('polling with ETag when the stream is off', async () => {
    const calls: { url: string; ifNoneMatch: string | null; status: number }[] = [];
    const counting: typeof fetch = async (input, init) => {
      const response = await fetch(input, init);
      calls.push({ url: String(input), ifNoneMatch: new Headers(init?.headers).get('if-none-match'), status: response.status });
      return response;
    };
    const c = local(options({ stream: false, pollIntervalMs: 100, fetch: counting }));
    assert.equal(await c.ready(), true);
    await eventually(() => calls.filter((call) => call.url.includes('/sdk/v1/ruleset') && call.status === 304).length >= 2, 'conditional polls answered 304');
    assert.ok(calls.filter((call) => call.status === 304).every((call) => call.ifNoneMatch !== null));
    const before = c.evaluate().isEnabled('checkout');
    await toggle('checkout');
    await eventually(() => c.evaluate().isEnabled('checkout') !== before, 'the change, polled');
  });

  test('usage: counted per flag as read, sent on close() into the metrics and last_evaluated_at', async () => {
    const metrics = async (key: string) => (await request(server, 'GET', `${flagsPath(project)}/${flagIds[key]}/metrics?hours=2`, { token: user.token })).body.totals;
    const before = { checkout: await metrics('checkout'), beta: await metrics('beta') };
    const c = local(options({ sendUsage: true, usageIntervalMs: 60_000 }));
    assert.equal(await c.ready(), true);
    for (let i = 0; i < 100; i++) {
      const flags = c.evaluate({ user_id: i % 4 === 0 ? 'vip' : `u${i}` });
      flags.isEnabled('beta');
      flags.isEnabled('beta'); // one flag set, one evaluation
      if (i < 10) flags.isEnabled('checkout');
    }
    await c.close();
    assert.deepEqual(await metrics('beta'), { enabled: before.beta.enabled + 25, disabled: before.beta.disabled + 75 });
    const checkout = await metrics('checkout');
    assert.equal(checkout.enabled + checkout.disabled, before.checkout.enabled + before.checkout.disabled + 10);
  });

  test('usage: a report whose answer was lost (the connection cut after Guidon counted it) is sent again and counted once', async (t) => {
    const proxy = await startCuttingProxy(server.url);
    t.after(() => proxy.close());
    const metrics = async () => (await request(server, 'GET', `${flagsPath(project)}/${flagIds.beta}/metrics?hours=2`, { token: user.token })).body.totals;
    const before = await metrics();
    const lost = proxy.loseNextAnswer('/sdk/v1/usage');
    const c = local(options({ baseUrl: proxy.url, stream: false, sendUsage: true, usageIntervalMs: 100 }));
    const seen = errorsOf(c);
    assert.equal(await c.ready(), true);
    for (let i = 0; i < 10; i++) c.evaluate({ user_id: i < 3 ? 'vip' : `u${i}` }).isEnabled('beta');
    await lost;
    await eventually(() => proxy.forwarded.filter((path) => path === '/sdk/v1/usage').length >= 2, 'the report sent again');
    await c.close();
    assert.ok(seen.some((error) => error.kind === 'network'), 'the lost answer is reported');
    assert.deepEqual(await metrics(), { enabled: before.enabled + 3, disabled: before.disabled + 7 });
  });

  test('usage is also sent every interval', async () => {
    const metrics = async () => (await request(server, 'GET', `${flagsPath(project)}/${flagIds.checkout}/metrics?hours=2`, { token: user.token })).body.totals;
    const before = await metrics();
    const c = local(options({ sendUsage: true, usageIntervalMs: 200 }));
    assert.equal(await c.ready(), true);
    c.evaluate().allFlags();
    await eventually(async () => {
      const now = await metrics();
      return now.enabled + now.disabled === before.enabled + before.disabled + 1;
    }, 'the periodic report');
  });

  test('a token of every project names the project with `project`; without it the server says 400', async () => {
    const everyProject = (await request(server, 'POST', '/api/tokens', { token: user.token, body: { name: 'every project' } })).body.token as string;
    const betaTotal = async () => {
      const { totals } = (await request(server, 'GET', `${flagsPath(project)}/${flagIds.beta}/metrics?hours=2`, { token: user.token })).body;
      return totals.enabled + totals.disabled;
    };
    const before = await betaTotal();
    const named = local(options({ apiToken: everyProject, project: project.id, sendUsage: true, usageIntervalMs: 60_000 }));
    assert.equal(await named.ready(), true);
    assert.equal(named.evaluate({ user_id: 'vip' }).isEnabled('beta'), true);
    await named.close();
    assert.equal(await betaTotal(), before + 1, 'its usage report names the project too');
    const unnamed = local(options({ apiToken: everyProject }));
    const seen = errorsOf(unnamed);
    assert.equal(await unnamed.ready(), false);
    assert.ok(seen.some((error) => error.status === 400));
  });

  test('an SDK key instead of a token: ready() false and an error event, never a throw', async () => {
    const c = local(options({ apiToken: project.sdk_key }));
    const seen = errorsOf(c);
    assert.equal(await c.ready(), false);
    assert.ok(seen.some((error) => error.status === 403));
    assert.equal(c.evaluate({ user_id: 'vip' }).isEnabled('beta'), false);
    assert.equal(c.evaluate().reason('beta'), 'Fallback: no ruleset from Guidon');
  });
});

describe('when Guidon is away', () => {
  test('the last ruleset keeps answering while the server is down, and the client catches up after a restart', async (t) => {
    const database = await createTestDatabase();
    const port = await freePort();
    let server = await startServer({}, { database, port });
    t.after(async () => {
      await server.close().catch(() => undefined);
      await database.drop();
    });
    const user = await newUser(server);
    const project = await newProject(server, user);
    const flag = await newFlag(server, user, project, { key: 'f', enabled: true });
    const c = local({ baseUrl: server.url, apiToken: await apiToken(server, user, project), environment: 'production', pollIntervalMs: 60_000 });
    assert.equal(await c.ready(), true);
    const stale: number[] = [];
    c.on('stale', () => stale.push(Date.now()));

    await server.close();
    await eventually(() => stale.length > 0, 'stale once the stream is gone');
    assert.equal(c.evaluate().isEnabled('f'), true, 'answered from the last ruleset');
    server = await startServer({}, { database, port });
    const login = await request(server, 'POST', '/auth/login', { body: { email: user.email, password: user.password } });
    await request(server, 'POST', `${flagsPath(project)}/${flag.id}/toggle`, { token: login.body.token });
    await eventually(() => !c.evaluate().isEnabled('f'), 'the change made after the restart', 15_000);
  });

  test('a server killed (SIGKILL) and started again: the client answers from its last ruleset meanwhile, and catches up after', async (t) => {
    const database = await createTestDatabase();
    const setup = await startServer({}, { database });
    const user = await newUser(setup);
    const project = await newProject(setup, user);
    const flag = await newFlag(setup, user, project, { key: 'f', enabled: true });
    const token = await apiToken(setup, user, project);
    await setup.close();
    const port = await freePort();
    let child: ChildServer = await startChildServer(port, { DATABASE_URL: database.url });
    let admin: TestServer | undefined;
    t.after(async () => {
      await child.kill('SIGKILL');
      await admin?.close();
      await database.drop();
    });
    const c = local({ baseUrl: child.url, apiToken: token, environment: 'production', pollIntervalMs: 60_000, sendUsage: false });
    assert.equal(await c.ready(), true);
    let stale = false;
    c.on('stale', () => (stale = true));

    await child.kill('SIGKILL');
    await eventually(() => stale, 'stale once the server is gone');
    assert.equal(c.evaluate({ user_id: 'u' }).isEnabled('f'), true, 'answered from the last ruleset');
    child = await startChildServer(port, { DATABASE_URL: database.url });
    // A second instance on the same database makes the change; the restarted one learns of it (notification or revision check) and tells the client.
    admin = await startServer({}, { database });
    const login = await request(admin, 'POST', '/auth/login', { body: { email: user.email, password: user.password } });
    await request(admin, 'POST', `${flagsPath(project)}/${flag.id}/toggle`, { token: login.body.token });
    await eventually(() => !c.evaluate({ user_id: 'u' }).isEnabled('f'), 'the change made after the restart', 20_000);
  });

  test('a ruleset of an unknown format is refused: the previous one is kept and an error emitted', async (t) => {
    let document: Record<string, unknown> = { format: 1, environment: 'production', revision: 1, flags: [{ key: 'f', enabled: true, rolloutPercentage: 0, rules: [] }], segments: {} };
    let etag = 1;
    const fake = createServer((req, res) => {
      if (req.url?.startsWith('/sdk/v1/ruleset')) {
        res.writeHead(200, { 'content-type': 'application/json', etag: `W/"${etag}"` }).end(JSON.stringify(document));
      } else res.writeHead(404).end();
    });
    await new Promise<void>((resolve) => fake.listen(0, '127.0.0.1', resolve));
    t.after(() => fake.close());
    const c = local({ baseUrl: `http://127.0.0.1:${(fake.address() as AddressInfo).port}`, apiToken: 'gdn_x', environment: 'production', stream: false, pollIntervalMs: 50, sendUsage: false });
    const seen = errorsOf(c);
    assert.equal(await c.ready(), true);
    assert.equal(c.evaluate().isEnabled('f'), true);
    document = { format: 3, environment: 'production', revision: 2, rules: 'something new', segments: {} };
    etag = 2;
    await eventually(() => seen.some((error) => error.kind === 'ruleset' && /format 3/.test(error.message)), 'the error event');
    assert.equal(c.evaluate().isEnabled('f'), true, 'the previous ruleset is kept');
    assert.equal(c.ruleset()?.revision, 1);
  });

  test('a file bootstrap answers when Guidon cannot be reached at start', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'guidon-bootstrap-'));
    const file = join(dir, 'ruleset.json');
    writeFileSync(file, JSON.stringify({ format: 1, environment: 'production', revision: 7, flags: [{ key: 'boot', enabled: true, rolloutPercentage: 0, everyoneElse: 'rollout', rules: [{ type: 'user_id', value: 'vip', enabled: true, serve: false }] }], segments: {} }));
    const c = local({ baseUrl: `http://127.0.0.1:${await freePort()}`, apiToken: 'gdn_x', environment: 'production', bootstrapFile: file, timeoutMs: 500, sendUsage: false });
    const seen = errorsOf(c);
    assert.equal(c.evaluate().isEnabled('boot'), true, 'at once, before ready()');
    assert.equal(await c.ready(), true);
    assert.ok(seen.length > 0, 'the failed fetch is reported');
    assert.deepEqual(c.evaluate({ user_id: 'vip' }).allFlags(), { boot: { enabled: false, reason: 'Matched user_id targeting rule' } });

    const broken = local({ baseUrl: `http://127.0.0.1:${await freePort()}`, apiToken: 'gdn_x', environment: 'production', bootstrapFile: join(dir, 'missing.json'), timeoutMs: 200, sendUsage: false });
    const brokenErrors = errorsOf(broken);
    assert.equal(await broken.ready(), false);
    assert.ok(brokenErrors.some((error) => error.kind === 'ruleset'));
  });
});

describe('two instances on PostgreSQL', { skip: onPostgres ? false : 'runs in the PostgreSQL pass' }, () => {
  test('a change on A reaches a local client following B; usage reports to A and B add up once each, one sent to both once', async (t) => {
    const database = await createTestDatabase();
    // No periodic revision check: the change travels by PostgreSQL LISTEN/NOTIFY.
    const a = await startServer({}, { database, revisionCheckIntervalMs: 3_600_000 });
    const b = await startServer({}, { database, revisionCheckIntervalMs: 3_600_000 });
    t.after(async () => {
      await a.close();
      await b.close();
      await database.drop();
    });
    const user = await newUser(a);
    const project = await newProject(a, user);
    const flag = await newFlag(a, user, project, { key: 'f', enabled: false });
    const token = await apiToken(a, user, project);
    const c = local({ baseUrl: b.url, apiToken: token, environment: 'production', sendUsage: false });
    assert.equal(await c.ready(), true);
    await new Promise((resolve) => setTimeout(resolve, 300)); // the stream connects
    await request(a, 'POST', `${flagsPath(project)}/${flag.id}/toggle`, { token: user.token });
    await eventually(() => c.evaluate().isEnabled('f'), 'the change, through B');

    const report = (server: TestServer, enabled: number, reportId: string = randomUUID()) =>
      request(server, 'POST', '/sdk/v1/usage', { headers: { authorization: `Bearer ${token}` }, body: { report_id: reportId, environment: 'production', started_at: new Date(Date.now() - 1000).toISOString(), ended_at: new Date().toISOString(), flags: { f: { enabled, disabled: 0 } } } });
    // The last report reaches both instances at once (an SDK that sent it again): counted once.
    const twice = randomUUID();
    const answers = await Promise.all([report(a, 3), report(b, 4), report(a, 5), report(a, 7, twice), report(b, 7, twice)]);
    assert.deepEqual(answers.map((answer) => answer.status), [202, 202, 202, 202, 202]);
    const totals = (await request(b, 'GET', `${flagsPath(project)}/${flag.id}/metrics?hours=2`, { token: user.token })).body.totals;
    assert.equal(totals.enabled, 19);
  });
});
