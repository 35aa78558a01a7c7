import type { FastifyBaseLogger } from 'fastify';
import type { Db } from '../../db/database.js';
import type { ChangeFeed } from '../evaluate/evaluate.changes.js';
import { enqueueDeliveries } from '../webhooks/webhooks.repository.js';
import { changesNothing, insertAuditEvent, type Actor, type AuditEvent, type Change } from './audit.repository.js';

/** Collects what a write changed; each call becomes one audit event (unless it changed nothing). */
export type RecordChange = (change: Change) => void;

/**
 * The one change path (docs/adr/0004): every write under a project runs through apply. In one
 * transaction it runs the write, bumps the project's revision (PostgreSQL: and queues the NOTIFY),
 * writes one audit event per change and the webhook outbox rows for it. After the commit it drops
 * this instance's compiled view, tells the other instances, and wakes the webhook sender. A write
 * that throws leaves nothing: no event, no delivery, no revision.
 */
export class ProjectWrites {
  constructor(
    private readonly db: Db,
    private readonly feed: ChangeFeed,
    private readonly wakeWebhooks: () => void,
    private readonly log: FastifyBaseLogger,
  ) {}

  async apply<T>(actor: Actor, projectId: string, write: (trx: Db, record: RecordChange) => Promise<T>): Promise<T> {
    let events: AuditEvent[] = [];
    const result = await this.db.transaction().execute(async (trx) => {
      // First, so the project row is locked for the whole write (writes to one project queue up).
      await this.feed.markChanged(trx, projectId);
      const changes: Change[] = [];
      const value = await write(trx, (change) => changes.push(change));
      events = [];
      for (const change of changes) {
        if (changesNothing(change)) continue;
        const event = await insertAuditEvent(trx, projectId, actor, change);
        await enqueueDeliveries(trx, event);
        events.push(event);
      }
      return value;
    });
    this.feed.afterCommit(projectId);
    if (events.length > 0) this.wakeWebhooks();
    this.log.debug({ projectId, actions: events.map((event) => event.action) }, 'project changed');
    return result;
  }
}
