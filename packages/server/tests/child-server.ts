/**
 * The real server as a child process (node packages/server/dist/src/main.js), for what needs a
 * process to kill or stop: crash and graceful-stop tests, backup, the soak and login benchmarks.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { BuildOptions } from '../src/app.js';

export const mainJs = join(dirname(fileURLToPath(import.meta.url)), '..', 'src', 'main.js');
const serverProcessJs = join(dirname(fileURLToPath(import.meta.url)), 'server-process.js');

export interface ChildServer {
  url: string;
  process: ChildProcess;
  /** Everything it wrote to stdout and stderr (its log lines). */
  output: string[];
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  kill(signal: NodeJS.Signals): Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/**
 * Starts main.js on 127.0.0.1:port with the given environment; resolves once /health answers 200.
 * With test-only build options (a faster webhook schedule, …), server-process.js instead: the same
 * app, without main.js's graceful stop.
 */
export async function startChildServer(port: number, env: Record<string, string>, timeoutMs = 30_000, options?: BuildOptions): Promise<ChildServer> {
  const serverEnv = { HOST: '127.0.0.1', PORT: String(port), LOG_LEVEL: 'warn', RATE_LIMIT_AUTH: '0', RATE_LIMIT_EVALUATE: '0', ...env };
  const args = options ? [serverProcessJs, JSON.stringify({ env: serverEnv, options })] : [mainJs];
  const child = spawn(process.execPath, args, {
    env: { PATH: process.env.PATH ?? '', ...serverEnv },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const output: string[] = [];
  child.stdout!.on('data', (chunk: Buffer) => output.push(chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => output.push(chunk.toString()));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
  let gone = false;
  void exited.then(() => (gone = true));
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (gone) throw new Error(`the server exited while starting:\n${output.join('')}`);
    const healthy = await fetch(`${url}/health`).then((answer) => answer.status === 200, () => false);
    if (healthy) break;
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`the server did not start within ${timeoutMs} ms:\n${output.join('')}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return {
    url,
    process: child,
    output,
    exited,
    kill(signal) {
      if (!gone) child.kill(signal);
      return exited;
    },
  };
}
