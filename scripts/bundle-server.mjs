// Writes packages/server/dist/src/main.js, the server's entry, as one bundle of its TypeScript
// sources (src/main.ts and what it imports), over the file by file build of `tsc -b`, which
// type-checks and writes the rest of dist/ (what the tests, the history worker and the backup
// command import). Node's ES module loader paid for each of about 850 files at every start,
// typebox's and kysely's most (start-up time: docs/performance.md); inside the bundle they cost
// one read. Packages that are CommonJS, native, read files beside themselves, or are loaded
// only when a setting needs them stay outside, imported from node_modules as before.
import { build } from 'esbuild';

const INSIDE = /^(typebox|kysely|jose|@guidon\/engine)(\/|$)/;

await build({
  entryPoints: ['packages/server/src/main.ts'],
  outfile: 'packages/server/dist/src/main.js',
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
        bundler.onResolve({ filter: /^[^./]/ }, ({ path }) => (INSIDE.test(path) ? undefined : { path, external: true }));
      },
    },
  ],
});
