/**
 * A flag's bucketing_key (docs/flags-as-code.md, "Bucketing key") through the API, on the
 * database of the pass: stored, shown, audited, exported, copied; and it takes the flag key's place
 * in the rollout and variant hashes everywhere a flag is evaluated: POST /sdk/v1/evaluate, OFREP,
 * the ruleset that the SDK's local mode compiles, and the OpenFeature providers (local, remote and
 * the stock OFREP provider). A flag `renamed` with bucketing_key `original` gives every user the
 * rollout bucket and variant that a flag keyed `original` gives them.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { OpenFeature } from '@openfeature/server-sdk';
import { OFREPProvider } from '@openfeature/ofrep-provider';
import { createClient, type LocalClient } from '@guidon/sdk';
import { GuidonLocalProvider, GuidonServerProvider } from '@guidon/openfeature/server';
import { evaluate, flagsPath, newFlag, newProject, newUser, request, startServer, type TestProject, type TestServer, type TestUser } from '@guidon/server/dist/tests/harness.js';

const VARIANTS = [
  { key: 'red', value: 'R', weight: 300 },
  { key: 'green', value: 'G', weight: 300 },
  { key: 'blue', value: 'B', weight: 400 },
];
/** The same settings under three keys: the original, a renamed copy that keeps its buckets, and one that does not. */
const SETTINGS = { enabled: true, rollout_percentage: 40, variants: VARIANTS, off_variant: 'red' };
/** A flag on for everyone whose weights choose: SPLIT, with the same variants. */
const SPLIT_SETTINGS = { enabled: true, variants: VARIANTS, off_variant: 'red' };
const USERS = Array.from({ length: 120 }, (_, i) => (i % 4 === 3 ? { user_email: `person-${i}@example.com` } : { user_id: `user-${i}` }));

describe('bucketing_key', () => {
  let server: TestServer;
  let user: TestUser;
  let project: TestProject;
  let token: string;
  let renamedId: string;
  const clients: LocalClient[] = [];

  before(async () => {
    server = await startServer();
    user = await newUser(server);
    project = await newProject(server, user);
    token = (await request(server, 'POST', '/api/tokens', { token: user.token, body: { name: 'bk', project_id: project.id, role: 'viewer' } })).body.token;
    await newFlag(server, user, project, { key: 'original', ...SETTINGS });
    renamedId = (await newFlag(server, user, project, { key: 'renamed', bucketing_key: 'original', ...SETTINGS })).id;
    await newFlag(server, user, project, { key: 'unkept', ...SETTINGS });
    await newFlag(server, user, project, { key: 'split_original', ...SPLIT_SETTINGS });
    await newFlag(server, user, project, { key: 'split_renamed', bucketing_key: 'split_original', ...SPLIT_SETTINGS });
  });
  after(async () => {
    await Promise.all(clients.map((client) => client.close()));
    await server.close();
    await OpenFeature.close();
  });

  test('create, GET, list, PUT and clear; a bad bucketing key is 400 and changes nothing; the audit shows before and after', async () => {
    const path = `${flagsPath(project)}/${renamedId}`;
    const got = await request(server, 'GET', path, { token: user.token });
    assert.equal(got.body.bucketing_key, 'original');
    const list = await request(server, 'GET', flagsPath(project), { token: user.token });
    const listed = (Array.isArray(list.body) ? list.body : list.body.items).find((flag: { key: string }) => flag.key === 'renamed');
    assert.equal(listed.bucketing_key, 'original');
    for (const bad of ['', 'has space', 'ü', 'x'.repeat(101), 5, 'a/b']) {
      const refused = await request(server, 'PUT', path, { token: user.token, body: { bucketing_key: bad } });
      assert.equal(refused.status, 400, `${JSON.stringify(bad)}: ${refused.text}`);
      const created = await request(server, 'POST', flagsPath(project), { token: user.token, body: { key: 'bad_one', name: 'Bad', bucketing_key: bad } });
      assert.equal(created.status, 400, `${JSON.stringify(bad)}: ${created.text}`);
    }
    assert.equal((await request(server, 'GET', path, { token: user.token })).body.bucketing_key, 'original');
    const extreme = 'A-z0.9_~:'.padEnd(100, 'x');
    const put = await request(server, 'PUT', path, { token: user.token, body: { bucketing_key: extreme } });
    assert.equal(put.status, 200, put.text);
    assert.equal(put.body.bucketing_key, extreme);
    const cleared = await request(server, 'PUT', path, { token: user.token, body: { bucketing_key: null } });
    assert.equal(cleared.body.bucketing_key, null);
    const back = await request(server, 'PUT', path, { token: user.token, body: { bucketing_key: 'original' } });
    assert.equal(back.body.bucketing_key, 'original');
    const audit = await request(server, 'GET', `/api/projects/${project.id}/audit?resource_id=${renamedId}`, { token: user.token });
    const [restored, emptied] = audit.body.items as { action: string; before: { bucketing_key: string | null }; after: { bucketing_key: string | null } }[];
    assert.deepEqual([restored!.action, restored!.before.bucketing_key, restored!.after.bucketing_key], ['flag.updated', null, 'original']);
    assert.deepEqual([emptied!.action, emptied!.before.bucketing_key, emptied!.after.bucketing_key], ['flag.updated', extreme, null]);
  });

  test('side by side, copy to another environment, export', async () => {
    const copied = await request(server, 'POST', `${flagsPath(project)}/${renamedId}/copy`, { token: user.token, body: { target_environment_id: project.staging } });
    assert.ok(copied.status === 200 || copied.status === 201, copied.text);
    const staging = await request(server, 'GET', flagsPath(project, project.staging), { token: user.token });
    assert.equal((Array.isArray(staging.body) ? staging.body : staging.body.items).find((flag: { key: string }) => flag.key === 'renamed').bucketing_key, 'original');
    const exported = await request(server, 'GET', `/api/projects/${project.id}/export`, { token: user.token });
    const renamed = exported.body.flags.find((flag: { key: string }) => flag.key === 'renamed');
    assert.equal(renamed.environments.production.bucketing_key, 'original');
    assert.equal(renamed.environments.staging.bucketing_key, 'original');
    assert.equal(exported.body.flags.find((flag: { key: string }) => flag.key === 'original').environments.production.bucketing_key, null);
  });

  test('evaluate and OFREP: the renamed flag gives every user the bucket and variant of the original; without the bucketing key users move', async () => {
    let moved = 0;
    let inRollout = 0;
    for (const context of USERS) {
      const answer = await evaluate(server, project.sdk_key, 'production', context);
      assert.equal(answer.status, 200, answer.text);
      const { original, renamed, unkept, split_original, split_renamed } = answer.body.flags;
      assert.deepEqual(renamed, original, JSON.stringify(context));
      assert.deepEqual(split_renamed, split_original, JSON.stringify(context));
      if (JSON.stringify(unkept) !== JSON.stringify(original)) moved++;
      if (original!.enabled) inRollout++;
      const ofrep = await request(server, 'POST', '/ofrep/v1/evaluate/flags', { sdkKey: project.sdk_key, body: { context: { targetingKey: context.user_id ?? context.user_email, ...(context.user_email ? { email: context.user_email } : {}) } } });
      assert.equal(ofrep.status, 200, ofrep.text);
      const byKey = new Map(ofrep.body.flags.map((flag: { key: string }) => [flag.key, flag]));
      const strip = (flag: any) => ({ value: flag.value, variant: flag.variant, reason: flag.reason });
      assert.deepEqual(strip(byKey.get('renamed')), strip(byKey.get('original')), JSON.stringify(context));
      assert.deepEqual(strip(byKey.get('split_renamed')), strip(byKey.get('split_original')), JSON.stringify(context));
    }
    assert.ok(moved > 20, `users move without a bucketing key (${moved})`);
    assert.ok(inRollout > 20 && inRollout < 100, `the rollout splits the users (${inRollout} in)`);
  });

  test('the ruleset carries it, and the SDK in local mode answers what evaluate answers', async () => {
    const ruleset = await request(server, 'GET', '/sdk/v1/ruleset?environment=production', { token });
    assert.equal(ruleset.status, 200, ruleset.text);
    const byKey = new Map(ruleset.body.flags.map((flag: { key: string }) => [flag.key, flag]));
    assert.equal((byKey.get('renamed') as { bucketingKey?: string }).bucketingKey, 'original');
    assert.equal('bucketingKey' in (byKey.get('original') as object), false, 'absent when null');
    const client = createClient({ baseUrl: server.url, apiToken: token, environment: 'production', mode: 'local', stream: false });
    clients.push(client);
    assert.equal(await client.ready(), true);
    for (const context of USERS) {
      const remote = await evaluate(server, project.sdk_key, 'production', context);
      assert.deepEqual(client.evaluate(context).allFlags(), remote.body.flags, JSON.stringify(context));
    }
  });

  test('the OpenFeature providers, local, remote and stock OFREP, answer alike for the renamed flag and the original', async () => {
    await OpenFeature.setProviderAndWait('bk-local', new GuidonLocalProvider({ baseUrl: server.url, apiToken: token, environment: 'production', stream: false }));
    await OpenFeature.setProviderAndWait('bk-remote', new GuidonServerProvider({ baseUrl: server.url, sdkKey: project.sdk_key, environment: 'production', stream: false }));
    await OpenFeature.setProviderAndWait('bk-ofrep', new OFREPProvider({ baseUrl: server.url, headers: [['X-SDK-Key', project.sdk_key]] }));
    const names = ['bk-local', 'bk-remote', 'bk-ofrep'];
    for (const context of USERS.slice(0, 40)) {
      const of = { targetingKey: context.user_id ?? context.user_email!, ...(context.user_email ? { email: context.user_email } : {}) };
      const answers: unknown[] = [];
      for (const name of names) {
        const client = OpenFeature.getClient(name);
        for (const [original, renamed] of [['original', 'renamed'], ['split_original', 'split_renamed']] as const) {
          const a = await client.getStringDetails(original, 'x', of);
          const b = await client.getStringDetails(renamed, 'x', of);
          assert.deepEqual([b.value, b.variant, b.reason], [a.value, a.variant, a.reason], `${name} ${renamed} ${JSON.stringify(of)}`);
          answers.push([a.value, a.variant, a.reason]);
        }
      }
      // Every provider: the same value, variant and reason (SPLIT where the weights or the rollout chose).
      assert.deepEqual(answers.slice(2, 4), answers.slice(0, 2), `remote = local for ${JSON.stringify(of)}`);
      assert.deepEqual(answers.slice(4, 6), answers.slice(0, 2), `OFREP = local for ${JSON.stringify(of)}`);
    }
  });
});
