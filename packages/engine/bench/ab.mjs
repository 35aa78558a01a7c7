// The engine bench, before and after: runs engine.bench.js alternately with another build of the
// engine (BENCH_ENGINE, its dist/src/index.js) and with this one, AB_ROUNDS times each, and prints
// each case's best (lowest CPU ns per evaluation) for both, and their ratio. The "before" build
// also runs a second time each round: before ÷ before again is the noise of the same moments.
//
//   git worktree add /tmp/engine-base main && (cd /tmp/engine-base && npm ci && npx tsc -b packages/engine)
//   BENCH_ENGINE=/tmp/engine-base/packages/engine/dist/src/index.js AB_ROUNDS=5 BENCH_MS=300 node packages/engine/bench/ab.mjs
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const before = process.env.BENCH_ENGINE;
if (!before) throw new Error('BENCH_ENGINE: the dist/src/index.js of the build to compare with');
const bench = fileURLToPath(new URL('../dist/bench/engine.bench.js', import.meta.url));
const rounds = Number(process.env.AB_ROUNDS ?? 5);

/** ns per evaluation by case name, from one run's table. */
function run(engine) {
  const env = { ...process.env };
  if (engine) env.BENCH_ENGINE = engine;
  else delete env.BENCH_ENGINE;
  const out = execFileSync(process.execPath, [bench], { env, encoding: 'utf8', maxBuffer: 1 << 24 });
  const cases = new Map();
  for (const line of out.split('\n')) {
    const cells = line.split('|').map((cell) => cell.trim());
    if (cells.length === 6 && /^[\d.]+$/.test(cells[3])) cases.set(cells[1], Number(cells[3]));
  }
  return cases;
}

const best = { before: new Map(), again: new Map(), after: new Map() };
const keep = (into, cases) => {
  for (const [name, ns] of cases) into.set(name, Math.min(ns, into.get(name) ?? Infinity));
};
for (let round = 1; round <= rounds; round++) {
  keep(best.before, run(before));
  keep(best.after, run(undefined));
  keep(best.again, run(before));
  process.stderr.write(`round ${round}/${rounds} done\n`);
}
console.log(`Best of ${rounds} alternated runs each, CPU ns per evaluation (BENCH_MS=${process.env.BENCH_MS ?? 1000})\n`);
console.log('| case | before | after | after ÷ before | noise: before ÷ before again |');
console.log('|---|---:|---:|---:|---:|');
for (const [name, after] of best.after) {
  const was = best.before.get(name);
  const again = best.again.get(name);
  console.log(`| ${name} | ${was ?? '–'} | ${after} | ${was ? (after / was).toFixed(2) : '–'} | ${was && again ? (again / was).toFixed(2) : '–'} |`);
}
