import type { Db } from '../../db/database.js';
import type { AuditEventsTable } from '../../db/schema.js';
import { newId, nowIso, toIso } from '../../db/values.js';
import type { Selectable } from 'kysely';
import { afterCursor, encodeCursor } from '../../db/cursors.js';
import type { Actor, Approver, AuditAction, Change, ChangeEvent, ChangeOrigin, ResourceType } from '../changes/changes.schemas.js';

/** Fields that are credentials: never stored in an event (nor sent to a webhook). */
const SECRET_FIELDS = new Set(['sdk_key', 'secret', 'token', 'token_hash', 'password', 'password_hash']);

/**
 * A URL that may carry a secret in its path or query (a webhook's: a Slack URL holds its token)
 * reduced to its origin: scheme, host and port (docs/api.md).
 */
export function urlOrigin(value: string): string {
  try {
    return new URL(value).origin;
  } catch {
    return '[redacted]';
  }
}

/** Secrets replaced by "[redacted]", a `url` reduced to its origin; idempotent (also applied to events read back). */
export function redacted(value: object | null): Record<string, unknown> | null {
  if (value === null) return null;
  return Object.fromEntries(
    Object.entries(value).map(([key, item]) => [key, SECRET_FIELDS.has(key) ? '[redacted]' : key === 'url' && typeof item === 'string' ? urlOrigin(item) : item]),
  );
}

function parsed(value: string | Record<string, unknown> | null): Record<string, unknown> | null {
  return typeof value === 'string' ? (JSON.parse(value) as Record<string, unknown>) : value;
}

function toEvent(row: Selectable<AuditEventsTable>): ChangeEvent {
  return {
    id: row.id,
    project_id: row.project_id,
    environment_id: row.environment_id,
    action: row.action as AuditAction,
    resource_type: row.resource_type as ResourceType,
    resource_id: row.resource_id,
    resource_key: row.resource_key,
    actor: { user_id: row.actor_user_id, email: row.actor_email, token_id: row.actor_token_id },
    // Redacted again: events written before webhook URLs were reduced hold a webhook's full URL.
    before: redacted(parsed(row.before)),
    after: redacted(parsed(row.after)),
    import_id: row.import_id ?? null,
    schedule_id: row.schedule_id ?? null,
    change_request_id: row.change_request_id ?? null,
    approvers: row.approvers === null ? null : ((typeof row.approvers === 'string' ? JSON.parse(row.approvers) : row.approvers) as Approver[]),
    release_id: row.release_id ?? null,
    created_at: toIso(row.created_at),
  };
}

/** The change path's recorder (changes/project-writes.ts): writes the event inside the change's transaction and returns it as the API shows it. */
export async function insertAuditEvent(trx: Db, projectId: string, actor: Actor, change: Change, origin: ChangeOrigin = {}): Promise<ChangeEvent> {
  const before = redacted(change.before);
  const after = redacted(change.after);
  const row = {
    id: newId(),
    project_id: projectId,
    environment_id: change.environment_id ?? null,
    action: change.action,
    resource_type: change.resource_type,
    resource_id: change.resource_id,
    resource_key: change.resource_key ?? null,
    actor_user_id: actor.user_id,
    actor_email: actor.email,
    actor_token_id: actor.token_id,
    before: before && JSON.stringify(before),
    after: after && JSON.stringify(after),
    import_id: origin.import_id ?? null,
    schedule_id: origin.schedule_id ?? null,
    change_request_id: origin.change_request_id ?? null,
    approvers: origin.approvers ? JSON.stringify(origin.approvers) : null,
    release_id: origin.release_id ?? null,
    created_at: nowIso(),
  };
  await trx.insertInto('audit_events').values(row).execute();
  return { ...toEvent(row), before, after };
}

export interface AuditQuery {
  resource_type?: string;
  resource_id?: string;
  environment_id?: string;
  actor_id?: string;
  limit: number;
  cursor?: string;
}

export async function listAuditEvents(db: Db, projectId: string, query: AuditQuery) {
  let select = db.selectFrom('audit_events').selectAll().where('project_id', '=', projectId);
  if (query.resource_type) select = select.where('resource_type', '=', query.resource_type);
  if (query.resource_id) select = select.where('resource_id', '=', query.resource_id);
  if (query.environment_id) select = select.where('environment_id', '=', query.environment_id);
  if (query.actor_id) select = select.where('actor_user_id', '=', query.actor_id);
  if (query.cursor) select = select.where(afterCursor(query.cursor));
  const rows = await select.orderBy('created_at', 'desc').orderBy('id', 'desc').limit(query.limit + 1).execute();
  const items = rows.slice(0, query.limit).map(toEvent);
  const last = items.at(-1);
  return { items, next_cursor: rows.length > query.limit && last ? encodeCursor(last.created_at, last.id) : null };
}
