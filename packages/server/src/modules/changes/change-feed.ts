import { randomUUID } from 'node:crypto';
import type { FastifyBaseLogger } from 'fastify';
import type { Db } from '../../db/database.js';
import type { ChangeBus } from './carriers.js';
import { bumpRevision } from './revisions.js';

type Listener = (projectId: string) => void;

/**
 * Tells every listener of every instance that a project changed. Every write under a project
 * goes through ProjectWrites.apply (project-writes.ts), which calls markChanged inside the
 * write's transaction (the revision bump and, on PostgreSQL, the NOTIFY commit with the write or
 * not at all) and afterCommit once it is committed. Listeners hear local commits and other
 * instances' messages alike; when a carrier comes back after a gap, reconnect listeners hear it
 * (changes may have been missed: the compiled view's revision check is the safety net).
 */
export class ChangeFeed {
  private readonly instance = randomUUID();
  private readonly changeListeners = new Set<Listener>();
  private readonly reconnectListeners = new Set<() => void>();

  constructor(
    private readonly bus: ChangeBus | null,
    private readonly log: FastifyBaseLogger,
  ) {}

  /** Calls listener with the project id of every change, local or another instance's. Returns the unsubscribe function. */
  onChange(listener: Listener): () => void {
    this.changeListeners.add(listener);
    return () => this.changeListeners.delete(listener);
  }

  /** Calls listener each time the carrier comes back after a gap. */
  onReconnect(listener: () => void): void {
    this.reconnectListeners.add(listener);
  }

  async start(): Promise<void> {
    await this.bus?.start(
      (message) => this.receive(message),
      () => {
        for (const listener of this.reconnectListeners) listener();
      },
    );
  }

  /** Inside the write's transaction: bumps the project's revision and, on PostgreSQL, queues the NOTIFY. */
  async markChanged(trx: Db, projectId: string): Promise<void> {
    await bumpRevision(trx, projectId);
    if (this.bus?.transactional) await this.bus.publish(`${this.instance} ${projectId}`, trx);
  }

  /** After the commit: tells this instance's listeners, and the others (Redis, cluster). Never throws. */
  afterCommit(projectId: string): void {
    this.changed(projectId);
    if (!this.bus || this.bus.transactional) return;
    this.bus.publish(`${this.instance} ${projectId}`).catch((error: unknown) => {
      this.log.warn({ err: error, projectId }, 'could not notify other instances of a change; their revision check will catch it');
    });
  }

  async close(): Promise<void> {
    await this.bus?.close();
  }

  private receive(message: string): void {
    const [from, projectId] = message.split(' ');
    if (from !== this.instance && projectId) this.changed(projectId);
  }

  private changed(projectId: string): void {
    for (const listener of this.changeListeners) listener(projectId);
  }
}
