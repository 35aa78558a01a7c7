/**
 * The functions that ran the most instructions in a callgrind file, self cost, with the JIT's
 * functions named from Node's --perf-basic-prof map (callgrind sees V8's generated code as bare
 * addresses). Used on what `BENCH_INSTRUCTIONS_KEEP=<dir> npm run bench:instructions` keeps:
 *
 *   node packages/server/dist/bench/callgrind-summary.js <dir>/<case>-<build>/callgrind.out.1-01 [count]
 *   node packages/server/dist/bench/callgrind-summary.js <reference's file> <this build's file> [count]
 *
 * With two files, the functions whose cost differs most between them (a JS function by its name,
 * wherever its file is: the server is a bundle in one build and files in another). The perf map is
 * read from perf-<pid>.map beside each file (copied there by the bench). Per counted request when
 * the directory's `requests` file says how many were counted.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';

interface Symbol {
  start: bigint;
  end: bigint;
  name: string;
}

function perfMap(dir: string): Symbol[] {
  const file = readdirSync(dir).find((name) => /^perf-\d+\.map$/.test(name));
  if (!file) return [];
  return readFileSync(join(dir, file), 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((line) => {
      const [start, size, ...name] = line.split(' ');
      const from = BigInt(`0x${start}`);
      return { start: from, end: from + BigInt(`0x${size}`), name: name.join(' ') };
    })
    .sort((a, b) => (a.start < b.start ? -1 : a.start > b.start ? 1 : 0));
}

/** The map's entry holding an address (binary search; the last code written there wins: V8 reuses addresses). */
function nameAt(symbols: Symbol[], address: bigint): string | undefined {
  let low = 0;
  let high = symbols.length - 1;
  let found: Symbol | undefined;
  while (low <= high) {
    const middle = (low + high) >> 1;
    if (symbols[middle]!.start <= address) {
      found = symbols[middle];
      low = middle + 1;
    } else high = middle - 1;
  }
  return found && address < found.end ? found.name : undefined;
}

/** Self cost per function name (the first event, Ir), from callgrind's format: calls= lines are followed by inclusive cost, which is not self. */
function selfCosts(file: string): Map<string, number> {
  const names = new Map<string, string>();
  const costs = new Map<string, number>();
  let current = '';
  let afterCall = false;
  for (const line of readFileSync(file, 'utf8').split('\n')) {
    // Names are given once, as (id) name, in fn= or cfn= lines; later lines give the (id) alone.
    const named = /^c?fn=\((\d+)\) (.*)$/.exec(line);
    if (named) names.set(named[1]!, named[2]!);
    const fn = /^fn=\((\d+)\)/.exec(line);
    if (fn) current = names.get(fn[1]!) ?? fn[1]!;
    else if (line.startsWith('calls=')) afterCall = true;
    else {
      const cost = /^(?:[+-]?\d+|\*) (\d+)/.exec(line);
      if (!cost) continue;
      if (afterCall) afterCall = false;
      else costs.set(current, (costs.get(current) ?? 0) + Number(cost[1]));
    }
  }
  return costs;
}

/** Self cost per function of a callgrind file, per counted request, JIT code named from the perf map. */
function summary(file: string): { total: number; byName: Map<string, number> } {
  const dir = dirname(file);
  const symbols = perfMap(dir);
  const requests = existsSync(join(dir, 'requests')) ? Number(readFileSync(join(dir, 'requests'), 'utf8')) : 1;
  const byName = new Map<string, number>();
  let total = 0;
  for (const [name, cost] of selfCosts(file)) {
    total += cost / requests;
    const address = /^0x([0-9a-f]+)$/i.exec(name);
    const resolved = address ? (nameAt(symbols, BigInt(`0x${address[1]}`)) ?? 'JIT code, unnamed') : name;
    byName.set(resolved, (byName.get(resolved) ?? 0) + cost / requests);
  }
  return { total, byName };
}

/** A JS function's name without its file and position (`JS:*evaluateInto file:///…:12:3` → `JS:*evaluateInto`). */
const bare = (name: string) => (name.startsWith('JS:') ? name.replace(/ \S*:\d+:\d+$/, '') : name);
const n = (value: number) => Math.round(value).toLocaleString('en').padStart(10);

const files = process.argv.slice(2).filter((arg) => !/^\d+$/.test(arg));
const shown = Number(process.argv.slice(2).find((arg) => /^\d+$/.test(arg)) ?? 40);
if (files.length === 0 || files.length > 2) throw new Error('usage: callgrind-summary.js <callgrind file> [<another>] [count]');
if (files.length === 1) {
  const { total, byName } = summary(files[0]!);
  console.log(`${files[0]}: ${n(total).trim()} instructions`);
  for (const [name, cost] of [...byName].sort((a, b) => b[1] - a[1]).slice(0, shown)) console.log(`${n(cost)}  ${name}`);
} else {
  const [before, after] = files.map((file) => {
    const { total, byName } = summary(file);
    const merged = new Map<string, number>();
    for (const [name, cost] of byName) merged.set(bare(name), (merged.get(bare(name)) ?? 0) + cost);
    return { total, merged };
  });
  console.log(`${files[0]}: ${n(before!.total).trim()}; ${files[1]}: ${n(after!.total).trim()}; difference ${n(after!.total - before!.total).trim()}`);
  console.log(`${'difference'.padStart(10)} ${'first'.padStart(10)} ${'second'.padStart(10)}  function`);
  const names = new Set([...before!.merged.keys(), ...after!.merged.keys()]);
  const rows = [...names].map((name) => [name, before!.merged.get(name) ?? 0, after!.merged.get(name) ?? 0] as const);
  for (const [name, first, second] of rows.sort((a, b) => Math.abs(b[2] - b[1]) - Math.abs(a[2] - a[1])).slice(0, shown)) console.log(`${n(second - first)} ${n(first)} ${n(second)}  ${name}`);
}
