/** Runs a program as a pipeline would, for the CLI's tests: a process, its environment (PATH only besides `env`), optionally standard input. */
import { spawn } from 'node:child_process';

export interface Ran {
  code: number;
  stdout: string;
  stderr: string;
}

export function run(program: string, args: string[], env: Record<string, string>, input?: string): Promise<Ran> {
  return new Promise((resolvePromise, reject) => {
    const child = spawn(program, args, { env: { PATH: process.env.PATH ?? '', ...env } });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk) => (stdout += chunk));
    child.stderr.on('data', (chunk) => (stderr += chunk));
    child.on('error', reject);
    child.on('close', (code) => resolvePromise({ code: code ?? -1, stdout, stderr }));
    child.stdin.end(input ?? '');
  });
}
