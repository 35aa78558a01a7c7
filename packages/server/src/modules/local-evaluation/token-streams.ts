import type { FastifyBaseLogger } from 'fastify';
import type { Db } from '../../db/database.js';
import { toIso } from '../../db/values.js';
import { LogThrottle } from '../../log-throttle.js';

/** Tokens checked by one query: the database's parameter limits stay far away. */
const CHUNK = 500;

/**
 * Streams opened with an API token end soon after the token loses access to the stream's project
 * (docs/local-evaluation.md): the token deleted or expired, its user removed from the project or
 * deleted. A deleted token fails on its next request (within a second on other instances:
 * token-auth.ts), but a stream is one long request; so every
 * few seconds one query per 500 tokens looks for each open stream's token, verified user and
 * membership together, as the stream's opening did. A change of a project (a member removed is
 * one: it takes the change path, on every instance) checks at once.
 */
export class TokenStreams {
  /** "<token id> <project id>" → the ends of the streams it holds open. */
  private readonly open = new Map<string, Set<() => void>>();
  private readonly timer: NodeJS.Timeout;
  private readonly failureLog = new LogThrottle();
  private checking: Promise<void> | null = null;
  private again = false;

  constructor(
    private readonly db: Db,
    private readonly log: FastifyBaseLogger,
    intervalMs = 3000,
  ) {
    this.timer = setInterval(() => this.check(), intervalMs);
    this.timer.unref();
  }

  /** Follows a stream of this token on this project; `end` closes it. Returns the function that stops following it. */
  add(tokenId: string, projectId: string, end: () => void): () => void {
    const key = `${tokenId} ${projectId}`;
    let ends = this.open.get(key);
    if (!ends) this.open.set(key, (ends = new Set()));
    ends.add(end);
    return () => {
      ends.delete(end);
      if (ends.size === 0 && this.open.get(key) === ends) this.open.delete(key);
    };
  }

  /** A project changed (its members among others): its token streams are checked now rather than at the next tick. */
  projectChanged(projectId: string): void {
    for (const key of this.open.keys()) {
      if (key.endsWith(` ${projectId}`)) return this.check();
    }
  }

  close(): void {
    clearInterval(this.timer);
  }

  /** One check at a time; one asked for meanwhile runs after it (it may concern a change the running one read before). */
  check(): void {
    if (this.checking) {
      this.again = true;
      return;
    }
    if (this.open.size === 0) return;
    this.checking = this.checkNow().finally(() => {
      this.checking = null;
      if (this.again) {
        this.again = false;
        this.check();
      }
    });
  }

  private async checkNow(): Promise<void> {
    try {
      const keys = [...this.open.keys()];
      const live = new Set<string>();
      const now = Date.now();
      for (let start = 0; start < keys.length; start += CHUNK) {
        const chunk = keys.slice(start, start + CHUNK).map((key) => key.split(' ') as [string, string]);
        const rows = await this.db
          .selectFrom('api_tokens')
          .innerJoin('users', 'users.id', 'api_tokens.user_id')
          .innerJoin('project_members', 'project_members.user_id', 'api_tokens.user_id')
          .select(['api_tokens.id', 'api_tokens.expires_at', 'project_members.project_id'])
          .where('api_tokens.id', 'in', [...new Set(chunk.map(([token]) => token))])
          .where('project_members.project_id', 'in', [...new Set(chunk.map(([, project]) => project))])
          .where('users.email_verified_at', 'is not', null) // as at the stream's opening: tokens act only for verified accounts
          .execute();
        for (const row of rows) if (row.expires_at === null || Date.parse(toIso(row.expires_at)) > now) live.add(`${row.id} ${row.project_id}`);
      }
      for (const key of keys) if (!live.has(key)) for (const end of [...(this.open.get(key) ?? [])]) end();
      if (this.failureLog.recovered()) this.log.info('token streams: checks work again');
    } catch (error) {
      // The database is away: streams stay open (as evaluate keeps answering); the next check retries.
      if (this.failureLog.due()) this.log.warn({ err: error }, 'could not check the tokens of open streams');
    }
  }
}
