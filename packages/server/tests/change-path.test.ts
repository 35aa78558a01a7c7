/**
 * A change must commit with its revision ("invalidation is not atomic with the write", ADR 0004): the revision bump (and on
 * PostgreSQL the NOTIFY) commit with the write itself, so a committed write is always seen by
 * every instance: here with notifications off, through the revision check alone.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import pg from 'pg';
import { evaluate, eventually, flagsPath, newFlag, newProject, newUser, request, startServer, storedRevision, type TestProject, type TestServer, type TestUser } from './harness.js';
import { createTestDatabase, onPostgres, type TestDatabase } from './test-database.js';

describe('the change path', () => {
  let database: TestDatabase;
  let a: TestServer;
  let b: TestServer;
  let user: TestUser;
  let project: TestProject;

  before(async () => {
    database = await createTestDatabase();
    // No notifications at all: what B serves can only come from the revision check.
    a = await startServer({}, { database, changeNotifications: false, revisionCheckIntervalMs: 100 });
    b = await startServer({}, { database, changeNotifications: false, revisionCheckIntervalMs: 100 });
    user = await newUser(a);
    project = await newProject(a, user);
  });
  after(async () => {
    await a?.close();
    await b?.close();
    await database?.drop();
  });

  const revision = () => storedRevision(a, project.id);
  const servedOnB = async (key: string) => (await evaluate(b, project.sdk_key, 'production', { user_id: 'u1' })).body.flags?.[key];

  test('every committed write on one instance is served by the other, notifications off', async () => {
    const flag = await newFlag(a, user, project, { key: 'seen', enabled: false });
    await eventually(async () => (await servedOnB('seen'))?.enabled === false, 'B compiles the new flag');

    await request(a, 'POST', `${flagsPath(project)}/${flag.id}/toggle`, { token: user.token });
    await eventually(async () => (await servedOnB('seen'))?.enabled === true, 'B serves the toggle');

    const rule = await request(a, 'POST', `${flagsPath(project)}/${flag.id}/rules`, { token: user.token, body: { rule_type: 'user_id', rule_value: 'u1' } });
    assert.equal(rule.status, 201);
    await eventually(async () => String((await servedOnB('seen'))?.reason).includes('user_id'), 'B serves the rule');

    await request(a, 'DELETE', `${flagsPath(project)}/${flag.id}`, { token: user.token });
    await eventually(async () => (await servedOnB('seen')) === undefined, 'B drops the deleted flag');
  });

  test('the revision moves with the commit: once per successful write, never for a failed one', async () => {
    const start = await revision();
    await newFlag(a, user, project, { key: 'counted' });
    assert.equal(await revision(), start + 1, 'bumped before the answer left');
    const duplicate = await request(a, 'POST', flagsPath(project), { token: user.token, body: { name: 'x', key: 'counted' } });
    assert.equal(duplicate.status, 409);
    const refused = await request(a, 'POST', flagsPath(project), { token: (await newUser(a)).token, body: { name: 'x', key: 'other' } });
    assert.equal(refused.status, 404);
    assert.equal(await revision(), start + 1, 'a failed or refused write leaves the revision alone');
  });

  test('PostgreSQL: the NOTIFY is sent with the commit, and not at all for a failed write', { skip: onPostgres ? false : 'PostgreSQL only' }, async () => {
    const notifying = await startServer({}, { database, revisionCheckIntervalMs: 3_600_000 });
    const listener = new pg.Client({ connectionString: database.url });
    const received: string[] = [];
    try {
      await listener.connect();
      listener.on('notification', (message) => received.push(message.payload ?? ''));
      await listener.query('listen guidon_changes');
      const failed = await request(notifying, 'POST', flagsPath(project), { token: user.token, body: { name: 'x', key: 'counted' } });
      assert.equal(failed.status, 409);
      await newFlag(notifying, user, project, { key: 'notified' });
      await eventually(() => received.length >= 1, 'the notification');
      await new Promise((resolve) => setTimeout(resolve, 200)); // a notification of the failed write would be here by now
      assert.equal(received.length, 1);
      assert.ok(received[0]!.endsWith(` ${project.id}`));
    } finally {
      await listener.end();
      await notifying.close();
    }
  });
});
