// After the build: `npm pack` of each client package into packages/server/dist/downloads/, where
// the server serves them (GET /downloads/, docs/sdk.md), with index.json describing them. Until
// the packages are on a registry, `npm install <PUBLIC_URL>/downloads/<file>` installs them.
// Skipped when nothing a tarball is made of changed since the last run (a hash kept beside them).
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
/** The packages published: every workspace not marked private (so a new client package, such as a CLI, is one by itself). */
const PUBLISHED = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')).workspaces.filter((dir) => !JSON.parse(readFileSync(join(root, dir, 'package.json'), 'utf8')).private);
const downloadsDir = join(root, 'packages', 'server', 'dist', 'downloads');
const stampPath = join(downloadsDir, '.source-hash');

function* files(path) {
  if (!existsSync(path)) return;
  if (statSync(path).isDirectory()) for (const name of readdirSync(path).sort()) yield* files(join(path, name));
  else yield path;
}

function digest() {
  const hash = createHash('sha256');
  for (const dir of PUBLISHED) {
    for (const input of ['package.json', 'README.md', 'LICENSE', 'dist']) {
      for (const path of files(join(root, dir, input))) hash.update(path.slice(root.length)).update('\0').update(readFileSync(path)).update('\0');
    }
  }
  return hash.digest('hex');
}

function pack() {
  const hash = digest();
  if (existsSync(stampPath) && readFileSync(stampPath, 'utf8') === hash && existsSync(join(downloadsDir, 'index.json'))) return;
  rmSync(downloadsDir, { recursive: true, force: true });
  mkdirSync(downloadsDir, { recursive: true });
  // Under `npm run`, npm's own settings (npm_config_*) would reach the nested npm: left out.
  const env = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.toLowerCase().startsWith('npm_')));
  const result = spawnSync('npm', ['pack', '--json', '--loglevel=warn', '--no-update-notifier', '--pack-destination', downloadsDir, ...PUBLISHED.flatMap((dir) => ['--workspace', dir])], { cwd: root, env, encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
  if (result.status !== 0) throw new Error(`npm pack failed (${result.error?.message ?? `exit ${result.status}`})`);
  const packed = JSON.parse(result.stdout);
  const byName = new Map(packed.map((entry) => [entry.name, entry]));
  const manifests = new Map(PUBLISHED.map((dir) => JSON.parse(readFileSync(join(root, dir, 'package.json'), 'utf8'))).map((manifest) => [manifest.name, manifest]));
  // The tarballs an install of one needs besides it: its @guidon dependencies (on no registry yet), theirs too.
  const needsOf = (name, found = new Set()) => {
    for (const dependency of Object.keys(manifests.get(name).dependencies ?? {})) {
      if (byName.has(dependency) && !found.has(dependency)) needsOf(dependency, found.add(dependency));
    }
    return found;
  };
  const packages = packed.map((entry) => {
    const needs = [...manifests.keys()].filter((name) => needsOf(entry.name).has(name)); // in the workspace's order: dependencies first
    return { name: entry.name, version: entry.version, file: entry.filename, size: entry.size, integrity: entry.integrity, needs };
  });
  writeFileSync(join(downloadsDir, 'index.json'), `${JSON.stringify({ packages }, null, 2)}\n`);
  writeFileSync(stampPath, hash);
}

if (process.argv[1] === fileURLToPath(import.meta.url)) pack();
