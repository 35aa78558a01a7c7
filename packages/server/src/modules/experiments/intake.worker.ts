/** The intake's thread (intake.writer.ts): writes each group of rows it is handed, in order, on a database connection of its own. */
import { parentPort, workerData } from 'node:worker_threads';
import type { Config } from '../../config.js';
import { openDatabase } from '../../db/database.js';
import { PostgresRowWriter, SqliteRowWriter, rowsOf, type FromIntakeWorker, type ToIntakeWorker } from './intake.writer.js';

const port = parentPort!;
const post = (message: FromIntakeWorker) => port.postMessage(message);
const config = (workerData as { database: Config['database'] }).database;
const writer = config.kind === 'sqlite' ? new SqliteRowWriter(config.path) : new PostgresRowWriter(await openDatabase(config, { migrate: false, poolSize: 1 }));

let queue = Promise.resolve();
/** The flush a group of which failed: its later groups are not tried (the database is away; they wait for the next flush). */
let failedFlush = 0;
port.on('message', (message: ToIntakeWorker) => {
  queue = queue.then(async () => {
    if (message.type === 'close') {
      await writer.close();
      post({ type: 'closed' });
      return;
    }
    if (message.flush === failedFlush) return post({ type: 'failed', id: message.id, error: 'not tried: an earlier group of the flush failed' });
    try {
      post({ type: 'written', id: message.id, environments: [...(await writer.write(message.table, rowsOf(message.table, message.batches)))] });
    } catch (error) {
      failedFlush = message.flush;
      const code = (error as { code?: unknown }).code;
      post({ type: 'failed', id: message.id, error: error instanceof Error ? error.message : String(error), ...(typeof code === 'string' ? { code } : {}) });
    }
  });
});
