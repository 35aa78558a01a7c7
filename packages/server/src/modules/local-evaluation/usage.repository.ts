import type { Db } from '../../db/database.js';
import { addHourlyCounts } from '../history/history.sql.js';
import type { CompiledEnvironment } from '../evaluate/evaluate.cache.js';

export interface FlagUsage {
  enabled: number;
  disabled: number;
  variants?: Record<string, number> | undefined;
}

const HOUR_MS = 3_600_000;

/** The start of the hour of an instant, as the hourly counts store it. */
export const hourStartOf = (time: number): string => new Date(Math.floor(time / HOUR_MS) * HOUR_MS).toISOString();

/**
 * Adds a usage report to the hourly counts (what the per-flag metrics and last_evaluated_at
 * read), in one transaction: the report is counted once, whichever instance takes it, or not at
 * all. Unknown flag keys are ignored, and so are variants the flag does not have.
 */
export async function addUsage(db: Db, environment: CompiledEnvironment, hourStart: string, flags: Readonly<Record<string, FlagUsage>>): Promise<number> {
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
  await addHourlyCounts(db, counts, variantCounts);
  return counts.length;
}
