/** The server's stream hub on its own. */
import { describe, test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { ChangeFeed } from '../src/modules/changes/change-feed.js';
import { EvaluateCache } from '../src/modules/evaluate/evaluate.cache.js';
import { sdkKeyHash } from '../src/modules/evaluate/sdk-key.js';
import { HistoryRecorder } from '../src/modules/history/history.recorder.js';
import { StreamHub, type OpenStream, type StreamHubOptions } from '../src/modules/streams/streams.hub.js';
import { eventually, newProject, newUser, request, startServer } from './harness.js';

/** A server with a user and a project, and a hub of the test's own beside the server's, on its database. */
async function hubOnItsOwn(t: TestContext, options: Partial<StreamHubOptions>) {
  const server = await startServer();
  t.after(() => server.close());
  const user = await newUser(server);
  const project = await newProject(server, user);
  const cache = new EvaluateCache(server.database.db, new ChangeFeed(null, server.app.log), server.app.log);
  const hub = new StreamHub(server.database.db, cache, server.app.log, options);
  t.after(() => hub.close());
  return { server, user, project, cache, hub };
}

describe('StreamHub', () => {
  test('heartbeats, a message per invalidation, and streams of a rotated-out key closed', async (t) => {
    const { project, cache, hub } = await hubOnItsOwn(t, { heartbeatMs: 20, coalesceMs: 10 });
    const compiled = await cache.project(project.sdk_key);
    assert.ok(compiled);
    const fake = (keyHash: string, environment = 'production') => {
      const stream = { written: [] as string[], closed: false, projectId: project.id, environment, keyHash, write: (chunk: string) => void stream.written.push(chunk), close: () => {
          stream.closed = true;
          hub.remove(stream);
        } };
      hub.add(stream satisfies OpenStream, compiled);
      return stream;
    };
    const current = fake(sdkKeyHash(project.sdk_key));
    const rotatedOut = fake(sdkKeyHash('sdk_an_old_key'));
    const deletedEnvironment = fake(sdkKeyHash(project.sdk_key), 'gone');
    await eventually(() => current.written.includes(':\n\n'), 'a heartbeat');

    cache.invalidateProject(project.id);
    cache.invalidateProject(project.id); // within the window: one message
    await eventually(() => current.written.some((chunk) => chunk.includes('refetchEvaluation')), 'the message');
    await new Promise((resolve) => setTimeout(resolve, 50));
    assert.equal(current.written.filter((chunk) => chunk.includes('refetchEvaluation')).length, 1);
    assert.match(current.written.find((chunk) => chunk.includes('refetchEvaluation'))!, /^id: \d+\nevent: message\ndata: \{"type":"refetchEvaluation","etag":"\d+","lastModified":\d+\}\n\n$/);
    assert.equal(current.closed, false);
    assert.equal(rotatedOut.closed, true);
    assert.equal(deletedEnvironment.closed, true);
    assert.equal(hub.size, 1);
  });

  test("a stream whose answer cannot be evaluated gets the plain message, and the change still reaches the streams after it with their answers", async (t) => {
    const server = await startServer();
    t.after(() => server.close());
    const history = new HistoryRecorder(server.config.database, server.app.log, { flushIntervalMs: 3_600_000 });
    t.after(() => history.close());
    const { project, cache, hub } = await hubOnItsOwn(t, { heartbeatMs: 60_000, coalesceMs: 10, history });
    const compiled = await cache.project(project.sdk_key);
    assert.ok(compiled);
    const follow = (context: object) => {
      const stream = { written: [] as string[], projectId: project.id, environment: 'production', keyHash: sdkKeyHash(project.sdk_key), answering: { context, withKinds: false }, write: (chunk: string | Buffer) => void stream.written.push(String(chunk)), close: () => undefined };
      hub.add(stream as OpenStream, compiled);
      return stream;
    };
    // A context whose user_id throws when read: evaluating it fails (a fault, never a client's input, which the route validates).
    const broken = follow(Object.defineProperty({}, 'user_id', { enumerable: true, get: () => { throw new Error('unreadable'); } }));
    const fine = follow({ user_id: 'u-1', user_email: null });
    cache.invalidateProject(project.id);
    await eventually(() => fine.written.some((chunk) => chunk.includes('refetchEvaluation')), 'the message after the broken stream');
    const plain = JSON.parse(/^data: (.*)$/m.exec(broken.written.find((chunk) => chunk.includes('refetchEvaluation'))!)![1]!);
    const answered = JSON.parse(/^data: (.*)$/m.exec(fine.written.find((chunk) => chunk.includes('refetchEvaluation'))!)![1]!);
    assert.equal(plain.answer, undefined, 'the plain message: its client fetches');
    assert.deepEqual(Object.keys(answered.answer), ['flags']);
    assert.equal(typeof answered.answerEtag, 'string');
  });

  test('a quiet project\'s change is sent at once; one that follows within the window waits for its end', async (t) => {
    const server = await startServer();
    t.after(() => server.close());
    const user = await newUser(server);
    const project = await newProject(server, user);
    const cache = new EvaluateCache(server.database.db, new ChangeFeed(null, server.app.log), server.app.log);
    // A window longer than the test: a message that waited for it would never come.
    const hub = new StreamHub(server.database.db, cache, server.app.log, { heartbeatMs: 60_000, coalesceMs: 60_000 });
    t.after(() => hub.close());
    const compiled = await cache.project(project.sdk_key);
    assert.ok(compiled);
    const written: string[] = [];
    hub.add({ projectId: project.id, environment: 'production', keyHash: sdkKeyHash(project.sdk_key), write: (chunk) => void written.push(String(chunk)), close: () => undefined }, compiled);
    const messages = () => written.filter((chunk) => chunk.includes('refetchEvaluation')).length;

    cache.invalidateProject(project.id);
    await eventually(() => messages() === 1, 'the first change, without waiting for the window');
    cache.invalidateProject(project.id);
    await new Promise((resolve) => setTimeout(resolve, 300));
    assert.equal(messages(), 1, 'the next change waits for the window: a burst of writes makes at most two messages');
  });

  test('a stream opened while a key rotation commits is checked at once and closed (docs/sdk.md)', async (t) => {
    const { server, user, project, cache, hub } = await hubOnItsOwn(t, { heartbeatMs: 60_000, coalesceMs: 10 });
    // The stream was authorized against the project compiled under the old key…
    const openedFrom = await cache.project(project.sdk_key);
    assert.ok(openedFrom);
    // …then the rotation committed, and its change reached the cache before the stream joined the hub.
    const rotated = await request(server, 'POST', `/api/projects/${project.id}/regenerate-key`, { token: user.token });
    assert.equal(rotated.status, 200);
    cache.invalidateProject(project.id);
    const stream = { closed: false, projectId: project.id, environment: 'production', keyHash: sdkKeyHash(project.sdk_key), write: () => undefined, close: () => {
        stream.closed = true;
        hub.remove(stream);
      } };
    hub.add(stream satisfies OpenStream, openedFrom);
    await eventually(() => stream.closed, 'the stream under the retired key closed');
    assert.equal(hub.size, 0);
  });
});
