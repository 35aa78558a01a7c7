/**
 * Local evaluation's server side (docs/local-evaluation.md) over HTTP, on the database of the
 * pass: the ruleset document (credential, shape, ETag/304), the stream with an API token
 * (refetchRuleset after each change; the benchmarks time it), and usage reports (validated, counted once into the hourly
 * metrics and last_evaluated_at, however often a report is sent). Equivalence with /sdk/v1/evaluate is proven at scale in the
 * SDK's local-mode tests; here a compiled ruleset is checked on a handful of contexts.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import http from 'node:http';
import { brotliDecompressSync, gunzipSync } from 'node:zlib';
import { compileFlagSet, OUTCOMES, type FlagDefinition } from '@guidon/engine';
import { evaluate, eventually, flagsPath, newFlag, newProject, newUser, request, startServer, type TestProject, type TestServer, type TestUser } from './harness.js';
import { openStream } from './stream-client.js';

async function apiToken(server: TestServer, user: TestUser, body: Record<string, unknown>): Promise<string> {
  const created = await request(server, 'POST', '/api/tokens', { token: user.token, body: { name: 'local', ...body } });
  assert.equal(created.status, 201, created.text);
  return created.body.token as string;
}

const ruleset = (server: TestServer, query: string, headers: Record<string, string> = {}) => request(server, 'GET', `/sdk/v1/ruleset?${query}`, { headers });
const bearer = (secret: string) => ({ authorization: `Bearer ${secret}` });

describe('GET /sdk/v1/ruleset', () => {
  let server: TestServer;
  let owner: TestUser;
  let project: TestProject;
  let token: string;

  before(async () => {
    server = await startServer();
    owner = await newUser(server);
    project = await newProject(server, owner);
    token = await apiToken(server, owner, { project_id: project.id, role: 'viewer' });
    const segment = await request(server, 'POST', `/api/projects/${project.id}/segments`, {
      token: owner.token,
      body: { key: 'beta-testers', name: 'Beta testers', description: 'secret description', conditions: [{ attribute: 'plan', operator: 'IN', values: ['beta'] }] },
    });
    assert.equal(segment.status, 201, segment.text);
    const unused = await request(server, 'POST', `/api/projects/${project.id}/segments`, {
      token: owner.token,
      body: { key: 'unused', name: 'Unused', conditions: [{ attribute: 'plan', operator: 'IN', values: ['x'] }] },
    });
    assert.equal(unused.status, 201, unused.text);
    const checkout = await newFlag(server, owner, project, { key: 'checkout', enabled: true, rollout_percentage: 30, description: 'not for SDKs' });
    const rules = `${flagsPath(project)}/${checkout.id}/rules`;
    for (const body of [
      { rule_type: 'user_id', rule_value: 'u-vip', priority: 5 },
      { rule_type: 'email_domain', rule_value: 'corp.com', priority: 3, serve: false },
      { rule_type: 'conditions', priority: 1, conditions: [{ operator: 'IN_SEGMENT', values: ['beta-testers'] }, { attribute: 'app_version', operator: 'SEMVER_GTE', values: ['2.4.0'] }], rollout_percentage: 50 },
      { rule_type: 'user_email', rule_value: 'off@example.com', enabled: false },
    ]) {
      const created = await request(server, 'POST', rules, { token: owner.token, body });
      assert.equal(created.status, 201, created.text);
    }
    await newFlag(server, owner, project, { key: 'dark', enabled: false });
    const strict = await newFlag(server, owner, project, { key: 'strict', enabled: true });
    await request(server, 'PUT', `${flagsPath(project)}/${strict.id}`, { token: owner.token, body: { everyone_else: 'off' } });
  });
  after(() => server.close());

  test('no credential or an unknown token: 401; an SDK key, as header or bearer: 403', async () => {
    assert.equal((await ruleset(server, 'environment=production')).status, 401);
    assert.equal((await ruleset(server, 'environment=production', bearer('gdn_unknown'))).status, 401);
    const bySdkHeader = await ruleset(server, 'environment=production', { 'x-sdk-key': project.sdk_key });
    assert.equal(bySdkHeader.status, 403);
    assert.match(bySdkHeader.body.message, /API token/);
    assert.equal((await ruleset(server, 'environment=production', bearer(project.sdk_key))).status, 403);
    assert.equal((await ruleset(server, 'environment=production', { ...bearer(token), 'x-sdk-key': project.sdk_key })).status, 200, 'a token with a stray SDK key header is still a token');
  });

  test('the environment: missing 400, unknown 404; a token of another project 404; a token of every project names it with ?project', async () => {
    assert.equal((await ruleset(server, '', bearer(token))).status, 400);
    assert.equal((await ruleset(server, 'environment=nope', bearer(token))).status, 404);
    const stranger = await newUser(server, 'stranger');
    const theirs = await newProject(server, stranger);
    const strangerToken = await apiToken(server, stranger, { project_id: theirs.id });
    assert.equal((await ruleset(server, `environment=production&project=${project.id}`, bearer(strangerToken))).status, 404);
    const everyProject = await apiToken(server, owner, {});
    assert.equal((await ruleset(server, 'environment=production', bearer(everyProject))).status, 400);
    assert.equal((await ruleset(server, `environment=production&project=${theirs.id}`, bearer(everyProject))).status, 404, 'not a member');
    assert.equal((await ruleset(server, `environment=production&project=not-a-uuid`, bearer(everyProject))).status, 404);
    const viaEvery = await ruleset(server, `environment=production&project=${project.id}`, bearer(everyProject));
    assert.equal(viaEvery.status, 200);
    assert.equal(viaEvery.body.flags.length, 3);
  });

  test('the document: format 1, the revision, flags in order with only what evaluation needs, and the segments they use', async () => {
    const answer = await ruleset(server, 'environment=production', bearer(token));
    assert.equal(answer.status, 200);
    const doc = answer.body;
    assert.equal(doc.format, 1);
    assert.equal(doc.environment, 'production');
    assert.equal(typeof doc.revision, 'number');
    assert.deepEqual(doc.flags.map((f: FlagDefinition) => f.key), ['checkout', 'dark', 'strict']);
    const [checkout, dark, strict] = doc.flags;
    assert.deepEqual(checkout, {
      key: 'checkout',
      enabled: true,
      rolloutPercentage: 30,
      everyoneElse: 'rollout',
      rules: [
        { type: 'user_id', value: 'u-vip', enabled: true },
        { type: 'email_domain', value: '@corp.com', enabled: true, serve: false },
        {
          type: 'conditions',
          value: '',
          enabled: true,
          conditions: [{ operator: 'IN_SEGMENT', values: ['beta-testers'] }, { attribute: 'app_version', operator: 'SEMVER_GTE', values: ['2.4.0'] }],
          rolloutPercentage: 50,
        },
      ],
    });
    assert.deepEqual(dark, { key: 'dark', enabled: false, rolloutPercentage: 0, everyoneElse: 'rollout', rules: [] });
    assert.equal(strict.everyoneElse, 'off');
    assert.deepEqual(doc.segments, { 'beta-testers': [{ attribute: 'plan', operator: 'IN', values: ['beta'] }] });
    for (const secret of ['not for SDKs', 'secret description', 'Beta testers', project.id, 'off@example.com', 'created_at']) assert.ok(!answer.text.includes(secret), secret);
  });

  test('compiled by the engine, the document answers what /sdk/v1/evaluate answers', async () => {
    const doc = (await ruleset(server, 'environment=production', bearer(token))).body;
    const set = compileFlagSet(doc.flags, { environment: doc.environment, segments: new Map(Object.entries(doc.segments)) });
    const codes = new Uint8Array(set.size);
    const contexts = [
      {},
      { user_id: 'u-vip', user_email: 'a@corp.com' },
      { user_email: 'b@corp.com' },
      { user_id: 'u-1', custom_attributes: { plan: 'beta', app_version: '2.5.0' } },
      { user_id: 'u-2', custom_attributes: { plan: 'beta', app_version: '2.3.9' } },
      ...Array.from({ length: 30 }, (_, i) => ({ user_id: `user-${i}`, custom_attributes: { plan: i % 2 ? 'beta' : 'free', app_version: '3.0.0' } })),
    ];
    for (const context of contexts) {
      set.evaluateInto(context, codes);
      const local = Object.fromEntries(set.keys.map((key, i) => [key, { enabled: OUTCOMES[codes[i]!]!.enabled, reason: OUTCOMES[codes[i]!]!.reason }]));
      assert.deepEqual(local, (await evaluate(server, project.sdk_key, 'production', context)).body.flags, JSON.stringify(context));
    }
  });

  test("variants: the flag's variants and off variant, a rule's variant, as the engine takes them", async () => {
    const created = await request(server, 'POST', flagsPath(project, project.staging), {
      token: owner.token,
      body: { key: 'button', name: 'Button', description: 'internal', enabled: true, variants: [{ key: 'blue', value: { color: '#00f' }, weight: 300, description: 'internal too' }, { key: 'green', value: { color: '#0f0' }, weight: 700 }], off_variant: 'green' },
    });
    assert.equal(created.status, 201, created.text);
    const rule = await request(server, 'POST', `${flagsPath(project, project.staging)}/${created.body.id}/rules`, { token: owner.token, body: { rule_type: 'user_id', rule_value: 'u-1', variant: 'blue' } });
    assert.equal(rule.status, 201, rule.text);
    const answer = await ruleset(server, 'environment=staging', bearer(token));
    assert.deepEqual(answer.body.flags, [
      {
        key: 'button',
        enabled: true,
        rolloutPercentage: 0,
        everyoneElse: 'rollout',
        rules: [{ type: 'user_id', value: 'u-1', enabled: true, variant: 'blue' }],
        variants: [{ key: 'blue', value: { color: '#00f' }, weight: 300 }, { key: 'green', value: { color: '#0f0' }, weight: 700 }],
        offVariant: 'green',
      },
    ]);
    assert.ok(!answer.text.includes('internal'));
  });

  test('ETag and If-None-Match: 304 without a body until something changes', async () => {
    const first = await ruleset(server, 'environment=production', bearer(token));
    const etag = first.headers.get('etag')!;
    assert.match(etag, /^W\/"[\w-]+"$/);
    const again = await ruleset(server, 'environment=production', { ...bearer(token), 'if-none-match': etag });
    assert.equal(again.status, 304);
    assert.equal(again.text, '');
    await newFlag(server, owner, project, { key: 'later', enabled: true });
    const changed = await ruleset(server, 'environment=production', { ...bearer(token), 'if-none-match': etag });
    assert.equal(changed.status, 200);
    assert.notEqual(changed.headers.get('etag'), etag);
    assert.ok(changed.body.revision > first.body.revision);
    assert.ok(changed.body.flags.some((f: FlagDefinition) => f.key === 'later'));
  });

  test('gzip or brotli when the client takes it (fetch does), the same document either way', async () => {
    const plain = await fetch(`${server.url}/sdk/v1/ruleset?environment=production`, { headers: { ...bearer(token), 'accept-encoding': 'identity' } });
    assert.equal(plain.headers.get('content-encoding'), null);
    const plainText = await plain.text();
    const zipped = await fetch(`${server.url}/sdk/v1/ruleset?environment=production`, { headers: { ...bearer(token), 'accept-encoding': 'gzip, deflate' } });
    assert.equal(zipped.headers.get('content-encoding'), 'gzip');
    assert.equal(zipped.headers.get('etag'), plain.headers.get('etag'));
    assert.equal(await zipped.text(), plainText, 'fetch undoes the gzip');
    // Brotli where the client takes it (browsers, newer Node lines), preferred to gzip; q=0 refuses an encoding.
    for (const [accepted, expected] of [['gzip, deflate, br', 'br'], ['br;q=0, gzip', 'gzip']] as const) {
      const raw = await new Promise<{ encoding: string | undefined; etag: string | undefined; body: Buffer }>((resolve, reject) => {
        http.get(`${server.url}/sdk/v1/ruleset?environment=production`, { headers: { ...bearer(token), 'accept-encoding': accepted } }, (response) => {
          const chunks: Buffer[] = [];
          response.on('data', (chunk: Buffer) => chunks.push(chunk));
          response.on('end', () => resolve({ encoding: response.headers['content-encoding'], etag: response.headers.etag, body: Buffer.concat(chunks) }));
        }).on('error', reject);
      });
      assert.equal(raw.encoding, expected, accepted);
      assert.equal(raw.etag, plain.headers.get('etag'));
      assert.equal((expected === 'br' ? brotliDecompressSync(raw.body) : gunzipSync(raw.body)).toString(), plainText);
    }
  });

  test('a deleted token fails at once', async () => {
    const created = await request(server, 'POST', '/api/tokens', { token: owner.token, body: { name: 'short-lived', project_id: project.id } });
    assert.equal((await ruleset(server, 'environment=production', bearer(created.body.token))).status, 200);
    assert.equal((await request(server, 'DELETE', `/api/tokens/${created.body.id}`, { token: owner.token })).status, 204);
    assert.equal((await ruleset(server, 'environment=production', bearer(created.body.token))).status, 401);
  });
});

describe('the stream with an API token (refetchRuleset)', () => {
  let server: TestServer;
  let owner: TestUser;
  let project: TestProject;
  let token: string;

  before(async () => {
    server = await startServer();
    owner = await newUser(server);
    project = await newProject(server, owner);
    token = await apiToken(server, owner, { project_id: project.id });
  });
  after(() => server.close());

  test('a flag change, a rule change and a segment change each reach it, with the new ruleset\'s ETag', async () => {
    // The revision the client holds: a stream opened without one within 10 s of a change (the project's creation) would begin with a message.
    const held = await ruleset(server, 'environment=production', bearer(token));
    const stream = await openStream(`${server.url}/sdk/v1/stream?environment=production`, { ...bearer(token), 'last-event-id': String(held.body.revision) });
    try {
      assert.equal(stream.status, 200);
      const flag = await newFlag(server, owner, project, { key: 'f', enabled: true });
      await eventually(() => stream.messages.length >= 1, 'refetchRuleset after a flag was created');
      const message = JSON.parse(stream.messages[0]!.data);
      assert.equal(message.type, 'refetchRuleset');
      const fetched = await ruleset(server, 'environment=production', bearer(token));
      const doc = fetched.body;
      assert.equal(message.revision, doc.revision);
      assert.equal(message.etag, fetched.headers.get('etag'), "the message names the new ruleset's ETag: an SDK that holds it need not fetch");
      assert.equal(stream.messages[0]!.id, String(doc.revision));

      await request(server, 'POST', `${flagsPath(project)}/${flag.id}/rules`, { token: owner.token, body: { rule_type: 'user_id', rule_value: 'u1' } });
      await eventually(() => stream.messages.length >= 2, 'after a rule change');
      const segment = await request(server, 'POST', `/api/projects/${project.id}/segments`, { token: owner.token, body: { key: 's', name: 'S', conditions: [{ attribute: 'a', operator: 'EXISTS', values: [] }] } });
      assert.equal(segment.status, 201, segment.text);
      await eventually(() => stream.messages.length >= 3, 'after a segment change');
      assert.ok(stream.messages.every((m) => JSON.parse(m.data).type === 'refetchRuleset'));
    } finally {
      stream.close();
    }
  });

  test('a key rotation does not close it (the token, not the key, is its credential); an SDK key stream keeps refetchEvaluation', async () => {
    const tokenStream = await openStream(`${server.url}/sdk/v1/stream?environment=production`, bearer(token));
    const keyStream = await openStream(`${server.url}/sdk/v1/stream?environment=production`, { 'x-sdk-key': project.sdk_key });
    try {
      const rotated = await request(server, 'POST', `/api/projects/${project.id}/regenerate-key`, { token: owner.token });
      assert.equal(rotated.status, 200, rotated.text);
      await keyStream.ended;
      await newFlag(server, owner, project, { key: 'after-rotation', enabled: true });
      await eventually(() => tokenStream.messages.length >= 1, 'refetchRuleset after the rotation');
      assert.equal(JSON.parse(tokenStream.messages.at(-1)!.data).type, 'refetchRuleset');
    } finally {
      tokenStream.close();
      keyStream.close();
    }
  });

  test("a deleted token's stream ends", { timeout: 30_000 }, async () => {
    const created = await request(server, 'POST', '/api/tokens', { token: owner.token, body: { name: 'to delete', project_id: project.id } });
    const stream = await openStream(`${server.url}/sdk/v1/stream?environment=production`, bearer(created.body.token));
    try {
      assert.equal(stream.status, 200);
      assert.equal((await request(server, 'DELETE', `/api/tokens/${created.body.id}`, { token: owner.token })).status, 204);
      await stream.ended; // the test's timeout is the bound; the server's check runs every few seconds
    } finally {
      stream.close();
    }
  });

  test("removed from the project, a member's token streams end (a project's token and one of every project)", { timeout: 30_000 }, async () => {
    const member = await newUser(server, 'leaver');
    const added = await request(server, 'POST', `/api/projects/${project.id}/members`, { token: owner.token, body: { email: member.email, role: 'viewer' } });
    assert.equal(added.status, 201, added.text);
    if (added.body.status === 'invited') {
      // Where adding a member is an invitation, the member accepts it.
      const invitations = await request(server, 'GET', '/api/invitations', { token: member.token });
      const invitation = invitations.body.find((each: { project: { id: string } }) => each.project.id === project.id);
      const accepted = await request(server, 'POST', `/api/invitations/${invitation.id}/accept`, { token: member.token });
      assert.ok(accepted.status < 300, accepted.text);
    }
    const members = await request(server, 'GET', `/api/projects/${project.id}/members`, { token: owner.token });
    const membership = members.body.find((each: { email: string }) => each.email === member.email);
    const scoped = await apiToken(server, member, { project_id: project.id });
    const everyProject = await apiToken(server, member, {});
    const streams = [
      await openStream(`${server.url}/sdk/v1/stream?environment=production`, bearer(scoped)),
      await openStream(`${server.url}/sdk/v1/stream?environment=production&project=${project.id}`, bearer(everyProject)),
    ];
    const ownerStream = await openStream(`${server.url}/sdk/v1/stream?environment=production`, bearer(token));
    try {
      assert.deepEqual([...streams, ownerStream].map((stream) => stream.status), [200, 200, 200]);
      assert.equal((await request(server, 'DELETE', `/api/projects/${project.id}/members/${membership.id}`, { token: owner.token })).status, 204);
      await Promise.all(streams.map((stream) => stream.ended)); // the test's timeout is the bound
      assert.equal((await ruleset(server, 'environment=production', bearer(scoped))).status, 404, 'and the token no longer reads the ruleset');
      // The owner's stream is not concerned: it still hears of the next change.
      const before = ownerStream.messages.length;
      await newFlag(server, owner, project, { key: 'after-removal', enabled: true });
      await eventually(() => ownerStream.messages.length > before, "the owner's stream hears of the next change");
    } finally {
      for (const stream of [...streams, ownerStream]) stream.close();
    }
  });

  test('credentials as for the ruleset: 401 unknown token, 404 unknown environment', async () => {
    assert.equal((await openStream(`${server.url}/sdk/v1/stream?environment=production`, bearer('gdn_nope'))).status, 401);
    assert.equal((await openStream(`${server.url}/sdk/v1/stream?environment=nope`, bearer(token))).status, 404);
  });
});

describe('POST /sdk/v1/usage', () => {
  let server: TestServer;
  let owner: TestUser;
  let project: TestProject;
  let token: string;
  const ids: Record<string, string> = {};

  const report = (body: unknown, headers: Record<string, string> = bearer(token)) => request(server, 'POST', '/sdk/v1/usage', { headers, body });
  const now = () => new Date().toISOString();
  const usage = (flags: unknown, extra: Record<string, unknown> = {}) => ({ report_id: randomUUID(), environment: 'production', started_at: new Date(Date.now() - 10_000).toISOString(), ended_at: now(), flags, ...extra });
  const totals = async (key: string) => (await request(server, 'GET', `${flagsPath(project)}/${ids[key]}/metrics?hours=2`, { token: owner.token })).body.totals as { enabled: number; disabled: number };
  const lastEvaluated = async (key: string) => {
    const across = (await request(server, 'GET', `/api/projects/${project.id}/flags`, { token: owner.token })).body as { key: string; environments: Record<string, { last_evaluated_at: string | null }> }[];
    return across.find((f) => f.key === key)!.environments.production!.last_evaluated_at;
  };

  before(async () => {
    server = await startServer();
    owner = await newUser(server);
    project = await newProject(server, owner);
    token = await apiToken(server, owner, { project_id: project.id, role: 'viewer' });
    for (const key of ['alpha', 'beta', 'untouched']) ids[key] = (await newFlag(server, owner, project, { key, enabled: true })).id;
  });
  after(() => server.close());

  test('202, summed once per report into the hourly metrics and last_evaluated_at; unknown keys ignored', async () => {
    assert.equal(await lastEvaluated('alpha'), null);
    const first = await report(usage({ alpha: { enabled: 5, disabled: 2 }, beta: { enabled: 0, disabled: 1 }, ghost: { enabled: 9, disabled: 9 } }));
    assert.equal(first.status, 202, first.text);
    assert.deepEqual(first.body, { accepted: 2 });
    assert.deepEqual(await totals('alpha'), { enabled: 5, disabled: 2 });
    assert.deepEqual(await totals('beta'), { enabled: 0, disabled: 1 });
    const second = await report(usage({ alpha: { enabled: 1, disabled: 0, variants: { none: 3 } } }));
    assert.equal(second.status, 202);
    assert.deepEqual(await totals('alpha'), { enabled: 6, disabled: 2 });
    assert.deepEqual(await totals('untouched'), { enabled: 0, disabled: 0 });
    const last = await lastEvaluated('alpha');
    assert.ok(last !== null && Date.now() - Date.parse(last) < 3_600_000, String(last));
    assert.equal(await lastEvaluated('untouched'), null);
    const variantRows = await server.database.db.selectFrom('evaluation_variant_counts').selectAll().execute();
    assert.equal(variantRows.length, 0, 'a variant the flag does not have is not counted');
  });

  test('a report sent again with its report_id gets the same answer and is counted once, also when both arrive together', async () => {
    const before = { alpha: await totals('alpha'), beta: await totals('beta') };
    const once = usage({ alpha: { enabled: 4, disabled: 1 }, beta: { enabled: 2, disabled: 0 }, ghost: { enabled: 1, disabled: 0 } });
    const answers = [await report(once), await report(once), ...(await Promise.all([report(once), report(once)]))];
    assert.deepEqual(answers.map((answer) => [answer.status, answer.body]), Array(4).fill([202, { accepted: 2 }]));
    assert.deepEqual(await totals('alpha'), { enabled: before.alpha.enabled + 4, disabled: before.alpha.disabled + 1 });
    assert.deepEqual(await totals('beta'), { enabled: before.beta.enabled + 2, disabled: before.beta.disabled });
    const pair = usage({ alpha: { enabled: 1, disabled: 0 } });
    assert.deepEqual((await Promise.all([report(pair), report(pair)])).map((answer) => answer.status), [202, 202]);
    const another = await report(usage({ alpha: { enabled: 1, disabled: 0 } }));
    assert.equal(another.status, 202);
    assert.deepEqual(await totals('alpha'), { enabled: before.alpha.enabled + 6, disabled: before.alpha.disabled + 1 }, 'a new report_id counts again');
  });

  test('per-variant counts go to the variant metrics; a variant the flag does not have is ignored', async () => {
    const created = await request(server, 'POST', flagsPath(project), {
      token: owner.token,
      body: { key: 'button', name: 'button', enabled: true, variants: [{ key: 'blue', value: '#00f', weight: 500 }, { key: 'green', value: '#0f0', weight: 500 }], off_variant: 'blue' },
    });
    assert.equal(created.status, 201, created.text);
    ids.button = created.body.id;
    const sent = await report(usage({ button: { enabled: 10, disabled: 2, variants: { blue: 7, green: 5, purple: 9 } } }));
    assert.equal(sent.status, 202, sent.text);
    const metrics = (await request(server, 'GET', `${flagsPath(project)}/${ids.button}/metrics?hours=2`, { token: owner.token })).body;
    assert.deepEqual({ enabled: metrics.totals.enabled, disabled: metrics.totals.disabled }, { enabled: 10, disabled: 2 });
    const rows = await server.database.db.selectFrom('evaluation_variant_counts').select(['variant', 'count']).where('flag_id', '=', ids.button!).orderBy('variant').execute();
    assert.deepEqual(rows.map((row) => [row.variant, Number(row.count)]), [['blue', 7], ['green', 5]]);
    if (metrics.totals.variants) assert.deepEqual(metrics.totals.variants, { blue: 7, green: 5 });
  });

  test('bad reports are 400 and change nothing', async () => {
    const before = await totals('alpha');
    const bad: [string, unknown][] = [
      ['negative', usage({ alpha: { enabled: -1, disabled: 0 } })],
      ['fraction', usage({ alpha: { enabled: 1.5, disabled: 0 } })],
      ['string count', usage({ alpha: { enabled: '5', disabled: 0 } })],
      ['missing disabled', usage({ alpha: { enabled: 5 } })],
      ['negative variant', usage({ alpha: { enabled: 1, disabled: 0, variants: { a: -2 } } })],
      ['no flags', { report_id: randomUUID(), environment: 'production', started_at: now(), ended_at: now() }],
      ['no report_id', { environment: 'production', started_at: now(), ended_at: now(), flags: { alpha: { enabled: 1, disabled: 0 } } }],
      ['report_id not a UUID', usage({ alpha: { enabled: 1, disabled: 0 } }, { report_id: 'report-1' })],
      ['flags not an object', usage([1, 2])],
      ['not a date', usage({ alpha: { enabled: 1, disabled: 0 } }, { ended_at: 'yesterday' })],
      ['ends before it starts', usage({ alpha: { enabled: 1, disabled: 0 } }, { started_at: now(), ended_at: new Date(Date.now() - 60_000).toISOString() })],
      ['too old', usage({ alpha: { enabled: 1, disabled: 0 } }, { started_at: '2020-01-01T00:00:00Z', ended_at: '2020-01-01T00:01:00Z' })],
      ['over 1,000 flags', usage(Object.fromEntries(Array.from({ length: 1001 }, (_, i) => [`f${i}`, { enabled: 1, disabled: 0 }])))],
      ['not JSON', 'enabled=5'],
    ];
    for (const [what, body] of bad) {
      const answer = await report(body);
      assert.equal(answer.status, 400, `${what}: ${answer.text}`);
    }
    const flagsWithAlphaLast = { ...Object.fromEntries(Array.from({ length: 1000 }, (_, i) => [`f${i}`, { enabled: 1, disabled: 0 }])), alpha: { enabled: 1, disabled: 0 } };
    assert.equal((await report(usage(flagsWithAlphaLast))).status, 400, '1,001 flags');
    assert.deepEqual(await totals('alpha'), before);
    assert.equal((await request(server, 'POST', '/sdk/v1/usage', { headers: { ...bearer(token), 'content-type': 'application/json' }, body: 'x'.repeat(1024 * 1024 + 10) })).status, 413);
  });

  test('credential: an SDK key 403, none 401, unknown environment 404; a report of 1,000 flags is taken', async () => {
    assert.equal((await report(usage({ alpha: { enabled: 1, disabled: 0 } }), { 'x-sdk-key': project.sdk_key })).status, 403);
    assert.equal((await report(usage({ alpha: { enabled: 1, disabled: 0 } }), {})).status, 401);
    assert.equal((await report(usage({ alpha: { enabled: 1, disabled: 0 } }, { environment: 'nope' }))).status, 404);
    const before = await totals('beta');
    const big = await report(usage({ ...Object.fromEntries(Array.from({ length: 999 }, (_, i) => [`unknown-${i}`, { enabled: 1, disabled: 0 }])), beta: { enabled: 2, disabled: 3 } }));
    assert.equal(big.status, 202, big.text);
    assert.deepEqual(await totals('beta'), { enabled: before.enabled + 2, disabled: before.disabled + 3 });
  });
});
