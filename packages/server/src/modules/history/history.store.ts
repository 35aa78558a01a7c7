import type { Database, EvaluationTuple } from '../../db/database.js';
import { isForeignKeyViolation } from '../../db/errors.js';
import type { Batch, HourCounts } from './history.protocol.js';

/** Rows per transaction: keeps the SQLite write lock short for the API's own writes. */
const ROWS_PER_TRANSACTION = 10_000;
const ROWS_PER_PRUNE = 5_000;

/** The rows of a batch, a transaction's worth at a time, cut at request boundaries. */
function* chunksOf(batch: Batch): Generator<EvaluationTuple[]> {
  let chunk: EvaluationTuple[] = [];
  let code = 0;
  for (let r = 0; r < batch.requestTime.length; r++) {
    const environment = batch.environments[batch.requestEnvironment[r]!]!;
    const evaluatedAt = new Date(batch.requestTime[r]!).toISOString();
    const userId = batch.requestUser[r] ?? null;
    for (let f = 0; f < environment.flagIds.length; f++) {
      const outcome = batch.outcomes[batch.codes[code++]!]!;
      chunk.push([environment.environmentId, environment.flagIds[f]!, environment.flagKeys[f]!, userId, outcome.enabled, outcome.reason, evaluatedAt]);
    }
    if (chunk.length >= ROWS_PER_TRANSACTION) {
      yield chunk;
      chunk = [];
    }
  }
  if (chunk.length > 0) yield chunk;
}

async function liveEnvironments(database: Database, ids: string[]): Promise<Set<string>> {
  if (ids.length === 0) return new Set();
  const rows = await database.db.selectFrom('environments').select('id').where('id', 'in', ids).execute();
  return new Set(rows.map((row) => row.id));
}

/**
 * Writes a batch. Rows and counts of an environment deleted while they waited are discarded with
 * it (its history is gone by definition); the rest is written.
 */
export async function writeBatch(database: Database, batch: Batch): Promise<{ rows: number; discarded: number; failed: number }> {
  let live = await liveEnvironments(database, batch.environments.map((env) => env.environmentId));
  let rows = 0;
  let discarded = 0;
  for (const chunk of chunksOf(batch)) {
    let kept = chunk.filter((row) => live.has(row[0]));
    try {
      await database.insertEvaluations(kept);
    } catch (error) {
      if (!isForeignKeyViolation(error)) throw error;
      live = await liveEnvironments(database, [...live]); // deleted meanwhile
      kept = kept.filter((row) => live.has(row[0]));
      await database.insertEvaluations(kept);
    }
    rows += kept.length;
    discarded += chunk.length - kept.length;
  }
  await addCounts(database, batch.counts.filter((counts) => live.has(counts.environment.environmentId)));
  return { rows, discarded, failed: 0 };
}

async function addCounts(database: Database, counts: HourCounts[]): Promise<void> {
  const values = counts.flatMap(({ environment, hourStart, enabled, disabled }) =>
    environment.flagIds.flatMap((flagId, i) =>
      enabled[i] || disabled[i]
        ? [{ flag_id: flagId, hour_start: hourStart, environment_id: environment.environmentId, flag_key: environment.flagKeys[i]!, enabled_count: enabled[i]!, disabled_count: disabled[i]! }]
        : [],
    ),
  );
  if (values.length === 0) return;
  await database.db.transaction().execute(async (trx) => {
    for (let start = 0; start < values.length; start += 500) {
      await trx
        .insertInto('evaluation_counts')
        .values(values.slice(start, start + 500))
        .onConflict((conflict) =>
          conflict.columns(['flag_id', 'hour_start']).doUpdateSet((eb) => ({
            enabled_count: eb('evaluation_counts.enabled_count', '+', eb.ref('excluded.enabled_count')),
            disabled_count: eb('evaluation_counts.disabled_count', '+', eb.ref('excluded.disabled_count')),
            flag_key: eb.ref('excluded.flag_key'),
          })),
        )
        .execute();
    }
  });
}

/** Deletes history older than the retention, per environment and in small steps (short locks). */
export async function pruneHistory(database: Database, retentionDays: number): Promise<number> {
  if (retentionDays <= 0) return 0;
  const before = new Date(Date.now() - retentionDays * 24 * 60 * 60 * 1000).toISOString();
  const { db } = database;
  let deleted = 0;
  for (const { id } of await db.selectFrom('environments').select('id').execute()) {
    for (;;) {
      const old = db.selectFrom('evaluations').select('id').where('environment_id', '=', id).where('evaluated_at', '<', before).limit(ROWS_PER_PRUNE);
      const result = await db.deleteFrom('evaluations').where('id', 'in', old).executeTakeFirst();
      deleted += Number(result.numDeletedRows);
      if (Number(result.numDeletedRows) < ROWS_PER_PRUNE) break;
    }
  }
  await db.deleteFrom('evaluation_counts').where('hour_start', '<', before).execute();
  return deleted;
}
