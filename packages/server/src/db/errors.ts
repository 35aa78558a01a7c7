import { Conflict, NotFound, Unavailable } from '../errors.js';

/** SQLite and PostgreSQL report a unique violation differently; the rest of the code sees Conflict. */
export function isUniqueViolation(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return code === 'SQLITE_CONSTRAINT_UNIQUE' || code === 'SQLITE_CONSTRAINT_PRIMARYKEY' || code === '23505';
}

/** A row points at a parent that no longer exists (e.g. history of an environment deleted meanwhile). */
export function isForeignKeyViolation(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return code === 'SQLITE_CONSTRAINT_FOREIGNKEY' || code === '23503';
}

/**
 * An insert whose parent row was deleted between the request's check and the insert (a
 * concurrent delete): the parent is not found, as it would have been a moment later.
 */
export async function notFoundIfParentGone<T>(write: Promise<T>, message: string): Promise<T> {
  try {
    return await write;
  } catch (error) {
    if (isForeignKeyViolation(error)) throw new NotFound(message);
    throw error;
  }
}

export async function conflictOnDuplicate<T>(write: Promise<T>, message: string): Promise<T> {
  try {
    return await write;
  } catch (error) {
    if (isUniqueViolation(error)) throw new Conflict(message);
    throw error;
  }
}

// PostgreSQL classes/codes: 08 connection exception, 53 insufficient resources, 57P01-57P03
// shutdown / cannot connect now, 57014 canceled (the statement timeout).
const POSTGRES_AWAY = /^(08|53|57P0[123]$|57014$)/;
const NETWORK_AWAY = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN']);
// pg reports a dropped or timed-out connection with a plain Error and one of these messages.
const PG_CONNECTION_MESSAGE = /Connection terminated|timeout exceeded when trying to connect|Query read timeout|not queryable|Client was closed/i;
// SQLite: locked by another writer past busy_timeout, read-only file or folder, disk I/O, disk full.
const SQLITE_AWAY = /^SQLITE_(BUSY|LOCKED|READONLY|IOERR|FULL|CANTOPEN|PERM)/;

/**
 * True when the error says the database cannot be reached or cannot write right now, as opposed
 * to a query the database refused: the request was fine, trying again later may succeed.
 */
export function isDatabaseAway(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  const code = (error as { code?: unknown }).code;
  if (typeof code === 'string') {
    if (NETWORK_AWAY.has(code) || SQLITE_AWAY.test(code)) return true;
    if (/^[0-9A-Z]{5}$/.test(code)) return POSTGRES_AWAY.test(code);
  }
  return PG_CONNECTION_MESSAGE.test(error.message);
}

/** The one translation of "database away" for the rest of the code: Unavailable (503), the driver error as its cause. */
export function translateDriverError(error: unknown): unknown {
  if (!isDatabaseAway(error)) return error;
  const unavailable = new Unavailable();
  unavailable.cause = error;
  return unavailable;
}
