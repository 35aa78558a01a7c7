/** The history worker thread: writes batches on its own database connection, in arrival order. */
import { readlinkSync } from 'node:fs';
import { getPriority, setPriority } from 'node:os';
import { parentPort, workerData } from 'node:worker_threads';
import type { Config } from '../../config.js';
import { openDatabase } from '../../db/database.js';
import type { FromWorker, ToWorker } from './history.protocol.js';
import { HistoryStore } from './history.store.js';

/**
 * Evaluate answers first: on Linux this thread runs at a lower priority (nice +10) than the
 * process's others, so where it shares a CPU with the evaluate thread its batches wait instead of
 * holding up answers (p99 in docs/performance.md). With no CPU to spare at all it still gets a
 * tenth of one, more than history needs; rows past the pending bound are dropped and counted.
 */
function lowerPriority(): void {
  try {
    const thread = /task\/(\d+)$/.exec(readlinkSync('/proc/thread-self'));
    // Ten below the process's own (which may already run under nice), at most the lowest, 19.
    if (thread) setPriority(Number(thread[1]), Math.min(19, getPriority(Number(thread[1])) + 10));
  } catch {
    // Not Linux, or not allowed: same priority as the rest.
  }
}
lowerPriority();

const port = parentPort!;
const post = (message: FromWorker) => port.postMessage(message);
const database = await openDatabase((workerData as { database: Config['database'] }).database, { migrate: false, synchronous: 'NORMAL', poolSize: 2 });
const store = new HistoryStore(database);

async function handle(message: ToWorker): Promise<void> {
  switch (message.type) {
    case 'batch': {
      const { errors, ...result } = await store.write(message.batch);
      post({ type: 'written', batchId: message.batch.id, ...result });
      if (errors.length > 0) {
        post({ type: 'log', level: 'error', message: 'could not write all evaluation history', details: { written: result.rows, failed: result.failed, countsStored: result.countsStored, errors } });
      }
      return;
    }
    case 'prune': {
      const deleted = await store.prune(message.retentionDays);
      if (deleted > 0) post({ type: 'log', level: 'info', message: 'pruned evaluation history', details: { deleted, retentionDays: message.retentionDays } });
      return;
    }
    case 'deleteHistory':
      try {
        await store.deleteHistory(message.environmentIds);
        post({ type: 'historyDeleted', requestId: message.requestId });
      } catch (error) {
        post({ type: 'historyDeleted', requestId: message.requestId, error: String(error) });
      }
      return;
    case 'close':
      await database.close();
      post({ type: 'closed' });
  }
}

let queue = Promise.resolve();
port.on('message', (message: ToWorker) => {
  // A history delete can take a minute: it runs beside the queue, so batches are written between its steps.
  if (message.type === 'deleteHistory') return void handle(message);
  queue = queue
    .then(() => handle(message))
    .catch((error: unknown) => post({ type: 'log', level: 'error', message: 'history worker step failed', details: { error: String(error) } }));
});
