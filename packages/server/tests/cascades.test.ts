/**
 * Black-box tests of deletion cascades (docs/api.md "Deletion cascades", docs/api.md): real server, real port, a fresh database.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { type HistoryItem, type TestServer, type TestUser, evaluate, eventually, flagsPath, newFlag, newProject, newUser, startServer } from './harness.js';
import { assertError, assertNoContent, apiAs } from './resources.js';

let server: TestServer;
let user: TestUser;

before(async () => {
  server = await startServer();
  user = await newUser(server, 'resources');
});
after(() => server.close());

const api = (method: string, path: string, body?: unknown) => apiAs(server, user)(method, path, body);

describe('deletion cascades', () => {
  const db = () => server.database.db;

  /** Evaluation history through the API (docs/api.md): the project's, or one environment's. */
  async function history(projectId: string, envId?: string, query = ''): Promise<HistoryItem[]> {
    const path = envId ? `/api/projects/${projectId}/environments/${envId}/evaluations` : `/api/projects/${projectId}/evaluations`;
    const answer = await api('GET', `${path}?limit=500${query}`);
    assert.equal(answer.status, 200, answer.text);
    assert.equal(answer.body.next_cursor, null, 'all history on one page');
    return answer.body.items;
  }
  const waitForHistory = (projectId: string, envId: string | undefined, atLeast: number, query = '') =>
    eventually(async () => (await history(projectId, envId, query)).length >= atLeast, `${atLeast} history items in ${envId ?? projectId}${query}`);
  /** Stored evaluation rows of these environments, whatever the API can still reach. */
  const storedRows = async (envIds: string[]) =>
    (await db().selectFrom('evaluations').select('environment_id').where('environment_id', 'in', envIds).execute()).length;
  const byId = (items: HistoryItem[]) => [...items].sort((a, b) => a.id.localeCompare(b.id));

  /** A project with a flag (and a rule) in production and in a custom environment, evaluated twice in each. */
  async function populated(name: string) {
    const project = await newProject(server, user, name);
    const custom = (await api('POST', `/api/projects/${project.id}/environments`, { name: 'Custom', key: 'custom' })).body as { id: string };
    const prodFlag = await newFlag(server, user, project, { key: 'prod_flag', enabled: true });
    const prodFlag2 = await newFlag(server, user, project, { key: 'prod_flag_2', enabled: false });
    const customFlag = await newFlag(server, user, project, { key: 'custom_flag', enabled: true }, custom.id);
    const prodRule = (await api('POST', `${flagsPath(project)}/${prodFlag.id}/rules`, { rule_type: 'user_id', rule_value: 'u1' })).body as { id: string };
    const customRule = (await api('POST', `${flagsPath(project, custom.id)}/${customFlag.id}/rules`, { rule_type: 'user_id', rule_value: 'u1' })).body as { id: string };
    for (const env of ['production', 'custom']) {
      for (const user_id of ['u1', 'u2']) assert.equal((await evaluate(server, project.sdk_key, env, { user_id })).status, 200);
    }
    await waitForHistory(project.id, project.production, 4); // 2 calls × 2 flags
    await waitForHistory(project.id, custom.id, 2); // 2 calls × 1 flag
    const envIds = [project.production, project.staging, custom.id];
    return { project, custom, envIds, prodFlag, prodFlag2, customFlag, prodRule, customRule };
  }

  test('deleting a project removes its environments, flags, rules and evaluation history', async () => {
    const bystander = await populated('Bystander project');
    const bystanderHistory = byId(await history(bystander.project.id));
    const { project, custom, envIds, prodFlag, prodFlag2, customFlag, prodRule, customRule } = await populated('Cascade project');
    assert.equal((await history(project.id)).length, 6);
    assert.ok((await storedRows(envIds)) > 0, 'history is stored before the delete');

    assertNoContent(await api('DELETE', `/api/projects/${project.id}`), 'delete project');

    assertError(await api('GET', `/api/projects/${project.id}/environments`), 404, 'environments list');
    assertError(await api('GET', `/api/projects/${project.id}/environments/${project.production}`), 404, 'production env');
    assertError(await api('GET', `/api/projects/${project.id}/environments/${custom.id}`), 404, 'custom env');
    assertError(await api('GET', flagsPath(project)), 404, 'flags list');
    assertError(await api('GET', `${flagsPath(project)}/${prodFlag.id}`), 404, 'production flag');
    assertError(await api('GET', `${flagsPath(project, custom.id)}/${customFlag.id}`), 404, 'custom flag');
    assertError(await api('GET', `${flagsPath(project)}/${prodFlag.id}/rules/${prodRule.id}`), 404, 'production rule');
    assertError(await api('GET', `${flagsPath(project, custom.id)}/${customFlag.id}/rules/${customRule.id}`), 404, 'custom rule');
    assertError(await api('GET', `/api/projects/${project.id}/evaluations`), 404, 'project history');
    assertError(await evaluate(server, project.sdk_key, 'production'), 401, 'SDK key of the deleted project');

    // Stored state: nothing of the project is left.
    assert.equal((await db().selectFrom('environments').select('id').where('id', 'in', envIds).execute()).length, 0, 'environments rows');
    assert.equal((await db().selectFrom('flags').select('id').where('id', 'in', [prodFlag.id, prodFlag2.id, customFlag.id]).execute()).length, 0, 'flags rows');
    assert.equal((await db().selectFrom('rules').select('id').where('id', 'in', [prodRule.id, customRule.id]).execute()).length, 0, 'rules rows');
    assert.equal(await storedRows(envIds), 0, 'evaluation history rows removed');

    // Another project is untouched.
    assert.deepEqual(byId(await history(bystander.project.id)), bystanderHistory, 'other project history kept');
    assert.equal((await api('GET', `${flagsPath(bystander.project)}/${bystander.prodFlag.id}/rules/${bystander.prodRule.id}`)).status, 200);
    assert.equal((await evaluate(server, bystander.project.sdk_key, 'custom', { user_id: 'u1' })).body.flags.custom_flag?.reason, 'Matched user_id targeting rule');
  });

  test('deleting an environment removes its flags, rules and evaluation history, and nothing of the other environments', async () => {
    const { project, custom, prodFlag, customFlag, prodRule, customRule } = await populated('Env cascade');
    const productionHistory = byId(await history(project.id, project.production));
    assert.ok((await history(project.id)).some((item) => item.environment_id === custom.id));

    assertNoContent(await api('DELETE', `/api/projects/${project.id}/environments/${custom.id}`), 'delete env');

    assertError(await api('GET', flagsPath(project, custom.id)), 404, 'flags list of the deleted env');
    assertError(await api('GET', `${flagsPath(project, custom.id)}/${customFlag.id}`), 404, 'flag of the deleted env');
    assertError(await api('GET', `${flagsPath(project, custom.id)}/${customFlag.id}/rules`), 404, 'rules of the deleted env');
    assertError(await api('GET', `${flagsPath(project, custom.id)}/${customFlag.id}/rules/${customRule.id}`), 404, 'rule of the deleted env');
    assertError(await api('GET', `/api/projects/${project.id}/environments/${custom.id}/evaluations`), 404, 'history of the deleted env');
    assertError(await evaluate(server, project.sdk_key, 'custom'), 404, 'evaluate the deleted env');
    assert.equal((await db().selectFrom('flags').select('id').where('id', '=', customFlag.id).execute()).length, 0, 'flags rows');
    assert.equal((await db().selectFrom('rules').select('id').where('id', '=', customRule.id).execute()).length, 0, 'rules rows');
    assert.equal(await storedRows([custom.id]), 0, 'history rows of the env removed');
    assert.ok(!(await history(project.id)).some((item) => item.environment_id === custom.id), 'not in the project history');

    // The project and its other environments keep everything.
    assert.equal((await api('GET', `/api/projects/${project.id}`)).status, 200);
    assert.deepEqual(byId(await history(project.id, project.production)), productionHistory, 'production history kept');
    assert.equal((await api('GET', `${flagsPath(project)}/${prodFlag.id}/rules/${prodRule.id}`)).status, 200);
    assert.deepEqual((await evaluate(server, project.sdk_key, 'production', { user_id: 'u1' })).body.flags, {
      prod_flag: { enabled: true, reason: 'Matched user_id targeting rule' },
      prod_flag_2: { enabled: false, reason: 'Flag is globally disabled' },
    });
  });

  test('deleting a flag removes its rules but retains its evaluation history', async () => {
    const { project, prodFlag, prodRule } = await populated('Flag cascade');
    const rule2 = (await api('POST', `${flagsPath(project)}/${prodFlag.id}/rules`, { rule_type: 'email_domain', rule_value: 'x.io' })).body as { id: string };
    const flagHistory = byId(await history(project.id, project.production, '&flag_key=prod_flag'));
    assert.equal(flagHistory.length, 2);
    assert.ok(flagHistory.every((item) => item.flag_id === prodFlag.id && item.flag_key === 'prod_flag'));
    const otherHistory = byId(await history(project.id, project.production, '&flag_key=prod_flag_2'));

    assertNoContent(await api('DELETE', `${flagsPath(project)}/${prodFlag.id}`), 'delete flag');

    assertError(await api('GET', `${flagsPath(project)}/${prodFlag.id}/rules`), 404, 'rules list of the deleted flag');
    assertError(await api('GET', `${flagsPath(project)}/${prodFlag.id}/rules/${prodRule.id}`), 404, 'rule of the deleted flag');
    assert.equal((await db().selectFrom('rules').select('id').where('flag_id', '=', prodFlag.id).execute()).length, 0, 'rules rows removed');
    assert.equal((await db().selectFrom('rules').select('id').where('id', '=', rule2.id).execute()).length, 0);

    assert.deepEqual(byId(await history(project.id, project.production, '&flag_key=prod_flag')), flagHistory, 'history of the deleted flag retained, readable by flag_key');
    assert.deepEqual(byId((await history(project.id)).filter((item) => item.flag_id === prodFlag.id)), flagHistory, 'and in the project history');
    assert.deepEqual(byId(await history(project.id, project.production, '&flag_key=prod_flag_2')), otherHistory);
  });

  test('a flag deleted right after being evaluated still gets its history written', async () => {
    const project = await newProject(server, user, 'Quick flag delete');
    const flag = await newFlag(server, user, project, { key: 'fleeting', enabled: true });
    assert.equal((await evaluate(server, project.sdk_key, 'production', { user_id: 'u-fleeting' })).status, 200);
    assertNoContent(await api('DELETE', `${flagsPath(project)}/${flag.id}`), 'delete flag');
    await waitForHistory(project.id, project.production, 1, '&flag_key=fleeting');
    const [item, ...rest] = await history(project.id, project.production, '&flag_key=fleeting');
    assert.equal(rest.length, 0);
    assert.equal(item?.flag_id, flag.id);
    assert.equal(item?.user_id, 'u-fleeting');
    assert.equal(item?.enabled, true);
    assert.equal(item?.reason, 'Flag enabled globally');
  });

  test('deleting an environment does not lose history of other environments that is still waiting to be written', async () => {
    // Rows of the surviving environment and of the deleted one are pending together.
    const project = await newProject(server, user, 'Pending history');
    const doomed = (await api('POST', `/api/projects/${project.id}/environments`, { name: 'Doomed', key: 'doomed' })).body as { id: string };
    await newFlag(server, user, project, { key: 'survivor', enabled: true });
    await newFlag(server, user, project, { key: 'victim', enabled: true }, doomed.id);
    assert.equal((await evaluate(server, project.sdk_key, 'production', { user_id: 'keep-me' })).status, 200);
    assert.equal((await evaluate(server, project.sdk_key, 'doomed', { user_id: 'drop-me' })).status, 200);
    assertNoContent(await api('DELETE', `/api/projects/${project.id}/environments/${doomed.id}`), 'delete env');
    await waitForHistory(project.id, project.production, 1);
    const items = await history(project.id);
    assert.deepEqual(items.map((item) => [item.flag_key, item.user_id]), [['survivor', 'keep-me']]);
    assert.equal(await storedRows([doomed.id]), 0);
  });
});
