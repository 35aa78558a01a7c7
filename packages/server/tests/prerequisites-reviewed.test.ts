/**
 * Prerequisites (docs/prerequisites.md) through the two other ways a change travels: webhooks
 * (docs/api.md, Webhooks: the body is the audit event, so it carries the prerequisites before and
 * after) and change requests (docs/change-management.md: checked at creation as the direct write
 * would check them, shown in the diff, applied, an approval withdrawn when they are edited). With a
 * real receiver on 127.0.0.1, on the database of the pass.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { evaluate, eventually, flagsPath, newFlag, newProject, newUser, request, startServer, type TestProject, type TestServer, type TestUser } from './harness.js';
import { addMember, auditEvents } from './team.js';
import { Receiver } from './webhook-receiver.js';

const FAST = { pollIntervalMs: 50, timeoutMs: 2000, retryDelaysMs: [50, 50, 50, 50] };
const VARIANTS = { variants: [{ key: 'a', value: 'A', weight: 500 }, { key: 'b', value: 'B', weight: 500 }], off_variant: 'a' };

let server: TestServer;
let receiver: Receiver;
let owner: TestUser;
let editor: TestUser;

before(async () => {
  receiver = await new Receiver().start();
  server = await startServer({ WEBHOOK_ALLOW_PRIVATE: 'true' }, { webhooks: FAST });
  [owner, editor] = [await newUser(server, 'pr-owner'), await newUser(server, 'pr-editor')];
});
after(async () => {
  await server?.close();
  await receiver?.close();
});

const api = (method: string, path: string, body?: unknown, token = owner.token) => request(server, method, path, { token, body });
async function hook(project: TestProject, tag: string) {
  const created = await api('POST', `/api/projects/${project.id}/webhooks`, { url: `${receiver.url}?${tag}`, events: ['flag.updated'] });
  assert.equal(created.status, 201, created.text);
}
/** The flag.updated bodies delivered for this project's webhook, parsed, in order. */
const delivered = (tag: string) => receiver.of('flag.updated').filter((received) => received.url.endsWith(`?${tag}`)).map((received) => JSON.parse(received.body));

describe('webhooks', () => {
  test('a flag update that changes prerequisites is delivered with them before and after, as its audit event', async () => {
    const project = await newProject(server, owner, 'Prerequisites hooked');
    await hook(project, 'direct');
    await newFlag(server, owner, project, { key: 'payments', enabled: true });
    await newFlag(server, owner, project, { key: 'experiment', enabled: true, ...VARIANTS });
    const checkout = await newFlag(server, owner, project, { key: 'checkout', enabled: true });
    const path = `${flagsPath(project)}/${checkout.id}`;

    assert.equal((await api('PUT', path, { prerequisites: [{ flag_key: 'payments' }] })).status, 200);
    assert.equal((await api('PUT', path, { prerequisites: [{ flag_key: 'experiment', variants: ['b'] }, { flag_key: 'payments', enabled: false }] })).status, 200);
    await eventually(() => delivered('direct').length === 2, 'two flag.updated deliveries');
    const [first, second] = [...delivered('direct')].sort((x, y) => x.after.prerequisites.length - y.after.prerequisites.length);
    assert.deepEqual([first.before.prerequisites, first.after.prerequisites], [[], [{ flag_key: 'payments', enabled: true }]]);
    assert.deepEqual(second.before.prerequisites, [{ flag_key: 'payments', enabled: true }]);
    assert.deepEqual(second.after.prerequisites, [{ flag_key: 'experiment', enabled: true, variants: ['b'] }, { flag_key: 'payments', enabled: false }]);
    // The body is the audit event, field for field.
    const audit = (await api('GET', `/api/projects/${project.id}/audit?resource_id=${checkout.id}`)).body.items.filter((event: { action: string }) => event.action === 'flag.updated');
    const byId = new Map(audit.map((event: { id: string }) => [event.id, event]));
    for (const body of [first, second]) assert.deepEqual(body, byId.get(body.id));
  });
});

describe('change requests', () => {
  let project: TestProject;
  const ids: Record<string, string> = {}; // production's flags
  const staged: Record<string, string> = {}; // staging's, the same flags, written directly

  before(async () => {
    project = await newProject(server, owner, 'Prerequisites reviewed');
    await addMember(server, owner, project.id, editor, 'editor');
    await hook(project, 'reviewed');
    for (const [store, envId] of [[ids, project.production], [staged, project.staging]] as const) {
      store.payments = (await newFlag(server, owner, project, { key: 'payments', enabled: true }, envId)).id;
      store.experiment = (await newFlag(server, owner, project, { key: 'experiment', enabled: true, ...VARIANTS }, envId)).id;
      store.checkout = (await newFlag(server, owner, project, { key: 'checkout', enabled: true }, envId)).id;
      const needs = await api('PUT', `${flagsPath(project, envId)}/${store.checkout}`, { prerequisites: [{ flag_key: 'payments' }] });
      assert.equal(needs.status, 200, needs.text);
    }
    const reviewed = await api('PUT', `/api/projects/${project.id}/environments/${project.production}`, { approvals_required: 1 });
    assert.equal(reviewed.status, 200, reviewed.text);
  });

  const p = () => `/api/projects/${project.id}`;
  const open = (changes: unknown[]) => api('POST', `${p()}/environments/${project.production}/change-requests`, { title: 'Prerequisites', changes });
  const review = (id: string) => api('POST', `${p()}/change-requests/${id}/reviews`, { decision: 'approve' }, editor.token);
  const apply = (id: string) => api('POST', `${p()}/change-requests/${id}/apply`);
  const flagNow = async (key: string) => (await api('GET', `${flagsPath(project)}/${ids[key]}`)).body;
  const setPrerequisites = (key: string, prerequisites: unknown[]) => ({ op: 'flag.update', flag_id: ids[key], set: { prerequisites } });

  test('checked at creation as the direct write checks them: 400 for self, a cycle, an unknown parent with variants, an unknown variant, with the direct route\'s message', async () => {
    const refused: [string, unknown[], RegExp][] = [
      ['payments', [{ flag_key: 'payments' }], /own prerequisite \(payments → payments\)/],
      ['payments', [{ flag_key: 'checkout' }], /a cycle \(payments → checkout → payments\)/],
      ['checkout', [{ flag_key: 'nowhere', variants: ['a'] }], /nowhere does not exist, so its variants cannot be named/],
      ['checkout', [{ flag_key: 'experiment', variants: ['z'] }], /experiment has no variant "z"/],
    ];
    const before = await auditEvents(server, owner.token, project.id);
    for (const [key, prerequisites, message] of refused) {
      const direct = await api('PUT', `${flagsPath(project, project.staging)}/${staged[key]}`, { prerequisites });
      assert.equal(direct.status, 400, direct.text);
      assert.match(direct.body.message, message);
      // The change request's second change, after one that is fine: named by index, the direct route's words.
      const answer = await open([{ op: 'flag.update', flag_id: ids.experiment, set: { name: 'Experiment' } }, setPrerequisites(key, prerequisites)]);
      assert.equal(answer.status, 400, answer.text);
      assert.equal(answer.body.message, `changes[1] (flag.update): ${direct.body.message}`);
    }
    // A chain made by two changes of one request is a cycle too: each is checked over the flags as the earlier ones leave them.
    const twoStep = await open([setPrerequisites('experiment', [{ flag_key: 'checkout' }]), setPrerequisites('payments', [{ flag_key: 'experiment' }])]);
    assert.equal(twoStep.status, 400, twoStep.text);
    assert.match(twoStep.body.message, /^changes\[1\] \(flag\.update\): prerequisites: a cycle \(payments → experiment → checkout → payments\)/);
    assert.deepEqual((await flagNow('payments')).prerequisites, [], 'nothing changed');
    assert.deepEqual((await flagNow('experiment')).prerequisites, []);
    assert.deepEqual((await flagNow('checkout')).prerequisites, [{ flag_key: 'payments', enabled: true }]);
    assert.equal((await auditEvents(server, owner.token, project.id)).length, before.length, 'no request opened');
  });

  test('a parent created earlier in the same request may be named with its variants', async () => {
    const answer = await open([
      { op: 'flag.create', flag: { name: 'Pricing', key: 'pricing', enabled: true, ...VARIANTS } },
      setPrerequisites('checkout', [{ flag_key: 'pricing', variants: ['b'] }]),
    ]);
    assert.equal(answer.status, 201, answer.text);
    assert.deepEqual(answer.body.diff[1].after.prerequisites, [{ flag_key: 'pricing', enabled: true, variants: ['b'] }]);
    const cancelled = await api('POST', `${p()}/change-requests/${answer.body.id}/cancel`);
    assert.equal(cancelled.status, 200, cancelled.text);
  });

  test('the diff shows them, an edit of them withdraws the approval, apply sets them (audited and delivered) and evaluation follows', async () => {
    const cr = await open([setPrerequisites('checkout', [{ flag_key: 'payments' }, { flag_key: 'experiment', variants: ['b'] }])]);
    assert.equal(cr.status, 201, cr.text);
    assert.deepEqual(cr.body.diff.map((item: any) => [item.op, item.resource_id]), [['flag.update', ids.checkout]]);
    assert.deepEqual(cr.body.diff[0].before.prerequisites, [{ flag_key: 'payments', enabled: true }]);
    assert.deepEqual(cr.body.diff[0].after.prerequisites, [{ flag_key: 'payments', enabled: true }, { flag_key: 'experiment', enabled: true, variants: ['b'] }]);
    assert.deepEqual((await flagNow('checkout')).prerequisites, [{ flag_key: 'payments', enabled: true }], 'foreseen, not made');

    assert.equal((await review(cr.body.id)).body.status, 'approved');
    // Only the variants move: still an edit of what applies, so the approval is withdrawn.
    const edited = await api('PUT', `${p()}/change-requests/${cr.body.id}`, { changes: [setPrerequisites('checkout', [{ flag_key: 'payments' }, { flag_key: 'experiment', variants: ['a'] }])] });
    assert.equal(edited.status, 200, edited.text);
    assert.equal(edited.body.status, 'open');
    assert.deepEqual(edited.body.approved_by, []);
    assert.deepEqual(edited.body.diff[0].after.prerequisites[1], { flag_key: 'experiment', enabled: true, variants: ['a'] });
    assert.equal((await apply(cr.body.id)).status, 409, 'the approved content is gone');
    assert.deepEqual((await flagNow('checkout')).prerequisites, [{ flag_key: 'payments', enabled: true }]);
    // An edit to a refused set is 400 and keeps the request as it was.
    const bad = await api('PUT', `${p()}/change-requests/${cr.body.id}`, { changes: [setPrerequisites('checkout', [{ flag_key: 'checkout' }])] });
    assert.equal(bad.status, 400, bad.text);
    assert.match(bad.body.message, /own prerequisite \(checkout → checkout\)/);

    assert.equal((await review(cr.body.id)).body.status, 'approved');
    const applied = await apply(cr.body.id);
    assert.equal(applied.status, 200, applied.text);
    const expected = [{ flag_key: 'payments', enabled: true }, { flag_key: 'experiment', enabled: true, variants: ['a'] }];
    assert.deepEqual((await flagNow('checkout')).prerequisites, expected);
    assert.deepEqual(applied.body.diff[0].after.prerequisites, expected);
    const event = (await auditEvents(server, owner.token, project.id)).find((item) => item.action === 'flag.updated' && item.change_request_id === cr.body.id);
    assert.deepEqual([event.before.prerequisites, event.after.prerequisites], [[{ flag_key: 'payments', enabled: true }], expected]);
    await eventually(() => delivered('reviewed').some((body) => body.id === event.id), 'the applied change delivered');
    assert.deepEqual(delivered('reviewed').find((body) => body.id === event.id), event, 'the webhook carries the audit event, prerequisites and all');

    // Evaluation follows: experiment serves a or b by bucket; checkout is on exactly where it serves a.
    let seen = 0;
    for (let i = 0; i < 20; i++) {
      const flags = (await evaluate(server, project.sdk_key, 'production', { user_id: `user-${i}` })).body.flags;
      if (flags.experiment!.variant === 'a') assert.equal(flags.checkout!.enabled, true, `user-${i}`);
      else {
        assert.deepEqual([flags.checkout!.enabled, flags.checkout!.reason], [false, 'Prerequisite experiment not met'], `user-${i}`);
        seen++;
      }
    }
    assert.ok(seen > 0 && seen < 20, 'both arms seen');
  });
});
