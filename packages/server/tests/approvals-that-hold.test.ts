/**
 * Approvals that hold, schedules that stay fair (docs/change-management.md):
 * - an approval counts only while its reviewer may still approve: a member removed, demoted to
 *   viewer, whose account is deleted, or who approved with an API token since revoked, no longer
 *   counts; the request is open again at once and applying it is 409, nothing applied;
 * - a scheduled change request whose author is no longer an editor fails at its time and changes nothing;
 * - one project's flood of due schedules does not hold back another project's (the scheduler takes
 *   each project's items round-robin, a few per batch);
 * - a project holds at most 1,000 pending schedules, those of its change requests included.
 * The scheduler polls every 100 ms here (1 s by default).
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { eventually, flagsPath, newFlag, newProject, newUser, request, startServer, type TestProject, type TestServer, type TestUser } from './harness.js';
import { addMember, apiToken, auditEvents } from './team.js';

describe('approvals that hold', () => {
  let server: TestServer;
  let owner: TestUser; // the author of most requests
  let project: TestProject;
  let flag: { id: string; key: string };

  before(async () => {
    server = await startServer({}, { scheduler: { pollIntervalMs: 100 } });
    owner = await newUser(server, 'hold-owner');
    project = await newProject(server, owner, 'Held');
    flag = await newFlag(server, owner, project, { key: 'checkout', rollout_percentage: 10 });
    const reviewed = await request(server, 'PUT', `/api/projects/${project.id}/environments/${project.production}`, { token: owner.token, body: { approvals_required: 1 } });
    assert.equal(reviewed.status, 200, reviewed.text);
  });
  after(() => server?.close());

  const p = (projectId = project.id) => `/api/projects/${projectId}`;
  const opened = async (body: Record<string, unknown>, token = owner.token) => {
    const answer = await request(server, 'POST', `${p()}/environments/${project.production}/change-requests`, { token, body: { title: 'A change', ...body } });
    assert.equal(answer.status, 201, answer.text);
    return answer.body;
  };
  const approve = async (id: string, token: string) => {
    const answer = await request(server, 'POST', `${p()}/change-requests/${id}/reviews`, { token, body: { decision: 'approve' } });
    assert.equal(answer.status, 201, answer.text);
    return answer.body;
  };
  const apply = (id: string, token = owner.token) => request(server, 'POST', `${p()}/change-requests/${id}/apply`, { token });
  const get = async (id: string) => (await request(server, 'GET', `${p()}/change-requests/${id}`, { token: owner.token })).body;
  const listed = async (id: string) => (await request(server, 'GET', `${p()}/change-requests?limit=100`, { token: owner.token })).body.items.find((item: any) => item.id === id);
  const rollout = async () => (await request(server, 'GET', `${flagsPath(project)}/${flag.id}`, { token: owner.token })).body.rollout_percentage;
  const setRollout = (rollout_percentage: number) => ({ op: 'flag.update', flag_id: flag.id, set: { rollout_percentage } });
  const memberId = async (user: TestUser) => (await request(server, 'GET', `${p()}/members`, { token: owner.token })).body.find((member: any) => member.email === user.email).id;
  const removeMember = async (user: TestUser) => assert.equal((await request(server, 'DELETE', `${p()}/members/${await memberId(user)}`, { token: owner.token })).status, 204);
  const setRole = async (user: TestUser, role: string) => assert.equal((await request(server, 'PUT', `${p()}/members/${await memberId(user)}`, { token: owner.token, body: { role } })).status, 200);

  /** Approved by `reviewer` (201, approved); then `lose` takes the reviewer's standing away; the request is open again, its apply is 409 naming the reviewer, nothing applied. */
  async function approvalThatNoLongerCounts(reviewer: TestUser, reviewerToken: string, lose: () => Promise<void>, value: number) {
    const before = await rollout();
    const cr = await opened({ changes: [setRollout(value)] });
    assert.equal((await approve(cr.id, reviewerToken)).status, 'approved');
    await lose();
    const now = await get(cr.id);
    assert.equal(now.status, 'open', 'open again: its one approval no longer counts');
    assert.deepEqual(now.approved_by, []);
    assert.equal((await listed(cr.id)).status, 'open');
    assert.deepEqual((await listed(cr.id)).approved_by, []);
    const refused = await apply(cr.id);
    assert.equal(refused.status, 409, refused.text);
    assert.match(refused.body.message, /needs 1 approval/);
    assert.ok(refused.body.message.includes(reviewer.email), `names ${reviewer.email}: ${refused.body.message}`);
    assert.equal(await rollout(), before, 'nothing applied');
    assert.equal((await get(cr.id)).status, 'open');
    return cr;
  }

  test('the approval of a member since removed does not count: the request is open again, apply is 409, nothing applied', async () => {
    const reviewer = await newUser(server, 'hold-removed');
    await addMember(server, owner, project.id, reviewer, 'editor');
    await approvalThatNoLongerCounts(reviewer, reviewer.token, () => removeMember(reviewer), 41);
  });

  test('the approval of a member since demoted to viewer does not count; promoted back to editor, it counts again', async () => {
    const reviewer = await newUser(server, 'hold-demoted');
    await addMember(server, owner, project.id, reviewer, 'editor');
    const cr = await approvalThatNoLongerCounts(reviewer, reviewer.token, () => setRole(reviewer, 'viewer'), 42);
    await setRole(reviewer, 'editor');
    assert.equal((await get(cr.id)).status, 'approved');
    const applied = await apply(cr.id);
    assert.equal(applied.status, 200, applied.text);
    assert.equal(await rollout(), 42);
  });

  test('API tokens: an approval given with a token since revoked, or by a token whose user was demoted, does not count', async () => {
    const reviewer = await newUser(server, 'hold-token');
    await addMember(server, owner, project.id, reviewer, 'editor');
    const token = await apiToken(server, reviewer, 'review bot');
    const tokenId = (await request(server, 'GET', '/api/tokens', { token: reviewer.token })).body.find((item: any) => item.name === 'review bot').id;
    await approvalThatNoLongerCounts(reviewer, token, async () => assert.equal((await request(server, 'DELETE', `/api/tokens/${tokenId}`, { token: reviewer.token })).status, 204), 43);

    // A project token with the editor role acts with the lower of its role and its user's current one.
    const created = await request(server, 'POST', '/api/tokens', { token: reviewer.token, body: { name: 'project bot', project_id: project.id, role: 'editor' } });
    assert.equal(created.status, 201, created.text);
    await approvalThatNoLongerCounts(reviewer, created.body.token, () => setRole(reviewer, 'viewer'), 44);
  });

  test('the approval of an account since deleted does not count', async () => {
    const reviewer = await newUser(server, 'hold-deleted');
    await addMember(server, owner, project.id, reviewer, 'editor');
    await approvalThatNoLongerCounts(reviewer, reviewer.token, async () => {
      const deleted = await request(server, 'DELETE', '/api/me', { token: reviewer.token, body: { password: reviewer.password } });
      assert.equal(deleted.status, 204, deleted.text);
    }, 45);
  });

  test('a scheduled change request whose author was removed fails at its time, changes nothing, and is audited', async () => {
    const author = await newUser(server, 'hold-author');
    await addMember(server, owner, project.id, author, 'editor');
    const before = await rollout();
    const cr = await opened({ changes: [setRollout(77)], apply_at: new Date(Date.now() + 4000).toISOString() }, author.token);
    assert.equal((await approve(cr.id, owner.token)).status, 'scheduled');
    await removeMember(author);
    assert.equal((await get(cr.id)).status, 'scheduled', "the owner's approval still counts");
    let settled: any;
    await eventually(async () => (settled = await get(cr.id)).status !== 'scheduled', 'the scheduled request settled');
    assert.equal(settled.status, 'failed');
    assert.match(settled.error, /its author \(.+\) is no longer an editor of the project/);
    assert.equal(await rollout(), before, 'nothing applied');
    const events = await auditEvents(server, owner.token, project.id);
    assert.ok(events.some((event) => event.action === 'change_request.failed' && event.resource_id === cr.id));
    assert.ok(!events.some((event) => event.change_request_id === cr.id && event.action === 'flag.updated'));
  });
});

describe('schedules stay fair between projects', () => {
  let server: TestServer;
  let user: TestUser;

  before(async () => {
    server = await startServer({}, { scheduler: { pollIntervalMs: 100 } });
    user = await newUser(server, 'fair');
  });
  after(() => server?.close());

  /** Runs the calls `width` at a time. */
  async function inParallel<T>(count: number, width: number, call: (index: number) => Promise<T>): Promise<T[]> {
    const results: T[] = [];
    for (let start = 0; start < count; start += width) results.push(...(await Promise.all(Array.from({ length: Math.min(width, count - start) }, (_, offset) => call(start + offset)))));
    return results;
  }
  const scheduleIn = (project: TestProject, flagId: string, at: string, change: unknown, envId = project.production) =>
    request(server, 'POST', `${flagsPath(project, envId)}/${flagId}/schedules`, { token: user.token, body: { at, change } });

  test("a project with 300 due schedules does not hold back another project's one: it is applied before most of them", async () => {
    const busy = await newProject(server, user, 'Busy');
    const quiet = await newProject(server, user, 'Quiet');
    const busyFlags = await inParallel(10, 10, (index) => newFlag(server, user, busy, { key: `busy-${index}` }));
    const quietFlag = await newFlag(server, user, quiet, { key: 'quiet' });
    const due = Date.now() + 15_000;
    const created = await inParallel(300, 10, (index) => scheduleIn(busy, busyFlags[index % 10]!.id, new Date(due).toISOString(), { rollout_percentage: index % 100 }));
    assert.deepEqual(created.filter((answer) => answer.status !== 201).map((answer) => answer.text), []);
    // Due a millisecond after the 300: a single queue by time applies it after all of them.
    const single = await scheduleIn(quiet, quietFlag.id, new Date(due + 1).toISOString(), { enabled: true });
    assert.equal(single.status, 201, single.text);
    assert.ok(Date.now() < due, 'every schedule was created before their time (else the test proves nothing)');

    const all = (project: TestProject) => request(server, 'GET', `/api/projects/${project.id}/schedules`, { token: user.token }).then((answer) => answer.body as any[]);
    await eventually(async () => (await all(busy)).every((item) => item.status !== 'pending') && (await all(quiet)).every((item) => item.status !== 'pending'), 'every schedule settled', 60_000);
    const busyDone = await all(busy);
    const [quietDone] = await all(quiet);
    assert.deepEqual([...new Set(busyDone.map((item) => item.status))], ['applied']);
    assert.equal(quietDone.status, 'applied', quietDone.error);
    const later = busyDone.filter((item) => Date.parse(item.applied_at) > Date.parse(quietDone.applied_at)).length;
    assert.ok(later >= 250, `the quiet project's schedule was applied before ${later} of the busy project's 300 (lag ${Date.parse(quietDone.applied_at) - Date.parse(quietDone.at)} ms)`);
  });

  test('a project holds at most 1,000 pending schedules, those of its change requests included: one more is 409', async () => {
    const capped = await newProject(server, user, 'Capped');
    const flags = await inParallel(10, 10, (index) => newFlag(server, user, capped, { key: `capped-${index}` }, capped.staging));
    const reviewedFlag = await newFlag(server, user, capped, { key: 'reviewed' });
    const reviewer = await newUser(server, 'fair-reviewer');
    await addMember(server, user, capped.id, reviewer, 'editor');
    assert.equal((await request(server, 'PUT', `/api/projects/${capped.id}/environments/${capped.production}`, { token: user.token, body: { approvals_required: 1 } })).status, 200);
    const later = new Date(Date.now() + 3_600_000).toISOString();
    const made = await inParallel(999, 20, (index) => scheduleIn(capped, flags[index % 10]!.id, later, { rollout_percentage: index % 100 }, capped.staging));
    assert.deepEqual(made.filter((answer) => answer.status !== 201).map((answer) => answer.text), []);

    // A request that schedules a change: checked at 999 pending, approved; then the 1,000th is taken directly.
    const requests = `/api/projects/${capped.id}/environments/${capped.production}/change-requests`;
    const scheduling = { title: 'Later', changes: [{ op: 'schedule.create', flag_id: reviewedFlag.id, at: later, change: { enabled: true } }] };
    const cr = await request(server, 'POST', requests, { token: user.token, body: scheduling });
    assert.equal(cr.status, 201, cr.text);
    assert.equal((await request(server, 'POST', `/api/projects/${capped.id}/change-requests/${cr.body.id}/reviews`, { token: reviewer.token, body: { decision: 'approve' } })).body.status, 'approved');
    assert.equal((await scheduleIn(capped, flags[0]!.id, later, { enabled: true }, capped.staging)).status, 201, 'the 1,000th');

    const refused = await scheduleIn(capped, flags[1]!.id, later, { enabled: true }, capped.staging);
    assert.equal(refused.status, 409, refused.text);
    assert.match(refused.body.message, /This project has 1000 pending schedules, the most it may have/);
    const applied = await request(server, 'POST', `/api/projects/${capped.id}/change-requests/${cr.body.id}/apply`, { token: user.token });
    assert.equal(applied.status, 409, applied.text);
    assert.match(applied.body.message, /schedule\.create.*1000 pending schedules/);
    assert.equal((await request(server, 'GET', `/api/projects/${capped.id}/change-requests/${cr.body.id}`, { token: user.token })).body.status, 'failed');
    const another = await request(server, 'POST', requests, { token: user.token, body: scheduling });
    assert.equal(another.status, 400, another.text);
    assert.match(another.body.message, /changes\[0\] \(schedule\.create\): This project has 1000 pending schedules/);
    const pending = (await request(server, 'GET', `/api/projects/${capped.id}/schedules?status=pending`, { token: user.token })).body;
    assert.equal(pending.length, 1000);

    // Cancelling one gives its place back.
    assert.equal((await request(server, 'DELETE', `${flagsPath(capped, capped.staging)}/${pending[0].flag_id}/schedules/${pending[0].id}`, { token: user.token })).status, 204);
    assert.equal((await scheduleIn(capped, flags[2]!.id, later, { enabled: true }, capped.staging)).status, 201);
  });
});
