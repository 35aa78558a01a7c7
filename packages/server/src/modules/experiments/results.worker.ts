/**
 * The results thread (results.service.ts): computes one experiment at a time on a database
 * connection of its own, so that reading millions of rows never holds the thread that answers
 * evaluate (docs/performance.md, "Experiments").
 */
import { parentPort, workerData } from 'node:worker_threads';
import type { Config } from '../../config.js';
import { openDatabase } from '../../db/database.js';
import type { Experiment } from './experiments.repository.js';
import type { Metric } from './metrics.repository.js';
import { computeResults, type Results } from './results.js';

export type ToResultsWorker = { type: 'compute'; id: number; experiment: Experiment; metrics: Metric[]; now: number };
export type FromResultsWorker = { type: 'computed'; id: number; results: Results } | { type: 'failed'; id: number; error: string };

// Not run at a lower priority as the history writer is (thread-priority.ts): on a machine busy
// with other processes such a thread got too little of a CPU (a million units' results took
// 36.8 s instead of 7.8 s at a load average of 7.5). With two cores or more it runs beside the
// evaluate thread, not in its turns.

const port = parentPort!;
const post = (message: FromResultsWorker) => port.postMessage(message);
const database = await openDatabase((workerData as { database: Config['database'] }).database, { migrate: false, poolSize: 1 });
// The exposed units' temporary table (results.ts) in memory, not in a file.
database.sqlite?.pragma('temp_store = MEMORY');

let queue = Promise.resolve();
port.on('message', (message: ToResultsWorker) => {
  queue = queue.then(async () => {
    try {
      post({ type: 'computed', id: message.id, results: await computeResults(database, message.experiment, message.metrics, message.now) });
    } catch (error) {
      post({ type: 'failed', id: message.id, error: error instanceof Error ? (error.stack ?? error.message) : String(error) });
    }
  });
});
