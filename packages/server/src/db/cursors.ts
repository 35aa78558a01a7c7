import { sql, type RawBuilder } from 'kysely';
import { Invalid } from '../errors.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Paging key of the lists ordered newest first: the last item's (created_at, id), newest first. */
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

/** For `.where(…)` of a list ordered newest first by (created_at, id): the rows after the cursor's. */
export function afterCursor(cursor: string): RawBuilder<boolean> {
  const [createdAt, id] = decodeCursor(cursor);
  return sql<boolean>`(created_at < ${createdAt} or (created_at = ${createdAt} and id < ${id}))`;
}
