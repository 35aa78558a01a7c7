// npm test, after the build: every test on SQLite, then the server's tests again on PostgreSQL, then
// the dashboard's walk, then (once per run) the container image.
// PostgreSQL is used when it answers; the multi-instance tests start Redis servers of their own,
// so they need the redis-server program. With GUIDON_REQUIRE_SERVICES=1 (CI) a missing one is a
// failure instead of a skip.
//
// The whole suite runs on the machine's Node line, and the SQLite pass again on 22 and 24 (the
// server's own test files shared between them: sharedOut) from
// scripts/node-lines (scripts/node-lines.mjs). `--node=current`, `--node=22` or `--node=24` (a
// comma list, or GUIDON_TEST_NODE) picks lines; a line's run is this script again under that Node.
import { spawn, spawnSync } from 'node:child_process';
import { appendFileSync, existsSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { createConnection } from 'node:net';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { ensureCurrent, knownLines, prepare, use } from './node-lines.mjs';

const wanted = (process.argv.find((arg) => arg.startsWith('--node='))?.slice('--node='.length) ?? process.env.GUIDON_TEST_NODE ?? 'current,22,24')
  .split(',')
  .map((name) => name.trim())
  .filter(Boolean);
// Test files or folders named on the command line narrow every phase to them (a quick check of one line).
const only = process.argv.slice(2).filter((arg) => !arg.startsWith('--')).map((path) => path.replace(/^\.\//, '').replace(/\/+$/, ''));
if (wanted.length !== 1 || wanted[0] !== 'current') process.exit(await runLines(wanted));
ensureCurrent();

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

// Node 20 searches a directory given to --test; Node 22 and 24 take globs instead. So the files are
// listed here, by Node 20's rule (a name like x.test.js or test-x.js, or any script under a test/
// folder; node_modules skipped), and every line runs the same list.
function testFiles(path, underTest = false) {
  const found = [];
  for (const entry of readdirSync(path, { withFileTypes: true })) {
    const full = join(path, entry.name);
    if (entry.isDirectory()) {
      if (entry.name !== 'node_modules') found.push(...testFiles(full, underTest || entry.name === 'test'));
    } else if (/((^test(-.+)?)|(.+[.\-_]test))\.[cm]?js$/.test(entry.name) || (underTest && /\.[cm]?js$/.test(entry.name))) {
      found.push(full);
    }
  }
  return found.sort();
}

// Test files at a time (GUIDON_TEST_CONCURRENCY, default 2). Node's default is one less than the
// cores: one on our 2-core machines, where a file often waits on its server, its database or a child
// process, and two at a time take about 60 % of the time (docs/adr/0019-test-run-time.md). Each
// file has its own servers, databases and ports. Not more by default: every file's servers hold
// PostgreSQL connections, and PostgreSQL allows 100.
const concurrency = Number(process.env.GUIDON_TEST_CONCURRENCY ?? 2);
const reporter = pathToFileURL(join(dirname(fileURLToPath(import.meta.url)), 'failures-reporter.mjs')).href;
// runLines names one file per line; a run of the current line alone starts its own.
const failuresFile = process.env.GUIDON_TEST_FAILURES ?? join(tmpdir(), `guidon-test-failures-${process.pid}.txt`);
if (!process.env.GUIDON_TEST_FAILURES) rmSync(failuresFile, { force: true });

function run(label, paths, env, timeoutMs = 600_000) {
  const inside = (path, folder) => path === folder || path.startsWith(`${folder}/`);
  const folders = paths.filter((folder) => only.length === 0 || only.some((path) => inside(path, folder) || inside(folder, path)));
  const missing = folders.filter((folder) => !existsSync(folder));
  if (missing.length > 0) {
    console.error(`${missing.join(', ')} missing: is the build there (npm run build)?`);
    return 1;
  }
  const files = sharedOut(folders.flatMap((folder) => testFiles(folder)).filter((file) => only.length === 0 || only.some((path) => inside(file, path))));
  if (only.length > 0 && files.length === 0) return 0;
  if (files.length === 0) {
    console.error(`No test files in ${paths.join(', ')}: is the build there?`);
    return 1;
  }
  console.log(`\n=== ${label} (Node ${process.version}) ===`);
  // A test that hangs fails after 10 minutes instead of holding the run (tests that need longer say so).
  // A failing test is also written to the failures file (failures-reporter.mjs), listed at the run's end.
  const reporters = ['--test-reporter=spec', '--test-reporter-destination=stdout', `--test-reporter=${reporter}`, '--test-reporter-destination=stdout'];
  const result = spawnSync(process.execPath, ['--test', ...reporters, `--test-timeout=${timeoutMs}`, `--test-concurrency=${concurrency}`, ...files], {
    stdio: 'inherit',
    env: { ...process.env, GUIDON_TEST_FAILURES: failuresFile, ...env },
  });
  if ((result.status ?? 1) !== 0) appendFileSync(failuresFile, `(${label}: exit ${result.status ?? result.signal})\n`);
  return result.status ?? 1;
}

/**
 * GUIDON_TEST_SERVER_SHARE=<i>/<n> (set by runLines on the lines after the first): of the server's
 * own test files, only every n-th from the i-th; the later lines share them, and every other file
 * (engine, SDK, providers, CLI: the runtime's HTTP client and timers at work) runs on each line
 * (docs/adr/0019-test-run-time.md).
 */
function sharedOut(files) {
  const share = /^(\d+)\/(\d+)$/.exec(process.env.GUIDON_TEST_SERVER_SHARE ?? '');
  if (!share) return files;
  const [index, of] = [Number(share[1]), Number(share[2])];
  let server = 0;
  return files.filter((file) => !file.startsWith('packages/server/dist/') || server++ % of === index);
}

/** What failed in a run, a line each (failures-reporter.mjs): printed again at the end. */
function failuresIn(file) {
  return existsSync(file) ? readFileSync(file, 'utf8').trim() : '';
}

// The SDK's, the providers' and the CLI's tests live beside them and start the real server, so they run on both databases too.
const againstTheServer = ['packages/server/dist', 'packages/sdk/dist/tests', 'packages/openfeature/dist/tests', 'packages/cli/dist/tests'];
const onSqlite = run('engine, server, SDK and provider tests on SQLite', ['packages/engine/dist', ...againstTheServer], {});
// A line after the first (GUIDON_TEST_LATER_LINE=1, set by runLines) runs the SQLite pass only:
// PostgreSQL's driver and the browser are the same JavaScript on every line, and the three lines'
// full runs had grown past 70 minutes of CI's 90 (docs/adr/0019-test-run-time.md).
const laterLine = process.env.GUIDON_TEST_LATER_LINE === '1';
const onPostgres = postgres && !laterLine ? run('server, SDK and provider tests on PostgreSQL', againstTheServer, { GUIDON_TEST_DATABASE: 'postgres' }) : 0;
let apiClient = 0;
let circles = 0;
let links = 0;
if (only.length === 0) {
  console.log(`\n=== dashboard: API client against the server's OpenAPI document (Node ${process.version}) ===`);
  apiClient = spawnSync(process.execPath, ['packages/web/scripts/openapi.mjs', '--check'], { stdio: 'inherit' }).status ?? 1;
  console.log(`\n=== imports go one way: no circle between the files of a package (Node ${process.version}) ===`);
  circles = spawnSync(process.execPath, ['scripts/import-circles.mjs'], { stdio: 'inherit' }).status ?? 1;
  console.log(`\n=== documents: every relative link and anchor leads somewhere (Node ${process.version}) ===`);
  links = spawnSync(process.execPath, ['scripts/doc-links.mjs'], { stdio: 'inherit' }).status ?? 1;
  if (apiClient !== 0) appendFileSync(failuresFile, '(the dashboard API client does not match the OpenAPI document)\n');
  if (circles !== 0) appendFileSync(failuresFile, '(an import circle)\n');
  if (links !== 0) appendFileSync(failuresFile, '(a broken link in the documents)\n');
}
const dashboard = chromium && !laterLine ? run('dashboard walk in Chromium', ['packages/web/e2e/dist'], {}) : 0;
// The container image is built and run once per `npm test`, not on every Node line: runLines sets
// GUIDON_TEST_IMAGE=0 for the lines after the first (scripts/container/image.test.mjs).
// Building the image from nothing (its base included) takes several minutes: it gets 40.
const image = process.env.GUIDON_TEST_IMAGE === '0' ? 0 : run('container image, built and run with Podman (once per run)', ['scripts/container'], {}, 40 * 60_000);
const status = onSqlite || onPostgres || apiClient || circles || links || dashboard || image;
if (!process.env.GUIDON_TEST_FAILURES && failuresIn(failuresFile) !== '') console.log(`\n##### failed on Node ${process.version} #####\n${failuresIn(failuresFile)}`);
process.exit(status);

/** Runs the whole suite once per line, each under its Node with its build of better-sqlite3. */
async function runLines(names) {
  const known = knownLines();
  const unknown = names.filter((name) => !known.some((line) => line.name === name));
  if (unknown.length > 0) {
    console.error(`Unknown Node line ${unknown.join(', ')}: choose from ${known.map((line) => line.name).join(', ')}.`);
    return 2;
  }
  const lines = prepare(known.filter((line) => names.includes(line.name)));
  const current = known[0];
  let stopping = null;
  let child = null;
  for (const signal of ['SIGINT', 'SIGTERM']) {
    process.on(signal, () => {
      stopping = signal;
      child?.kill(signal);
    });
  }
  const results = [];
  try {
    for (const line of lines) {
      if (stopping) break;
      console.log(`\n##### Node ${line.version} (${line.name}) #####`);
      use(line);
      // A line's own directory first on PATH, for anything that runs `node` by name.
      const failures = join(tmpdir(), `guidon-test-failures-${process.pid}-${line.name}.txt`);
      rmSync(failures, { force: true });
      // The lines after the first share the server's test files between them (sharedOut), when there are two or more.
      const later = results.length > 0 ? { GUIDON_TEST_IMAGE: '0', GUIDON_TEST_LATER_LINE: '1', ...(lines.length > 2 && { GUIDON_TEST_SERVER_SHARE: `${results.length - 1}/${lines.length - 1}` }) } : {};
      const env = { ...process.env, PATH: `${dirname(line.node)}:${process.env.PATH ?? ''}`, GUIDON_TEST_FAILURES: failures, ...later };
      child = spawn(line.node, [fileURLToPath(import.meta.url), '--node=current', ...only], { stdio: 'inherit', env });
      const status = await new Promise((resolve) => {
        child.once('error', (error) => (console.error(`Node ${line.version} did not start: ${error.message}`), resolve(1)));
        child.once('exit', (code, signal) => resolve(code ?? (signal ? 1 : 0)));
      });
      child = null;
      results.push({ line, status, failures });
    }
  } finally {
    use(current);
  }
  console.log(`\n##### Node lines #####`);
  for (const { line, status } of results) console.log(`Node ${line.version} (${line.name}): ${status === 0 ? 'passed' : `FAILED (exit ${status})`}`);
  for (const { line, status, failures } of results) {
    if (status === 0) continue;
    console.log(`\n##### failed on Node ${line.version} (${line.name}) #####\n${failuresIn(failures) || '(no test failed: the line ended early or a check outside the tests failed)'}`);
  }
  if (stopping) return 1;
  return results.some(({ status }) => status !== 0) ? 1 : 0;
}
