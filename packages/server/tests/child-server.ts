/**
 * The real server as a child process (node packages/server/dist/src/main.js), for what needs a
 * process to kill or stop: crash and graceful-stop tests, backup, the soak and login benchmarks.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const mainJs = join(dirname(fileURLToPath(import.meta.url)), '..', 'src', 'main.js');

export interface ChildServer {
  url: string;
  process: ChildProcess;
  /** Everything it wrote to stdout and stderr (its log lines). */
  output: string[];
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  kill(signal: NodeJS.Signals): Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/** Starts main.js on 127.0.0.1:port with the given environment; resolves once /health answers 200. */
export async function startChildServer(port: number, env: Record<string, string>, timeoutMs = 30_000): Promise<ChildServer> {
  const child = spawn(process.execPath, [mainJs], {
    env: { PATH: process.env.PATH ?? '', HOST: '127.0.0.1', PORT: String(port), LOG_LEVEL: 'warn', RATE_LIMIT_AUTH: '0', RATE_LIMIT_EVALUATE: '0', ...env },
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
