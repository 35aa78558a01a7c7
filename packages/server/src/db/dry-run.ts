import { sql } from 'kysely';
import type { Db } from './database.js';

/**
 * Runs `check` inside the transaction `trx` and undoes whatever it wrote (a savepoint), whether it
 * returns or throws: a write checked by doing it, with every rule the real write has, and kept by
 * nobody. The transaction goes on as before it.
 */
export async function rolledBack<T>(trx: Db, check: () => Promise<T>): Promise<T> {
  await sql`savepoint dry_run`.execute(trx);
  try {
    return await check();
  } finally {
    await sql`rollback to savepoint dry_run`.execute(trx);
    await sql`release savepoint dry_run`.execute(trx);
  }
}
