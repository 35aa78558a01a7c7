/**
 * Proven addresses, invitations and log out (docs/api.md: Account, Members, API tokens; docs/adr/0011-proven-addresses.md): nobody takes over a project by
 * registering an address. Verified addresses (an emailed single-use link), invitations with a
 * secret single-use link, memberships only for proven addresses, API tokens only for verified
 * accounts, closed sign-up without an oracle, invitation limits and a fixed email, leaving with a
 * capped token, and log out seen by every instance. Emails go to a real SMTP server of the test.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, randomUUID } from 'node:crypto';
import { Migrator, type Kysely } from 'kysely';
import { openDatabase } from '../src/db/database.js';
import { migrations } from '../src/db/migrations.js';
import { hashPassword } from '../src/modules/accounts/passwords.js';
import { newProject, newFlag, flagsPath, newUser, request, startServer, startTwoInstances, verifyEmail, eventually, type TestServer, type TestUser } from './harness.js';
import { linkToken, type Mail, type Mailbox } from './mailbox.js';
import { createTestDatabase } from './test-database.js';

const PASSWORD = 'correct horse battery';
let counter = 0;
const fresh = (prefix: string) => `${prefix}-${++counter}-${process.pid}@example.com`;

const register = (server: TestServer, email: string, extra: Record<string, unknown> = {}) =>
  request(server, 'POST', '/auth/register', { body: { email, password: PASSWORD, ...extra } });

async function login(server: TestServer, email: string, password = PASSWORD): Promise<string> {
  const answer = await request(server, 'POST', '/auth/login', { body: { email, password } });
  assert.equal(answer.status, 200, answer.text);
  return answer.body.token;
}

/** The invitee accepts every invitation waiting for them (the projects page's Accept). */
async function acceptAll(server: TestServer, token: string): Promise<void> {
  for (const invitation of (await request(server, 'GET', '/api/invitations', { token })).body) {
    assert.equal((await request(server, 'POST', `/api/invitations/${invitation.id}/accept`, { token })).status, 200);
  }
}

/** The newest email to the address whose text carries a link to `path`. */
async function mailWithLink(mailbox: Mailbox, address: string, path: string): Promise<Mail> {
  const matching = () => mailbox.to(address).filter((mail) => mail.text.includes(`${path}?`));
  await eventually(() => matching().length > 0, `an email to ${address} with a ${path} link`);
  return matching().at(-1)!;
}

const invitationToken = async (mailbox: Mailbox, address: string) => linkToken(await mailWithLink(mailbox, address, '/register'), '/register', 'invitation');

/** Resets the password through the emailed link (which proves the address). */
async function resetThroughEmail(server: TestServer, email: string, newPassword: string): Promise<void> {
  const before = server.mailbox!.to(email).filter((mail) => mail.text.includes('/reset-password?')).length;
  assert.equal((await request(server, 'POST', '/auth/forgot-password', { body: { email } })).status, 200);
  await eventually(() => server.mailbox!.to(email).filter((mail) => mail.text.includes('/reset-password?')).length > before, 'the reset email');
  const token = linkToken(await mailWithLink(server.mailbox!, email, '/reset-password'), '/reset-password');
  const reset = await request(server, 'POST', '/auth/reset-password', { body: { token, newPassword } });
  assert.equal(reset.status, 200, reset.text);
}

const invite = (server: TestServer, owner: TestUser, projectId: string, email: string, role = 'editor') =>
  request(server, 'POST', `/api/projects/${projectId}/members`, { token: owner.token, body: { email, role } });

describe('verified addresses (docs/api.md, Account)', () => {
  let server: TestServer;
  before(async () => {
    server = await startServer({ PUBLIC_URL: 'http://guidon.test' });
  });
  after(() => server?.close());

  test('a new account logs in at once, unverified; the emailed link verifies it once; /api/me says which', async () => {
    const email = fresh('verify');
    const registered = await register(server, email);
    assert.equal(registered.status, 201);
    assert.deepEqual(Object.keys(registered.body).sort(), ['email', 'id'], 'registration answers as before');
    const token = await login(server, email);
    assert.deepEqual((await request(server, 'GET', '/api/me', { token })).body, { user_id: registered.body.id, email, email_verified: false });

    const mail = await mailWithLink(server.mailbox!, email, '/verify-email');
    assert.match(mail.text, /http:\/\/guidon\.test\/verify-email\?token=[\w-]{43,}/, 'the link is <PUBLIC_URL>/verify-email?token=…, 32 random bytes or more');
    const secret = linkToken(mail, '/verify-email');
    const stored = JSON.stringify(await server.database.db.selectFrom('email_verifications').selectAll().execute());
    assert.ok(!stored.includes(secret), 'only a hash of the token is stored');

    assert.equal((await request(server, 'POST', '/auth/verify-email', { body: { token: 'not-a-token' } })).status, 400);
    const verified = await request(server, 'POST', '/auth/verify-email', { body: { token: secret } });
    assert.equal(verified.status, 200, verified.text);
    assert.equal((await request(server, 'GET', '/api/me', { token })).body.email_verified, true);
    const again = await request(server, 'POST', '/auth/verify-email', { body: { token: secret } });
    assert.equal(again.status, 400, 'single use');
    assert.deepEqual(Object.keys(again.body).sort(), ['error', 'message', 'statusCode']);
  });

  test('an expired link is 400 and verifies nothing', async () => {
    const email = fresh('expired');
    await register(server, email);
    const secret = linkToken(await mailWithLink(server.mailbox!, email, '/verify-email'), '/verify-email');
    await server.database.db.updateTable('email_verifications').set({ expires_at: new Date(Date.now() - 1000).toISOString() }).execute();
    assert.equal((await request(server, 'POST', '/auth/verify-email', { body: { token: secret } })).status, 400);
    assert.equal((await request(server, 'GET', '/api/me', { token: await login(server, email) })).body.email_verified, false);
  });

  test('resend-verification: 202 with a new link, at most 5 an hour (429 with Retry-After); needs a login', async () => {
    const user = await newUser(server, 'resend', { verified: false });
    await mailWithLink(server.mailbox!, user.email, '/verify-email');
    for (let i = 1; i <= 5; i++) assert.equal((await request(server, 'POST', '/auth/resend-verification', { token: user.token })).status, 202);
    const refused = await request(server, 'POST', '/auth/resend-verification', { token: user.token });
    assert.equal(refused.status, 429);
    assert.ok(Number(refused.headers.get('retry-after')) >= 1 && Number(refused.headers.get('retry-after')) <= 3600);
    await eventually(() => server.mailbox!.to(user.email).length === 6, 'the registration email and 5 more');
    assert.equal((await request(server, 'POST', '/auth/resend-verification')).status, 401);
    // Any of the links works (each is single use); the newest one here.
    await verifyEmail(server, user);
    assert.equal((await request(server, 'GET', '/api/me', { token: user.token })).body.email_verified, true);
  });

  test('an unverified account uses its own projects and evaluates, but cannot create, list or delete API tokens', async () => {
    const user = await newUser(server, 'unverified', { verified: false });
    const project = await newProject(server, user);
    const flag = await newFlag(server, user, project, { key: 'mine', enabled: true, rollout_percentage: 100 });
    assert.equal((await request(server, 'POST', `${flagsPath(project)}/${flag.id}/toggle`, { token: user.token })).status, 200);
    const evaluated = await request(server, 'POST', '/sdk/v1/evaluate', { sdkKey: project.sdk_key, body: { environment: 'production', context: {} } });
    assert.equal(evaluated.status, 200);
    for (const [method, path, body] of [['POST', '/api/tokens', { name: 'ci' }], ['GET', '/api/tokens', undefined], ['DELETE', `/api/tokens/${project.id}`, undefined]] as const) {
      const refused = await request(server, method, path, { token: user.token, body });
      assert.equal(refused.status, 403, `${method} ${path}`);
      assert.match(refused.body.message, /verify/i);
    }
    assert.equal((await server.database.db.selectFrom('api_tokens').select('id').where('user_id', '=', user.id).execute()).length, 0);
  });

  test('completing a password reset verifies the address', async () => {
    const user = await newUser(server, 'reset-verifies', { verified: false });
    await resetThroughEmail(server, user.email, 'a brand new password');
    const token = await login(server, user.email, 'a brand new password');
    assert.equal((await request(server, 'GET', '/api/me', { token })).body.email_verified, true);
    assert.equal((await request(server, 'POST', '/api/tokens', { token, body: { name: 'ci' } })).status, 201);
  });
});

describe('finding 1: invitations need the invitation’s secret or a proven address', () => {
  let server: TestServer;
  let owner: TestUser;
  before(async () => {
    server = await startServer({ PUBLIC_URL: 'http://guidon.test' });
    owner = await newUser(server, 'inviting-owner');
  });
  after(() => server?.close());

  test('hijack: registering an invited address does not join the project; only its link or its verification does', async () => {
    const project = await newProject(server, owner, 'Payroll');
    const newhire = fresh('newhire');
    const invited = await invite(server, owner, project.id, newhire, 'owner');
    assert.equal(invited.status, 201);
    assert.deepEqual([invited.body.status, invited.body.user_id], ['invited', null]);

    // The attacker registers the address first: an account, but no membership and no key.
    assert.equal((await register(server, newhire)).status, 201);
    const attacker = await login(server, newhire);
    assert.deepEqual((await request(server, 'GET', '/api/projects', { token: attacker })).body, []);
    assert.equal((await request(server, 'GET', `/api/projects/${project.id}`, { token: attacker })).status, 404);
    assert.equal((await request(server, 'POST', `/api/projects/${project.id}/regenerate-key`, { token: attacker })).status, 404);
    const members = await request(server, 'GET', `/api/projects/${project.id}/members`, { token: owner.token });
    assert.deepEqual(members.body.find((m: any) => m.email === newhire).status, 'invited');

    // The one who reads the address's mail takes the account back (a reset proves the address): then she may accept.
    await resetThroughEmail(server, newhire, 'the real newhire');
    assert.equal((await request(server, 'GET', '/api/me', { token: attacker })).status, 401, 'the reset ends the attacker’s session');
    const session = await login(server, newhire, 'the real newhire');
    assert.equal((await request(server, 'GET', `/api/projects/${project.id}`, { token: session })).status, 404, 'proving the address joins nothing by itself');
    await acceptAll(server, session);
    assert.equal((await request(server, 'GET', `/api/projects/${project.id}`, { token: session })).body.role, 'owner');
  });

  test('the invitation link: sign-up with its token verifies the address and joins at once; the token works once', async () => {
    const project = await newProject(server, owner, 'Shop');
    const email = fresh('linked');
    const invited = await invite(server, owner, project.id, email, 'viewer');
    const mail = await mailWithLink(server.mailbox!, email, '/register');
    assert.match(mail.text, /http:\/\/guidon\.test\/register\?invitation=[\w-]{43,}(\s|$)/, 'the link is <PUBLIC_URL>/register?invitation=<secret>, not the address');
    assert.ok(!mail.text.includes(`register?email=`));
    const token = linkToken(mail, '/register', 'invitation');
    const stored = JSON.stringify(await server.database.db.selectFrom('invitation_tokens').selectAll().execute());
    assert.ok(!stored.includes(token), 'only a hash of the invitation secret is stored');

    assert.equal((await register(server, fresh('other'), { invitation_token: token })).status, 400, 'the token is for its address only');
    const registered = await register(server, email.toUpperCase(), { invitation_token: token });
    assert.equal(registered.status, 201, registered.text);
    const session = await login(server, email);
    assert.deepEqual((await request(server, 'GET', '/api/me', { token: session })).body, { user_id: registered.body.id, email, email_verified: true });
    assert.equal((await request(server, 'GET', `/api/projects/${project.id}`, { token: session })).body.role, 'viewer');
    const me = (await request(server, 'GET', `/api/projects/${project.id}/members`, { token: session })).body.find((m: any) => m.email === email);
    assert.deepEqual([me.id, me.status, me.user_id], [invited.body.id, 'active', registered.body.id]);
    const audit = await request(server, 'GET', `/api/projects/${project.id}/audit?resource_id=${invited.body.id}`, { token: session });
    assert.deepEqual(audit.body.items.map((e: any) => e.action), ['member.joined', 'member.added']);
    assert.equal(server.mailbox!.to(email).filter((m) => m.text.includes('/verify-email?')).length, 0, 'no verification email: the link proved the address');

    assert.equal((await register(server, fresh('again'), { invitation_token: token })).status, 400, 'used once');
    assert.equal((await register(server, email, { invitation_token: token })).status, 400);
  });

  test('a new invitation to the address replaces the secret; an expired one does not work', async () => {
    const first = await newProject(server, owner, 'First');
    const second = await newProject(server, owner, 'Second');
    const email = fresh('twice');
    await invite(server, owner, first.id, email);
    const old = await invitationToken(server.mailbox!, email);
    await invite(server, owner, second.id, email);
    await eventually(() => server.mailbox!.to(email).length === 2, 'the second invitation');
    const current = await invitationToken(server.mailbox!, email);
    assert.notEqual(current, old);
    assert.equal((await register(server, email, { invitation_token: old })).status, 400);

    await server.database.db.updateTable('invitation_tokens').set({ expires_at: new Date(Date.now() - 1000).toISOString() }).where('email', '=', email).execute();
    assert.equal((await register(server, email, { invitation_token: current })).status, 400, 'an invitation link lasts 7 days');
    // Both invitations still wait: after sign-up and verification, the account accepts them.
    assert.equal((await register(server, email)).status, 201);
    await verifyEmail(server, { email });
    const session = await login(server, email);
    assert.deepEqual((await request(server, 'GET', '/api/invitations', { token: session })).body.map((i: any) => i.project.name), ['Second', 'First']);
    await acceptAll(server, session);
    assert.deepEqual((await request(server, 'GET', '/api/projects', { token: session })).body.map((p: any) => p.name).sort(), ['First', 'Second']);
  });

  test('an unverified account is invited like any address; verifying its address lets it accept, not more', async () => {
    const project = await newProject(server, owner, 'Mixed');
    const unverified = await newUser(server, 'waiting', { verified: false });
    const toUnverified = await invite(server, owner, project.id, unverified.email);
    assert.deepEqual([toUnverified.status, toUnverified.body.status, toUnverified.body.user_id], [201, 'invited', null]);
    assert.equal((await request(server, 'GET', `/api/projects/${project.id}`, { token: unverified.token })).status, 404, 'its invitation waits');
    // The unverified account follows its invitation link: it verifies the address (sign-up is 409, the account exists), then accepts.
    await verifyEmail(server, unverified);
    assert.equal((await request(server, 'GET', `/api/projects/${project.id}`, { token: unverified.token })).status, 404);
    await acceptAll(server, unverified.token);
    assert.equal((await request(server, 'GET', `/api/projects/${project.id}`, { token: unverified.token })).body.role, 'editor');
  });

  test('pre-claim: an attacker who registers alice@ first gets no token, and never Alice’s memberships', async () => {
    const project = await newProject(server, owner, 'Production');
    const alice = fresh('alice');
    // The attacker registers Alice's address and tries to keep a way in.
    assert.equal((await register(server, alice, { password: 'attacker password' })).status, 201);
    const attacker = await login(server, alice, 'attacker password');
    const token = await request(server, 'POST', '/api/tokens', { token: attacker, body: { name: 'backdoor' } });
    assert.equal(token.status, 403, 'an unverified account creates no API token');
    // Alice is refused at sign-up, so she resets the password (the emailed link proves the address).
    assert.equal((await register(server, alice)).status, 409);
    await resetThroughEmail(server, alice, 'alice real password');
    assert.equal((await request(server, 'GET', '/api/me', { token: attacker })).status, 401, 'the reset ends the attacker’s session');
    // An owner invites her as editor: she accepts, and only she can.
    assert.equal((await invite(server, owner, project.id, alice)).body.status, 'invited');
    const aliceSession = await login(server, alice, 'alice real password');
    await acceptAll(server, aliceSession);
    assert.equal((await request(server, 'GET', `/api/projects/${project.id}`, { token: aliceSession })).body.role, 'editor');
    assert.equal((await request(server, 'POST', flagsPath(project), { token: attacker, body: { name: 'x', key: 'pwned' } })).status, 401);
    assert.equal((await request(server, 'POST', '/auth/login', { body: { email: alice, password: 'attacker password' } })).status, 401);
    assert.deepEqual(await server.database.db.selectFrom('api_tokens').select('id').where('name', '=', 'backdoor').execute(), []);
  });

  test('an account that never proves its address never joins, however often it is invited', async () => {
    const project = await newProject(server, owner, 'Guarded');
    const squatter = await newUser(server, 'squatter', { verified: false });
    await invite(server, owner, project.id, squatter.email, 'owner');
    const login2 = await login(server, squatter.email);
    for (const token of [squatter.token, login2]) {
      assert.equal((await request(server, 'GET', `/api/projects/${project.id}`, { token })).status, 404);
      assert.deepEqual((await request(server, 'GET', '/api/projects', { token })).body, []);
    }
  });
});

describe('finding 1: closed sign-up (ALLOW_REGISTRATION=false) needs the invitation’s secret, and refuses alike', () => {
  let closed: TestServer;
  let owner: TestUser;
  before(async () => {
    closed = await startServer({ ALLOW_REGISTRATION: 'false', PUBLIC_URL: 'http://guidon.test' });
    // The first account of a closed instance: made by the operator through an open server on the same database.
    const open = await startServer({ ALLOW_REGISTRATION: 'true' }, { database: { url: closed.config.database.kind === 'sqlite' ? `sqlite:${closed.config.database.path}` : closed.config.database.url, config: closed.config.database, drop: async () => undefined } });
    owner = await newUser(open, 'closed-owner');
    await open.close();
  });
  after(() => closed?.close());

  test('a stranger, an invited address without the token and one with a wrong token get the same 403', async () => {
    const project = await newProject(closed, owner, 'Company');
    const hire = fresh('hire');
    await invite(closed, owner, project.id, hire, 'viewer');
    const refusals = [await register(closed, fresh('stranger')), await register(closed, hire), await register(closed, hire, { invitation_token: 'guessed' })];
    const token = await invitationToken(closed.mailbox!, hire);
    refusals.push(await register(closed, fresh('stranger'), { invitation_token: token }));
    for (const refused of refusals) {
      assert.equal(refused.status, 403);
      assert.equal(refused.text, refusals[0]!.text, 'one body for every refusal: no oracle of who is invited');
    }
    const registered = await register(closed, hire, { invitation_token: token });
    assert.equal(registered.status, 201, registered.text);
    const session = await login(closed, hire);
    assert.equal((await request(closed, 'GET', `/api/projects/${project.id}`, { token: session })).body.role, 'viewer');
    assert.equal((await request(closed, 'GET', '/api/me', { token: session })).body.email_verified, true);
    const reused = await register(closed, fresh('hire2'), { invitation_token: token });
    assert.equal(reused.text, refusals[0]!.text);
  });
});

describe('invitation emails are limited (docs/security.md, Invitations as a mail relay) and their text is fixed', () => {
  let server: TestServer;
  let owner: TestUser;
  before(async () => {
    server = await startServer({ PUBLIC_URL: 'http://guidon.test' });
    owner = await newUser(server, 'limits-owner');
  });
  after(() => server?.close());

  const cancel = async (by: TestUser, projectId: string, memberId: string) =>
    assert.equal((await request(server, 'DELETE', `/api/projects/${projectId}/members/${memberId}`, { token: by.token })).status, 204);

  test('only a verified account invites (403 otherwise), and nothing is sent', async () => {
    const unverified = await newUser(server, 'unproven-inviter', { verified: false });
    const project = await newProject(server, unverified, 'Free project');
    const target = fresh('outsider');
    const refused = await invite(server, unverified, project.id, target);
    assert.equal(refused.status, 403, 'before, an unverified account sent invitations to anyone');
    assert.match(refused.body.message, /verify/i);
    assert.equal((await request(server, 'GET', `/api/projects/${project.id}/members`, { token: unverified.token })).body.length, 1);
    await verifyEmail(server, unverified);
    assert.equal((await invite(server, unverified, project.id, target)).status, 201, 'verified, it may');
    await server.mailbox!.waitFor(target);
  });

  test('3 a day to one address per project: another project is not blocked, and a cancelled invitation gives its count back', async () => {
    const stranger = await newUser(server, 'blocker');
    const theirs = await newProject(server, stranger, 'Theirs');
    const ours = await newProject(server, owner, 'Ours');
    const newhire = fresh('newhire');
    // Three invite-and-cancel rounds from a stranger's project used to block the address for a day, everywhere.
    for (let round = 0; round < 3; round++) await cancel(stranger, theirs.id, (await invite(server, stranger, theirs.id, newhire)).body.id);
    const ownInvitation = await invite(server, owner, ours.id, newhire);
    assert.equal(ownInvitation.status, 201, `the real owner's invitation goes out: ${ownInvitation.text}`);
    // The cancelled rounds gave their counts back: the stranger's project may invite the address again.
    assert.equal((await invite(server, stranger, theirs.id, newhire)).status, 201);
    await eventually(() => server.mailbox!.to(newhire).length === 5, 'five emails');

    // Not cancelled (declined by its invitee), each one counts: the 4th a day from one project is 429.
    const colleague = await newUser(server, 'decliner');
    const project = await newProject(server, owner, 'Persistent');
    for (let round = 0; round < 3; round++) {
      const invited = await invite(server, owner, project.id, colleague.email);
      assert.equal(invited.status, 201, invited.text);
      assert.equal((await request(server, 'POST', `/api/invitations/${invited.body.id}/decline`, { token: colleague.token })).status, 204);
    }
    const refused = await invite(server, owner, project.id, colleague.email);
    assert.equal(refused.status, 429);
    const retryAfter = Number(refused.headers.get('retry-after'));
    assert.ok(retryAfter > 3600 && retryAfter <= 86_400, `Retry-After ${retryAfter}: within the day`);
    assert.equal((await request(server, 'GET', `/api/projects/${project.id}/members`, { token: owner.token })).body.length, 1, 'a refused invitation changes nothing');
    await eventually(() => server.mailbox!.to(colleague.email).filter((mail) => mail.text.includes('/register?invitation=')).length === 3, 'three invitation emails');
  });

  test('inviting and cancelling again and again reaches one address 10 times a day from one inviter, not more', async () => {
    const pest = await newUser(server, 'pest');
    const victim = fresh('harassed');
    const projects = [await newProject(server, pest, 'P1'), await newProject(server, pest, 'P2')];
    for (let round = 0; round < 10; round++) {
      const project = projects[round % 2]!;
      const invited = await invite(server, pest, project.id, victim);
      assert.equal(invited.status, 201, `round ${round}: ${invited.text}`);
      await cancel(pest, project.id, invited.body.id);
    }
    assert.equal((await invite(server, pest, projects[0]!.id, victim)).status, 429);
    assert.equal((await invite(server, pest, (await newProject(server, pest, 'P3')).id, victim)).status, 429, 'whichever project');
    assert.equal((await invite(server, owner, (await newProject(server, owner, 'Elsewhere')).id, victim)).status, 201, 'another inviter is not blocked');
  });

  test('50 invitations an hour per project and per inviter: beyond, 429 and nothing is sent', async () => {
    const first = await newUser(server, 'bulk-a');
    const second = await newUser(server, 'bulk-b');
    const shared = await newProject(server, first, 'Bulk');
    await invite(server, first, shared.id, second.email, 'owner').then(async (invited) => {
      assert.equal((await request(server, 'POST', `/api/invitations/${invited.body.id}/accept`, { token: second.token })).status, 200);
    });
    for (let i = 0; i < 29; i++) assert.equal((await invite(server, first, shared.id, fresh(`bulk-a${i}`), 'viewer')).status, 201);
    for (let i = 0; i < 20; i++) assert.equal((await invite(server, second, shared.id, fresh(`bulk-b${i}`), 'viewer')).status, 201);
    const overProject = fresh('bulk-over-project');
    const refused = await invite(server, second, shared.id, overProject, 'viewer');
    assert.equal(refused.status, 429, 'the project sent 50');
    assert.ok(Number(refused.headers.get('retry-after')) >= 1 && Number(refused.headers.get('retry-after')) <= 3600);
    assert.equal((await invite(server, second, (await newProject(server, second, 'Own')).id, overProject, 'viewer')).status, 201, 'another project has its own budget');
    // The first inviter has sent 30; 20 more from another project, then the inviter's 51st is refused.
    const other = await newProject(server, first, 'Other');
    for (let i = 0; i < 20; i++) assert.equal((await invite(server, first, other.id, fresh(`bulk-c${i}`), 'viewer')).status, 201);
    const overInviter = fresh('bulk-over-inviter');
    assert.equal((await invite(server, first, (await newProject(server, first, 'Third')).id, overInviter, 'viewer')).status, 429, 'before, projects are free, so an inviter had no bound');
    assert.equal(server.mailbox!.to(overInviter).length, 0);
  });

  test('the project’s name is quoted as one harmless line: no new paragraph, no link, not in the subject', async () => {
    const name = 'Team\n\nURGENT: your account is locked. Sign in at https://evil.example/login?u=1 or mail help@evil.example\u202Etxt.exe';
    const project = await request(server, 'POST', '/api/projects', { token: owner.token, body: { name } });
    assert.equal(project.status, 201, project.text);
    const email = fresh('phished');
    await invite(server, owner, project.body.id, email);
    const [mail] = await server.mailbox!.waitFor(email);
    assert.ok(mail);
    assert.doesNotMatch(mail.subject, /URGENT|evil|Team/, `the subject is fixed: ${mail.subject}`);
    assert.ok(!mail.text.includes('evil.example'), 'no address a mail client would link');
    assert.ok(!mail.text.includes('https://evil'), 'no link');
    assert.ok(!mail.text.includes('\u202E'), 'no bidi override');
    const quoted = /"([^"\n]*)"/.exec(mail.text.slice(mail.text.indexOf('name')))?.[1];
    assert.ok(quoted?.startsWith('Team URGENT[:] your account is locked[.]'), `quoted on one line: ${quoted}\n${mail.text}`);
    assert.ok([...quoted!.replace(/\[(.)\]/g, '$1')].length <= 60, 'and short (60 characters, before the brackets)');
    const links = mail.text.match(/https?:\/\/\S+/g) ?? [];
    assert.ok(links.every((link) => link.startsWith('http://guidon.test')), `only the service's links: ${links.join(' ')}`);
  });
});

describe('finding 8: leaving a project needs a login or an owner token', () => {
  let server: TestServer;
  before(async () => {
    server = await startServer();
  });
  after(() => server?.close());

  test('a viewer-capped token cannot remove its owner’s membership; a login can, and so can an owner token', async () => {
    const owner = await newUser(server, 'leaving-owner');
    const other = await newUser(server, 'co-owner');
    const project = await newProject(server, owner);
    assert.equal((await invite(server, owner, project.id, other.email, 'owner')).status, 201);
    await acceptAll(server, other.token);
    const members = (await request(server, 'GET', `/api/projects/${project.id}/members`, { token: owner.token })).body;
    const mine = members.find((m: any) => m.user_id === owner.id);
    const viewerToken = (await request(server, 'POST', '/api/tokens', { token: owner.token, body: { name: 'read', project_id: project.id, role: 'viewer' } })).body.token;
    const refused = await request(server, 'DELETE', `/api/projects/${project.id}/members/${mine.id}`, { token: viewerToken });
    assert.equal(refused.status, 403);
    assert.deepEqual(Object.keys(refused.body).sort(), ['error', 'message', 'statusCode']);
    assert.equal((await request(server, 'GET', `/api/projects/${project.id}`, { token: owner.token })).body.role, 'owner', 'still a member');

    const ownerToken = (await request(server, 'POST', '/api/tokens', { token: owner.token, body: { name: 'all', project_id: project.id, role: 'owner' } })).body.token;
    assert.equal((await request(server, 'DELETE', `/api/projects/${project.id}/members/${mine.id}`, { token: ownerToken })).status, 204);
    assert.equal((await request(server, 'GET', `/api/projects/${project.id}`, { token: owner.token })).status, 404);

    const theirs = members.find((m: any) => m.user_id === other.id);
    await invite(server, other, project.id, owner.email, 'viewer');
    assert.equal((await request(server, 'DELETE', `/api/projects/${project.id}/members/${theirs.id}`, { token: other.token })).status, 409, 'the last owner stays');
  });
});

describe('log out (docs/api.md, Account): that login token ends on every instance at once', () => {
  let a: TestServer;
  let b: TestServer;
  let close: (() => Promise<void>) | undefined;
  before(async () => ({ a, b, close } = await startTwoInstances()));
  after(() => close?.());

  test('POST /auth/logout: 204; the token is 401 on its next use on both instances; the user’s other logins and API tokens go on', async () => {
    const user = await newUser(a, 'logout');
    const phone = await login(a, user.email);
    const apiToken = (await request(a, 'POST', '/api/tokens', { token: user.token, body: { name: 'ci' } })).body.token;
    assert.equal((await request(b, 'GET', '/api/me', { token: user.token })).status, 200, 'b has seen the token work');

    const out = await request(a, 'POST', '/auth/logout', { token: user.token });
    assert.equal(out.status, 204, out.text);
    assert.equal((await request(b, 'GET', '/api/me', { token: user.token })).status, 401);
    assert.equal((await request(a, 'GET', '/api/projects', { token: user.token })).status, 401);
    assert.equal((await request(b, 'POST', '/auth/logout', { token: user.token })).status, 401, 'already ended');
    assert.equal((await request(b, 'GET', '/api/me', { token: phone })).status, 200, 'another login of the user goes on');
    assert.equal((await request(b, 'GET', '/api/me', { token: apiToken })).status, 200);
    assert.equal((await request(a, 'POST', '/auth/logout', { token: apiToken })).status, 401, 'an API token is revoked by DELETE /api/tokens, not logged out');
    assert.equal((await request(a, 'POST', '/auth/logout')).status, 401);
  });
});

describe('upgrade (migration 0005): accounts from before are verified only if a password reset proved them', () => {
  const cleanup: (() => Promise<void>)[] = [];
  after(async () => {
    for (const step of cleanup.reverse()) await step();
  });

  test('pre-claimed memberships wait as invitations, unproven API tokens are gone, own projects stay', async () => {
    const testDatabase = await createTestDatabase();
    cleanup.push(() => testDatabase.drop());
    // A database as the release before proven addresses left it (migrations up to 0004).
    const old = await openDatabase(testDatabase.config, { migrate: false, poolSize: 1 });
    const { error } = await new Migrator({ db: old.db, provider: { getMigrations: async () => migrations(old.dialect) } }).migrateTo('0004_webhook_deliveries_by_webhook');
    if (error) throw error;
    const db = old.db as unknown as Kysely<any>;
    const hash = await hashPassword(PASSWORD);
    const day = (n: number) => new Date(Date.UTC(2026, 0, n)).toISOString();
    const ids = { alice: randomUUID(), mallory: randomUUID(), dave: randomUUID(), shop: randomUUID(), blog: randomUUID() };
    await db.insertInto('users').values([
      { id: ids.alice, email: 'alice@example.com', password_hash: hash, token_version: 1, created_at: day(1) },
      // The attacker registered carol's address; carol never reset it.
      { id: ids.mallory, email: 'carol@example.com', password_hash: hash, token_version: 0, created_at: day(2) },
      { id: ids.dave, email: 'dave@example.com', password_hash: hash, token_version: 0, created_at: day(3) },
    ]).execute();
    await db.insertInto('password_resets').values({ token_hash: 'used', user_id: ids.alice, expires_at: day(10), used_at: day(10), created_at: day(10) }).execute();
    await db.insertInto('projects').values([
      { id: ids.shop, owner_id: ids.alice, name: 'Shop', description: null, sdk_key: 'sdk_shop_0123456789abcdefghij', created_at: day(1), updated_at: day(1) },
      { id: ids.blog, owner_id: ids.dave, name: 'Blog', description: null, sdk_key: 'sdk_blog_0123456789abcdefghij', created_at: day(3), updated_at: day(3) },
    ]).execute();
    await db.insertInto('project_members').values([
      { id: randomUUID(), project_id: ids.shop, user_id: ids.alice, email: 'alice@example.com', role: 'owner', created_at: day(1) },
      { id: randomUUID(), project_id: ids.shop, user_id: ids.mallory, email: 'carol@example.com', role: 'editor', created_at: day(4) },
      { id: randomUUID(), project_id: ids.shop, user_id: ids.dave, email: 'dave@example.com', role: 'viewer', created_at: day(4) },
      { id: randomUUID(), project_id: ids.blog, user_id: ids.dave, email: 'dave@example.com', role: 'owner', created_at: day(3) },
    ]).execute();
    const apiToken = (name: string, userId: string, created: string, secret: string) => ({
      id: randomUUID(), user_id: userId, name, token_hash: createHashHex(secret), project_id: null, role: null, created_at: created, expires_at: null, last_used_at: null,
    });
    await db.insertInto('api_tokens').values([
      apiToken('before-reset', ids.alice, day(5), 'gdn_before_reset_secret_0123456789abcdefghijklmno'),
      apiToken('after-reset', ids.alice, day(11), 'gdn_after_reset_secret_0123456789abcdefghijklmnop'),
      apiToken('backdoor', ids.mallory, day(5), 'gdn_backdoor_secret_0123456789abcdefghijklmnopqrs'),
    ]).execute();
    await old.close();

    const server = await startServer({ PUBLIC_URL: 'http://guidon.test' }, { database: testDatabase });
    cleanup.push(() => server.close());
    const alice = await login(server, 'alice@example.com');
    const mallory = await login(server, 'carol@example.com');
    const dave = await login(server, 'dave@example.com');
    assert.equal((await request(server, 'GET', '/api/me', { token: alice })).body.email_verified, true, 'a completed reset proved alice’s address');
    assert.equal((await request(server, 'GET', '/api/me', { token: mallory })).body.email_verified, false);
    assert.equal((await request(server, 'GET', '/api/me', { token: dave })).body.email_verified, false);

    assert.deepEqual((await request(server, 'GET', '/api/tokens', { token: alice })).body.map((t: any) => t.name), ['after-reset'], 'tokens from before the proof are gone');
    assert.equal((await request(server, 'GET', '/api/me', { token: 'gdn_after_reset_secret_0123456789abcdefghijklmnop' })).status, 200);
    assert.equal((await request(server, 'GET', '/api/me', { token: 'gdn_backdoor_secret_0123456789abcdefghijklmnopqrs' })).status, 401);
    assert.equal((await request(server, 'GET', '/api/me', { token: 'gdn_before_reset_secret_0123456789abcdefghijklmno' })).status, 401);

    const members = (await request(server, 'GET', `/api/projects/${ids.shop}/members`, { token: alice })).body;
    assert.deepEqual(members.map((m: any) => [m.email, m.role, m.status]), [
      ['alice@example.com', 'owner', 'active'],
      ['carol@example.com', 'editor', 'invited'],
      ['dave@example.com', 'viewer', 'invited'],
    ]);
    assert.equal((await request(server, 'GET', `/api/projects/${ids.shop}`, { token: mallory })).status, 404, 'the pre-claimer is out');
    assert.deepEqual((await request(server, 'GET', '/api/projects', { token: dave })).body.map((p: any) => [p.name, p.role]), [['Blog', 'owner']], 'own projects stay');

    // Dave proves his address (the banner's "Resend", then the link): his membership waits as an invitation he accepts.
    assert.equal((await request(server, 'POST', '/auth/resend-verification', { token: dave })).status, 202);
    await verifyEmail(server, { email: 'dave@example.com' });
    assert.deepEqual((await request(server, 'GET', '/api/invitations', { token: dave })).body.map((i: any) => [i.project.name, i.role, i.invited_by.email]), [['Shop', 'viewer', 'alice@example.com']]);
    await acceptAll(server, dave);
    assert.deepEqual((await request(server, 'GET', '/api/projects', { token: dave })).body.map((p: any) => [p.name, p.role]).sort(), [['Blog', 'owner'], ['Shop', 'viewer']]);
  });
});

const createHashHex = (secret: string) => createHash('sha256').update(secret).digest('hex');
