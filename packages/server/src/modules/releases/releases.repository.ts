import type { Selectable } from 'kysely';
import type { Db } from '../../db/database.js';
import type { ReleasesTable } from '../../db/schema.js';
import { fromJson, toIso, toIsoOrNull } from '../../db/values.js';
import { NotFound } from '../../errors.js';
import { LIVE_STATUSES, type ReleaseCheck, type ReleaseStatus } from './releases.schemas.js';

export type ReleaseRow = Selectable<ReleasesTable>;
export interface Guardrail {
  metric_id: string;
  tolerance: number;
}
/** What a rollback gives the flag back (release-writes.ts). */
export interface FlagBefore {
  enabled: boolean;
  rollout_percentage: number;
  variants?: { key: string; value: unknown; weight: number; description?: string }[];
  off_variant?: string | null;
}

/** The release as the API shows it (docs/releases.md). */
export function toRelease(row: ReleaseRow) {
  const steps = fromJson<number[]>(row.steps);
  const started = fromJson<number[]>(row.step_started);
  return {
    id: row.id,
    project_id: row.project_id,
    environment_id: row.environment_id,
    flag_id: row.flag_id,
    flag_key: row.flag_key,
    steps,
    hold_seconds: row.hold_seconds,
    check_seconds: row.check_seconds,
    min_units: row.min_units,
    guardrails: fromJson<Guardrail[]>(row.guardrails as string),
    treatment: row.treatment,
    control: row.control,
    status: row.status as ReleaseStatus,
    current_step: row.current_step,
    rollout_percentage: steps[row.current_step]!,
    step_started_at: new Date(started[row.current_step]!).toISOString(),
    reason: row.reason,
    created_by: { user_id: row.created_by_user_id, email: row.created_by_email },
    change_request_id: row.change_request_id,
    created_at: toIso(row.created_at),
    updated_at: toIso(row.updated_at),
    ended_at: toIsoOrNull(row.ended_at),
    next_check_at: toIsoOrNull(row.next_check_at),
  };
}
export type Release = ReturnType<typeof toRelease>;

/** A release's own fields besides what the API shows: each step's start (epoch ms) and what a rollback restores. */
export const stepStartsOf = (row: ReleaseRow) => fromJson<number[]>(row.step_started);
export const flagBeforeOf = (row: ReleaseRow) => fromJson<FlagBefore>(row.flag_before as string);

export type ReleaseScope = { projectId: string; envId: string; flagId: string; releaseId: string };

export async function requireReleaseRow(db: Db, scope: ReleaseScope): Promise<ReleaseRow> {
  const row = await db
    .selectFrom('releases')
    .selectAll()
    .where('id', '=', scope.releaseId)
    .where('flag_id', '=', scope.flagId)
    .where('environment_id', '=', scope.envId)
    .where('project_id', '=', scope.projectId)
    .executeTakeFirst();
  if (!row) throw new NotFound('Release not found');
  return row;
}

/** A release with every check, oldest first. */
export async function releaseWithChecks(db: Db, scope: ReleaseScope) {
  const row = await requireReleaseRow(db, scope);
  const checks = await db.selectFrom('release_checks').select('figures').where('release_id', '=', row.id).orderBy('at').orderBy('id').execute();
  return { ...toRelease(row), checks: checks.map((check) => fromJson<ReleaseCheck>(check.figures as string)) };
}

/** A flag's releases in one environment, newest first. */
export async function listReleases(db: Db, scope: { projectId: string; envId: string; flagId: string }): Promise<Release[]> {
  const rows = await db
    .selectFrom('releases')
    .selectAll()
    .where('flag_id', '=', scope.flagId)
    .where('environment_id', '=', scope.envId)
    .where('project_id', '=', scope.projectId)
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .execute();
  return rows.map(toRelease);
}

/** The running or paused release of these flags (one at most per flag and environment). */
export function liveReleasesOf(db: Db, flagIds: readonly string[]): Promise<ReleaseRow[]> {
  if (flagIds.length === 0) return Promise.resolve([]);
  return db.selectFrom('releases').selectAll().where('flag_id', 'in', flagIds).where('status', 'in', LIVE_STATUSES).execute();
}
