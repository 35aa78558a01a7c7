import type { FastifyBaseLogger } from 'fastify';
import type { Db } from '../../db/database.js';
import type { ChangeFeed } from './change-feed.js';
import { pacer } from '../../pace.js';
import { changesNothing, type Actor, type Change, type ChangeEvent, type ChangeOrigin } from './changes.schemas.js';

/** Collects what a write changed; each call becomes one event (unless it changed nothing). */
export type RecordChange = (change: Change) => void;

/** What a write is, for those that look at it before it commits. */
export interface WriteContext {
  projectId: string;
  actor: Actor;
  origin: ChangeOrigin;
}

/** Who takes part in every write, wired by the composition root (app.ts). */
export interface ChangeParticipants {
  /** In the write's transaction: stores the change as an event (the audit log) and returns it. */
  record(trx: Db, projectId: string, actor: Actor, change: Change, origin: ChangeOrigin): Promise<ChangeEvent>;
  /**
   * In the write's transaction, once the write has run, with every change it described (those
   * that changed nothing included): may refuse the whole write by throwing, e.g. a direct write
   * to an environment that needs approved change requests. No write can skip them.
   */
  checks: ((trx: Db, changes: readonly Change[], context: WriteContext) => Promise<void>)[];
  /**
   * In the write's transaction, after the checks, with the changes that change something (and
   * those of the consequences before): what they cause elsewhere (a change request outdated, the
   * schedules of a deleted flag cancelled), described as more changes.
   */
  consequences: ((trx: Db, changes: readonly Change[], context: WriteContext) => Promise<Change[]>)[];
  /** In the write's transaction, for each event: e.g. the webhook outbox rows. */
  withEvent: ((trx: Db, event: ChangeEvent) => Promise<void>)[];
  /** After the commit, when the write recorded at least one event: e.g. wake the webhook sender. */
  afterEvents: (() => void)[];
}

/**
 * The one change path (docs/adr/0004): every write under a project runs through apply. In one
 * transaction it runs the write, bumps the project's revision (PostgreSQL: and queues the NOTIFY),
 * lets the checks refuse it, adds its consequences, records one event per change and lets the
 * participants act on it. After the commit the change feed drops the compiled views and tells the
 * other instances. A write that throws leaves nothing: no event, no delivery, no revision.
 */
export class ProjectWrites {
  constructor(
    private readonly db: Db,
    private readonly feed: ChangeFeed,
    private readonly participants: ChangeParticipants,
    private readonly log: FastifyBaseLogger,
  ) {}

  /**
   * Runs the write and the checks as apply would, then undoes everything: its result, or the
   * refusal apply would meet (a dry run that is the real write, kept by nobody). No revision, no
   * event, no delivery.
   */
  async rehearse<T>(actor: Actor, projectId: string, write: (trx: Db, record: RecordChange) => Promise<T>): Promise<T> {
    let value: T | undefined;
    const undo = new Error('rehearsed');
    await this.db
      .transaction()
      .execute(async (trx) => {
        ({ value } = await this.writeAndCheck(trx, { projectId, actor, origin: {} }, write));
        throw undo;
      })
      .catch((error: unknown) => {
        if (error !== undo) throw error;
      });
    return value as T;
  }

  /**
   * The part of a write that apply and rehearse share: the project's row locked first, for the
   * whole write (writes to one project queue up; on SQLite the write lock is taken before any
   * read, so no other connection's commit comes in between), then the write, then the checks.
   */
  private async writeAndCheck<T>(trx: Db, context: WriteContext, write: (trx: Db, record: RecordChange) => Promise<T>): Promise<{ value: T; changes: Change[] }> {
    await this.feed.markChanged(trx, context.projectId);
    const changes: Change[] = [];
    const value = await write(trx, (change) => changes.push(change));
    for (const check of this.participants.checks) await check(trx, changes, context);
    return { value, changes };
  }

  /** `origin`: what every event of this write carries besides the actor (an import's id, the schedule or change request it applies). */
  async apply<T>(actor: Actor, projectId: string, write: (trx: Db, record: RecordChange) => Promise<T>, origin: ChangeOrigin = {}): Promise<T> {
    let events: ChangeEvent[] = [];
    const context: WriteContext = { projectId, actor, origin };
    const result = await this.db.transaction().execute(async (trx) => {
      const { value, changes } = await this.writeAndCheck(trx, context, write);
      const effective = changes.filter((change) => !changesNothing(change));
      for (const consequence of this.participants.consequences) effective.push(...(await consequence(trx, effective, context)));
      events = [];
      const pace = pacer(); // an import records hundreds of events
      for (const change of effective) {
        await pace();
        const event = await this.participants.record(trx, projectId, actor, change, origin);
        for (const participant of this.participants.withEvent) await participant(trx, event);
        events.push(event);
      }
      return value;
    });
    this.feed.afterCommit(projectId);
    if (events.length > 0) for (const participant of this.participants.afterEvents) participant();
    this.log.debug({ projectId, actions: events.map((event) => event.action) }, 'project changed');
    return result;
  }
}
