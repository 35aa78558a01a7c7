/** Test harness: a real server on a real port with a fresh SQLite file, and a small HTTP client. */
import diagnostics from 'node:diagnostics_channel';
import { Writable } from 'node:stream';
import { createServer, type AddressInfo } from 'node:net';
import { buildApp, type BuildOptions } from '../src/app.js';
import type { App } from '../src/http/plugin.js';
import { loadConfig, type Config } from '../src/config.js';
import { openDatabase, type Database } from '../src/db/database.js';
import { createTestDatabase, type TestDatabase } from './test-database.js';
import { linkToken, startMailbox, type Mailbox } from './mailbox.js';

export interface TestServer {
  url: string;
  app: App;
  config: Readonly<Config>;
  database: Database;
  /** Every log line the server wrote, as text. */
  logs: string[];
  /** The SMTP server its emails go to, started with it unless the test set SMTP_URL (null then). */
  mailbox: Mailbox | null;
  close(): Promise<void>;
}

/**
 * Two servers on one new database, as two instances behind a load balancer; `close` stops both
 * and drops the database. For a suite: `before(async () => ({ a, b, close } = await startTwoInstances()))`.
 */
export async function startTwoInstances(): Promise<{ a: TestServer; b: TestServer; close: () => Promise<void> }> {
  const database = await createTestDatabase();
  const a = await startServer({}, { database });
  const b = await startServer({}, { database });
  return {
    a,
    b,
    close: async () => {
      await a.close();
      await b.close();
      await database.drop();
    },
  };
}

/**
 * Starts the service as main.ts would, on 127.0.0.1 (or options.host) and a free port, on a fresh
 * database (see test-database.ts), sending its emails to a mailbox of its own (SMTP_URL: '' for
 * none). Rate limits are off unless the test sets them (a file registers far more users than 60 a
 * minute).
 */
export async function startServer(
  env: Record<string, string> = {},
  options: { database?: TestDatabase; revisionCheckIntervalMs?: number; webhooks?: BuildOptions['webhooks']; scheduler?: BuildOptions['scheduler']; releaser?: BuildOptions['releaser']; changeNotifications?: boolean; port?: number; host?: string } = {},
): Promise<TestServer> {
  // A database passed in is shared with other servers: the caller drops it.
  const testDatabase = options.database ?? (await createTestDatabase());
  const mailbox = env.SMTP_URL === undefined ? await startMailbox() : null;
  const config = loadConfig({
    DATABASE_URL: testDatabase.url,
    HOST: '127.0.0.1',
    PORT: '0',
    LOG_LEVEL: 'info',
    RATE_LIMIT_EVALUATE: '0',
    RATE_LIMIT_AUTH: '0',
    ...(mailbox ? { SMTP_URL: mailbox.url } : {}),
    ...env,
  });
  const logs: string[] = [];
  const logStream = new Writable({
    write(chunk, _encoding, done) {
      logs.push(String(chunk));
      done();
    },
  });
  const database = await openDatabase(config.database, { poolSize: config.databasePoolSize });
  const app = await buildApp(config, database, { logStream, revisionCheckIntervalMs: options.revisionCheckIntervalMs, webhooks: options.webhooks, scheduler: options.scheduler, releaser: options.releaser, changeNotifications: options.changeNotifications });
  const host = options.host ?? '127.0.0.1';
  await app.listen({ port: options.port ?? 0, host });
  const { port } = app.server.address() as AddressInfo;
  return {
    url: `http://${host}:${port}`,
    app,
    config,
    database,
    logs,
    mailbox,
    async close() {
      await app.close();
      await database.close().catch(() => undefined); // a test may have closed it already
      if (!options.database) await testDatabase.drop();
      await mailbox?.close();
    },
  };
}

export interface Answer<T = any> {
  status: number;
  headers: Headers;
  /** Parsed JSON when the answer is JSON, else the text. */
  body: T;
  text: string;
}

export interface RequestOptions {
  token?: string;
  sdkKey?: string;
  headers?: Record<string, string>;
  /** Sent as JSON; a string is sent as it is (with content-type application/json unless headers say otherwise). */
  body?: unknown;
}

export async function request<T = any>(server: { url: string }, method: string, path: string, options: RequestOptions = {}): Promise<Answer<T>> {
  const headers: Record<string, string> = { ...options.headers };
  if (options.token) headers.authorization = `Bearer ${options.token}`;
  if (options.sdkKey) headers['x-sdk-key'] = options.sdkKey;
  let body: string | undefined;
  if (options.body !== undefined) {
    body = typeof options.body === 'string' ? options.body : JSON.stringify(options.body);
    headers['content-type'] ??= 'application/json';
  }
  const response = await fetch(server.url + path, { method, headers, body });
  const text = await response.text();
  const isJson = (response.headers.get('content-type') ?? '').includes('application/json');
  return { status: response.status, headers: response.headers, body: isJson && text ? JSON.parse(text) : text, text };
}

let userCounter = 0;

export interface TestUser {
  id: string;
  email: string;
  password: string;
  token: string;
}

/**
 * Registers a new user and logs in; then, unless told otherwise, verifies the address as a person
 * would (docs/api.md, Account): opens the link of the verification email the server sent to its mailbox.
 */
export async function newUser(server: { url: string; mailbox?: Mailbox | null }, prefix = 'user', { verified = true } = {}): Promise<TestUser> {
  const email = `${prefix}${++userCounter}-${process.pid}@example.com`;
  const password = 'correct horse battery';
  const registered = await request(server, 'POST', '/auth/register', { body: { email, password } });
  if (registered.status !== 201) throw new Error(`register failed: ${registered.status} ${registered.text}`);
  const login = await request(server, 'POST', '/auth/login', { body: { email, password } });
  if (login.status !== 200) throw new Error(`login failed: ${login.status} ${login.text}`);
  const user = { id: registered.body.id, email, password, token: login.body.token };
  if (verified) await verifyEmail(server, user);
  return user;
}

/** Opens the link of the newest verification email to the user (POST /auth/verify-email with its token). */
export async function verifyEmail(server: { url: string; mailbox?: Mailbox | null }, user: { email: string }): Promise<void> {
  if (!server.mailbox) throw new Error('this server has no test mailbox: start it with startServer() and no SMTP_URL, or pass { verified: false }');
  const mailbox = server.mailbox;
  const mails = () => mailbox.to(user.email).filter((mail) => mail.text.includes('/verify-email?token='));
  await eventually(() => mails().length > 0, `the verification email to ${user.email}`);
  const verified = await request(server, 'POST', '/auth/verify-email', { body: { token: linkToken(mails().at(-1)!, '/verify-email') } });
  if (verified.status !== 200) throw new Error(`verify-email failed: ${verified.status} ${verified.text}`);
}

/** One item of evaluation history as the API answers it (docs/api.md, Evaluation history). */
export interface HistoryItem {
  id: string;
  environment_id: string;
  flag_id: string;
  flag_key: string;
  user_id: string | null;
  enabled: boolean;
  reason: string;
  evaluated_at: string;
}

export interface TestProject {
  id: string;
  sdk_key: string;
  production: string;
  staging: string;
}

/** Creates a project and returns its id, SDK key and the ids of its two environments. */
export async function newProject(server: { url: string }, user: TestUser, name = 'Test project'): Promise<TestProject> {
  const created = await request(server, 'POST', '/api/projects', { token: user.token, body: { name } });
  if (created.status !== 201) throw new Error(`create project failed: ${created.status} ${created.text}`);
  const environments = await request(server, 'GET', `/api/projects/${created.body.id}/environments`, { token: user.token });
  const idOf = (key: string) => environments.body.find((env: { key: string }) => env.key === key).id as string;
  return { id: created.body.id, sdk_key: created.body.sdk_key, production: idOf('production'), staging: idOf('staging') };
}

/**
 * Makes `member` a member of the project with `role`, as people do (docs/api.md, Members): the
 * owner invites the address, the member accepts. Returns the membership.
 */
export async function addMember(server: { url: string }, owner: TestUser, projectId: string, member: TestUser, role: 'viewer' | 'editor' | 'owner') {
  const invited = await request(server, 'POST', `/api/projects/${projectId}/members`, { token: owner.token, body: { email: member.email, role } });
  if (invited.status !== 201) throw new Error(`invite failed: ${invited.status} ${invited.text}`);
  const accepted = await request(server, 'POST', `/api/invitations/${invited.body.id}/accept`, { token: member.token });
  if (accepted.status !== 200) throw new Error(`accept failed: ${accepted.status} ${accepted.text}`);
  return accepted.body as { id: string; user_id: string; email: string; role: string; status: 'active'; created_at: string };
}

export const flagsPath = (project: TestProject, envId = project.production) => `/api/projects/${project.id}/environments/${envId}/flags`;

export async function newFlag(server: { url: string }, user: TestUser, project: TestProject, fields: Record<string, unknown>, envId = project.production) {
  const created = await request(server, 'POST', flagsPath(project, envId), { token: user.token, body: { name: String(fields.key), ...fields } });
  if (created.status !== 201) throw new Error(`create flag failed: ${created.status} ${created.text}`);
  return created.body as { id: string; key: string; enabled: boolean; rollout_percentage: number };
}

export async function evaluate(server: { url: string }, sdkKey: string, environment: string, context: Record<string, unknown> = {}) {
  return request<{ flags: Record<string, { enabled: boolean; reason: string; variant?: string; value?: any }> }>(server, 'POST', '/sdk/v1/evaluate', {
    sdkKey,
    body: { environment, context },
  });
}

/** The project's revision as stored (what a stream's ids and a ruleset's `revision` name). */
export async function storedRevision(server: Pick<TestServer, 'database'>, projectId: string): Promise<number> {
  return Number((await server.database.db.selectFrom('projects').select('revision').where('id', '=', projectId).executeTakeFirstOrThrow()).revision);
}

/** Polls until check() holds (history, emails and other instances arrive a little later); fails after timeoutMs. */
export async function eventually(check: () => boolean | Promise<boolean>, what: string, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** Ports this process handed out: two calls before either port is bound must not get the same one. */
const handedOut = new Set<number>();

/** A TCP port nothing listens on right now, and not handed out before in this process. */
export async function freePort(): Promise<number> {
  for (;;) {
    const probe = createServer();
    await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
    const { port } = probe.address() as AddressInfo;
    await new Promise((resolve) => probe.close(resolve));
    if (handedOut.has(port)) continue;
    handedOut.add(port);
    return port;
  }
}

/**
 * The request ids of the requests whose route handler Fastify ran (its diagnostics channel): a 200
 * of a route with a direct path (evaluate, the ruleset) that is not in it was the direct path's.
 */
export function fastifyHandled(): { ids: Set<string>; stop(): void } {
  const ids = new Set<string>();
  const listener = (message: unknown) => ids.add((message as { request: { id: string } }).request.id);
  diagnostics.subscribe('tracing:fastify.request.handler:start', listener);
  return { ids, stop: () => diagnostics.unsubscribe('tracing:fastify.request.handler:start', listener) };
}
