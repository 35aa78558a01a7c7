/**
 * What must never leak or be accepted: no secret in any log line (at LOG_LEVEL=trace) of a run
 * through register, login, password reset, evaluate and key regeneration; login tokens signed with
 * any algorithm but HS256 are refused; CORS answers only the origins in CORS_ORIGINS.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { SignJWT, UnsecuredJWT } from 'jose';
import { evaluate, eventually, newProject, request, startServer, type TestServer } from './harness.js';
import { linkToken, type Mail } from './mailbox.js';

/**
 * Secrets by shape: whatever their value, none of these may appear in a log line. Add a line
 * when a feature brings a new kind of secret (the `gdn_` API tokens are already here;
 * stream tokens, webhook secrets next).
 */
const SECRET_SHAPES: [string, RegExp][] = [
  ['login token (JWT)', /eyJ[\w-]{10,}\.eyJ[\w-]{10,}\.[\w-]{20,}/],
  ['SDK key', /sdk_[\w-]{20,}/],
  ['API token', /gdn_[\w-]{20,}/],
  ['reset or verification link token', /[?&]token=(?!\[redacted\])[\w-]{20,}/],
  ['invitation link secret', /[?&]invitation=(?!\[redacted\])[\w-]{20,}/],
  ['bearer credential', /Bearer\s+(?!\[redacted\])\S{8,}/i],
];

describe('secrets never reach the logs', () => {
  let server: TestServer;
  /** The newest email to the address with a link to `path`. */
  async function mailWith(address: string, path: string): Promise<Mail> {
    const found = () => server.mailbox!.to(address).filter((mail) => mail.text.includes(`${path}?`));
    await eventually(() => found().length > 0, `an email with a ${path} link`);
    return found().at(-1)!;
  }

  before(async () => {
    server = await startServer({ LOG_LEVEL: 'trace', PUBLIC_URL: 'http://guidon.test' });
  });
  after(() => server?.close());

  test('register, verify, invite, login, reset, log out, evaluate, regenerate-key: no password, token or key in any line', async () => {
    const secrets: [string, string][] = [];
    const email = `secrets-${process.pid}@example.com`;
    const password = 'Pa55-word-that-must-not-leak-7f3a';
    const newPassword = 'N3w-password-that-must-not-leak-c21e';
    const wrongPassword = 'Wr0ng-password-that-must-not-leak-91c2';
    secrets.push(['password', password], ['new password', newPassword], ['wrong password', wrongPassword]);

    assert.equal((await request(server, 'POST', '/auth/register', { body: { email, password } })).status, 201);
    assert.equal((await request(server, 'POST', '/auth/register', { body: { email: 'short@example.com', password: 'short' } })).status, 400);
    assert.equal((await request(server, 'POST', '/auth/login', { body: { email, password: wrongPassword } })).status, 401);
    const login = await request(server, 'POST', '/auth/login', { body: { email, password } });
    assert.equal(login.status, 200);
    const token: string = login.body.token;
    secrets.push(['login token', token], ['login token signature', token.split('.')[2]!]);
    const user = { id: '', email, password, token };

    // Verification: the link as a browser opens it (the dashboard's page), then the API call.
    const verifyToken = linkToken(await mailWith(email, '/verify-email'), '/verify-email');
    secrets.push(['verification token', verifyToken]);
    await request(server, 'GET', `/verify-email?token=${verifyToken}`, { headers: { accept: 'text/html' } });
    assert.equal((await request(server, 'POST', '/auth/resend-verification', { token })).status, 202);
    assert.equal((await request(server, 'POST', '/auth/verify-email', { body: { token: verifyToken } })).status, 200);

    // Password reset: the token travels by email only.
    assert.equal((await request(server, 'POST', '/auth/forgot-password', { body: { email } })).status, 200);
    const resetToken = linkToken(await mailWith(email, '/reset-password'), '/reset-password');
    secrets.push(['reset token', resetToken]);
    // The link as a browser opens it (the dashboard's page): the query string is logged.
    await request(server, 'GET', `/reset-password?token=${resetToken}`);
    assert.equal((await request(server, 'POST', '/auth/reset-password', { body: { token: 'bogus-token-value-0123456789abcdef', newPassword } })).status, 400);
    const reset = await request(server, 'POST', '/auth/reset-password', { body: { token: resetToken, newPassword } });
    assert.equal(reset.status, 200, reset.text);
    const again = await request(server, 'POST', '/auth/login', { body: { email, password: newPassword } });
    assert.equal(again.status, 200);
    user.token = again.body.token;
    secrets.push(['second login token', user.token]);
    const third = (await request(server, 'POST', '/auth/login', { body: { email, password: newPassword } })).body.token as string;
    secrets.push(['logged out login token', third]);
    assert.equal((await request(server, 'POST', '/auth/logout', { token: third })).status, 204);
    assert.equal((await request(server, 'GET', '/api/me', { token: third })).status, 401);

    // Evaluate with a good and a bad key, keys in headers, in the query string, as a bearer.
    const project = await newProject(server, user, 'secrets');
    secrets.push(['SDK key', project.sdk_key]);
    // An invitation: its secret travels by email only; the link as a browser opens it, then sign-up with it.
    const invitee = `invitee-${process.pid}@example.com`;
    assert.equal((await request(server, 'POST', `/api/projects/${project.id}/members`, { token: user.token, body: { email: invitee, role: 'viewer' } })).status, 201);
    const invitation = linkToken(await mailWith(invitee, '/register'), '/register', 'invitation');
    secrets.push(['invitation secret', invitation]);
    await request(server, 'GET', `/register?invitation=${invitation}`, { headers: { accept: 'text/html' } });
    assert.equal((await request(server, 'POST', '/auth/register', { body: { email: invitee, password, invitation_token: invitation } })).status, 201);
    assert.equal((await evaluate(server, project.sdk_key, 'production', { user_id: 'u1' })).status, 200);
    assert.equal((await evaluate(server, `${project.sdk_key}x`, 'production')).status, 401);
    await request(server, 'GET', `/api/projects?sdk_key=${project.sdk_key}&token=${user.token}`, { token: user.token });
    await request(server, 'GET', '/api/me', { headers: { authorization: `Bearer ${project.sdk_key}` } });
    const regenerated = await request(server, 'POST', `/api/projects/${project.id}/regenerate-key`, { token: user.token });
    assert.equal(regenerated.status, 200);
    secrets.push(['regenerated SDK key', regenerated.body.sdk_key]);
    assert.equal((await evaluate(server, regenerated.body.sdk_key, 'production')).status, 200);
    assert.equal((await evaluate(server, project.sdk_key, 'production')).status, 401);

    await eventually(() => server.logs.filter((line) => line.includes('"request completed"')).length >= 14, 'the request lines');
    const lines = server.logs;
    assert.ok(lines.some((line) => /"level":10/.test(line) || /"level":20/.test(line) || /"level":30/.test(line)), 'lines were captured');
    for (const line of lines) {
      for (const [name, value] of secrets) assert.ok(!line.includes(value), `${name} in a log line: ${line}`);
      for (const [name, shape] of SECRET_SHAPES) assert.doesNotMatch(line, shape, `a ${name} in a log line`);
    }
    assert.ok(lines.some((line) => line.includes('token=[redacted]')), 'the query string is logged, its secrets redacted');
    assert.ok(lines.some((line) => line.includes('invitation=[redacted]')), 'the invitation link too');
  });
});

describe('login tokens: HS256 only', () => {
  const secret = 'a-secret-of-the-test-that-is-long-enough-0123456789';
  let server: TestServer;
  before(async () => {
    server = await startServer({ JWT_SECRET: secret });
  });
  after(() => server?.close());

  test('the same claims and key with alg none, HS384, HS512 are refused; HS256 passes', async () => {
    const email = `alg-${process.pid}@example.com`;
    const registered = await request(server, 'POST', '/auth/register', { body: { email, password: 'correct horse battery' } });
    const key = new TextEncoder().encode(secret);
    const now = Math.floor(Date.now() / 1000);
    const claims = { sub: registered.body.id, tv: 0, iat: now, exp: now + 3600 };
    const sign = (alg: string) => new SignJWT(claims).setProtectedHeader({ alg, typ: 'JWT' }).sign(key);
    const me = (token: string) => request(server, 'GET', '/api/me', { token });
    assert.equal((await me(await sign('HS256'))).status, 200, 'the control token, rightly signed, passes');
    for (const token of [await sign('HS384'), await sign('HS512'), new UnsecuredJWT(claims).encode()]) {
      const answer = await me(token);
      assert.equal(answer.status, 401, token);
      assert.deepEqual(answer.body, { statusCode: 401, error: 'Unauthorized', message: 'Unauthorized' });
    }
  });
});

describe('CORS limited to CORS_ORIGINS', () => {
  let server: TestServer;
  let closed: TestServer;
  before(async () => {
    server = await startServer({ CORS_ORIGINS: 'https://app.example.com,https://admin.example.com' });
    closed = await startServer();
  });
  after(async () => {
    await server?.close();
    await closed?.close();
  });

  const preflight = (target: TestServer, origin: string) =>
    request(target, 'OPTIONS', '/api/projects', { headers: { origin, 'access-control-request-method': 'POST', 'access-control-request-headers': 'authorization,content-type' } });

  test('an allowed origin gets its CORS headers, on a preflight and on the request', async () => {
    const answer = await preflight(server, 'https://admin.example.com');
    assert.ok(answer.status < 300, `preflight ${answer.status}`);
    assert.equal(answer.headers.get('access-control-allow-origin'), 'https://admin.example.com');
    assert.match(answer.headers.get('access-control-allow-methods') ?? '', /POST/);
    const evaluated = await request(server, 'POST', '/sdk/v1/evaluate', { headers: { origin: 'https://app.example.com' }, body: { environment: 'production' } });
    assert.equal(evaluated.headers.get('access-control-allow-origin'), 'https://app.example.com');
  });

  test('another origin, a look-alike and null get none', async () => {
    for (const origin of ['https://evil.example.com', 'https://app.example.com.evil.io', 'http://app.example.com', 'null']) {
      const answer = await preflight(server, origin);
      assert.equal(answer.headers.get('access-control-allow-origin'), null, origin);
      const plain = await request(server, 'GET', '/health', { headers: { origin } });
      assert.equal(plain.headers.get('access-control-allow-origin'), null, origin);
    }
  });

  test('without CORS_ORIGINS no origin gets CORS headers', async () => {
    const answer = await preflight(closed, 'https://app.example.com');
    assert.equal(answer.headers.get('access-control-allow-origin'), null);
  });
});
