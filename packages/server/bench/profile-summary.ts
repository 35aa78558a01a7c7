/**
 * Summarizes a V8 CPU profile (node --cpu-prof; BENCH_PROFILE=<dir> npm run bench writes them):
 * self time by area (GC, socket writes, Fastify, pino, JSON, the engine, …) and the heaviest
 * functions, as shares of the time the thread was not idle.
 *
 *   node packages/server/dist/bench/profile-summary.js <file.cpuprofile> [top=25] [from=<seconds>]
 *
 * from: only samples taken that many seconds after the profile began (the bench prints when its
 * load starts, so start-up and seeding stay out).
 */
import { readFileSync } from 'node:fs';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}

interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
  startTime: number;
}

const [file, topArg, fromArg] = process.argv.slice(2);
const fromMicros = Number(fromArg ?? 0) * 1e6;
if (!file) throw new Error('usage: profile-summary.js <file.cpuprofile> [top]');
const profile = JSON.parse(readFileSync(file, 'utf8')) as Profile;
const byId = new Map(profile.nodes.map((node) => [node.id, node]));

/** Self time per node, in µs. */
const self = new Map<number, number>();
let elapsed = 0;
profile.samples.forEach((id, i) => {
  elapsed += profile.timeDeltas[i] ?? 0;
  if (elapsed >= fromMicros) self.set(id, (self.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0));
});

/** First matching area wins: by package, then by Node internals, then our own code. */
const AREAS: [string, (name: string, url: string) => boolean][] = [
  ['idle', (name) => name === '(idle)'],
  ['garbage collection', (name) => name === '(garbage collector)'],
  ['socket writes (writev, writeBuffer, writeUtf8String)', (name) => /^(writev|writeBuffer|writeUtf8String|writeLatin1String|writeGeneric)$/.test(name)],
  ['V8/native, not attributed ((program))', (name) => name === '(program)'],
  ['pino (logging)', (_name, url) => /node_modules\/(pino|pino-std-serializers|fast-redact|sonic-boom|thread-stream)/.test(url)],
  ['find-my-way (router)', (_name, url) => url.includes('node_modules/find-my-way')],
  ['Fastify', (_name, url) => /node_modules\/(fastify|@fastify|avvio|light-my-request|fast-json-stringify|secure-json-parse|fast-content-type-parse|toad-cache|process-warning|abstract-logging|proxy-addr|forwarded)/.test(url)],
  ['ajv (validation)', (name, url) => url.includes('node_modules/ajv') || (url === '' && /^validate/.test(name))],
  ['JSON.parse / stringify', (name) => /^(parse|stringify|JSON)$/.test(name)],
  ['rate-limiter-flexible', (_name, url) => url.includes('rate-limiter-flexible')],
  ['engine (flag evaluation)', (_name, url) => url.includes('/engine/')],
  ['evaluate module', (_name, url) => url.includes('/modules/evaluate/') || url.includes('/modules/ofrep/') || url.includes('/modules/streams/')],
  ['history recorder', (_name, url) => url.includes('/modules/history/')],
  ['other server code', (_name, url) => url.includes('/server/dist/')],
  ['node:http', (_name, url) => /node:_http|node:http/.test(url)],
  ['node:net / streams / events', (_name, url) => /node:(net|stream|internal\/streams|events|internal\/stream_base_commons|internal\/event_target)/.test(url)],
  ['other Node internals', (_name, url) => url.startsWith('node:')],
  ['other native', () => true],
];

const areas = new Map<string, number>();
const functions = new Map<string, number>();
let busy = 0;
for (const [id, micros] of self) {
  const node = byId.get(id)!;
  const { functionName, url, lineNumber } = node.callFrame;
  const name = functionName || '(anonymous)';
  const area = AREAS.find(([, test]) => test(name, url))![0];
  areas.set(area, (areas.get(area) ?? 0) + micros);
  if (area === 'idle') continue;
  busy += micros;
  const where = url ? `${url.replace(/^.*node_modules\//, '').replace(/^file:\/\/.*\/dist\//, '')}:${lineNumber + 1}` : '';
  const key = `${name} ${where}`.trim();
  functions.set(key, (functions.get(key) ?? 0) + micros);
}

const pct = (micros: number) => `${((100 * micros) / busy).toFixed(1)}%`;
console.log(`${file}: ${(busy / 1e6).toFixed(2)} s busy, ${((areas.get('idle') ?? 0) / 1e6).toFixed(2)} s idle\n`);
console.log('| area | share of busy time |');
console.log('|---|---:|');
for (const [area, micros] of [...areas].filter(([a]) => a !== 'idle').sort((a, b) => b[1] - a[1])) console.log(`| ${area} | ${pct(micros)} |`);
console.log('\n| function (self time) | share |');
console.log('|---|---:|');
for (const [key, micros] of [...functions].sort((a, b) => b[1] - a[1]).slice(0, Number(topArg ?? 25))) console.log(`| \`${key}\` | ${pct(micros)} |`);
