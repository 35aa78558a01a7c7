/**
 * npm run bench:login: does login take the same time for a known and an unknown email (docs/security.md)? The real server (dist/src/main.js) on a fresh SQLite file; LOGIN_TRIES (default 200)
 * failed logins for a registered email (wrong password) and as many for unregistered ones,
 * interleaved, one at a time, each from its own client address (X-Forwarded-For from loopback) so
 * the failed-login limit does not answer instead. Prints the medians and their difference
 * (target: within 10 %), and a successful login's median for scale.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '../tests/harness.js';
import { startChildServer } from '../tests/child-server.js';

const TRIES = Number(process.env.LOGIN_TRIES ?? 200);

const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
};

async function timedLogin(url: string, email: string, password: string, ip: string, expected: number): Promise<number> {
  const started = performance.now();
  const answer = await fetch(`${url}/auth/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-forwarded-for': ip },
    body: JSON.stringify({ email, password }),
  });
  await answer.arrayBuffer();
  const took = performance.now() - started;
  if (answer.status !== expected) throw new Error(`login answered ${answer.status}, expected ${expected}`);
  return took;
}

const dir = mkdtempSync(join(tmpdir(), 'guidon-login-bench-'));
const server = await startChildServer(await freePort(), { DATABASE_URL: `sqlite:${join(dir, 'guidon.db')}` });
try {
  const email = 'known@example.com';
  const password = 'the right password 123';
  const registered = await fetch(`${server.url}/auth/register`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email, password }) });
  if (registered.status !== 201) throw new Error(`register: ${registered.status}`);
  const ip = (i: number) => `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`;
  // Warm-up: the first unknown-email login computes the throwaway hash once.
  for (let i = 0; i < 10; i++) {
    await timedLogin(server.url, email, 'wrong password 000', ip(100_000 + i), 401);
    await timedLogin(server.url, `nobody-${i}@example.com`, 'wrong password 000', ip(110_000 + i), 401);
  }
  const known: number[] = [];
  const unknown: number[] = [];
  const success: number[] = [];
  for (let i = 0; i < TRIES; i++) {
    // Alternate which goes first, so drift on the shared machine falls on both alike.
    const pair = [
      async () => known.push(await timedLogin(server.url, email, `wrong password ${i}`, ip(2 * i), 401)),
      async () => unknown.push(await timedLogin(server.url, `nobody-${i}@example.com`, `wrong password ${i}`, ip(2 * i + 1), 401)),
    ];
    if (i % 2) pair.reverse();
    for (const run of pair) await run();
    if (i % 4 === 0) success.push(await timedLogin(server.url, email, password, ip(200_000 + i), 200));
  }
  const knownMedian = median(known);
  const unknownMedian = median(unknown);
  const difference = Math.abs(knownMedian - unknownMedian) / Math.min(knownMedian, unknownMedian);
  console.log(`login timing, ${TRIES} tries each (ms):`);
  console.log(`  known email, wrong password:   median ${knownMedian.toFixed(2)}  p90 ${[...known].sort((a, b) => a - b)[Math.floor(known.length * 0.9)]!.toFixed(2)}`);
  console.log(`  unknown email:                 median ${unknownMedian.toFixed(2)}  p90 ${[...unknown].sort((a, b) => a - b)[Math.floor(unknown.length * 0.9)]!.toFixed(2)}`);
  console.log(`  known email, right password:   median ${median(success).toFixed(2)} (${success.length} tries)`);
  console.log(`  difference of the medians: ${(difference * 100).toFixed(1)} % (target: within 10 %) → ${difference <= 0.1 ? 'PASS' : 'FAIL'}`);
  if (difference > 0.1) process.exitCode = 1;
} finally {
  await server.kill('SIGTERM');
  rmSync(dir, { recursive: true, force: true });
}
