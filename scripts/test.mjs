// npm test, after the build: every test on SQLite, then the server's tests again on PostgreSQL.
// PostgreSQL is used when it answers; the multi-instance tests start Redis servers of their own,
// so they need the redis-server program. With GUIDON_REQUIRE_SERVICES=1 (CI) a missing one is a
// failure instead of a skip.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createConnection } from 'node:net';

const required = process.env.GUIDON_REQUIRE_SERVICES === '1';
const postgresUrl = new URL(process.env.GUIDON_TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres');

function answers(url, defaultPort) {
  return new Promise((resolve) => {
    const socket = createConnection({ host: url.hostname, port: Number(url.port || defaultPort) });
    socket.setTimeout(2000);
    socket.once('connect', () => (socket.destroy(), resolve(true)));
    socket.once('error', () => resolve(false));
    socket.once('timeout', () => (socket.destroy(), resolve(false)));
  });
}

const postgres = await answers(postgresUrl, 5432);
const redis = spawnSync('redis-server', ['--version']).status === 0;
// The dashboard's walk drives Debian's Chromium (never a downloaded browser).
const chromium = existsSync(process.env.GUIDON_CHROMIUM ?? '/usr/bin/chromium');
for (const [name, up] of [['PostgreSQL', postgres], ['redis-server', redis], ['Chromium (/usr/bin/chromium, apt-get install chromium)', chromium]]) {
  if (up) continue;
  if (required) {
    console.error(`${name} is not available and GUIDON_REQUIRE_SERVICES=1: failing (docs/deploy.md says how to start it).`);
    process.exit(1);
  }
  console.warn(`${name} is not available: the tests that need it are skipped.`);
}

function run(label, paths, env) {
  console.log(`\n=== ${label} ===`);
  const result = spawnSync(process.execPath, ['--test', '--test-reporter=spec', ...paths], {
    stdio: 'inherit',
    env: { ...process.env, ...env },
  });
  return result.status ?? 1;
}

// The SDK's and the providers' tests live beside them and start the real server, so they run on both databases too.
const againstTheServer = ['packages/server/dist', 'packages/sdk/dist/tests', 'packages/openfeature/dist/tests'];
const onSqlite = run('engine, server, SDK and provider tests on SQLite', ['packages/engine/dist', ...againstTheServer], {});
const onPostgres = postgres ? run('server, SDK and provider tests on PostgreSQL', againstTheServer, { GUIDON_TEST_DATABASE: 'postgres' }) : 0;
console.log('\n=== dashboard: API client against the server\'s OpenAPI document ===');
const apiClient = spawnSync(process.execPath, ['packages/web/scripts/openapi.mjs', '--check'], { stdio: 'inherit' }).status ?? 1;
const dashboard = chromium ? run('dashboard walk in Chromium', ['packages/web/e2e/dist'], {}) : 0;
process.exit(onSqlite || onPostgres || apiClient || dashboard);
