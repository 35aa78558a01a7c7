// Writes packages/server/dist/src/main.js, the server's entry, as one bundle of its TypeScript
// sources (src/main.ts and what it imports), over the file by file build of `tsc -b`, which
// type-checks and writes the rest of dist/ (what the tests and the backup command import). Node's
// ES module loader paid for each of about 850 files at every start, typebox's and kysely's most
// (start-up time: docs/performance.md); inside the bundle they cost one read. Packages that are
// CommonJS, native, read files beside themselves, or are loaded only when a setting needs them
// stay outside, imported from node_modules as before. The engine comes from its TypeScript
// sources and the worker threads the server starts (src/paths.ts) are bundled beside main.js,
// so that `npm start` (scripts/start-build.mjs) needs no `tsc` output of the server or the engine.
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const INSIDE = /^(typebox|kysely|jose|@guidon\/engine)(\/|$)/;
const engineSource = fileURLToPath(new URL('../packages/engine/src/index.ts', import.meta.url));

await build({
  entryPoints: [
    'packages/server/src/main.ts',
    'packages/server/src/modules/history/history.worker.ts',
    'packages/server/src/modules/flags-as-code/yaml.worker.ts',
    'packages/server/src/modules/experiments/intake.worker.ts',
    'packages/server/src/modules/experiments/results.worker.ts',
  ],
  outbase: 'packages/server/src',
  outdir: 'packages/server/dist/src',
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node20',
  // Stack traces name the functions and the source files (node --enable-source-maps reads the map).
  keepNames: true,
  sourcemap: 'linked',
  logLevel: 'warning',
  plugins: [
    {
      name: 'dependencies-outside',
      setup(bundler) {
        bundler.onResolve({ filter: /^@guidon\/engine$/ }, () => ({ path: engineSource }));
        bundler.onResolve({ filter: /^[^./]/ }, ({ path }) => (INSIDE.test(path) ? undefined : { path, external: true }));
      },
    },
  ],
});
