import type { Db } from '../../db/database.js';
import type { AuditEventsTable } from '../../db/schema.js';
import { newId, nowIso, toIso } from '../../db/values.js';
import { Invalid } from '../../errors.js';
import type { Selectable } from 'kysely';

export type ResourceType = 'project' | 'environment' | 'flag' | 'rule' | 'member' | 'webhook';

/** Who made a change: the user, and the API token when one was used (null for a login). */
export interface Actor {
  user_id: string | null;
  email: string | null;
  token_id: string | null;
}

/** One change as a write describes it (contract §10). before / after are the resource's API objects. */
export interface Change {
  action: string;
  resource_type: ResourceType;
  resource_id: string;
  resource_key?: string | null;
  environment_id?: string | null;
  before: object | null;
  after: object | null;
}

export interface AuditEvent {
  id: string;
  project_id: string;
  environment_id: string | null;
  action: string;
  resource_type: string;
  resource_id: string;
  resource_key: string | null;
  actor: Actor;
  before: Record<string, unknown> | null;
  after: Record<string, unknown> | null;
  created_at: string;
}

/** Fields that are credentials: never stored in an event (nor sent to a webhook). */
const SECRET_FIELDS = new Set(['sdk_key', 'secret', 'token', 'token_hash', 'password', 'password_hash']);

/**
 * A URL that may carry a secret in its path or query (a webhook's: a Slack URL holds its token)
 * reduced to its origin: scheme, host and port (contract §10).
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

/** An update that changes nothing but its timestamp is not an event. */
export function changesNothing(change: Change): boolean {
  if (change.before === null || change.after === null) return false;
  const { updated_at: _b, ...before } = change.before as Record<string, unknown>;
  const { updated_at: _a, ...after } = change.after as Record<string, unknown>;
  const canonical = (value: object) => JSON.stringify(value, Object.keys(value).sort());
  return canonical(before) === canonical(after);
}

function parsed(value: string | Record<string, unknown> | null): Record<string, unknown> | null {
  return typeof value === 'string' ? (JSON.parse(value) as Record<string, unknown>) : value;
}

function toEvent(row: Selectable<AuditEventsTable>): AuditEvent {
  return {
    id: row.id,
    project_id: row.project_id,
    environment_id: row.environment_id,
    action: row.action,
    resource_type: row.resource_type,
    resource_id: row.resource_id,
    resource_key: row.resource_key,
    actor: { user_id: row.actor_user_id, email: row.actor_email, token_id: row.actor_token_id },
    // Redacted again: events written before URLs were reduced (issue 18) hold a webhook's full URL.
    before: redacted(parsed(row.before)),
    after: redacted(parsed(row.after)),
    created_at: toIso(row.created_at),
  };
}

/** Writes the event inside the change's transaction (trx) and returns it as the API shows it. */
export async function insertAuditEvent(trx: Db, projectId: string, actor: Actor, change: Change): Promise<AuditEvent> {
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

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Paging key: the last item's (created_at, id), newest first. */
export const encodeCursor = (createdAt: string, id: string) => Buffer.from(JSON.stringify([createdAt, id])).toString('base64url');

export function decodeCursor(cursor: string): [string, string] {
  try {
    const value = JSON.parse(Buffer.from(cursor, 'base64url').toString()) as unknown;
    if (Array.isArray(value) && value.length === 2 && typeof value[0] === 'string' && typeof value[1] === 'string' && !Number.isNaN(Date.parse(value[0])) && UUID.test(value[1])) {
      return [new Date(value[0]).toISOString(), value[1]];
    }
  } catch {
    // falls through to Invalid
  }
  throw new Invalid('cursor is not a cursor this API gave');
}

export async function listAuditEvents(db: Db, projectId: string, query: AuditQuery) {
  let select = db.selectFrom('audit_events').selectAll().where('project_id', '=', projectId);
  if (query.resource_type) select = select.where('resource_type', '=', query.resource_type);
  if (query.resource_id) select = select.where('resource_id', '=', query.resource_id);
  if (query.environment_id) select = select.where('environment_id', '=', query.environment_id);
  if (query.actor_id) select = select.where('actor_user_id', '=', query.actor_id);
  if (query.cursor) {
    const [createdAt, id] = decodeCursor(query.cursor);
    select = select.where((eb) => eb.or([eb('created_at', '<', createdAt), eb.and([eb('created_at', '=', createdAt), eb('id', '<', id)])]));
  }
  const rows = await select.orderBy('created_at', 'desc').orderBy('id', 'desc').limit(query.limit + 1).execute();
  const items = rows.slice(0, query.limit).map(toEvent);
  const last = items.at(-1);
  return { items, next_cursor: rows.length > query.limit && last ? encodeCursor(last.created_at, last.id) : null };
}
