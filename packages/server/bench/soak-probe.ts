/**
 * Loaded into the server process by npm run soak (node --import): every second, sends the
 * process's memory and event-loop delay to the soak over the IPC channel. Nothing in the server
 * knows about it.
 */
import { monitorEventLoopDelay } from 'node:perf_hooks';

export interface ProbeSample {
  type: 'soak:probe';
  rssMb: number;
  heapUsedMb: number;
  /** Event-loop delay over the last second, ms. */
  delayP99: number;
  delayMax: number;
}

if (process.send) {
  const delay = monitorEventLoopDelay({ resolution: 10 });
  delay.enable();
  setInterval(() => {
    const memory = process.memoryUsage();
    const sample: ProbeSample = {
      type: 'soak:probe',
      rssMb: memory.rss / 2 ** 20,
      heapUsedMb: memory.heapUsed / 2 ** 20,
      delayP99: delay.percentile(99) / 1e6,
      delayMax: delay.max / 1e6,
    };
    delay.reset();
    if (process.connected) process.send?.(sample);
  }, 1000).unref();
  process.channel?.unref();
}
