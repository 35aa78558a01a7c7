/**
 * The ruleset's direct path (modules/local-evaluation/ruleset.direct.ts) answers
 * `GET /sdk/v1/ruleset?environment=<key>` with a project-scoped API token read within the last
 * second, without Fastify's pipeline. The same request with `&project=<its own project>` goes
 * through Fastify. Whatever the path, the answer must be the same: status, body and headers.
 * Which path answered is told by Fastify's diagnostics channel (a request whose handler Fastify
 * ran); since the token is kept only a second, a test asks again until the direct path answers,
 * rather than counting on the time between two requests.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { hooksTheRulesetPathWouldSkip } from '../src/modules/local-evaluation/ruleset.direct.js';
import { fastifyHandled, newFlag, newProject, newUser, request, startServer, type Answer, type TestProject, type TestServer, type TestUser } from './harness.js';

async function apiToken(server: TestServer, user: TestUser, body: Record<string, unknown>): Promise<{ id: string; token: string }> {
  const created = await request(server, 'POST', '/api/tokens', { token: user.token, body: { name: 'local', ...body } });
  assert.equal(created.status, 201, created.text);
  return created.body as { id: string; token: string };
}

const headerNames = (answer: Answer) => [...answer.headers.keys()].filter((name) => name !== 'date').sort();

/** Status, body, header names, and each header's value but the request id's (and those named). */
function assertSame(a: Answer, b: Answer, except: string[] = []): void {
  assert.equal(a.status, b.status);
  assert.equal(a.text, b.text);
  assert.deepEqual(headerNames(a), headerNames(b));
  for (const name of headerNames(a)) if (name !== 'x-request-id' && !except.includes(name)) assert.equal(a.headers.get(name), b.headers.get(name), name);
}

function rulesetClient(server: TestServer, handled: { ids: Set<string> }) {
  let sent = 0;
  const fetchRuleset = async (query: string, headers: Record<string, string>) => {
    const id = `ruleset-direct-${process.pid}-${++sent}`;
    const answer = await request(server, 'GET', `/sdk/v1/ruleset?${query}`, { headers: { ...headers, 'x-request-id': id } });
    return { ...answer, id, byFastify: handled.ids.has(id) };
  };
  return {
    fetchRuleset,
    /** The same request until the direct path answers it (the token is read again each second, by the route). */
    async direct(query: string, headers: Record<string, string>) {
      for (let tries = 0; tries < 10; tries++) {
        const answer = await fetchRuleset(query, headers);
        if (!answer.byFastify) return answer;
      }
      assert.fail(`the direct path never answered ${query}`);
    },
  };
}

describe('ruleset: the direct path answers as Fastify does', () => {
  let server: TestServer;
  let owner: TestUser;
  let project: TestProject;
  let token: string;
  const handled = fastifyHandled();
  let client: ReturnType<typeof rulesetClient>;

  before(async () => {
    server = await startServer({ METRICS_TOKEN: 'metrics-secret' });
    owner = await newUser(server);
    project = await newProject(server, owner);
    for (let i = 0; i < 12; i++) await newFlag(server, owner, project, { key: `flag-${i}`, enabled: i % 2 === 0, rollout_percentage: 30 });
    ({ token } = await apiToken(server, owner, { project_id: project.id, role: 'viewer' }));
    client = rulesetClient(server, handled);
  });
  after(async () => {
    handled.stop();
    await server.close();
  });

  test('is on: every hook that applies to the route is one it does itself', () => {
    assert.deepEqual(hooksTheRulesetPathWouldSkip(server.app), []);
  });

  test('the same 200 in every encoding, and the same 304', async () => {
    const auth = { authorization: `Bearer ${token}` };
    for (const encoding of ['br', 'gzip', 'gzip, deflate', 'identity', 'compress']) {
      const headers = { ...auth, 'accept-encoding': encoding };
      const viaFastify = await client.fetchRuleset(`environment=production&project=${project.id}`, headers);
      assert.ok(viaFastify.byFastify);
      const direct = await client.direct('environment=production', headers);
      assert.equal(direct.status, 200);
      assertSame(direct, viaFastify);
      assert.equal(direct.headers.get('x-request-id'), direct.id);
      assert.equal(direct.headers.get('content-encoding'), encoding.startsWith('gzip') ? 'gzip' : encoding === 'br' ? 'br' : null, encoding);
      assert.equal(direct.body.environment, 'production');
      assert.equal(direct.body.flags.length, 12);

      const etag = direct.headers.get('etag')!;
      for (const held of [etag, `"other", ${etag}`, '*']) {
        const notModified = await client.direct('environment=production', { ...headers, 'if-none-match': held });
        assert.equal(notModified.status, 304, held);
        assertSame(notModified, await client.fetchRuleset(`environment=production&project=${project.id}`, { ...headers, 'if-none-match': held }));
      }
      const stale = await client.direct('environment=production', { ...headers, 'if-none-match': 'W/"stale"' });
      assert.equal(stale.status, 200);
    }
  });

  test('what it does not take gets the route\'s answer', async () => {
    const auth = { authorization: `Bearer ${token}` };
    await client.direct('environment=production', auth); // the token is kept: what follows is handed over for what it is
    const everyProject = await apiToken(server, owner, {});
    const cases: [string, Record<string, string>, number][] = [
      ['environment=nowhere', auth, 404],
      ['environment=prod%75ction', auth, 200], // decoded by the route
      ['environment=production&environment=staging', auth, 400],
      ['environment=', auth, 400],
      ['environment=production', { ...auth, 'x-sdk-key': project.sdk_key }, 200], // the token counts; the key is ignored
      ['environment=production', { authorization: `Bearer ${project.sdk_key}` }, 403],
      ['environment=production', { authorization: 'Bearer gdn_unknown' }, 401],
      ['environment=production', { authorization: `Bearer ${everyProject.token}` }, 400], // must name its project
      [`environment=production&project=${project.id}`, { authorization: `Bearer ${everyProject.token}` }, 200],
    ];
    for (const [query, headers, status] of cases) {
      const answer = await client.fetchRuleset(query, headers);
      assert.equal(answer.status, status, `${query} ${JSON.stringify(headers)}: ${answer.text}`);
      // The direct path answers only 200 and 304: an error is the route's (its hooks answer before its handler runs).
      if (status === 200) assert.ok(answer.byFastify, `${query}: answered by the route`);
    }
  });

  test('a token deleted here is refused at once, though it was kept', async () => {
    const doomed = await apiToken(server, owner, { project_id: project.id });
    const auth = { authorization: `Bearer ${doomed.token}` };
    assert.equal((await client.direct('environment=production', auth)).status, 200);
    assert.equal((await request(server, 'DELETE', `/api/tokens/${doomed.id}`, { token: owner.token })).status, 204);
    const refused = await client.fetchRuleset('environment=production', auth);
    assert.equal(refused.status, 401); // the route's: the direct path answers only 200 and 304
  });

  test('a change is served at once, by either path', async () => {
    const auth = { authorization: `Bearer ${token}` };
    const before = await client.direct('environment=production', auth);
    await newFlag(server, owner, project, { key: 'added-later', enabled: true });
    const after = await client.direct('environment=production', auth);
    assert.notEqual(after.headers.get('etag'), before.headers.get('etag'));
    assert.ok(after.body.flags.some((flag: { key: string }) => flag.key === 'added-later'));
  });

  test('its answers are counted in the metrics like the route\'s', async () => {
    const scrape = async () => (await request(server, 'GET', '/metrics', { headers: { authorization: 'Bearer metrics-secret' } })).text;
    const value = (text: string, status: number) => Number(new RegExp(`^guidon_http_request_duration_seconds_count\\{method="GET",route="/sdk/v1/ruleset",status="${status}"\\} (\\d+)$`, 'm').exec(text)?.[1] ?? 0);
    const auth = { authorization: `Bearer ${token}` };
    const was = await scrape();
    let direct = 0;
    let sent = 0;
    while (direct < 3) {
      sent++;
      if (!(await client.fetchRuleset('environment=production', auth)).byFastify) direct++;
    }
    await client.fetchRuleset(`environment=production&project=${project.id}`, auth);
    const etag = (await client.direct('environment=production', auth)).headers.get('etag')!;
    await client.direct('environment=production', { ...auth, 'if-none-match': etag });
    const now = await scrape();
    assert.equal(value(now, 200) - value(was, 200), sent + 2);
    assert.ok(value(now, 304) - value(was, 304) >= 1);
  });
});

describe('ruleset: the direct path with the rate limit on', () => {
  const LIMIT = 4;
  let server: TestServer;
  let token: string;
  let project: TestProject;
  const handled = fastifyHandled();
  let client: ReturnType<typeof rulesetClient>;

  before(async () => {
    server = await startServer({ RATE_LIMIT_EVALUATE: String(LIMIT) });
    const owner = await newUser(server);
    project = await newProject(server, owner);
    await newFlag(server, owner, project, { key: 'on', enabled: true });
    ({ token } = await apiToken(server, owner, { project_id: project.id }));
    client = rulesetClient(server, handled);
  });
  after(async () => {
    handled.stop();
    await server.close();
  });

  test('one hit per request whichever path answers; over the limit, the route\'s 429', async () => {
    const from = (ip: string) => ({ authorization: `Bearer ${token}`, 'x-forwarded-for': ip });
    // Reads the token for this second from an address of its own, then LIMIT requests from another.
    await client.fetchRuleset('environment=production', from('198.51.100.1'));
    const answers: (Answer & { byFastify: boolean })[] = [];
    for (let i = 0; i < LIMIT + 2; i++) answers.push(await client.fetchRuleset(i === 1 ? `environment=production&project=${project.id}` : 'environment=production', from('203.0.113.1')));
    assert.deepEqual(answers.map((answer) => answer.status), [200, 200, 200, 200, 429, 429]);
    const refused = answers[LIMIT]!;
    assert.deepEqual(refused.body, { statusCode: 429, error: 'Too Many Requests', message: 'Too many requests, try again later' });
    assert.ok(Number(refused.headers.get('retry-after')) >= 1);
    assert.equal(refused.headers.get('x-content-type-options'), 'nosniff');
    // Another address still has its budget, and the direct path answers it.
    assert.equal((await client.direct('environment=production', from('203.0.113.2'))).status, 200);
  });
});
