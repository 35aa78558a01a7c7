/**
 * How main.js listens (src/http/listen.ts): on ACCEPT_SOCKETS sockets of its port where Node has
 * reusePort (Node 22.12 and later), on one on Node 20. Every connection is served whichever socket
 * the kernel gives it to, a second server on the same port still fails to start, and a stop
 * closes every socket.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { ACCEPT_SOCKETS, hasReusePort } from '../src/http/listen.js';
import { mainJs, startChildServer, type ChildServer } from './child-server.js';
import { freePort } from './harness.js';
import { createTestDatabase, type TestDatabase } from './test-database.js';

/** Sockets listening on 127.0.0.1:port, from the kernel's table (state 0A: LISTEN). */
function listeningSockets(port: number): number {
  const local = `0100007F:${port.toString(16).toUpperCase().padStart(4, '0')}`;
  return readFileSync('/proc/net/tcp', 'utf8').split('\n').slice(1).filter((line) => {
    const fields = line.trim().split(/\s+/);
    return fields[1] === local && fields[3] === '0A';
  }).length;
}

/** GET path on a connection of its own (no keep-alive): the status. */
function getOnNewConnection(port: number, path: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const sent = httpRequest({ host: '127.0.0.1', port, path, agent: false, headers: { connection: 'close' } }, (answer) => {
      answer.resume();
      answer.on('end', () => resolve(answer.statusCode ?? 0));
    });
    sent.on('error', reject);
    sent.end();
  });
}

describe('main.js: the sockets it listens on', () => {
  let database: TestDatabase;
  let port: number;
  let server: ChildServer;

  before(async () => {
    database = await createTestDatabase();
    port = await freePort();
    server = await startChildServer(port, { DATABASE_URL: database.url });
  });
  after(async () => {
    await server.kill('SIGKILL');
    await database.drop();
  });

  test(`${hasReusePort() ? ACCEPT_SOCKETS : 1} on Node ${process.versions.node}, each serving the connections it takes`, async () => {
    assert.equal(listeningSockets(port), hasReusePort() ? ACCEPT_SOCKETS : 1);
    // The kernel spreads connections over the sockets by their addresses: 200 new ones reach every socket.
    const statuses = await Promise.all(Array.from({ length: 200 }, () => getOnNewConnection(port, '/health')));
    assert.deepEqual(new Set(statuses), new Set([200]));
  });

  test('a second server on the port does not start, and does not join the first', async () => {
    const second = spawn(process.execPath, [mainJs], {
      env: { PATH: process.env.PATH ?? '', HOST: '127.0.0.1', PORT: String(port), DATABASE_URL: database.url, LOG_LEVEL: 'warn' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    second.stdout.on('data', (chunk: Buffer) => (output += chunk));
    second.stderr.on('data', (chunk: Buffer) => (output += chunk));
    const code = await new Promise<number | null>((resolve) => second.once('exit', resolve));
    assert.notEqual(code, 0);
    assert.match(output, /EADDRINUSE/);
    assert.equal(listeningSockets(port), hasReusePort() ? ACCEPT_SOCKETS : 1);
  });

  test('a stop closes every socket', async () => {
    const { code } = await server.kill('SIGTERM');
    assert.equal(code, 0);
    assert.equal(listeningSockets(port), 0);
  });
});
