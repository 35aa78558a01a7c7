/**
 * A create racing the delete of its parent (found by the crash test on PostgreSQL: the parent
 * was checked, then deleted by another request before the insert): 404, never 500, and nothing
 * left behind.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { flagsPath, newFlag, newProject, newUser, request, startServer, type TestServer, type TestUser } from './harness.js';

describe('creates racing the delete of their parent', () => {
  let server: TestServer;
  let user: TestUser;
  before(async () => {
    server = await startServer();
    user = await newUser(server);
  });
  after(() => server?.close());

  test('rules while their flag is deleted, flags while their environment is, environments while their project is', async () => {
    const statuses = new Set<number>();
    for (let round = 0; round < 15; round++) {
      const project = await newProject(server, user, `race ${round}`);
      const flag = await newFlag(server, user, project, { key: `f${round}` });
      const envPath = `/api/projects/${project.id}/environments/${project.staging}`;
      const answers = await Promise.all([
        ...Array.from({ length: 4 }, (_, i) => request(server, 'POST', `${flagsPath(project)}/${flag.id}/rules`, { token: user.token, body: { rule_type: 'user_id', rule_value: `u${i}` } })),
        request(server, 'DELETE', `${flagsPath(project)}/${flag.id}`, { token: user.token }),
        ...Array.from({ length: 4 }, (_, i) => request(server, 'POST', flagsPath(project, project.staging), { token: user.token, body: { key: `g${i}`, name: 'g' } })),
        request(server, 'DELETE', envPath, { token: user.token }),
        ...Array.from({ length: 4 }, (_, i) => request(server, 'POST', `/api/projects/${project.id}/environments`, { token: user.token, body: { key: `e${i}`, name: 'e' } })),
        request(server, 'DELETE', `/api/projects/${project.id}`, { token: user.token }),
      ]);
      for (const answer of answers) {
        statuses.add(answer.status);
        assert.ok([201, 204, 404].includes(answer.status), `${answer.status} ${answer.text}`);
        if (answer.status === 404) assert.match(answer.body.message, /not found/i);
      }
      assert.equal((await request(server, 'GET', `/api/projects/${project.id}`, { token: user.token })).status, 404);
      // Nothing left behind: a create that passed its parent's check and lost the race wrote no orphan.
      const { db } = server.database;
      const environments = await db.selectFrom('environments').select('id').where('project_id', '=', project.id).execute();
      const flags = await db.selectFrom('flags').select('id').where('project_id', '=', project.id).execute();
      const rules = await db.selectFrom('rules').select('id').where('flag_id', '=', flag.id).execute();
      assert.deepEqual({ environments, flags, rules }, { environments: [], flags: [], rules: [] }, `round ${round}`);
    }
    // Which requests won differs from run to run; the statuses show that the races were run.
    console.log(`statuses seen: ${[...statuses].sort().join(', ')}`);
  });
});
