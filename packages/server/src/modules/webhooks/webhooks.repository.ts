import { randomBytes } from 'node:crypto';
import { sql, type Selectable } from 'kysely';
import type { Db } from '../../db/database.js';
import type { WebhooksTable } from '../../db/schema.js';
import { newId, nowIso, toArray, toBool, toIso } from '../../db/values.js';
import { NotFound } from '../../errors.js';
import { decodeCursor, encodeCursor } from '../../db/cursors.js';
import { urlOrigin } from '../audit/audit.repository.js';
import type { AuditAction, ChangeEvent } from '../changes/changes.schemas.js';

/** What a webhook listens to: audit actions, or * for all. */
export type WebhookEvent = AuditAction | '*';

export interface WebhookFields {
  url: string;
  events: WebhookEvent[];
  description: string | null;
  enabled: boolean;
}

const COLUMNS = ['id', 'project_id', 'url', 'events', 'description', 'enabled', 'created_at', 'updated_at'] as const;

export function toWebhook(row: Omit<Selectable<WebhooksTable>, 'secret'>) {
  return {
    id: row.id,
    project_id: row.project_id,
    url: row.url,
    events: toArray(row.events) as WebhookEvent[],
    description: row.description,
    enabled: toBool(row.enabled),
    created_at: toIso(row.created_at),
    updated_at: toIso(row.updated_at),
  };
}

/** At most this many webhooks a project (docs/api.md, Webhooks)… */
export const WEBHOOKS_PER_PROJECT = 20;
/** …and this many sends by hand (test sends and resends together) a webhook a minute. */
export const TEST_SENDS_PER_MINUTE = 10;

export async function countWebhooks(db: Db, projectId: string): Promise<number> {
  const row = await db.selectFrom('webhooks').select((eb) => eb.fn.countAll<number | string>().as('count')).where('project_id', '=', projectId).executeTakeFirstOrThrow();
  return Number(row.count);
}

export async function listWebhooks(db: Db, projectId: string) {
  const rows = await db.selectFrom('webhooks').select(COLUMNS).where('project_id', '=', projectId).orderBy('created_at').orderBy('id').execute();
  return rows.map(toWebhook);
}

export async function requireWebhook(db: Db, projectId: string, webhookId: string) {
  const row = await db.selectFrom('webhooks').select(COLUMNS).where('id', '=', webhookId).where('project_id', '=', projectId).executeTakeFirst();
  if (!row) throw new NotFound('Webhook not found');
  return toWebhook(row);
}

/** The secret is returned here only; it signs every delivery. */
export async function createWebhook(trx: Db, projectId: string, fields: WebhookFields) {
  const now = nowIso();
  const secret = `whsec_${randomBytes(32).toString('base64url')}`;
  const row = { id: newId(), project_id: projectId, ...fields, events: JSON.stringify(fields.events), secret, created_at: now, updated_at: now };
  await trx.insertInto('webhooks').values(row).execute();
  return { webhook: toWebhook(row), secret };
}

export async function updateWebhook(trx: Db, webhookId: string, changes: Partial<WebhookFields>) {
  const { events, ...rest } = changes;
  const row = await trx
    .updateTable('webhooks')
    .set({ ...rest, ...(events ? { events: JSON.stringify(events) } : {}), updated_at: nowIso() })
    .where('id', '=', webhookId)
    .returning(COLUMNS)
    .executeTakeFirstOrThrow();
  return toWebhook(row);
}

export async function deleteWebhook(trx: Db, webhookId: string): Promise<void> {
  await trx.deleteFrom('webhooks').where('id', '=', webhookId).execute();
}

const matches = (events: string[], action: string) => events.includes('*') || events.includes(action);

/** In the change's transaction: one outbox row per enabled webhook whose events match (docs/api.md, Webhooks). */
export async function enqueueDeliveries(trx: Db, event: ChangeEvent): Promise<void> {
  const hooks = await trx.selectFrom('webhooks').select(['id', 'events', 'enabled']).where('project_id', '=', event.project_id).execute();
  const targets = hooks.filter((hook) => toBool(hook.enabled) && matches(toArray(hook.events), event.action));
  if (targets.length === 0) return;
  const now = nowIso();
  const payload = JSON.stringify(event);
  await trx
    .insertInto('webhook_deliveries')
    .values(targets.map((hook) => ({ id: newId(), webhook_id: hook.id, event_id: event.id, action: event.action, payload, status: 'pending' as const, next_attempt_at: now, created_at: now })))
    .execute();
}

/**
 * Queues a delivery an owner asked for by hand (a test send, a resend), unless the webhook had its
 * TEST_SENDS_PER_MINUTE of them already (docs/api.md, Webhooks: counted together): then nothing is queued
 * and the answer is the seconds until the oldest of them leaves the minute (null when queued).
 */
async function enqueueByHand(db: Db, dialect: 'sqlite' | 'postgres', webhookId: string, event: { event_id: string; action: string; payload: string }): Promise<number | null> {
  return db.transaction().execute(async (trx) => {
    // Sends by hand to one webhook count one after the other: on PostgreSQL behind its row's lock (SQLite has one writer).
    let lock = trx.selectFrom('webhooks').select('id').where('id', '=', webhookId);
    if (dialect === 'postgres') lock = lock.forUpdate();
    await lock.executeTakeFirst();
    const minuteAgo = Date.now() - 60_000;
    const recent = await trx
      .selectFrom('webhook_deliveries')
      .select('created_at')
      .where('webhook_id', '=', webhookId)
      .where('by_hand', '=', true)
      .where('created_at', '>', new Date(minuteAgo).toISOString())
      .orderBy('created_at')
      .execute();
    if (recent.length >= TEST_SENDS_PER_MINUTE) {
      const freedAt = Date.parse(toIso(recent[recent.length - TEST_SENDS_PER_MINUTE]!.created_at)) + 60_000;
      return Math.max(1, Math.ceil((freedAt - Date.now()) / 1000));
    }
    const now = nowIso();
    await trx.insertInto('webhook_deliveries').values({ id: newId(), webhook_id: webhookId, ...event, status: 'pending', by_hand: true, next_attempt_at: now, created_at: now }).execute();
    return null;
  });
}

/** A webhook.test event for one webhook, whatever its events (POST …/test); see enqueueByHand. */
export async function enqueueTest(db: Db, dialect: 'sqlite' | 'postgres', webhook: { id: string; project_id: string; url: string }, actor: ChangeEvent['actor']): Promise<number | null> {
  const event: ChangeEvent = {
    id: newId(),
    project_id: webhook.project_id,
    environment_id: null,
    action: 'webhook.test',
    resource_type: 'webhook',
    resource_id: webhook.id,
    resource_key: urlOrigin(webhook.url),
    actor,
    before: null,
    after: null,
    import_id: null,
    schedule_id: null,
    change_request_id: null,
    approvers: null,
    release_id: null,
    created_at: nowIso(),
  };
  return enqueueByHand(db, dialect, webhook.id, { event_id: event.id, action: event.action, payload: JSON.stringify(event) });
}

/**
 * Sends the event of a logged attempt again (the dashboard's resend): a new delivery, with a new
 * X-Guidon-Delivery, so a receiver that drops duplicates still processes it. Counted with the
 * test sends (enqueueByHand). Undefined: no such attempt.
 */
export async function resendAttempt(db: Db, dialect: 'sqlite' | 'postgres', webhookId: string, attemptId: string): Promise<number | null | undefined> {
  const original = await db
    .selectFrom('webhook_attempts')
    .innerJoin('webhook_deliveries', 'webhook_deliveries.id', 'webhook_attempts.delivery_id')
    .select(['webhook_deliveries.event_id', 'webhook_deliveries.action', 'webhook_deliveries.payload'])
    .where('webhook_attempts.id', '=', attemptId)
    .where('webhook_attempts.webhook_id', '=', webhookId)
    .executeTakeFirst();
  return original && enqueueByHand(db, dialect, webhookId, original);
}

export interface ClaimedDelivery {
  id: string;
  webhook_id: string;
  event_id: string;
  action: string;
  payload: string;
  /** The number of the attempt now claimed (the claim counts it). */
  attempts: number;
  /** Earlier attempts cut short by a stop or a crash, never logged: their numbers (recordInterrupted). */
  interrupted: number[];
}

export interface DueDelivery {
  id: string;
  webhook_id: string;
  project_id: string;
  /** A retry (or a send cut short, back at its lease's end) rather than a first attempt. */
  retry: boolean;
}

/**
 * The candidates of a claim, fair by project: of each webhook, its next due delivery; of those,
 * at most `perProject` a project; and all projects' first before anyone's second, so any project
 * with a due delivery is among them (up to `limit` projects), however many webhooks or deliveries
 * the others have. First attempts come before retries, within a webhook and within a project (the
 * 5 s promise bounds when a first attempt starts, not a retry), then the oldest. Leaves out the
 * webhooks and projects the caller has no room for.
 */
export async function dueDeliveries(db: Db, full: { webhooks: string[]; projects: string[] }, perProject: number, limit: number): Promise<DueDelivery[]> {
  const now = nowIso();
  // A read first: the poll runs every second on every instance, and is nearly always empty.
  const any = await db.selectFrom('webhook_deliveries').select('id').where('status', '=', 'pending').where('next_attempt_at', '<=', now).limit(1).executeTakeFirst();
  if (!any) return [];
  const retry = sql<number>`case when d.attempts = 0 then 0 else 1 end`;
  let byWebhook = db
    .selectFrom('webhook_deliveries as d')
    .innerJoin('webhooks as w', 'w.id', 'd.webhook_id')
    .select((eb) => [
      'd.id',
      'd.webhook_id',
      'w.project_id',
      'd.next_attempt_at',
      retry.as('retry'),
      eb.fn.agg<number>('row_number').over((over) => over.partitionBy('d.webhook_id').orderBy(retry).orderBy('d.next_attempt_at').orderBy('d.id')).as('nth'),
    ])
    .where('d.status', '=', 'pending')
    .where('d.next_attempt_at', '<=', now);
  if (full.webhooks.length > 0) byWebhook = byWebhook.where('d.webhook_id', 'not in', full.webhooks);
  if (full.projects.length > 0) byWebhook = byWebhook.where('w.project_id', 'not in', full.projects);
  const byProject = db
    .selectFrom(byWebhook.as('f'))
    .select((eb) => [
      'f.id',
      'f.webhook_id',
      'f.project_id',
      'f.next_attempt_at',
      'f.retry',
      eb.fn.agg<number>('row_number').over((over) => over.partitionBy('f.project_id').orderBy('f.retry').orderBy('f.next_attempt_at').orderBy('f.id')).as('pnth'),
    ])
    .where('f.nth', '=', 1);
  const rows = await db
    .selectFrom(byProject.as('p'))
    .select(['p.id', 'p.webhook_id', 'p.project_id', 'p.retry'])
    .where('p.pnth', '<=', perProject)
    .orderBy('p.pnth')
    .orderBy('p.retry')
    .orderBy('p.next_attempt_at')
    .orderBy('p.id')
    .limit(limit)
    .execute();
  return rows.map((row) => ({ id: row.id, webhook_id: row.webhook_id, project_id: row.project_id, retry: Number(row.retry) === 1 }));
}

/**
 * Claims these deliveries for this instance if still due: their next attempt moves to
 * `leaseUntil`, so no other instance takes them meanwhile, and one that dies mid-send leaves them
 * to be retried when the lease ends. Another instance may have claimed some since they were
 * read: those are not returned (PostgreSQL skips the rows it is claiming, and the due check is
 * made again on the row as committed).
 */
export async function claimDeliveries(db: Db, dialect: 'sqlite' | 'postgres', ids: string[], leaseUntil: string): Promise<ClaimedDelivery[]> {
  if (ids.length === 0) return [];
  const now = nowIso();
  let due = db.selectFrom('webhook_deliveries').select('id').where('id', 'in', ids).where('status', '=', 'pending').where('next_attempt_at', '<=', now);
  if (dialect === 'postgres') due = due.forUpdate().skipLocked();
  const claimed = await db
    .updateTable('webhook_deliveries')
    .set((eb) => ({ next_attempt_at: leaseUntil, attempts: eb('attempts', '+', 1) }))
    .where('id', 'in', due)
    .where('status', '=', 'pending')
    .where('next_attempt_at', '<=', now)
    .returning(['id', 'webhook_id', 'event_id', 'action', 'payload', 'attempts'])
    .execute();
  // Each claim counts an attempt and each attempt that ends logs one: fewer logged than claimed
  // before this one means an attempt was cut short (its instance stopped or died mid-send).
  const again = claimed.filter((delivery) => delivery.attempts > 1).map((delivery) => delivery.id);
  const logged = new Map<string, number>();
  if (again.length > 0) {
    const counts = await db
      .selectFrom('webhook_attempts')
      .select((eb) => ['delivery_id', eb.fn.countAll<number | string>().as('count')])
      .where('delivery_id', 'in', again)
      .groupBy('delivery_id')
      .execute();
    for (const row of counts) logged.set(row.delivery_id, Number(row.count));
  }
  return claimed.map((delivery) => {
    const from = (logged.get(delivery.id) ?? 0) + 1;
    return { ...delivery, interrupted: Array.from({ length: Math.max(0, delivery.attempts - from) }, (_, i) => from + i) };
  });
}

/**
 * Logs the delivery's attempts cut short by a stop or a crash (docs/api.md, Webhooks): no status
 * code, error "interrupted"; each was a try, so a delivery out of tries is failed for good.
 */
export async function recordInterrupted(db: Db, delivery: ClaimedDelivery, outOfTries: boolean): Promise<void> {
  await db.transaction().execute(async (trx) => {
    const now = nowIso();
    const row = { delivery_id: delivery.id, webhook_id: delivery.webhook_id, event_id: delivery.event_id, action: delivery.action, status_code: null, error: 'interrupted', duration_ms: 0, created_at: now };
    await trx.insertInto('webhook_attempts').values(delivery.interrupted.map((attempt) => ({ id: newId(), ...row, attempt }))).execute();
    if (outOfTries) await trx.updateTable('webhook_deliveries').set({ status: 'failed' }).where('id', '=', delivery.id).execute();
  });
}

export function findWebhookForSend(db: Db, webhookId: string) {
  return db.selectFrom('webhooks').select(['id', 'url', 'secret', 'enabled']).where('id', '=', webhookId).executeTakeFirst();
}

export interface AttemptOutcome {
  status_code: number | null;
  error: string | null;
  duration_ms: number;
}

/** Logs one attempt and moves the delivery on: done, retried at `retryAt`, or failed for good (retryAt null). */
export async function recordAttempt(db: Db, delivery: ClaimedDelivery, outcome: AttemptOutcome, succeeded: boolean, retryAt: string | null): Promise<void> {
  await db.transaction().execute(async (trx) => {
    await trx
      .insertInto('webhook_attempts')
      .values({ id: newId(), delivery_id: delivery.id, webhook_id: delivery.webhook_id, event_id: delivery.event_id, action: delivery.action, attempt: delivery.attempts, ...outcome, created_at: nowIso() })
      .execute();
    await trx
      .updateTable('webhook_deliveries')
      .set(succeeded ? { status: 'succeeded' } : retryAt ? { next_attempt_at: retryAt } : { status: 'failed' })
      .where('id', '=', delivery.id)
      .execute();
  });
}

/** A delivery whose webhook was disabled (or deleted) after it was queued is dropped unsent. */
export async function dropDelivery(db: Db, deliveryId: string): Promise<void> {
  await db.updateTable('webhook_deliveries').set({ status: 'failed' }).where('id', '=', deliveryId).execute();
}

export async function listAttempts(db: Db, webhookId: string, query: { limit: number; cursor?: string | undefined }) {
  let select = db
    .selectFrom('webhook_attempts')
    .select(['id', 'event_id', 'action', 'attempt', 'status_code', 'error', 'duration_ms', 'created_at'])
    .where('webhook_id', '=', webhookId);
  if (query.cursor) {
    const [createdAt, id] = decodeCursor(query.cursor);
    select = select.where((eb) => eb.or([eb('created_at', '<', createdAt), eb.and([eb('created_at', '=', createdAt), eb('id', '<', id)])]));
  }
  const rows = await select.orderBy('created_at', 'desc').orderBy('id', 'desc').limit(query.limit + 1).execute();
  const items = rows.slice(0, query.limit).map((row) => ({ ...row, action: row.action as AuditAction, created_at: toIso(row.created_at) }));
  const last = items.at(-1);
  return { items, next_cursor: rows.length > query.limit && last ? encodeCursor(last.created_at, last.id) : null };
}
