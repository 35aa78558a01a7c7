#!/usr/bin/env node
/** The `guidon` program: the command line of commands.ts on this process's arguments and streams. */
import { readFileSync } from 'node:fs';
import { EXIT, run, type Io } from './commands.js';
import { lines } from './visible.js';

const io: Io = {
  env: process.env,
  out: (text) => process.stdout.write(text),
  err: (text) => process.stderr.write(text),
  stdin: () => readFileSync(0, 'utf8'),
  terminal: process.stdout.isTTY === true,
};
run(process.argv.slice(2), io).then(
  (code) => (process.exitCode = code),
  (error: unknown) => {
    // An error no one foresaw may quote a document or an answer: shown like everything else (visible.ts).
    process.stderr.write(lines(...`guidon: ${(error as Error).stack ?? String(error)}`.split('\n')));
    process.exitCode = EXIT.failed;
  },
);
