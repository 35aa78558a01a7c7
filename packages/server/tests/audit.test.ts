/**
 * docs/api.md, Audit log: every change under a project is one audit event, written with the change, with its
 * actor and the resource's API object before and after; credentials never appear; an update that
 * changes nothing and a write that fails leave none. Read with filters and cursor paging.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { addMember, newProject, newUser, request, startServer, storedRevision, type TestProject, type TestServer, type TestUser } from './harness.js';

describe('audit log', () => {
  let server: TestServer;
  let owner: TestUser;
  let editor: TestUser;
  let project: TestProject;
  const secrets: string[] = [];

  before(async () => {
    server = await startServer({ WEBHOOK_ALLOW_PRIVATE: 'true' });
    owner = await newUser(server, 'audit-owner');
    editor = await newUser(server, 'audit-editor');
    project = await newProject(server, owner, 'Audited');
    secrets.push(project.sdk_key);
    await addMember(server, owner, project.id, editor, 'editor');
  });
  after(() => server?.close());

  const p = () => `/api/projects/${project.id}`;

  async function allEvents(projectId = project.id): Promise<any[]> {
    const items: any[] = [];
    let cursor: string | null = null;
    do {
      const page: any = await request(server, 'GET', `/api/projects/${projectId}/audit?limit=500${cursor ? `&cursor=${cursor}` : ''}`, { token: owner.token });
      assert.equal(page.status, 200, page.text);
      items.push(...page.body.items);
      cursor = page.body.next_cursor;
    } while (cursor);
    return items;
  }

  /** Runs the write and returns the one event it left (failing if it left none or several). */
  async function oneEvent(write: () => Promise<{ status: number; text: string }>, status: number) {
    const before = await allEvents();
    const answer = await write();
    assert.equal(answer.status, status, answer.text);
    const afterwards = await allEvents();
    assert.equal(afterwards.length, before.length + 1, `one event, got ${afterwards.length - before.length}`);
    return afterwards[0];
  }

  const withoutRole = ({ role: _role, ...rest }: Record<string, unknown>) => rest;
  const redactedKey = (object: Record<string, unknown>) => ({ ...withoutRole(object), sdk_key: '[redacted]' });

  test('each kind of change is one event with actor, before and after', async () => {
    const asOwner = { token: owner.token };
    const asEditor = { token: editor.token };
    const events: any[] = [];
    const expectEvent = (event: any, fields: Record<string, unknown>, actor: TestUser) => {
      events.push(event);
      for (const [key, value] of Object.entries(fields)) assert.deepEqual(event[key], value, `${fields.action}: ${key}`);
      assert.deepEqual(event.actor, { user_id: actor.id, email: actor.email, token_id: null });
      assert.equal(event.project_id, project.id);
      assert.match(event.created_at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    };

    // The project's first events: created by its owner, then the editor invited, and joining (by accepting).
    const first = await allEvents();
    assert.deepEqual(first.map((event) => event.action), ['member.joined', 'member.added', 'project.created']);
    assert.deepEqual([first[0].actor.user_id, first[1].actor.user_id], [editor.id, owner.id]);
    assert.equal(first[2].before, null);
    assert.equal(first[2].after.sdk_key, '[redacted]');

    // Project
    const projectBefore = (await request(server, 'GET', p(), asOwner)).body;
    let answer: any;
    let event = await oneEvent(async () => (answer = await request(server, 'PUT', p(), { ...asOwner, body: { name: 'Audited 2' } })), 200);
    expectEvent(event, { action: 'project.updated', resource_type: 'project', resource_id: project.id, resource_key: null, environment_id: null, before: redactedKey(projectBefore), after: redactedKey(answer.body) }, owner);
    const beforeKey = answer.body;
    event = await oneEvent(async () => (answer = await request(server, 'POST', `${p()}/regenerate-key`, asOwner)), 200);
    secrets.push(answer.body.sdk_key);
    expectEvent(event, { action: 'project.key_regenerated', before: redactedKey(beforeKey), after: redactedKey(answer.body) }, owner);

    // Environment
    event = await oneEvent(async () => (answer = await request(server, 'POST', `${p()}/environments`, { ...asEditor, body: { name: 'QA', key: 'qa' } })), 201);
    const qa = answer.body;
    expectEvent(event, { action: 'environment.created', resource_type: 'environment', resource_id: qa.id, resource_key: 'qa', environment_id: qa.id, before: null, after: qa }, editor);
    event = await oneEvent(async () => (answer = await request(server, 'PUT', `${p()}/environments/${qa.id}`, { ...asEditor, body: { name: 'Quality' } })), 200);
    expectEvent(event, { action: 'environment.updated', before: qa, after: answer.body }, editor);
    const quality = answer.body;

    // Flag
    const flags = `${p()}/environments/${qa.id}/flags`;
    event = await oneEvent(async () => (answer = await request(server, 'POST', flags, { ...asEditor, body: { name: 'Beta', key: 'beta' } })), 201);
    const flag = answer.body;
    expectEvent(event, { action: 'flag.created', resource_type: 'flag', resource_id: flag.id, resource_key: 'beta', environment_id: qa.id, before: null, after: flag }, editor);
    event = await oneEvent(async () => (answer = await request(server, 'PUT', `${flags}/${flag.id}`, { ...asEditor, body: { rollout_percentage: 40 } })), 200);
    expectEvent(event, { action: 'flag.updated', before: flag, after: answer.body }, editor);
    const updated = answer.body;
    event = await oneEvent(async () => (answer = await request(server, 'POST', `${flags}/${flag.id}/toggle`, asEditor)), 200);
    expectEvent(event, { action: 'flag.toggled', before: updated, after: answer.body }, editor);
    assert.equal(event.after.enabled, true);
    const toggled = answer.body;

    // Rule
    const rules = `${flags}/${flag.id}/rules`;
    event = await oneEvent(async () => (answer = await request(server, 'POST', rules, { ...asEditor, body: { rule_type: 'email_domain', rule_value: '@Example.com' } })), 201);
    const rule = answer.body;
    expectEvent(event, { action: 'rule.created', resource_type: 'rule', resource_id: rule.id, resource_key: 'beta', environment_id: qa.id, before: null, after: rule }, editor);
    event = await oneEvent(async () => (answer = await request(server, 'PUT', `${rules}/${rule.id}`, { ...asEditor, body: { priority: 9 } })), 200);
    expectEvent(event, { action: 'rule.updated', before: rule, after: answer.body }, editor);
    const ruleAfter = answer.body;
    event = await oneEvent(() => request(server, 'DELETE', `${rules}/${rule.id}`, asEditor), 204);
    expectEvent(event, { action: 'rule.deleted', before: ruleAfter, after: null }, editor);

    // Members
    event = await oneEvent(async () => (answer = await request(server, 'POST', `${p()}/members`, { ...asOwner, body: { email: 'Someone@Example.com', role: 'viewer' } })), 201);
    const invited = answer.body;
    assert.equal(invited.status, 'invited');
    assert.equal(invited.email, 'someone@example.com');
    expectEvent(event, { action: 'member.added', resource_type: 'member', resource_id: invited.id, environment_id: null, before: null, after: invited }, owner);
    event = await oneEvent(async () => (answer = await request(server, 'PUT', `${p()}/members/${invited.id}`, { ...asOwner, body: { role: 'editor' } })), 200);
    expectEvent(event, { action: 'member.updated', before: invited, after: answer.body }, owner);
    const promoted = answer.body;
    event = await oneEvent(() => request(server, 'DELETE', `${p()}/members/${invited.id}`, asOwner), 204);
    expectEvent(event, { action: 'member.removed', before: promoted, after: null }, owner);

    // Webhooks: the secret is in the create answer only.
    event = await oneEvent(async () => (answer = await request(server, 'POST', `${p()}/webhooks`, { ...asOwner, body: { url: 'http://127.0.0.1:9/hook', enabled: false } })), 201);
    const { secret, ...webhook } = answer.body;
    secrets.push(secret);
    // The URL reduced to its origin (scheme, host and port), in resource_key, before and after.
    const origin = 'http://127.0.0.1:9';
    const reduced = (object: Record<string, unknown>) => ({ ...object, url: origin });
    expectEvent(event, { action: 'webhook.created', resource_type: 'webhook', resource_id: webhook.id, resource_key: origin, before: null, after: reduced(webhook) }, owner);
    event = await oneEvent(async () => (answer = await request(server, 'PUT', `${p()}/webhooks/${webhook.id}`, { ...asOwner, body: { events: ['flag.toggled'] } })), 200);
    expectEvent(event, { action: 'webhook.updated', resource_key: origin, before: reduced(webhook), after: reduced(answer.body) }, owner);
    const webhookAfter = answer.body;
    event = await oneEvent(() => request(server, 'DELETE', `${p()}/webhooks/${webhook.id}`, asOwner), 204);
    expectEvent(event, { action: 'webhook.deleted', resource_key: origin, before: reduced(webhookAfter), after: null }, owner);

    // Deletions last: the flag's events stay after the flag is gone.
    event = await oneEvent(() => request(server, 'DELETE', `${flags}/${flag.id}`, asEditor), 204);
    expectEvent(event, { action: 'flag.deleted', before: toggled, after: null }, editor);
    event = await oneEvent(() => request(server, 'DELETE', `${p()}/environments/${qa.id}`, asEditor), 204);
    expectEvent(event, { action: 'environment.deleted', before: quality, after: null }, editor);
    const ofFlag = await request(server, 'GET', `${p()}/audit?resource_id=${flag.id}`, asOwner);
    assert.deepEqual(ofFlag.body.items.map((item: any) => item.action), ['flag.deleted', 'flag.toggled', 'flag.updated', 'flag.created']);

    // Newest first, every action seen once.
    const all = await allEvents();
    assert.deepEqual(all.slice(0, events.length).reverse().map((item) => item.id), events.map((item) => item.id));
  });

  test('a PUT that only switches a flag on or off is a flag.toggled, like POST …/toggle', async () => {
    const asEditor = { token: editor.token };
    const flags = `${p()}/environments/${project.production}/flags`;
    const created = await request(server, 'POST', flags, { ...asEditor, body: { name: 'Switched', key: 'switched' } });
    let answer: any;
    const event = await oneEvent(async () => (answer = await request(server, 'PUT', `${flags}/${created.body.id}`, { ...asEditor, body: { enabled: true, name: 'Switched' } })), 200);
    assert.equal(event.action, 'flag.toggled');
    assert.deepEqual([event.before.enabled, event.after], [false, answer.body]);
    const both = await oneEvent(() => request(server, 'PUT', `${flags}/${created.body.id}`, { ...asEditor, body: { enabled: false, rollout_percentage: 5 } }), 200);
    assert.equal(both.action, 'flag.updated', 'a change of more than the switch is an update');
  });

  test('a change made with an API token names the token', async () => {
    const token = await request(server, 'POST', '/api/tokens', { token: owner.token, body: { name: 'ci', project_id: project.id, role: 'editor' } });
    secrets.push(token.body.token);
    const event = await oneEvent(() => request(server, 'POST', `${p()}/environments/${project.production}/flags`, { token: token.body.token, body: { name: 'Via token', key: 'via-token' } }), 201);
    assert.deepEqual(event.actor, { user_id: owner.id, email: owner.email, token_id: token.body.id });
    const byActor = await request(server, 'GET', `${p()}/audit?actor_id=${owner.id}&resource_type=flag`, { token: owner.token });
    assert.ok(byActor.body.items.some((item: any) => item.id === event.id));
    assert.ok(byActor.body.items.every((item: any) => item.actor.user_id === owner.id && item.resource_type === 'flag'));
  });

  test('an update that changes nothing records nothing; a failed write records nothing and bumps nothing', async () => {
    const flags = `${p()}/environments/${project.production}/flags`;
    const flag = (await request(server, 'POST', flags, { token: editor.token, body: { name: 'Same', key: 'same', rollout_percentage: 10 } })).body;
    const events = (await allEvents()).length;
    const revision = () => storedRevision(server, project.id);
    const revisionBefore = await revision();

    assert.equal((await request(server, 'PUT', `${flags}/${flag.id}`, { token: editor.token, body: { name: 'Same', rollout_percentage: 10 } })).status, 200);
    assert.equal((await request(server, 'PUT', p(), { token: owner.token, body: { name: 'Audited 2' } })).status, 200);
    assert.equal((await request(server, 'PUT', `${p()}/environments/${project.production}`, { token: editor.token, body: { key: 'production' } })).status, 200);
    assert.equal((await allEvents()).length, events, 'no event for updates that change nothing');

    const failures: [string, string, unknown, number][] = [
      ['POST', flags, { name: 'Dup', key: 'same' }, 409],
      ['PUT', `${flags}/${flag.id}`, { key: 'via-token' }, 409],
      ['POST', `${flags}/${flag.id}/rules`, { rule_type: 'user_email', rule_value: 'not an email' }, 400],
      ['POST', `${p()}/environments`, { name: 'Prod again', key: 'production' }, 409],
      ['PUT', `${p()}/environments/${project.production}`, { key: 'renamed' }, 400],
      ['POST', `${p()}/members`, { email: editor.email, role: 'viewer' }, 409],
      ['DELETE', `${flags}/00000000-0000-4000-8000-000000000000`, undefined, 404],
    ];
    for (const [method, path, body, status] of failures) {
      const answer = await request(server, method, path, { token: owner.token, body });
      assert.equal(answer.status, status, `${method} ${path}: ${answer.text}`);
    }
    const owners = (await request(server, 'GET', `${p()}/members`, { token: owner.token })).body.filter((member: any) => member.role === 'owner');
    assert.equal(owners.length, 1);
    assert.equal((await request(server, 'PUT', `${p()}/members/${owners[0].id}`, { token: owner.token, body: { role: 'viewer' } })).status, 409, 'the last owner stays');
    assert.equal((await request(server, 'DELETE', `${p()}/members/${owners[0].id}`, { token: owner.token })).status, 409, 'the last owner cannot leave');
    assert.equal((await allEvents()).length, events, 'no event for a failed write');
    const revisionAfter = await revision();
    // The no-op updates above did run as writes (revision moved by them); the failures added nothing more.
    assert.equal(revisionAfter - revisionBefore, 3);
  });

  test('SDK keys, webhook secrets and token secrets never appear in the log', async () => {
    const text = JSON.stringify(await allEvents());
    assert.ok(secrets.length >= 4);
    for (const secret of secrets) assert.ok(!text.includes(secret), 'a secret is in the audit log');
    assert.ok(text.includes('"sdk_key":"[redacted]"'));
    const stored = JSON.stringify(await server.database.db.selectFrom('audit_events').selectAll().execute());
    for (const secret of secrets) assert.ok(!stored.includes(secret), 'a secret is stored in audit_events');
  });

  test('filters and cursor paging', async () => {
    const all = await allEvents();
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const page: any = await request(server, 'GET', `${p()}/audit?limit=3${cursor ? `&cursor=${cursor}` : ''}`, { token: editor.token });
      assert.equal(page.status, 200, page.text);
      assert.ok(page.body.items.length <= 3);
      seen.push(...page.body.items.map((item: any) => item.id));
      cursor = page.body.next_cursor;
    } while (cursor);
    assert.deepEqual(seen, all.map((item) => item.id));

    const flagsOnly = await request(server, 'GET', `${p()}/audit?resource_type=flag`, { token: owner.token });
    assert.ok(flagsOnly.body.items.length > 0 && flagsOnly.body.items.every((item: any) => item.resource_type === 'flag'));
    const inProduction = await request(server, 'GET', `${p()}/audit?environment_id=${project.production}`, { token: owner.token });
    assert.ok(inProduction.body.items.length > 0 && inProduction.body.items.every((item: any) => item.environment_id === project.production));
    const byEditor = await request(server, 'GET', `${p()}/audit?actor_id=${editor.id}`, { token: owner.token });
    assert.ok(byEditor.body.items.length > 0 && byEditor.body.items.every((item: any) => item.actor.user_id === editor.id));
    assert.equal((await request(server, 'GET', `${p()}/audit?limit=1`, { token: owner.token })).body.items.length, 1);

    for (const query of ['limit=0', 'limit=501', 'limit=abc', 'cursor=nonsense', `cursor=${Buffer.from('["x","y"]').toString('base64url')}`, 'resource_type=user', 'resource_id=123']) {
      const answer = await request(server, 'GET', `${p()}/audit?${query}`, { token: owner.token });
      assert.equal(answer.status, 400, `${query}: ${answer.text}`);
    }
  });

  test('deleting the project removes its events', async () => {
    const doomed = await newProject(server, owner, 'Doomed');
    await request(server, 'POST', `/api/projects/${doomed.id}/environments`, { token: owner.token, body: { name: 'X', key: 'x' } });
    assert.equal((await allEvents(doomed.id)).length, 2);
    assert.equal((await request(server, 'DELETE', `/api/projects/${doomed.id}`, { token: owner.token })).status, 204);
    const left = await server.database.db.selectFrom('audit_events').select('id').where('project_id', '=', doomed.id).execute();
    assert.equal(left.length, 0);
  });
});
