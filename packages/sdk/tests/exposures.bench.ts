/**
 * What recording exposures adds to a local evaluation that reads one flag (docs/experiments.md,
 * "Sending exposures and events"): each case twice in the same run, `sendExposures: false` (the
 * baseline) and on. Run after a build:
 *   node packages/sdk/dist/tests/exposures.bench.js
 * The steady state cycles 1,024 users already recorded (a read costs the Map.get of exposures.ts);
 * the "new unit every read" case records each read (an exposure made and queued, the oldest of the
 * queue dropped, the oldest remembered forgotten). Then the heap after 5 million reads by 5 million
 * distinct users: bounded by maxSeenExposures and maxQueuedEvents, whatever the number of users.
 * CPU time per call, best of 5 rounds, as local.bench.ts measures. Figures go to docs/performance.md.
 */
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import type { FlagDefinition } from '@guidon/engine';
import { createClient, type LocalClient, type RulesetDocument } from '@guidon/sdk';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

const CONTEXTS = Array.from({ length: 1024 }, (_, i) => ({ user_id: `user-${i}`, custom_attributes: { plan: i % 4 ? 'free' : 'pro' } }));

const FLAGS: FlagDefinition[] = [
  { key: 'plain', enabled: true, rolloutPercentage: 0, rules: [] },
  { key: 'release', enabled: true, rolloutPercentage: 50, rules: [] },
  { key: 'banner', enabled: true, rolloutPercentage: 0, rules: [], variants: [{ key: 'blue', value: 'blue', weight: 500 }, { key: 'green', value: 'green', weight: 500 }] } as FlagDefinition,
];

/** A local client from an in-memory ruleset: nothing reachable, nothing sent during the run (hour-long intervals). */
function client(sendExposures: boolean): LocalClient {
  const ruleset = { format: 2, environment: 'production', revision: 1, flags: FLAGS, segments: {} } as unknown as RulesetDocument;
  return createClient({ baseUrl: 'http://127.0.0.1:9', apiToken: 'gdn_bench', environment: 'production', mode: 'local', bootstrap: ruleset, stream: false, pollIntervalMs: 3_600_000, usageIntervalMs: 3_600_000, eventsIntervalMs: 3_600_000, timeoutMs: 100, sendExposures });
}

/** ns of CPU time per iteration of `loop(n)`, best of 5 rounds after a warm-up (as local.bench.ts). */
function measure(iterations: number, loop: (n: number) => number): number {
  const round = () => {
    const started = process.cpuUsage();
    sink += loop(iterations);
    const { user, system } = process.cpuUsage(started);
    return ((user + system) * 1000) / iterations;
  };
  round();
  let best = Infinity;
  for (let r = 0; r < 5; r++) best = Math.min(best, round());
  return best;
}
let sink = 0;
const ns = (value: number) => `${value.toFixed(1)} ns`;
const rows: [string, string, string][] = [];

const off = client(false);
const on = client(true);
// Each case brings its own loops (a shared call site turns polymorphic: local.bench.ts says why).
rows.push([
  'flag with no rules: evaluate(ctx).isEnabled, 1,024 users seen before',
  ns(measure(5_000_000, (n) => {
    let hits = 0;
    for (let i = 0; i < n; i++) if (off.evaluate(CONTEXTS[i & 1023]).isEnabled('plain')) hits++;
    return hits;
  })),
  ns(measure(5_000_000, (n) => {
    let hits = 0;
    for (let i = 0; i < n; i++) if (on.evaluate(CONTEXTS[i & 1023]).isEnabled('plain')) hits++;
    return hits;
  })),
]);
rows.push([
  'a 50 % release (arms on/off): evaluate(ctx).isEnabled, 1,024 users seen before',
  ns(measure(5_000_000, (n) => {
    let hits = 0;
    for (let i = 0; i < n; i++) if (off.evaluate(CONTEXTS[i & 1023]).isEnabled('release')) hits++;
    return hits;
  })),
  ns(measure(5_000_000, (n) => {
    let hits = 0;
    for (let i = 0; i < n; i++) if (on.evaluate(CONTEXTS[i & 1023]).isEnabled('release')) hits++;
    return hits;
  })),
]);
rows.push([
  'two variants by weight: evaluate(ctx).value, 1,024 users seen before',
  ns(measure(5_000_000, (n) => {
    let length = 0;
    for (let i = 0; i < n; i++) length += off.evaluate(CONTEXTS[i & 1023]).value('banner', 'none').length;
    return length;
  })),
  ns(measure(5_000_000, (n) => {
    let length = 0;
    for (let i = 0; i < n; i++) length += on.evaluate(CONTEXTS[i & 1023]).value('banner', 'none').length;
    return length;
  })),
]);

// A new unit every read: the ids are made beforehand (their strings are not the SDK's cost).
const FRESH = Array.from({ length: 1_000_000 }, (_, i) => ({ user_id: `fresh-${i}` }));
let next = 0;
rows.push([
  'a 50 % release: a new unit every read (each one recorded)',
  ns(measure(200_000, (n) => {
    let hits = 0;
    for (let i = 0; i < n; i++) if (off.evaluate(FRESH[next++ % FRESH.length]).isEnabled('release')) hits++;
    return hits;
  })),
  ns(measure(200_000, (n) => {
    let hits = 0;
    for (let i = 0; i < n; i++) if (on.evaluate(FRESH[next++ % FRESH.length]).isEnabled('release')) hits++;
    return hits;
  })),
]);
FRESH.length = 0;

// Heap: 5 million distinct users, each read once with exposures on; the client's memory stays bounded.
const heapClient = client(true);
gc();
const heapBefore = process.memoryUsage().heapUsed;
for (let i = 0; i < 5_000_000; i++) heapClient.evaluate({ user_id: `person-${i}` }).isEnabled('release');
gc();
const heapAfter = process.memoryUsage().heapUsed;
const stats = heapClient.eventStats();

console.log(`Exposures in local evaluation (Node ${process.version}, ${process.arch}); CPU time per call, best of 5`);
console.log(`${'case'.padEnd(82)} ${'off'.padStart(9)} ${'on'.padStart(9)}`);
for (const [what, a, b] of rows) console.log(`${what.padEnd(82)} ${a.padStart(9)} ${b.padStart(9)}`);
console.log(`heap after 5 million distinct users (after GC): ${((heapAfter - heapBefore) / 1048576).toFixed(1)} MiB more (${(heapBefore / 1048576).toFixed(1)} → ${(heapAfter / 1048576).toFixed(1)} MiB); queued ${stats.queued}, dropped ${stats.dropped}`);
await Promise.all([off, on, heapClient].map((c) => c.close()));
if (sink === -1) console.log(sink);
