/**
 * For a failure that repeats while something is away (the database, Redis): its retry loop logs
 * it at most once per interval (10 s), not at every try.
 *
 *     if (this.failureLog.due()) this.log.warn({ err }, 'could not …; retrying');
 */
export class LogThrottle {
  private lastLoggedAt = -Infinity;

  constructor(private readonly intervalMs = 10_000) {}

  /** True when this occurrence is to be logged: the first one, then at most one per interval. */
  due(now = Date.now()): boolean {
    if (now - this.lastLoggedAt < this.intervalMs) return false;
    this.lastLoggedAt = now;
    return true;
  }
}
