/** The intake's thread (intake.writer.ts): writes each group of rows it is handed, in order, on a SQLite connection of its own. */
import { parentPort, workerData } from 'node:worker_threads';
import { SqliteRowWriter, type FromIntakeWorker, type ToIntakeWorker } from './intake.writer.js';

const port = parentPort!;
const post = (message: FromIntakeWorker) => port.postMessage(message);
const writer = new SqliteRowWriter((workerData as { path: string }).path);

port.on('message', (message: ToIntakeWorker) => {
  if (message.type === 'close') {
    writer.close();
    post({ type: 'closed' });
    return;
  }
  try {
    post({ type: 'written', id: message.id, environments: [...writer.write(message.table, message.rows)] });
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    post({ type: 'failed', id: message.id, error: error instanceof Error ? error.message : String(error), ...(typeof code === 'string' ? { code } : {}) });
  }
});
