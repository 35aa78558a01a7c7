/**
 * The change in the stream message (docs/local-evaluation.md, "Freshness: the stream"): a local-mode SDK's
 * `refetchRuleset` carries a patch from the ruleset the instance sent before. Over HTTP: applied
 * to the document whose ETag is its `from`, each patch gives exactly what GET /sdk/v1/ruleset
 * answers for the message's revision (deep-equal, and byte for byte: its JSON hashes to the
 * message's ETag), through adds, deletes, a re-key, variants, rules, segment changes and
 * prerequisites (format 1 → 2 → 1); a client that ignores the patch fetches as before; a change
 * over 16 KiB sends no patch but the whole ruleset (under 64 KiB). On PostgreSQL, two instances: a client following one instance gets
 * the right document while the changes go through the other.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { hash } from 'node:crypto';
import { applyRulesetPatch, type RulesetDocument } from '@guidon/engine';
import { eventually, flagsPath, newFlag, newProject, newUser, request, startServer, startTwoInstances, type TestProject, type TestServer, type TestUser } from './harness.js';
import { openStream, type TestStream } from './stream-client.js';
import { onPostgres } from './test-database.js';

async function apiToken(server: TestServer, user: TestUser, projectId: string): Promise<string> {
  const created = await request(server, 'POST', '/api/tokens', { token: user.token, body: { name: 'local', project_id: projectId, role: 'viewer' } });
  assert.equal(created.status, 201, created.text);
  return created.body.token as string;
}

const bearer = (secret: string) => ({ authorization: `Bearer ${secret}` });

async function fetchRuleset(server: { url: string }, token: string, etag?: string): Promise<{ status: number; document: RulesetDocument; etag: string }> {
  const answer = await request(server, 'GET', '/sdk/v1/ruleset?environment=production', { headers: { ...bearer(token), ...(etag ? { 'if-none-match': etag } : {}) } });
  assert.ok(answer.status === 200 || answer.status === 304, answer.text);
  return { status: answer.status, document: answer.body as RulesetDocument, etag: answer.headers.get('etag')! };
}

/**
 * The stream's headers for a client holding `held`: its revision as Last-Event-ID, as a client
 * that fetched before it opened the stream says (else a stream opened within 10 s of a change
 * begins with a message of its own, docs/sdk.md).
 */
const since = (token: string, held: { document: RulesetDocument }) => ({ ...bearer(token), 'last-event-id': String(held.document.revision) });

/** The ETag the server gives a document's bytes (ruleset.document.ts): equal only when the patched document is the server's byte for byte. */
const etagOf = (document: RulesetDocument) => `W/"${hash('sha1', JSON.stringify(document), 'base64url')}"`;

interface Message {
  type: string;
  revision: number;
  etag: string;
  patch?: { from: string; format: number; flags: { key: string }[]; removed: string[]; order?: string[]; segments: Record<string, unknown> };
  ruleset?: RulesetDocument;
}

/** A local-mode client on the wire: holds a document and its ETag, applies each message's patch, checks it against a fresh fetch. */
class Follower {
  private seen = 0;
  constructor(
    private readonly stream: TestStream,
    public held: { document: RulesetDocument; etag: string },
  ) {}

  async next(what: string): Promise<Message> {
    await eventually(() => this.stream.messages.length > this.seen, what);
    return JSON.parse(this.stream.messages[this.seen++]!.data) as Message;
  }

  /** The next message must carry a patch from the held document that gives `fresh`'s document. */
  async follows(what: string, fresh: () => Promise<{ document: RulesetDocument; etag: string }>): Promise<Message> {
    const message = await this.next(what);
    assert.equal(message.type, 'refetchRuleset');
    assert.ok(message.patch, `${what}: the message carries a patch`);
    assert.equal(message.patch.from, this.held.etag, `${what}: the patch starts from the document held`);
    const patched = applyRulesetPatch(this.held.document, message.patch, message.revision);
    assert.ok(patched, `${what}: the patch applies`);
    const now = await fresh();
    assert.equal(now.etag, message.etag, `${what}: the message names the ETag GET /sdk/v1/ruleset answers`);
    assert.deepEqual(patched, now.document, `${what}: the patched document is the fetched one`);
    assert.equal(etagOf(patched), message.etag, `${what}: byte for byte (canonical: same flag order, segment keys sorted)`);
    this.held = { document: patched, etag: message.etag };
    return message;
  }
}

describe('the patch in refetchRuleset', () => {
  let server: TestServer;
  let owner: TestUser;
  let project: TestProject;
  let token: string;

  before(async () => {
    server = await startServer();
    owner = await newUser(server);
    project = await newProject(server, owner);
    token = await apiToken(server, owner, project.id);
  });
  after(() => server.close());

  const api = async (method: string, path: string, body?: unknown, status = method === 'POST' ? 201 : 200) => {
    const answer = await request(server, method, path, { token: owner.token, body });
    assert.equal(answer.status, status, answer.text);
    return answer.body;
  };

  test('each patch gives the fetched document: adds, rules, variants, segments, prerequisites (format 1 ↔ 2), a re-key, a delete; an old client fetches the same', async () => {
    await newFlag(server, owner, project, { key: 'first', enabled: true });
    const start = await fetchRuleset(server, token);
    const stream = await openStream(`${server.url}/sdk/v1/stream?environment=production`, since(token, start));
    const client = new Follower(stream, start);
    const fresh = () => fetchRuleset(server, token);
    try {
      assert.equal(stream.status, 200);
      const a = await newFlag(server, owner, project, { key: 'a', enabled: true, rollout_percentage: 40 });
      let message = await client.follows('a flag added', fresh);
      assert.deepEqual(message.patch!.flags.map((flag) => flag.key), ['a']);
      assert.equal(message.patch!.order, undefined, 'an add at the end needs no order');

      // An old-style client ignores the patch: its conditional fetch with the ETag it held gets the same document.
      const before = client.held;
      const b = await api('POST', flagsPath(project), {
        key: 'b',
        name: 'b',
        enabled: true,
        variants: [
          { key: 'control', value: { text: 'Buy' }, weight: 600 },
          { key: 'bold', value: { text: 'Buy now', color: 'red' }, weight: 400 },
        ],
        off_variant: 'control',
      });
      await client.follows('a flag with variants added', fresh);
      const old = await fetchRuleset(server, token, before.etag);
      assert.equal(old.status, 200);
      assert.deepEqual(old.document, client.held.document);
      assert.equal((await fetchRuleset(server, token, client.held.etag)).status, 304, 'the patched ETag is current');

      await api('POST', `${flagsPath(project)}/${a.id}/rules`, { rule_type: 'user_id', rule_value: 'u-1', priority: 2 });
      message = await client.follows('a rule added', fresh);
      assert.deepEqual(message.patch!.flags.map((flag) => flag.key), ['a'], 'only the changed flag travels');

      const segment = await api('POST', `/api/projects/${project.id}/segments`, { key: 'beta', name: 'Beta', conditions: [{ attribute: 'plan', operator: 'IN', values: ['beta'] }] });
      message = await client.follows('an unused segment added (the revision moves, no flag changes)', fresh);
      assert.deepEqual(message.patch!.flags, []);
      await api('POST', `${flagsPath(project)}/${b.id}/rules`, { rule_type: 'conditions', conditions: [{ operator: 'IN_SEGMENT', values: ['beta'] }], variant: 'bold' });
      message = await client.follows('a rule naming the segment', fresh);
      assert.deepEqual(Object.keys(message.patch!.segments), ['beta']);
      await api('PUT', `/api/projects/${project.id}/segments/${segment.id}`, { conditions: [{ attribute: 'plan', operator: 'IN', values: ['beta', 'early'] }] });
      message = await client.follows('the segment changed', fresh);
      assert.deepEqual(message.patch!.flags, [], 'a segment change sends the segment, not the flags');

      await api('PUT', `${flagsPath(project)}/${b.id}`, { prerequisites: [{ flag_key: 'a' }] });
      message = await client.follows('a prerequisite (format 2)', fresh);
      assert.equal(message.patch!.format, 2);
      assert.equal(client.held.document.format, 2);
      await api('PUT', `${flagsPath(project)}/${b.id}`, { prerequisites: [] });
      message = await client.follows('no prerequisite any more (format 1)', fresh);
      assert.equal(client.held.document.format, 1);

      await api('PUT', `${flagsPath(project)}/${a.id}`, { key: 'a-renamed' });
      message = await client.follows('a re-key', fresh);
      assert.deepEqual(message.patch!.removed, ['a']);
      assert.deepEqual(message.patch!.order, ['first', 'a-renamed', 'b'], 'the new key keeps the old place: the order travels');

      await api('DELETE', `${flagsPath(project)}/${b.id}`, undefined, 204);
      message = await client.follows('a flag deleted, with the segment only it named', fresh);
      assert.deepEqual(message.patch!.removed, ['b']);
      assert.deepEqual(message.patch!.segments, { beta: null });
      assert.deepEqual(client.held.document.segments, {});

      await api('POST', `${flagsPath(project)}/${a.id}/toggle`, undefined, 200);
      await client.follows('a toggle', fresh);
      assert.equal(client.held.document.flags.find((flag) => flag.key === 'a-renamed')!.enabled, false);
    } finally {
      stream.close();
    }
  });

  test('the patch starts only from the ETag of the document before: a client holding another one finds no match and fetches', async () => {
    const start = await fetchRuleset(server, token);
    const stream = await openStream(`${server.url}/sdk/v1/stream?environment=production`, since(token, start));
    const client = new Follower(stream, start);
    try {
      const flag = await newFlag(server, owner, project, { key: 'c', enabled: true });
      await client.follows('c added', () => fetchRuleset(server, token));
      // A client that missed that message still holds `start`: the next patch is not for it.
      await api('POST', `${flagsPath(project)}/${flag.id}/toggle`, undefined, 200);
      const message = await client.follows('c toggled', () => fetchRuleset(server, token));
      assert.notEqual(message.patch!.from, start.etag);
      const refetched = await fetchRuleset(server, token, start.etag);
      assert.equal(refetched.status, 200);
      assert.deepEqual(refetched.document, client.held.document);
    } finally {
      stream.close();
    }
  });

  test('a large change sends no patch (over 16 KiB) but the ruleset itself (under 64 KiB), which is the fetched one; the next small change patches from it; over 64 KiB, neither', async () => {
    const start = await fetchRuleset(server, token);
    const stream = await openStream(`${server.url}/sdk/v1/stream?environment=production`, since(token, start));
    const client = new Follower(stream, start);
    try {
      const big = (letter: string) => letter.repeat(7000);
      const flag = await api('POST', flagsPath(project), {
        key: 'large',
        name: 'large',
        enabled: true,
        variants: ['p', 'q', 'r'].map((key, i) => ({ key, value: big(key), weight: i === 0 ? 400 : 300 })),
        off_variant: 'p',
      });
      const message = await client.next('the large flag added');
      assert.equal(message.type, 'refetchRuleset');
      assert.equal(message.patch, undefined, 'three 7,000-character values: no patch');
      const fetched = await fetchRuleset(server, token, client.held.etag);
      assert.equal(fetched.status, 200);
      assert.equal(fetched.etag, message.etag);
      // Under 64 KiB the message carries the whole ruleset instead, byte for byte the fetched one.
      assert.ok(message.ruleset, 'the ruleset travels whole');
      assert.deepEqual(message.ruleset, fetched.document);
      assert.equal(etagOf(message.ruleset), message.etag);
      client.held = fetched;
      await newFlag(server, owner, project, { key: 'small', enabled: true });
      await client.follows('a small flag added after it', () => fetchRuleset(server, token));
      await api('DELETE', `${flagsPath(project)}/${flag.id}`, undefined, 204);
      await client.follows('the large flag deleted: a removal is small', () => fetchRuleset(server, token));
      // Ten 7,000-character values: a ruleset over 64 KiB travels neither as a patch nor whole; the client fetches it.
      await api('POST', flagsPath(project), {
        key: 'larger',
        name: 'larger',
        enabled: true,
        variants: Array.from({ length: 10 }, (_, i) => ({ key: `v${i}`, value: big(String(i)), weight: 100 })),
        off_variant: 'v0',
      });
      const over = await client.next('the larger flag added');
      assert.equal(over.patch, undefined);
      assert.equal(over.ruleset, undefined, 'over 64 KiB: fetched, compressed');
    } finally {
      stream.close();
    }
  });
});

describe('two instances on PostgreSQL: the patch of the instance a client follows', { skip: onPostgres ? false : 'runs in the PostgreSQL pass of npm test' }, () => {
  let a: TestServer;
  let b: TestServer;
  let close: (() => Promise<void>) | undefined;
  before(async () => ({ a, b, close } = await startTwoInstances()));
  after(() => close?.());

  test('changes made through the other instance reach the stream as patches that give its document', async () => {
    const owner = await newUser(b);
    const project = await newProject(b, owner);
    const token = await apiToken(b, owner, project.id);
    const flag = await newFlag(b, owner, project, { key: 'x', enabled: true });
    // The client fetched from B (a load balancer) and follows A: the ETags hash the bytes, so they match.
    const start = await fetchRuleset(b, token);
    assert.equal((await fetchRuleset(a, token)).etag, start.etag);
    const stream = await openStream(`${a.url}/sdk/v1/stream?environment=production`, since(token, start));
    const client = new Follower(stream, start);
    try {
      await request(b, 'POST', `${flagsPath(project)}/${flag.id}/toggle`, { token: owner.token });
      await client.follows('a toggle through B', () => fetchRuleset(b, token));
      await newFlag(b, owner, project, { key: 'y', enabled: true, rollout_percentage: 10 });
      await client.follows('a flag added through B', () => fetchRuleset(b, token));
      await request(b, 'DELETE', `${flagsPath(project)}/${flag.id}`, { token: owner.token });
      await client.follows('a flag deleted through B', () => fetchRuleset(a, token));
    } finally {
      stream.close();
    }
  });
});
