import { randomUUID } from 'node:crypto';

export const newId = (): string => randomUUID();

let lastMillis = 0;
/**
 * Current time as ISO 8601 UTC. Strictly increasing within the process, so "oldest first"
 * orderings on created_at never tie between two writes of one instance.
 */
export function nowIso(): string {
  lastMillis = Math.max(Date.now(), lastMillis + 1);
  return new Date(lastMillis).toISOString();
}

export function toIso(value: string | Date): string {
  return value instanceof Date ? value.toISOString() : new Date(value).toISOString();
}

/** toIso for a nullable timestamp column. */
export const toIsoOrNull = (value: string | Date | null): string | null => (value === null ? null : toIso(value));

/** A JSON array column: text on SQLite, already parsed by pg for jsonb. */
export function toArray(value: string | string[]): string[] {
  return typeof value === 'string' ? (JSON.parse(value) as string[]) : value;
}

export function toBool(value: boolean | number): boolean {
  return value === true || value === 1;
}

/** The fields of a PUT body that were sent: an absent field stays as it is, null clears it. */
export function onlyProvided<T extends object>(fields: T): Partial<T> {
  return Object.fromEntries(Object.entries(fields).filter(([, value]) => value !== undefined)) as Partial<T>;
}

/** A JSON column as read: text on SQLite, already parsed by pg for jsonb. */
export function fromJson<T>(value: string | T): T {
  return typeof value === 'string' ? (JSON.parse(value) as T) : value;
}
