/**
 * The reference build that `npm run bench` measures this build against in the same run
 * (evaluate-wrk.bench.ts), so that a change that costs 5 % is seen the day it lands rather than
 * as a drift between runs on a shared machine.
 *
 * BENCH_REFERENCE: tags, branches or commits, comma-separated; a case is measured against the first
 * that can seed it. Default `bench-reference,bench-reference-features`: when a default tag is
 * missing and its commit is in the history, the tag is created there: `bench-reference` at
 * e8c63e9 (the build main was measured against from 2026-11-22, before conditions and variants),
 * `bench-reference-features` at d9e0f3f (main at the end of 2026-11-24, with conditions and
 * variants, for the cases e8c63e9 cannot seed). `none` measures this build alone. The commit is exported with `git archive` into
 * <tmp>/guidon-bench-reference-<sha> (kept between runs: built once) and its server built with the
 * TypeScript compiler of this checkout. Its dependencies: when every package its package-lock.json
 * names is in this checkout's lock at the same version, this checkout's node_modules is linked
 * (the workspace packages, @guidon/*, are the reference's own); otherwise `npm ci` installs them
 * (from the npm registry: nothing else is fetched). A reference that bundles its server
 * (scripts/bundle-server.mjs) is bundled as `npm run build` does.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, lstatSync, mkdirSync, readdirSync, readFileSync, readlinkSync, renameSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export interface Reference {
  /** What was asked for (tag, branch or commit). */
  name: string;
  sha: string;
  /** The reference build's server entry point. */
  mainJs: string;
}

/** Default tags and the commits they are created at when missing (docs/performance.md, "Evaluate under load"). */
const DEFAULTS: Readonly<Record<string, string>> = { 'bench-reference': 'e8c63e9', 'bench-reference-features': 'd9e0f3f' };
/** This checkout: dist/bench → packages/server → the repository. */
const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..', '..');

const git = (...args: string[]) => execFileSync('git', args, { cwd: root, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }).trim();
const commitOf = (name: string): string | null => {
  try {
    return git('rev-parse', '--verify', '--quiet', `${name}^{commit}`);
  } catch {
    return null;
  }
};

/** Packages of a lock file (node_modules/… paths) with their versions. */
function lockVersions(lock: string): Map<string, string | undefined> {
  const packages = (JSON.parse(lock) as { packages?: Record<string, { version?: string; link?: boolean }> }).packages ?? {};
  return new Map(Object.entries(packages).filter(([path]) => path.includes('node_modules/')).map(([path, entry]) => [path, entry.link ? 'link' : entry.version]));
}

/** node_modules for the reference: this checkout's entries linked one by one, @guidon/* as the reference's lock makes them (relative links into its packages/). */
function linkDependencies(dir: string): void {
  const target = join(dir, 'node_modules');
  mkdirSync(target, { recursive: true });
  const ours = join(root, 'node_modules');
  for (const entry of readdirSync(ours)) {
    if (entry === '@guidon') continue;
    symlinkSync(join(ours, entry), join(target, entry));
  }
  mkdirSync(join(target, '@guidon'), { recursive: true });
  for (const entry of readdirSync(join(ours, '@guidon'))) {
    const link = join(ours, '@guidon', entry);
    if (lstatSync(link).isSymbolicLink() && existsSync(join(dir, 'packages', entry))) symlinkSync(readlinkSync(link), join(target, '@guidon', entry));
  }
}

/** Builds (once each) and returns the references of BENCH_REFERENCE; none with `none` or when none can be found. */
export function referenceBuilds(): Reference[] {
  const asked = process.env.BENCH_REFERENCE ?? Object.keys(DEFAULTS).join(',');
  if (asked === 'none') return [];
  return asked
    .split(',')
    .map((name) => name.trim())
    .filter(Boolean)
    .map(referenceBuild)
    .filter((reference): reference is Reference => reference !== null);
}

function referenceBuild(asked: string): Reference | null {
  let sha = commitOf(asked);
  const fallback = DEFAULTS[asked];
  if (sha === null && fallback !== undefined) {
    sha = commitOf(fallback);
    if (sha === null) {
      console.warn(`no tag ${asked} and no commit ${fallback} in this history: left out (set BENCH_REFERENCE to a commit)`);
      return null;
    }
    git('tag', asked, sha);
    console.warn(`tagged ${fallback} as ${asked}`);
  }
  if (sha === null) throw new Error(`BENCH_REFERENCE: ${asked} is not a commit of this repository`);
  const dir = join(tmpdir(), `guidon-bench-reference-${sha.slice(0, 12)}`);
  const mainJs = join(dir, 'packages', 'server', 'dist', 'src', 'main.js');
  if (existsSync(mainJs)) return { name: asked, sha, mainJs };

  console.warn(`building the reference ${asked} (${sha.slice(0, 12)}) in ${dir}`);
  const building = `${dir}.building-${process.pid}`;
  rmSync(building, { recursive: true, force: true });
  mkdirSync(building, { recursive: true });
  const archive = spawnSync('sh', ['-c', `git archive --format=tar ${sha} | tar -x -C "${building}"`], { cwd: root, stdio: 'inherit' });
  if (archive.status !== 0) throw new Error('git archive of the reference failed');
  const theirs = lockVersions(readFileSync(join(building, 'package-lock.json'), 'utf8'));
  const ours = lockVersions(readFileSync(join(root, 'package-lock.json'), 'utf8'));
  const differing = [...theirs].filter(([path, version]) => version !== 'link' && ours.get(path) !== version);
  if (differing.length === 0) linkDependencies(building);
  else {
    console.warn(`the reference's dependencies differ from this checkout's (${differing.length}, e.g. ${differing[0]![0]}): npm ci`);
    const install = spawnSync('npm', ['ci', '--ignore-scripts', '--no-audit', '--no-fund'], { cwd: building, stdio: 'inherit' });
    if (install.status !== 0) throw new Error('npm ci of the reference failed');
  }
  const tsc = join(root, 'node_modules', 'typescript', 'bin', 'tsc');
  const build = spawnSync(process.execPath, [tsc, '-b', 'packages/server'], { cwd: building, stdio: 'inherit' });
  if (build.status !== 0) throw new Error('building the reference failed');
  // Builds since the start-up work ship dist/src/main.js as one bundle: measure what ships.
  if (existsSync(join(building, 'scripts', 'bundle-server.mjs'))) {
    const bundle = spawnSync(process.execPath, ['scripts/bundle-server.mjs'], { cwd: building, stdio: 'inherit' });
    if (bundle.status !== 0) throw new Error('bundling the reference failed');
  }
  rmSync(dir, { recursive: true, force: true });
  renameSync(building, dir);
  return { name: asked, sha, mainJs };
}
