/** What went wrong talking to Guidon; handed to 'error' listeners, never thrown into the application. */
export class GuidonError extends Error {
  constructor(
    message: string,
    readonly kind: 'http' | 'network' | 'timeout' | 'stream' | 'ruleset' | 'events',
    /** The HTTP status, for kind 'http' (and a stream refused with one). */
    readonly status?: number,
    /** From a 429's (or 503's) Retry-After. */
    readonly retryAfterMs?: number,
  ) {
    super(message);
    this.name = 'GuidonError';
  }
}
