/** Python with scipy, for tests that check a figure against an independent computation. */
import { spawnSync } from 'node:child_process';
import assert from 'node:assert/strict';

/**
 * The first python3 on PATH that has scipy (GUIDON_PYTHON first when set): npm puts the folder of
 * its node (/usr/bin) ahead of the others, whose python3 may be a bare system one.
 */
export function pythonWithScipy(): string {
  const onPath = spawnSync('sh', ['-c', 'which -a python3'], { encoding: 'utf8' }).stdout.split('\n').filter(Boolean);
  const candidates = [...new Set([process.env.GUIDON_PYTHON, ...onPath].filter((path): path is string => Boolean(path)))];
  const found = candidates.find((python) => spawnSync(python, ['-c', 'import scipy'], { stdio: 'ignore' }).status === 0);
  assert.ok(found, `no python3 with scipy among ${candidates.join(', ') || 'none on PATH'} (apt-get install python3-scipy, or set GUIDON_PYTHON)`);
  return found;
}

/** Runs a script that reads JSON on stdin and prints JSON; answers what it printed. */
export function runPython<T>(script: string, input: unknown): T {
  const run = spawnSync(pythonWithScipy(), ['-c', script], { input: JSON.stringify(input), encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
  assert.equal(run.status, 0, `python3 with scipy failed: ${run.stderr}`);
  return JSON.parse(run.stdout) as T;
}
