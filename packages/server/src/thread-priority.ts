import { readlinkSync } from 'node:fs';
import { getPriority, setPriority } from 'node:os';

/**
 * Evaluate answers first: on Linux the calling thread runs `by` nice levels below the process's
 * others, so where it shares a CPU with the evaluate thread its work waits instead of holding up
 * answers (the history writer, modules/history/history.worker.ts; the results computer,
 * modules/experiments/results.worker.ts). Elsewhere, or when not allowed, nothing changes.
 */
export function lowerThreadPriority(by: number): void {
  try {
    const thread = /task\/(\d+)$/.exec(readlinkSync('/proc/thread-self'));
    // Below the process's own (which may already run under nice), at most the lowest, 19.
    if (thread) setPriority(Number(thread[1]), Math.min(19, getPriority(Number(thread[1])) + by));
  } catch {
    // Not Linux, or not allowed: same priority as the rest.
  }
}
