/**
 * Accounts, black box over real HTTP: register, login, /api/me, password reset through a real
 * SMTP server, the rate limits of docs/security.md (Client addresses and rate limits) and what the logs may (not) hold.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { SignJWT, UnsecuredJWT, decodeJwt, decodeProtectedHeader, type JWTPayload } from 'jose';
import { addMember, evaluate, eventually, newProject, newUser, request, startServer, type Answer, type TestServer, type TestUser } from './harness.js';
import type { Mail } from './mailbox.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const PASSWORD = 'correct horse battery';
const DAY_SECONDS = 24 * 60 * 60;
const REASON_PHRASES: Record<number, string> = {
  400: 'Bad Request',
  401: 'Unauthorized',
  409: 'Conflict',
  413: 'Payload Too Large',
  429: 'Too Many Requests',
};

let emailCounter = 0;
/** A fresh, already normalised address. */
const freshEmail = (prefix = 'acct') => `${prefix}-${++emailCounter}-${process.pid}@example.com`;

/** docs/api.md, Errors: `{statusCode, error, message}`, JSON, a message for people. */
function assertError(answer: Answer, status: number): void {
  assert.equal(answer.status, status, `expected ${status}, got ${answer.status}: ${answer.text}`);
  assert.match(answer.headers.get('content-type') ?? '', /^application\/json/);
  assert.deepEqual(Object.keys(answer.body).sort(), ['error', 'message', 'statusCode']);
  assert.equal(answer.body.statusCode, status);
  assert.equal(answer.body.error, REASON_PHRASES[status]);
  assert.equal(typeof answer.body.message, 'string');
  assert.ok(answer.body.message.length > 0, 'the message is not empty');
  assert.doesNotMatch(answer.body.message, /\n\s+at /, 'no stack trace in the message');
}

/** A 429 carries Retry-After in whole seconds, within the window of the limit. */
function assertRateLimited(answer: Answer, windowSeconds: number): void {
  assertError(answer, 429);
  const retryAfter = answer.headers.get('retry-after');
  assert.ok(retryAfter !== null, 'a 429 carries Retry-After');
  assert.match(retryAfter, /^\d+$/, 'Retry-After is in seconds');
  assert.ok(Number(retryAfter) >= 1 && Number(retryAfter) <= windowSeconds, `Retry-After ${retryAfter} within 1..${windowSeconds}`);
}

const register = (server: TestServer, body: unknown, headers: Record<string, string> = {}) =>
  request(server, 'POST', '/auth/register', { body, headers });
const login = (server: TestServer, body: unknown, headers: Record<string, string> = {}) =>
  request(server, 'POST', '/auth/login', { body, headers });
const me = (server: TestServer, authorization?: string) =>
  request(server, 'GET', '/api/me', { headers: authorization === undefined ? {} : { authorization } });

/** Registers and logs in; fails the test when either step does not succeed. */
async function account(server: TestServer, email = freshEmail(), password = PASSWORD): Promise<TestUser> {
  const registered = await register(server, { email, password });
  assert.equal(registered.status, 201, registered.text);
  const loggedIn = await login(server, { email, password });
  assert.equal(loggedIn.status, 200, loggedIn.text);
  return { id: registered.body.id, email, password, token: loggedIn.body.token };
}

const RESET_LINK = /http:\/\/guidon\.test\/reset-password\?token=[^\s"'<>]+/;

/** The reset token carried by the link in the email (docs/api.md, Account: `<PUBLIC_URL>/reset-password?token=<token>`). */
function tokenFromMail(mail: Mail): string {
  const link = RESET_LINK.exec(mail.text)?.[0];
  assert.ok(link, `the email carries a reset link:\n${mail.text}`);
  const token = new URL(link).searchParams.get('token');
  assert.ok(token, 'the link carries a token');
  return token;
}

const forgotPassword = (server: TestServer, email: unknown) => request(server, 'POST', '/auth/forgot-password', { body: { email } });
const resetPassword = (server: TestServer, body: unknown) => request(server, 'POST', '/auth/reset-password', { body });

// ---------------------------------------------------------------------------------------------

describe('POST /auth/register', () => {
  let server: TestServer;
  before(async () => {
    server = await startServer();
  });
  after(() => server.close());

  test('201 with exactly {id, email}; the email is trimmed and lower-cased; the password is never returned', async () => {
    const answer = await register(server, { email: ' A@Example.com ', password: PASSWORD });
    assert.equal(answer.status, 201, answer.text);
    assert.match(answer.headers.get('content-type') ?? '', /^application\/json/);
    assert.deepEqual(Object.keys(answer.body).sort(), ['email', 'id']);
    assert.match(answer.body.id, UUID);
    assert.equal(answer.body.email, 'a@example.com');
    assert.ok(!answer.text.includes(PASSWORD), 'the password is not in the answer');
    assert.ok(!/password|hash/i.test(answer.text), 'no password field of any kind');

    // The stored address is the normalised one: login with it works and names the same user.
    const loggedIn = await login(server, { email: 'a@example.com', password: PASSWORD });
    assert.equal(loggedIn.status, 200, loggedIn.text);
    const current = await me(server, `Bearer ${loggedIn.body.token}`);
    assert.deepEqual(current.body, { user_id: answer.body.id, email: 'a@example.com', email_verified: false });

    const other = await register(server, { email: freshEmail(), password: PASSWORD });
    assert.equal(other.status, 201);
    assert.notEqual(other.body.id, answer.body.id, 'each user has its own id');
  });

  test('a password of 8 characters is accepted, 7 is 400', async () => {
    assertError(await register(server, { email: freshEmail(), password: '1234567' }), 400);
    const ok = await register(server, { email: freshEmail(), password: '12345678' });
    assert.equal(ok.status, 201, ok.text);
    // The 7-character attempt created nothing: the same address can still register.
    const email = freshEmail();
    assertError(await register(server, { email, password: 'short77' }), 400);
    assert.equal((await register(server, { email, password: 'long enough' })).status, 201);
  });

  test('400 for missing fields and for non-string types (no coercion)', async () => {
    const cases: unknown[] = [
      { password: PASSWORD },
      { email: freshEmail() },
      {},
      { email: 12345, password: PASSWORD },
      { email: null, password: PASSWORD },
      { email: [freshEmail()], password: PASSWORD },
      { email: { address: freshEmail() }, password: PASSWORD },
      { email: freshEmail(), password: 12345678 },
      { email: freshEmail(), password: true },
      { email: freshEmail(), password: null },
      { email: freshEmail(), password: ['correct horse battery'] },
    ];
    for (const body of cases) {
      const answer = await register(server, body);
      assertError(answer, 400);
    }
  });

  test('400 for an invalid email address', async () => {
    for (const email of ['not-an-email', 'a@', '@example.com', 'a b@example.com', 'a@b@example.com', '   ', '']) {
      const answer = await register(server, { email, password: PASSWORD });
      assertError(answer, 400);
    }
  });

  test('400 for an empty body, no body, malformed JSON or a body that is not an object', async () => {
    assertError(await register(server, ''), 400); // content-type: application/json, zero bytes
    assertError(await request(server, 'POST', '/auth/register'), 400); // no body, no content-type
    assertError(await register(server, '{"email": "x@example.com", "password": '), 400);
    assertError(await register(server, '{email: x}'), 400);
    assertError(await register(server, 'null'), 400);
    assertError(await register(server, '[]'), 400);
    assertError(await register(server, '"a@example.com"'), 400);
  });

  test('413 for a body over 1 MiB', async () => {
    const answer = await register(server, { email: freshEmail(), password: 'x'.repeat(1024 * 1024 + 10) });
    assertError(answer, 413);
  });

  test('409 when the email is already registered, also in another case or with spaces; the first password stays', async () => {
    const email = freshEmail('dup');
    assert.equal((await register(server, { email, password: PASSWORD })).status, 201);
    assertError(await register(server, { email, password: 'another password' }), 409);
    assertError(await register(server, { email: email.toUpperCase(), password: 'another password' }), 409);
    assertError(await register(server, { email: `  ${email.replace('dup', 'DuP')}\t`, password: 'another password' }), 409);
    assert.equal((await login(server, { email, password: PASSWORD })).status, 200);
    assertError(await login(server, { email, password: 'another password' }), 401);
  });
});

describe('rate limits of /auth/register and /auth/login (RATE_LIMIT_AUTH=3)', () => {
  let server: TestServer;
  const loginEmail = freshEmail('limited');
  before(async () => {
    server = await startServer({ RATE_LIMIT_AUTH: '3' });
  });
  after(() => server.close());

  test('the 4th register from one IP is 429 with Retry-After; another client IP (X-Forwarded-For from loopback) is not limited', async () => {
    for (const email of [loginEmail, freshEmail(), freshEmail()]) {
      const answer = await register(server, { email, password: PASSWORD });
      assert.equal(answer.status, 201, answer.text);
    }
    const limited = await register(server, { email: freshEmail(), password: PASSWORD });
    assertRateLimited(limited, 60);
    // An invalid body from the same IP is still refused by the limit first.
    assertRateLimited(await register(server, {}), 60);

    const elsewhere = await register(server, { email: freshEmail(), password: PASSWORD }, { 'x-forwarded-for': '203.0.113.7' });
    assert.equal(elsewhere.status, 201, elsewhere.text);
  });

  test('login has its own budget: 3 logins pass, the 4th is 429 even with the right password; another IP still logs in', async () => {
    // The register budget of 127.0.0.1 is spent; login counts separately (docs/security.md: each has its own).
    for (let i = 0; i < 3; i++) {
      const answer = await login(server, { email: loginEmail, password: PASSWORD });
      assert.equal(answer.status, 200, answer.text);
    }
    const limited = await login(server, { email: loginEmail, password: PASSWORD });
    assertRateLimited(limited, 60);
    assert.equal(limited.body.token, undefined);

    const elsewhere = await login(server, { email: loginEmail, password: PASSWORD }, { 'x-forwarded-for': '198.51.100.9' });
    assert.equal(elsewhere.status, 200, elsewhere.text);
    assert.equal(typeof elsewhere.body.token, 'string');
  });

  test('with TRUST_PROXY=false, X-Forwarded-For is ignored and cannot dodge the limit', async (t) => {
    const untrusting = await startServer({ RATE_LIMIT_AUTH: '1', TRUST_PROXY: 'false' });
    t.after(() => untrusting.close());
    assert.equal((await register(untrusting, { email: freshEmail(), password: PASSWORD })).status, 201);
    const spoofed = await register(untrusting, { email: freshEmail(), password: PASSWORD }, { 'x-forwarded-for': '203.0.113.99' });
    assertRateLimited(spoofed, 60);
  });
});

describe('POST /auth/login', () => {
  let server: TestServer;
  before(async () => {
    server = await startServer();
  });
  after(() => server.close());

  test('200 with exactly {token}: a JWT HS256 with sub = user id, iat, and exp = iat + 24 h', async () => {
    const email = freshEmail();
    const registered = await register(server, { email, password: PASSWORD });
    const answer = await login(server, { email, password: PASSWORD });
    assert.equal(answer.status, 200, answer.text);
    assert.match(answer.headers.get('content-type') ?? '', /^application\/json/);
    assert.deepEqual(Object.keys(answer.body), ['token']);
    const { token } = answer.body as { token: string };
    assert.match(token, /^[\w-]+\.[\w-]+\.[\w-]+$/);

    assert.equal(decodeProtectedHeader(token).alg, 'HS256');
    const claims = decodeJwt(token);
    assert.equal(claims.sub, registered.body.id);
    assert.ok(Number.isInteger(claims.iat), 'iat is a NumericDate');
    assert.ok(Number.isInteger(claims.exp), 'exp is a NumericDate');
    assert.equal(claims.exp! - claims.iat!, DAY_SECONDS);
    assert.ok(Math.abs(claims.iat! - Date.now() / 1000) < 300, 'iat is the time of issue');
    assert.equal(JSON.stringify(claims).includes(PASSWORD), false);

    assert.deepEqual((await me(server, `Bearer ${token}`)).body, { user_id: registered.body.id, email, email_verified: false });
  });

  test('the email is compared trimmed and lower-cased', async () => {
    const email = freshEmail();
    assert.equal((await register(server, { email, password: PASSWORD })).status, 201);
    const answer = await login(server, { email: `  ${email.toUpperCase()} `, password: PASSWORD });
    assert.equal(answer.status, 200, answer.text);
  });

  test('401 for a wrong password and for an unknown email, with the same message', async () => {
    const email = freshEmail();
    assert.equal((await register(server, { email, password: PASSWORD })).status, 201);
    const wrongPassword = await login(server, { email, password: 'not the password' });
    const unknownEmail = await login(server, { email: freshEmail('nobody'), password: PASSWORD });
    assertError(wrongPassword, 401);
    assertError(unknownEmail, 401);
    assert.equal(wrongPassword.body.message, unknownEmail.body.message);
    assert.deepEqual(wrongPassword.body, unknownEmail.body);
    // Passwords are case-sensitive and not trimmed.
    assertError(await login(server, { email, password: PASSWORD.toUpperCase() }), 401);
    assertError(await login(server, { email, password: ` ${PASSWORD} ` }), 401);
  });

  test('400 for missing fields, non-string types and malformed JSON', async () => {
    const cases: unknown[] = [
      { password: PASSWORD },
      { email: freshEmail() },
      {},
      { email: 42, password: PASSWORD },
      { email: freshEmail(), password: 12345678 },
      '{"email": ',
      '',
    ];
    for (const body of cases) assertError(await login(server, body), 400);
  });

  test('failed logins: 10 per 15 min per (client IP, email); the 11th attempt is 429 even with the right password', async () => {
    const victim = freshEmail('victim');
    const bystander = freshEmail('bystander');
    assert.equal((await register(server, { email: victim, password: PASSWORD })).status, 201);
    assert.equal((await register(server, { email: bystander, password: PASSWORD })).status, 201);

    for (let attempt = 1; attempt <= 10; attempt++) {
      const answer = await login(server, { email: victim, password: `wrong password ${attempt}` });
      assertError(answer, 401);
    }
    const eleventh = await login(server, { email: victim, password: PASSWORD });
    assertRateLimited(eleventh, 15 * 60);
    assert.equal(eleventh.body.token, undefined);
    // The same account named differently is the same (IP, email) pair.
    assertRateLimited(await login(server, { email: ` ${victim.toUpperCase()}`, password: PASSWORD }), 15 * 60);

    // Another email from the same IP, and the same email from another IP, still log in.
    const otherEmail = await login(server, { email: bystander, password: PASSWORD });
    assert.equal(otherEmail.status, 200, otherEmail.text);
    const otherIp = await login(server, { email: victim, password: PASSWORD }, { 'x-forwarded-for': '203.0.113.20' });
    assert.equal(otherIp.status, 200, otherIp.text);
  });
});

describe('GET /api/me', () => {
  const JWT_SECRET = 'accounts-test-secret-7c1e4b0a9f5d2e8c';
  let server: TestServer;
  let user: TestUser;
  let claims: JWTPayload;

  const sign = (payload: JWTPayload, secret = JWT_SECRET) =>
    new SignJWT(payload).setProtectedHeader({ alg: 'HS256', typ: 'JWT' }).sign(new TextEncoder().encode(secret));
  const now = () => Math.floor(Date.now() / 1000);

  before(async () => {
    server = await startServer({ JWT_SECRET });
    user = await account(server);
    claims = decodeJwt(user.token);
  });
  after(() => server.close());

  test('200 with exactly {user_id, email, email_verified} for a login token', async () => {
    const answer = await me(server, `Bearer ${user.token}`);
    assert.equal(answer.status, 200, answer.text);
    assert.match(answer.headers.get('content-type') ?? '', /^application\/json/);
    assert.deepEqual(answer.body, { user_id: user.id, email: user.email, email_verified: false });
    assert.match(answer.body.user_id, UUID);
  });

  test('a token signed with JWT_SECRET and the claims of a login token is accepted (control for the cases below)', async () => {
    const resigned = await sign({ ...claims, iat: now() - 60, exp: now() - 60 + DAY_SECONDS });
    const answer = await me(server, `Bearer ${resigned}`);
    assert.equal(answer.status, 200, answer.text);
    assert.equal(answer.body.user_id, user.id);
  });

  test('401 without an Authorization header, with a malformed one, or with another scheme', async () => {
    assertError(await me(server), 401);
    for (const authorization of [
      '',
      'Bearer',
      'Bearer ',
      user.token, // no scheme
      `Token ${user.token}`,
      `Bearer ${user.token} ${user.token}`,
      `Bearer${user.token}`,
      `Basic ${Buffer.from(`${user.email}:${user.password}`).toString('base64')}`,
      `Basic ${user.token}`,
    ]) {
      const answer = await me(server, authorization);
      assertError(answer, 401);
      assert.equal(answer.body.user_id, undefined);
    }
  });

  test('401 for a garbage token, a token signed by another secret, an unsigned one, or a tampered one', async () => {
    const otherUser = await account(server);
    const [head, , signature] = user.token.split('.');
    const tamperedPayload = Buffer.from(JSON.stringify({ ...claims, sub: otherUser.id })).toString('base64url');
    for (const token of [
      'garbage',
      'a.b.c',
      `${user.token}x`,
      await sign(claims, 'some-other-secret-entirely-0000000'),
      await sign({ ...claims, iat: now(), exp: now() + 3600 }, 'some-other-secret-entirely-0000000'),
      new UnsecuredJWT({ ...claims }).encode(), // alg: none
      `${head}.${tamperedPayload}.${signature}`,
    ]) {
      assertError(await me(server, `Bearer ${token}`), 401);
    }
  });

  test('401 for an expired token with a valid signature', async () => {
    const expired = await sign({ ...claims, iat: now() - DAY_SECONDS - 3600, exp: now() - 3600 });
    assertError(await me(server, `Bearer ${expired}`), 401);
    const justExpired = await sign({ ...claims, iat: now() - 120, exp: now() - 10 });
    assertError(await me(server, `Bearer ${justExpired}`), 401);
  });

  test('401 for a validly signed token without exp, or naming a user that does not exist', async () => {
    const { exp: _exp, ...withoutExp } = claims;
    assertError(await me(server, `Bearer ${await sign({ ...withoutExp, iat: now() })}`), 401);
    const ghost = await sign({ ...claims, sub: '00000000-0000-4000-8000-000000000000', iat: now(), exp: now() + 3600 });
    assertError(await me(server, `Bearer ${ghost}`), 401);
  });
});

describe('password reset by email (SMTP_URL)', () => {
  let server: TestServer;
  // The reset emails of the server's mailbox (each new account also gets a verification email).
  const resets = (address: string) => server.mailbox!.to(address).filter((mail) => RESET_LINK.test(mail.text));
  const mailbox = {
    to: resets,
    async waitFor(address: string, count = 1): Promise<Mail[]> {
      await eventually(() => resets(address).length >= count, `${count} reset email(s) to ${address}`);
      return resets(address);
    },
  };

  before(async () => {
    server = await startServer({ PUBLIC_URL: 'http://guidon.test' });
  });
  after(() => server.close());

  /** Asks for a reset link and returns the token of the next email to that address. */
  async function resetToken(email: string): Promise<string> {
    const seen = mailbox.to(email).length;
    const answer = await forgotPassword(server, email);
    assert.equal(answer.status, 200, answer.text);
    const mails = await mailbox.waitFor(email, seen + 1);
    return tokenFromMail(mails[seen]!);
  }

  test('forgot-password emails a link; reset-password sets the new password once and revokes older login tokens', async () => {
    const user = await account(server);

    const answer = await forgotPassword(server, user.email);
    assert.equal(answer.status, 200, answer.text);
    assert.match(answer.headers.get('content-type') ?? '', /^application\/json/);
    assert.deepEqual(Object.keys(answer.body), ['message']);
    assert.equal(typeof answer.body.message, 'string');
    assert.ok(answer.body.message.length > 0);

    const [mail] = await mailbox.waitFor(user.email);
    assert.ok(mail);
    assert.deepEqual(mail.to, [user.email]);
    const token = tokenFromMail(mail);
    assert.ok(mail.text.includes(`http://guidon.test/reset-password?token=${token}`), 'the link is <PUBLIC_URL>/reset-password?token=<token>');
    assert.ok(token.length >= 43, 'a random token of at least 32 bytes');
    assert.ok(!mail.raw.includes(user.password), 'the email does not carry the password');

    // Stored only as a hash (docs/api.md, Account).
    const rows = await server.database.db.selectFrom('password_resets').selectAll().execute();
    assert.ok(rows.length > 0);
    assert.ok(!JSON.stringify(rows).includes(token), 'the reset token is not stored in clear');

    const newPassword = 'a brand new password';
    const reset = await resetPassword(server, { token, newPassword });
    assert.equal(reset.status, 200, reset.text);
    assert.match(reset.headers.get('content-type') ?? '', /^text\/plain/);
    assert.equal(reset.text, 'Password reset successful');

    assertError(await login(server, { email: user.email, password: user.password }), 401);
    const fresh = await login(server, { email: user.email, password: newPassword });
    assert.equal(fresh.status, 200, fresh.text);

    // A reset revokes every login token issued before it; the new one works.
    assertError(await me(server, `Bearer ${user.token}`), 401);
    // The emailed link proved the address (docs/api.md, Account).
    assert.deepEqual((await me(server, `Bearer ${fresh.body.token}`)).body, { user_id: user.id, email: user.email, email_verified: true });

    // Single use: the same token a second time is 400 and changes nothing.
    assertError(await resetPassword(server, { token, newPassword: 'yet another password' }), 400);
    assert.equal((await login(server, { email: user.email, password: newPassword })).status, 200);
    assertError(await login(server, { email: user.email, password: 'yet another password' }), 401);
  });

  test('forgot-password finds the account whatever the case and spacing of the email', async () => {
    const user = await account(server);
    const answer = await forgotPassword(server, `  ${user.email.toUpperCase()} `);
    assert.equal(answer.status, 200, answer.text);
    const [mail] = await mailbox.waitFor(user.email);
    assert.ok(mail);
    assert.equal((await resetPassword(server, { token: tokenFromMail(mail), newPassword: 'reset by upper case' })).status, 200);
    assert.equal((await login(server, { email: user.email, password: 'reset by upper case' })).status, 200);
  });

  test('reset-password: 400 for an unknown token and for missing or non-string fields', async () => {
    assertError(await resetPassword(server, { token: 'no-such-token-' + 'x'.repeat(40), newPassword: 'long enough password' }), 400);
    assertError(await resetPassword(server, { token: '', newPassword: 'long enough password' }), 400);
    assertError(await resetPassword(server, { newPassword: 'long enough password' }), 400);
    assertError(await resetPassword(server, { token: 'whatever' }), 400);
    assertError(await resetPassword(server, { token: 12345, newPassword: 'long enough password' }), 400);
    assertError(await resetPassword(server, {}), 400);
    assertError(await resetPassword(server, '{"token":'), 400);
  });

  test('reset-password: a newPassword of 7 characters is 400 and changes nothing; the token still works afterwards', async () => {
    const user = await account(server);
    const token = await resetToken(user.email);

    assertError(await resetPassword(server, { token, newPassword: '7chars!' }), 400);
    assert.equal((await login(server, { email: user.email, password: user.password })).status, 200, 'the old password still works');
    assert.equal((await me(server, `Bearer ${user.token}`)).status, 200, 'login tokens were not revoked');

    const reset = await resetPassword(server, { token, newPassword: '8chars!!' });
    assert.equal(reset.status, 200, reset.text);
    assert.equal(reset.text, 'Password reset successful');
    assert.equal((await login(server, { email: user.email, password: '8chars!!' })).status, 200);
  });

  test('reset-password: an expired token is 400 and changes nothing', async () => {
    const user = await account(server);
    const token = await resetToken(user.email);

    const past = new Date(Date.now() - 60_000).toISOString();
    const updated = await server.database.db.updateTable('password_resets').set({ expires_at: past }).where('user_id', '=', user.id).executeTakeFirst();
    assert.equal(Number(updated.numUpdatedRows), 1, 'one reset token for this user');

    assertError(await resetPassword(server, { token, newPassword: 'too late password' }), 400);
    assert.equal((await login(server, { email: user.email, password: user.password })).status, 200);
    assertError(await login(server, { email: user.email, password: 'too late password' }), 401);
    assert.equal((await me(server, `Bearer ${user.token}`)).status, 200);
  });

  test('forgot-password for an unknown email: the same status and body, and no email is sent', async () => {
    const known = await account(server);
    const unknown = freshEmail('unknown');

    const forUnknown = await forgotPassword(server, unknown);
    const forKnown = await forgotPassword(server, known.email);
    assert.equal(forUnknown.status, 200);
    assert.equal(forKnown.status, 200);
    assert.equal(forUnknown.text, forKnown.text);
    assert.equal(forUnknown.headers.get('content-type'), forKnown.headers.get('content-type'));

    // The known address's mail arriving (requested after the unknown one) is the barrier.
    await mailbox.waitFor(known.email);
    assert.equal(mailbox.to(unknown).length, 0, 'no email to an address without an account');
  });

  test('forgot-password: 400 without an email', async () => {
    assertError(await request(server, 'POST', '/auth/forgot-password', { body: {} }), 400);
    assertError(await forgotPassword(server, 42), 400);
  });

  test('forgot-password 6 times in the hour for one email: 200 every time, 5 emails sent', async () => {
    const user = await account(server);
    const answers: Answer[] = [];
    for (let i = 0; i < 6; i++) answers.push(await forgotPassword(server, user.email));
    for (const answer of answers) {
      assert.equal(answer.status, 200, answer.text);
      assert.equal(answer.text, answers[0]!.text, 'the answer stays the same');
    }
    const mails = await mailbox.waitFor(user.email, 5);

    // Barrier: a later request for another account has been mailed, so the 6th had its chance.
    const sentinel = await account(server);
    assert.equal((await forgotPassword(server, sentinel.email)).status, 200);
    await mailbox.waitFor(sentinel.email);
    assert.equal(mailbox.to(user.email).length, 5, 'the 6th request sends no email');
    assert.equal(new Set(mails.map(tokenFromMail)).size, 5, 'each email carries its own token');
  });
});

describe('PUBLIC_URL with SMTP_URL', () => {
  test('left at its default (this machine), a warning at start says the emailed links will not open; set, none', async () => {
    const warning = 'PUBLIC_URL points to this machine';
    for (const [publicUrl, warned] of [[undefined, true], ['http://127.0.0.1:8080', true], ['https://flags.example.com', false]] as const) {
      const server = await startServer({ SMTP_URL: 'smtp://127.0.0.1:2525', ...(publicUrl ? { PUBLIC_URL: publicUrl } : {}) });
      try {
        assert.equal(server.logs.some((line) => line.includes(warning)), warned, `PUBLIC_URL ${publicUrl ?? 'unset'}`);
      } finally {
        await server.close();
      }
    }
    const withoutSmtp = await startServer({ SMTP_URL: '' });
    try {
      assert.ok(!withoutSmtp.logs.some((line) => line.includes(warning)), 'no emails, no warning');
    } finally {
      await withoutSmtp.close();
    }
  });
});

describe('forgot-password without SMTP_URL', () => {
  let server: TestServer;
  before(async () => {
    server = await startServer({ PUBLIC_URL: 'http://guidon.test', SMTP_URL: '' });
  });
  after(() => server.close());

  test('answers 200 and logs the reset link with a warning; the logged link works', async () => {
    const user = await account(server);
    const answer = await forgotPassword(server, user.email);
    assert.equal(answer.status, 200, answer.text);
    assert.deepEqual(Object.keys(answer.body), ['message']);

    let line: string | undefined;
    await eventually(() => (line = server.logs.find((text) => RESET_LINK.test(text))) !== undefined, 'the reset link in the logs');
    const entry = JSON.parse(line!) as { level: number; msg?: string };
    assert.equal(entry.level, 40, 'logged at warn level');
    assert.equal(typeof entry.msg, 'string');

    const token = new URL(RESET_LINK.exec(line!)![0]).searchParams.get('token');
    assert.ok(token);
    const reset = await resetPassword(server, { token, newPassword: 'from the logged link' });
    assert.equal(reset.status, 200, reset.text);
    assert.equal((await login(server, { email: user.email, password: 'from the logged link' })).status, 200);
  });

  test('no link is logged for an unknown email, and the answer is the same', async () => {
    const known = await account(server);
    const unknown = freshEmail('ghost');
    const forUnknown = await forgotPassword(server, unknown);
    const forKnown = await forgotPassword(server, known.email);
    assert.equal(forUnknown.status, forKnown.status);
    assert.equal(forUnknown.text, forKnown.text);
    await eventually(() => server.logs.some((text) => text.includes(known.email) && RESET_LINK.test(text)), 'the link for the known account');
    assert.ok(!server.logs.some((text) => text.includes(unknown) && RESET_LINK.test(text)), 'no link for an unknown address');
  });
});

describe('logs', () => {
  let server: TestServer;
  before(async () => {
    server = await startServer();
  });
  after(() => server.close());

  test('never contain passwords, login tokens or SDK keys; request lines carry a request id', async () => {
    const email = freshEmail('logs');
    const password = 'Pa55-word-that-must-not-leak-7f3a';
    const wrongPassword = 'Wr0ng-password-that-must-not-leak-91c2';

    const registered = await register(server, { email, password });
    assert.equal(registered.status, 201, registered.text);
    assertError(await login(server, { email, password: wrongPassword }), 401);
    const loggedIn = await login(server, { email, password });
    assert.equal(loggedIn.status, 200, loggedIn.text);
    const token: string = loggedIn.body.token;
    const user: TestUser = { id: registered.body.id, email, password, token };
    assert.equal((await me(server, `Bearer ${token}`)).status, 200);
    assertError(await me(server, `Bearer ${token}tampered`), 401);
    const project = await newProject(server, user, 'log check');
    const evaluated = await evaluate(server, project.sdk_key, 'production', { user_id: 'u-1' });
    assert.equal(evaluated.status, 200, evaluated.text);
    assertError(await evaluate(server, `${project.sdk_key}x`, 'production', { user_id: 'u-1' }), 401);

    // Every request has been logged as completed before the logs are read. Evaluate writes no
    // per-request lines (it is called thousands of times a second), but its keys still must not leak.
    const requests = 7; // register, login ×2, me ×2, create project, list environments
    const completed = () => server.logs.filter((line) => line.includes('"request completed"')).length;
    await eventually(() => completed() >= requests, 'request completion log lines');

    const all = server.logs.join('\n');
    assert.ok(all.length > 0);
    assert.ok(!all.includes(password), 'no password');
    assert.ok(!all.includes(wrongPassword), 'no failed password');
    assert.ok(!all.includes(token), 'no login token');
    assert.ok(!all.includes(token.split('.')[2]!), 'no login token signature');
    assert.ok(!all.includes(project.sdk_key), 'no SDK key');
    assert.ok(!all.includes(project.sdk_key.replace(/^sdk_/, '')), 'no SDK key body');

    const entries = server.logs.map((line) => JSON.parse(line) as { reqId?: unknown; req?: unknown; res?: unknown; msg?: string });
    const requestLines = entries.filter((entry) => entry.req !== undefined || entry.res !== undefined);
    assert.ok(requestLines.length >= 2 * requests, 'incoming and completed lines are logged');
    for (const entry of requestLines) {
      assert.equal(typeof entry.reqId, 'string', `a request line without reqId: ${JSON.stringify(entry)}`);
      assert.ok((entry.reqId as string).length > 0);
    }
    // Each request has its own id, shared by its incoming and completed lines.
    const incoming = new Set(entries.filter((entry) => entry.msg === 'incoming request').map((entry) => entry.reqId));
    const done = entries.filter((entry) => entry.msg === 'request completed').map((entry) => entry.reqId);
    assert.equal(new Set(done).size, done.length, 'request ids are unique');
    for (const id of done) assert.ok(incoming.has(id), `request ${String(id)} has an incoming line with the same id`);
  });
});

describe('DELETE /api/me: deleting one\'s own account (docs/api.md, Account)', () => {
  const JWT_SECRET = 'account-removal-test-secret-5e2d9c1f7a3b';
  let server: TestServer;
  before(async () => {
    server = await startServer({ JWT_SECRET });
  });
  after(() => server?.close());

  const remove = (token: string, body?: unknown) => request(server, 'DELETE', '/api/me', { token, body });
  const invite = async (owner: TestUser, projectId: string, email: string, role = 'editor') => {
    const invited = await request(server, 'POST', `/api/projects/${projectId}/members`, { token: owner.token, body: { email, role } });
    assert.equal(invited.status, 201, invited.text);
    return invited.body.id as string;
  };
  const rowsOf = async (userId: string) => ({
    users: (await server.database.db.selectFrom('users').select('id').where('id', '=', userId).execute()).length,
    tokens: (await server.database.db.selectFrom('api_tokens').select('id').where('user_id', '=', userId).execute()).length,
    memberships: (await server.database.db.selectFrom('project_members').select('id').where('user_id', '=', userId).execute()).length,
  });

  test('confirmed by its password: 204; tokens and sessions fail at once, memberships end, invitations are withdrawn, the email may register again', async () => {
    const alice = await newUser(server, 'leaving');
    const bob = await newUser(server, 'staying');
    const carol = await newUser(server, 'inviting');
    const solo = await newProject(server, alice, 'Only mine');
    const shared = await newProject(server, bob, 'Shared');
    await addMember(server, bob, shared.id, alice, 'editor');
    const herFlag = await request(server, 'POST', `/api/projects/${shared.id}/environments/${shared.production}/flags`, { token: alice.token, body: { key: 'hers', name: 'hers' } });
    assert.equal(herFlag.status, 201);
    const pending = await newProject(server, carol, 'Pending');
    const invitation = await invite(carol, pending.id, alice.email);
    const apiToken = (await request(server, 'POST', '/api/tokens', { token: alice.token, body: { name: 'ci' } })).body.token as string;
    const otherSession = (await request(server, 'POST', '/auth/login', { body: { email: alice.email, password: alice.password } })).body.token as string;
    assert.equal((await evaluate(server, solo.sdk_key, 'production')).status, 200);

    // Refusals change nothing: no password (400), a wrong one (403), an API token (403).
    assert.equal((await remove(alice.token, {})).status, 400);
    const wrong = await remove(alice.token, { password: 'not my password' });
    assert.equal(wrong.status, 403);
    assert.match(wrong.body.message, /password/i);
    assert.equal((await remove(apiToken, { password: alice.password })).status, 403, 'an API token cannot delete its account');
    assert.deepEqual(await rowsOf(alice.id), { users: 1, tokens: 1, memberships: 2 });

    assert.equal((await remove(alice.token, { password: alice.password })).status, 204);
    for (const token of [alice.token, otherSession, apiToken]) assert.equal((await request(server, 'GET', '/api/me', { token })).status, 401);
    assert.equal((await request(server, 'POST', '/auth/login', { body: { email: alice.email, password: alice.password } })).status, 401);
    assert.equal((await evaluate(server, solo.sdk_key, 'production')).status, 401, 'the project she alone belonged to is gone');
    assert.deepEqual(await rowsOf(alice.id), { users: 0, tokens: 0, memberships: 0 });

    const members = (await request(server, 'GET', `/api/projects/${shared.id}/members`, { token: bob.token })).body;
    assert.deepEqual(members.map((m: { email: string }) => m.email), [bob.email]);
    const audit = (await request(server, 'GET', `/api/projects/${shared.id}/audit`, { token: bob.token })).body.items;
    const byHer = { user_id: alice.id, email: alice.email, token_id: null };
    assert.deepEqual([audit[0].action, audit[0].actor], ['member.removed', byHer], 'she left');
    assert.deepEqual(audit.find((event: { action: string }) => event.action === 'flag.created').actor, byHer, 'her changes keep her id and email');
    assert.deepEqual((await request(server, 'GET', `/api/projects/${pending.id}/members`, { token: carol.token })).body.map((m: { email: string }) => m.email), [carol.email], 'the invitation to her is withdrawn');
    assert.equal((await request(server, 'GET', `/api/projects/${pending.id}/audit?resource_id=${invitation}`, { token: carol.token })).body.items[0].action, 'member.removed');

    // The address is free again: a new account, with nothing of the old one.
    const again = await request(server, 'POST', '/auth/register', { body: { email: alice.email, password: 'a new beginning' } });
    assert.equal(again.status, 201, again.text);
    assert.notEqual(again.body.id, alice.id);
    const fresh = (await request(server, 'POST', '/auth/login', { body: { email: alice.email, password: 'a new beginning' } })).body.token;
    assert.deepEqual((await request(server, 'GET', '/api/projects', { token: fresh })).body, []);
  });

  test('the last owner of projects with other members: 409 naming them, and nothing changes; once someone else owns them, 204', async () => {
    const dave = await newUser(server, 'last-owner');
    const erin = await newUser(server, 'teammate');
    const teams = [await newProject(server, dave, 'Team A'), await newProject(server, dave, 'Team B')];
    await newProject(server, dave, 'Mine alone');
    const memberships = [];
    for (const team of teams) memberships.push(await addMember(server, dave, team.id, erin, 'editor'));
    const refused = await remove(dave.token, { password: dave.password });
    assert.equal(refused.status, 409, refused.text);
    assert.match(refused.body.message, /"Team A", "Team B"/);
    assert.equal((await request(server, 'GET', '/api/projects', { token: dave.token })).body.length, 3, 'nothing deleted');

    for (const [index, team] of teams.entries()) {
      assert.equal((await request(server, 'PUT', `/api/projects/${team.id}/members/${memberships[index]!.id}`, { token: dave.token, body: { role: 'owner' } })).status, 200);
    }
    assert.equal((await remove(dave.token, { password: dave.password })).status, 204);
    assert.deepEqual((await request(server, 'GET', '/api/projects', { token: erin.token })).body.map((p: { name: string }) => p.name).sort(), ['Team A', 'Team B']);
    const creators = await server.database.db.selectFrom('projects').select('owner_id').where('id', 'in', teams.map((team) => team.id)).execute();
    assert.deepEqual(creators.map((row) => row.owner_id), [erin.id, erin.id], 'a kept project names an account that exists');
  });

  test('an account without a password (OpenID) confirms with a login less than 10 minutes old; an unverified one leaves its address\'s invitations', async () => {
    const owner = await newUser(server, 'inviter');
    const project = await newProject(server, owner, 'Waiting');
    const frank = await newUser(server, 'sso-only', { verified: false });
    await invite(owner, project.id, frank.email);
    // As an account made by an OpenID sign-in: no password.
    await server.database.db.updateTable('users').set({ password_hash: '' }).where('id', '=', frank.id).execute();
    const { tv } = decodeJwt(frank.token) as { tv: number };
    const issuedAt = Math.floor(Date.now() / 1000) - 11 * 60;
    const stale = await new SignJWT({ tv }).setProtectedHeader({ alg: 'HS256', typ: 'JWT' }).setSubject(frank.id).setJti('stale-login').setIssuedAt(issuedAt).setExpirationTime(issuedAt + 86_400).sign(new TextEncoder().encode(JWT_SECRET));
    assert.equal((await request(server, 'GET', '/api/me', { token: stale })).status, 200, 'a valid login, 11 minutes old');
    const old = await remove(stale, {});
    assert.equal(old.status, 403);
    assert.match(old.body.message, /Sign in again/);
    assert.equal((await remove(frank.token)).status, 204, 'a fresh login (no body needed)');
    assert.equal((await request(server, 'GET', '/api/me', { token: stale })).status, 401);
    // Whoever held an unproven account may not be the address's owner: its invitations stay for the owner.
    assert.deepEqual((await request(server, 'GET', `/api/projects/${project.id}/members`, { token: owner.token })).body.map((m: { email: string; status: string }) => [m.email, m.status]), [[owner.email, 'active'], [frank.email, 'invited']]);
  });
});
