/**
 * Change requests: four eyes on an environment (docs/change-management.md). While production's
 * approvals_required is at least 1, every direct write to its flags, rules and schedules is 409
 * for every role and credential; a request's changes are checked at creation as their direct
 * writes would be, reviewed by others than its author, bound to the content they approved,
 * outdated when a flag they build on changes elsewhere, and applied all at once or not at all.
 * The tests named after a bug are the integrity bugs reported against peers that this rules out.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { evaluate, eventually, flagsPath, newFlag, newProject, newUser, request, startServer, type TestProject, type TestServer, type TestUser } from './harness.js';
import { addMember, apiToken, auditEvents } from './team.js';

const NEEDS_APPROVAL = 'Changes to production need an approved change request';

describe('change requests', () => {
  let server: TestServer;
  let owner: TestUser; // A: the author of most requests
  let editor: TestUser; // B
  let other: TestUser; // C
  let project: TestProject;
  let flag: { id: string; key: string };
  let ruleId: string;
  let scheduleId: string;

  before(async () => {
    server = await startServer({}, { scheduler: { pollIntervalMs: 100 } });
    [owner, editor, other] = [await newUser(server, 'cr-owner'), await newUser(server, 'cr-editor'), await newUser(server, 'cr-other')];
    project = await newProject(server, owner, 'Reviewed');
    await addMember(server, owner, project.id, editor, 'editor');
    await addMember(server, owner, project.id, other, 'editor');
    flag = await newFlag(server, owner, project, { key: 'checkout', rollout_percentage: 10 });
    await newFlag(server, owner, project, { key: 'checkout' }, project.staging);
    ruleId = (await request(server, 'POST', `${flagsPath(project)}/${flag.id}/rules`, { token: owner.token, body: { rule_type: 'user_id', rule_value: 'u1' } })).body.id;
    scheduleId = (await request(server, 'POST', `${flagsPath(project)}/${flag.id}/schedules`, { token: owner.token, body: { at: new Date(Date.now() + 3_600_000).toISOString(), change: { enabled: true } } })).body.id;
    const reviewed = await request(server, 'PUT', `/api/projects/${project.id}/environments/${project.production}`, { token: owner.token, body: { approvals_required: 1 } });
    assert.equal(reviewed.status, 200, reviewed.text);
  });
  after(() => server?.close());

  const p = () => `/api/projects/${project.id}`;
  const open = (body: Record<string, unknown>, token = owner.token) => request(server, 'POST', `${p()}/environments/${project.production}/change-requests`, { token, body: { title: 'A change', ...body } });
  const opened = async (body: Record<string, unknown>, token = owner.token) => {
    const answer = await open(body, token);
    assert.equal(answer.status, 201, answer.text);
    return answer.body;
  };
  const review = (id: string, decision: 'approve' | 'reject', token: string, comment?: string) => request(server, 'POST', `${p()}/change-requests/${id}/reviews`, { token, body: { decision, ...(comment ? { comment } : {}) } });
  const apply = (id: string, token = owner.token) => request(server, 'POST', `${p()}/change-requests/${id}/apply`, { token });
  const edit = (id: string, body: unknown, token = owner.token) => request(server, 'PUT', `${p()}/change-requests/${id}`, { token, body });
  const get = async (id: string) => (await request(server, 'GET', `${p()}/change-requests/${id}`, { token: owner.token })).body;
  const flagNow = async (id = flag.id) => (await request(server, 'GET', `${flagsPath(project)}/${id}`, { token: owner.token })).body;
  const setRollout = (rollout_percentage: number) => ({ op: 'flag.update', flag_id: flag.id, set: { rollout_percentage } });
  /** Opened by the owner, approved by the editor, applied. */
  const throughReview = async (changes: unknown[]) => {
    const request_ = await opened({ changes });
    assert.equal((await review(request_.id, 'approve', editor.token)).status, 201);
    const applied = await apply(request_.id);
    assert.equal(applied.status, 200, applied.text);
    return applied.body;
  };

  test('approvals_required: an owner sets it (0–5, audited), an editor may not; a reviewed environment cannot be deleted', async () => {
    const qa = (await request(server, 'POST', `${p()}/environments`, { token: owner.token, body: { name: 'QA', key: 'qa' } })).body;
    assert.equal(qa.approvals_required, 0);
    const put = (body: unknown, token = owner.token) => request(server, 'PUT', `${p()}/environments/${qa.id}`, { token, body });
    assert.equal((await put({ approvals_required: 2 }, editor.token)).status, 403);
    assert.equal((await put({ approvals_required: 6 })).status, 400);
    assert.equal((await put({ approvals_required: '2' })).status, 400);
    assert.equal((await put({ approvals_required: 2 })).body.approvals_required, 2);
    assert.equal((await put({ name: 'Quality' }, editor.token)).status, 200, 'editors still rename it');
    const deleting = await request(server, 'DELETE', `${p()}/environments/${qa.id}`, { token: owner.token });
    assert.equal(deleting.status, 409);
    assert.match(deleting.body.message, /approvals_required to 0/);
    assert.equal((await put({ approvals_required: 0 })).status, 200);
    const events = (await auditEvents(server, owner.token, project.id)).filter((event) => event.resource_id === qa.id && event.action === 'environment.updated');
    assert.deepEqual(events.map((event) => [event.before.approvals_required, event.after.approvals_required]).filter(([a, b]) => a !== b), [[2, 0], [0, 2]], 'turning it on and off, audited');
    assert.equal((await request(server, 'DELETE', `${p()}/environments/${qa.id}`, { token: owner.token })).status, 204);
  });

  test('a second API that bypasses change requests (Flagsmith #8367): every direct write to a reviewed environment is 409, for every role and credential, and changes nothing', async () => {
    const credentials = { 'owner login': owner.token, 'owner API token': await apiToken(server, owner), 'editor login': editor.token, 'editor API token': await apiToken(server, editor) };
    const staging = (await request(server, 'GET', `${flagsPath(project, project.staging)}`, { token: owner.token })).body[0];
    const base = flagsPath(project);
    const writes: [string, string, unknown?][] = [
      ['POST', base, { name: 'New', key: 'brand-new' }],
      ['PUT', `${base}/${flag.id}`, { rollout_percentage: 50 }],
      ['PUT', `${base}/${flag.id}`, { enabled: true }],
      ['POST', `${base}/${flag.id}/toggle`],
      ['DELETE', `${base}/${flag.id}`],
      ['POST', `${base}/${flag.id}/rules`, { rule_type: 'user_id', rule_value: 'u2' }],
      ['PUT', `${base}/${flag.id}/rules/${ruleId}`, { priority: 5 }],
      ['DELETE', `${base}/${flag.id}/rules/${ruleId}`],
      ['POST', `${flagsPath(project, project.staging)}/${staging.id}/copy`, { target_environment_id: project.production, overwrite: true }],
      ['POST', `${base}/${flag.id}/schedules`, { at: new Date(Date.now() + 3_600_000).toISOString(), change: { enabled: true } }],
      ['DELETE', `${base}/${flag.id}/schedules/${scheduleId}`],
    ];
    const db = server.database.db;
    const snapshot = async () =>
      JSON.stringify([
        await db.selectFrom('flags').selectAll().where('environment_id', '=', project.production).orderBy('id').execute(),
        await db.selectFrom('rules').selectAll().where('flag_id', '=', flag.id).orderBy('id').execute(),
        await db.selectFrom('schedules').selectAll().where('environment_id', '=', project.production).orderBy('id').execute(),
        (await auditEvents(server, owner.token, project.id)).length,
      ]);
    const before = await snapshot();
    const wrong: string[] = [];
    for (const [who, token] of Object.entries(credentials)) {
      for (const [method, path, body] of writes) {
        const answer = await request(server, method, path, { token, ...(body === undefined ? {} : { body }) });
        if (answer.status !== 409 || answer.body.message !== NEEDS_APPROVAL) wrong.push(`${method} ${path.replace(p(), '')} as ${who}: ${answer.status} ${answer.text}`);
      }
    }
    assert.deepEqual(wrong, []);
    assert.equal(await snapshot(), before, 'nothing changed, nothing recorded');
    // Reads and evaluation are as before; the other direction of a copy is not a write to production.
    assert.equal((await request(server, 'GET', base, { token: editor.token })).status, 200);
    assert.equal((await evaluate(server, project.sdk_key, 'production', { user_id: 'u1' })).body.flags.checkout?.enabled, false);
    const outward = await request(server, 'POST', `${base}/${flag.id}/copy`, { token: editor.token, body: { target_environment_id: project.staging, overwrite: true } });
    assert.equal(outward.status, 200, outward.text);
  });

  test('self-approval is refused, by login and by its author\'s API token (a token acts as its user)', async () => {
    const mine = await opened({ changes: [setRollout(11)] });
    for (const token of [owner.token, await apiToken(server, owner)]) {
      const answer = await review(mine.id, 'approve', token);
      assert.equal(answer.status, 403, answer.text);
      assert.match(answer.body.message, /your own change request/);
    }
    assert.equal((await get(mine.id)).status, 'open');
    assert.equal((await apply(mine.id)).status, 409);
    assert.equal((await flagNow()).rollout_percentage, 10);
  });

  test('the content is checked at creation as the direct writes would check it: 400 naming the change by index', async () => {
    const refused = [
      [[setRollout(12), { op: 'flag.update', flag_id: flag.id, set: { rollout_percentage: '50' } }], /changes\/1\/set\/rollout_percentage must be integer/],
      [[setRollout(12), { op: 'rule.update', flag_id: flag.id, rule_id: ruleId, set: { variant: 'blue' } }], /^changes\[1\] \(rule\.update\): variant "blue": flag "checkout" has no variants/],
      [[{ op: 'flag.create', flag: { name: 'Dup', key: 'checkout' } }], /^changes\[0\] \(flag\.create\): A flag with key "checkout" already exists/],
      [[{ op: 'flag.delete', flag_id: '00000000-0000-4000-8000-000000000000' }], /^changes\[0\] \(flag\.delete\): Flag not found/],
      [[{ op: 'flag.rename', flag_id: flag.id }], /changes\/0/],
      [[], /fewer than 1 items/],
    ] as const;
    for (const [changes, message] of refused) {
      const answer = await open({ changes });
      assert.equal(answer.status, 400, answer.text);
      assert.match(answer.body.message, message);
    }
    assert.equal((await flagNow()).rollout_percentage, 10, 'checking changed nothing');
  });

  test('an approval that survives later edits (Flagsmith #4465 and #7056, GrowthBook #5477): any edit of changes or apply_at withdraws every approval', async () => {
    const cr = await opened({ changes: [setRollout(20)] });
    assert.equal((await review(cr.id, 'approve', editor.token, 'looks right')).body.status, 'approved');
    // A new title keeps the approval: it changes nothing that applies.
    const retitled = await edit(cr.id, { title: 'Ramp checkout' });
    assert.equal(retitled.body.status, 'approved');
    assert.equal((await edit(cr.id, { title: 'Mine now' }, editor.token)).status, 403, 'only its author edits it');

    const edited = await edit(cr.id, { changes: [setRollout(90)] });
    assert.equal(edited.status, 200, edited.text);
    assert.equal(edited.body.status, 'open');
    assert.equal(edited.body.version, 2);
    assert.deepEqual(edited.body.approved_by, []);
    assert.deepEqual(edited.body.reviews.map((item: any) => [item.email, item.decision, item.version]), [[editor.email, 'approve', 1]]);
    for (const token of [owner.token, editor.token]) assert.equal((await apply(cr.id, token)).status, 409, 'the approved content is gone; the new one is not approved');
    assert.equal((await flagNow()).rollout_percentage, 10);

    // apply_at is content too.
    assert.equal((await review(cr.id, 'approve', editor.token)).body.status, 'approved');
    const rescheduled = await edit(cr.id, { apply_at: new Date(Date.now() + 3_600_000).toISOString() });
    assert.equal(rescheduled.body.status, 'open');
    assert.equal((await edit(cr.id, { apply_at: null })).body.version, 4);

    assert.equal((await review(cr.id, 'approve', editor.token)).body.status, 'approved');
    const applied = await apply(cr.id);
    assert.equal(applied.status, 200, applied.text);
    assert.equal((await flagNow()).rollout_percentage, 90, 'the content approved last');
  });

  test('an outside change outdates the request: not reviewable nor applicable until its author updates it', async () => {
    const stale = await opened({ changes: [setRollout(30)] });
    await throughReview([{ op: 'flag.toggle', flag_id: flag.id }]);
    const outdated = await get(stale.id);
    assert.equal(outdated.status, 'outdated');
    const event = (await auditEvents(server, owner.token, project.id)).find((item) => item.action === 'change_request.outdated' && item.resource_id === stale.id);
    assert.equal(event.after.status, 'outdated');
    assert.equal((await review(stale.id, 'approve', editor.token)).status, 409);
    assert.equal((await apply(stale.id)).status, 409);

    const rebased = await edit(stale.id, { changes: [setRollout(30)] });
    assert.equal(rebased.body.status, 'open');
    assert.equal((await review(stale.id, 'approve', editor.token)).status, 201);
    assert.equal((await apply(stale.id)).status, 200);
    assert.equal((await flagNow()).rollout_percentage, 30);
  });

  test('apply is all or nothing: a request whose 3rd change no longer validates changes nothing, and fails with the reason', async () => {
    const before = await flagNow();
    const rulesBefore = (await request(server, 'GET', `${flagsPath(project)}/${flag.id}/rules`, { token: owner.token })).body;
    const cr = await opened({ changes: [setRollout(33), { op: 'rule.create', flag_id: flag.id, rule: { rule_type: 'user_id', rule_value: 'all-or-nothing' } }, { op: 'flag.create', flag: { name: 'Late', key: 'late-comer' } }] });
    assert.equal((await review(cr.id, 'approve', editor.token)).status, 201);
    // Meanwhile the key is taken (a request of its own, which touches no flag of the first).
    await throughReview([{ op: 'flag.create', flag: { name: 'Early', key: 'late-comer' } }]);

    const refused = await apply(cr.id);
    assert.equal(refused.status, 409);
    assert.match(refused.body.message, /changes\[2\] \(flag\.create\): A flag with key "late-comer" already exists/);
    const failed = await get(cr.id);
    assert.equal(failed.status, 'failed');
    assert.match(failed.error, /^changes\[2\]/);
    assert.deepEqual(await flagNow(), before, 'change 1 not applied');
    assert.deepEqual((await request(server, 'GET', `${flagsPath(project)}/${flag.id}/rules`, { token: owner.token })).body, rulesBefore, 'change 2 not applied');
    const events = await auditEvents(server, owner.token, project.id);
    assert.deepEqual(events.filter((event) => event.change_request_id === cr.id).map((event) => event.action), ['change_request.failed']);
  });

  test('the diff: per change, the before and after of its resource, foreseen, then as applied', async () => {
    const at = new Date(Date.now() + 3_600_000).toISOString();
    const cr = await opened({ changes: [setRollout(44), { op: 'rule.create', flag_id: flag.id, rule: { rule_type: 'email_domain', rule_value: 'Example.com' } }, { op: 'schedule.create', flag_id: flag.id, at, change: { rollout_percentage: 100 } }] });
    assert.deepEqual(cr.diff.map((item: any) => [item.change, item.op, item.resource_type]), [[0, 'flag.update', 'flag'], [1, 'rule.create', 'rule'], [2, 'schedule.create', 'schedule']]);
    const current = (await flagNow()).rollout_percentage;
    assert.equal(cr.diff[0].before.rollout_percentage, current);
    assert.equal(cr.diff[0].after.rollout_percentage, 44);
    assert.equal(cr.diff[1].before, null);
    assert.equal(cr.diff[1].after.rule_value, '@example.com', 'as the direct write stores it');
    assert.equal(cr.diff[2].after.at, at);
    assert.deepEqual((await get(cr.id)).diff, cr.diff);
    assert.equal((await request(server, 'GET', `${flagsPath(project)}/${flag.id}/rules/${cr.diff[1].resource_id}`, { token: owner.token })).status, 404, 'foreseen, not made');

    assert.equal((await review(cr.id, 'approve', other.token)).status, 201);
    const applied = (await apply(cr.id)).body;
    const rule = (await request(server, 'GET', `${flagsPath(project)}/${flag.id}/rules/${applied.diff[1].resource_id}`, { token: owner.token })).body;
    assert.equal(rule.rule_value, '@example.com', 'the diff names what was made');
    const schedule = (await request(server, 'GET', `${flagsPath(project)}/${flag.id}/schedules`, { token: owner.token })).body.find((item: any) => item.id === applied.diff[2].resource_id);
    assert.equal(schedule.change_request_id, cr.id);
  });

  test('approvals that CI cannot drive without the UI (ldcli #581): a pipeline opens with an API token, another person approves with theirs, the pipeline applies', async () => {
    const [pipeline, reviewer] = [await apiToken(server, owner, 'pipeline'), await apiToken(server, editor, 'reviewer')];
    const pipelineId = (await request(server, 'GET', '/api/tokens', { token: owner.token })).body.find((token: any) => token.name === 'pipeline').id;
    const cr = await opened({ title: 'Release 42', description: 'from CI', changes: [setRollout(55), { op: 'rule.create', flag_id: flag.id, rule: { rule_type: 'user_id', rule_value: 'ci' } }] }, pipeline);
    assert.equal(cr.author.token_id, pipelineId);
    const approved = await review(cr.id, 'approve', reviewer, 'ok from me');
    assert.equal(approved.body.status, 'approved');
    const listed = await request(server, 'GET', `${p()}/change-requests?status=approved&environment_id=${project.production}`, { token: pipeline });
    assert.ok(listed.body.items.some((item: any) => item.id === cr.id));
    const applied = await request(server, 'POST', `${p()}/change-requests/${cr.id}/apply`, { token: pipeline });
    assert.equal(applied.status, 200, applied.text);
    assert.equal(applied.body.status, 'applied');
    assert.equal((await flagNow()).rollout_percentage, 55);
    const rules = (await request(server, 'GET', `${flagsPath(project)}/${flag.id}/rules`, { token: owner.token })).body;
    assert.ok(rules.some((rule: any) => rule.rule_value === 'ci'));

    // (Other pending requests this one outdates would name it too: only its own and its changes' events here.)
    const events = (await auditEvents(server, owner.token, project.id)).filter((event) => event.resource_id === cr.id || (event.change_request_id === cr.id && event.resource_type !== 'change_request'));
    assert.deepEqual(events.map((event) => event.action).reverse(), ['change_request.created', 'change_request.reviewed', 'flag.updated', 'rule.created', 'change_request.applied']);
    for (const event of events.filter((item) => item.resource_type !== 'change_request')) {
      assert.deepEqual(event.approvers, [{ user_id: editor.id, email: editor.email }]);
      assert.equal(event.actor.token_id, pipelineId);
    }
  });

  test('a revert that skips review (GrowthBook #4310): undoing an applied request needs its own approved request', async () => {
    const applied = await throughReview([setRollout(60)]);
    const revert = [setRollout(10)];
    assert.equal((await request(server, 'PUT', `${flagsPath(project)}/${flag.id}`, { token: owner.token, body: { rollout_percentage: 10 } })).status, 409);
    assert.equal((await edit(applied.id, { changes: revert })).status, 409, 'an applied request cannot be edited back');
    assert.equal((await request(server, 'POST', `${p()}/change-requests/${applied.id}/cancel`, { token: owner.token })).status, 409);
    const undo = await opened({ title: 'Revert', changes: revert });
    assert.equal((await apply(undo.id)).status, 409, 'not without its own approval');
    assert.equal((await flagNow()).rollout_percentage, 60);
    assert.equal((await review(undo.id, 'approve', other.token)).status, 201);
    assert.equal((await apply(undo.id)).status, 200);
    assert.equal((await flagNow()).rollout_percentage, 10);
  });

  test('a rejection stops it; its author or an owner cancels it, another editor may not', async () => {
    const cr = await opened({ changes: [setRollout(70)] }, editor.token);
    const rejected = await review(cr.id, 'reject', other.token, 'not this week');
    assert.equal(rejected.body.status, 'rejected');
    assert.equal((await apply(cr.id)).status, 409);
    assert.equal((await request(server, 'POST', `${p()}/change-requests/${cr.id}/cancel`, { token: other.token })).status, 403);
    const cancelled = await request(server, 'POST', `${p()}/change-requests/${cr.id}/cancel`, { token: owner.token });
    assert.equal(cancelled.body.status, 'cancelled');
    const actions = (await auditEvents(server, owner.token, project.id)).filter((event) => event.resource_id === cr.id).map((event) => event.action);
    assert.deepEqual(actions.reverse(), ['change_request.created', 'change_request.reviewed', 'change_request.rejected', 'change_request.cancelled']);
  });

  test('apply_at: an approved request is scheduled, then applied by the scheduler within 5 s of its time, once', async () => {
    const applyAt = new Date(Date.now() + 1500).toISOString();
    const cr = await opened({ changes: [setRollout(80), { op: 'rule.create', flag_id: flag.id, rule: { rule_type: 'user_id', rule_value: 'at-time' } }], apply_at: applyAt }, editor.token);
    assert.equal((await review(cr.id, 'approve', owner.token)).body.status, 'scheduled');
    const now = await apply(cr.id);
    assert.equal(now.status, 409);
    assert.match(now.body.message, /scheduled/);
    let done: any;
    await eventually(async () => (done = await get(cr.id)).status === 'applied', 'applied by the scheduler');
    const lag = Date.parse(done.applied_at) - Date.parse(applyAt);
    assert.ok(lag >= 0 && lag <= 5000, `applied ${lag} ms after apply_at (the bound is 5 s)`);
    assert.equal((await flagNow()).rollout_percentage, 80);
    const events = (await auditEvents(server, owner.token, project.id)).filter((event) => event.change_request_id === cr.id && event.resource_type !== 'change_request');
    assert.deepEqual(events.map((event) => event.action).sort(), ['flag.updated', 'rule.created']);
    assert.equal(events[0].actor.user_id, editor.id, 'as its author');
  });

  test('apply_at more than 24 h past when the scheduler first sees it (no instance ran meanwhile): failed "missed", as its author, nothing applied', async () => {
    const before = (await flagNow()).rollout_percentage;
    const cr = await opened({ changes: [setRollout(before === 91 ? 92 : 91)], apply_at: new Date(Date.now() + 3_600_000).toISOString() }, editor.token);
    assert.equal((await review(cr.id, 'approve', owner.token)).body.status, 'scheduled');
    await server.database.db.updateTable('change_requests').set({ apply_at: new Date(Date.now() - 25 * 3600_000).toISOString() }).where('id', '=', cr.id).execute();
    let done: any;
    await eventually(async () => (done = await get(cr.id)).status !== 'scheduled', 'settled by the scheduler');
    assert.equal(done.status, 'failed');
    assert.equal(done.error, 'missed');
    assert.equal((await flagNow()).rollout_percentage, before, 'nothing applied');
    const events = (await auditEvents(server, owner.token, project.id)).filter((event) => event.resource_id === cr.id && event.action === 'change_request.failed');
    assert.equal(events.length, 1);
    assert.equal(events[0].actor.user_id, editor.id, 'as its author');
  });

  test('schedules in a reviewed environment: one a request made applies when due; one saved before approval was required fails', async () => {
    const cr = await throughReview([{ op: 'schedule.create', flag_id: flag.id, at: new Date(Date.now() + 3_600_000).toISOString(), change: { rollout_percentage: 15 } }]);
    const approvedSchedule = cr.diff[0].resource_id;
    const due = (id: string) => server.database.db.updateTable('schedules').set({ at: new Date().toISOString() }).where('id', '=', id).execute();
    await due(approvedSchedule);
    await due(scheduleId);
    const statusOf = async (id: string) => (await request(server, 'GET', `${p()}/schedules`, { token: owner.token })).body.find((item: any) => item.id === id);
    await eventually(async () => (await statusOf(approvedSchedule)).status !== 'pending' && (await statusOf(scheduleId)).status !== 'pending', 'both settled');
    assert.equal((await statusOf(approvedSchedule)).status, 'applied');
    assert.equal((await flagNow()).rollout_percentage, 15);
    const unreviewed = await statusOf(scheduleId);
    assert.equal(unreviewed.status, 'failed');
    assert.equal(unreviewed.error, NEEDS_APPROVAL);
  });

  test('the new actions are in the closed vocabularies: a webhook may listen to them, an unknown one is 400', async () => {
    const events = ['schedule.created', 'schedule.failed', 'change_request.applied', 'change_request.outdated'];
    const created = await request(server, 'POST', `${p()}/webhooks`, { token: owner.token, body: { url: 'https://hooks.example.com/x', events } });
    assert.equal(created.status, 201, created.text);
    assert.deepEqual(created.body.events, events);
    assert.equal((await request(server, 'POST', `${p()}/webhooks`, { token: owner.token, body: { url: 'https://hooks.example.com/x', events: ['change_request.merged'] } })).status, 400);
    const filtered = await request(server, 'GET', `${p()}/audit?resource_type=change_request&limit=1`, { token: owner.token });
    assert.equal(filtered.body.items[0].resource_type, 'change_request');
  });
  test('an import into a reviewed environment: that part becomes one change request, which the answer names; the rest applies at once; approved and applied, the project exports the document', async () => {
    const shop = await newProject(server, owner, 'Imported under review');
    const base = `/api/projects/${shop.id}`;
    await addMember(server, owner, shop.id, editor, 'editor');
    const checkout = await newFlag(server, owner, shop, { key: 'checkout', rollout_percentage: 10 });
    assert.equal((await request(server, 'POST', `${flagsPath(shop)}/${checkout.id}/rules`, { token: owner.token, body: { rule_type: 'user_id', rule_value: 'u1', priority: 5 } })).status, 201);
    await newFlag(server, owner, shop, { key: 'legacy', enabled: true });
    assert.equal((await request(server, 'PUT', `${base}/environments/${shop.production}`, { token: owner.token, body: { approvals_required: 1 } })).status, 200);
    const exported = async () => (await request(server, 'GET', `${base}/export`, { token: owner.token })).body;
    const before = await exported();

    // The document: a new segment, checkout changed (rollout, bucketing key, one rule changed, one added), legacy gone, fresh new in production and staging.
    const document = structuredClone(before);
    document.segments = [{ key: 'beta', name: 'Beta', description: null, conditions: [{ attribute: 'plan', operator: 'IN', values: ['beta'] }] }];
    const production = document.flags.find((flag: { key: string }) => flag.key === 'checkout').environments.production;
    Object.assign(production, { rollout_percentage: 30, bucketing_key: 'Checkout.Old' });
    production.rules[0].rule_value = 'u2';
    production.rules.push({ ...production.rules[0], rule_type: 'conditions', rule_value: null, conditions: [{ operator: 'IN_SEGMENT', values: ['beta'] }], priority: 1 });
    const fresh = { enabled: true, rollout_percentage: 0, everyone_else: 'rollout', bucketing_key: null, variants: [], off_variant: null, prerequisites: [], rules: [{ ...production.rules[0], rule_value: 'vip', priority: 0 }] };
    document.flags = [
      document.flags.find((flag: { key: string }) => flag.key === 'checkout'),
      { key: 'fresh', name: 'Fresh', description: null, environments: { production: fresh, staging: { ...fresh, rules: [] } } },
    ];
    const importing = (query: string, token = owner.token) => request(server, 'POST', `${base}/import?mode=replace&${query}`, { token, body: document });

    const dry = await importing('dry_run=true');
    assert.equal(dry.status, 200, dry.text);
    assert.deepEqual(dry.body.change_requests, [{ environment: 'production', id: null }]);
    assert.deepEqual(dry.body.create.map((item: { key: string; environment: string | null }) => `${item.environment} ${item.key}`).sort(), ['null beta', 'production fresh', 'staging fresh']);

    const applied = await importing('dry_run=false', editor.token);
    assert.equal(applied.status, 200, applied.text);
    assert.equal(applied.body.dry_run, false);
    assert.equal(applied.body.change_requests.length, 1);
    const [{ environment, id }] = applied.body.change_requests;
    assert.equal(environment, 'production');
    const now = await exported();
    assert.deepEqual(now.segments.map((segment: { key: string }) => segment.key), ['beta'], 'the segment applied at once');
    const freshNow = now.flags.find((flag: { key: string }) => flag.key === 'fresh');
    assert.deepEqual(Object.keys(freshNow.environments), ['staging'], 'staging applied at once; production not');
    assert.equal(freshNow.environments.staging.enabled, true);
    const productionOf = (state: { flags: { key: string; environments: Record<string, unknown> }[] }) => state.flags.map((flag) => [flag.key, flag.environments.production ?? null]).filter(([, env]) => env !== null);
    assert.deepEqual(productionOf(now), productionOf(before), 'production as it was');

    const opened = (await request(server, 'GET', `${base}/change-requests/${id}`, { token: owner.token })).body;
    assert.equal(opened.status, 'open');
    assert.equal(opened.author.email, editor.email);
    assert.equal(opened.environment_id, shop.production);
    assert.deepEqual(opened.changes.map((change: { op: string }) => change.op), ['flag.create', 'flag.update', 'rule.update', 'rule.create', 'flag.delete']);
    assert.deepEqual(opened.changes[0].rules.map((rule: { rule_value: string }) => rule.rule_value), ['vip']);
    const audit = (await request(server, 'GET', `${base}/audit?resource_id=${id}`, { token: owner.token })).body.items;
    assert.equal(audit[0].action, 'change_request.created');
    assert.equal(audit[0].import_id, applied.body.import_id, 'the request is part of the import');

    assert.equal((await request(server, 'POST', `${base}/change-requests/${id}/reviews`, { token: owner.token, body: { decision: 'approve' } })).status, 201);
    const done = await request(server, 'POST', `${base}/change-requests/${id}/apply`, { token: editor.token });
    assert.equal(done.status, 200, done.text);
    const again = await importing('dry_run=true');
    assert.deepEqual([again.body.create, again.body.update, again.body.delete, again.body.change_requests], [[], [], [], []], `approved and applied, the project is the document: ${again.text}`);
    assert.equal((await exported()).flags.find((flag: { key: string }) => flag.key === 'checkout').environments.production.bucketing_key, 'Checkout.Old');
  });
});
