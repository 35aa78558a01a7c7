// The image's figures for docs/performance.md, beside the same server run directly by Node as the
// baseline, alternated (A, B, A, B …) so that both see the same machine: the time from start to
// the first 200 of /ready on a fresh SQLite database, and the server's resident memory 5 s later
// with nothing to do; and the image without its semi-space flags (the CMD's --max-semi-space-size=32 --min-semi-space-size=32). Run after the image test built localhost/guidon-test:latest:
//   node scripts/container/measure.mjs [rounds, default 5]
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../..', import.meta.url));
const PODMAN = ['podman', '--runtime', 'runc', '--cgroup-manager=cgroupfs'];
const rounds = Number(process.argv[2] ?? 5);
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const podman = (args) => spawnSync(PODMAN[0], [...PODMAN.slice(1), ...args], { encoding: 'utf8' });
const rssMiB = (pid) => Math.round(Number(/^VmRSS:\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))[1]) / 1024);

async function untilReady(url, started) {
  for (;;) {
    const status = await fetch(`${url}/ready`).then((answer) => answer.status, () => 0);
    if (status === 200) return Math.round(performance.now() - started);
    await sleep(20);
  }
}

/** The image as built, or with `command` instead of its CMD. */
async function container(port, command = []) {
  const name = `guidon-measure-${port}`;
  const started = performance.now();
  podman(['run', '-d', '--name', name, '--network', 'host', '--ulimit', 'nofile=4096:4096', '--ulimit', 'nproc=4096:4096', '-e', `PORT=${port}`, 'localhost/guidon-test:latest', ...command]);
  const readyMs = await untilReady(`http://127.0.0.1:${port}`, started);
  await sleep(5000);
  const rss = rssMiB(podman(['inspect', '--format', '{{.State.Pid}}', name]).stdout.trim());
  podman(['rm', '-f', '-v', name]);
  return { readyMs, rss };
}

async function direct(port) {
  const dir = mkdtempSync(join(tmpdir(), 'guidon-measure-'));
  const started = performance.now();
  const child = spawn(process.execPath, ['--max-semi-space-size=32', '--min-semi-space-size=32', join(root, 'packages/server/dist/src/main.js')], { cwd: dir, env: { PATH: process.env.PATH, PORT: String(port) }, stdio: 'ignore' });
  const readyMs = await untilReady(`http://127.0.0.1:${port}`, started);
  await sleep(5000);
  const rss = rssMiB(child.pid);
  child.kill('SIGTERM');
  await new Promise((resolve) => child.once('exit', resolve));
  rmSync(dir, { recursive: true, force: true });
  return { readyMs, rss };
}

const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
const results = { container: [], 'container, default young generation': [], direct: [] };
for (let i = 0; i < rounds; i++) {
  results.container.push(await container(21000 + i));
  results['container, default young generation'].push(await container(23000 + i, ['node', '/app/packages/server/dist/src/main.js']));
  results.direct.push(await direct(22000 + i));
}
const size = Number(podman(['image', 'inspect', '--format', '{{.Size}}', 'localhost/guidon-test:latest']).stdout.trim());
console.log(`image: ${(size / 1e6).toFixed(0)} MB; load average ${readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ')}`);
for (const [what, runs] of Object.entries(results)) {
  console.log(`${what}: to /ready ${runs.map((run) => run.readyMs).join(', ')} ms (median ${median(runs.map((run) => run.readyMs))}); at rest ${runs.map((run) => run.rss).join(', ')} MiB (median ${median(runs.map((run) => run.rss))}); Node ${what === 'direct' ? process.version : 'of the image'}`);
}
