/**
 * Members, roles and invitations (docs/api.md, Members; emailed through a real SMTP receiver):
 * adding a member is an invitation the invitee accepts or declines (docs/security.md); closed
 * sign-up; API tokens (shown once, stored hashed, scoped, capped, last use, revocation seen by
 * every instance). Proven addresses: proven-addresses.test.ts. The full route × caller
 * matrix is role-matrix.test.ts.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { addMember, eventually, flagsPath, newFlag, newProject, newUser, request, startServer, startTwoInstances, verifyEmail, type TestServer, type TestUser } from './harness.js';
import { linkToken } from './mailbox.js';

async function register(server: TestServer, email: string, invitation_token?: string) {
  return request(server, 'POST', '/auth/register', { body: { email, password: 'correct horse battery', invitation_token } });
}

/** The secret of the newest invitation link emailed to the address. */
async function invitationToken(server: TestServer, email: string): Promise<string> {
  const invitations = () => server.mailbox!.to(email).filter((mail) => mail.text.includes('/register?invitation='));
  await eventually(() => invitations().length > 0, `the invitation email to ${email}`);
  return linkToken(invitations().at(-1)!, '/register', 'invitation');
}

async function login(server: TestServer, email: string) {
  const answer = await request(server, 'POST', '/auth/login', { body: { email, password: 'correct horse battery' } });
  assert.equal(answer.status, 200, answer.text);
  return answer.body.token as string;
}

describe('members and invitations', () => {
  let server: TestServer;
  let owner: TestUser;

  before(async () => {
    server = await startServer({ PUBLIC_URL: 'http://guidon.test' });
    owner = await newUser(server, 'team-owner');
  });
  after(() => server?.close());

  test('an added member is invited, accepts, then sees the project with their role; the list puts owners first, then by email', async () => {
    const project = await newProject(server, owner);
    const zed = await newUser(server, 'zed');
    const amy = await newUser(server, 'amy');
    const members = `/api/projects/${project.id}/members`;
    const added = await request(server, 'POST', members, { token: owner.token, body: { email: zed.email.toUpperCase(), role: 'editor' } });
    assert.equal(added.status, 201, added.text);
    assert.deepEqual(Object.keys(added.body).sort(), ['created_at', 'email', 'id', 'role', 'status', 'user_id']);
    // A verified account is invited like anyone: adding it no longer makes it a member at once.
    assert.deepEqual([added.body.status, added.body.user_id, added.body.email], ['invited', null, zed.email]);
    assert.equal((await request(server, 'GET', `/api/projects/${project.id}`, { token: zed.token })).status, 404, 'not a member before accepting');
    const waiting = await request(server, 'GET', '/api/invitations', { token: zed.token });
    assert.equal(waiting.status, 200);
    assert.deepEqual(waiting.body, [{ id: added.body.id, project: { id: project.id, name: 'Test project' }, role: 'editor', invited_by: { email: owner.email }, created_at: added.body.created_at }]);
    const accepted = await request(server, 'POST', `/api/invitations/${added.body.id}/accept`, { token: zed.token });
    assert.equal(accepted.status, 200, accepted.text);
    assert.deepEqual([accepted.body.id, accepted.body.status, accepted.body.user_id, accepted.body.role], [added.body.id, 'active', zed.id, 'editor']);
    assert.deepEqual((await request(server, 'GET', '/api/invitations', { token: zed.token })).body, []);
    assert.equal((await request(server, 'POST', `/api/invitations/${added.body.id}/accept`, { token: zed.token })).status, 404, 'answered once');
    await addMember(server, owner, project.id, amy, 'viewer');

    const seen = await request(server, 'GET', `/api/projects/${project.id}`, { token: zed.token });
    assert.equal(seen.status, 200);
    assert.equal(seen.body.role, 'editor');
    assert.equal(seen.body.sdk_key, project.sdk_key, 'every member sees the SDK key');
    const listed = await request(server, 'GET', '/api/projects', { token: amy.token });
    assert.deepEqual(listed.body.map((p: any) => [p.id, p.role]), [[project.id, 'viewer']]);
    assert.equal((await request(server, 'GET', '/api/projects', { token: owner.token })).body.find((p: any) => p.id === project.id).role, 'owner');

    const list = await request(server, 'GET', members, { token: amy.token });
    assert.equal(list.status, 200);
    assert.deepEqual(list.body.map((m: any) => [m.email, m.role]), [[owner.email, 'owner'], [amy.email, 'viewer'], [zed.email, 'editor']]);
    const audit = await request(server, 'GET', `/api/projects/${project.id}/audit?resource_id=${added.body.id}`, { token: owner.token });
    assert.deepEqual(audit.body.items.map((e: any) => [e.action, e.actor.email]), [['member.joined', zed.email], ['member.added', owner.email]]);

    assert.equal((await request(server, 'POST', members, { token: owner.token, body: { email: zed.email, role: 'viewer' } })).status, 409);
    assert.equal((await request(server, 'POST', members, { token: owner.token, body: { email: 'x@example.com', role: 'admin' } })).status, 400);
    assert.equal((await request(server, 'POST', members, { token: owner.token, body: { email: 'not-an-email', role: 'viewer' } })).status, 400);
    assert.equal((await request(server, 'PUT', `${members}/${added.body.id}`, { token: owner.token, body: { role: 'boss' } })).status, 400);

    // A viewer may leave, not remove someone else; then the project is gone for them.
    const amyMember = list.body.find((m: any) => m.email === amy.email);
    assert.equal((await request(server, 'DELETE', `${members}/${added.body.id}`, { token: amy.token })).status, 403);
    assert.equal((await request(server, 'DELETE', `${members}/${amyMember.id}`, { token: amy.token })).status, 204);
    assert.equal((await request(server, 'GET', `/api/projects/${project.id}`, { token: amy.token })).status, 404);

    // Ownership can be handed over: promote zed, then the first owner may step down.
    const ownerMember = list.body.find((m: any) => m.email === owner.email);
    assert.equal((await request(server, 'PUT', `${members}/${ownerMember.id}`, { token: owner.token, body: { role: 'editor' } })).status, 409);
    assert.equal((await request(server, 'PUT', `${members}/${added.body.id}`, { token: owner.token, body: { role: 'owner' } })).status, 200);
    assert.equal((await request(server, 'PUT', `${members}/${ownerMember.id}`, { token: owner.token, body: { role: 'editor' } })).status, 200);
    assert.equal((await request(server, 'PUT', `/api/projects/${project.id}`, { token: owner.token, body: { name: 'no longer mine' } })).status, 403);
    assert.equal((await request(server, 'PUT', `/api/projects/${project.id}`, { token: zed.token, body: { name: 'mine now' } })).status, 200);
  });

  test('the answer does not tell who has an account, and only the invitee answers, once', async () => {
    const project = await newProject(server, owner, 'Consent');
    const verified = await newUser(server, 'has-account');
    const unverified = await newUser(server, 'unproven', { verified: false });
    const nobody = `no-account-${process.pid}@example.com`;
    const invite = (email: string) => request(server, 'POST', `/api/projects/${project.id}/members`, { token: owner.token, body: { email, role: 'viewer' } });
    const answers = [await invite(verified.email), await invite(unverified.email), await invite(nobody)];
    const shape = (answer: any) => ({ ...answer.body, id: '', email: '', created_at: '' });
    for (const answer of answers) assert.deepEqual([answer.status, shape(answer)], [201, shape(answers[2])], 'the same answer for an account, an unproven one and none');
    const [toVerified, toUnverified] = answers.map((answer) => answer.body.id as string);
    await eventually(() => server.mailbox!.to(verified.email).some((mail) => mail.text.includes('/register?invitation=')), 'an invitation email to the account too');

    // Someone else (a stranger, a member, the owner) cannot answer it; an unproven account has none to see.
    for (const other of [await newUser(server, 'stranger'), owner]) {
      assert.equal((await request(server, 'POST', `/api/invitations/${toVerified}/accept`, { token: other.token })).status, 404);
      assert.equal((await request(server, 'POST', `/api/invitations/${toVerified}/decline`, { token: other.token })).status, 404);
    }
    assert.deepEqual((await request(server, 'GET', '/api/invitations', { token: unverified.token })).body, [], 'whoever registered the address unproven sees nothing');
    assert.equal((await request(server, 'POST', `/api/invitations/${toUnverified}/accept`, { token: unverified.token })).status, 404);
    // Proving the address joins nothing by itself: the invitation then waits for an answer.
    await verifyEmail(server, unverified);
    assert.equal((await request(server, 'GET', `/api/projects/${project.id}`, { token: unverified.token })).status, 404);
    assert.deepEqual((await request(server, 'GET', '/api/invitations', { token: unverified.token })).body.map((i: any) => i.id), [toUnverified]);
    // A project token reaches its project only: it lists none and answers none.
    const scoped = await request(server, 'POST', '/api/tokens', { token: verified.token, body: { name: 'scoped', project_id: (await newProject(server, verified, 'Own')).id } });
    assert.deepEqual((await request(server, 'GET', '/api/invitations', { token: scoped.body.token })).body, []);
    assert.equal((await request(server, 'POST', `/api/invitations/${toVerified}/accept`, { token: scoped.body.token })).status, 403);

    // Declining removes the invitation (recorded as done by the invitee); it cannot be accepted after.
    assert.equal((await request(server, 'POST', `/api/invitations/${toVerified}/decline`, { token: verified.token })).status, 204);
    assert.equal((await request(server, 'POST', `/api/invitations/${toVerified}/accept`, { token: verified.token })).status, 404);
    assert.equal((await request(server, 'GET', `/api/projects/${project.id}`, { token: verified.token })).status, 404);
    const left = await request(server, 'GET', `/api/projects/${project.id}/members`, { token: owner.token });
    assert.ok(!left.body.some((m: any) => m.email === verified.email), 'gone from the members list');
    const audit = await request(server, 'GET', `/api/projects/${project.id}/audit?resource_id=${toVerified}`, { token: owner.token });
    assert.deepEqual(audit.body.items.map((e: any) => [e.action, e.actor.email]), [['member.removed', verified.email], ['member.added', owner.email]]);
  });

  test('an address without an account is invited by email; signing up through the link makes it a member', async () => {
    const project = await newProject(server, owner, 'Invites');
    const email = `newcomer-${process.pid}@example.com`;
    const invited = await request(server, 'POST', `/api/projects/${project.id}/members`, { token: owner.token, body: { email, role: 'editor' } });
    assert.equal(invited.status, 201);
    assert.equal(invited.body.status, 'invited');
    assert.equal(invited.body.user_id, null);

    const [mail] = await server.mailbox!.waitFor(email);
    assert.match(mail!.text, /http:\/\/guidon\.test\/register\?invitation=[\w-]{43,}/);
    assert.ok(mail!.text.includes('"Invites"'), 'the project is named, quoted');
    const link = await invitationToken(server, email);

    const registered = await register(server, email, link);
    assert.equal(registered.status, 201, registered.text);
    const token = await login(server, email);
    const seen = await request(server, 'GET', `/api/projects/${project.id}`, { token });
    assert.equal(seen.status, 200);
    assert.equal(seen.body.role, 'editor');
    const members = await request(server, 'GET', `/api/projects/${project.id}/members`, { token });
    const me = members.body.find((m: any) => m.email === email);
    assert.deepEqual([me.status, me.user_id, me.id], ['active', registered.body.id, invited.body.id]);
    const audit = await request(server, 'GET', `/api/projects/${project.id}/audit?resource_id=${invited.body.id}`, { token });
    assert.deepEqual(audit.body.items.map((e: any) => e.action), ['member.joined', 'member.added']);
  });

  test('a new account that signs up through one project\'s link joins that one only; an earlier invitation waits for an answer', async () => {
    const stranger = await newUser(server, 'stranger-owner');
    const theirs = await newProject(server, stranger, 'Security notice');
    const ours = await newProject(server, owner, 'Real team');
    const email = `joiner-${process.pid}@example.com`;
    const first = await request(server, 'POST', `/api/projects/${theirs.id}/members`, { token: stranger.token, body: { email, role: 'owner' } });
    await server.mailbox!.waitFor(email, 1);
    const second = await request(server, 'POST', `/api/projects/${ours.id}/members`, { token: owner.token, body: { email, role: 'viewer' } });
    await server.mailbox!.waitFor(email, 2);
    assert.equal((await register(server, email, await invitationToken(server, email))).status, 201);
    const token = await login(server, email);
    assert.deepEqual((await request(server, 'GET', '/api/projects', { token })).body.map((p: any) => p.name), ['Real team'], 'the newest link was the real team\'s');
    const waiting = (await request(server, 'GET', '/api/invitations', { token })).body;
    assert.deepEqual(waiting.map((i: any) => [i.id, i.project.name, i.invited_by.email]), [[first.body.id, 'Security notice', stranger.email]]);
    assert.equal(second.status, 201);
  });
});

describe('closed sign-up (ALLOW_REGISTRATION=false)', () => {
  let closed: TestServer;
  let owner: TestUser;

  before(async () => {
    closed = await startServer({ ALLOW_REGISTRATION: 'false' });
    // The first account of a closed instance: made by the operator, here straight in the database.
    const open = await startServer({ ALLOW_REGISTRATION: 'true' }, { database: { url: `${closed.config.database.kind === 'sqlite' ? 'sqlite:' + closed.config.database.path : closed.config.database.url}`, config: closed.config.database, drop: async () => undefined } });
    owner = await newUser(open, 'closed-owner');
    await open.close();
  });
  after(() => closed?.close());

  test('only an invited address may register, with its invitation link', async () => {
    const refused = await register(closed, 'stranger@example.com');
    assert.equal(refused.status, 403);
    assert.deepEqual(Object.keys(refused.body).sort(), ['error', 'message', 'statusCode']);
    const project = await request(closed, 'POST', '/api/projects', { token: owner.token, body: { name: 'Company' } });
    await request(closed, 'POST', `/api/projects/${project.body.id}/members`, { token: owner.token, body: { email: 'hire@example.com', role: 'viewer' } });
    const secret = await invitationToken(closed, 'hire@example.com');
    const invited = await register(closed, 'Hire@Example.com', secret);
    assert.equal(invited.status, 201, invited.text);
    assert.equal((await register(closed, 'hire2@example.com', secret)).status, 403);
    assert.equal((await register(closed, 'hire@example.com', secret)).status, 403, 'the invitation is used up');
    const token = await login(closed, 'hire@example.com');
    assert.equal((await request(closed, 'GET', `/api/projects/${project.body.id}`, { token })).body.role, 'viewer');
  });
});

describe('API tokens', () => {
  let a: TestServer;
  let b: TestServer;
  let close: (() => Promise<void>) | undefined;
  let owner: TestUser;
  let editor: TestUser;

  before(async () => {
    ({ a, b, close } = await startTwoInstances());
    owner = await newUser(a, 'token-owner');
    editor = await newUser(a, 'token-editor');
  });
  after(() => close?.());

  const create = (user: TestUser, body: Record<string, unknown>) => request(a, 'POST', '/api/tokens', { token: user.token, body });

  test('shown once, stored hashed, works as a bearer token; tokens cannot manage tokens', async () => {
    const created = await create(owner, { name: 'ci', expires_in_days: 30 });
    assert.equal(created.status, 201, created.text);
    const secret: string = created.body.token;
    assert.match(secret, /^gdn_[A-Za-z0-9_-]{43,}$/);
    assert.deepEqual(Object.keys(created.body).sort(), ['created_at', 'expires_at', 'id', 'last_used_at', 'name', 'project_id', 'role', 'token']);
    assert.equal(created.body.project_id, null);
    assert.equal(created.body.role, null);
    assert.ok(Math.abs(Date.parse(created.body.expires_at) - Date.now() - 30 * 86_400_000) < 60_000);

    const stored = JSON.stringify(await a.database.db.selectFrom('api_tokens').selectAll().execute());
    assert.ok(!stored.includes(secret) && !stored.includes(secret.slice(4)), 'only a hash is stored');
    const listed = await request(a, 'GET', '/api/tokens', { token: owner.token });
    assert.deepEqual(listed.body.map((t: any) => t.id), [created.body.id]);
    assert.ok(!('token' in listed.body[0]));

    assert.deepEqual((await request(b, 'GET', '/api/me', { token: secret })).body, { user_id: owner.id, email: owner.email, email_verified: true });
    assert.equal((await request(a, 'GET', '/api/tokens', { token: secret })).status, 403);
    assert.equal((await request(a, 'POST', '/api/tokens', { token: secret, body: { name: 'x' } })).status, 403);
    assert.equal((await request(a, 'DELETE', `/api/tokens/${created.body.id}`, { token: secret })).status, 403);
    assert.equal((await request(a, 'GET', '/api/me', { token: 'gdn_nonsense' })).status, 401);
    // A password reset bumps the login token version; API tokens are unaffected.
    await a.database.db.updateTable('users').set((eb) => ({ token_version: eb('token_version', '+', 1) })).where('id', '=', owner.id).execute();
    assert.equal((await request(a, 'GET', '/api/me', { token: secret })).status, 200);
    owner.token = await login(a, owner.email);
  });

  test('last_used_at: set on first use, then written at most once a minute', async () => {
    const created = await create(owner, { name: 'usage' });
    const lastUsed = async () => (await a.database.db.selectFrom('api_tokens').select('last_used_at').where('id', '=', created.body.id).executeTakeFirstOrThrow()).last_used_at;
    assert.equal(await lastUsed(), null);
    await request(a, 'GET', '/api/me', { token: created.body.token });
    const first = await lastUsed();
    assert.ok(first);
    for (let i = 0; i < 5; i++) await request(i % 2 ? a : b, 'GET', '/api/me', { token: created.body.token });
    assert.deepEqual(await lastUsed(), first, 'not rewritten within the minute');
    const twoMinutesAgo = new Date(Date.now() - 120_000).toISOString();
    await a.database.db.updateTable('api_tokens').set({ last_used_at: twoMinutesAgo }).where('id', '=', created.body.id).execute();
    await request(b, 'GET', '/api/me', { token: created.body.token });
    const refreshed = await lastUsed();
    assert.ok(Date.parse(String(refreshed instanceof Date ? refreshed.toISOString() : refreshed)) > Date.now() - 60_000);
    const shown = (await request(a, 'GET', '/api/tokens', { token: owner.token })).body.find((t: any) => t.id === created.body.id);
    assert.ok(Date.parse(shown.last_used_at) > Date.now() - 60_000);
  });

  test('a revoked token fails on its next use on every instance; an expired one fails too', async () => {
    const created = await create(owner, { name: 'doomed' });
    assert.equal((await request(b, 'GET', '/api/me', { token: created.body.token })).status, 200);
    assert.equal((await request(a, 'DELETE', `/api/tokens/${created.body.id}`, { token: owner.token })).status, 204);
    assert.equal((await request(b, 'GET', '/api/me', { token: created.body.token })).status, 401);
    assert.equal((await request(a, 'GET', '/api/me', { token: created.body.token })).status, 401);
    assert.equal((await request(a, 'DELETE', `/api/tokens/${created.body.id}`, { token: owner.token })).status, 404);
    assert.equal((await request(a, 'DELETE', `/api/tokens/${created.body.id}`, { token: editor.token })).status, 404);

    const expiring = await create(owner, { name: 'expiring', expires_in_days: 1 });
    await a.database.db.updateTable('api_tokens').set({ expires_at: new Date(Date.now() - 1000).toISOString() }).where('id', '=', expiring.body.id).execute();
    assert.equal((await request(a, 'GET', '/api/me', { token: expiring.body.token })).status, 401);
  });

  test('a project token reaches its project only, with at most its role', async () => {
    const project = await newProject(a, owner);
    const other = await newProject(a, owner, 'Other');
    await addMember(a, owner, project.id, editor, 'editor');
    const flag = await newFlag(a, owner, project, { key: 'scoped' });

    assert.equal((await create(editor, { name: 'too much', project_id: project.id, role: 'owner' })).status, 403);
    assert.equal((await create(editor, { name: 'not mine', project_id: other.id })).status, 404);
    assert.equal((await create(editor, { name: 'no project', role: 'viewer' })).status, 400);
    for (const days of [0, 3651, 1.5, '7']) assert.equal((await create(editor, { name: 'bad', expires_in_days: days })).status, 400);

    const readOnly = (await create(editor, { name: 'read', project_id: project.id, role: 'viewer' })).body.token;
    assert.equal((await request(b, 'GET', `${flagsPath(project)}/${flag.id}`, { token: readOnly })).status, 200);
    assert.equal((await request(b, 'POST', `${flagsPath(project)}/${flag.id}/toggle`, { token: readOnly })).status, 403);
    assert.equal((await request(b, 'GET', `/api/projects/${other.id}`, { token: readOnly })).status, 404);
    assert.deepEqual((await request(b, 'GET', '/api/projects', { token: readOnly })).body.map((p: any) => [p.id, p.role]), [[project.id, 'viewer']]);
    assert.equal((await request(b, 'POST', '/api/projects', { token: readOnly, body: { name: 'x' } })).status, 403);

    // Created without a role, a project token keeps its creator's role there, shown.
    const unnamed = await create(editor, { name: 'all', project_id: project.id });
    assert.equal(unnamed.body.role, 'editor');
    assert.equal((await request(a, 'GET', '/api/tokens', { token: editor.token })).body.find((t: any) => t.id === unnamed.body.id).role, 'editor');
    const uncapped = unnamed.body.token;
    assert.equal((await request(b, 'POST', `${flagsPath(project)}/${flag.id}/toggle`, { token: uncapped })).status, 200);
    assert.equal((await request(b, 'PUT', `/api/projects/${project.id}`, { token: uncapped, body: { name: 'x' } })).status, 403, 'an editor’s token stays an editor');

    // At most the lower of its role and its user's current one: a promotion does not widen it (it
    // did before: the token had no role), a demotion narrows it.
    const members = (await request(a, 'GET', `/api/projects/${project.id}/members`, { token: owner.token })).body;
    const editorMember = members.find((m: any) => m.email === editor.email);
    await request(a, 'PUT', `/api/projects/${project.id}/members/${editorMember.id}`, { token: owner.token, body: { role: 'owner' } });
    assert.equal((await request(b, 'PUT', `/api/projects/${project.id}`, { token: uncapped, body: { name: 'x' } })).status, 403, 'still an editor’s token');
    assert.equal((await request(b, 'GET', `/api/projects/${project.id}`, { token: uncapped })).body.role, 'editor');
    await request(a, 'PUT', `/api/projects/${project.id}/members/${editorMember.id}`, { token: owner.token, body: { role: 'viewer' } });
    assert.equal((await request(b, 'POST', `${flagsPath(project)}/${flag.id}/toggle`, { token: uncapped })).status, 403);
    await request(a, 'DELETE', `/api/projects/${project.id}/members/${editorMember.id}`, { token: owner.token });
    assert.equal((await request(b, 'GET', `/api/projects/${project.id}`, { token: uncapped })).status, 404);
  });
});
