/**
 * The loop of the work that runs later (this folder): every `intervalMs`, and once at start, one
 * round of `work` unless the previous one still runs; a failure is logged (at most once per
 * LogThrottle period) and the next round tries again. `close` waits for the round under way.
 */
import type { FastifyBaseLogger } from 'fastify';
import { LogThrottle } from '../../log-throttle.js';

export class Poller {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | null = null;
  private readonly failureLog = new LogThrottle();
  /** True once close began: a round checks it between items. */
  closing = false;

  constructor(
    private readonly name: string,
    private readonly intervalMs: number,
    private readonly work: () => Promise<void>,
    private readonly log: FastifyBaseLogger,
  ) {}

  start(): void {
    this.timer = setInterval(() => this.wake(), this.intervalMs);
    this.timer.unref();
    this.wake(); // at start: what came due while no instance ran
  }

  async close(): Promise<void> {
    this.closing = true;
    clearInterval(this.timer);
    await this.running;
  }

  /** Logs one item's failure (throttled with the rounds'): the round goes on with the next item. */
  itemFailed(error: unknown, context: Record<string, unknown>, message: string): void {
    if (this.failureLog.due()) this.log.error({ err: error, ...context }, `${this.name}: ${message}`);
  }

  private wake(): void {
    if (this.running) return;
    this.running = this.work()
      .then(() => void (this.failureLog.recovered() && this.log.info(`${this.name}: working again`)))
      .catch((error: unknown) => void (this.failureLog.due() && this.log.error({ err: error }, `${this.name}: a round failed; trying again`)))
      .finally(() => (this.running = null));
  }
}
