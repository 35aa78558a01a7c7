/**
 * npm run backup while writes run (SQLite's online backup API), then the restore of
 * docs/operations.md: a server started on the copy answers with everything written before the
 * backup began, and the copy is consistent.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { copyFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import BetterSqlite3 from 'better-sqlite3';
import { freePort, request } from './harness.js';
import { onPostgres } from './test-database.js';
import { mainJs, startChildServer, type ChildServer } from './child-server.js';

const backupJs = join(mainJs, '..', 'backup.js');

describe('backup and restore (SQLite)', { skip: onPostgres ? 'SQLite only: PostgreSQL is backed up with pg_dump (docs/operations.md)' : false }, () => {
  let dir: string;
  let server: ChildServer | undefined;
  let restored: ChildServer | undefined;

  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'guidon-backup-'));
  });
  after(async () => {
    await server?.kill('SIGKILL');
    await restored?.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  });

  test('a backup taken under writes restores to a server that answers with the data', { timeout: 120_000 }, async () => {
    const live = join(dir, 'live.db');
    server = await startChildServer(await freePort(), { DATABASE_URL: `sqlite:${live}` });
    const email = 'backup@example.com';
    const password = 'correct horse battery';
    assert.equal((await request(server, 'POST', '/auth/register', { body: { email, password } })).status, 201);
    const token: string = (await request(server, 'POST', '/auth/login', { body: { email, password } })).body.token;
    const project = (await request(server, 'POST', '/api/projects', { token, body: { name: 'backed up' } })).body;
    const environments = (await request(server, 'GET', `/api/projects/${project.id}/environments`, { token })).body as { id: string; key: string }[];
    const flagsPath = `/api/projects/${project.id}/environments/${environments.find((env) => env.key === 'production')!.id}/flags`;

    // Writers and evaluate run all through the backup.
    const acknowledged: string[] = [];
    let running = true;
    let n = 0;
    const writer = async () => {
      while (running) {
        const key = `flag-${++n}`;
        const answer = await request(server!, 'POST', flagsPath, { token, body: { key, name: key, enabled: true } });
        assert.equal(answer.status, 201, answer.text);
        acknowledged.push(key);
        await request(server!, 'POST', '/sdk/v1/evaluate', { sdkKey: project.sdk_key, body: { environment: 'production', context: { user_id: key } } });
      }
    };
    const writers = [writer(), writer()];
    while (acknowledged.length < 50) await new Promise((resolve) => setTimeout(resolve, 20));
    const beforeBackup = [...acknowledged];
    const copy = join(dir, 'copy.db');
    const { stdout } = await promisify(execFile)(process.execPath, [backupJs, copy], { env: { ...process.env, DATABASE_URL: `sqlite:${live}`, INIT_CWD: dir } });
    assert.match(stdout, /backed up .* \(\d+ pages\)/);
    const duringBackup = acknowledged.length;
    running = false;
    await Promise.all(writers);
    assert.ok(acknowledged.length > duringBackup || duringBackup > beforeBackup.length, 'writes ran while the backup was taken');

    const raw = new BetterSqlite3(copy, { readonly: true });
    assert.equal(raw.pragma('integrity_check', { simple: true }), 'ok');
    assert.deepEqual(raw.pragma('foreign_key_check'), []);
    raw.close();

    // Restore (docs/operations.md): the copy becomes the database file of a stopped server.
    const restoredPath = join(dir, 'restored', 'guidon.db');
    await promisify(execFile)('mkdir', ['-p', join(dir, 'restored')]);
    copyFileSync(copy, restoredPath);
    restored = await startChildServer(await freePort(), { DATABASE_URL: `sqlite:${restoredPath}` });
    const login = await request(restored, 'POST', '/auth/login', { body: { email, password } });
    assert.equal(login.status, 200, 'the account is in the backup');
    const flags = (await request(restored, 'GET', flagsPath, { token: login.body.token })).body as { key: string }[];
    const keys = new Set(flags.map((flag) => flag.key));
    for (const key of beforeBackup) assert.ok(keys.has(key), `${key}, acknowledged before the backup began, is in it`);
    assert.ok(keys.size <= acknowledged.length);
    const evaluated = await request(restored, 'POST', '/sdk/v1/evaluate', { sdkKey: project.sdk_key, body: { environment: 'production' } });
    assert.equal(evaluated.status, 200);
    assert.equal(evaluated.body.flags['flag-1'].enabled, true, 'the restored server evaluates the backed-up flags');
    assert.equal((await request(restored, 'GET', '/api/me', { token })).status, 200, 'login tokens stay valid: the generated JWT secret is in the backup');
  });

  test('npm run backup refuses a PostgreSQL DATABASE_URL and says what to use', async () => {
    const failed = await promisify(execFile)(process.execPath, [backupJs, join(dir, 'x.db')], { env: { ...process.env, DATABASE_URL: 'postgres://127.0.0.1:1/x' } }).then(
      () => null,
      (error: { code: number; stderr: string }) => error,
    );
    assert.ok(failed, 'the backup fails');
    assert.equal(failed.code, 1);
    assert.match(failed.stderr, /pg_dump/);
  });
});
