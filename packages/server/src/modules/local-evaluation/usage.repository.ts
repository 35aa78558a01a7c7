import type { Db } from '../../db/database.js';
import { addHourlyCountsIn } from '../history/history.sql.js';
import type { CompiledEnvironment } from '../evaluate/evaluate.cache.js';

export interface FlagUsage {
  enabled: number;
  disabled: number;
  variants?: Record<string, number> | undefined;
}

const HOUR_MS = 3_600_000;

/** A report may close at most this long ago: older counts would land in hours already pruned or long read. Its id is kept as long. */
export const OLDEST_REPORT_MS = 7 * 24 * HOUR_MS;

/** The start of the hour of an instant, as the hourly counts store it. */
const hourStartOf = (time: number): string => new Date(Math.floor(time / HOUR_MS) * HOUR_MS).toISOString();

/**
 * Adds a usage report to the hourly counts of the hour of `endedAt` (what the per-flag metrics
 * and last_evaluated_at read), with its id, in one transaction: the report is counted once,
 * whichever instance takes it and however often it is sent. A report whose id was counted
 * before adds nothing and answers what it answered then. Unknown flag keys are ignored, and so
 * are variants the flag does not have. Resolves how many flags were counted.
 */
export async function addUsage(db: Db, environment: CompiledEnvironment, reportId: string, endedAt: number, flags: Readonly<Record<string, FlagUsage>>): Promise<number> {
  // A clock ahead of ours must not write into hours that have not begun.
  const hourStart = hourStartOf(Math.min(endedAt, Date.now()));
  const counts: { flag_id: string; hour_start: string; environment_id: string; flag_key: string; enabled_count: number; disabled_count: number }[] = [];
  const variantCounts: { flag_id: string; hour_start: string; variant: string; environment_id: string; flag_key: string; count: number }[] = [];
  for (const [key, usage] of Object.entries(flags)) {
    const index = environment.indexOf(key);
    if (index < 0) continue;
    const flagId = environment.flagIds[index]!;
    if (usage.enabled > 0 || usage.disabled > 0) {
      counts.push({ flag_id: flagId, hour_start: hourStart, environment_id: environment.environmentId, flag_key: key, enabled_count: usage.enabled, disabled_count: usage.disabled });
    }
    const known = new Set((environment.definitions[index]!.variants ?? []).map((variant) => variant.key));
    for (const [variant, count] of Object.entries(usage.variants ?? {})) {
      if (count > 0 && known.has(variant)) variantCounts.push({ flag_id: flagId, hour_start: hourStart, variant, environment_id: environment.environmentId, flag_key: key, count });
    }
  }
  const report = { environment_id: environment.environmentId, report_id: reportId };
  const counted = await db.transaction().execute(async (trx) => {
    // A report sent again waits here for the first one's transaction, then finds its id.
    const recorded = await trx
      .insertInto('usage_reports')
      // Its own ended_at: the id is kept as long as the report itself could be taken again.
      .values({ ...report, accepted: counts.length, ended_at: new Date(endedAt).toISOString() })
      .onConflict((conflict) => conflict.columns(['environment_id', 'report_id']).doNothing())
      .returning('accepted')
      .executeTakeFirst();
    if (!recorded) return undefined;
    await addHourlyCountsIn(trx, counts, variantCounts);
    return counts.length;
  });
  if (counted !== undefined) {
    // Ids of reports that could no longer be taken are of no use: each new report clears those.
    await db.deleteFrom('usage_reports').where('ended_at', '<', new Date(Date.now() - OLDEST_REPORT_MS).toISOString()).execute();
    return counted;
  }
  const before = await db.selectFrom('usage_reports').select('accepted').where('environment_id', '=', report.environment_id).where('report_id', '=', reportId).executeTakeFirstOrThrow();
  return before.accepted;
}
