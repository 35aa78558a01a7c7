// `npm start`'s build: what the server needs to start, not the whole build that `npm test` and CI
// make (`npm run build`: every package and test type-checked, docs/performance.md, "First start").
// Side by side:
// - the server's bundle and its worker threads (scripts/bundle-server.mjs, esbuild, from sources);
// - the client packages it serves at /downloads/: their build (tsc: the tarballs hold their type
//   declarations), CommonJS markers and tarballs (scripts/cjs-markers.mjs, scripts/pack-clients.mjs);
// - the dashboard, bundled without its type-check (packages/web/scripts/build-if-changed.mjs).
// Each step skips what is already up to date, so later starts cost little.
import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const read = (path) => JSON.parse(readFileSync(join(root, path), 'utf8'));
// The client packages: the workspaces not marked private, as scripts/pack-clients.mjs packs them.
const clients = read('package.json').workspaces.filter((dir) => !read(join(dir, 'package.json')).private);
const clientProjects = clients.flatMap((dir) => [dir, join(dir, 'tsconfig.cjs.json')].filter((path) => existsSync(join(root, path, path.endsWith('.json') ? '' : 'tsconfig.json'))));

/** Runs the commands one after the other; resolves when all succeeded. */
function inTurn(...commands) {
  return commands.reduce(
    (previous, [command, args]) =>
      previous.then(
        () =>
          new Promise((resolve, reject) => {
            const child = spawn(command, args, { cwd: root, stdio: 'inherit' });
            child.once('error', reject);
            child.once('exit', (code) => (code === 0 ? resolve() : reject(new Error(`${command} ${args.join(' ')} failed (exit ${code})`))));
          }),
      ),
    Promise.resolve(),
  );
}

const node = process.execPath;
const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
const results = await Promise.allSettled([
  inTurn([node, ['scripts/bundle-server.mjs']]),
  inTurn([node, [join(root, 'node_modules', 'typescript', 'bin', 'tsc'), '-b', ...clientProjects]], [node, ['scripts/cjs-markers.mjs']], [node, ['scripts/pack-clients.mjs']]),
  inTurn([npm, ['run', 'build', '--silent', '-w', 'packages/web', '--', '--no-typecheck']]),
]);
const failed = results.filter((result) => result.status === 'rejected');
for (const { reason } of failed) console.error(reason.message);
if (failed.length > 0) process.exit(1);
