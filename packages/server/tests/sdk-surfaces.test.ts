/**
 * The SDK surfaces of docs/sdk.md over HTTP: ETag / 304 on evaluate, the change stream
 * (messages, heartbeats' shape, Last-Event-ID, stream tokens, a rotated key), and OFREP single and
 * bulk (shapes, errors, 304, history, the shared rate limit, CORS).
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { evaluate, eventually, flagsPath, newFlag, newProject, newUser, request, startServer, storedRevision, type TestProject, type TestServer, type TestUser } from './harness.js';
import { openStream, type TestStream } from './stream-client.js';
import { createTestDatabase } from './test-database.js';

const ofrep = (server: TestServer, sdkKey: string, path: string, body: unknown, headers: Record<string, string> = {}) =>
  request(server, 'POST', `/ofrep/v1/evaluate/flags${path}`, { headers: { 'x-sdk-key': sdkKey, ...headers }, body });

describe('ETag on POST /sdk/v1/evaluate', () => {
  let server: TestServer;
  let user: TestUser;
  let project: TestProject;

  before(async () => {
    server = await startServer();
    user = await newUser(server);
    project = await newProject(server, user);
    const flag = await newFlag(server, user, project, { key: 'beta', enabled: true });
    await request(server, 'POST', `${flagsPath(project)}/${flag.id}/rules`, { token: user.token, body: { rule_type: 'email_domain', rule_value: 'corp.com' } });
    await newFlag(server, user, project, { key: 'dark', enabled: false });
  });
  after(() => server.close());

  test('the same answer has the same weak ETag, and If-None-Match with it gets 304 without a body', async () => {
    const first = await evaluate(server, project.sdk_key, 'production', { user_id: 'u1' });
    const etag = first.headers.get('etag');
    assert.match(etag ?? '', /^W\/"[\w-]+"$/);
    const again = await evaluate(server, project.sdk_key, 'production', { user_id: 'u2' });
    assert.equal(again.headers.get('etag'), etag, 'another user with the same answer');
    const conditional = await request(server, 'POST', '/sdk/v1/evaluate', {
      sdkKey: project.sdk_key,
      headers: { 'if-none-match': etag! },
      body: { environment: 'production', context: { user_id: 'u1' } },
    });
    assert.equal(conditional.status, 304);
    assert.equal(conditional.text, '');
    assert.equal(conditional.headers.get('etag'), etag);
  });

  test('a changed user attribute that changes the answer is not answered 304', async () => {
    const plain = await evaluate(server, project.sdk_key, 'production', { user_id: 'u1', user_email: 'a@example.com' });
    const changed = await request(server, 'POST', '/sdk/v1/evaluate', {
      sdkKey: project.sdk_key,
      headers: { 'if-none-match': plain.headers.get('etag')! },
      body: { environment: 'production', context: { user_id: 'u1', user_email: 'a@corp.com' } },
    });
    assert.equal(changed.status, 200);
    assert.equal(changed.body.flags.beta.reason, 'Matched email_domain targeting rule');
    assert.notEqual(changed.headers.get('etag'), plain.headers.get('etag'));
  });

  test('a change to a flag changes the ETag', async () => {
    const before = await evaluate(server, project.sdk_key, 'production', {});
    const dark = (await request(server, 'GET', flagsPath(project), { token: user.token })).body.find((f: { key: string }) => f.key === 'dark');
    await request(server, 'POST', `${flagsPath(project)}/${dark.id}/toggle`, { token: user.token });
    const after = await request(server, 'POST', '/sdk/v1/evaluate', {
      sdkKey: project.sdk_key,
      headers: { 'if-none-match': before.headers.get('etag')! },
      body: { environment: 'production', context: {} },
    });
    assert.equal(after.status, 200);
    assert.equal(after.body.flags.dark.enabled, true);
  });
});

describe('GET /sdk/v1/stream', () => {
  let server: TestServer;
  let user: TestUser;
  const streams: TestStream[] = [];

  before(async () => {
    server = await startServer();
    user = await newUser(server);
  });
  after(async () => {
    for (const stream of streams) stream.close();
    await server.close();
  });

  const open = async (path: string, headers: Record<string, string> = {}) => {
    const stream = await openStream(server.url + path, headers);
    streams.push(stream);
    return stream;
  };

  test('401 without or with a wrong key or token, 404 for an unknown environment, 400 without one', async () => {
    const project = await newProject(server, user);
    assert.equal((await open('/sdk/v1/stream?environment=production')).status, 401);
    assert.equal((await open('/sdk/v1/stream?environment=production', { 'x-sdk-key': 'sdk_nope' })).status, 401);
    assert.equal((await open('/sdk/v1/stream?token=not.a.token')).status, 401);
    const unknown = await request(server, 'GET', '/sdk/v1/stream?environment=nope', { sdkKey: project.sdk_key });
    assert.equal(unknown.status, 404);
    assert.match(unknown.body.message, /nope/);
    const missing = await request(server, 'GET', '/sdk/v1/stream', { sdkKey: project.sdk_key });
    assert.equal(missing.status, 400);
    assert.equal(missing.body.statusCode, 400);
  });

  /** The project's stored revision, as a client that fetched it names it in Last-Event-ID. */
  const revisionOf = async (project: TestProject) => String(await storedRevision(server, project.id));

  test('a toggle reaches the stream as refetchEvaluation with the revision as id; other projects hear nothing', async () => {
    const project = await newProject(server, user);
    const other = await newProject(server, user, 'other');
    const flag = await newFlag(server, user, project, { key: 'f', enabled: false });
    // Clients that hold the current revisions: a stream opened without one so soon after a change would begin with a message.
    const stream = await open('/sdk/v1/stream?environment=production', { authorization: `Bearer ${project.sdk_key}`, 'last-event-id': await revisionOf(project) });
    const quiet = await open('/sdk/v1/stream?environment=production', { 'x-sdk-key': other.sdk_key, 'last-event-id': await revisionOf(other) });
    assert.equal(stream.status, 200);
    assert.match(stream.headers.get('content-type') ?? '', /^text\/event-stream/);
    assert.equal(stream.messages.length, 0);

    await request(server, 'POST', `${flagsPath(project)}/${flag.id}/toggle`, { token: user.token });
    await eventually(() => stream.messages.length > 0, 'a message after the toggle');
    const [message] = stream.messages;
    assert.equal(message!.event, 'message');
    const data = JSON.parse(message!.data);
    assert.equal(data.type, 'refetchEvaluation');
    assert.equal(typeof data.etag, 'string');
    assert.ok(Math.abs(data.lastModified - Date.now() / 1000) < 60);
    assert.match(message!.id ?? '', /^\d+$/);
    assert.match(stream.raw, /^retry: \d+/);
    assert.equal(data.spread, undefined, 'one stream at REFETCH_RATE 5,000 a second needs no spread');
    assert.equal(quiet.messages.length, 0);
  });

  test('opened without Last-Event-ID within 10 s of a change, a stream begins with a message; later, with the revision it starts from (an id without data)', { timeout: 30_000 }, async () => {
    const project = await newProject(server, user);
    const flag = await newFlag(server, user, project, { key: 'f', enabled: false });
    const toggledAt = Date.now();
    await request(server, 'POST', `${flagsPath(project)}/${flag.id}/toggle`, { token: user.token });
    // A client fetched after the change compiled (so the stream opens on the current view), and
    // opens its stream after the change's message went out: its first fetch may have come before
    // the change, so the stream tells it to fetch again.
    assert.equal((await evaluate(server, project.sdk_key, 'production', {})).body.flags.f?.enabled, true);
    await new Promise((resolve) => setTimeout(resolve, 200));
    const current = await revisionOf(project);
    const late = await open('/sdk/v1/stream?environment=production', { 'x-sdk-key': project.sdk_key, 'x-guidon-context': encodeURIComponent('{"user_id":"u1"}') });
    await eventually(() => late.messages.length === 1, 'a message at once');
    assert.equal(late.messages[0]!.id, current);
    assert.equal(JSON.parse(late.messages[0]!.data).type, 'refetchEvaluation');
    // The plain message: its client has just fetched (only a reconnect behind gets the answer, docs/sdk.md "Reconnecting").
    assert.equal(JSON.parse(late.messages[0]!.data).answer, undefined);

    // 10 s after the change: the stream starts with its revision as an id line (an EventSource
    // sends it back as Last-Event-ID when it reconnects), and no message.
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, toggledAt + 10_500 - Date.now())));
    const quiet = await open('/sdk/v1/stream?environment=production', { 'x-sdk-key': project.sdk_key });
    await eventually(() => quiet.raw.includes(`id: ${current}\n\n`), 'the id line');
    assert.equal(quiet.messages.length, 0);
    assert.equal(late.messages.length, 1);
  });

  test('an instance in its first 10 s counts every project as just changed: a change made before it started is not known to it', async () => {
    const database = await createTestDatabase();
    const before = await startServer({}, { database });
    const owner = await newUser(before);
    const project = await newProject(before, owner);
    await newFlag(before, owner, project, { key: 'f', enabled: true });
    await before.close();
    const after = await startServer({}, { database });
    try {
      assert.equal((await evaluate(after, project.sdk_key, 'production', {})).body.flags.f?.enabled, true); // compiled: the stream opens on the current view
      const stream = await openStream(`${after.url}/sdk/v1/stream?environment=production`, { 'x-sdk-key': project.sdk_key });
      streams.push(stream);
      await eventually(() => stream.messages.length === 1, 'a message at once');
      assert.equal(JSON.parse(stream.messages[0]!.data).type, 'refetchEvaluation');
    } finally {
      await after.close();
      await database.drop();
    }
  });

  test('Last-Event-ID older than the current revision gets a message at once; the current one gets none, only that id (nothing was missed)', async () => {
    const project = await newProject(server, user);
    const flag = await newFlag(server, user, project, { key: 'f', enabled: false });
    const first = await open('/sdk/v1/stream?environment=production', { 'x-sdk-key': project.sdk_key });
    await request(server, 'POST', `${flagsPath(project)}/${flag.id}/toggle`, { token: user.token });
    // The stored revision after the toggle; a first message may carry the one compiled just before
    // the bump, and the revision check then sends the stored one.
    const current = await revisionOf(project);
    await eventually(() => first.messages.at(-1)?.id === current, 'a message with the stored revision');

    const upToDate = await open('/sdk/v1/stream?environment=production', { 'x-sdk-key': project.sdk_key, 'last-event-id': current });
    const behind = await open('/sdk/v1/stream?environment=production', { 'x-sdk-key': project.sdk_key, 'last-event-id': String(Number(current) - 1) });
    await eventually(() => behind.messages.length === 1, 'the catch-up message');
    assert.equal(behind.messages[0]!.id, current);
    assert.equal(upToDate.messages.length, 0);
    await eventually(() => upToDate.raw.includes(`\nid: ${current}\n\n`) || upToDate.raw.startsWith(`id: ${current}\n\n`), 'the id of the revision named');
    assert.doesNotMatch(upToDate.raw, /data:/);
  });

  test('regenerating the key closes its streams; the new key streams', async () => {
    const project = await newProject(server, user);
    const stream = await open('/sdk/v1/stream?environment=staging', { 'x-sdk-key': project.sdk_key });
    assert.equal(stream.status, 200);
    let ended = false;
    void stream.ended.then(() => (ended = true));
    const regenerated = await request(server, 'POST', `/api/projects/${project.id}/regenerate-key`, { token: user.token });
    assert.equal(regenerated.status, 200);
    await eventually(() => ended, 'the stream of the old key to end');
    assert.equal((await open('/sdk/v1/stream?environment=staging', { 'x-sdk-key': project.sdk_key })).status, 401);
    assert.equal((await open('/sdk/v1/stream?environment=staging', { 'x-sdk-key': regenerated.body.sdk_key })).status, 200);
  });

  test('a stream token from the OFREP bulk answer opens the stream of its environment, and never appears in the logs', async () => {
    const project = await newProject(server, user);
    const flag = await newFlag(server, user, project, { key: 'f', enabled: false }, project.staging);
    const bulk = await ofrep(server, project.sdk_key, '', { context: {} }, { 'x-environment': 'staging' });
    assert.equal(bulk.status, 200);
    const [eventStream] = bulk.body.eventStreams;
    assert.equal(eventStream.type, 'sse');
    const uri: string = eventStream.endpoint.requestUri;
    assert.match(uri, /^\/sdk\/v1\/stream\?token=/);
    const token = decodeURIComponent(new URL(uri, server.url).searchParams.get('token')!);

    const stream = await open(uri);
    assert.equal(stream.status, 200);
    await request(server, 'POST', `${flagsPath(project, project.staging)}/${flag.id}/toggle`, { token: user.token });
    await eventually(() => stream.messages.length > 0, 'a message on the token stream');

    // Scoped: a token of one project opens nothing else, and the key's rotation retires it.
    await request(server, 'POST', `/api/projects/${project.id}/regenerate-key`, { token: user.token });
    await eventually(async () => (await openStream(server.url + uri)).status === 401, 'the token to be refused after the key changed');

    const logs = server.logs.join('');
    assert.ok(logs.includes('/sdk/v1/stream?token=[redacted]'), 'the stream request is logged, redacted');
    assert.ok(!logs.includes(token), 'the token is not in the logs');
    assert.ok(!logs.includes(project.sdk_key), 'nor is the SDK key');
  });
});

describe('the answer in the message (X-Guidon-Context, docs/sdk.md)', () => {
  let server: TestServer;
  let user: TestUser;
  before(async () => {
    server = await startServer();
    user = await newUser(server);
  });
  after(() => server.close());

  test("a stream opened with a context gets, with each change, evaluate's answer for that context byte for byte and its ETag; one without gets none", async (t) => {
    const project = await newProject(server, user);
    const flag = await newFlag(server, user, project, { key: 'f', enabled: false });
    const beta = await newFlag(server, user, project, { key: 'beta', enabled: true });
    await request(server, 'POST', `${flagsPath(project)}/${beta.id}/rules`, { token: user.token, body: { rule_type: 'user_id', rule_value: 'vïp' } });
    const context = { user_id: 'vïp', user_email: null, custom_attributes: { plan: 'pro', seats: 3 } };
    const revision = String(await storedRevision(server, project.id));
    const path = `${server.url}/sdk/v1/stream?environment=production`;
    const base = { 'x-sdk-key': project.sdk_key, 'last-event-id': revision };
    const plain = await openStream(path, base);
    const answered = await openStream(path, { ...base, 'x-guidon-context': encodeURIComponent(JSON.stringify(context)) });
    const withKinds = await openStream(path, { ...base, 'x-guidon-context': encodeURIComponent(JSON.stringify(context)), 'x-guidon-answer': 'kind' });
    t.after(() => [plain, answered, withKinds].forEach((stream) => stream.close()));
    assert.deepEqual([plain.status, answered.status, withKinds.status], [200, 200, 200]);

    await request(server, 'POST', `${flagsPath(project)}/${flag.id}/toggle`, { token: user.token });
    await eventually(() => [plain, answered, withKinds].every((stream) => stream.messages.length > 0), 'a message on each stream');
    const evaluated = (headers: Record<string, string> = {}) => fetch(`${server.url}/sdk/v1/evaluate`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-sdk-key': project.sdk_key, ...headers }, body: JSON.stringify({ environment: 'production', context }) });
    for (const [stream, headers] of [[answered, {}], [withKinds, { 'x-guidon-answer': 'kind' }]] as const) {
      const data = stream.messages[0]!.data;
      const message = JSON.parse(data);
      assert.equal(message.type, 'refetchEvaluation');
      assert.equal(message.etag, JSON.parse(plain.messages[0]!.data).etag);
      const answer = await evaluated(headers);
      const text = await answer.text();
      assert.ok(data.includes(`"answer":${text}`), 'the answer is the evaluate body, byte for byte');
      assert.equal(message.answerEtag, answer.headers.get('etag'));
      assert.equal(message.answer.flags.f.enabled, true);
      assert.equal(message.answer.flags.beta.reason, 'Matched user_id targeting rule');
    }
    assert.equal(JSON.parse(answered.messages[0]!.data).answer.flags.f.kind, undefined);
    assert.equal(JSON.parse(withKinds.messages[0]!.data).answer.flags.f.kind, 'STATIC');
    const none = JSON.parse(plain.messages[0]!.data);
    assert.equal(none.answer, undefined);
    assert.equal(none.answerEtag, undefined);

    // The next changes: only the flags whose answer changed, over the answer the stream was sent
    // (answerFrom); the answer held plus them is evaluate's answer, ETag included.
    let held = JSON.parse(withKinds.messages[0]!.data);
    let heldFlags = held.answer.flags;
    const next = async (what: string, change: () => Promise<unknown>, expectedKeys: string[]) => {
      const seen = withKinds.messages.length;
      await change();
      await eventually(() => withKinds.messages.length > seen, what);
      const message = JSON.parse(withKinds.messages[seen]!.data);
      assert.equal(message.answer, undefined, `${what}: not the whole answer`);
      assert.equal(message.answerFrom, held.answerEtag, `${what}: from the answer sent before`);
      assert.deepEqual(Object.keys(message.answerChanges.flags), expectedKeys, `${what}: only what changed`);
      const answer = await evaluated({ 'x-guidon-answer': 'kind' });
      const fresh = (await answer.json()) as { flags: Record<string, unknown> };
      heldFlags = { ...heldFlags, ...message.answerChanges.flags };
      assert.deepEqual(heldFlags, fresh.flags, `${what}: the answer held plus the changes is evaluate's`);
      assert.deepEqual(Object.keys(heldFlags), Object.keys(fresh.flags), `${what}: in evaluate's order`);
      assert.equal(message.answerEtag, answer.headers.get('etag'));
      held = message;
    };
    await next('a toggle', () => request(server, 'POST', `${flagsPath(project)}/${flag.id}/toggle`, { token: user.token }), ['f']);
    // A flag added: the codes no longer line up, so the whole answer comes again.
    const seen = withKinds.messages.length;
    await newFlag(server, user, project, { key: 'colour', enabled: true });
    await eventually(() => withKinds.messages.length > seen, 'the message for the new flag');
    const whole = JSON.parse(withKinds.messages.at(-1)!.data);
    assert.equal(whole.answerChanges, undefined);
    assert.deepEqual(whole.answer, await (await evaluated({ 'x-guidon-answer': 'kind' })).json(), 'a flag added: the whole answer again');
    held = whole;
    heldFlags = whole.answer.flags;
    await next('a toggle after it', () => request(server, 'POST', `${flagsPath(project)}/${flag.id}/toggle`, { token: user.token }), ['f']);
  });

  test('a stream that reconnects behind (Last-Event-ID of an older revision) gets the change with its whole answer; an API-token stream gets the whole ruleset', async (t) => {
    const project = await newProject(server, user);
    const flag = await newFlag(server, user, project, { key: 'f', enabled: false });
    const seen = String(await storedRevision(server, project.id));
    await request(server, 'POST', `${flagsPath(project)}/${flag.id}/toggle`, { token: user.token });
    const context = { user_id: 'back-again' };
    const created = await request(server, 'POST', '/api/tokens', { token: user.token, body: { name: 'local', project_id: project.id, role: 'viewer' } });
    const path = `${server.url}/sdk/v1/stream?environment=production`;
    const remote = await openStream(path, { 'x-sdk-key': project.sdk_key, 'last-event-id': seen, 'x-guidon-context': encodeURIComponent(JSON.stringify(context)) });
    const local = await openStream(path, { authorization: `Bearer ${created.body.token}`, 'last-event-id': seen });
    t.after(() => [remote, local].forEach((stream) => stream.close()));
    await eventually(() => remote.messages.length > 0 && local.messages.length > 0, 'the catch-up on each stream');

    const answer = await fetch(`${server.url}/sdk/v1/evaluate`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-sdk-key': project.sdk_key }, body: JSON.stringify({ environment: 'production', context }) });
    const data = remote.messages[0]!.data;
    assert.ok(data.includes(`"answer":${await answer.text()}`), "the catch-up carries evaluate's answer, byte for byte");
    assert.equal(JSON.parse(data).answerEtag, answer.headers.get('etag'));
    assert.equal(JSON.parse(data).answer.flags.f.enabled, true);

    const ruleset = await fetch(`${server.url}/sdk/v1/ruleset?environment=production`, { headers: { authorization: `Bearer ${created.body.token}` } });
    const message = JSON.parse(local.messages[0]!.data);
    assert.equal(message.type, 'refetchRuleset');
    assert.equal(message.etag, ruleset.headers.get('etag'));
    assert.deepEqual(message.ruleset, await ruleset.json(), 'the catch-up carries the ruleset, whole');
  });

  test('a context header that is not percent-encoded JSON, or not a context, is a 400 that says why; the stream does not open', async () => {
    const project = await newProject(server, user);
    for (const [header, says] of [
      ['%7Bnot json', /percent-encoded/],
      [encodeURIComponent(JSON.stringify({ user_id: 5 })), /user_id/],
      [encodeURIComponent(JSON.stringify([1])), /not a valid context/],
    ] as const) {
      const refused = await request(server, 'GET', '/sdk/v1/stream?environment=production', { sdkKey: project.sdk_key, headers: { 'x-guidon-context': header } });
      assert.equal(refused.status, 400, header);
      assert.match(refused.body.message, says);
    }
  });
});

describe('the spread a change message announces (docs/sdk.md, "Spread refetches")', () => {
  test("each message carries the project's open streams on the instance over REFETCH_RATE, in ms, for SDK-key and API-token streams alike, up to 30 s; none at REFETCH_RATE=0", async (t) => {
    const spreads = async (env: Record<string, string>, count: number) => {
      const server = await startServer(env);
      t.after(() => server.close());
      const user = await newUser(server);
      const project = await newProject(server, user);
      const flag = await newFlag(server, user, project, { key: 'f', enabled: false });
      const created = await request(server, 'POST', '/api/tokens', { token: user.token, body: { name: 'local', project_id: project.id } });
      assert.equal(created.status, 201, created.text);
      const revision = String(await storedRevision(server, project.id));
      const path = `${server.url}/sdk/v1/stream?environment=production`;
      const streams = await Promise.all(
        Array.from({ length: count }, (_, i) => openStream(path, { ...(i === 0 ? { authorization: `Bearer ${created.body.token}` } : { 'x-sdk-key': project.sdk_key }), 'last-event-id': revision })),
      );
      t.after(() => streams.forEach((stream) => stream.close()));
      assert.deepEqual(streams.map((stream) => stream.status), streams.map(() => 200));
      await request(server, 'POST', `${flagsPath(project)}/${flag.id}/toggle`, { token: user.token });
      await eventually(() => streams.every((stream) => stream.messages.length > 0), 'a message on every stream');
      const data = streams.map((stream) => JSON.parse(stream.messages[0]!.data));
      assert.deepEqual(new Set(data.map((each) => each.type)), new Set(['refetchRuleset', 'refetchEvaluation']));
      return new Set(data.map((each) => each.spread));
    };
    // 3 streams at 2 a second: 1,500 ms; 40 at 1 a second would be 40 s, announced as 30 s.
    assert.deepEqual(await spreads({ REFETCH_RATE: '2' }, 3), new Set([1500]));
    assert.deepEqual(await spreads({ REFETCH_RATE: '1' }, 40), new Set([30_000]));
    assert.deepEqual(await spreads({ REFETCH_RATE: '0' }, 3), new Set([undefined]));
  });
});

describe('OFREP', () => {
  let server: TestServer;
  let user: TestUser;
  let project: TestProject;

  before(async () => {
    server = await startServer({ CORS_ORIGINS: 'https://app.example.com' });
    user = await newUser(server);
    project = await newProject(server, user);
    await newFlag(server, user, project, { key: 'off', enabled: false });
    await newFlag(server, user, project, { key: 'on', enabled: true });
    await newFlag(server, user, project, { key: 'half', enabled: true, rollout_percentage: 50 });
    const targeted = await newFlag(server, user, project, { key: 'targeted', enabled: true, rollout_percentage: 0 });
    await request(server, 'POST', `${flagsPath(project)}/${targeted.id}/rules`, { token: user.token, body: { rule_type: 'user_email', rule_value: 'ada@example.com' } });
    await newFlag(server, user, project, { key: 'staged', enabled: true }, project.staging);
  });
  after(() => server.close());

  test('single: value, variant, OFREP reason and Guidon reason in metadata, with every credential header', async () => {
    const context = { targetingKey: 'user_1', email: 'ada@example.com', plan: 'pro' };
    const off = await ofrep(server, project.sdk_key, '/off', { context });
    assert.equal(off.status, 200);
    assert.deepEqual(off.body, { key: 'off', value: false, variant: 'off', reason: 'DISABLED', metadata: { reason: 'Flag is globally disabled' } });
    const on = await request(server, 'POST', '/ofrep/v1/evaluate/flags/on', { headers: { 'x-api-key': project.sdk_key }, body: { context } });
    assert.deepEqual(on.body, { key: 'on', value: true, variant: 'on', reason: 'STATIC', metadata: { reason: 'Flag enabled globally' } });
    const targeted = await request(server, 'POST', '/ofrep/v1/evaluate/flags/targeted', { token: project.sdk_key, body: { context } });
    assert.deepEqual(targeted.body, { key: 'targeted', value: true, variant: 'on', reason: 'TARGETING_MATCH', metadata: { reason: 'Matched user_email targeting rule' } });
    const half = await ofrep(server, project.sdk_key, '/half', { context });
    assert.equal(half.body.reason, 'SPLIT');
    assert.equal(half.body.value, (await evaluate(server, project.sdk_key, 'production', { user_id: 'user_1' })).body.flags.half?.enabled);
    const staged = await ofrep(server, project.sdk_key, '/staged', { context }, { 'x-environment': 'staging' });
    assert.equal(staged.body.value, true);
  });

  test('errors carry key and errorCode: 404 FLAG_NOT_FOUND, 400 INVALID_CONTEXT and PARSE_ERROR, 401', async () => {
    const missing = await ofrep(server, project.sdk_key, '/nope', { context: {} });
    assert.equal(missing.status, 404);
    assert.equal(missing.body.key, 'nope');
    assert.equal(missing.body.errorCode, 'FLAG_NOT_FOUND');
    assert.equal(typeof missing.body.errorDetails, 'string');
    const invalid = await ofrep(server, project.sdk_key, '/on', { context: { targetingKey: 42 } });
    assert.equal(invalid.status, 400);
    assert.deepEqual([invalid.body.key, invalid.body.errorCode], ['on', 'INVALID_CONTEXT']);
    const unparsable = await ofrep(server, project.sdk_key, '/on', '{"context":');
    assert.equal(unparsable.status, 400);
    assert.deepEqual([unparsable.body.key, unparsable.body.errorCode], ['on', 'PARSE_ERROR']);
    const bulkInvalid = await ofrep(server, project.sdk_key, '', { context: 'nope' });
    assert.equal(bulkInvalid.status, 400);
    assert.equal(bulkInvalid.body.errorCode, 'INVALID_CONTEXT');
    const unauthorized = await ofrep(server, 'sdk_wrong', '/on', { context: {} });
    assert.equal(unauthorized.status, 401);
    assert.equal(unauthorized.body.key, 'on');
    const environment = await ofrep(server, project.sdk_key, '', { context: {} }, { 'x-environment': 'nope' });
    assert.equal(environment.status, 404);
    assert.match(environment.body.errorDetails, /nope/);
  });

  test('bulk: every flag of the environment, eventStreams, ETag and 304 without a body; a changed attribute is not 304', async () => {
    const bulk = await ofrep(server, project.sdk_key, '', { context: { targetingKey: 'user_1' } });
    assert.equal(bulk.status, 200);
    assert.deepEqual(bulk.body.flags.map((flag: { key: string }) => flag.key), ['off', 'on', 'half', 'targeted']);
    for (const flag of bulk.body.flags) assert.equal(typeof flag.value, 'boolean');
    const etag = bulk.headers.get('etag')!;
    const same = await ofrep(server, project.sdk_key, '', { context: { targetingKey: 'user_1' } }, { 'if-none-match': etag });
    assert.equal(same.status, 304);
    assert.equal(same.text, '');
    const changed = await ofrep(server, project.sdk_key, '', { context: { targetingKey: 'user_1', email: 'ada@example.com' } }, { 'if-none-match': etag });
    assert.equal(changed.status, 200);
    assert.equal(changed.body.flags.find((flag: { key: string }) => flag.key === 'targeted').value, true);
  });

  test('evaluations through OFREP are recorded in history like evaluate\'s', async () => {
    const p = await newProject(server, user, 'history');
    await newFlag(server, user, p, { key: 'a', enabled: true });
    await newFlag(server, user, p, { key: 'b', enabled: false });
    await ofrep(server, p.sdk_key, '/b', { context: { targetingKey: 'ofrep-single' } });
    await ofrep(server, p.sdk_key, '', { context: { targetingKey: 'ofrep-bulk' } });
    const items = async () => (await request(server, 'GET', `/api/projects/${p.id}/evaluations`, { token: user.token })).body.items as { flag_key: string; user_id: string; enabled: boolean; reason: string }[];
    await eventually(async () => (await items()).length === 3, 'three history items');
    const seen = (await items()).map((item) => `${item.user_id} ${item.flag_key} ${item.enabled} ${item.reason}`).sort();
    assert.deepEqual(seen, ['ofrep-bulk a true Flag enabled globally', 'ofrep-bulk b false Flag is globally disabled', 'ofrep-single b false Flag is globally disabled']);
  });

  test('CORS: the preflight allows the credential headers; ETag and Retry-After are exposed', async () => {
    const preflight = await request(server, 'OPTIONS', '/ofrep/v1/evaluate/flags', {
      headers: {
        origin: 'https://app.example.com',
        'access-control-request-method': 'POST',
        'access-control-request-headers': 'x-sdk-key,x-environment,if-none-match,content-type,authorization,x-api-key',
      },
    });
    assert.ok(preflight.status === 204 || preflight.status === 200, String(preflight.status));
    const allowed = (preflight.headers.get('access-control-allow-headers') ?? '').toLowerCase();
    for (const header of ['x-sdk-key', 'x-api-key', 'authorization', 'x-environment', 'if-none-match', 'content-type']) assert.ok(allowed.includes(header), `${header} in ${allowed}`);
    const answer = await ofrep(server, project.sdk_key, '', { context: {} }, { origin: 'https://app.example.com' });
    assert.equal(answer.headers.get('access-control-allow-origin'), 'https://app.example.com');
    const exposed = (answer.headers.get('access-control-expose-headers') ?? '').toLowerCase();
    assert.ok(exposed.includes('etag') && exposed.includes('retry-after'), exposed);
  });
});

describe('the rate limit is shared by evaluate, OFREP and the stream', () => {
  let server: TestServer;
  after(() => server?.close());

  test('past the budget OFREP answers 429 with Retry-After and an OFREP body', async () => {
    server = await startServer({ RATE_LIMIT_EVALUATE: '3' });
    const user = await newUser(server);
    const project = await newProject(server, user);
    await newFlag(server, user, project, { key: 'f', enabled: true });
    assert.equal((await evaluate(server, project.sdk_key, 'production')).status, 200);
    assert.equal((await ofrep(server, project.sdk_key, '/f', { context: {} })).status, 200);
    assert.equal((await ofrep(server, project.sdk_key, '', { context: {} })).status, 200);
    const limited = await ofrep(server, project.sdk_key, '/f', { context: {} });
    assert.equal(limited.status, 429);
    assert.ok(Number(limited.headers.get('retry-after')) >= 1);
    assert.equal(limited.body.errorCode, 'GENERAL');
    assert.equal((await evaluate(server, project.sdk_key, 'production')).status, 429);
    assert.equal((await request(server, 'GET', '/sdk/v1/stream?environment=production', { sdkKey: project.sdk_key })).status, 429);
  });
});

describe('open streams per client (docs/sdk.md: STREAMS_PER_CLIENT)', () => {
  let server: TestServer;
  const streams: TestStream[] = [];
  after(async () => {
    for (const stream of streams) stream.close();
    await server?.close();
  });

  test('past the cap per client address and SDK key the next stream is 429 with Retry-After; closing one frees a place', { timeout: 60_000 }, async () => {
    server = await startServer({ STREAMS_PER_CLIENT: '3' });
    const user = await newUser(server);
    const [project, other] = [await newProject(server, user), await newProject(server, user)];
    const open = async (sdkKey: string) => {
      const stream = await openStream(`${server.url}/sdk/v1/stream?environment=production`, { 'x-sdk-key': sdkKey });
      streams.push(stream);
      return stream;
    };
    const held = [await open(project.sdk_key), await open(project.sdk_key), await open(project.sdk_key)];
    assert.deepEqual(held.map((stream) => stream.status), [200, 200, 200]);
    const refused = await request(server, 'GET', '/sdk/v1/stream?environment=production', { sdkKey: project.sdk_key });
    assert.equal(refused.status, 429);
    assert.ok(Number(refused.headers.get('retry-after')) >= 1);
    assert.equal(refused.body.statusCode, 429);
    // The cap is per SDK key: the same address may follow another project.
    assert.equal((await open(other.sdk_key)).status, 200);
    held[0]!.close();
    await eventually(async () => {
      const again = await open(project.sdk_key);
      return again.status === 200;
    }, 'a place freed by the closed stream');
  });
});

describe('the OpenAPI document of the SDK surfaces', () => {
  let server: TestServer;
  before(async () => {
    server = await startServer();
  });
  after(() => server.close());

  test('lists every status they answer: 413 for a body over 1 MiB, 503 with the database away (database-away.test.ts)', async () => {
    const doc = (await request(server, 'GET', '/docs/json')).body;
    const statuses = (method: string, path: string) => Object.keys(doc.paths[path][method].responses).sort();
    assert.deepEqual(statuses('post', '/sdk/v1/evaluate'), ['200', '304', '400', '401', '404', '413', '429', '500', '503']);
    assert.deepEqual(doc.paths['/sdk/v1/evaluate'].post.responses['503'].content['application/json'].schema, { $ref: '#/components/schemas/Error' });
    assert.deepEqual(statuses('post', '/ofrep/v1/evaluate/flags/{key}'), ['200', '400', '401', '404', '413', '429', '500', '503']);
    assert.deepEqual(statuses('post', '/ofrep/v1/evaluate/flags'), ['200', '304', '400', '401', '404', '413', '429', '500', '503']);
    assert.deepEqual(statuses('get', '/sdk/v1/stream'), ['200', '400', '401', '404', '429', '500', '503']);

    const user = await newUser(server);
    const project = await newProject(server, user);
    const huge = 'x'.repeat(1024 * 1024 + 1);
    const tooLarge = await request(server, 'POST', '/sdk/v1/evaluate', { sdkKey: project.sdk_key, body: { environment: 'production', padding: huge } });
    assert.equal(tooLarge.status, 413);
    assert.equal(tooLarge.body.statusCode, 413);
    for (const path of ['', '/f']) {
      const answer = await ofrep(server, project.sdk_key, path, { context: {}, padding: huge });
      assert.equal(answer.status, 413, `OFREP${path}`);
      assert.equal(answer.body.errorCode, 'GENERAL');
    }
  });
});
