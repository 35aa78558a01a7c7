/**
 * Scheduled changes (docs/change-management.md): a PUT of a flag saved now, checked as the PUT
 * would be, applied within 5 s of its time through the one write path as its creator, exactly once
 * whatever the number of instances; one that no longer validates fails and changes nothing; one
 * missed while no instance ran is applied at the next start when less than 24 h late, else failed.
 * The scheduler polls every 100 ms here (1 s by default).
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { evaluate, eventually, flagsPath, newFlag, newProject, newUser, request, startServer, type TestProject, type TestServer, type TestUser } from './harness.js';
import { createTestDatabase, type TestDatabase } from './test-database.js';
import { apiToken, auditEvents } from './team.js';

const scheduler = { pollIntervalMs: 100 };
const soon = (ms = 1200) => new Date(Date.now() + ms).toISOString();

describe('scheduled changes', () => {
  let server: TestServer;
  let user: TestUser;
  let project: TestProject;

  before(async () => {
    server = await startServer({ METRICS_TOKEN: 'scrape' }, { scheduler });
    user = await newUser(server, 'scheduler');
    project = await newProject(server, user, 'Scheduled');
  });
  after(() => server?.close());

  const schedules = (flagId: string) => `${flagsPath(project)}/${flagId}/schedules`;
  const schedule = (flagId: string, body: unknown, token = user.token) => request(server, 'POST', schedules(flagId), { token, body });
  const flagNow = async (flagId: string) => (await request(server, 'GET', `${flagsPath(project)}/${flagId}`, { token: user.token })).body;
  const settled = async (flagId: string, scheduleId: string) => {
    let found: any;
    await eventually(async () => {
      found = (await request(server, 'GET', schedules(flagId), { token: user.token })).body.find((item: any) => item.id === scheduleId);
      return found.status !== 'pending';
    }, `schedule ${scheduleId} settled`);
    return found;
  };

  test('saved, it is checked as a PUT of the flag would be: 400 and nothing saved', async () => {
    const flag = await newFlag(server, user, project, { key: 'checked', variants: [{ key: 'a', value: 'A', weight: 1000 }], off_variant: 'a' });
    await newFlag(server, user, project, { key: 'taken' });
    const refused: [unknown, RegExp][] = [
      [{ at: '2030-01-01T09:00:00', change: { enabled: true } }, /format "date-time"/], // no offset: no instant
      [{ at: new Date(Date.now() - 1000).toISOString(), change: { enabled: true } }, /not in the future/],
      [{ at: new Date(Date.now() + 400 * 24 * 3600 * 1000).toISOString(), change: { enabled: true } }, /more than a year ahead/],
      [{ at: soon(60_000), change: { rollout_percentage: '50' } }, /must be integer/], // no coercion, as the PUT
      [{ at: soon(60_000), change: { off_variant: 'b' } }, /off_variant "b" is not one of/], // the PUT's own check
      [{ at: soon(60_000), change: { key: 'taken' } }, /already exists/], // and its 409, as a 400 here
    ];
    for (const [body, message] of refused) {
      const answer = await schedule(flag.id, body);
      assert.equal(answer.status, 400, `${JSON.stringify(body)}: ${answer.text}`);
      assert.match(answer.body.message, message);
    }
    assert.deepEqual((await request(server, 'GET', schedules(flag.id), { token: user.token })).body, []);
    assert.equal((await flagNow(flag.id)).key, 'checked', 'the check changed nothing');
  });

  test('applied within 5 s of its time, as its creator, with the PUT audit event naming the schedule; evaluate serves it', async () => {
    const flag = await newFlag(server, user, project, { key: 'launch', enabled: false });
    const token = await apiToken(server, user, 'scheduling pipeline');
    const at = new Date(Date.now() + 1500);
    // Given in Paris time: the same instant.
    const paris = new Date(at.getTime() + 3600_000).toISOString().replace('Z', '+01:00');
    const created = await schedule(flag.id, { at: paris, change: { enabled: true, rollout_percentage: 100 }, note: 'launch' }, token);
    assert.equal(created.status, 201, created.text);
    assert.equal(created.body.at, at.toISOString());
    assert.deepEqual(created.body.created_by.email, user.email);
    assert.equal(created.body.status, 'pending');

    const done = await settled(flag.id, created.body.id);
    assert.equal(done.status, 'applied', done.error);
    const lag = Date.parse(done.applied_at) - Date.parse(done.at);
    assert.ok(lag >= 0 && lag <= 5000, `applied ${lag} ms after its time (the bound is 5 s)`);
    assert.equal((await flagNow(flag.id)).enabled, true);
    await eventually(async () => (await evaluate(server, project.sdk_key, 'production', { user_id: 'u' })).body.flags.launch?.enabled === true, 'evaluate serves it');

    const event = (await auditEvents(server, user.token, project.id)).find((item) => item.schedule_id === created.body.id);
    assert.equal(event.action, 'flag.updated');
    assert.deepEqual(event.actor, { user_id: user.id, email: user.email, token_id: created.body.created_by.token_id });
    assert.ok(event.actor.token_id, 'the token it was created with');
    assert.equal(event.before.enabled, false);
    assert.equal(event.after.rollout_percentage, 100);
  });

  test('a change of enabled alone is recorded as flag.toggled', async () => {
    const flag = await newFlag(server, user, project, { key: 'switched', enabled: false });
    const created = await schedule(flag.id, { at: soon(), change: { enabled: true } });
    assert.equal((await settled(flag.id, created.body.id)).status, 'applied');
    const event = (await auditEvents(server, user.token, project.id)).find((item) => item.schedule_id === created.body.id);
    assert.equal(event.action, 'flag.toggled');
  });

  test('a schedule made invalid meanwhile fails with the reason and changes nothing', async () => {
    const flag = await newFlag(server, user, project, { key: 'shrinking', variants: [{ key: 'a', value: 1, weight: 500 }, { key: 'b', value: 2, weight: 500 }], off_variant: 'a' });
    const created = await schedule(flag.id, { at: soon(1500), change: { off_variant: 'b', rollout_percentage: 40 } });
    assert.equal(created.status, 201, created.text);
    // Variant b goes before the schedule's time.
    const put = await request(server, 'PUT', `${flagsPath(project)}/${flag.id}`, { token: user.token, body: { variants: [{ key: 'a', value: 1, weight: 1000 }] } });
    assert.equal(put.status, 200, put.text);
    const before = await flagNow(flag.id);

    const failed = await settled(flag.id, created.body.id);
    assert.equal(failed.status, 'failed');
    assert.match(failed.error, /off_variant "b" is not one of/);
    assert.deepEqual(await flagNow(flag.id), before, 'nothing changed');
    const events = await auditEvents(server, user.token, project.id);
    assert.equal(events.filter((item) => item.schedule_id === created.body.id && item.resource_type === 'flag').length, 0);
    const failure = events.find((item) => item.action === 'schedule.failed' && item.resource_id === created.body.id);
    assert.equal(failure.after.error, failed.error);
  });

  test('lists by time, per flag and per project (status and environment filters); cancel a pending one (204, then 409)', async () => {
    const flag = await newFlag(server, user, project, { key: 'listed' });
    const later = await schedule(flag.id, { at: soon(7_200_000), change: { rollout_percentage: 50 } });
    const sooner = await schedule(flag.id, { at: soon(3_600_000), change: { rollout_percentage: 25 } });
    const staging = await newFlag(server, user, project, { key: 'listed' }, project.staging);
    assert.equal((await schedule(staging.id, { at: soon(3_600_000), change: { enabled: true } })).status, 404, 'a flag of another environment');
    const inStaging = await request(server, 'POST', `${flagsPath(project, project.staging)}/${staging.id}/schedules`, { token: user.token, body: { at: soon(1_800_000), change: { enabled: true } } });
    assert.equal(inStaging.status, 201, inStaging.text);

    assert.deepEqual((await request(server, 'GET', schedules(flag.id), { token: user.token })).body.map((item: any) => item.id), [sooner.body.id, later.body.id]);
    const pending = await request(server, 'GET', `/api/projects/${project.id}/schedules?status=pending&environment_id=${project.production}`, { token: user.token });
    assert.deepEqual(pending.body.filter((item: any) => item.flag_key === 'listed').map((item: any) => item.id), [sooner.body.id, later.body.id]);
    const inStagingList = await request(server, 'GET', `/api/projects/${project.id}/schedules?environment_id=${project.staging}`, { token: user.token });
    assert.deepEqual(inStagingList.body.map((item: any) => item.id), [inStaging.body.id]);
    assert.equal((await request(server, 'GET', `/api/projects/${project.id}/schedules?status=sometime`, { token: user.token })).status, 400);

    const cancel = () => request(server, 'DELETE', `${schedules(flag.id)}/${later.body.id}`, { token: user.token });
    assert.equal((await cancel()).status, 204);
    const again = await cancel();
    assert.equal(again.status, 409);
    assert.match(again.body.message, /cancelled/);
    const cancelled = (await auditEvents(server, user.token, project.id)).find((item) => item.action === 'schedule.cancelled' && item.resource_id === later.body.id);
    assert.equal(cancelled.before.status, 'pending');
    assert.equal(cancelled.after.status, 'cancelled');
  });

  test('deleting the flag cancels its pending schedules', async () => {
    const flag = await newFlag(server, user, project, { key: 'doomed' });
    const pending = await schedule(flag.id, { at: soon(3_600_000), change: { enabled: true } });
    assert.equal((await request(server, 'DELETE', `${flagsPath(project)}/${flag.id}`, { token: user.token })).status, 204);
    const listed = await request(server, 'GET', `/api/projects/${project.id}/schedules?status=cancelled`, { token: user.token });
    const cancelled = listed.body.find((item: any) => item.id === pending.body.id);
    assert.equal(cancelled.error, 'its flag was deleted');
    const events = await auditEvents(server, user.token, project.id);
    assert.ok(events.some((item) => item.action === 'schedule.cancelled' && item.resource_id === pending.body.id));
  });

  test('metrics: guidon_schedules_applied_total and the lag histogram count what applied', async () => {
    const text = (await request(server, 'GET', '/metrics', { token: 'scrape' })).text;
    assert.match(text, /guidon_schedules_applied_total\{kind="schedule"\} [1-9]/);
    assert.match(text, /guidon_schedules_failed_total\{kind="schedule"\} [1-9]/);
    assert.match(text, /guidon_schedule_lag_seconds_count\{kind="schedule"\} [1-9]/);
  });
});

describe('scheduled changes across instances and downtime', () => {
  let database: TestDatabase;
  let user: TestUser;
  let project: TestProject;
  let flagId: string;

  before(async () => {
    database = await createTestDatabase();
  });
  after(() => database?.drop());

  test('two instances on one database apply each of 50 schedules due at the same second exactly once', async () => {
    const [a, b] = [await startServer({}, { database, scheduler }), await startServer({}, { database, scheduler })];
    try {
      user = await newUser(a, 'instances');
      project = await newProject(a, user, 'Two instances');
      flagId = (await newFlag(a, user, project, { key: 'ramped' })).id;
      const ids: string[] = [];
      // Every value differs from every other: each application is one event, whatever their order.
      for (let i = 1; i <= 50; i++) ids.push((await request(a, 'POST', `${flagsPath(project)}/${flagId}/schedules`, { token: user.token, body: { at: soon(3_600_000), change: { rollout_percentage: i } } })).body.id);
      // All due at the same second, for both instances at once.
      const second = new Date(Math.ceil((Date.now() + 1000) / 1000) * 1000).toISOString();
      await a.database.db.updateTable('schedules').set({ at: second }).where('id', 'in', ids).execute();
      await eventually(async () => (await request(b, 'GET', `/api/projects/${project.id}/schedules?status=applied`, { token: user.token })).body.length === 50, 'all 50 applied', 30_000);
      const events = (await auditEvents(a, user.token, project.id)).filter((event) => event.schedule_id);
      assert.equal(events.length, 50, 'one event per schedule');
      assert.deepEqual(new Set(events.map((event) => event.schedule_id)), new Set(ids));
    } finally {
      await a.close();
      await b.close();
    }
  });

  test('after downtime: less than 24 h late is applied at the next start, more is failed "missed"', async () => {
    // An instance whose scheduler looks once, at its start, when nothing is due yet.
    const first = await startServer({}, { database, scheduler: { pollIntervalMs: 3_600_000 } });
    const create = (rollout_percentage: number) => request(first, 'POST', `${flagsPath(project)}/${flagId}/schedules`, { token: user.token, body: { at: soon(3_600_000), change: { rollout_percentage } } });
    const [late, missed] = [await create(77), await create(88)];
    // While no instance ran: one came due 23 h ago, the other 25 h ago.
    const dueAgo = (id: string, hours: number) => first.database.db.updateTable('schedules').set({ at: new Date(Date.now() - hours * 3600_000).toISOString() }).where('id', '=', id).execute();
    await dueAgo(late.body.id, 23);
    await dueAgo(missed.body.id, 25);
    await first.close();
    const next = await startServer({}, { database, scheduler });
    try {
      const settledAll = async () => (await request(next, 'GET', `/api/projects/${project.id}/schedules?status=pending`, { token: user.token })).body.length === 0;
      await eventually(settledAll, 'both settled at start');
      const byId = new Map((await request(next, 'GET', `/api/projects/${project.id}/schedules`, { token: user.token })).body.map((item: any) => [item.id, item]));
      assert.equal((byId.get(late.body.id) as any).status, 'applied');
      assert.equal((byId.get(missed.body.id) as any).status, 'failed');
      assert.equal((byId.get(missed.body.id) as any).error, 'missed');
      assert.equal((await request(next, 'GET', `${flagsPath(project)}/${flagId}`, { token: user.token })).body.rollout_percentage, 77);
    } finally {
      await next.close();
    }
  });
});
