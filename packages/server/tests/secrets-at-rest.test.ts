/**
 * Secrets at rest (docs/security.md, Secrets at rest: the database and its backups were created
 * world-readable, and a login token signed with the JWT secret read from a backup was accepted).
 * The SQLite database, its -wal and -shm files and every backup are readable by the service's
 * user only (0600; a folder the service makes, 0700), and a JWT_SECRET too short to be a key
 * stops the start.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { chmodSync, mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { ConfigError, loadConfig } from '../src/config.js';
import { freePort, request } from './harness.js';
import { onPostgres } from './test-database.js';
import { mainJs, startChildServer, type ChildServer } from './child-server.js';

const backupJs = join(mainJs, '..', 'backup.js');
const modeOf = (path: string) => (statSync(path).mode & 0o777).toString(8);

describe('the SQLite database and its backups: readable by the service user only', { skip: onPostgres ? 'SQLite files; PostgreSQL keeps its own (pg_dump files: docs/operations.md)' : false }, () => {
  let dir: string;
  let server: ChildServer | undefined;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'guidon-at-rest-'));
  });
  after(async () => {
    await server?.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  });

  test('a new database, its WAL and shared-memory files are 0600, in a folder the service made 0700; so is a backup', async () => {
    const live = join(dir, 'made-by-guidon', 'data', 'guidon.db');
    server = await startChildServer(await freePort(), { DATABASE_URL: `sqlite:${live}` });
    // Writes, so the WAL holds pages (the generated JWT secret is in the database since the start).
    const email = 'at-rest@example.com';
    assert.equal((await request(server, 'POST', '/auth/register', { body: { email, password: 'correct horse battery' } })).status, 201);
    for (const path of [live, `${live}-wal`, `${live}-shm`]) assert.equal(modeOf(path), '600', path);
    assert.equal(modeOf(join(dir, 'made-by-guidon')), '700');
    assert.equal(modeOf(join(dir, 'made-by-guidon', 'data')), '700');

    // npm run backup under the default umask (022), into a folder it makes.
    const copy = join(dir, 'backups', 'copy.db');
    await promisify(execFile)(process.execPath, [backupJs, copy], { env: { ...process.env, DATABASE_URL: `sqlite:${live}` } });
    assert.equal(modeOf(copy), '600');
    assert.equal(modeOf(join(dir, 'backups')), '700');
    assert.deepEqual(readdirSync(join(dir, 'backups')), ['copy.db'], 'no journal or partial file left beside it');
  });

  test('a database left readable by others (an older version) is narrowed to 0600 at the next start', async () => {
    await server?.kill('SIGTERM');
    const live = join(dir, 'made-by-guidon', 'data', 'guidon.db');
    chmodSync(live, 0o644);
    server = await startChildServer(await freePort(), { DATABASE_URL: `sqlite:${live}` });
    assert.equal(modeOf(live), '600');
    assert.equal((await request(server, 'POST', '/auth/login', { body: { email: 'at-rest@example.com', password: 'correct horse battery' } })).status, 200, 'its content kept');
    for (const path of [`${live}-wal`, `${live}-shm`]) assert.equal(modeOf(path), '600', path);
  });
});

describe('JWT_SECRET', () => {
  test('shorter than 32 bytes, the start stops with a configuration error naming it; nothing listens', async () => {
    const port = await freePort();
    const dir = mkdtempSync(join(tmpdir(), 'guidon-jwt-'));
    try {
      const child = spawn(process.execPath, [mainJs], {
        env: { PATH: process.env.PATH ?? '', HOST: '127.0.0.1', PORT: String(port), DATABASE_URL: `sqlite:${join(dir, 'guidon.db')}`, JWT_SECRET: 'changeme-changeme-changeme-1234' },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let stderr = '';
      child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
      let gone = false;
      const exited = new Promise((resolve) => child.once('exit', (code) => ((gone = true), resolve(code))));
      // Either it stops, or (the defect) it starts and answers: then it is stopped here.
      const started = (async () => {
        while (!gone) {
          if (await fetch(`http://127.0.0.1:${port}/health`).then(() => true, () => false)) return 'started';
          await new Promise((resolve) => setTimeout(resolve, 100));
        }
      })();
      const outcome = await Promise.race([exited, started]);
      if (outcome === 'started') {
        child.kill('SIGKILL');
        await exited;
      }
      assert.equal(outcome, 1, 'exit code 1');
      assert.match(stderr, /^Configuration error: JWT_SECRET must be at least 32 bytes \(got 31\)/);
      assert.deepEqual(readdirSync(dir), [], 'stopped before opening the database');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('counted in bytes: 32 of them pass, unset generates one', () => {
    assert.throws(() => loadConfig({ JWT_SECRET: 'x'.repeat(31) }), (error: Error) => error instanceof ConfigError && /JWT_SECRET/.test(error.message));
    assert.throws(() => loadConfig({ JWT_SECRET: 'é'.repeat(15) }), ConfigError, '30 bytes');
    assert.equal(loadConfig({ JWT_SECRET: 'é'.repeat(16) }).jwtSecret, 'é'.repeat(16));
    assert.equal(loadConfig({ JWT_SECRET: 'x'.repeat(32) }).jwtSecret, 'x'.repeat(32));
    assert.equal(loadConfig({ JWT_SECRET: '' }).jwtSecret, null);
  });
});
