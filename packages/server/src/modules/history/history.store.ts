import { setTimeout as sleep } from 'node:timers/promises';
import type { Database } from '../../db/database.js';
import { addHourlyCounts, insertEvaluations } from './history.sql.js';
import { isForeignKeyViolation } from '../../db/errors.js';
import { nowIso } from '../../db/values.js';
import { bytesPerRequest, unpackUsers, variantOffsets, type Batch, type BatchEnvironment, type HourCounts } from './history.protocol.js';

const ROWS_PER_PRUNE = 5_000;
/** Rows per statement when an environment's history is deleted. */
const ROWS_PER_DELETE = 1_000;

/**
 * Runs one bounded delete step, then pauses half as long as it took (at most 50 ms), so the
 * API's own writes get the SQLite write lock in between.
 */
async function paced(run: () => Promise<unknown>): Promise<void> {
  const started = performance.now();
  await run();
  await sleep(Math.min(50, (performance.now() - started) / 2));
}

/** Flag evaluations held by stored rows (a request's row holds one per flag of its snapshot). */
const evaluations = (rows: StoredRow[]) => rows.reduce((sum, row) => sum + row[5], 0);

/** A history row, and how many flag evaluations it holds. */
type StoredRow = [string, string, string | null, Uint8Array, string, number];

/** The rows of a batch, a transaction's worth at a time. */
function* chunksOf(batch: Batch, rowsPerTransaction: number): Generator<StoredRow[]> {
  let chunk: StoredRow[] = [];
  let offset = 0;
  const users = unpackUsers(batch);
  for (let r = 0; r < batch.requestTime.length; r++) {
    const environment = batch.environments[batch.requestEnvironment[r]!]!;
    const width = bytesPerRequest(environment);
    const outcomes = batch.codes.subarray(offset, offset + width);
    offset += width;
    chunk.push([environment.environmentId, environment.snapshotId, users.next().value ?? null, outcomes, new Date(batch.requestTime[r]!).toISOString(), environment.flagIds.length]);
    if (chunk.length === rowsPerTransaction) {
      yield chunk;
      chunk = [];
    }
  }
  if (chunk.length > 0) yield chunk;
}

/** Writes batches for one database connection; remembers which snapshots it has stored. */
export class HistoryStore {
  private readonly storedSnapshots = new Set<string>();

  constructor(
    private readonly database: Database,
    /** Rows (evaluate requests) per transaction: keeps the SQLite write lock short for the API's own writes. */
    private readonly rowsPerTransaction = 5_000,
  ) {}

  /**
   * Writes a batch, a transaction at a time, and says exactly what became of its rows: written,
   * discarded (their environment was deleted while they waited: its history is gone by
   * definition) or failed (a database error; the transactions before it stay written). The hourly
   * counts are stored in a transaction of their own; countsStored false means the caller must
   * hand them over again. Never throws.
   */
  async write(batch: Batch): Promise<{ rows: number; discarded: number; failed: number; countsStored: boolean; errors: string[] }> {
    const errors: string[] = [];
    let rows = 0;
    let discarded = 0;
    let live = new Set<string>();
    try {
      // The counts can name environments without rows in this batch (counts handed over again).
      live = await this.liveEnvironments([...new Set([...batch.environments, ...batch.counts.map((counts) => counts.environment)].map((env) => env.environmentId))]);
      await this.storeSnapshots(batch.environments.filter((env) => live.has(env.environmentId)));
      for (const chunk of chunksOf(batch, this.rowsPerTransaction)) {
        let kept = chunk.filter((row) => live.has(row[0]));
        try {
          await insertEvaluations(this.database, kept);
        } catch (error) {
          if (!isForeignKeyViolation(error)) throw error;
          live = await this.liveEnvironments([...live]); // an environment was deleted meanwhile
          kept = kept.filter((row) => live.has(row[0]));
          await insertEvaluations(this.database, kept);
        }
        rows += evaluations(kept);
        discarded += evaluations(chunk) - evaluations(kept);
      }
    } catch (error) {
      errors.push(String(error));
    }
    let countsStored = true;
    try {
      if (errors.length > 0) live = await this.liveEnvironments(batch.counts.map((counts) => counts.environment.environmentId));
      await this.addCounts(batch.counts.filter((counts) => live.has(counts.environment.environmentId)));
    } catch (error) {
      countsStored = false;
      errors.push(String(error));
    }
    return { rows, discarded, failed: batch.rows - rows - discarded, countsStored, errors };
  }

  /**
   * Deletes history older than the retention, in small steps (each a short statement: the
   * SQLite write lock is taken and given back between them).
   */
  async prune(retentionDays: number): Promise<number> {
    if (retentionDays <= 0) return 0;
    const before = new Date(Date.now() - retentionDays * 24 * 60 * 60 * 1000).toISOString();
    const { db } = this.database;
    let deleted = 0;
    for (const { id } of await db.selectFrom('environments').select('id').execute()) {
      deleted += await this.deleteEvaluations(id, before, ROWS_PER_PRUNE);
      // Counts: along (environment_id, hour_start); snapshots: no kept row refers to them (evaluations.snapshot_id is indexed).
      for (;;) {
        const old = await db.selectFrom('evaluation_counts').select(['flag_id', 'hour_start']).where('environment_id', '=', id).where('hour_start', '<', before).limit(1000).execute();
        if (old.length === 0) break;
        const hours = [...new Set(old.map((row) => row.hour_start))];
        await db.deleteFrom('evaluation_counts').where('environment_id', '=', id).where('flag_id', 'in', [...new Set(old.map((row) => row.flag_id))]).where('hour_start', 'in', hours).execute();
      }
      for (;;) {
        const old = await db.selectFrom('evaluation_variant_counts').select(['flag_id', 'hour_start']).where('environment_id', '=', id).where('hour_start', '<', before).limit(1000).execute();
        if (old.length === 0) break;
        const hours = [...new Set(old.map((row) => row.hour_start))];
        await db.deleteFrom('evaluation_variant_counts').where('environment_id', '=', id).where('flag_id', 'in', [...new Set(old.map((row) => row.flag_id))]).where('hour_start', 'in', hours).execute();
      }
      for (;;) {
        const result = await db
          .deleteFrom('evaluation_snapshots')
          .where('id', 'in', (eb) =>
            eb
              .selectFrom('evaluation_snapshots as s')
              .select('s.id')
              .where('s.environment_id', '=', id)
              .where('s.created_at', '<', before)
              .where(({ not, exists, selectFrom }) => not(exists(selectFrom('evaluations').select('evaluations.id').whereRef('evaluations.snapshot_id', '=', 's.id'))))
              .limit(ROWS_PER_PRUNE),
          )
          .executeTakeFirst();
        if (Number(result.numDeletedRows) < ROWS_PER_PRUNE) break;
      }
    }
    this.storedSnapshots.clear();
    return deleted;
  }

  /**
   * Deletes the stored history of these environments in bounded steps, before the environment
   * or project row itself is deleted (the cascade then finds almost nothing left). Runs in the
   * history worker, so a delete of millions of rows never holds the evaluate thread's event loop;
   * each step deletes rows by primary key, found along an index, so its plan cannot become a scan.
   */
  async deleteHistory(environmentIds: readonly string[]): Promise<void> {
    const { db } = this.database;
    for (const environmentId of environmentIds) {
      await this.deleteEvaluations(environmentId, null, ROWS_PER_DELETE);
      for (;;) {
        const ids = (await db.selectFrom('evaluation_snapshots').select('id').where('environment_id', '=', environmentId).limit(ROWS_PER_DELETE).execute()).map((row) => row.id);
        if (ids.length > 0) await paced(() => db.deleteFrom('evaluation_snapshots').where('id', 'in', ids).execute());
        for (const id of ids) this.storedSnapshots.delete(id);
        if (ids.length < ROWS_PER_DELETE) break;
      }
      const flagIds = (await db.selectFrom('evaluation_counts').select('flag_id').distinct().where('environment_id', '=', environmentId).execute()).map((row) => row.flag_id);
      for (let start = 0; start < flagIds.length; start += 10) {
        // A flag has one row per hour of retention (720 for 30 days): ten flags are a bounded step.
        const ids = flagIds.slice(start, start + 10);
        await paced(() => db.deleteFrom('evaluation_counts').where('environment_id', '=', environmentId).where('flag_id', 'in', ids).execute());
      }
      const variantFlagIds = (await db.selectFrom('evaluation_variant_counts').select('flag_id').distinct().where('environment_id', '=', environmentId).execute()).map((row) => row.flag_id);
      for (const flagId of variantFlagIds) await paced(() => db.deleteFrom('evaluation_variant_counts').where('environment_id', '=', environmentId).where('flag_id', '=', flagId).execute());
    }
  }

  /**
   * Deletes an environment's history rows (older than `before`, or all), `step` at a time, by
   * primary key. Each step starts where the last one ended on the (environment_id, evaluated_at)
   * index: on PostgreSQL the deleted rows stay in the index until vacuumed, and starting from the
   * beginning each time would step over all of them again.
   */
  private async deleteEvaluations(environmentId: string, before: string | null, step: number): Promise<number> {
    const { db } = this.database;
    let deleted = 0;
    let from: string | Date | null = null;
    for (;;) {
      let query = db.selectFrom('evaluations').select(['id', 'evaluated_at']).where('environment_id', '=', environmentId);
      if (before !== null) query = query.where('evaluated_at', '<', before);
      if (from !== null) query = query.where('evaluated_at', '>=', from);
      const rows = await query.orderBy('evaluated_at').limit(step).execute();
      if (rows.length === 0) break;
      await paced(() => db.deleteFrom('evaluations').where('id', 'in', rows.map((row) => row.id)).execute());
      deleted += rows.length;
      from = rows.at(-1)!.evaluated_at;
      if (rows.length < step) break;
    }
    return deleted;
  }

  private async liveEnvironments(ids: string[]): Promise<Set<string>> {
    if (ids.length === 0) return new Set();
    const rows = await this.database.db.selectFrom('environments').select('id').where('id', 'in', ids).execute();
    return new Set(rows.map((row) => row.id));
  }

  private async storeSnapshots(environments: BatchEnvironment[]): Promise<void> {
    const fresh = environments.filter((env) => !this.storedSnapshots.has(env.snapshotId));
    if (fresh.length === 0) return;
    await this.database.db
      .insertInto('evaluation_snapshots')
      .values(
        fresh.map((env) => ({
          id: env.snapshotId,
          environment_id: env.environmentId,
          flag_ids: JSON.stringify(env.flagIds),
          flag_keys: JSON.stringify(env.flagKeys),
          flag_variants: env.flagVariants == null ? null : JSON.stringify(env.flagVariants),
          flag_prerequisites: env.flagPrerequisites == null ? null : JSON.stringify(env.flagPrerequisites),
          created_at: nowIso(),
        })),
      )
      .onConflict((conflict) => conflict.column('id').doNothing())
      .execute();
    for (const env of fresh) this.storedSnapshots.add(env.snapshotId);
  }

  private async addCounts(counts: HourCounts[]): Promise<void> {
    // One entry per flag and hour: a batch can hold two compilations of one environment, and
    // PostgreSQL refuses to upsert the same row twice in one statement.
    const merged = new Map<string, { flag_id: string; hour_start: string; environment_id: string; flag_key: string; enabled_count: number; disabled_count: number }>();
    for (const { environment, hourStart, enabled, disabled } of counts) {
      environment.flagIds.forEach((flagId, i) => {
        if (!enabled[i] && !disabled[i]) return;
        const key = `${flagId} ${hourStart}`;
        const entry = merged.get(key) ?? { flag_id: flagId, hour_start: hourStart, environment_id: environment.environmentId, flag_key: environment.flagKeys[i]!, enabled_count: 0, disabled_count: 0 };
        entry.enabled_count += enabled[i]!;
        entry.disabled_count += disabled[i]!;
        entry.flag_key = environment.flagKeys[i]!;
        merged.set(key, entry);
      });
    }
    await addHourlyCounts(this.database.db, [...merged.values()], variantCountRows(counts));
  }
}

/** The per-variant counts of hourly counts, one entry per flag, hour and variant (merged: an upsert may not name a row twice). */
function variantCountRows(counts: HourCounts[]) {
  const merged = new Map<string, { flag_id: string; hour_start: string; variant: string; environment_id: string; flag_key: string; count: number }>();
  for (const { environment, hourStart, variants } of counts) {
    if (variants === undefined || environment.flagVariants == null) continue;
    const { offsets } = variantOffsets(environment);
    environment.flagVariants.forEach((keys, i) => {
      if (keys === null) return;
      keys.forEach((variant, v) => {
        const n = variants[offsets[i]! + v]!;
        if (n === 0) return;
        const flagId = environment.flagIds[i]!;
        const key = `${flagId} ${hourStart} ${variant}`;
        const entry = merged.get(key) ?? { flag_id: flagId, hour_start: hourStart, variant, environment_id: environment.environmentId, flag_key: environment.flagKeys[i]!, count: 0 };
        entry.count += n;
        merged.set(key, entry);
      });
    });
  }
  return [...merged.values()];
}
