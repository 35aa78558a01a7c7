import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { bucketOf, evaluateFlag, type FlagDefinition, type RuleDefinition } from '@guidon/engine';
import { evaluate, eventually, flagsPath, newFlag, newProject, newUser, request, startServer, type TestServer } from './harness.js';

/**
 * Evaluate reuses the bytes of a recent answer when every flag's outcome is the same
 * (evaluate.answers.ts). Whatever it keeps, each request must get its own answer.
 */
describe('evaluate answers reused between requests', () => {
  let server: TestServer;

  before(async () => {
    server = await startServer();
  });
  after(() => server.close());

  const rollout = (key: string, n: number, id: string) =>
    bucketOf(key, id) < n ? { enabled: true, reason: `User in ${n}% rollout` } : { enabled: false, reason: `User not in ${n}% rollout` };

  test('every request gets the answer of its own context, with few distinct answers and with more than are kept', async () => {
    const user = await newUser(server);
    const project = await newProject(server, user);
    await newFlag(server, user, project, { key: 'off', enabled: false });
    await newFlag(server, user, project, { key: 'on', enabled: true });
    await newFlag(server, user, project, { key: 'half', enabled: true, rollout_percentage: 50 });
    const vip = await newFlag(server, user, project, { key: 'vip', enabled: true, rollout_percentage: 10 });
    await request(server, 'POST', `${flagsPath(project)}/${vip.id}/rules`, { token: user.token, body: { rule_type: 'user_id', rule_value: 'vip-1' } });
    // Six 30% rollouts: 64 outcome sets for the staging environment, more than one environment keeps.
    const keys = ['r1', 'r2', 'r3', 'r4', 'r5', 'r6'];
    for (const key of keys) await newFlag(server, user, project, { key, enabled: true, rollout_percentage: 30 }, project.staging);

    for (let i = 0; i < 120; i++) {
      const id = i % 7 === 0 ? 'vip-1' : `user-${i % 40}`;
      const production = await evaluate(server, project.sdk_key, 'production', { user_id: id });
      assert.equal(production.status, 200);
      assert.deepEqual(production.body.flags, {
        off: { enabled: false, reason: 'Flag is globally disabled' },
        on: { enabled: true, reason: 'Flag enabled globally' },
        half: rollout('half', 50, id),
        vip: id === 'vip-1' ? { enabled: true, reason: 'Matched user_id targeting rule' } : rollout('vip', 10, id),
      }, `production, ${id}`);
      // Keys in the order of the environment's flags, as when every answer was built anew.
      assert.deepEqual(Object.keys(production.body.flags), ['off', 'on', 'half', 'vip']);

      const staging = await evaluate(server, project.sdk_key, 'staging', { user_id: `user-${i}` });
      assert.deepEqual(staging.body.flags, Object.fromEntries(keys.map((key) => [key, rollout(key, 30, `user-${i}`)])), `staging, user-${i}`);
    }
  });

  test('a changed flag is answered at once, even when every outcome code stays the same', async () => {
    const user = await newUser(server);
    const project = await newProject(server, user);
    const flag = await newFlag(server, user, project, { key: 'old_key', enabled: true });
    assert.deepEqual((await evaluate(server, project.sdk_key, 'production', { user_id: 'u' })).body.flags, { old_key: { enabled: true, reason: 'Flag enabled globally' } });
    // Same outcome (enabled globally), another key: the kept bytes of the old answer must not be served.
    const renamed = await request(server, 'PUT', `${flagsPath(project)}/${flag.id}`, { token: user.token, body: { key: 'new_key' } });
    assert.equal(renamed.status, 200, renamed.text);
    assert.deepEqual((await evaluate(server, project.sdk_key, 'production', { user_id: 'u' })).body.flags, { new_key: { enabled: true, reason: 'Flag enabled globally' } });
  });
  test('a large environment: answers written from prepared bytes equal the flag-by-flag evaluation, rules matched or not', async () => {
    const user = await newUser(server);
    const project = await newProject(server, user);
    // Off, on, a 50% rollout, on with rules, a 30% rollout with rules: 150 flags, answers that never repeat.
    const definitions: FlagDefinition[] = [];
    for (let i = 0; i < 150; i++) {
      const kind = i % 5;
      const key = `flag_${i}`;
      const rollout_percentage = kind === 2 ? 50 : kind === 4 ? 30 : 0;
      const flag = await newFlag(server, user, project, { key, enabled: kind !== 0, rollout_percentage });
      const rules: RuleDefinition[] = [];
      if (kind >= 3) {
        const added: [RuleDefinition['type'], string][] = [['user_id', `vip-${i % 3}`], ['user_email', `Boss-${i % 4}@Example.com`], ['email_domain', i % 2 === 0 ? 'partner.com' : '@other.org']];
        for (const [type, value] of added) {
          const created = await request(server, 'POST', `${flagsPath(project)}/${flag.id}/rules`, { token: user.token, body: { rule_type: type, rule_value: value } });
          assert.equal(created.status, 201, created.text);
          rules.push({ type, value, enabled: true });
        }
      }
      definitions.push({ key, enabled: kind !== 0, rolloutPercentage: rollout_percentage, rules });
    }
    const contexts = [
      {},
      { user_id: 'vip-1' },
      { user_email: 'boss-2@example.com' },
      { user_id: 'someone', user_email: 'x@partner.com' },
      { user_id: 'vip-0', user_email: 'y@other.org' },
      ...Array.from({ length: 40 }, (_, n) => ({ user_id: `user-${n}`, user_email: `user-${n}@example.com` })),
    ];
    // In parallel, many times over: answers written into shared buffers must never show another's bytes.
    const checks = Array.from({ length: 8 }, () => contexts).flat();
    await Promise.all(checks.map(async (context) => {
      const answer = await evaluate(server, project.sdk_key, 'production', context);
      assert.equal(answer.status, 200);
      assert.equal(answer.headers.get('content-length'), String(Buffer.byteLength(answer.text)));
      assert.deepEqual(Object.keys(answer.body.flags), definitions.map((d) => d.key), 'keys in the environment\'s order');
      const wanted = Object.fromEntries(definitions.map((flag) => {
        const { enabled, reason } = evaluateFlag(flag, context);
        return [flag.key, { enabled, reason }];
      }));
      assert.deepEqual(answer.body.flags, wanted, JSON.stringify(context));
    }));
  });
  test('answers a client reads late arrive whole, though many answers were written since', async () => {
    const user = await newUser(server);
    const project = await newProject(server, user);
    // 40 half rollouts with long keys: every user's answer differs (none is kept) and takes about
    // 6 KB of a shared slab.
    const definitions: FlagDefinition[] = [];
    for (let i = 0; i < 40; i++) {
      const key = `late_${i}_`.padEnd(100, 'x');
      await newFlag(server, user, project, { key, enabled: true, rollout_percentage: 50 });
      definitions.push({ key, enabled: true, rolloutPercentage: 50, rules: [] });
    }
    const wanted = (userId: string) => Object.fromEntries(definitions.map((flag) => {
      const { enabled, reason } = evaluateFlag(flag, { user_id: userId });
      return [flag.key, { enabled, reason }];
    }));

    // One connection sends 1,000 requests at once and reads nothing yet: more answers than the
    // kernel takes wait in the server's socket, while 1,500 other answers fill and reuse the slabs.
    const { hostname, port } = new URL(server.url);
    const late = connect(Number(port), hostname);
    const received: Buffer[] = [];
    await new Promise<void>((resolve, reject) => late.once('connect', resolve).once('error', reject));
    const pipelined = Array.from({ length: 1000 }, (_, n) => {
      const body = JSON.stringify({ environment: 'production', context: { user_id: `late-${n}` } });
      return `POST /sdk/v1/evaluate HTTP/1.1\r\nHost: ${hostname}\r\nX-SDK-Key: ${project.sdk_key}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
    });
    late.write(pipelined.join(''));
    await new Promise((resolve) => setTimeout(resolve, 200));
    for (let batch = 0; batch < 15; batch++) {
      await Promise.all(Array.from({ length: 100 }, async (_, n) => {
        const userId = `busy-${batch}-${n}`;
        const answer = await evaluate(server, project.sdk_key, 'production', { user_id: userId });
        assert.deepEqual(answer.body.flags, wanted(userId));
      }));
    }

    // Now read: each of the 1,000 answers is its own user's, byte for byte what it was.
    const bodies: string[] = [];
    const parse = () => {
      const all = Buffer.concat(received);
      bodies.length = 0;
      for (let at = 0; at < all.length;) {
        const headEnd = all.indexOf('\r\n\r\n', at);
        if (headEnd < 0) break;
        const head = all.subarray(at, headEnd).toString('latin1');
        assert.match(head, /^HTTP\/1\.1 200 /);
        const length = Number(/content-length: (\d+)/i.exec(head)![1]);
        if (headEnd + 4 + length > all.length) break;
        bodies.push(all.subarray(headEnd + 4, headEnd + 4 + length).toString('utf8'));
        at = headEnd + 4 + length;
      }
      return bodies.length === 1000;
    };
    late.on('data', (chunk: Buffer) => received.push(chunk));
    await eventually(parse, 'the 1,000 late answers');
    late.destroy();
    bodies.forEach((body, n) => assert.deepEqual(JSON.parse(body).flags, wanted(`late-${n}`), `answer ${n}`));
  });
});

/**
 * `X-Guidon-Answer: kind` (docs/api.md): each flag's answer also carries its kind, as OpenFeature
 * names it, and an unmet prerequisite's key; what the SDK's remote client asks for, so that the
 * OpenFeature providers need neither read the reason's text nor ask OFREP.
 */
describe('each flag\'s kind: X-Guidon-Answer: kind', () => {
  let server: TestServer;
  let cors: TestServer;
  before(async () => {
    server = await startServer();
    cors = await startServer({ CORS_ORIGINS: 'https://app.example.com' });
  });
  after(async () => {
    await server?.close();
    await cors?.close();
  });

  const KINDS = { 'x-guidon-answer': 'kind' };
  const variants = (a: number, b: number) => ({ variants: [{ key: 'a', value: 'A', weight: a }, { key: 'b', value: 'B', weight: b }], off_variant: 'a' });

  test('every kind, and the unmet prerequisite, as OFREP answers them for the same context; without the header the answer is unchanged', async () => {
    const user = await newUser(server);
    const project = await newProject(server, user);
    await newFlag(server, user, project, { key: 'off', enabled: false });
    await newFlag(server, user, project, { key: 'on', enabled: true });
    await newFlag(server, user, project, { key: 'half', enabled: true, rollout_percentage: 50 });
    const vip = await newFlag(server, user, project, { key: 'vip', enabled: true, everyone_else: 'off' });
    await request(server, 'POST', `${flagsPath(project)}/${vip.id}/rules`, { token: user.token, body: { rule_type: 'user_id', rule_value: 'vip-1' } });
    await newFlag(server, user, project, { key: 'gated', enabled: true, prerequisites: [{ flag_key: 'off' }] });
    await newFlag(server, user, project, { key: 'weighted', enabled: true, ...variants(500, 500) });
    await newFlag(server, user, project, { key: 'single', enabled: true, ...variants(0, 1000) });
    const expected = (id: string) => ({
      off: 'DISABLED',
      on: 'STATIC',
      half: 'SPLIT',
      vip: id === 'vip-1' ? 'TARGETING_MATCH' : 'DEFAULT',
      gated: 'PREREQUISITE_FAILED',
      // The weights chose between two variants: "Flag enabled globally", but SPLIT; one variant with all the weight: STATIC.
      weighted: 'SPLIT',
      single: 'STATIC',
    });
    for (const id of ['vip-1', 'user-1', 'user-2', 'user-3']) {
      const body = { environment: 'production', context: { user_id: id } };
      const plain = await evaluate(server, project.sdk_key, 'production', { user_id: id });
      const kinds = await request(server, 'POST', '/sdk/v1/evaluate', { sdkKey: project.sdk_key, headers: KINDS, body });
      assert.equal(kinds.status, 200, kinds.text);
      const ofrep = await request(server, 'POST', '/ofrep/v1/evaluate/flags', { sdkKey: project.sdk_key, headers: { 'x-environment': 'production' }, body: { context: { targetingKey: id } } });
      assert.equal(ofrep.status, 200, ofrep.text);
      assert.deepEqual(Object.keys(kinds.body.flags), Object.keys(plain.body.flags));
      for (const [key, answer] of Object.entries<any>(kinds.body.flags)) {
        const { kind, prerequisite, ...rest } = answer;
        assert.deepEqual(rest, plain.body.flags[key], `${key}, ${id}: the plain answer's members`);
        assert.equal(kind, (expected(id) as Record<string, string>)[key], `${key}, ${id}`);
        const viaOfrep = ofrep.body.flags.find((flag: any) => flag.key === key);
        assert.deepEqual([kind, prerequisite], [viaOfrep.reason, viaOfrep.metadata.prerequisite], `${key}, ${id}: as OFREP`);
      }
      assert.equal(kinds.body.flags.gated.prerequisite, 'off');
      // Without the header: enabled and reason (variant and value with variants), nothing more.
      for (const answer of Object.values<any>(plain.body.flags)) assert.deepEqual(Object.keys(answer).filter((member) => !['enabled', 'reason', 'variant', 'value'].includes(member)), []);
      assert.notEqual(kinds.headers.get('etag'), plain.headers.get('etag'));
    }
  });

  test('its ETag is its own; through Fastify\'s route (If-None-Match, CORS) the same answer', async () => {
    const user = await newUser(server);
    const project = await newProject(server, user);
    await newFlag(server, user, project, { key: 'weighted', enabled: true, ...variants(300, 700) });
    const body = { environment: 'production', context: { user_id: 'u' } };
    const ask = (target: TestServer, headers: Record<string, string>) => request(target, 'POST', '/sdk/v1/evaluate', { sdkKey: project.sdk_key, headers, body });
    const kinds = await ask(server, KINDS); // the direct path (evaluate.direct.ts)
    const plain = await ask(server, {});
    assert.equal(kinds.body.flags.weighted.kind, 'SPLIT');
    assert.equal((await ask(server, { ...KINDS, 'if-none-match': kinds.headers.get('etag')! })).status, 304);
    // Another representation's ETag is not this one's: the whole answer.
    const crossed = await ask(server, { ...KINDS, 'if-none-match': plain.headers.get('etag')! });
    assert.deepEqual([crossed.status, crossed.body], [200, kinds.body]);
    const back = await ask(server, { 'if-none-match': kinds.headers.get('etag')! });
    assert.deepEqual([back.status, back.body], [200, plain.body]);
    // Another value of the header: the plain answer.
    assert.deepEqual((await ask(server, { 'x-guidon-answer': 'kinds' })).body, plain.body);
  });

  test('a browser may send it: the CORS preflight of CORS_ORIGINS allows it', async () => {
    const preflight = await request(cors, 'OPTIONS', '/sdk/v1/evaluate', {
      headers: { origin: 'https://app.example.com', 'access-control-request-method': 'POST', 'access-control-request-headers': 'content-type,x-sdk-key,x-guidon-answer' },
    });
    assert.ok(preflight.status < 300, `preflight ${preflight.status}`);
    assert.match(preflight.headers.get('access-control-allow-headers') ?? '', /X-Guidon-Answer/i);
    const user = await newUser(cors);
    const project = await newProject(cors, user);
    await newFlag(cors, user, project, { key: 'on', enabled: true });
    const answer = await request(cors, 'POST', '/sdk/v1/evaluate', { sdkKey: project.sdk_key, headers: { ...KINDS, origin: 'https://app.example.com' }, body: { environment: 'production' } });
    assert.deepEqual(answer.body.flags, { on: { enabled: true, reason: 'Flag enabled globally', kind: 'STATIC' } });
  });
});
