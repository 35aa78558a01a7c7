/**
 * docs/api.md, Webhooks: with real receivers on 127.0.0.1 (so WEBHOOK_ALLOW_PRIVATE=true, except
 * where the refusal itself is tested). Signed, at least once from the outbox, retried on the
 * schedule (shortened here through the harness' build option), delivered after a crash, and
 * delivered once with two instances on PostgreSQL.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createHmac, randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { addMember, eventually, flagsPath, freePort, newFlag, newProject, newUser, request, startServer, type TestServer, type TestUser } from './harness.js';
import { createTestDatabase, onPostgres, type TestDatabase } from './test-database.js';
import { Receiver } from './webhook-receiver.js';

const FAST = { pollIntervalMs: 50, timeoutMs: 2000, retryDelaysMs: [50, 50, 50, 50] };

async function createWebhook(server: TestServer, user: TestUser, projectId: string, body: Record<string, unknown>) {
  const created = await request(server, 'POST', `/api/projects/${projectId}/webhooks`, { token: user.token, body });
  assert.equal(created.status, 201, created.text);
  return created.body as { id: string; secret: string; events: string[] };
}

const deliveries = async (server: TestServer, user: TestUser, projectId: string, webhookId: string) =>
  (await request(server, 'GET', `/api/projects/${projectId}/webhooks/${webhookId}/deliveries`, { token: user.token })).body.items as any[];

describe('webhooks', () => {
  let server: TestServer;
  let receiver: Receiver;
  let user: TestUser;

  before(async () => {
    receiver = await new Receiver().start();
    server = await startServer({ WEBHOOK_ALLOW_PRIVATE: 'true' }, { webhooks: FAST });
    user = await newUser(server, 'hooks');
  });
  after(async () => {
    await server?.close();
    await receiver?.close();
  });

  test('a change is POSTed as its audit event, signed; events and enabled filter what is sent', async () => {
    const project = await newProject(server, user);
    const all = await createWebhook(server, user, project.id, { url: receiver.url });
    assert.deepEqual(all.events, ['*']);
    assert.match(all.secret, /^whsec_/);
    const onlyCreated = await createWebhook(server, user, project.id, { url: `${receiver.url}?only=created`, events: ['flag.created'] });
    await createWebhook(server, user, project.id, { url: `${receiver.url}?disabled`, enabled: false });
    const listed = await request(server, 'GET', `/api/projects/${project.id}/webhooks`, { token: user.token });
    assert.equal(listed.body.length, 3);
    assert.ok(listed.body.every((hook: any) => !('secret' in hook)), 'the secret is never shown again');

    const flag = await newFlag(server, user, project, { key: 'signed' });
    await request(server, 'POST', `${flagsPath(project)}/${flag.id}/toggle`, { token: user.token });
    await eventually(() => receiver.of('flag.toggled').length === 1 && receiver.of('flag.created').length === 2, 'the deliveries');

    const toggled = receiver.of('flag.toggled')[0]!;
    const { headers, body } = toggled;
    assert.equal(headers['content-type'], 'application/json');
    assert.match(String(headers['x-guidon-delivery']), /^[0-9a-f-]{36}$/);
    const timestamp = String(headers['x-guidon-timestamp']);
    assert.ok(Math.abs(Number(timestamp) - Date.now() / 1000) < 60);
    const expected = `sha256=${createHmac('sha256', all.secret).update(`${timestamp}.${body}`).digest('hex')}`;
    assert.equal(headers['x-guidon-signature'], expected, 'the receiver verifies the signature with the secret');
    assert.notEqual(headers['x-guidon-signature'], `sha256=${createHmac('sha256', onlyCreated.secret).update(`${timestamp}.${body}`).digest('hex')}`);

    const audit = await request(server, 'GET', `/api/projects/${project.id}/audit?resource_id=${flag.id}`, { token: user.token });
    assert.deepEqual(JSON.parse(body), audit.body.items[0], 'the body is the audit event');
    assert.ok(!receiver.requests.some((received) => received.url.includes('disabled')), 'a disabled webhook receives nothing');
    assert.ok(!receiver.requests.some((received) => received.url.includes('only=created') && received.headers['x-guidon-event'] !== 'flag.created'));

    await eventually(async () => (await deliveries(server, user, project.id, all.id)).some((item) => item.action === 'flag.toggled'), 'the delivery log');
    const log = await deliveries(server, user, project.id, all.id);
    const record = log.find((item) => item.action === 'flag.toggled');
    assert.equal(record.event_id, audit.body.items[0].id);
    assert.equal(record.attempt, 1);
    assert.equal(record.status_code, 200);
    assert.equal(record.error, null);
    assert.ok(Number.isInteger(record.duration_ms));
    const onlyCreatedLog = await deliveries(server, user, project.id, onlyCreated.id);
    assert.deepEqual(onlyCreatedLog.map((item) => item.action), ['flag.created']);

    // Resend: the same event again, under a new delivery id.
    const resent = await request(server, 'POST', `/api/projects/${project.id}/webhooks/${all.id}/deliveries/${record.id}/resend`, { token: user.token });
    assert.equal(resent.status, 202, resent.text);
    await eventually(() => receiver.of('flag.toggled').length === 2, 'the resent event');
    const again = receiver.of('flag.toggled')[1]!;
    assert.equal(again.body, body);
    assert.notEqual(again.headers['x-guidon-delivery'], headers['x-guidon-delivery']);
    const unknown = await request(server, 'POST', `/api/projects/${project.id}/webhooks/${onlyCreated.id}/deliveries/${record.id}/resend`, { token: user.token });
    assert.equal(unknown.status, 404, 'an attempt of another webhook');
  });

  test('a receiver failing twice gets the third try; one that always fails is given up after the schedule', async () => {
    const project = await newProject(server, user);
    const flaky = await createWebhook(server, user, project.id, { url: `${receiver.url}?flaky`, events: ['flag.created'] });
    const broken = await createWebhook(server, user, project.id, { url: `${receiver.url}?broken`, events: ['flag.created'] });
    let flakySeen = 0;
    receiver.answer = (received) => (received.url.includes('flaky') ? (++flakySeen <= 2 ? 500 : 200) : received.url.includes('broken') ? 503 : 200);
    try {
      await newFlag(server, user, project, { key: 'retried' });
      await eventually(async () => (await deliveries(server, user, project.id, flaky.id)).length === 3, 'three tries');
      const log = await deliveries(server, user, project.id, flaky.id);
      assert.deepEqual(log.map((item) => [item.attempt, item.status_code]), [[3, 200], [2, 500], [1, 500]]);
      assert.equal(new Set(log.map((item) => item.event_id)).size, 1);
      const flakyIds = new Set(receiver.requests.filter((received) => received.url.includes('flaky')).map((received) => received.headers['x-guidon-delivery']));
      assert.equal(flakyIds.size, 1, 'one delivery id, the same on every retry');

      await eventually(async () => (await deliveries(server, user, project.id, broken.id)).length === 5, 'five tries, then failed');
      await new Promise((resolve) => setTimeout(resolve, 300)); // the schedule is 50 ms: a sixth try would be here
      const brokenLog = await deliveries(server, user, project.id, broken.id);
      assert.deepEqual(brokenLog.map((item) => item.status_code), [503, 503, 503, 503, 503]);
      const row = await server.database.db.selectFrom('webhook_deliveries').select(['status', 'attempts']).where('webhook_id', '=', broken.id).executeTakeFirstOrThrow();
      assert.deepEqual(row, { status: 'failed', attempts: 5 });
    } finally {
      receiver.answer = () => 200;
    }
  });

  test('a receiver that never answers, and an address that refuses the connection, are failed attempts that say why', async () => {
    const project = await newProject(server, user);
    const silent = await createWebhook(server, user, project.id, { url: `${receiver.url}?silent`, events: ['flag.created'] });
    const closed = await createWebhook(server, user, project.id, { url: `http://127.0.0.1:${await freePort()}/hook`, events: ['flag.created'] });
    receiver.answer = (received) => (received.url.includes('silent') ? 'hang' : 200);
    try {
      await newFlag(server, user, project, { key: 'unanswered' });
      await eventually(async () => (await deliveries(server, user, project.id, silent.id)).length > 0, 'the timed-out attempt');
      const [timedOut] = await deliveries(server, user, project.id, silent.id);
      assert.equal(timedOut.status_code, null);
      assert.equal(timedOut.error, 'no answer within 2 s');
      assert.ok(timedOut.duration_ms >= 1900, `${timedOut.duration_ms} ms`);
      await eventually(async () => (await deliveries(server, user, project.id, closed.id)).length > 0, 'the refused attempt');
      const [refused] = await deliveries(server, user, project.id, closed.id);
      assert.deepEqual([refused.status_code, refused.error], [null, 'ECONNREFUSED']);
    } finally {
      receiver.answer = () => 200;
    }
  });

  test('test sends a webhook.test event whatever the events; a disabled webhook receives nothing', async () => {
    const project = await newProject(server, user);
    const hook = await createWebhook(server, user, project.id, { url: `${receiver.url}?test`, events: ['rule.deleted'] });
    const tested = await request(server, 'POST', `/api/projects/${project.id}/webhooks/${hook.id}/test`, { token: user.token });
    assert.equal(tested.status, 202);
    await eventually(() => receiver.of('webhook.test').some((received) => JSON.parse(received.body).resource_id === hook.id), 'the test event');
    const event = JSON.parse(receiver.of('webhook.test').find((received) => JSON.parse(received.body).resource_id === hook.id)!.body);
    assert.equal(event.project_id, project.id);
    assert.equal(event.actor.user_id, user.id);

    assert.equal((await request(server, 'PUT', `/api/projects/${project.id}/webhooks/${hook.id}`, { token: user.token, body: { enabled: false, events: ['*'] } })).status, 200);
    // Only this webhook's URL counts: the previous test's hanging receiver is still being retried.
    const sentToHook = () => receiver.requests.filter((received) => received.url.endsWith('?test')).length;
    const before = sentToHook();
    assert.equal((await request(server, 'POST', `/api/projects/${project.id}/webhooks/${hook.id}/test`, { token: user.token })).status, 409);
    await newFlag(server, user, project, { key: 'unseen' });
    await new Promise((resolve) => setTimeout(resolve, 300));
    assert.equal(sentToHook(), before, 'a disabled webhook receives nothing');
  });

  test('a webhook URL is reduced to its origin in the audit log and in what webhooks receive; owners still see it whole', async () => {
    const project = await newProject(server, user);
    const viewer = await newUser(server, 'hooks-viewer');
    await addMember(server, user, project.id, viewer, 'viewer');
    const watcher = await createWebhook(server, user, project.id, { url: `${receiver.url}?watcher` });
    const origin = new URL(receiver.url).origin;
    // As a Slack URL carries its token: in the path, and here in the query too.
    const secretUrl = `${receiver.url}/services/T0/B0/s3cr3tPath?token=s3cr3tQuery`;
    const hook = await createWebhook(server, user, project.id, { url: secretUrl, events: ['flag.deleted'] });
    const shown = await request(server, 'GET', `/api/projects/${project.id}/webhooks/${hook.id}`, { token: user.token });
    assert.equal(shown.body.url, secretUrl, 'the owner-only webhook API shows the whole URL');
    // A change of the secret part only is still an event.
    const rotatedUrl = `${receiver.url}/services/T0/B0/rotated-s3cr3t`;
    assert.equal((await request(server, 'PUT', `/api/projects/${project.id}/webhooks/${hook.id}`, { token: user.token, body: { url: rotatedUrl } })).status, 200);
    assert.equal((await request(server, 'DELETE', `/api/projects/${project.id}/webhooks/${hook.id}`, { token: user.token })).status, 204);

    const audit = await request(server, 'GET', `/api/projects/${project.id}/audit?resource_id=${hook.id}`, { token: viewer.token });
    assert.equal(audit.status, 200, audit.text);
    assert.deepEqual(audit.body.items.map((event: any) => event.action), ['webhook.deleted', 'webhook.updated', 'webhook.created']);
    assert.doesNotMatch(audit.text, /s3cr3t/, 'a viewer reads no part of the URL past its origin');
    for (const event of audit.body.items) {
      assert.equal(event.resource_key, origin);
      for (const side of [event.before, event.after]) if (side) assert.equal(side.url, origin);
    }
    // An event written before webhook URLs were reduced is reduced when read.
    const { secret: _secret, ...whole } = hook as Record<string, unknown>;
    const oldEventId = randomUUID();
    await server.database.db
      .insertInto('audit_events')
      .values({ id: oldEventId, project_id: project.id, environment_id: null, action: 'webhook.created', resource_type: 'webhook', resource_id: hook.id, resource_key: null, actor_user_id: user.id, actor_email: user.email, actor_token_id: null, before: null, after: JSON.stringify(whole), created_at: new Date().toISOString() })
      .execute();
    const everything = await request(server, 'GET', `/api/projects/${project.id}/audit?limit=500`, { token: viewer.token });
    // Found by id: the delete above may share its millisecond, and ties have no order.
    assert.equal(everything.body.items.find((event: any) => event.id === oldEventId).after.url, origin);
    assert.doesNotMatch(everything.text, /s3cr3t/);

    const aboutWebhooks = () => receiver.requests.filter((received) => received.url.endsWith('?watcher') && [watcher.id, hook.id].includes(JSON.parse(received.body).resource_id));
    await eventually(() => aboutWebhooks().length === 4, 'webhook.created of the watcher, and the three events of the other webhook');
    for (const received of aboutWebhooks()) {
      assert.doesNotMatch(received.body, /s3cr3t/, 'the URL is reduced in what webhooks receive');
      assert.equal(JSON.parse(received.body).resource_key, origin);
    }
  });

  test('bad webhook bodies are refused with 400 and create nothing', async () => {
    const project = await newProject(server, user);
    for (const body of [{}, { url: 'ftp://example.com/' }, { url: 'not a url' }, { url: 'http://user:pw@example.com/' }, { url: receiver.url, events: [] }, { url: receiver.url, events: ['Flag Toggled'] }, { url: receiver.url, enabled: 'yes' }]) {
      const answer = await request(server, 'POST', `/api/projects/${project.id}/webhooks`, { token: user.token, body });
      assert.equal(answer.status, 400, JSON.stringify(body));
    }
    assert.deepEqual((await request(server, 'GET', `/api/projects/${project.id}/webhooks`, { token: user.token })).body, []);
  });
});

describe('webhooks to private addresses, WEBHOOK_ALLOW_PRIVATE unset', () => {
  let server: TestServer;
  let receiver: Receiver;
  let user: TestUser;

  before(async () => {
    receiver = await new Receiver().start();
    server = await startServer({}, { webhooks: FAST });
    user = await newUser(server, 'private');
  });
  after(async () => {
    await server?.close();
    await receiver?.close();
  });

  test('refused at create, and again at every send', async () => {
    const project = await newProject(server, user);
    for (const url of [receiver.url, 'http://localhost/hook', 'http://[::1]/hook', 'http://10.1.2.3/hook', 'http://192.168.1.1/', 'http://169.254.169.254/latest', 'http://[::ffff:127.0.0.1]/', 'http://0.0.0.0/']) {
      const answer = await request(server, 'POST', `/api/projects/${project.id}/webhooks`, { token: user.token, body: { url } });
      assert.equal(answer.status, 400, `${url}: ${answer.text}`);
      assert.match(answer.body.message, /private/);
    }
    // A public address is accepted (created disabled: this test sends nothing off the machine).
    const publicHook = await request(server, 'POST', `/api/projects/${project.id}/webhooks`, { token: user.token, body: { url: 'https://93.184.215.14/hook', enabled: false } });
    assert.equal(publicHook.status, 201, publicHook.text);
    assert.equal((await request(server, 'PUT', `/api/projects/${project.id}/webhooks/${publicHook.body.id}`, { token: user.token, body: { url: receiver.url } })).status, 400);

    // As if the name had resolved elsewhere at create: the row points at loopback.
    await server.database.db.updateTable('webhooks').set({ url: receiver.url, enabled: true }).where('id', '=', publicHook.body.id).execute();
    await newFlag(server, user, project, { key: 'not-sent' });
    await eventually(async () => (await deliveries(server, user, project.id, publicHook.body.id)).length > 0, 'the refused attempt');
    const [attempt] = await deliveries(server, user, project.id, publicHook.body.id);
    assert.equal(attempt.status_code, null);
    assert.match(attempt.error, /private/);
    assert.equal(receiver.requests.length, 0);
  });
});

describe('webhook deliveries survive a crash', () => {
  let database: TestDatabase;
  let receiver: Receiver;
  let restarted: TestServer | undefined;

  before(async () => {
    database = await createTestDatabase();
    receiver = await new Receiver().start();
  });
  after(async () => {
    await restarted?.close();
    await receiver?.close();
    await database?.drop();
  });

  test('a server killed while sending: the restarted one sends the delivery', async () => {
    const script = fileURLToPath(new URL('./server-process.js', import.meta.url));
    const options = { webhooks: { ...FAST, timeoutMs: 1000 } };
    const child = spawn(process.execPath, [script, JSON.stringify({ env: { DATABASE_URL: database.url, WEBHOOK_ALLOW_PRIVATE: 'true' }, options })], { stdio: ['ignore', 'pipe', 'inherit'] });
    const exited = new Promise((resolve) => child.once('exit', resolve));
    try {
      const url = await new Promise<string>((resolve, reject) => {
        child.stdout.setEncoding('utf8');
        child.stdout.on('data', (text: string) => {
          const match = /listening (\S+)/.exec(text);
          if (match?.[1]) resolve(match[1]);
        });
        child.once('exit', (code) => reject(new Error(`server process exited (${code})`)));
      });
      const first = { url };
      const user = await newUser(first, 'crash', { verified: false }); // its own project: no mailbox needed
      const project = await newProject(first, user);
      const hook = await createWebhook(first as TestServer, user, project.id, { url: receiver.url, events: ['flag.created'] });
      receiver.answer = () => 'hang'; // the first send never finishes
      await newFlag(first, user, project, { key: 'survives' });
      await eventually(() => receiver.requests.length === 1, 'the first send');
      child.kill('SIGKILL');
      await exited;
      receiver.answer = () => 200;

      restarted = await startServer({ WEBHOOK_ALLOW_PRIVATE: 'true' }, { database, webhooks: options.webhooks });
      await eventually(() => receiver.requests.length === 2, 'the delivery sent again after the restart');
      const [cut, resent] = receiver.requests;
      assert.equal(resent!.headers['x-guidon-delivery'], cut!.headers['x-guidon-delivery'], 'the same delivery id');
      assert.equal(resent!.body, cut!.body);
      await eventually(async () => (await deliveries(restarted!, user, project.id, hook.id)).some((item) => item.status_code === 200), 'the logged success');
      const row = await restarted.database.db.selectFrom('webhook_deliveries').select('status').where('webhook_id', '=', hook.id).executeTakeFirstOrThrow();
      assert.equal(row.status, 'succeeded');
    } finally {
      child.kill('SIGKILL');
    }
  });
});

describe('two instances on PostgreSQL', { skip: onPostgres ? false : 'PostgreSQL only: SQLite runs one writer' }, () => {
  let database: TestDatabase;
  let receiver: Receiver;
  let a: TestServer;
  let b: TestServer;

  before(async () => {
    database = await createTestDatabase();
    receiver = await new Receiver().start();
    a = await startServer({ WEBHOOK_ALLOW_PRIVATE: 'true' }, { database, webhooks: { ...FAST, pollIntervalMs: 20 } });
    b = await startServer({ WEBHOOK_ALLOW_PRIVATE: 'true' }, { database, webhooks: { ...FAST, pollIntervalMs: 20 } });
  });
  after(async () => {
    await a?.close();
    await b?.close();
    await receiver?.close();
    await database?.drop();
  });

  test('each event is delivered once, to each webhook', async () => {
    const user = await newUser(a, 'twice');
    const project = await newProject(a, user);
    const hooks = ['first', 'second', 'third'];
    for (const name of hooks) await createWebhook(a, user, project.id, { url: `${receiver.url}?${name}`, events: ['flag.toggled'] });
    const flag = await newFlag(a, user, project, { key: 'once' });
    const toggles = 30;
    await Promise.all(
      Array.from({ length: toggles }, (_, i) => request(i % 2 ? a : b, 'POST', `${flagsPath(project)}/${flag.id}/toggle`, { token: user.token })),
    );
    await eventually(() => receiver.of('flag.toggled').length >= toggles * hooks.length, 'every toggle delivered to every webhook');
    await new Promise((resolve) => setTimeout(resolve, 500)); // both instances poll every 20 ms: a duplicate would be here
    const ids = receiver.of('flag.toggled').map((received) => received.headers['x-guidon-delivery']);
    assert.equal(ids.length, toggles * hooks.length);
    assert.equal(new Set(ids).size, toggles * hooks.length);
    for (const name of hooks) {
      const events = receiver.of('flag.toggled').filter((received) => received.url.endsWith(`?${name}`)).map((received) => JSON.parse(received.body).id);
      assert.equal(new Set(events).size, toggles, `${name}: every event once`);
      assert.equal(events.length, toggles);
    }
  });
});
