import type { Db } from '../../db/database.js';
import { sql } from 'kysely';
import { toArray, toIso } from '../../db/values.js';
import { Invalid } from '../../errors.js';
import { OUTCOMES, PREREQUISITE_CODE, isPrerequisiteCode, prerequisiteReason } from '@guidon/engine';

export interface EvaluationFilter {
  environmentIds: string[];
  flagKey?: string | undefined;
  userId?: string | undefined;
  limit: number;
  cursor?: string | undefined;
}

interface Cursor {
  /** evaluated_at, row id and flag position of the first item of the next page */
  at: string;
  row: number;
  index: number;
}

interface Snapshot {
  flagIds: string[];
  flagKeys: string[];
  /** Per flag, its variant keys, or null; null when no flag had variants (then a row holds no variant bytes). */
  flagVariants: (string[] | null)[] | null;
  flagPrerequisites: (string[] | null)[] | null;
}

function toSnapshot(row: { flag_ids: string | string[]; flag_keys: string | string[]; flag_variants: string | (string[] | null)[] | null; flag_prerequisites: string | (string[] | null)[] | null }): Snapshot {
  const variants = row.flag_variants;
  const prerequisites = row.flag_prerequisites;
  return {
    flagIds: toArray(row.flag_ids),
    flagKeys: toArray(row.flag_keys),
    flagVariants: typeof variants === 'string' ? (JSON.parse(variants) as (string[] | null)[]) : variants,
    flagPrerequisites: typeof prerequisites === 'string' ? (JSON.parse(prerequisites) as (string[] | null)[]) : prerequisites,
  };
}

const encodeCursor = (cursor: Cursor) => Buffer.from(JSON.stringify([cursor.at, cursor.row, cursor.index])).toString('base64url');

function decodeCursor(raw: string): Cursor {
  try {
    const [at, row, index] = JSON.parse(Buffer.from(raw, 'base64url').toString()) as unknown[];
    if (typeof at === 'string' && !Number.isNaN(Date.parse(at)) && Number.isSafeInteger(row) && Number.isSafeInteger(index)) {
      return { at: new Date(at).toISOString(), row: row as number, index: index as number };
    }
  } catch {
    // fall through
  }
  throw new Invalid('cursor is not one this service gave out');
}

/**
 * Evaluation history, newest first, one item per evaluated flag. Rows are stored one per evaluate
 * request (outcomes packed against a snapshot of the flag list) and expanded here. Each
 * environment is read along its (environment_id, evaluated_at) index and the results merged.
 */
export async function listEvaluations(db: Db, filter: EvaluationFilter) {
  const cursor = filter.cursor === undefined ? undefined : decodeCursor(filter.cursor);
  if (filter.environmentIds.length === 0) return { items: [], next_cursor: null }; // `in ()` is not SQL
  const snapshots = new Map<string, Snapshot>();
  let onlySnapshots: string[] | undefined;
  if (filter.flagKey !== undefined) {
    // LIKE on the JSON text narrows the candidates ('_' is a wildcard there); the parsed list decides.
    const rows = await db
      .selectFrom('evaluation_snapshots')
      .select(['id', 'flag_ids', 'flag_keys', 'flag_variants', 'flag_prerequisites'])
      .where('environment_id', 'in', filter.environmentIds)
      .where(sql<string>`cast(${sql.ref('flag_keys')} as text)`, 'like', `%${JSON.stringify(filter.flagKey)}%`)
      .execute();
    for (const row of rows) {
      const snapshot = toSnapshot(row);
      if (snapshot.flagKeys.includes(filter.flagKey)) snapshots.set(row.id, snapshot);
    }
    onlySnapshots = [...snapshots.keys()];
    if (onlySnapshots.length === 0) return { items: [], next_cursor: null };
  }

  const perEnvironment = await Promise.all(
    filter.environmentIds.map((environmentId) => {
      let query = db
        .selectFrom('evaluations')
        .select(['id', 'environment_id', 'snapshot_id', 'user_id', 'outcomes', 'evaluated_at'])
        .where('environment_id', '=', environmentId)
        .orderBy('evaluated_at', 'desc')
        .orderBy('id', 'desc')
        .limit(filter.limit + 1); // every row holds at least one item
      if (filter.userId !== undefined) query = query.where('user_id', '=', filter.userId);
      if (onlySnapshots) query = query.where('snapshot_id', 'in', onlySnapshots);
      if (cursor) {
        query = query.where((eb) =>
          eb.or([eb('evaluated_at', '<', cursor.at), eb.and([eb('evaluated_at', '=', cursor.at), eb('id', '<=', cursor.row)])]),
        );
      }
      return query.execute();
    }),
  );
  const rows = perEnvironment
    .flat()
    .map((row) => ({ ...row, id: Number(row.id), evaluated_at: toIso(row.evaluated_at) }))
    .sort((a, b) => (a.evaluated_at === b.evaluated_at ? b.id - a.id : a.evaluated_at < b.evaluated_at ? 1 : -1));

  const missing = [...new Set(rows.map((row) => row.snapshot_id))].filter((id) => !snapshots.has(id));
  if (missing.length > 0) {
    for (const row of await db.selectFrom('evaluation_snapshots').select(['id', 'flag_ids', 'flag_keys', 'flag_variants', 'flag_prerequisites']).where('id', 'in', missing).execute()) {
      snapshots.set(row.id, toSnapshot(row));
    }
  }

  const items = [];
  for (const row of rows) {
    const snapshot = snapshots.get(row.snapshot_id)!;
    const indexes = filter.flagKey !== undefined ? [snapshot.flagKeys.indexOf(filter.flagKey)] : snapshot.flagIds.map((_, i) => i);
    for (const index of indexes) {
      if (cursor && row.id === cursor.row && index < cursor.index) continue;
      if (items.length === filter.limit) return { items, next_cursor: encodeCursor({ at: row.evaluated_at, row: row.id, index }) };
      const code = row.outcomes[index]!;
      const outcome = OUTCOMES[code]!;
      const parent = isPrerequisiteCode(code) ? snapshot.flagPrerequisites?.[index]?.[code - PREREQUISITE_CODE] : undefined;
      items.push({
        id: `${row.id}-${index}`,
        environment_id: row.environment_id,
        flag_id: snapshot.flagIds[index]!,
        flag_key: snapshot.flagKeys[index]!,
        user_id: row.user_id,
        enabled: outcome.enabled,
        reason: parent === undefined ? outcome.reason : prerequisiteReason(parent),
        variant: snapshot.flagVariants?.[index]?.[row.outcomes[snapshot.flagIds.length + index]!] ?? null,
        evaluated_at: row.evaluated_at,
      });
    }
  }
  return { items, next_cursor: null };
}

const HOUR_MS = 60 * 60 * 1000;

/**
 * Per-hour counts over the last `hours` hours (the current one included), oldest first: of a flag
 * by id, or by key within an environment (also for a deleted flag, whose counts are kept; a key
 * used by two flags one after the other sums both).
 */
export async function flagMetrics(db: Db, flag: { id: string; key: string } | { environmentId: string; key: string }, hours: number) {
  const currentHour = Math.floor(Date.now() / HOUR_MS);
  const first = new Date((currentHour - hours + 1) * HOUR_MS).toISOString();
  let query = db
    .selectFrom('evaluation_counts')
    .select(['hour_start', 'enabled_count', 'disabled_count'])
    .where('hour_start', '>=', first);
  query = 'id' in flag ? query.where('flag_id', '=', flag.id) : query.where('environment_id', '=', flag.environmentId).where('flag_key', '=', flag.key);
  const byHour = new Map<string, { enabled: number; disabled: number }>();
  for (const row of await query.execute()) {
    const hour = byHour.get(toIso(row.hour_start)) ?? { enabled: 0, disabled: 0 };
    hour.enabled += Number(row.enabled_count);
    hour.disabled += Number(row.disabled_count);
    byHour.set(toIso(row.hour_start), hour);
  }
  let variantQuery = db.selectFrom('evaluation_variant_counts').select(['hour_start', 'variant', 'count']).where('hour_start', '>=', first);
  variantQuery = 'id' in flag ? variantQuery.where('flag_id', '=', flag.id) : variantQuery.where('environment_id', '=', flag.environmentId).where('flag_key', '=', flag.key);
  const variantsByHour = new Map<string, Record<string, number>>();
  for (const row of await variantQuery.execute()) {
    const hour = variantsByHour.get(toIso(row.hour_start)) ?? {};
    hour[row.variant] = (hour[row.variant] ?? 0) + Number(row.count);
    variantsByHour.set(toIso(row.hour_start), hour);
  }
  // Variants only for a flag that served some in the window (contract §15: per-variant counts).
  const withVariants = variantsByHour.size > 0;
  const buckets = [];
  const totals: { enabled: number; disabled: number; variants?: Record<string, number> } = { enabled: 0, disabled: 0, ...(withVariants ? { variants: {} } : {}) };
  for (let hour = currentHour - hours + 1; hour <= currentHour; hour++) {
    const start = new Date(hour * HOUR_MS).toISOString();
    const row = byHour.get(start);
    const bucket: { start: string; enabled: number; disabled: number; variants?: Record<string, number> } = { start, enabled: row?.enabled ?? 0, disabled: row?.disabled ?? 0 };
    totals.enabled += bucket.enabled;
    totals.disabled += bucket.disabled;
    if (withVariants) {
      bucket.variants = variantsByHour.get(start) ?? {};
      for (const [variant, n] of Object.entries(bucket.variants)) totals.variants![variant] = (totals.variants![variant] ?? 0) + n;
    }
    buckets.push(bucket);
  }
  return { flag_key: flag.key, buckets, totals };
}
