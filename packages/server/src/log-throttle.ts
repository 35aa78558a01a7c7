/**
 * For a failure that repeats while something is away (the database, Redis): its retry loop logs
 * it at most once per interval (10 s), not at every try, and logs once that it is back.
 *
 *     if (this.failureLog.due()) this.log.warn({ err }, 'could not …; retrying');
 *     …
 *     if (this.failureLog.recovered()) this.log.info('… again');
 *
 * A dependency that comes and goes quickly still gives at most one failure line and one recovery
 * line per interval: a recovery is logged only after a failure that was.
 */
export class LogThrottle {
  private lastLoggedAt = -Infinity;
  /** A failure was logged and no recovery since. */
  private failureLogged = false;

  constructor(private readonly intervalMs = 10_000) {}

  /** True when this occurrence is to be logged: the first one, then at most one per interval. */
  due(now = Date.now()): boolean {
    if (now - this.lastLoggedAt < this.intervalMs) return false;
    this.lastLoggedAt = now;
    this.failureLogged = true;
    return true;
  }

  /** Call when it works: true the first time after a logged failure, so that the log says it is back. */
  recovered(): boolean {
    if (!this.failureLogged) return false;
    this.failureLogged = false;
    return true;
  }
}
