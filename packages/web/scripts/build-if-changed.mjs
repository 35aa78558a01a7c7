// `npm run build` for the dashboard: type-check and bundle, unless nothing it is built from
// changed since the last build (a hash of the sources kept beside the output), so `npm start`
// with nothing changed starts at once.
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const inputs = ['index.html', 'vite.config.ts', 'tsconfig.json', 'package.json', 'public', 'src'];
const stampPath = join(root, 'dist', '.source-hash');
// --no-typecheck (npm start, scripts/start-build.mjs): the bundle without the type-check, under a
// stamp of its own, so that `npm run build` still type-checks what only npm start has built.
const typecheck = !process.argv.includes('--no-typecheck');
const bundledPath = join(root, 'dist', '.source-hash-unchecked');

function* files(path) {
  if (!existsSync(path)) return;
  if (statSync(path).isDirectory()) for (const name of readdirSync(path).sort()) yield* files(join(path, name));
  else yield path;
}

const hash = createHash('sha256');
for (const input of inputs) {
  for (const path of files(join(root, input))) hash.update(path.slice(root.length)).update('\0').update(readFileSync(path)).update('\0');
}
const digest = hash.digest('hex');

const builtFrom = (path) => existsSync(path) && readFileSync(path, 'utf8') === digest;
if (!process.argv.includes('--force') && existsSync(join(root, 'dist', 'index.html')) && (builtFrom(stampPath) || (!typecheck && builtFrom(bundledPath)))) {
  process.exit(0);
}
for (const [command, args] of [
  ...(typecheck ? [['tsc', ['-p', 'tsconfig.json', '--noEmit']]] : []),
  ['vite', ['build', '--logLevel', 'warn']],
]) {
  const result = spawnSync(command, args, { cwd: root, stdio: 'inherit', shell: process.platform === 'win32' });
  if (result.status !== 0) process.exit(result.status ?? 1);
}
writeFileSync(typecheck ? stampPath : bundledPath, digest);
