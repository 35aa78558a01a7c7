/**
 * docs/api.md, Who may do what: the role matrix, generated from the route table the app builds (app.apiRoutes,
 * each /api route with its declared least role). Every route × every kind of caller → the status
 * the declaration implies, and nothing in the database moves when the caller is refused. A route
 * added without a declared role stops the app from starting (declaredRoute), and a route whose
 * parameters or body this file cannot make fails here until it is taught them.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { sql } from 'kysely';
import { declaredRoute, type DeclaredRole } from '../src/modules/members/access.js';
import { eventually, newProject, newUser, request, startServer, type TestServer, type TestUser } from './harness.js';

type Caller = 'owner' | 'editor' | 'viewer' | 'non-member' | 'token:owner' | 'token:editor' | 'token:viewer' | 'token:other-project' | 'token:revoked';
const CALLERS: Caller[] = ['owner', 'editor', 'viewer', 'non-member', 'token:owner', 'token:editor', 'token:viewer', 'token:other-project', 'token:revoked'];
const RANK = { viewer: 1, editor: 2, owner: 3 } as const;

let unique = 0;
const next = () => ++unique;

/** A body that the route accepts from a caller allowed to use it. */
const BODIES: Record<string, (params: Record<string, string>) => unknown> = {
  'POST /api/projects': () => ({ name: `Project ${next()}` }),
  'PUT /api/projects/:project_id': () => ({ name: `Renamed ${next()}` }),
  'POST /api/projects/:project_id/members': () => ({ email: `invitee${next()}@example.com`, role: 'viewer' }),
  'PUT /api/projects/:project_id/members/:member_id': () => ({ role: 'editor' }),
  'POST /api/projects/:project_id/environments': () => ({ name: 'QA', key: `qa-${next()}` }),
  'PUT /api/projects/:project_id/environments/:env_id': () => ({ name: `Production ${next()}` }),
  'POST /api/projects/:project_id/environments/:env_id/flags': () => ({ name: 'F', key: `flag-${next()}` }),
  'PUT /api/projects/:project_id/environments/:env_id/flags/:flag_id': () => ({ rollout_percentage: next() % 100 }),
  'POST /api/projects/:project_id/environments/:env_id/flags/:flag_id/rules': () => ({ rule_type: 'user_id', rule_value: `u${next()}` }),
  'PUT /api/projects/:project_id/environments/:env_id/flags/:flag_id/rules/:rule_id': () => ({ priority: next() }),
  'POST /api/projects/:project_id/webhooks': () => ({ url: receiverUrl }),
  'PUT /api/projects/:project_id/webhooks/:webhook_id': () => ({ description: `d${next()}` }),
  'POST /api/tokens': () => ({ name: `t${next()}` }),
  'DELETE /api/me': () => ({ password: 'not the password' }),
  'POST /api/projects/:project_id/segments': () => ({ key: `segment-${next()}`, name: 'Beta', conditions: [{ attribute: 'plan', operator: 'IN', values: ['beta'] }] }),
  'PUT /api/projects/:project_id/segments/:segment_id': () => ({ name: `Beta ${next()}` }),
  'POST /api/projects/:project_id/environments/:env_id/flags/:flag_id/copy': (params) => ({ target_environment_id: params.staging_env_id, overwrite: true }),
  'POST /api/projects/:project_id/environments/:env_id/explain': () => ({ context: { user_id: `u${next()}` } }),
  'POST /api/projects/:project_id/environments/:env_id/flags/:flag_id/schedules': () => ({ at: inAnHour(), change: { rollout_percentage: next() % 100 } }),
  'POST /api/projects/:project_id/environments/:env_id/change-requests': () => ({ title: 'Matrix', changes: [{ op: 'flag.create', flag: { name: 'F', key: `requested-${next()}` } }] }),
  'PUT /api/projects/:project_id/change-requests/:cr_id': () => ({ title: `Retitled ${next()}` }),
  'POST /api/projects/:project_id/change-requests/:cr_id/reviews': () => ({ decision: 'approve' }),
  'POST /api/projects/:project_id/import': () => ({ guidon: 1, environments: [{ key: 'qa', name: 'QA' }], flags: [] }),
  'POST /api/projects/:project_id/metrics': () => ({ key: `metric-${next()}`, name: 'Purchases', event: 'purchase', kind: 'conversion', better: 'higher' }),
  'PUT /api/projects/:project_id/metrics/:metric_id': () => ({ name: `Purchases ${next()}` }),
  'POST /api/projects/:project_id/environments/:env_id/experiments': (params) => ({ flag_id: params.flag_id, name: `Experiment ${next()}`, control: 'off', metrics: [{ metric_id: params.metric_id, role: 'primary' }] }),
  // Refused by the handler (HANDLER_REFUSES): no such metric, so the fixture's flag gets no release.
  'POST /api/projects/:project_id/environments/:env_id/flags/:flag_id/releases': () => ({ guardrails: [{ metric_id: NO_SUCH_ID }] }),
  'POST /api/projects/:project_id/import/unleash': () => ({ version: 1, features: [{ name: `unleashed-${next()}`, type: 'release', project: 'default' }], featureStrategies: [], featureEnvironments: [], environments: [] }),
};

const NO_SUCH_ID = '00000000-0000-4000-8000-000000000000';
const inAnHour = () => new Date(Date.now() + 3_600_000).toISOString();

/** A query string that the route needs from a caller allowed to use it. */
const QUERIES: Record<string, string> = {
  'GET /api/projects/:project_id/environments/:env_id/metrics': '?flag_key=some_flag',
};

/**
 * Routes whose handler narrows the declaration by the target: DELETE of a member is open to
 * any member leaving (viewer), but removing someone else needs an owner; this file removes
 * someone else (leaving is tested in teams.test.ts).
 */
const TARGET_NEEDS: Record<string, DeclaredRole | 'author'> = {
  'DELETE /api/projects/:project_id/members/:member_id': 'owner',
  // A change request is edited by its author only (none of the callers), cancelled by its author or an owner.
  'PUT /api/projects/:project_id/change-requests/:cr_id': 'author',
  'POST /api/projects/:project_id/change-requests/:cr_id/cancel': 'owner',
};

/** Allowed once per change request: each allowed call gets a fixture of its own, as an allowed DELETE does. */
const ONCE = new Set(['POST /api/projects/:project_id/change-requests/:cr_id/apply', 'POST /api/projects/:project_id/change-requests/:cr_id/cancel', 'POST /api/projects/:project_id/environments/:env_id/experiments/:experiment_id/start']);

/**
 * Routes whose handler checks more than the declaration: a caller it lets through still gets this
 * status from what this file sends, and nothing changes. An invitation only its invitee answers,
 * and the fixture's is nobody's here (teams.test.ts); deleting one's account needs one's password,
 * and this file sends a wrong one (accounts.test.ts deletes accounts).
 */
const HANDLER_REFUSES: Record<string, number> = {
  'DELETE /api/me': 403,
  'POST /api/invitations/:invitation_id/accept': 404,
  'POST /api/invitations/:invitation_id/decline': 404,
  // The fixture's experiment is a draft (so that it starts and is deleted): only a running one stops (experiments-api.test.ts).
  'POST /api/projects/:project_id/environments/:env_id/experiments/:experiment_id/stop': 409,
  // …and a draft has no results (experiment-results.test.ts reads those of running ones).
  'GET /api/projects/:project_id/environments/:env_id/experiments/:experiment_id/results': 409,
  'GET /api/projects/:project_id/environments/:env_id/experiments/:experiment_id/units.csv': 409,
  // Releases (releases.test.ts runs them): a release would own the fixture's flag's rollout, which
  // other routes change, so the calls here reach the handler and are refused by it.
  'POST /api/projects/:project_id/environments/:env_id/flags/:flag_id/releases': 400,
  'GET /api/projects/:project_id/environments/:env_id/flags/:flag_id/releases/:release_id': 404,
  'POST /api/projects/:project_id/environments/:env_id/flags/:flag_id/releases/:release_id/pause': 404,
  'POST /api/projects/:project_id/environments/:env_id/flags/:flag_id/releases/:release_id/resume': 404,
  'POST /api/projects/:project_id/environments/:env_id/flags/:flag_id/releases/:release_id/abort': 404,
};

/** docs/api.md (Members, API tokens, Webhooks, Account) and docs/change-management.md: the least role of the routes it names (other routes are held to their own declaration). */
const CONTRACT: Record<string, DeclaredRole> = {
  'GET /api/me': 'user',
  'DELETE /api/me': 'session',
  'GET /api/invitations': 'user',
  'POST /api/invitations/:invitation_id/accept': 'user',
  'POST /api/invitations/:invitation_id/decline': 'user',
  'POST /api/tokens': 'login',
  'GET /api/tokens': 'login',
  'DELETE /api/tokens/:token_id': 'login',
  'POST /api/projects': 'user',
  'GET /api/projects': 'user',
  'GET /api/projects/:project_id': 'viewer',
  'PUT /api/projects/:project_id': 'owner',
  'DELETE /api/projects/:project_id': 'owner',
  'POST /api/projects/:project_id/regenerate-key': 'owner',
  'GET /api/projects/:project_id/members': 'viewer',
  'POST /api/projects/:project_id/members': 'owner',
  'PUT /api/projects/:project_id/members/:member_id': 'owner',
  'DELETE /api/projects/:project_id/members/:member_id': 'viewer',
  'GET /api/projects/:project_id/environments': 'viewer',
  'POST /api/projects/:project_id/environments': 'editor',
  'GET /api/projects/:project_id/environments/:env_id': 'viewer',
  'PUT /api/projects/:project_id/environments/:env_id': 'editor',
  'DELETE /api/projects/:project_id/environments/:env_id': 'editor',
  'GET /api/projects/:project_id/environments/:env_id/flags': 'viewer',
  'POST /api/projects/:project_id/environments/:env_id/flags': 'editor',
  'GET /api/projects/:project_id/environments/:env_id/flags/:flag_id': 'viewer',
  'PUT /api/projects/:project_id/environments/:env_id/flags/:flag_id': 'editor',
  'DELETE /api/projects/:project_id/environments/:env_id/flags/:flag_id': 'editor',
  'POST /api/projects/:project_id/environments/:env_id/flags/:flag_id/toggle': 'editor',
  'GET /api/projects/:project_id/environments/:env_id/flags/:flag_id/rules': 'viewer',
  'POST /api/projects/:project_id/environments/:env_id/flags/:flag_id/rules': 'editor',
  'GET /api/projects/:project_id/environments/:env_id/flags/:flag_id/rules/:rule_id': 'viewer',
  'PUT /api/projects/:project_id/environments/:env_id/flags/:flag_id/rules/:rule_id': 'editor',
  'DELETE /api/projects/:project_id/environments/:env_id/flags/:flag_id/rules/:rule_id': 'editor',
  'GET /api/projects/:project_id/evaluations': 'viewer',
  'GET /api/projects/:project_id/environments/:env_id/evaluations': 'viewer',
  'GET /api/projects/:project_id/environments/:env_id/flags/:flag_id/metrics': 'viewer',
  'GET /api/projects/:project_id/environments/:env_id/metrics': 'viewer',
  'GET /api/projects/:project_id/audit': 'viewer',
  'POST /api/projects/:project_id/webhooks': 'owner',
  'GET /api/projects/:project_id/webhooks': 'owner',
  'GET /api/projects/:project_id/webhooks/:webhook_id': 'owner',
  'PUT /api/projects/:project_id/webhooks/:webhook_id': 'owner',
  'DELETE /api/projects/:project_id/webhooks/:webhook_id': 'owner',
  'POST /api/projects/:project_id/webhooks/:webhook_id/test': 'owner',
  'GET /api/projects/:project_id/webhooks/:webhook_id/deliveries': 'owner',
  'POST /api/projects/:project_id/webhooks/:webhook_id/deliveries/:delivery_id/resend': 'owner',
  'GET /api/projects/:project_id/flags': 'viewer',
  'POST /api/projects/:project_id/environments/:env_id/flags/:flag_id/copy': 'editor',
  'POST /api/projects/:project_id/segments': 'editor',
  'GET /api/projects/:project_id/segments': 'viewer',
  'GET /api/projects/:project_id/segments/:segment_id': 'viewer',
  'PUT /api/projects/:project_id/segments/:segment_id': 'editor',
  'DELETE /api/projects/:project_id/segments/:segment_id': 'editor',
  // Issue 20: what Try it and the rule editor read; any member.
  'POST /api/projects/:project_id/environments/:env_id/explain': 'viewer',
  'GET /api/projects/:project_id/environments/:env_id/attributes': 'viewer',
  // Issue 34: scheduled changes and change requests (docs/change-management.md).
  'POST /api/projects/:project_id/environments/:env_id/flags/:flag_id/schedules': 'editor',
  'GET /api/projects/:project_id/environments/:env_id/flags/:flag_id/schedules': 'viewer',
  'DELETE /api/projects/:project_id/environments/:env_id/flags/:flag_id/schedules/:schedule_id': 'editor',
  'GET /api/projects/:project_id/schedules': 'viewer',
  'POST /api/projects/:project_id/environments/:env_id/change-requests': 'editor',
  'GET /api/projects/:project_id/change-requests': 'viewer',
  'GET /api/projects/:project_id/change-requests/:cr_id': 'viewer',
  'PUT /api/projects/:project_id/change-requests/:cr_id': 'editor',
  'POST /api/projects/:project_id/change-requests/:cr_id/reviews': 'editor',
  'POST /api/projects/:project_id/change-requests/:cr_id/apply': 'editor',
  'POST /api/projects/:project_id/change-requests/:cr_id/cancel': 'editor',
  // Experiments (docs/experiments.md).
  'POST /api/projects/:project_id/metrics': 'editor',
  'GET /api/projects/:project_id/metrics': 'viewer',
  'GET /api/projects/:project_id/metrics/:metric_id': 'viewer',
  'PUT /api/projects/:project_id/metrics/:metric_id': 'editor',
  'DELETE /api/projects/:project_id/metrics/:metric_id': 'editor',
  'POST /api/projects/:project_id/environments/:env_id/experiments': 'editor',
  'GET /api/projects/:project_id/environments/:env_id/experiments': 'viewer',
  'GET /api/projects/:project_id/environments/:env_id/experiments/:experiment_id': 'viewer',
  'POST /api/projects/:project_id/environments/:env_id/experiments/:experiment_id/start': 'editor',
  'POST /api/projects/:project_id/environments/:env_id/experiments/:experiment_id/stop': 'editor',
  'DELETE /api/projects/:project_id/environments/:env_id/experiments/:experiment_id': 'editor',
  'GET /api/projects/:project_id/environments/:env_id/experiments/:experiment_id/results': 'viewer',
  'GET /api/projects/:project_id/environments/:env_id/experiments/:experiment_id/units.csv': 'editor',
  // Guarded releases (docs/releases.md).
  'POST /api/projects/:project_id/environments/:env_id/flags/:flag_id/releases': 'editor',
  'GET /api/projects/:project_id/environments/:env_id/flags/:flag_id/releases': 'viewer',
  'GET /api/projects/:project_id/environments/:env_id/flags/:flag_id/releases/:release_id': 'viewer',
  'POST /api/projects/:project_id/environments/:env_id/flags/:flag_id/releases/:release_id/pause': 'editor',
  'POST /api/projects/:project_id/environments/:env_id/flags/:flag_id/releases/:release_id/resume': 'editor',
  'POST /api/projects/:project_id/environments/:env_id/flags/:flag_id/releases/:release_id/abort': 'editor',
};

let receiverUrl = '';

interface Fixture {
  /** Its own owner: an inviter has 50 invitations an hour, and 10 a day to one address. */
  owner: TestUser;
  params: Record<string, string>;
  tokens: Record<Caller, string>;
}

describe('role matrix: every /api route × every caller', () => {
  let server: TestServer;
  let receiver: Server;
  let editor: TestUser;
  let viewer: TestUser;
  let outsider: TestUser;
  let author: TestUser;

  before(async () => {
    receiver = createServer((req, res) => {
      req.resume();
      req.on('end', () => res.writeHead(204).end());
    });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
    server = await startServer({ WEBHOOK_ALLOW_PRIVATE: 'true' }, { webhooks: { pollIntervalMs: 50 } });
    [editor, viewer, outsider, author] = [await newUser(server, 'editor'), await newUser(server, 'viewer'), await newUser(server, 'outsider'), await newUser(server, 'author')];
  });
  after(async () => {
    await server?.close();
    receiver?.close();
  });

  async function apiToken(user: TestUser, body: Record<string, unknown>): Promise<string> {
    const created = await request(server, 'POST', '/api/tokens', { token: user.token, body: { name: `token ${next()}`, ...body } });
    assert.equal(created.status, 201, created.text);
    return created.body.token as string;
  }

  async function ok(answer: Promise<{ status: number; text: string; body: any }>, status: number) {
    const got = await answer;
    assert.equal(got.status, status, got.text);
    return got.body;
  }

  /** A project with one of everything, the three members, and the callers' tokens. */
  async function fixture(): Promise<Fixture> {
    const owner = await newUser(server, 'owner');
    const project = await newProject(server, owner, `Matrix ${next()}`);
    const as = { token: owner.token };
    const p = `/api/projects/${project.id}`;
    for (const [member, role] of [[editor, 'editor'], [viewer, 'viewer']] as const) {
      const invitation = await ok(request(server, 'POST', `${p}/members`, { ...as, body: { email: member.email, role } }), 201);
      await ok(request(server, 'POST', `/api/invitations/${invitation.id}/accept`, { token: member.token }), 200);
    }
    const invited = await ok(request(server, 'POST', `${p}/members`, { ...as, body: { email: `target${next()}@example.com`, role: 'viewer' } }), 201);
    const flagKey = `flag-${next()}`;
    const flag = await ok(request(server, 'POST', `${p}/environments/${project.production}/flags`, { ...as, body: { name: 'Flag', key: flagKey } }), 201);
    const rule = await ok(request(server, 'POST', `${p}/environments/${project.production}/flags/${flag.id}/rules`, { ...as, body: { rule_type: 'user_id', rule_value: 'u1' } }), 201);
    const webhook = await ok(request(server, 'POST', `${p}/webhooks`, { ...as, body: { url: receiverUrl } }), 201);
    const segment = await ok(request(server, 'POST', `${p}/segments`, { ...as, body: { key: 'matrix', name: 'Matrix', conditions: [{ attribute: 'plan', operator: 'EXISTS' }] } }), 201);
    // A draft experiment on a second flag, one that splits (50 %), so that it can start.
    const metric = await ok(request(server, 'POST', `${p}/metrics`, { ...as, body: { key: 'matrix', name: 'Matrix', event: 'purchase', kind: 'count', better: 'higher' } }), 201);
    const split = await ok(request(server, 'POST', `${p}/environments/${project.production}/flags`, { ...as, body: { name: 'Split', key: `split-${next()}`, enabled: true, rollout_percentage: 50 } }), 201);
    const experiment = await ok(request(server, 'POST', `${p}/environments/${project.production}/experiments`, { ...as, body: { flag_id: split.id, name: 'Matrix', control: 'off', metrics: [{ metric_id: metric.id, role: 'primary' }] } }), 201);
    const schedule = await ok(request(server, 'POST', `${p}/environments/${project.production}/flags/${flag.id}/schedules`, { ...as, body: { at: inAnHour(), change: { enabled: true } } }), 201);
    // A request by a member who is none of the callers (they may review it), approved, touching no flag the other calls change.
    const authorInvitation = await ok(request(server, 'POST', `${p}/members`, { ...as, body: { email: author.email, role: 'editor' } }), 201);
    await ok(request(server, 'POST', `/api/invitations/${authorInvitation.id}/accept`, { token: author.token }), 200);
    const changeRequest = await ok(request(server, 'POST', `${p}/environments/${project.production}/change-requests`, { token: author.token, body: { title: 'Matrix', changes: [{ op: 'flag.create', flag: { name: 'F', key: `requested-${next()}` } }] } }), 201);
    await ok(request(server, 'POST', `${p}/change-requests/${changeRequest.id}/reviews`, { token: editor.token, body: { decision: 'approve' } }), 201);
    const revoked = await request(server, 'POST', '/api/tokens', { ...as, body: { name: 'revoked', project_id: project.id, role: 'owner' } });
    await ok(request(server, 'DELETE', `/api/tokens/${revoked.body.id}`, as), 204);
    // A logged attempt to resend: the webhook's own creation event reaches the receiver.
    let attempts: any[] = [];
    await eventually(async () => (attempts = (await request(server, 'GET', `${p}/webhooks/${webhook.id}/deliveries`, as)).body.items).length > 0, 'a delivery');
    const other = await newProject(server, owner, 'Other');
    return {
      owner,
      params: { delivery_id: attempts[0].id, project_id: project.id, env_id: project.production, staging_env_id: project.staging, flag_id: flag.id, flag_key: flagKey, rule_id: rule.id, member_id: invited.id, invitation_id: invited.id, webhook_id: webhook.id, segment_id: segment.id, token_id: revoked.body.id, schedule_id: schedule.id, cr_id: changeRequest.id, metric_id: metric.id, experiment_id: experiment.id, release_id: NO_SUCH_ID },
      tokens: {
        owner: owner.token,
        editor: editor.token,
        viewer: viewer.token,
        'non-member': outsider.token,
        'token:owner': await apiToken(owner, { project_id: project.id, role: 'owner' }),
        'token:editor': await apiToken(owner, { project_id: project.id, role: 'editor' }),
        'token:viewer': await apiToken(owner, { project_id: project.id, role: 'viewer' }),
        'token:other-project': await apiToken(owner, { project_id: other.id, role: 'owner' }),
        'token:revoked': revoked.body.token,
      },
    };
  }

  const userOf = (caller: Caller, fx: Fixture) => ({ owner: fx.owner, editor, viewer, 'non-member': outsider })[caller as 'owner'] ?? fx.owner;

  /** What the declaration says the caller gets: 'allowed' (a 2xx), or a refusal status. */
  function expected(method: string, role: DeclaredRole | 'author', caller: Caller): 'allowed' | 401 | 403 | 404 {
    if (caller === 'token:revoked') return 401;
    if (role === 'author') return caller === 'non-member' || caller === 'token:other-project' ? 404 : 403;
    const isToken = caller.startsWith('token:');
    if (role === 'login' || role === 'session') return isToken ? 403 : 'allowed';
    if (role === 'user') return isToken && method !== 'GET' ? 403 : 'allowed';
    if (caller === 'non-member' || caller === 'token:other-project') return 404;
    const has = RANK[caller.replace('token:', '') as keyof typeof RANK];
    return has >= RANK[role] ? 'allowed' : 403;
  }

  /** Everything a request could change, read straight from the database. */
  async function snapshot(projectId: string): Promise<string> {
    const db = server.database.db;
    const rows = async (query: { execute: () => Promise<unknown[]> }) => JSON.stringify(await query.execute());
    return [
      await rows(db.selectFrom('projects').select(['id', 'name', 'description', 'sdk_key', 'revision', 'updated_at']).orderBy('id')),
      await rows(db.selectFrom('environments').selectAll().where('project_id', '=', projectId).orderBy('id')),
      await rows(db.selectFrom('flags').selectAll().where('project_id', '=', projectId).orderBy('id')),
      await rows(db.selectFrom('rules').innerJoin('flags', 'flags.id', 'rules.flag_id').selectAll('rules').where('flags.project_id', '=', projectId).orderBy('rules.id')),
      await rows(db.selectFrom('project_members').selectAll().where('project_id', '=', projectId).orderBy('id')),
      await rows(db.selectFrom('webhooks').selectAll().where('project_id', '=', projectId).orderBy('id')),
      await rows(db.selectFrom('segments').selectAll().where('project_id', '=', projectId).orderBy('id')),
      await rows(db.selectFrom('schedules').selectAll().where('project_id', '=', projectId).orderBy('id')),
      await rows(db.selectFrom('metrics').selectAll().where('project_id', '=', projectId).orderBy('id')),
      await rows(db.selectFrom('experiments').selectAll().where('project_id', '=', projectId).orderBy('id')),
      await rows(db.selectFrom('change_requests').selectAll().where('project_id', '=', projectId).orderBy('id')),
      await rows(db.selectFrom('change_request_reviews').innerJoin('change_requests', 'change_requests.id', 'change_request_reviews.change_request_id').selectAll('change_request_reviews').where('change_requests.project_id', '=', projectId).orderBy('change_request_reviews.id')),
      await rows(db.selectFrom('api_tokens').select(['id', 'name', 'project_id', 'role']).orderBy('id')),
      await rows(db.selectFrom('audit_events').select('id').where('project_id', '=', projectId).orderBy('id')),
      await rows(db.selectFrom('webhook_deliveries').select(['id', 'webhook_id', 'event_id']).orderBy('id')),
      JSON.stringify((await sql<{ n: number }>`select count(*) as n from users`.execute(db)).rows),
    ].join('\n');
  }

  async function call(method: string, url: string, fx: Fixture, caller: Caller) {
    const key = `${method} ${url}`;
    let path = url;
    for (const name of url.match(/:(\w+)/g) ?? []) {
      let value = fx.params[name.slice(1)];
      if (name === ':token_id' && !caller.startsWith('token:')) {
        // Each user deletes a token of their own.
        value = (await request(server, 'POST', '/api/tokens', { token: userOf(caller, fx).token, body: { name: 'to delete' } })).body.id;
      }
      assert.ok(value, `${key}: this test does not know what to put in ${name}; teach fixture() about it`);
      path = path.replace(name, value);
    }
    const body = BODIES[key]?.(fx.params) ?? (method === 'POST' || method === 'PUT' ? {} : undefined);
    return request(server, method, path + (QUERIES[key] ?? ''), { token: fx.tokens[caller], body });
  }

  test('a route that declares no role is refused when the app is built', () => {
    assert.throws(() => declaredRoute({ method: 'GET', url: '/api/anything', config: {}, handler: () => undefined } as never), /declares no role/);
    assert.throws(() => declaredRoute({ method: 'GET', url: '/api/anything', handler: () => undefined } as never), /declares no role/);
    assert.throws(() => declaredRoute({ method: 'POST', url: '/api/x', config: { role: 'admin' }, handler: () => undefined } as never), /declares no role/);
    assert.deepEqual(declaredRoute({ method: ['GET', 'HEAD'], url: '/api/projects/:project_id/x', config: { role: 'viewer' }, handler: () => undefined } as never), [
      { method: 'GET', url: '/api/projects/:project_id/x', role: 'viewer' },
    ]);
  });

  test('the route table lists every /api route of the OpenAPI document', async () => {
    const documented = Object.entries((server.app.swagger() as { paths: Record<string, object> }).paths)
      .filter(([path]) => path.startsWith('/api/'))
      .flatMap(([path, operations]) => Object.keys(operations).map((method) => `${method.toUpperCase()} ${path.replace(/\{(\w+)\}/g, ':$1')}`));
    const declared = server.app.apiRoutes.map((route) => `${route.method} ${route.url}`);
    assert.ok(declared.length >= 30, `only ${declared.length} routes`);
    assert.deepEqual([...new Set(declared)].sort(), [...new Set(documented)].sort());
  });

  test('routes docs/api.md names declare the role it gives them', () => {
    const wrong = server.app.apiRoutes
      .filter((route) => CONTRACT[`${route.method} ${route.url}`] && CONTRACT[`${route.method} ${route.url}`] !== route.role)
      .map((route) => `${route.method} ${route.url}: declares ${route.role}, docs/api.md says ${CONTRACT[`${route.method} ${route.url}`]}`);
    assert.deepEqual(wrong, []);
    const missing = Object.keys(CONTRACT).filter((key) => !server.app.apiRoutes.some((route) => `${route.method} ${route.url}` === key));
    assert.deepEqual(missing, []);
  });

  test('each route × caller answers what its declared role implies, and a refusal changes nothing', async () => {
    const failures: string[] = [];
    // One project for every call but an allowed DELETE: refusals change nothing (checked), and
    // the other allowed writes leave what the next call needs.
    const base = await fixture();
    for (const route of server.app.apiRoutes) {
      const key = `${route.method} ${route.url}`;
      const least = TARGET_NEEDS[key] ?? route.role;
      for (const caller of CALLERS) {
        const declared = expected(route.method, least, caller);
        const want = declared === 'allowed' && HANDLER_REFUSES[key] ? HANDLER_REFUSES[key]! : declared;
        // An allowed DELETE gets a fixture of its own: it must find what it deletes.
        const fx = want === 'allowed' && (route.method === 'DELETE' || ONCE.has(key)) && route.url.includes(':project_id') ? await fixture() : base;
        const before = want === 'allowed' ? '' : await snapshot(fx.params.project_id!);
        const answer = await call(route.method, route.url, fx, caller);
        const ok = want === 'allowed' ? answer.status >= 200 && answer.status < 300 : answer.status === want;
        if (!ok) failures.push(`${key} as ${caller}: expected ${want}, got ${answer.status} ${answer.text.slice(0, 160)}`);
        if (want !== 'allowed') {
          const afterwards = await snapshot(fx.params.project_id!);
          if (afterwards !== before) failures.push(`${key} as ${caller}: refused (${answer.status}) but the database changed`);
          if (answer.status >= 400) assert.deepEqual(Object.keys(answer.body).sort(), ['error', 'message', 'statusCode'], `${key} as ${caller}: error shape`);
        }
      }
    }
    assert.deepEqual(failures, []);
  });
});
