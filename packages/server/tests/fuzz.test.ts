/**
 * Hostile input, property-based (fast-check): random requests to every route of the route table
 * (read from the running app, so routes added later are fuzzed without a change here), with every
 * kind of credential. Invariants for each request: never a 5xx, the server stays up, an error body
 * is exactly docs/api.md shape, and a refused request leaves the database as it was.
 *
 * FUZZ_SEED replays a run (the seed is printed); FUZZ_RUNS runs more (default 10,000 per database,
 * so 20,000 in each npm test). FUZZ_SHRINK=1 shrinks a failure to a smaller request.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { Agent, request as httpRequest } from 'node:http';
import fc from 'fast-check';
import { sql } from 'kysely';
import { SignJWT } from 'jose';
import { onPostgres } from './test-database.js';
import { newFlag, newProject, newUser, request, startServer, type TestProject, type TestServer, type TestUser } from './harness.js';

// Each database pass of npm test runs its own seed: 2 × 10,000 requests per CI run.
const SEED = Number(process.env.FUZZ_SEED ?? (onPostgres ? 20261123 : 20261122));
const RUNS = Number(process.env.FUZZ_RUNS ?? 10_000);

// ---------------------------------------------------------------------------------------------
// The route table, read from the app: every method of every route, and its OpenAPI body schema.

interface RouteEntry {
  method: string;
  /** Fastify path: /api/projects/:project_id, /docs/* */
  path: string;
  bodySchema?: JsonSchema;
  querySchema?: Record<string, JsonSchema>;
}

type JsonSchema = { [key: string]: any };

/**
 * printRoutes draws the radix tree: each line adds its segment to its parent's path
 * ("/api/me" then "trics" is /api/metrics) and lists the methods.
 */
function routesOf(server: TestServer): RouteEntry[] {
  const tree = server.app.printRoutes({ commonPrefix: false });
  const stack: { depth: number; path: string }[] = [];
  const routes: RouteEntry[] = [];
  const doc = server.app.swagger() as { paths: Record<string, Record<string, any>>; components?: { schemas?: Record<string, JsonSchema> } };
  for (const line of tree.split('\n')) {
    const match = /^([│\s]*)[├└]── (\S+)(?: \(([^)]+)\))?/.exec(line);
    if (!match) continue;
    const depth = match[1]!.length;
    while (stack.length > 0 && stack[stack.length - 1]!.depth >= depth) stack.pop();
    const path = (stack[stack.length - 1]?.path ?? '') + match[2]!;
    stack.push({ depth, path });
    for (const method of (match[3] ?? '').split(',').map((m) => m.trim()).filter(Boolean)) {
      const operation = doc.paths[path.replace(/:(\w+)/g, '{$1}')]?.[method.toLowerCase()];
      const body = operation?.requestBody?.content?.['application/json']?.schema;
      const query = Object.fromEntries(
        ((operation?.parameters ?? []) as { in: string; name: string; schema: JsonSchema }[]).filter((p) => p.in === 'query').map((p) => [p.name, p.schema]),
      );
      routes.push({ method, path, bodySchema: body, querySchema: query });
    }
  }
  return routes;
}

// ---------------------------------------------------------------------------------------------
// What a request is made of.

interface FuzzRequest {
  method: string;
  route: string;
  pathParams: PathValue[];
  query: [string, string][];
  credential: number;
  contentType: string | null;
  body: Body;
  extraHeaders: [string, string | string[]][];
}

/** A path id: a real one of the fixtures (resolved when sent, since fuzzed writes may replace them), or text of any shape. */
type PathValue = { real: 'project' | 'environment' | 'flag' | 'rule' | 'any' } | { text: string; encode: boolean };

type Body = { kind: 'none' } | { kind: 'json'; value: unknown } | { kind: 'raw'; bytes: Buffer };

const realIdNames: Record<string, 'project' | 'environment' | 'flag' | 'rule'> = { project_id: 'project', env_id: 'environment', environment_id: 'environment', flag_id: 'flag', rule_id: 'rule' };

const pathText = fc.oneof(
  fc.uuid().map((text) => ({ text, encode: true })),
  fc.constantFrom('00000000-0000-0000-0000-000000000000', 'FFFFFFFF-FFFF-4FFF-BFFF-FFFFFFFFFFFF', '{00000000-0000-4000-8000-000000000000}', '..', '.', '%', '%ZZ', '%E0%A4%A', '%00', '%2F', '%C0%AF', '-1', '0', '1e309', 'null', 'undefined', '__proto__', 'constructor').map((text) => ({ text, encode: false })),
  fc.string({ unit: 'binary', maxLength: 40 }).map((text) => ({ text, encode: true })),
  fc.integer({ min: 1, max: 6000 }).map((length) => ({ text: 'a'.repeat(length), encode: true })),
);

const pathValue = (name: string): fc.Arbitrary<PathValue> =>
  fc.oneof(
    { weight: 3, arbitrary: fc.constant({ real: realIdNames[name] ?? 'any' } as PathValue) },
    { weight: 1, arbitrary: fc.constant({ real: 'any' } as PathValue) },
    { weight: 2, arbitrary: pathText },
  );

/** Random JSON of every type, nested and wide. */
const anyJson = fc.jsonValue({ maxDepth: 4, depthSize: 'small' });

/** A value the schema describes, most of the time; sometimes any JSON instead. */
function fromSchema(schema: JsonSchema | undefined, depth = 0): fc.Arbitrary<unknown> {
  if (!schema || depth > 4) return anyJson;
  let typed: fc.Arbitrary<unknown>;
  if (schema.enum) typed = fc.constantFrom(...(schema.enum as unknown[]));
  else if (schema.anyOf || schema.oneOf) typed = fc.oneof(...((schema.anyOf ?? schema.oneOf) as JsonSchema[]).map((s) => fromSchema(s, depth + 1)));
  else if (schema.type === 'object' || schema.properties) {
    const properties = (schema.properties ?? {}) as Record<string, JsonSchema>;
    const keys = Object.keys(properties);
    typed = fc
      .record(Object.fromEntries(keys.map((key) => [key, fromSchema(properties[key], depth + 1)])), { requiredKeys: [] })
      .chain((value) => fc.dictionary(fc.string({ maxLength: 12 }), anyJson, { maxKeys: 3 }).map((extra) => ({ ...extra, ...value })));
  } else if (schema.type === 'array') typed = fc.array(fromSchema(schema.items, depth + 1), { maxLength: 5 });
  else if (schema.type === 'integer' || schema.type === 'number')
    // Bounds may be fractions (an experiment's alpha, 0.001–0.2): integers around them, and doubles within them.
    typed = fc.oneof(fc.integer({ min: Math.floor(schema.minimum ?? -10) - 2, max: Math.ceil(schema.maximum ?? 1000) + 2 }), fc.double({ min: schema.minimum ?? -10, max: schema.maximum ?? 1000, noNaN: true }), fc.constantFrom(0, -1, 1.5, 2 ** 53, -(2 ** 63), 1e308));
  else if (schema.type === 'boolean') typed = fc.boolean();
  else if (schema.type === 'string') {
    const text =
      schema.format === 'uuid'
        ? fc.uuid()
        : schema.format === 'date-time'
          ? fc.date({ noInvalidDate: true }).map((date) => date.toISOString())
          : fc.oneof(fc.string({ maxLength: 30 }), fc.emailAddress(), fc.string({ unit: 'binary', maxLength: 30 }), fc.integer({ min: 0, max: 5000 }).map((n) => 'x'.repeat(n)));
    typed = text;
  } else typed = anyJson;
  return fc.oneof({ weight: 6, arbitrary: typed }, { weight: 1, arbitrary: anyJson }, { weight: 1, arbitrary: fc.constant(null) });
}

/** Bodies no schema describes: huge, deep, broken, not JSON at all. */
const hostileBody: fc.Arbitrary<Body> = fc.oneof(
  fc.integer({ min: 1000, max: 1_200_000 }).map((n) => ({ kind: 'json' as const, value: { name: 'n'.repeat(n), key: 'k', email: 'e', password: 'p'.repeat(n) } })),
  fc.integer({ min: 1000, max: 300_000 }).map((n) => ({ kind: 'json' as const, value: Array(n).fill(0) })),
  fc.integer({ min: 10, max: 200_000 }).map((n) => ({ kind: 'raw' as const, bytes: Buffer.from('['.repeat(n) + ']'.repeat(n)) })),
  fc.integer({ min: 10, max: 100_000 }).map((n) => ({ kind: 'raw' as const, bytes: Buffer.from('{"a":'.repeat(n) + '1' + '}'.repeat(n)) })),
  fc.uint8Array({ maxLength: 200 }).map((bytes) => ({ kind: 'raw' as const, bytes: Buffer.concat([Buffer.from('{"name":"'), Buffer.from(bytes), Buffer.from('","key":"k","environment":"production"}')]) })),
  fc.constantFrom('\xff\xfe{}', '{"name":"\xc0\xaf"}', '{"name":"\xed\xa0\x80"}', '{"email":"a\xf0\x28\x8c\x28@x.io","password":"p"}').map((text) => ({ kind: 'raw' as const, bytes: Buffer.from(text, 'latin1') })),
  fc.constantFrom('', ' ', 'null', '{', '{"a":1,}', 'NaN', '"\\ud800"', '{"__proto__":{"admin":true}}', '{"constructor":{"prototype":{"x":1}}}', '{"name":"a","name":"b"}', 'a=1&b=2').map((text) => ({ kind: 'raw' as const, bytes: Buffer.from(text) })),
  fc.string({ unit: 'binary', maxLength: 200 }).map((text) => ({ kind: 'raw' as const, bytes: Buffer.from(text) })),
);

const contentType = fc.oneof(
  { weight: 8, arbitrary: fc.constant('application/json') },
  { weight: 1, arbitrary: fc.constant(null) },
  {
    weight: 2,
    arbitrary: fc.constantFrom(
      'application/json; charset=utf-8',
      'application/json; charset=latin1',
      'text/plain',
      'application/x-www-form-urlencoded',
      'multipart/form-data; boundary=x',
      'application/octet-stream',
      'application/json, text/plain',
      'application/*',
      ';;;',
      'APPLICATION/JSON',
    ),
  },
);

const headerName = fc.constantFrom('authorization', 'x-sdk-key', 'content-type', 'x-request-id', 'x-forwarded-for', 'origin', 'accept', 'if-none-match', 'cookie', 'x-custom');
const extraHeaders = fc.array(
  fc.tuple(
    headerName,
    fc.oneof(
      fc.string({ maxLength: 40 }).map((text) => text.replace(/[^\x20-\x7e]/g, '')),
      fc.array(fc.constantFrom('Bearer x', 'application/json', 'text/plain', 'a', ''), { minLength: 2, maxLength: 3 }), // the header sent several times
      fc.integer({ min: 1000, max: 20_000 }).map((n) => 'h'.repeat(n)), // up to over Node's 16 KiB header limit
    ),
  ),
  { maxLength: 3 },
);

// ---------------------------------------------------------------------------------------------
// Sending: node:http, so duplicate headers and raw bytes go out as they are.

// A connection per request: after a refused oversized request the server closes its connection.
const agent = new Agent({ keepAlive: false });

interface Sent {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
}

function send(url: string, method: string, path: string, headers: [string, string | string[]][], body: Buffer | null): Promise<Sent> {
  return new Promise((resolve, reject) => {
    const target = new URL(url);
    const outgoing: Record<string, string | string[]> = {};
    for (const [name, value] of headers) {
      const existing = outgoing[name];
      outgoing[name] = existing === undefined ? value : [...[existing].flat(), ...[value].flat()];
    }
    if (body) outgoing['content-length'] = String(body.length);
    const req = httpRequest({ host: target.hostname, port: target.port, method, path, headers: outgoing, agent }, (res) => {
      if (String(res.headers['content-type']).startsWith('text/event-stream')) {
        // A stream that opened (docs/sdk.md): its status is the answer; it would never end by itself.
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.alloc(0) });
        req.destroy();
        return;
      }
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }));
      res.on('error', reject);
    });
    req.setTimeout(30_000, () => req.destroy(new Error('no answer within 30 s')));
    req.on('error', reject);
    req.end(body ?? undefined);
  });
}

// ---------------------------------------------------------------------------------------------
// The database as the invariant sees it.

/**
 * Tables whose rows change on their own (history written after the answer) or columns a refused
 * request may legitimately touch. Extend here when a feature adds such a table or column, e.g.
 * `api_tokens: ['last_used_at']` or a webhook outbox drained in the background.
 */
// Written in the background (history, the webhook sender, the attribute names an accepted evaluate
// noted, stored up to a second later), not by the request under test.
const IGNORED_TABLES = new Set(['evaluations', 'evaluation_counts', 'evaluation_snapshots', 'environment_attributes', 'webhook_deliveries', 'webhook_attempts', 'kysely_migration', 'kysely_migration_lock']);
const IGNORED_COLUMNS: Record<string, string[]> = { api_tokens: ['last_used_at'] };

async function tableNames(server: TestServer): Promise<string[]> {
  const { db } = server.database;
  const rows =
    server.database.dialect === 'sqlite'
      ? await sql<{ name: string }>`select name from sqlite_master where type = 'table' and name not like 'sqlite_%'`.execute(db)
      : await sql<{ name: string }>`select table_name as name from information_schema.tables where table_schema = 'public'`.execute(db);
  return rows.rows.map((row) => row.name).filter((name) => !IGNORED_TABLES.has(name)).sort();
}

/** Every row of every table, as text per table. */
let snapshotMs = 0;
async function snapshot(server: TestServer, tables: string[]): Promise<Map<string, string>> {
  const started = performance.now();
  const state = new Map<string, string>();
  if (server.database.dialect === 'postgres') {
    // One round trip for every table: rows as JSON, ignored columns taken out, in a stable order.
    const columns = tables.map((table) => {
      const ignored = (IGNORED_COLUMNS[table] ?? []).map((column) => ` - '${column}'`).join('');
      return `(select coalesce(json_agg(j order by j::text)::text, '') from (select to_jsonb(x)${ignored} as j from "${table}" x) s) as "${table}"`;
    });
    const { rows } = await sql<Record<string, string>>`select ${sql.raw(columns.join(', '))}`.execute(server.database.db);
    for (const table of tables) state.set(table, rows[0]![table]!);
    snapshotMs += performance.now() - started;
    return state;
  }
  for (const table of tables) {
    const { rows } = await sql<Record<string, unknown>>`select * from ${sql.table(table)}`.execute(server.database.db);
    const ignored = IGNORED_COLUMNS[table] ?? [];
    const lines = rows.map((row) => JSON.stringify(Object.entries(row).filter(([column]) => !ignored.includes(column)), (_k, v) => (Buffer.isBuffer(v) || v instanceof Uint8Array ? Buffer.from(v).toString('hex') : v))).sort();
    state.set(table, lines.join('\n'));
  }
  snapshotMs += performance.now() - started;
  return state;
}

/** What changed between two snapshots, for the failure message ('' when nothing did). */
function changes(before: Map<string, string>, now: Map<string, string>): string {
  const changed: string[] = [];
  for (const [table, rows] of now) {
    if (before.get(table) === rows) continue;
    const old = new Set((before.get(table) ?? '').split('\n'));
    const fresh = new Set(rows.split('\n'));
    changed.push(`${table}: -${[...old].filter((r) => !fresh.has(r)).join(' ')} +${[...fresh].filter((r) => !old.has(r)).join(' ')}`.slice(0, 1000));
  }
  return changed.join('; ');
}

// ---------------------------------------------------------------------------------------------

describe('fuzz: every route, every credential, hostile input', () => {
  let server: TestServer;
  let owner: TestUser;
  let stranger: TestUser;
  let fixture: { project: TestProject; flagId: string; ruleId: string };
  let routes: RouteEntry[];
  let tables: string[];

  /** A project with a flag and a rule, (re)made when fuzzed writes deleted them. */
  async function makeFixture(): Promise<void> {
    const project = await newProject(server, owner, 'Fuzzed');
    const flag = await newFlag(server, owner, project, { key: `f-${randomUUID().slice(0, 8)}`, enabled: true });
    const rule = await request(server, 'POST', `/api/projects/${project.id}/environments/${project.production}/flags/${flag.id}/rules`, {
      token: owner.token,
      body: { rule_type: 'user_id', rule_value: 'u1' },
    });
    assert.equal(rule.status, 201, rule.text);
    fixture = { project, flagId: flag.id, ruleId: rule.body.id };
  }

  /**
   * Every kind of credential, as headers. Adding one is a line here. Index 1, the owner's login token, is drawn half of the time.
   */
  let credentials: [string, () => [string, string][]][];

  before(async () => {
    server = await startServer({ LOG_LEVEL: 'warn' });
    owner = await newUser(server, 'fuzz-owner');
    stranger = await newUser(server, 'fuzz-stranger');
    await makeFixture();
    routes = routesOf(server);
    tables = await tableNames(server);
    const key = new TextEncoder().encode('not the server secret');
    const forged = await new SignJWT({ tv: 0 }).setProtectedHeader({ alg: 'HS256' }).setSubject(owner.id).setIssuedAt().setExpirationTime('1h').sign(key);
    const unsigned = `${Buffer.from('{"alg":"none","typ":"JWT"}').toString('base64url')}.${Buffer.from(JSON.stringify({ sub: owner.id, tv: 0, iat: 1, exp: 9e9 })).toString('base64url')}.`;
    const apiToken = async (body: object) => (await request(server, 'POST', '/api/tokens', { token: owner.token, body: { name: 'fuzz', ...body } })).body.token as string;
    const userToken = await apiToken({});
    const editorToken = await apiToken({ project_id: fixture.project.id, role: 'editor' });
    credentials = [
      ['none', () => []],
      ['login token', () => [['authorization', `Bearer ${owner.token}`]]],
      ["another user's login token", () => [['authorization', `Bearer ${stranger.token}`]]],
      ['forged login token', () => [['authorization', `Bearer ${forged}`]]],
      ['alg none token', () => [['authorization', `Bearer ${unsigned}`]]],
      ['garbage bearer', () => [['authorization', 'Bearer a.b.c']]],
      ['basic auth', () => [['authorization', 'Basic dXNlcjpwYXNz']]],
      ['SDK key', () => [['x-sdk-key', fixture.project.sdk_key]]],
      ['SDK key as bearer', () => [['authorization', `Bearer ${fixture.project.sdk_key}`]]],
      ['unknown SDK key', () => [['x-sdk-key', 'sdk_unknown']]],
      ['login token and SDK key', () => [['authorization', `Bearer ${owner.token}`], ['x-sdk-key', fixture.project.sdk_key]]],
      ['API token', () => [['authorization', `Bearer ${userToken}`]]],
      ['project-scoped editor API token', () => [['authorization', `Bearer ${editorToken}`]]],
      ['API token as SDK key', () => [['x-sdk-key', editorToken]]],
    ];
  });
  after(async () => {
    agent.destroy();
    await server?.close();
  });

  test(`${RUNS} requests (FUZZ_SEED=${SEED})`, { timeout: 30 * 60_000 }, async () => {
    console.log(`fuzz: ${routes.length} routes × ${credentials.length} credentials, ${RUNS} runs, replay with FUZZ_SEED=${SEED} FUZZ_RUNS=${RUNS}`);
    const routeNames = routes.map((route) => `${route.method} ${route.path}`);
    assert.ok(routeNames.includes('POST /sdk/v1/evaluate') && routeNames.includes('DELETE /api/projects/:project_id'), 'the route table was read');

    const requestArbitrary: fc.Arbitrary<FuzzRequest> = fc.integer({ min: 0, max: routes.length - 1 }).chain((index) => {
      const route = routes[index]!;
      const names = [...route.path.matchAll(/:(\w+)|\*/g)].map((match) => match[1] ?? 'wildcard');
      const queryKeys = Object.keys(route.querySchema ?? {});
      return fc.record({
        method: fc.oneof({ weight: 12, arbitrary: fc.constant(route.method) }, { weight: 1, arbitrary: fc.constantFrom('GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS', 'HEAD') }),
        route: fc.constant(route.path),
        pathParams: fc.tuple(...names.map(pathValue)) as fc.Arbitrary<PathValue[]>,
        query: fc.array(
          fc.tuple(
            queryKeys.length > 0 ? fc.oneof(fc.constantFrom(...queryKeys), fc.string({ maxLength: 8 })) : fc.string({ maxLength: 8 }),
            fc.oneof(fc.string({ maxLength: 20 }), fc.integer().map(String), fc.constantFrom('', '-1', '0', '501', '1e3', 'true', '%ZZ', 'a'.repeat(3000))),
          ),
          { maxLength: 3 },
        ),
        // The valid login token (index 1) most often, so bodies get past the auth hook to validation and the handlers.
        credential: fc.oneof({ weight: 1, arbitrary: fc.integer({ min: 0, max: credentials.length - 1 }) }, { weight: 1, arbitrary: fc.constant(1) }),
        contentType,
        body: fc.oneof(
          { weight: 1, arbitrary: fc.constant({ kind: 'none' } as Body) },
          { weight: 5, arbitrary: fromSchema(route.bodySchema).map((value) => ({ kind: 'json', value }) as Body) },
          { weight: 2, arbitrary: anyJson.map((value) => ({ kind: 'json', value }) as Body) },
          { weight: 1, arbitrary: hostileBody },
        ),
        extraHeaders: fc.oneof({ weight: 4, arbitrary: fc.constant([] as [string, string | string[]][]) }, { weight: 1, arbitrary: extraHeaders as fc.Arbitrary<[string, string | string[]][]> }),
      });
    });

    const realId = (kind: 'project' | 'environment' | 'flag' | 'rule' | 'any', position: number): string => {
      const ids = { project: fixture.project.id, environment: fixture.project.production, flag: fixture.flagId, rule: fixture.ruleId };
      return kind === 'any' ? Object.values(ids)[position % 4]! : ids[kind];
    };

    let before = await snapshot(server, tables);
    let sent = 0;
    const slowest: [number, string][] = [];
    const statuses = new Map<number, number>();
    await fc.assert(
      fc.asyncProperty(requestArbitrary, async (fuzz) => {
        let position = 0;
        const path =
          fuzz.route.replace(/:(\w+)|\*/g, () => {
            const value = fuzz.pathParams[position]!;
            const text = 'real' in value ? realId(value.real, position) : value.encode ? encodeURIComponent(value.text) : value.text;
            position++;
            return text;
          }) + (fuzz.query.length > 0 ? `?${fuzz.query.map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(v)}`).join('&')}` : '');
        const headers: [string, string | string[]][] = [...credentials[fuzz.credential]![1](), ...fuzz.extraHeaders];
        let body: Buffer | null = null;
        if (fuzz.body.kind === 'json') body = Buffer.from(JSON.stringify(fuzz.body.value) ?? 'null');
        if (fuzz.body.kind === 'raw') body = fuzz.body.bytes;
        if (body && fuzz.contentType && !fuzz.extraHeaders.some(([name]) => name === 'content-type')) headers.push(['content-type', fuzz.contentType]);
        if (['GET', 'HEAD'].includes(fuzz.method)) body = null;
        // Headers over Node's 16 KiB get Fastify's 431 (in the error shape of docs/api.md, Errors) before any route: a HEAD client cannot read that body.
        const method = fuzz.method === 'HEAD' && headers.some(([, value]) => String(value).length > 16_000) ? 'GET' : fuzz.method;

        let answer: Sent;
        const started = performance.now();
        try {
          answer = await send(server.url, method, path, headers, body);
        } catch (error) {
          // Past the header or body limit the server answers 431/413 and closes at once; the close
          // can reach the client before the answer (a TCP reset). Refused either way: still up?
          const oversized = headers.reduce((total, [name, value]) => total + name.length + String(value).length + 4, path.length) > 15_000 || (body?.length ?? 0) > 1024 * 1024;
          if (!oversized) throw error;
          answer = { status: 431, headers: { 'content-type': 'application/json' }, body: Buffer.from('{"statusCode":431,"error":"closed","message":"connection closed"}') };
          assert.equal((await request(server, 'GET', '/health')).status, 200, 'up after an oversized request');
        }
        sent++;
        const took = performance.now() - started;
        if (process.env.FUZZ_PROFILE) slowest.push([took, `${method} ${fuzz.route}`]);
        statuses.set(answer.status, (statuses.get(answer.status) ?? 0) + 1);
        const what = `${fuzz.method} ${path.slice(0, 200)} (${credentials[fuzz.credential]![0]}) → ${answer.status} ${answer.body.subarray(0, 300).toString()}`;
        assert.ok(answer.status < 500, `5xx: ${what}`);
        if (answer.status >= 400 && method !== 'HEAD') {
          assert.match(String(answer.headers['content-type']), /^application\/json/, `error content type: ${what}`);
          const error = JSON.parse(answer.body.toString()) as Record<string, unknown>;
          let message: unknown;
          if (fuzz.route.startsWith('/ofrep/') && 'errorCode' in error) {
            // OFREP's own error shape (docs/sdk.md) on its routes: errorCode, errorDetails, and the flag's key when there is one.
            assert.ok(Object.keys(error).every((key) => ['key', 'errorCode', 'errorDetails'].includes(key)), `OFREP error shape: ${what}`);
            assert.ok(typeof error.errorCode === 'string' && /^[A-Z_]+$/.test(error.errorCode), what);
            message = error.errorDetails ?? '';
          } else {
            // An import's 400 adds `problems`, each with its path in the document (DocumentProblems).
            const shape = answer.status === 400 && /\/import(\/unleash)?$/.test(fuzz.route) ? ['error', 'message', 'problems', 'statusCode'] : ['error', 'message', 'statusCode'];
            assert.ok(Object.keys(error).every((key) => shape.includes(key)) && ['error', 'message', 'statusCode'].every((key) => key in error), `error shape: ${what}`);
            assert.equal(error.statusCode, answer.status, what);
            assert.ok(typeof error.error === 'string' && typeof error.message === 'string' && error.message.length > 0, what);
            message = error.message;
          }
          assert.doesNotMatch(String(message), /SQLITE|select |insert |update |delete from|\bat .*\.js:\d+/i, `error leaks internals: ${what}`);
        }
        if (answer.status >= 400) {
          assert.equal(changes(before, await snapshot(server, tables)), '', `a refused request changed the database: ${what}`);
        } else if (!['GET', 'HEAD', 'OPTIONS'].includes(fuzz.method)) {
          // An accepted write: the new state is the baseline; deleted fixtures are made again.
          if (!path.startsWith('/api/')) {
            before = await snapshot(server, tables);
            return;
          }
          // A fuzzed write may have ended the owner's account or sessions (e.g. deleting the user).
          if ((await request(server, 'GET', '/api/me', { token: owner.token })).status !== 200) owner = await newUser(server, 'fuzz-owner');
          const projects = await request(server, 'GET', '/api/projects', { token: owner.token });
          const alive = await request(server, 'GET', `/api/projects/${fixture.project.id}/environments/${fixture.project.production}/flags/${fixture.flagId}/rules/${fixture.ruleId}`, { token: owner.token });
          if (alive.status !== 200 || projects.body.length > 20) {
            for (const project of projects.body as { id: string }[]) await request(server, 'DELETE', `/api/projects/${project.id}`, { token: owner.token });
            await makeFixture();
          }
          const sdkKey = await request(server, 'GET', `/api/projects/${fixture.project.id}`, { token: owner.token });
          fixture.project.sdk_key = sdkKey.body.sdk_key; // regenerate-key may have run
          before = await snapshot(server, tables);
        }
      }),
      { seed: SEED, numRuns: RUNS, endOnFailure: process.env.FUZZ_SHRINK !== '1', includeErrorInReport: true },
    );
    console.log(`fuzz: ${sent} requests sent; statuses ${JSON.stringify(Object.fromEntries([...statuses].sort((a, b) => a[0] - b[0])))}`);
    if (process.env.FUZZ_PROFILE) {
      const byRoute = new Map<string, number>();
      for (const [ms, route] of slowest) byRoute.set(route, (byRoute.get(route) ?? 0) + ms);
      console.log([...byRoute].sort((a, b) => b[1] - a[1]).slice(0, 10), 'in requests', slowest.reduce((t, [ms]) => t + ms, 0), 'in snapshots', snapshotMs);
    }
    assert.ok(sent >= RUNS);
    assert.equal((await request(server, 'GET', '/health')).status, 200, 'still up');
  });
});
