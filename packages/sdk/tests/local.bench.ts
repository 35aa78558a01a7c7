/**
 * Local evaluation's cost as an application sees it: @guidon/sdk in local mode, from
 * a ruleset held in memory, with Map.get in the same run as the baseline. Run after a build:
 *   node packages/sdk/dist/tests/local.bench.js
 * Reports ns per call for a flag with no rules, a flag with 5 conditions (semver, regex, a
 * segment), evaluate(context) over 100 flags, the heap before and after 10 million evaluations,
 * and a 1,000-flag ruleset's size (gzipped) and compile time. Figures go to docs/performance.md.
 */
import { gzipSync } from 'node:zlib';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { compileFlagSet, type FlagDefinition } from '@guidon/engine';
import { createClient, type LocalClient, type RulesetDocument } from '@guidon/sdk';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

const CONTEXTS = Array.from({ length: 1024 }, (_, i) => ({
  user_id: `user-${i}`,
  user_email: `person${i}@${i % 3 ? 'example.com' : 'corp.com'}`,
  custom_attributes: { plan: i % 4 ? 'free' : 'pro', app_version: `2.${i % 7}.0`, country: i % 2 ? 'fr' : 'de' },
}));

function ruleset(flags: FlagDefinition[]): RulesetDocument {
  return { format: 1, environment: 'production', revision: 1, flags, segments: { beta: [{ attribute: 'country', operator: 'IN', values: ['fr', 'be'] }] } };
}

/** A local client from an in-memory ruleset: no server, no stream, usage counted but never sent. */
function client(flags: FlagDefinition[]): LocalClient {
  return createClient({ baseUrl: 'http://127.0.0.1:9', apiToken: 'gdn_bench', environment: 'production', mode: 'local', bootstrap: ruleset(flags), stream: false, pollIntervalMs: 3_600_000, usageIntervalMs: 3_600_000, timeoutMs: 100 });
}

const noRules: FlagDefinition = { key: 'plain', enabled: true, rolloutPercentage: 0, rules: [] };
const fiveConditions: FlagDefinition = {
  key: 'targeted',
  enabled: true,
  rolloutPercentage: 0,
  everyoneElse: 'off',
  rules: [
    {
      type: 'conditions',
      value: '',
      enabled: true,
      conditions: [
        { attribute: 'app_version', operator: 'SEMVER_GTE', values: ['2.3.0'] },
        { attribute: 'user_email', operator: 'REGEX', values: ['@(example|corp)\\.com$'] },
        { operator: 'IN_SEGMENT', values: ['beta'] },
        { attribute: 'plan', operator: 'IN', values: ['free', 'pro', 'enterprise'] },
        { attribute: 'user_id', operator: 'STR_STARTS_WITH', values: ['user-'] },
      ],
    },
  ],
};
function mixed(count: number): FlagDefinition[] {
  return Array.from({ length: count }, (_, i): FlagDefinition => {
    switch (i % 4) {
      case 0:
        return { key: `flag-${i}`, enabled: true, rolloutPercentage: 0, rules: [] };
      case 1:
        return { key: `flag-${i}`, enabled: true, rolloutPercentage: 25, rules: [{ type: 'user_id', value: `user-${i}`, enabled: true }] };
      case 2:
        return { key: `flag-${i}`, enabled: true, rolloutPercentage: 0, everyoneElse: 'off', rules: [{ type: 'conditions', value: '', enabled: true, conditions: [{ attribute: 'plan', operator: 'IN', values: ['pro'] }, { attribute: 'app_version', operator: 'SEMVER_GTE', values: ['2.2.0'] }] }] };
      default:
        return { key: `flag-${i}`, enabled: i % 8 !== 3, rolloutPercentage: 50, rules: [{ type: 'email_domain', value: '@corp.com', enabled: true }] };
    }
  });
}

/**
 * ns of CPU time (the process's, user and system) per iteration of `loop(n)`, best of 5 rounds
 * (after a warm-up round): CPU time leaves out the time other processes of a busy machine take
 * from this one. Each case brings its own loop, so every call site in it sees one function: a
 * shared `fn(i)` call site turns polymorphic after the first case and adds its dispatch to every
 * case measured after it.
 */
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
/** What the loops computed, printed at the end so that no loop is optimised away. */
let sink = 0;

const rows: [string, string][] = [];
const ns = (value: number) => (value >= 1000 ? `${(value / 1000).toFixed(2)} µs` : `${value.toFixed(1)} ns`);

const map = new Map(Array.from({ length: 100 }, (_, i) => [`flag-${i}`, i % 2 === 0]));
const KEYS = [...map.keys()];
rows.push(['Map.get of a boolean (baseline)', ns(measure(10_000_000, (n) => {
  let on = 0;
  for (let i = 0; i < n; i++) if (map.get(KEYS[i & 63]!)) on++;
  return on;
}))]);

const plain = client([noRules]);
rows.push(['flag with no rules: evaluate(ctx).isEnabled', ns(measure(5_000_000, (n) => {
  let on = 0;
  for (let i = 0; i < n; i++) if (plain.evaluate(CONTEXTS[i & 1023]).isEnabled('plain')) on++;
  return on;
}))]);

const targeted = client([fiveConditions]);
rows.push(['flag with 5 conditions (semver, regex, segment…): evaluate(ctx).isEnabled', ns(measure(2_000_000, (n) => {
  let on = 0;
  for (let i = 0; i < n; i++) if (targeted.evaluate(CONTEXTS[i & 1023]).isEnabled('targeted')) on++;
  return on;
}))]);

const engineOnly = compileFlagSet([fiveConditions], { environment: 'production', segments: new Map(Object.entries(ruleset([]).segments)) });
rows.push(['  the same, the engine alone (compiled set, evaluateFlag)', ns(measure(2_000_000, (n) => {
  let codes = 0;
  for (let i = 0; i < n; i++) codes += engineOnly.evaluateFlag(CONTEXTS[i & 1023]!, 0);
  return codes;
}))]);

const hundred = client(mixed(100));
const hundredKeys = mixed(100).map((flag) => flag.key);
rows.push(['evaluate(ctx), then isEnabled of each of 100 flags', ns(measure(100_000, (n) => {
  let on = 0;
  for (let i = 0; i < n; i++) {
    const flags = hundred.evaluate(CONTEXTS[i & 1023]);
    for (const key of hundredKeys) if (flags.isEnabled(key)) on++;
  }
  return on;
}))]);
rows.push(['evaluate(ctx).allFlags() of 100 flags', ns(measure(100_000, (n) => {
  let read = 0;
  for (let i = 0; i < n; i++) if (hundred.evaluate(CONTEXTS[i & 1023]).allFlags()) read++;
  return read;
}))]);

// Heap: 10 million evaluations (usage counted throughout) must leave nothing behind.
gc();
const heapBefore = process.memoryUsage().heapUsed;
for (let i = 0; i < 10_000_000; i++) targeted.evaluate(CONTEXTS[i & 1023]).isEnabled('targeted');
gc();
const heapAfter = process.memoryUsage().heapUsed;
rows.push(['heap after 10 million evaluations (after GC)', `${((heapAfter - heapBefore) / 1024).toFixed(0)} KiB difference (${(heapBefore / 1048576).toFixed(1)} → ${(heapAfter / 1048576).toFixed(1)} MiB)`]);

const thousand = ruleset(mixed(1000));
const json = JSON.stringify(thousand);
rows.push(['1,000-flag ruleset: JSON / gzipped', `${(json.length / 1024).toFixed(0)} KiB / ${(gzipSync(json).length / 1024).toFixed(1)} KiB`]);
const compileMs = measure(20, (n) => {
  let flags = 0;
  for (let i = 0; i < n; i++) flags += compileFlagSet(thousand.flags, { environment: 'production', segments: new Map(Object.entries(thousand.segments)) }).size;
  return flags;
}) / 1e6;
rows.push(['1,000-flag ruleset: compile', `${compileMs.toFixed(2)} ms`]);

console.log(`Local evaluation (Node ${process.version}, ${process.arch})`);
for (const [what, figure] of rows) console.log(`${what.padEnd(80)} ${figure}`);
await Promise.all([plain, targeted, hundred].map((c) => c.close()));
if (sink === -1) console.log(sink);
