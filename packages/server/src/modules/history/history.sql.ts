/** The history writes that need more than the query builder: bulk inserts on each driver's fastest path. */
import type BetterSqlite3 from 'better-sqlite3';
import { sql, type Insertable, type Transaction } from 'kysely';
import type { Database, Db } from '../../db/database.js';
import type { EvaluationCountsTable, EvaluationVariantCountsTable, Schema } from '../../db/schema.js';

/** One history row (one evaluate request): environment_id, snapshot_id, user_id, outcomes, evaluated_at (what follows is not stored). */
export type EvaluationTuple = [string, string, string | null, Uint8Array, string, ...unknown[]];

const EVALUATION_COLUMNS = '(environment_id, snapshot_id, user_id, outcomes, evaluated_at)';
const ROWS_PER_STATEMENT = 100; // 500 bound parameters, far under SQLite's limit

/** Multi-row INSERTs from statements prepared once, in one transaction. */
function sqliteEvaluationInserter(raw: BetterSqlite3.Database) {
  const statements = new Map<number, BetterSqlite3.Statement>();
  const statement = (rows: number) => {
    let prepared = statements.get(rows);
    if (!prepared) {
      prepared = raw.prepare(`insert into evaluations ${EVALUATION_COLUMNS} values ${Array(rows).fill('(?, ?, ?, ?, ?)').join(', ')}`);
      statements.set(rows, prepared);
    }
    return prepared;
  };
  return raw.transaction((rows: readonly EvaluationTuple[]) => {
    for (let start = 0; start < rows.length; start += ROWS_PER_STATEMENT) {
      const end = Math.min(start + ROWS_PER_STATEMENT, rows.length);
      const values: unknown[] = [];
      for (let i = start; i < end; i++) {
        const row = rows[i]!;
        values.push(row[0], row[1], row[2], row[3], row[4]);
      }
      statement(end - start).run(values);
    }
  });
}

/**
 * History rows in one statement whatever their number: arrays unnested server-side (one bound
 * parameter per column, where multi-row VALUES would hit the 65,535-parameter limit).
 */
async function insertEvaluationsPostgres(db: Db, rows: readonly EvaluationTuple[]): Promise<void> {
  if (rows.length === 0) return;
  const column = (index: number) => rows.map((row) => row[index]);
  const outcomes = rows.map((row) => Buffer.from(row[3].buffer, row[3].byteOffset, row[3].byteLength));
  await sql`insert into evaluations ${sql.raw(EVALUATION_COLUMNS)}
    select * from unnest(${column(0)}::uuid[], ${column(1)}::uuid[], ${column(2)}::text[], ${outcomes}::bytea[], ${column(4)}::timestamptz[])`.execute(db);
}

const sqliteInserters = new WeakMap<BetterSqlite3.Database, ReturnType<typeof sqliteEvaluationInserter>>();

/** Appends history rows in one transaction, on the fastest path the driver has. */
export async function insertEvaluations(database: Database, rows: readonly EvaluationTuple[]): Promise<void> {
  if (!database.sqlite) return insertEvaluationsPostgres(database.db, rows);
  let insert = sqliteInserters.get(database.sqlite);
  if (!insert) sqliteInserters.set(database.sqlite, (insert = sqliteEvaluationInserter(database.sqlite)));
  insert(rows);
}

/**
 * Adds hourly counts (per flag, and per flag and variant) to the stored ones, in one transaction:
 * the history writer's and the local-evaluation usage reports' one way in. Each list must name a
 * row once (PostgreSQL refuses to upsert the same row twice in one statement).
 */
export async function addHourlyCounts(db: Db, counts: readonly Insertable<EvaluationCountsTable>[], variantCounts: readonly Insertable<EvaluationVariantCountsTable>[]): Promise<void> {
  if (counts.length === 0 && variantCounts.length === 0) return;
  await db.transaction().execute((trx) => addHourlyCountsIn(trx, counts, variantCounts));
}

/** addHourlyCounts inside a transaction of the caller's (one that records something with them). */
export async function addHourlyCountsIn(trx: Transaction<Schema>, counts: readonly Insertable<EvaluationCountsTable>[], variantCounts: readonly Insertable<EvaluationVariantCountsTable>[]): Promise<void> {
  for (let start = 0; start < counts.length; start += 500) {
    await trx
      .insertInto('evaluation_counts')
      .values(counts.slice(start, start + 500))
      .onConflict((conflict) =>
        conflict.columns(['flag_id', 'hour_start']).doUpdateSet((eb) => ({
          enabled_count: eb('evaluation_counts.enabled_count', '+', eb.ref('excluded.enabled_count')),
          disabled_count: eb('evaluation_counts.disabled_count', '+', eb.ref('excluded.disabled_count')),
          flag_key: eb.ref('excluded.flag_key'),
        })),
      )
      .execute();
  }
  for (let start = 0; start < variantCounts.length; start += 500) {
    await trx
      .insertInto('evaluation_variant_counts')
      .values(variantCounts.slice(start, start + 500))
      .onConflict((conflict) =>
        conflict.columns(['flag_id', 'hour_start', 'variant']).doUpdateSet((eb) => ({
          count: eb('evaluation_variant_counts.count', '+', eb.ref('excluded.count')),
          flag_key: eb.ref('excluded.flag_key'),
        })),
      )
      .execute();
  }
}
