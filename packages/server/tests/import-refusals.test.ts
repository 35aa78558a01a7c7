/**
 * An import can do what the same changes sent one by one could do, and nothing more
 * (docs/flags-as-code.md, "Through the routes' writes"; docs/security.md, "Imports"): for each
 * refusal the routes make (a flag over its cost, a broken prerequisite, a segment in use, an
 * environment under review), the document that would get past it meets the same refusal, in a
 * dry run and when applied, and changes nothing. A large document or YAML body does not hold other
 * requests: /health answers while it is being worked on. Over HTTP on a real server and database
 * (SQLite, or PostgreSQL with GUIDON_TEST_DATABASE=postgres).
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { flagsPath, newFlag, newProject, newUser, request, type TestProject, type TestServer, type TestUser, startServer } from './harness.js';

let server: TestServer;
let user: TestUser;

const api = (method: string, path: string, body?: unknown, headers?: Record<string, string>) =>
  request(server, method, path, { token: user.token, ...(body === undefined ? {} : { body }), ...(headers ? { headers } : {}) });
const created = async (method: string, path: string, body: unknown) => {
  const answer = await api(method, path, body);
  assert.ok(answer.status < 300, `${method} ${path}: ${answer.status} ${answer.text}`);
  return answer.body;
};
const importInto = (project: TestProject, document: unknown, query = '?dry_run=false', headers?: Record<string, string>) => api('POST', `/api/projects/${project.id}/import${query}`, document, headers);

/** The import is refused with `status` and `message` both as a dry run and applied, and the project's export is the same bytes after. */
async function refusedAlike(project: TestProject, document: unknown, status: number, message: RegExp, mode = 'merge') {
  const before = (await api('GET', `/api/projects/${project.id}/export`)).text;
  for (const query of [`?mode=${mode}`, `?mode=${mode}&dry_run=false`]) {
    const answer = await importInto(project, document, query);
    assert.equal(answer.status, status, `${query || 'dry run'}: ${answer.text}`);
    assert.match(answer.body.message, message, query || 'dry run');
  }
  assert.equal((await api('GET', `/api/projects/${project.id}/export`)).text, before, 'nothing changed');
}

const production = { key: 'production', name: 'Production' };
const doc = (segments: unknown[], flags: unknown[], environments: unknown[] = [production]) => ({ guidon: 1, environments, segments, flags });
/** What one pattern alone may cost, but two in one flag may not (tests/rule-cost.test.ts). */
const costly = (letter: string) => ({ attribute: 'text', operator: 'REGEX', values: [`(?:a|b)*${letter}(?:a|b){60}`] });
const cheap = { attribute: 'plan', operator: 'IN', values: ['pro'] };

before(async () => {
  server = await startServer();
  user = await newUser(server, 'refusals');
});
after(async () => server?.close());

test('a segment changed by an import is held to the limits of every flag that names it, in the environments and keys the document leaves out: 400 as its PUT', async () => {
  const project = await newProject(server, user, 'Cost');
  const base = `/api/projects/${project.id}`;
  await created('POST', `${base}/segments`, { key: 'heavy', name: 'Heavy', conditions: [costly('a')] });
  const light = await created('POST', `${base}/segments`, { key: 'light', name: 'Light', conditions: [cheap] });
  // In staging, which the document does not name, a flag names both.
  const flag = await newFlag(server, user, project, { key: 'uses_both', enabled: true }, project.staging);
  await created('POST', `${flagsPath(project, project.staging)}/${flag.id}/rules`, { rule_type: 'conditions', conditions: [{ operator: 'IN_SEGMENT', values: ['heavy', 'light'] }] });
  const direct = await api('PUT', `${base}/segments/${light.id}`, { conditions: [costly('b')] });
  assert.equal(direct.status, 400, direct.text);
  const segments = [
    { key: 'heavy', name: 'Heavy', conditions: [costly('a')] },
    { key: 'light', name: 'Light', conditions: [costly('b')] },
  ];
  await refusedAlike(project, doc(segments, []), 400, /^segments "light": Segment "light" would take flag "uses_both" over its limits: /);
});

test('prerequisites: a parent named by a kept flag is not deleted (409), a variant a child needs is not removed (400), as the routes refuse them', async () => {
  const project = await newProject(server, user, 'Prerequisites');
  const variants = [
    { key: 'a', value: 1, weight: 500 },
    { key: 'b', value: 2, weight: 500 },
  ];
  const parent = await newFlag(server, user, project, { key: 'parent', enabled: true, variants, off_variant: 'a' });
  await newFlag(server, user, project, { key: 'child', enabled: true, prerequisites: [{ flag_key: 'parent' }] });
  await newFlag(server, user, project, { key: 'picky', enabled: true, prerequisites: [{ flag_key: 'parent', variants: ['b'] }] });
  const exported = JSON.parse((await api('GET', `/api/projects/${project.id}/export`)).text);
  const staging = exported.environments.find((env: { key: string }) => env.key === 'staging');

  // Replace without the parent and picky (deleted first, being its child): child still names the parent.
  assert.equal((await api('DELETE', `${flagsPath(project)}/${parent.id}`)).status, 409);
  const withoutParent = doc([], exported.flags.filter((flag: { key: string }) => flag.key === 'child'), [production, staging]);
  await refusedAlike(project, withoutParent, 409, /^flags in production: Flag parent cannot be deleted: child names it as a prerequisite/, 'replace');

  const narrowed = { key: 'a', value: 1, weight: 1000 };
  assert.equal((await api('PUT', `${flagsPath(project)}/${parent.id}`, { variants: [narrowed] })).status, 400);
  // Only the parent in the document (merge): the child, left out, still needs "b".
  const parentOnly = exported.flags.find((flag: { key: string }) => flag.key === 'parent');
  parentOnly.environments.production.variants = [narrowed];
  await refusedAlike(project, doc([], [{ ...parentOnly, environments: { production: parentOnly.environments.production } }]), 400, /Flag picky needs variant "b" of parent/);

  // Deleting all three, children first, is what the routes allow too.
  const both = await importInto(project, doc([], [], [production, staging]), '?mode=replace&dry_run=false');
  assert.equal(both.status, 200, both.text);
  assert.deepEqual((await api('GET', flagsPath(project))).body, []);
});

test('a replace import does not delete a segment that a flag under review still names: 409 as its DELETE, and no change request is left', async () => {
  const project = await newProject(server, user, 'Reviewed');
  const base = `/api/projects/${project.id}`;
  const segment = await created('POST', `${base}/segments`, { key: 'beta', name: 'Beta', conditions: [cheap] });
  const flag = await newFlag(server, user, project, { key: 'gated', enabled: true });
  await created('POST', `${flagsPath(project)}/${flag.id}/rules`, { rule_type: 'conditions', conditions: [{ operator: 'IN_SEGMENT', values: ['beta'] }] });
  await created('PUT', `${base}/environments/${project.production}`, { approvals_required: 1 });
  assert.equal((await api('DELETE', `${base}/segments/${segment.id}`)).status, 409);
  const exported = JSON.parse((await api('GET', `${base}/export`)).text);
  exported.segments = [];
  exported.flags[0].environments.production.rules = [];
  await refusedAlike(project, exported, 409, /^segments "beta": Segment "beta" is used by flag "gated" in production/, 'replace');
  assert.deepEqual((await api('GET', `${base}/change-requests`)).body.items, [], 'no change request left behind');
});

test('a parent with 1,200 children imports (the graph is checked in one pass), and /health answers while it is applied', async () => {
  const project = await newProject(server, user, 'Wide');
  const flags = [
    { key: 'parent', name: 'Parent', environments: { production: { enabled: true } } },
    ...Array.from({ length: 1200 }, (_, i) => ({ key: `child_${i}`, name: `Child ${i}`, environments: { production: { enabled: true, prerequisites: [{ flag_key: 'parent' }] } } })),
  ];
  const order: string[] = [];
  const importing = importInto(project, doc([], flags)).then((answer) => (order.push('import'), answer));
  // Sent once the import's body has arrived (the import then works for a while): /health must not wait for it.
  await new Promise((resolve) => setTimeout(resolve, 150));
  const health = await request(server, 'GET', '/health');
  order.push('health');
  const answer = await importing;
  assert.equal(answer.status, 200, answer.text);
  assert.equal(answer.body.create.length, 1201);
  assert.equal(health.status, 200);
  assert.deepEqual(order, ['health', 'import'], '/health answered before the import ended');
  const chain = Array.from({ length: 7 }, (_, i) => ({ key: `link_${i}`, name: `Link ${i}`, environments: { production: { enabled: true, prerequisites: i === 0 ? [] : [{ flag_key: `link_${i - 1}` }] } } }));
  const deep = await importInto(project, doc([], chain), '');
  assert.equal(deep.status, 400, deep.text);
  assert.match(deep.body.problems.map((problem: { message: string }) => problem.message).join('\n'), /a chain deeper than 5 links \(link_6 → link_5 → link_4 → link_3 → link_2 → link_1 → link_0\)/);
});

test('YAML: an alias bomb is 400, not 500; a body that takes long to parse is parsed off the event loop, and /health answers meanwhile', async () => {
  const project = await newProject(server, user, 'Yaml');
  const yaml = { 'content-type': 'application/yaml' };
  const laughs = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]', ...Array.from({ length: 8 }, (_, i) => `${String.fromCharCode(98 + i)}: &${String.fromCharCode(98 + i)} [${Array(9).fill(`*${String.fromCharCode(97 + i)}`).join(',')}]`)].join('\n');
  const bomb = await importInto(project, laughs, '', yaml);
  assert.equal(bomb.status, 400, bomb.text);
  assert.match(bomb.body.message, /^The YAML does not parse: /);

  // Nested flow collections cost the parser about 5 ms a KiB: 1 MiB of them would hold a thread for seconds.
  const nested = `guidon: 1\nflags: ${'['.repeat(40)}${Array(20_000).fill('{a: [1, {b: [2, 3]}]}').join(', ')}${']'.repeat(40)}\n`;
  const order: string[] = [];
  const parsing = importInto(project, nested, '', yaml).then((answer) => (order.push('import'), answer));
  await new Promise((resolve) => setTimeout(resolve, 150));
  const health = await request(server, 'GET', '/health');
  order.push('health');
  const answer = await parsing;
  assert.equal(health.status, 200);
  assert.equal(answer.status, 400, answer.text);
  assert.deepEqual(order, ['health', 'import'], '/health answered before the YAML was parsed');

  const tooDeep = `guidon: 1\nflags: ${'['.repeat(100)}${']'.repeat(100)}\n`;
  const deep = await importInto(project, tooDeep, '', yaml);
  assert.equal(deep.status, 400, deep.text);
  assert.match(deep.body.message, /nests deeper than 64 levels/);
});

test('imports are limited per project: the 31st in a minute is 429, and another project is not held by it', async () => {
  const busy = await newProject(server, user, 'Busy');
  const quiet = await newProject(server, user, 'Quiet');
  const empty = doc([], []);
  const statuses: number[] = [];
  for (let i = 0; i < 31; i++) statuses.push((await importInto(busy, empty, '')).status);
  assert.deepEqual(statuses.slice(0, 30), Array(30).fill(200));
  assert.equal(statuses[30], 429);
  assert.equal((await importInto(quiet, empty, '')).status, 200);
});
