import type { FastifyBaseLogger } from 'fastify';
import type { Db } from '../../db/database.js';
import { toIso } from '../../db/values.js';
import { LogThrottle } from '../../log-throttle.js';

/**
 * Streams opened with an API token end soon after the token is deleted or expires (a deleted
 * token fails on its next request; a stream is one long request): every few seconds, one query
 * over the tokens of all open token streams.
 */
export class TokenStreams {
  private readonly open = new Map<string, Set<() => void>>();
  private readonly timer: NodeJS.Timeout;
  private readonly failureLog = new LogThrottle();
  private checking = false;

  constructor(
    private readonly db: Db,
    private readonly log: FastifyBaseLogger,
    intervalMs = 5000,
  ) {
    this.timer = setInterval(() => void this.check(), intervalMs);
    this.timer.unref();
  }

  /** Follows a stream of this token; `end` closes it. Returns the function that stops following it. */
  add(tokenId: string, end: () => void): () => void {
    let ends = this.open.get(tokenId);
    if (!ends) this.open.set(tokenId, (ends = new Set()));
    ends.add(end);
    return () => {
      ends.delete(end);
      if (ends.size === 0 && this.open.get(tokenId) === ends) this.open.delete(tokenId);
    };
  }

  close(): void {
    clearInterval(this.timer);
  }

  private async check(): Promise<void> {
    if (this.checking || this.open.size === 0) return;
    this.checking = true;
    try {
      const ids = [...this.open.keys()];
      const live = new Set<string>();
      const now = Date.now();
      for (let start = 0; start < ids.length; start += 500) {
        const rows = await this.db.selectFrom('api_tokens').select(['id', 'expires_at']).where('id', 'in', ids.slice(start, start + 500)).execute();
        for (const row of rows) if (row.expires_at === null || Date.parse(toIso(row.expires_at)) > now) live.add(row.id);
      }
      for (const id of ids) if (!live.has(id)) for (const end of [...(this.open.get(id) ?? [])]) end();
      if (this.failureLog.recovered()) this.log.info('token streams: checks work again');
    } catch (error) {
      // The database is away: streams stay open (as evaluate keeps answering); the next check retries.
      if (this.failureLog.due()) this.log.warn({ err: error }, 'could not check the tokens of open streams');
    } finally {
      this.checking = false;
    }
  }
}
