import type { Selectable } from 'kysely';
import type { Db } from '../../db/database.js';
import type { SchedulesTable } from '../../db/schema.js';
import { fromJson, toIso } from '../../db/values.js';
import { NotFound } from '../../errors.js';
import type { Actor } from '../changes/changes.schemas.js';
import type { FlagPut } from '../flags/flag-writes.js';
import type { ScheduleStatus } from './schedules.schemas.js';

export type ScheduleRow = Selectable<SchedulesTable>;


/** The schedule as the API shows it (docs/change-management.md). */
export function toSchedule(row: ScheduleRow) {
  return {
    id: row.id,
    project_id: row.project_id,
    environment_id: row.environment_id,
    flag_id: row.flag_id,
    flag_key: row.flag_key,
    at: toIso(row.at),
    change: fromJson(row.change) as FlagPut,
    note: row.note,
    status: row.status as ScheduleStatus,
    created_by: creatorOf(row),
    change_request_id: row.change_request_id,
    created_at: toIso(row.created_at),
    applied_at: row.applied_at === null ? null : toIso(row.applied_at),
    error: row.error,
  };
}
export type Schedule = ReturnType<typeof toSchedule>;

/** Who a schedule acts as when it applies: its creator, with the token used to create it. */
export const creatorOf = (row: ScheduleRow): Actor & { user_id: string; email: string } => ({ user_id: row.created_by_user_id, email: row.created_by_email, token_id: row.created_by_token_id });

export async function requireSchedule(db: Db, scope: { projectId: string; scheduleId: string; envId?: string; flagId?: string }): Promise<ScheduleRow> {
  let select = db.selectFrom('schedules').selectAll().where('id', '=', scope.scheduleId).where('project_id', '=', scope.projectId);
  if (scope.envId) select = select.where('environment_id', '=', scope.envId);
  if (scope.flagId) select = select.where('flag_id', '=', scope.flagId);
  const row = await select.executeTakeFirst();
  if (!row) throw new NotFound('Schedule not found');
  return row;
}

/** By time, then creation. */
export async function listSchedules(db: Db, filter: { projectId: string; flagId?: string; environmentId?: string | undefined; status?: ScheduleStatus | undefined }) {
  let select = db.selectFrom('schedules').selectAll().where('project_id', '=', filter.projectId);
  if (filter.flagId) select = select.where('flag_id', '=', filter.flagId);
  if (filter.environmentId) select = select.where('environment_id', '=', filter.environmentId);
  if (filter.status) select = select.where('status', '=', filter.status);
  const rows = await select.orderBy('at').orderBy('created_at').orderBy('id').execute();
  return rows.map(toSchedule);
}

