/**
 * The spread a change message announces (docs/sdk.md, "Spread refetches"): the remote and the
 * local client fetch at a moment of their own within it, not at once, and at once for a message
 * without one. Between the clients and a running Guidon stands a small server of the test's own:
 * it passes every request through to Guidon, except the stream, whose messages the test writes
 * itself (a spread of its choosing). Then the same with Guidon's own messages at REFETCH_RATE=1.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createClient, type GuidonClient, type LocalClient } from '@guidon/sdk';
import { eventually, flagsPath, newFlag, newProject, newUser, request, startServer, type TestProject, type TestServer, type TestUser } from '@guidon/server/dist/tests/harness.js';

const clients: (GuidonClient | LocalClient)[] = [];
after(() => clients.forEach((each) => each.close()));

const settle = () => new Promise((resolve) => setTimeout(resolve, 300));

describe('a change message with a spread', () => {
  let guidon: TestServer;
  let user: TestUser;
  let project: TestProject;
  let token: string;
  let flagId: string;
  /** The clients' streams, each with the message type its client takes. */
  const streams: { response: ServerResponse; type: 'refetchEvaluation' | 'refetchRuleset' }[] = [];
  const fetched = { evaluate: 0, ruleset: 0 };
  let front: ReturnType<typeof createServer>;
  let frontUrl = '';

  before(async () => {
    guidon = await startServer();
    user = await newUser(guidon);
    project = await newProject(guidon, user);
    flagId = (await newFlag(guidon, user, project, { key: 'checkout', enabled: false })).id;
    const created = await request(guidon, 'POST', '/api/tokens', { token: user.token, body: { name: 'local', project_id: project.id, role: 'viewer' } });
    assert.equal(created.status, 201, created.text);
    token = created.body.token;
    front = createServer((incoming, response) => {
      const url = incoming.url ?? '/';
      if (url.startsWith('/sdk/v1/stream')) {
        response.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
        response.write('retry: 1000\n\n');
        streams.push({ response, type: incoming.headers.authorization?.startsWith('Bearer gdn_') ? 'refetchRuleset' : 'refetchEvaluation' });
        return;
      }
      if (url.startsWith('/sdk/v1/evaluate')) fetched.evaluate++;
      if (url.startsWith('/sdk/v1/ruleset')) fetched.ruleset++;
      const chunks: Buffer[] = [];
      incoming.on('data', (chunk: Buffer) => chunks.push(chunk));
      incoming.on('end', async () => {
        const headers = Object.fromEntries(Object.entries(incoming.headers).filter(([name]) => !['host', 'connection', 'content-length', 'accept-encoding'].includes(name))) as Record<string, string>;
        const answer = await fetch(guidon.url + url, { method: incoming.method, headers, body: chunks.length > 0 ? Buffer.concat(chunks) : undefined });
        const body = Buffer.from(await answer.arrayBuffer());
        const passed: Record<string, string> = { 'content-length': String(body.length) };
        answer.headers.forEach((value, name) => {
          if (!['content-length', 'content-encoding', 'transfer-encoding', 'connection', 'keep-alive'].includes(name)) passed[name] = value;
        });
        response.writeHead(answer.status, passed);
        response.end(body);
      });
    });
    await new Promise<void>((resolve) => front.listen(0, '127.0.0.1', resolve));
    frontUrl = `http://127.0.0.1:${(front.address() as AddressInfo).port}`;
  });
  after(async () => {
    for (const { response } of streams) response.destroy();
    front.close();
    await guidon.close();
  });

  /** Writes a change message to every stream: for a local client, a ruleset it does not hold (no patch), so it must fetch. */
  const announce = (spread?: number) => {
    for (const { response, type } of streams) {
      const data = type === 'refetchRuleset' ? { type, revision: 1_000_000, etag: 'W/"not-held"', spread } : { type, etag: '1000000', lastModified: Math.floor(Date.now() / 1000), spread };
      response.write(`id: 1000000\nevent: message\ndata: ${JSON.stringify(data)}\n\n`);
    }
  };

  test('the remote and the local client wait for their moment within it; a message without one is fetched at once, and the waiting fetch is not made again', async () => {
    const remote = createClient({ baseUrl: frontUrl, sdkKey: project.sdk_key, environment: 'production', storage: false, pollIntervalMs: 600_000 });
    const local = createClient({ mode: 'local', baseUrl: frontUrl, apiToken: token, environment: 'production', sendUsage: false, pollIntervalMs: 600_000 });
    clients.push(remote, local);
    assert.equal(await remote.ready(), true);
    assert.equal(await local.ready(), true);
    await eventually(() => streams.length === 2, 'both streams open');
    await settle();
    const start = { ...fetched };

    // 30 s (a larger spread is taken as 30 s): neither fetches while the test waits. Each client
    // draws its moment as it reads the message; drawn uniformly, one in a hundred fell within the
    // test's wait, so the draw here is the middle of the spread.
    const random = Math.random;
    Math.random = () => 0.5;
    try {
      announce(600_000);
      await settle();
    } finally {
      Math.random = random;
    }
    assert.deepEqual(fetched, start, 'no fetch at once for a message with a spread');

    // The change travels to Guidon's answers; a message without a spread is fetched at once, and
    // the fetch waiting for its moment is dropped (it would fetch the same again).
    await request(guidon, 'POST', `${flagsPath(project)}/${flagId}/toggle`, { token: user.token });
    announce();
    await eventually(() => remote.isEnabled('checkout') && local.evaluate().isEnabled('checkout'), 'both clients hold the toggle');
    await settle();
    assert.deepEqual(fetched, { evaluate: start.evaluate + 1, ruleset: start.ruleset + 1 }, 'one fetch each');

    // A short spread: the fetch comes within it.
    await request(guidon, 'POST', `${flagsPath(project)}/${flagId}/toggle`, { token: user.token });
    announce(200);
    await eventually(() => !remote.isEnabled('checkout') && !local.evaluate().isEnabled('checkout'), 'both clients hold the second toggle');
    assert.deepEqual(fetched, { evaluate: start.evaluate + 2, ruleset: start.ruleset + 2 });
  });
});

describe("Guidon's own spread (REFETCH_RATE=1: each stream a second)", () => {
  test('a toggle reaches a remote and a local client within the spread the server announced', async (t) => {
    const guidon = await startServer({ REFETCH_RATE: '1' });
    t.after(() => guidon.close());
    const user = await newUser(guidon);
    const project = await newProject(guidon, user);
    const flag = await newFlag(guidon, user, project, { key: 'checkout', enabled: false });
    const created = await request(guidon, 'POST', '/api/tokens', { token: user.token, body: { name: 'local', project_id: project.id, role: 'viewer' } });
    const remote = createClient({ baseUrl: guidon.url, sdkKey: project.sdk_key, environment: 'production', storage: false, pollIntervalMs: 600_000 });
    const local = createClient({ mode: 'local', baseUrl: guidon.url, apiToken: created.body.token, environment: 'production', sendUsage: false, pollIntervalMs: 600_000 });
    clients.push(remote, local);
    assert.equal(await remote.ready(), true);
    assert.equal(await local.ready(), true);
    await settle();
    // Two streams at one a second: a spread of 2 s. The local client holds the patch at once; the remote one fetches within the 2 s.
    await request(guidon, 'POST', `${flagsPath(project)}/${flag.id}/toggle`, { token: user.token });
    await eventually(() => remote.isEnabled('checkout') && local.evaluate().isEnabled('checkout'), 'both clients hold the toggle');
  });
});
