/**
 * DNS rebinding (docs/security.md, Webhooks): a webhook connects to the address that was checked. A DNS
 * server started here answers a webhook's name with a public address, then 127.0.0.1, then the
 * public one again, and so on (TTL 0), as a rebinding attacker's does. The server resolves as in
 * production (the process' system resolver is pointed at that DNS server for the test's zone).
 * Before the fix, the check before a send got the public answer and the connection the loopback
 * one: webhook.created and webhook.test reached a receiver on 127.0.0.1, and the deliveries list
 * showed its status. Also: the blocked ranges docs/security.md lists (IPv4-mapped, NAT64, 6to4, site-local, benchmark).
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { eventually, newProject, newUser, request, startServer, type TestServer, type TestUser } from './harness.js';
import { resolveThrough, ScriptedDns } from './rebinding-dns.js';
import { Receiver } from './webhook-receiver.js';

const ZONE = 'rebind.test';
const PUBLIC = '93.184.215.14';
const FAST = { pollIntervalMs: 50, timeoutMs: 2000, retryDelaysMs: [50, 50, 50, 50] };

describe('webhooks against DNS rebinding', () => {
  let dns: ScriptedDns;
  let restoreResolver: () => void;
  let receiver: Receiver;
  let server: TestServer;
  let user: TestUser;

  before(async () => {
    // Query 0 (the check at create) public, then loopback, public, loopback, …
    dns = await new ScriptedDns((_name, index) => (index % 2 === 0 ? PUBLIC : '127.0.0.1')).start();
    restoreResolver = resolveThrough(dns, ZONE);
    receiver = await new Receiver().start();
    receiver.answer = () => 418; // a status the deliveries list must never show
    server = await startServer({}, { webhooks: FAST });
    user = await newUser(server, 'rebind');
  });
  after(async () => {
    await server?.close();
    await receiver?.close();
    restoreResolver?.();
    await dns?.close();
  });

  const deliveries = async (projectId: string, webhookId: string) =>
    (await request(server, 'GET', `/api/projects/${projectId}/webhooks/${webhookId}/deliveries?limit=500`, { token: user.token })).body.items as any[];

  test('webhook.created and webhook.test never reach the receiver on loopback, and its status never shows', async () => {
    const project = await newProject(server, user);
    const url = `http://hook.${ZONE}:${receiver.port}/hook`;
    const created = await request(server, 'POST', `/api/projects/${project.id}/webhooks`, { token: user.token, body: { url } });
    assert.equal(created.status, 201, `the name answered a public address at create: ${created.text}`);
    assert.deepEqual(dns.answered.map((query) => query.address), [PUBLIC], 'the check at create asked the DNS server');

    // webhook.created: five attempts, then given up (the schedule is 50 ms here).
    await eventually(async () => (await deliveries(project.id, created.body.id)).length === 5, 'five attempts at webhook.created', 20_000);
    const tested = await request(server, 'POST', `/api/projects/${project.id}/webhooks/${created.body.id}/test`, { token: user.token });
    assert.equal(tested.status, 202, tested.text);
    await eventually(async () => (await deliveries(project.id, created.body.id)).length === 10, 'five attempts at webhook.test', 20_000);

    assert.deepEqual(receiver.requests, [], 'nothing reached the receiver on 127.0.0.1');
    const log = await deliveries(project.id, created.body.id);
    assert.deepEqual(new Set(log.map((item) => item.action)), new Set(['webhook.created', 'webhook.test']));
    for (const item of log) {
      assert.equal(item.status_code, null, 'no attempt got an answer');
      assert.doesNotMatch(item.error, /418|ECONNREFUSED|ECONNRESET/, 'nothing about the loopback receiver');
    }
    // Each send resolved the name once, and connected to what that resolution gave: the loopback
    // answers were refused by the server, the public ones went (here, to the test's guard).
    const refused = log.filter((item) => /^refused: hook\.rebind\.test is or resolves to a private/.test(item.error));
    const publicOnes = log.filter((item) => /test guard: not connecting to 93\.184\.215\.14/.test(item.error));
    assert.equal(refused.length + publicOnes.length, log.length, JSON.stringify(log.map((item) => item.error)));
    assert.ok(refused.length >= 4, 'the loopback answers were refused');
    assert.equal(dns.answered.length, 1 + log.length, 'one resolution per attempt: what was checked is what was connected to');
  });
});

describe('webhook addresses refused (docs/security.md ranges)', () => {
  let server: TestServer;
  let user: TestUser;

  before(async () => {
    server = await startServer({}, { webhooks: FAST });
    user = await newUser(server, 'ranges');
  });
  after(async () => {
    await server?.close();
  });

  test('IPv4-mapped, NAT64 and 6to4 carrying a private address, site-local, benchmark and other reserved ranges are 400', async () => {
    const project = await newProject(server, user);
    const refused = [
      'http://[::ffff:7f00:1]/', // IPv4-mapped 127.0.0.1
      'http://[::ffff:a00:1]/', // IPv4-mapped 10.0.0.1
      'http://[64:ff9b::7f00:1]/', // NAT64 of 127.0.0.1
      'http://[64:ff9b::a9fe:a9fe]/', // NAT64 of 169.254.169.254
      'http://[64:ff9b:1::1]/', // local-use NAT64
      'http://[2002:7f00:1::1]/', // 6to4 of 127.0.0.1
      'http://[2002:c0a8:101::1]/', // 6to4 of 192.168.1.1
      'http://[fec0::1]/', // site-local
      'http://[fd00::1]/', // unique local
      'http://[::7f00:1]/', // IPv4-compatible
      'http://198.18.0.1/', // benchmark
      'http://198.19.255.254/',
      'http://100.64.0.1/', // carrier-grade NAT
      'http://240.0.0.1/', // reserved
      'http://255.255.255.255/',
      'http://224.0.0.1/',
      'http://0.0.0.0/',
      'http://2130706433/', // 127.0.0.1 written as a number
    ];
    for (const url of refused) {
      const answer = await request(server, 'POST', `/api/projects/${project.id}/webhooks`, { token: user.token, body: { url, enabled: false } });
      assert.equal(answer.status, 400, `${url}: ${answer.text}`);
      assert.match(answer.body.message, /private/);
    }
    // Public addresses, also when carried in IPv6 (created disabled: nothing is sent off the machine).
    for (const url of ['https://93.184.215.14/hook', 'http://[64:ff9b::5db8:d70e]/', 'http://[2002:5db8:d70e::1]/', 'http://[::ffff:5db8:d70e]/', 'http://[2606:4700::1111]/']) {
      const answer = await request(server, 'POST', `/api/projects/${project.id}/webhooks`, { token: user.token, body: { url, enabled: false } });
      assert.equal(answer.status, 201, `${url}: ${answer.text}`);
    }
  });
});
