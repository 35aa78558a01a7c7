import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { getPriority } from 'node:os';
import pino from 'pino';
import { openDatabase } from '../src/db/database.js';
import { HistoryRecorder } from '../src/modules/history/history.recorder.js';
import { HistoryStore } from '../src/modules/history/history.store.js';
import { packUsers } from '../src/modules/history/history.protocol.js';
import { createTestDatabase, type TestDatabase } from './test-database.js';
import { evaluate, eventually, flagsPath, newFlag, newProject, newUser, request, startServer, type TestProject, type TestServer, type TestUser, type HistoryItem } from './harness.js';

describe('evaluation history API', () => {
  let server: TestServer;
  let user: TestUser;
  let project: TestProject;
  const flagIds: Record<string, string> = {};
  const projectHistory = (query = '') => request<{ items: HistoryItem[]; next_cursor: string | null }>(server, 'GET', `/api/projects/${project.id}/evaluations${query}`, { token: user.token });

  before(async () => {
    server = await startServer({ METRICS_TOKEN: 'history-test-token' });
    user = await newUser(server);
    project = await newProject(server, user);
    for (const key of ['alpha', 'beta', 'gamma']) flagIds[key] = (await newFlag(server, user, project, { key, enabled: key !== 'gamma' })).id;
    flagIds.staged = (await newFlag(server, user, project, { key: 'staged', enabled: true }, project.staging)).id;
    // 4 production requests (3 flags each) and 1 staging request: 13 items.
    for (const userId of ['u1', 'u2', 'u1', 'u3']) assert.equal((await evaluate(server, project.sdk_key, 'production', { user_id: userId })).status, 200);
    assert.equal((await evaluate(server, project.sdk_key, 'staging', { user_id: 'u9' })).status, 200);
    await eventually(async () => (await projectHistory('?limit=500')).body.items.length === 13, 'all 13 items');
  });
  after(() => server.close());

  test('pages newest first with a cursor; the pages add up to everything, once', async () => {
    const everything = (await projectHistory('?limit=500')).body.items;
    const seen: HistoryItem[] = [];
    let cursor: string | null = null;
    const sizes: number[] = [];
    do {
      const page: { items: HistoryItem[]; next_cursor: string | null } = (await projectHistory(`?limit=5${cursor ? `&cursor=${cursor}` : ''}`)).body;
      sizes.push(page.items.length);
      seen.push(...page.items);
      cursor = page.next_cursor;
    } while (cursor);
    assert.deepEqual(sizes, [5, 5, 3]);
    assert.deepEqual(seen, everything);
    assert.equal(new Set(seen.map((item) => item.id)).size, 13);
    const times = seen.map((item) => item.evaluated_at);
    assert.deepEqual(times, [...times].sort().reverse(), 'newest first');
    assert.equal(seen[0]!.user_id, 'u9', 'the staging request came last');
    assert.deepEqual(
      seen.filter((item) => item.user_id === 'u3').map((item) => [item.flag_key, item.flag_id, item.enabled, item.reason, item.environment_id]),
      [
        ['alpha', flagIds.alpha, true, 'Flag enabled globally', project.production],
        ['beta', flagIds.beta, true, 'Flag enabled globally', project.production],
        ['gamma', flagIds.gamma, false, 'Flag is globally disabled', project.production],
      ],
    );
  });

  test('the default page holds 50 items', async () => {
    const page = await projectHistory();
    assert.equal(page.status, 200);
    assert.equal(page.body.items.length, 13);
    assert.equal(page.body.next_cursor, null);
  });

  test('filters by flag_key and user_id, alone and together, with paging', async () => {
    const beta = (await projectHistory('?flag_key=beta')).body.items;
    assert.equal(beta.length, 4);
    assert.ok(beta.every((item) => item.flag_key === 'beta' && item.flag_id === flagIds.beta));
    const u1 = (await projectHistory('?user_id=u1')).body.items;
    assert.equal(u1.length, 6);
    assert.ok(u1.every((item) => item.user_id === 'u1'));
    const both = (await projectHistory('?user_id=u1&flag_key=gamma')).body.items;
    assert.deepEqual(both.map((item) => [item.flag_key, item.user_id, item.enabled]), [['gamma', 'u1', false], ['gamma', 'u1', false]]);
    const first = (await projectHistory('?flag_key=beta&limit=3')).body;
    assert.equal(first.items.length, 3);
    const second = (await projectHistory(`?flag_key=beta&limit=3&cursor=${first.next_cursor}`)).body;
    assert.deepEqual([...first.items, ...second.items], beta);
    assert.equal(second.next_cursor, null);
    assert.deepEqual((await projectHistory('?flag_key=nope')).body, { items: [], next_cursor: null });
    assert.deepEqual((await projectHistory('?user_id=nobody')).body, { items: [], next_cursor: null });
    // '_' is a LIKE wildcard: a key that only matches as a pattern must not match.
    assert.deepEqual((await projectHistory('?flag_key=a_pha')).body.items, []);
  });

  test('the environment endpoint shows that environment only', async () => {
    const staging = await request(server, 'GET', `/api/projects/${project.id}/environments/${project.staging}/evaluations`, { token: user.token });
    assert.equal(staging.status, 200);
    assert.deepEqual(staging.body.items.map((item: HistoryItem) => [item.flag_key, item.user_id, item.environment_id]), [['staged', 'u9', project.staging]]);
    const production = await request(server, 'GET', `/api/projects/${project.id}/environments/${project.production}/evaluations?flag_key=alpha`, { token: user.token });
    assert.equal(production.body.items.length, 4);
  });

  test('400 for a bad limit or cursor; 404 for another user and for ids that are not UUIDs; 401 without a token', async () => {
    for (const query of ['?limit=0', '?limit=501', '?limit=abc', '?limit=2.5', '?cursor=not-a-cursor', `?cursor=${Buffer.from('[1,2,3]').toString('base64url')}`]) {
      const answer = await projectHistory(query);
      assert.equal(answer.status, 400, query);
      assert.equal((answer.body as unknown as { statusCode: number }).statusCode, 400);
    }
    const stranger = await newUser(server, 'stranger');
    assert.equal((await request(server, 'GET', `/api/projects/${project.id}/evaluations`, { token: stranger.token })).status, 404);
    assert.equal((await request(server, 'GET', `/api/projects/${project.id}/environments/${project.production}/evaluations`, { token: stranger.token })).status, 404);
    assert.equal((await request(server, 'GET', `${flagsPath(project)}/${flagIds.alpha}/metrics`, { token: stranger.token })).status, 404);
    assert.equal((await request(server, 'GET', '/api/projects/nope/evaluations', { token: user.token })).status, 404);
    assert.equal((await request(server, 'GET', `/api/projects/${project.id}/evaluations`)).status, 401);
    assert.equal((await request(server, 'GET', '/api/metrics', { token: user.token })).status, 404, 'replaced by the Prometheus /metrics');
  });

  test('per-hour metrics of a flag count every evaluation', async () => {
    const metrics = await request(server, 'GET', `${flagsPath(project)}/${flagIds.gamma}/metrics`, { token: user.token });
    assert.equal(metrics.status, 200);
    assert.equal(metrics.body.flag_key, 'gamma');
    assert.deepEqual(metrics.body.totals, { enabled: 0, disabled: 4 });
    assert.equal(metrics.body.buckets.length, 24);
    const currentHour = new Date(Math.floor(Date.now() / 3_600_000) * 3_600_000).toISOString();
    assert.deepEqual(metrics.body.buckets.at(-1), { start: currentHour, enabled: 0, disabled: 4 });
    assert.ok(metrics.body.buckets.slice(0, -1).every((bucket: { enabled: number; disabled: number }) => bucket.enabled === 0 && bucket.disabled === 0));
    const starts = metrics.body.buckets.map((bucket: { start: string }) => Date.parse(bucket.start));
    assert.ok(starts.every((start: number, i: number) => i === 0 || start - starts[i - 1] === 3_600_000), 'consecutive hours, oldest first');

    const two = await request(server, 'GET', `${flagsPath(project)}/${flagIds.alpha}/metrics?hours=2`, { token: user.token });
    assert.equal(two.body.buckets.length, 2);
    assert.deepEqual(two.body.totals, { enabled: 4, disabled: 0 });
    for (const hours of ['0', '721', 'x']) {
      assert.equal((await request(server, 'GET', `${flagsPath(project)}/${flagIds.alpha}/metrics?hours=${hours}`, { token: user.token })).status, 400, hours);
    }
  });

  test('per-hour counts equal what the answers said, flag by flag, whether a rule matched the request or not', async () => {
    // A request no rule matched counts only its rollout flags; the others are added from the base
    // codes at hand-over (history.recorder.ts: CountingBase). Both kinds of request, both routes.
    const counted = await newProject(server, user, 'Counted');
    const ids: Record<string, string> = {};
    const fields: Record<string, Record<string, unknown>> = {
      off: { enabled: false },
      on: { enabled: true },
      half: { enabled: true, rollout_percentage: 50 },
      third: { enabled: true, rollout_percentage: 33 },
      ruled: { enabled: true },
      half_ruled: { enabled: true, rollout_percentage: 50 },
      // Variants: one that always serves the same (not varying), one split by weight (varying).
      pinned: { enabled: true, variants: [{ key: 'a', value: 'a', weight: 1000 }, { key: 'b', value: 'b', weight: 0 }], off_variant: 'b' },
      split: { enabled: true, variants: [{ key: 'a', value: 'a', weight: 500 }, { key: 'b', value: 'b', weight: 500 }], off_variant: 'a' },
    };
    for (const [key, { variants, off_variant, ...flag }] of Object.entries(fields)) {
      ids[key] = (await newFlag(server, user, counted, { key, ...flag })).id;
      if (variants) assert.equal((await request(server, 'PUT', `${flagsPath(counted)}/${ids[key]}`, { token: user.token, body: { variants, off_variant } })).status, 200);
    }
    for (const key of ['ruled', 'half_ruled']) {
      const rule = await request(server, 'POST', `${flagsPath(counted)}/${ids[key]}/rules`, { token: user.token, body: { rule_type: 'user_id', rule_value: 'vip', serve: key !== 'ruled' } });
      assert.equal(rule.status, 201);
    }
    const expected: Record<string, { enabled: number; disabled: number; variants?: Record<string, number> }> = Object.fromEntries(Object.keys(fields).map((key) => [key, { enabled: 0, disabled: 0 }]));
    const countVariant = (key: string, variant: string | undefined) => {
      if (variant === undefined) return;
      const counts = (expected[key]!.variants ??= {});
      counts[variant] = (counts[variant] ?? 0) + 1;
    };
    const users = [...Array.from({ length: 30 }, (_, i) => `user-${i}`), 'vip', 'vip', 'user-3'];
    for (const userId of users) {
      const answer = await evaluate(server, counted.sdk_key, 'production', { user_id: userId });
      assert.equal(answer.status, 200);
      for (const [key, { enabled, variant }] of Object.entries(answer.body.flags)) {
        expected[key]![enabled ? 'enabled' : 'disabled']++;
        countVariant(key, variant);
      }
    }
    for (const userId of ['vip', 'user-7', 'user-8']) {
      // OFREP: a boolean flag's value is whether it is on; a variant flag's says nothing of that, so it is asked to evaluate.
      const bulk = await request<{ flags: { key: string; value: unknown; variant?: string }[] }>(server, 'POST', '/ofrep/v1/evaluate/flags', { sdkKey: counted.sdk_key, body: { context: { targetingKey: userId } } });
      assert.equal(bulk.status, 200);
      const answer = await evaluate(server, counted.sdk_key, 'production', { user_id: userId });
      for (const { key, value } of bulk.body.flags) {
        const { enabled, variant } = answer.body.flags[key]!;
        if (typeof value === 'boolean') assert.equal(value, enabled, key);
        expected[key]![enabled ? 'enabled' : 'disabled'] += 2; // the OFREP request and this evaluate
        countVariant(key, variant);
        countVariant(key, variant);
      }
    }
    assert.ok(expected.half!.enabled > 0 && expected.half!.disabled > 0, 'the 50 % rollout answered both ways');
    assert.deepEqual(expected.ruled, { enabled: users.length + 2, disabled: 4 }, 'the rule served vip off, three times by evaluate and once by OFREP');
    assert.ok(expected.split!.variants!.a! > 0 && expected.split!.variants!.b! > 0, 'the split served both variants');
    const totals = async () => {
      const all: Record<string, unknown> = {};
      for (const key of Object.keys(fields)) all[key] = (await request(server, 'GET', `${flagsPath(counted)}/${ids[key]}/metrics`, { token: user.token })).body.totals;
      return all;
    };
    await eventually(async () => JSON.stringify(await totals()) === JSON.stringify(expected), 'the counts of every request');
    assert.deepEqual(await totals(), expected);
  });

  test('GET /metrics (Prometheus, with METRICS_TOKEN) reports what the history writer wrote and dropped', async () => {
    const metrics = await request(server, 'GET', '/metrics', { token: 'history-test-token' });
    assert.equal(metrics.status, 200);
    const value = (series: string) => Number(new RegExp(`^${series.replace(/[{}"]/g, '\\$&')} (\\S+)$`, 'm').exec(metrics.text)?.[1]);
    assert.ok(value('guidon_history_rows_total{state="written"}') >= 13, metrics.text);
    assert.equal(value('guidon_history_rows_total{state="dropped"}'), 0);
    assert.equal(value('guidon_history_pending_rows'), 0);
  });

  test('a user_id the database cannot store as sent is answered, and kept with U+FFFD in its place', async () => {
    const p = await newProject(server, user, 'odd ids');
    await newFlag(server, user, p, { key: 'odd', enabled: true });
    assert.equal((await evaluate(server, p.sdk_key, 'production', { user_id: 'nul\u0000id' })).status, 200);
    assert.equal((await evaluate(server, p.sdk_key, 'production', { user_id: 'lone\ud800id' })).status, 200);
    const history = () => request(server, 'GET', `/api/projects/${p.id}/evaluations`, { token: user.token });
    await eventually(async () => (await history()).body.items.length === 2, 'both items');
    assert.deepEqual((await history()).body.items.map((item: HistoryItem) => item.user_id), ['lone\ufffdid', 'nul\ufffdid']);
    // Where the text is stored or looked up as sent, it is refused instead.
    const refused = await request(server, 'GET', `/api/projects/${p.id}/evaluations?user_id=a%00b`, { token: user.token });
    assert.equal(refused.status, 400);
    assert.equal((await request(server, 'POST', '/api/projects', { token: user.token, body: { name: 'nul\u0000name' } })).status, 400);
  });

  test('a deleted flag keeps its history, readable by flag_key', async () => {
    const doomed = await newFlag(server, user, project, { key: 'doomed', enabled: true });
    await evaluate(server, project.sdk_key, 'production', { user_id: 'last-user' });
    await eventually(async () => (await projectHistory('?flag_key=doomed')).body.items.length === 1, 'the doomed flag item');
    assert.equal((await request(server, 'DELETE', `${flagsPath(project)}/${doomed.id}`, { token: user.token })).status, 204);
    const items = (await projectHistory('?flag_key=doomed')).body.items;
    assert.deepEqual(items.map((item) => [item.flag_id, item.user_id]), [[doomed.id, 'last-user']]);
  });

  test('deleting an environment, then a project, removes their history and counts', async () => {
    const p = await newProject(server, user, 'doomed project');
    await newFlag(server, user, p, { key: 'one', enabled: true });
    await newFlag(server, user, p, { key: 'two', enabled: true }, p.staging);
    await evaluate(server, p.sdk_key, 'production', { user_id: 'x' });
    await evaluate(server, p.sdk_key, 'staging', { user_id: 'x' });
    const stored = async (table: 'evaluations' | 'evaluation_counts' | 'evaluation_snapshots', envId: string) =>
      (await server.database.db.selectFrom(table).select('environment_id').where('environment_id', '=', envId).execute()).length;
    await eventually(async () => (await stored('evaluation_counts', p.production)) === 1 && (await stored('evaluation_counts', p.staging)) === 1, 'both environments written');

    await request(server, 'DELETE', `/api/projects/${p.id}/environments/${p.staging}`, { token: user.token });
    for (const table of ['evaluations', 'evaluation_counts', 'evaluation_snapshots'] as const) assert.equal(await stored(table, p.staging), 0, table);
    assert.equal(await stored('evaluations', p.production), 1);

    await request(server, 'DELETE', `/api/projects/${p.id}`, { token: user.token });
    for (const table of ['evaluations', 'evaluation_counts', 'evaluation_snapshots'] as const) assert.equal(await stored(table, p.production), 0, table);
  });
});

describe('history writer', () => {
  const silent = pino({ level: 'silent' });
  const testDatabases: TestDatabase[] = [];
  after(() => Promise.all(testDatabases.map((testDatabase) => testDatabase.drop())));

  async function environmentIn(testDatabase: TestDatabase) {
    testDatabases.push(testDatabase);
    const database = await openDatabase(testDatabase.config);
    const now = new Date().toISOString();
    await database.db.insertInto('users').values({ id: '00000000-0000-4000-8000-000000000001', email: 'w@example.com', password_hash: 'x', created_at: now }).execute();
    await database.db.insertInto('projects').values({ id: '00000000-0000-4000-8000-000000000002', owner_id: '00000000-0000-4000-8000-000000000001', name: 'p', description: null, sdk_key: 'sdk_w', created_at: now, updated_at: now }).execute();
    await database.db.insertInto('environments').values({ id: '00000000-0000-4000-8000-000000000003', project_id: '00000000-0000-4000-8000-000000000002', name: 'e', key: 'e', created_at: now, updated_at: now }).execute();
    const environment = { environmentId: '00000000-0000-4000-8000-000000000003', snapshotId: '00000000-0000-4000-8000-000000000004', flagIds: ['00000000-0000-4000-8000-000000000005', '00000000-0000-4000-8000-000000000006'], flagKeys: ['on', 'off'] };
    return { database, environment };
  }

  test('when too many rows wait, new ones are dropped and counted, while the hourly counts stay exact', async () => {
    const testDatabase = await createTestDatabase();
    const { database, environment } = await environmentIn(testDatabase);
    // Nothing is handed over before close(): at most 4 rows (2 requests of 2 flags) may wait.
    const recorder = new HistoryRecorder(testDatabase.config, silent, { maxPendingRows: 4, flushIntervalMs: 3_600_000 });
    recorder.start();
    const codes = Uint8Array.from([1, 0]); // enabled globally, disabled
    for (let i = 0; i < 5; i++) recorder.record(environment, `user-${i}`, codes, 2);
    assert.equal(recorder.metrics().dropped, 6);
    assert.equal(recorder.metrics().pending, 4);
    await recorder.close();

    const rows = await database.db.selectFrom('evaluations').select('user_id').orderBy('id').execute();
    assert.deepEqual(rows.map((row) => row.user_id), ['user-0', 'user-1']);
    const counts = await database.db.selectFrom('evaluation_counts').select(['flag_key', 'enabled_count', 'disabled_count']).orderBy('flag_key').execute();
    assert.deepEqual(counts.map((row) => [row.flag_key, Number(row.enabled_count), Number(row.disabled_count)]), [['off', 0, 5], ['on', 5, 0]]);
    assert.equal(recorder.metrics().written, 4);
    await database.close();
  });

  test('user ids cross to the writer as they were: none, ASCII, and any Unicode', async () => {
    const testDatabase = await createTestDatabase();
    const { database, environment } = await environmentIn(testDatabase);
    const recorder = new HistoryRecorder(testDatabase.config, silent, { flushIntervalMs: 3_600_000 });
    recorder.start();
    const ids = ['plain', null, 'Zoë-ünïcode', '', '用户-1', '\u{1F600}', 'x'.repeat(5000)];
    for (const id of ids) recorder.record(environment, id, Uint8Array.from([1, 0]), 2);
    await recorder.close();
    const rows = await database.db.selectFrom('evaluations').select('user_id').orderBy('id').execute();
    assert.deepEqual(rows.map((row) => row.user_id), ids);
    await database.close();
  });

  test('early batches carry rows only: the hourly counts go once per flush, and stay exact', async () => {
    const testDatabase = await createTestDatabase();
    const { database, environment } = await environmentIn(testDatabase);
    // Two rows a batch: every request is handed over early.
    const recorder = new HistoryRecorder(testDatabase.config, silent, { maxBatchRows: 2, flushIntervalMs: 3_600_000 });
    recorder.start();
    const countRows = () => database.db.selectFrom('evaluation_counts').select(['flag_key', 'enabled_count', 'disabled_count']).orderBy('flag_key').execute();
    try {
      for (let i = 0; i < 3; i++) recorder.record(environment, `user-${i}`, Uint8Array.from([1, 0]), 2);
      await eventually(() => recorder.metrics().written === 6, 'the early batches written');
      assert.deepEqual(await countRows(), [], 'no counts with the early batches');
      recorder.handOver(); // what the flush timer does
    } finally {
      await recorder.close(); // a failure must not leave the writer thread holding the test open
    }
    assert.deepEqual((await countRows()).map((row) => [row.flag_key, Number(row.enabled_count), Number(row.disabled_count)]), [['off', 0, 3], ['on', 3, 0]]);
    await database.close();
  });

  test('batches built one after another each carry only their own rows (the builder is reused)', async () => {
    const testDatabase = await createTestDatabase();
    const { database, environment } = await environmentIn(testDatabase);
    const recorder = new HistoryRecorder(testDatabase.config, silent, { flushIntervalMs: 3_600_000 });
    recorder.start();
    try {
      // The first batch grows the builder's arrays past their first size (1,024 requests, 64 KB of ids).
      for (let i = 0; i < 1500; i++) recorder.record(environment, `first-${i}-${'x'.repeat(60)}`, Uint8Array.from([1, 0]), 2);
      recorder.handOver();
      recorder.record(environment, 'second', Uint8Array.from([0, 1]), 2);
      recorder.handOver();
      await eventually(() => recorder.metrics().written === 3002, 'both batches written');
    } finally {
      await recorder.close();
    }
    const rows = await database.db.selectFrom('evaluations').select(['user_id', 'outcomes']).orderBy('id').execute();
    assert.equal(rows.length, 1501);
    assert.deepEqual([rows[0]!.user_id, [...rows[0]!.outcomes]], [`first-0-${'x'.repeat(60)}`, [1, 0]]);
    assert.deepEqual([rows[1499]!.user_id, [...rows[1499]!.outcomes]], [`first-1499-${'x'.repeat(60)}`, [1, 0]]);
    assert.deepEqual([rows[1500]!.user_id, [...rows[1500]!.outcomes]], ['second', [0, 1]]);
    await database.close();
  });

  test('the history writer thread runs below the evaluate thread\'s priority (Linux)', { skip: !existsSync('/proc/thread-self') && 'per-thread priority is read from /proc (Linux only)' }, async () => {
    const testDatabase = await createTestDatabase();
    const recorder = new HistoryRecorder(testDatabase.config, silent, { flushIntervalMs: 3_600_000 });
    recorder.start();
    recorder.deleteHistory(['00000000-0000-4000-8000-000000000000']); // the first message starts the writer's thread
    const niceOf = (task: string) => {
      try {
        return Number(readFileSync(`/proc/self/task/${task}/stat`, 'utf8').split(') ')[1]!.split(' ')[16]);
      } catch {
        return NaN; // a thread that ended meanwhile
      }
    };
    // Relative to the process's own nice: the suite may itself run under nice.
    const own = getPriority();
    await eventually(() => readdirSync('/proc/self/task').some((task) => niceOf(task) === Math.min(19, own + 10)), `a thread (the writer) runs 10 below the main thread (nice ${own} + 10)`);
    assert.equal(niceOf(String(process.pid)), own, 'the evaluate (main) thread keeps its priority');
    await recorder.close();
  });

  test('the bound holds in requests too: small environments cannot pile up user ids without limit', async () => {
    const testDatabase = await createTestDatabase();
    const { database, environment } = await environmentIn(testDatabase);
    const recorder = new HistoryRecorder(testDatabase.config, silent, { maxPendingRequests: 3, flushIntervalMs: 3_600_000 });
    recorder.start();
    const codes = Uint8Array.from([1, 0]);
    for (let i = 0; i < 5; i++) recorder.record(environment, `user-${i}`, codes, 2);
    assert.equal(recorder.metrics().dropped, 4);
    recorder.handOver();
    await eventually(() => recorder.metrics().written === 6, 'the first three requests written');
    recorder.record(environment, 'after', codes, 2); // room again once the writer caught up
    await recorder.close();
    const rows = await database.db.selectFrom('evaluations').select('user_id').orderBy('id').execute();
    assert.deepEqual(rows.map((row) => row.user_id), ['user-0', 'user-1', 'user-2', 'after']);
    await database.close();
  });

  test('a history worker that dies is replaced: later rows are written, what it held is counted', async () => {
    const testDatabase = await createTestDatabase();
    const { database, environment } = await environmentIn(testDatabase);
    const recorder = new HistoryRecorder(testDatabase.config, silent, { flushIntervalMs: 3_600_000 });
    recorder.start();
    const codes = Uint8Array.from([1, 0]);
    recorder.record(environment, 'before', codes, 2);
    recorder.handOver();
    const dying = recorder['worker']!; // started by that first batch
    await dying.terminate(); // as if the thread crashed
    await eventually(() => recorder['worker'] !== dying, 'a new worker');
    recorder.record(environment, 'after', codes, 2);
    await recorder.close();

    const users = (await database.db.selectFrom('evaluations').select('user_id').execute()).map((row) => row.user_id);
    assert.ok(users.includes('after'), 'rows recorded after the crash are written by the new worker');
    const { written, failed, pending } = recorder.metrics();
    assert.equal(written + failed, 4, 'every row is either written or counted as lost');
    assert.equal(written, users.length * 2);
    assert.equal(pending, 0);
    await database.close();
  });

  test('two compilations of one environment in one batch add up in the hourly counts', async () => {
    const { database, environment } = await environmentIn(await createTestDatabase());
    const recompiled = { ...environment, snapshotId: '00000000-0000-4000-8000-000000000007' };
    const hourStart = new Date(Math.floor(Date.now() / 3_600_000) * 3_600_000).toISOString();
    const store = new HistoryStore(database);
    const written = await store.write({
      id: 0,
      environments: [environment, recompiled],
      requestEnvironment: Uint32Array.from([0, 1]),
      requestTime: Float64Array.from([Date.now(), Date.now()]),
      ...packUsers(['before', 'after']),
      codes: Uint8Array.from([1, 0, 0, 1]),
      rows: 4,
      counts: [
        { environment, hourStart, enabled: Uint32Array.from([1, 0]), disabled: Uint32Array.from([0, 1]) },
        { environment: recompiled, hourStart, enabled: Uint32Array.from([0, 1]), disabled: Uint32Array.from([1, 0]) },
      ],
    });
    assert.deepEqual(written, { rows: 4, discarded: 0, failed: 0, countsStored: true, errors: [] });
    const counts = await database.db.selectFrom('evaluation_counts').select(['flag_key', 'enabled_count', 'disabled_count']).orderBy('flag_key').execute();
    assert.deepEqual(counts.map((row) => [row.flag_key, Number(row.enabled_count), Number(row.disabled_count)]), [['off', 1, 1], ['on', 1, 1]]);
    await database.close();
  });

  test('pruning deletes history older than the retention and keeps the rest', async () => {
    const { database, environment } = await environmentIn(await createTestDatabase());
    const store = new HistoryStore(database);
    const day = 24 * 60 * 60 * 1000;
    const old = new Date(Date.now() - 40 * day);
    const oldHour = new Date(Math.floor(old.getTime() / 3_600_000) * 3_600_000).toISOString();
    await store.write({
      id: 0,
      environments: [environment],
      requestEnvironment: Uint32Array.from([0, 0]),
      requestTime: Float64Array.from([old.getTime(), Date.now()]),
      ...packUsers(['old', 'new']),
      codes: Uint8Array.from([1, 0, 1, 0]),
      rows: 4,
      counts: [{ environment, hourStart: oldHour, enabled: Uint32Array.from([1, 0]), disabled: Uint32Array.from([0, 1]) }],
    });
    assert.equal(await store.prune(30), 1);
    const rows = await database.db.selectFrom('evaluations').select('user_id').execute();
    assert.deepEqual(rows, [{ user_id: 'new' }]);
    assert.deepEqual(await database.db.selectFrom('evaluation_counts').selectAll().execute(), []);
    assert.equal((await database.db.selectFrom('evaluation_snapshots').select('id').execute()).length, 1, 'the snapshot still in use stays');
    assert.equal(await store.prune(0), 0, '0 keeps history forever');
    await database.close();
  });
});
