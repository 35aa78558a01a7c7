/**
 * Flags as code (docs/flags-as-code.md): export, the JSON Schema, import (check, plan, apply),
 * through HTTP on a real server and database (SQLite, or PostgreSQL with
 * GUIDON_TEST_DATABASE=postgres). The round trip is proven on a project that uses every kind of
 * rule, condition, segment, variant and bucketing key: same bytes, and the same evaluate answers
 * for 2,000 random contexts. (An import reaching another instance: scale-out.test.ts.)
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { Ajv } from 'ajv';
import { parse as parseYaml } from 'yaml';
import { seededRandom } from './seeded-random.js';
import { addMember, evaluate, newProject, newUser, request, startServer, type TestProject, type TestServer, type TestUser } from './harness.js';

let server: TestServer;
let user: TestUser;
let source: TestProject;

const api = (method: string, path: string, body?: unknown, headers?: Record<string, string>) =>
  request(server, method, path, { token: user.token, ...(body === undefined ? {} : { body }), ...(headers ? { headers } : {}) });
const ok = async (answer: Promise<{ status: number; text: string; body: any }>, status = 201) => {
  const settled = await answer;
  assert.equal(settled.status, status, settled.text);
  return settled.body;
};
const exportOf = (project: { id: string }, format = 'json') => api('GET', `/api/projects/${project.id}/export?format=${format}`);
const importInto = (project: { id: string }, document: unknown, query = '', headers?: Record<string, string>) => api('POST', `/api/projects/${project.id}/import${query}`, document, headers);

/** A project that uses every kind of rule, operator, segment, variant, and a bucketing key. */
async function richProject(name: string, description: string): Promise<TestProject> {
  const project = await newProject(server, user, name);
  await ok(api('PUT', `/api/projects/${project.id}`, { description }), 200);
  const base = `/api/projects/${project.id}`;
  const dev = await ok(api('POST', `${base}/environments`, { key: 'dev', name: 'Development' }));
  await ok(api('POST', `${base}/segments`, { key: 'beta', name: 'Beta customers', description: 'opted in', conditions: [{ attribute: 'plan', operator: 'IN', values: ['beta', 'enterprise'] }] }));
  await ok(api('POST', `${base}/segments`, { key: 'office', name: 'Office network', conditions: [{ attribute: 'ip', operator: 'IN_CIDR', values: ['10.0.0.0/8', '2001:db8::/32'] }] }));
  const flag = async (envId: string, body: Record<string, unknown>, rules: Record<string, unknown>[] = []) => {
    const created = await ok(api('POST', `${base}/environments/${envId}/flags`, { name: String(body.key), ...body }));
    for (const rule of rules) await ok(api('POST', `${base}/environments/${envId}/flags/${created.id}/rules`, rule));
    return created;
  };
  const conditions = [
    { attribute: 'country', operator: 'NOT_IN', values: ['fr', 'de'], case_insensitive: true },
    { attribute: 'app_version', operator: 'SEMVER_GTE', values: ['2.4.0'] },
  ];
  await flag(project.production, { key: 'checkout', description: 'new checkout', enabled: true, rollout_percentage: 30 }, [
    { rule_type: 'user_id', rule_value: 'u-7', priority: 100 },
    { rule_type: 'email_domain', rule_value: 'Corp.COM', priority: 50, serve: false },
    { rule_type: 'conditions', conditions: [{ operator: 'IN_SEGMENT', values: ['beta'] }], priority: 10, rollout_percentage: 50 },
    { rule_type: 'conditions', conditions, priority: 10 },
    { rule_type: 'user_email', rule_value: 'ada@example.com', enabled: false },
  ]);
  await flag(project.staging, { key: 'checkout', name: 'Checkout (staging)', enabled: true, rollout_percentage: 100 });
  await flag(dev.id, { key: 'checkout', enabled: false });
  const variants = [
    { key: 'control', value: { text: 'Buy', color: '#000', size: [1, 2] }, weight: 500, description: 'today' },
    { key: 'short', value: { text: 'Buy now', color: '#00f', size: [3] }, weight: 300 },
    { key: 'long', value: { text: 'Buy it now', color: '#f00', size: [] }, weight: 200 },
  ];
  await flag(project.production, { key: 'button', enabled: true, everyone_else: 'rollout', bucketing_key: 'Button.Legacy', variants, off_variant: 'control' }, [
    { rule_type: 'conditions', conditions: [{ attribute: 'seats', operator: 'NUM_GT', values: ['10'] }, { attribute: 'beta', operator: 'EXISTS', negate: true }], variant: 'long', priority: 5 },
    { rule_type: 'conditions', conditions: [{ operator: 'IN_SEGMENT', values: ['office'] }], serve: false },
  ]);
  await flag(project.production, { key: 'limits', enabled: true, everyone_else: 'off', variants: [{ key: 'low', value: 10, weight: 1000 }, { key: 'high', value: 1000, weight: 0 }], off_variant: 'low' }, [
    { rule_type: 'conditions', conditions: [{ attribute: 'email', operator: 'STR_ENDS_WITH', values: ['@corp.com'] }, { attribute: 'ua', operator: 'REGEX', values: ['iPhone|iPad'], case_insensitive: true }], variant: 'high' },
    { rule_type: 'conditions', conditions: [{ attribute: 'current_time', operator: 'DATE_AFTER', values: ['2026-06-01T00:00:00Z'] }, { attribute: 'score', operator: 'NUM_LTE', values: ['3.5'] }] },
    { rule_type: 'conditions', conditions: [{ attribute: 'name', operator: 'STR_STARTS_WITH', values: ['A'] }, { attribute: 'name', operator: 'STR_CONTAINS', values: ['x', 'y'] }] },
  ]);
  await flag(dev.id, { key: 'dark_mode', description: null, enabled: true, rollout_percentage: 0, everyone_else: 'off' }, [
    { rule_type: 'conditions', conditions: [{ attribute: 'app_version', operator: 'SEMVER_LT', values: ['3.0.0-beta.1'] }, { attribute: 'seats', operator: 'NUM_EQ', values: ['5'] }] },
  ]);
  return project;
}

before(async () => {
  server = await startServer();
  user = await newUser(server, 'fac');
  source = await richProject('Shop', 'the shop front');
});
after(async () => server?.close());

/** Every object's keys in order, at any depth. */
function assertKeysSorted(value: unknown, where = '$'): void {
  if (Array.isArray(value)) return value.forEach((item, i) => assertKeysSorted(item, `${where}[${i}]`));
  if (value === null || typeof value !== 'object') return;
  const keys = Object.keys(value);
  assert.deepEqual(keys, [...keys].sort(), `keys of ${where} are sorted`);
  for (const key of keys) assertKeysSorted((value as Record<string, unknown>)[key], `${where}.${key}`);
}

describe('export', () => {
  test('one deterministic document: sorted keys, no ids, timestamps or secrets; JSON and YAML say the same', async () => {
    const first = await exportOf(source);
    assert.equal(first.status, 200, first.text);
    assert.match(first.headers.get('content-type') ?? '', /^application\/json/);
    assert.equal((await exportOf(source)).text, first.text, 'the same state exports to the same bytes');
    const document = JSON.parse(first.text);
    assertKeysSorted(document);
    assert.doesNotMatch(first.text, /"(id|created_at|updated_at|sdk_key|flag_id|project_id)"/);
    assert.doesNotMatch(first.text, /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/, 'no UUIDs');
    assert.deepEqual(document.project, { name: 'Shop', description: 'the shop front' });
    assert.deepEqual(document.environments, [
      { approvals_required: 0, key: 'dev', name: 'Development' },
      { approvals_required: 0, key: 'production', name: 'Production' },
      { approvals_required: 0, key: 'staging', name: 'Staging' },
    ]);
    assert.deepEqual(document.segments.map((segment: { key: string }) => segment.key), ['beta', 'office']);
    assert.deepEqual(document.flags.map((flag: { key: string }) => flag.key), ['button', 'checkout', 'dark_mode', 'limits']);
    const checkout = document.flags[1];
    assert.equal(checkout.name, 'checkout', 'the name of its first environment by key (dev)');
    assert.deepEqual(Object.keys(checkout.environments), ['dev', 'production', 'staging']);
    assert.equal(checkout.environments.staging.name, 'Checkout (staging)', 'a name that differs is kept in its environment');
    assert.equal(checkout.environments.production.description, 'new checkout');
    assert.equal(checkout.environments.production.bucketing_key, null);
    assert.equal(document.flags[0].environments.production.bucketing_key, 'Button.Legacy');
    assert.deepEqual(checkout.environments.production.rules.map((rule: { priority: number }) => rule.priority), [100, 50, 10, 10, 0], 'rules in evaluation order');
    assert.equal(checkout.environments.production.rules[1].rule_value, '@corp.com', 'the stored form');
    assert.deepEqual(checkout.environments.production.prerequisites, []);

    const yaml = await exportOf(source, 'yaml');
    assert.equal(yaml.status, 200);
    assert.match(yaml.headers.get('content-type') ?? '', /^application\/yaml/);
    assert.equal((await exportOf(source, 'yaml')).text, yaml.text, 'YAML is deterministic too');
    assert.deepEqual(parseYaml(yaml.text), document, 'the YAML holds the same document');
    assert.match(yaml.text, /everyone_else: "off"/, 'off is quoted, so a YAML 1.1 reader does not take it for false');
  });

  test('the JSON Schema is served without a credential and the export passes it', async () => {
    const schema = await request(server, 'GET', '/schemas/guidon-export-1.json');
    assert.equal(schema.status, 200);
    assert.match(schema.headers.get('content-type') ?? '', /^application\/schema\+json/);
    const validate = new Ajv({ strict: false }).compile(JSON.parse(schema.text));
    assert.ok(validate(JSON.parse((await exportOf(source)).text)), JSON.stringify(validate.errors));
    assert.equal(validate({ guidon: 1, environments: [], flags: [{ key: 'x', name: 'x', environments: { production: { enabled: 'yes' } } }] }), false, 'the schema refuses what an import refuses');
  });

  test('a viewer exports; an unknown format is 400; a stranger gets 404', async () => {
    assert.equal((await exportOf(source, 'xml')).status, 400);
    const stranger = await newUser(server, 'stranger');
    assert.equal((await request(server, 'GET', `/api/projects/${source.id}/export`, { token: stranger.token })).status, 404);
  });
});

/** Contexts that reach every rule of the rich project: ids, emails, and each attribute its conditions name. */
function randomContexts(count: number, seed: number) {
  const next = seededRandom(seed);
  const pick = <T>(items: readonly T[]) => items[Math.floor(next() * items.length)]!;
  const maybe = <T>(value: () => T, p = 0.6) => (next() < p ? value() : undefined);
  return Array.from({ length: count }, (_, i) => {
    const custom: Record<string, string | number | boolean> = {};
    const set = (name: string, value: string | number | boolean | undefined) => value !== undefined && (custom[name] = value);
    set('plan', maybe(() => pick(['beta', 'enterprise', 'free', 'team'])));
    set('country', maybe(() => pick(['FR', 'fr', 'de', 'us', 'jp'])));
    set('app_version', maybe(() => pick(['2.3.9', '2.4.0', '2.10.1', '3.0.0-alpha', '3.0.0', 'bad'])));
    set('seats', maybe(() => pick([1, 5, 10, 11, 250, '12'])));
    set('beta', maybe(() => next() < 0.5, 0.3));
    set('ip', maybe(() => pick(['10.1.2.3', '192.168.0.1', '2001:db8::1', '::ffff:10.9.9.9', 'nope'])));
    set('email', maybe(() => pick(['a@corp.com', 'b@other.org'])));
    set('ua', maybe(() => pick(['Mozilla iphone', 'IPAD app', 'Android'])));
    set('current_time', maybe(() => pick(['2026-01-01T00:00:00Z', '2026-07-01T00:00:00Z'])));
    set('score', maybe(() => pick([1, 3.5, 4, '2'])));
    set('name', maybe(() => pick(['Alex', 'Ay', 'Bob', 'Axe'])));
    return {
      ...(next() < 0.9 ? { user_id: next() < 0.02 ? 'u-7' : `user-${i}-${Math.floor(next() * 1e6)}` } : {}),
      ...(next() < 0.4 ? { user_email: pick(['ada@example.com', 'x@corp.com', `p${i}@example.org`]) } : {}),
      custom_attributes: custom,
    };
  });
}

/** What evaluate answers for each context, in each environment, as one comparable list. */
async function answers(project: TestProject, contexts: Record<string, unknown>[], environments: string[]) {
  const all: unknown[] = [];
  for (const environment of environments) {
    for (let start = 0; start < contexts.length; start += 25) {
      const batch = await Promise.all(contexts.slice(start, start + 25).map((context) => evaluate(server, project.sdk_key, environment, context)));
      for (const answer of batch) {
        assert.equal(answer.status, 200, answer.text);
        all.push(answer.body.flags);
      }
    }
  }
  return all;
}

describe('round trip', () => {
  test('export, import into an empty project, export again: the same bytes, and the same answers for 2,000 random contexts', async () => {
    const exported = (await exportOf(source)).text;
    const target = await newProject(server, user, 'Shop');
    await ok(api('PUT', `/api/projects/${target.id}`, { description: 'the shop front' }), 200);

    const plan = await ok(importInto(target, exported), 200);
    assert.equal(plan.dry_run, true, 'a dry run by default');
    assert.equal(plan.import_id, null);
    assert.deepEqual(plan.update, []);
    assert.deepEqual(plan.delete, []);
    assert.equal(plan.unchanged, 2, 'production and staging exist already');
    assert.deepEqual(plan.create.map((item: { resource: string; key: string; environment: string | null }) => `${item.resource} ${item.environment ?? ''} ${item.key}`), [
      'environment  dev',
      'segment  beta',
      'segment  office',
      'flag dev checkout',
      'flag dev dark_mode',
      'flag production button',
      'flag production checkout',
      'flag production limits',
      'flag staging checkout',
    ]);
    assert.equal((await exportOf(target)).text.includes('checkout'), false, 'a dry run changes nothing');

    const applied = await ok(importInto(target, exported, '?dry_run=false'), 200);
    assert.equal(applied.dry_run, false);
    assert.match(applied.import_id, /^[0-9a-f-]{36}$/);
    assert.deepEqual(applied.create, plan.create);
    assert.equal((await exportOf(target)).text, exported, 'export → import → export gives the same bytes');
    assert.equal((await exportOf(target, 'yaml')).text, (await exportOf(source, 'yaml')).text);

    const again = await ok(importInto(target, exported, '?dry_run=false'), 200);
    assert.deepEqual([again.create, again.update, again.delete, again.import_id], [[], [], [], null], 'importing the same document again changes nothing');

    const contexts = randomContexts(2000, 35);
    const from = await answers(source, contexts, ['production']);
    const to = await answers(target, contexts, ['production']);
    assert.deepEqual(to, from, 'production answers the same for every context');
    const reasons = new Set(from.flatMap((flags) => Object.values(flags as Record<string, { reason: string }>).map((flag) => flag.reason)));
    for (const reason of ['Matched user_id targeting rule', 'Matched email_domain targeting rule', 'Matched conditions targeting rule', 'User in 30% rollout', 'User not in 30% rollout', 'No targeting rule matched', 'Flag enabled globally']) {
      assert.ok(reasons.has(reason), `the contexts reach "${reason}"`);
    }
    const others = randomContexts(200, 36);
    assert.deepEqual(await answers(target, others, ['dev', 'staging']), await answers(source, others, ['dev', 'staging']), 'dev and staging too');
  });

  test('YAML imports as JSON does', async () => {
    const yaml = (await exportOf(source, 'yaml')).text;
    const target = await newProject(server, user, 'Shop');
    await ok(api('PUT', `/api/projects/${target.id}`, { description: 'the shop front' }), 200);
    await ok(importInto(target, yaml, '?dry_run=false', { 'content-type': 'application/yaml' }), 200);
    assert.equal((await exportOf(target, 'yaml')).text, yaml);
    const broken = await importInto(target, 'flags: [unclosed', '', { 'content-type': 'application/yaml' });
    assert.equal(broken.status, 400);
    assert.match(broken.body.message, /YAML does not parse/);
  });
});

describe('import checks the whole document first', () => {
  test('every problem with its path, and nothing changes', async () => {
    const project = await newProject(server, user, 'Checked');
    const before = (await exportOf(project)).text;
    const document = {
      guidon: 1,
      environments: [{ key: 'production', name: 'Production' }, { key: 'production', name: 'Again' }, { key: 'staging', name: 'Staging', approvals_required: 2 }],
      segments: [{ key: 'seg', name: 'Seg', conditions: [{ operator: 'IN_SEGMENT', values: ['seg'] }] }],
      flags: [
        { key: 'ok', name: 'Fine', environments: { production: { enabled: true, prerequisites: [{ flag_key: 'ok' }] } } },
        { key: 'Bad Key', name: 'x', colour: 'red', environments: { production: { enabeld: true } } },
        {
          key: 'third',
          name: 'Third',
          environments: {
            production: {
              rollout_percentage: 101,
              everyone_else: 'nobody',
              bucketing_key: 'has space',
              rules: [
                { rule_type: 'conditions', conditions: [{ attribute: 'a', operator: 'IN', values: ['x'] }, { attribute: 'v', operator: 'SEMVER_BETWEEN', values: ['1'] }] },
              ],
            },
            staging: {
              variants: [{ key: 'a', value: 'x', weight: 600 }, { key: 'b', value: 2, weight: 400 }],
              off_variant: 'a',
            },
          },
        },
        {
          key: 'fourth',
          name: 'Fourth',
          environments: {
            production: {
              variants: [{ key: 'a', value: 'x', weight: 500 }, { key: 'b', value: 'y', weight: 400 }],
              off_variant: 'a',
              rules: [
                { rule_type: 'user_id', rule_value: ' ', priority: 1 },
                { rule_type: 'user_email', rule_value: 'not-an-email', priority: 2 },
                { rule_type: 'conditions', conditions: [{ attribute: 'v', operator: 'SEMVER_GT', values: ['2.4'] }, { operator: 'IN_SEGMENT', values: ['nope'] }] },
              ],
            },
            staging: {
              variants: [{ key: 'a', value: 'x', weight: 1000 }],
              off_variant: 'z',
              prerequisites: [{ flag_key: 'ok' }],
              rules: [{ rule_type: 'user_id', rule_value: 'u', variant: 'q' }],
            },
            qa: { enabled: true },
          },
        },
        { key: 'ok', name: 'Twice', environments: {} },
      ],
    };
    const answer = await importInto(project, document, '?dry_run=false');
    assert.equal(answer.status, 400, answer.text);
    assert.deepEqual(Object.keys(answer.body).sort(), ['error', 'message', 'problems', 'statusCode']);
    const paths = answer.body.problems.map((problem: { path: string }) => problem.path);
    const expected = [
      'flags[1].key',
      'flags[1].colour',
      'flags[1].environments.production.enabeld',
      'flags[2].environments.production.rollout_percentage',
      'flags[2].environments.production.everyone_else',
      'flags[2].environments.production.bucketing_key',
      'flags[2].environments.production.rules[0].conditions[1].operator',
      'environments[1].key',
      'environments[2].approvals_required',
      'segments[0].conditions[0]',
      'flags[2].environments.staging.variants',
      'flags[3].environments.production.variants',
      'flags[3].environments.production.rules[0].rule_value',
      'flags[3].environments.production.rules[1].rule_value',
      'flags[3].environments.production.rules[1].priority',
      'flags[3].environments.production.rules[2].conditions[0]',
      'flags[3].environments.production.rules[2].conditions[1]',
      'flags[3].environments.staging.off_variant',
      'flags[3].environments.staging.rules[0].variant',
      'flags[0].environments.production.prerequisites',
      'flags[3].environments.qa',
      'flags[4].key',
    ];
    assert.deepEqual([...paths].sort(), [...expected].sort(), JSON.stringify(answer.body.problems, null, 1));
    const message = (path: string) => answer.body.problems.find((problem: { path: string }) => problem.path === path).message as string;
    assert.match(message('flags[2].environments.production.rules[0].conditions[1].operator'), /must be one of "IN", "NOT_IN"/);
    assert.match(message('flags[2].environments.production.everyone_else'), /must be one of "rollout", "off"/);
    assert.match(message('flags[1].colour'), /not a field/);
    assert.match(message('flags[3].environments.production.rules[2].conditions[0]'), /"2\.4" is not a version/);
    assert.match(message('flags[3].environments.production.rules[2].conditions[1]'), /no segment "nope"/);
    assert.match(message('flags[3].environments.production.variants'), /sum to exactly 1000 \(0\.1% steps\); they sum to 900/);
    assert.match(message('flags[2].environments.staging.variants'), /one JSON type/);
    assert.match(message('flags[3].environments.qa'), /not in the document's environments/);
    assert.match(message('segments[0].conditions[0]'), /a segment cannot use IN_SEGMENT/);
    assert.match(message('flags[0].environments.production.prerequisites'), /its own prerequisite \(ok → ok\)/);
    assert.match(answer.body.message, /^The document has 22 problems: /);
    assert.equal((await exportOf(project)).text, before, 'a refused import changes nothing');

    const notADocument = await importInto(project, [1, 2]);
    assert.equal(notADocument.status, 400);
    assert.equal(notADocument.body.problems[0].path, '');
    const wrongVersion = await importInto(project, { guidon: 2, environments: [], flags: [] });
    assert.deepEqual(wrongVersion.body.problems, [{ path: 'guidon', message: 'guidon: must be one of 1' }]);
  });
});

describe('prerequisites (docs/prerequisites.md)', () => {
  test('exported and imported: the same document, the same answers; a cycle across the document refused with its chain', async () => {
    const project = await newProject(server, user, 'Prerequisites as code');
    const flags = `/api/projects/${project.id}/environments/${project.production}/flags`;
    await ok(api('POST', flags, { key: 'payments', name: 'payments', enabled: true }));
    await ok(api('POST', flags, { key: 'exp', name: 'exp', enabled: true, variants: [{ key: 'a', value: 1, weight: 500 }, { key: 'b', value: 2, weight: 500 }], off_variant: 'a' }));
    await ok(api('POST', flags, { key: 'upsell', name: 'upsell', enabled: true, prerequisites: [{ flag_key: 'payments' }, { flag_key: 'exp', variants: ['b'] }] }));
    const exported = (await exportOf(project)).body;
    const upsell = exported.flags.find((flag: { key: string }) => flag.key === 'upsell');
    assert.deepEqual(upsell.environments.production.prerequisites, [{ enabled: true, flag_key: 'payments' }, { enabled: true, flag_key: 'exp', variants: ['b'] }]);
    const copy = await newProject(server, user, 'Prerequisites imported');
    assert.equal((await importInto(copy, exported, '?dry_run=false')).status, 200);
    assert.deepEqual((await exportOf(copy)).body.flags, exported.flags);
    for (let i = 0; i < 30; i++) {
      const ctx = { user_id: `u${i}` };
      assert.deepEqual((await evaluate(server, copy.sdk_key, 'production', ctx)).body, (await evaluate(server, project.sdk_key, 'production', ctx)).body);
    }
    const cyclic = structuredClone(exported);
    cyclic.flags.find((flag: { key: string }) => flag.key === 'payments').environments.production.prerequisites = [{ flag_key: 'upsell' }];
    const refused = await importInto(copy, cyclic, '?dry_run=false');
    assert.equal(refused.status, 400);
    assert.ok(refused.body.problems.some((problem: { message: string }) => /cycle \((payments → upsell → payments|upsell → payments → upsell)\)/.test(problem.message)), JSON.stringify(refused.body.problems));
  });
});

describe('merge and replace', () => {
  test('merge creates and updates; replace also deletes what the document does not name; each change is one audit event with the import id', async () => {
    const project = await newProject(server, user, 'Plans');
    await ok(importInto(project, (await exportOf(source)).text, '?dry_run=false'), 200);
    const document = JSON.parse((await exportOf(project)).text);
    const checkout = document.flags.find((flag: { key: string }) => flag.key === 'checkout');
    checkout.environments.production.enabled = false; // a toggle
    checkout.environments.production.rules.splice(1, 1); // a rule removed: the ones after it move up
    checkout.environments.staging.rollout_percentage = 40;
    document.flags = document.flags.filter((flag: { key: string }) => flag.key !== 'dark_mode');
    document.flags.push({ key: 'fresh', name: 'Fresh', environments: { production: { enabled: true, rules: [{ rule_type: 'user_id', rule_value: 'u-1' }] } } });
    document.segments = document.segments.filter((segment: { key: string }) => segment.key !== 'office');
    const button = document.flags.find((flag: { key: string }) => flag.key === 'button');
    button.environments.production.rules.pop(); // the rule that named office
    document.environments.find((env: { key: string }) => env.key === 'dev').name = 'Dev';

    const items = (list: { resource: string; key: string; environment: string | null; fields: string[] }[]) => list.map((item) => `${item.resource} ${item.environment ?? '-'} ${item.key}${item.fields.length ? ` [${item.fields.join(',')}]` : ''}`);
    const merge = await ok(importInto(project, document, '?mode=merge'), 200);
    assert.equal(merge.mode, 'merge');
    assert.deepEqual(items(merge.create), ['flag production fresh']);
    assert.deepEqual(items(merge.update), ['environment - dev [name]', 'flag production button [rules]', 'flag production checkout [enabled,rules]', 'flag staging checkout [rollout_percentage]']);
    assert.deepEqual(merge.delete, []);
    assert.equal(merge.unchanged, 2 + 1 + 2, 'production, staging; beta (office is left out, not counted); limits, dev checkout');

    const replace = await ok(importInto(project, document, '?mode=replace'), 200);
    assert.deepEqual(replace.create, merge.create);
    assert.deepEqual(replace.update, merge.update);
    assert.deepEqual(items(replace.delete), ['segment - office', 'flag dev dark_mode']);

    const applied = await ok(importInto(project, document, '?mode=replace&dry_run=false'), 200);
    const after = JSON.parse((await exportOf(project)).text);
    assert.deepEqual(after.flags.map((flag: { key: string }) => flag.key), ['button', 'checkout', 'fresh', 'limits']);
    assert.deepEqual(after.segments.map((segment: { key: string }) => segment.key), ['beta']);
    assert.equal(after.flags[1].environments.production.enabled, false);
    assert.deepEqual(after.flags[1].environments.production.rules, checkout.environments.production.rules);

    const events = (await ok(api('GET', `/api/projects/${project.id}/audit?limit=100`), 200)).items.filter((event: { import_id: string | null }) => event.import_id === applied.import_id);
    const actions = events.map((event: { action: string; resource_key: string | null }) => `${event.action} ${event.resource_key}`).sort();
    assert.deepEqual(actions, [
      'environment.updated dev',
      'flag.created fresh',
      'flag.deleted dark_mode',
      'flag.toggled checkout',
      'flag.updated checkout',
      'rule.created fresh',
      'rule.deleted button',
      'rule.deleted checkout',
      'rule.updated checkout',
      'rule.updated checkout',
      'rule.updated checkout',
      'segment.deleted office',
    ]);
    assert.ok(events.every((event: { actor: { user_id: string } }) => event.actor.user_id === user.id));
  });

  test('an editor imports, a viewer may not', async () => {
    const project = await newProject(server, user, 'Roles');
    const viewer = await newUser(server, 'viewer');
    await addMember(server, user, project.id, viewer, 'viewer');
    const asViewer = (method: string, path: string) => request(server, method, path, { token: viewer.token, body: method === 'POST' ? { guidon: 1, environments: [], flags: [] } : undefined });
    assert.equal((await asViewer('GET', `/api/projects/${project.id}/export`)).status, 200);
    assert.equal((await asViewer('POST', `/api/projects/${project.id}/import`)).status, 403);
  });
});
