/**
 * Scheduled changes (docs/change-management.md): a PUT of a flag prepared now and applied at a
 * given time. Saved, it is checked as the PUT would be (the PUT itself, rolled back); applied, it
 * is that PUT, through the one write path, as its creator.
 */
import type { Db } from '../../db/database.js';
import { rolledBack } from '../../db/dry-run.js';
import { newId, nowIso, toIso } from '../../db/values.js';
import { AlreadySettled, AppError, Conflict, Invalid, Unavailable } from '../../errors.js';
import type { Actor, Change } from '../changes/changes.schemas.js';
import type { RecordChange, WriteContext } from '../changes/project-writes.js';
import { updateFlagWrite, type FlagPut } from '../flags/flag-writes.js';
import { requireFlag, type FlagScope } from '../flags/flags.repository.js';
import { atLeast } from '../members/access.js';
import { findMemberRole } from '../members/members.repository.js';
import { requireSchedule, toSchedule, type Schedule, type ScheduleRow } from './schedules.repository.js';

/** At most this far ahead. */
const HORIZON_MS = 366 * 24 * 3600 * 1000;
/**
 * At most this many pending schedules in a project (those of its change requests included): one
 * project cannot fill the scheduler's queue, nor the database, with due items.
 */
export const PENDING_PER_PROJECT = 1000;
/** A schedule later than this when an instance first sees it (none ran meanwhile) fails as missed. */
export const MISSED_AFTER_MS = 24 * 3600 * 1000;

export interface ScheduleFields {
  at: string;
  change: FlagPut;
  note?: string | null | undefined;
}

/** The audit record of a change to a schedule: its flag's key, its environment. */
const scheduleChange = (action: 'schedule.created' | 'schedule.cancelled' | 'schedule.failed', before: Schedule | null, after: Schedule | null): Change => {
  const schedule = (after ?? before)!;
  return { action, resource_type: 'schedule', resource_id: schedule.id, resource_key: schedule.flag_key, environment_id: schedule.environment_id, before, after };
};

/** `at` as stored (UTC), or Invalid: in the future and at most a year ahead. */
export function checkedAt(at: string): string {
  const time = Date.parse(at);
  const now = Date.now();
  if (!(time > now)) throw new Invalid(`at (${at}) is not in the future`);
  if (time - now > HORIZON_MS) throw new Invalid(`at (${at}) is more than a year ahead`);
  return toIso(new Date(time));
}

/**
 * Creates a pending schedule of the flag, after checking its change as the PUT would check it now.
 * changeRequestId: the approved change request that creates it (its authority in an environment
 * that needs approval).
 */
export async function createScheduleWrite(trx: Db, record: RecordChange, scope: FlagScope, fields: ScheduleFields, creator: Actor, changeRequestId: string | null = null): Promise<Schedule> {
  const at = checkedAt(fields.at);
  const flag = await requireFlag(trx, scope);
  // Counted in the write's transaction, which holds the project's row: two writes cannot both take the last place.
  const pending = await trx.selectFrom('schedules').select((eb) => eb.fn.countAll<number | string>().as('count')).where('project_id', '=', flag.project_id).where('status', '=', 'pending').executeTakeFirstOrThrow();
  if (Number(pending.count) >= PENDING_PER_PROJECT) throw new Conflict(`This project has ${PENDING_PER_PROJECT} pending schedules, the most it may have: cancel some, or wait for them to apply`);
  await rolledBack(trx, () => updateFlagWrite(trx, () => undefined, scope, fields.change)).catch((error: unknown) => {
    // Whatever the PUT would refuse now (its 409 for a key taken included) is a change not to save: 400.
    throw error instanceof AppError && !(error instanceof Unavailable) ? new Invalid(`change: ${error.message}`) : error;
  });
  const row = {
    id: newId(),
    project_id: flag.project_id,
    environment_id: flag.environment_id,
    flag_id: flag.id,
    flag_key: flag.key,
    at,
    change: JSON.stringify(fields.change),
    note: fields.note ?? null,
    status: 'pending' as const,
    created_by_user_id: creator.user_id!,
    created_by_email: creator.email!,
    created_by_token_id: creator.token_id,
    change_request_id: changeRequestId,
    error: null,
    claimed_until: null,
    created_at: nowIso(),
    applied_at: null,
  };
  await trx.insertInto('schedules').values(row).execute();
  const schedule = toSchedule(row);
  record(scheduleChange('schedule.created', null, schedule));
  return schedule;
}

/** Cancels a pending schedule; any other is 409. */
export async function cancelScheduleWrite(trx: Db, record: RecordChange, scope: Parameters<typeof requireSchedule>[1]): Promise<void> {
  const before = toSchedule(await requireSchedule(trx, scope));
  if (before.status !== 'pending') throw new Conflict(`Only a pending schedule can be cancelled; this one is ${before.status}`);
  const row = await trx.updateTable('schedules').set({ status: 'cancelled' }).where('id', '=', before.id).where('status', '=', 'pending').returningAll().executeTakeFirstOrThrow();
  record(scheduleChange('schedule.cancelled', before, toSchedule(row)));
}

/** A consequence of every write (app.ts): deleting a flag cancels its pending schedules. */
export async function cancelSchedulesOfDeletedFlags(trx: Db, changes: readonly Change[], _context: WriteContext): Promise<Change[]> {
  const deleted = changes.filter((change) => change.action === 'flag.deleted').map((change) => change.resource_id);
  if (deleted.length === 0) return [];
  const before = await trx.selectFrom('schedules').selectAll().where('flag_id', 'in', deleted).where('status', '=', 'pending').execute();
  if (before.length === 0) return [];
  await trx.updateTable('schedules').set({ status: 'cancelled', error: 'its flag was deleted' }).where('id', 'in', before.map((row) => row.id)).execute();
  return before.map((row) => scheduleChange('schedule.cancelled', toSchedule(row), { ...toSchedule(row), status: 'cancelled', error: 'its flag was deleted' }));
}

/**
 * In the write's transaction (origin: this schedule): takes the schedule from pending to applied
 * (else AlreadySettled: once, whatever the number of instances; a row lock on PostgreSQL, one
 * writer on SQLite), and applies its change as its creator's PUT. A refusal rolls both back.
 */
export async function applyScheduleWrite(trx: Db, record: RecordChange, schedule: ScheduleRow): Promise<Schedule> {
  const taken = await trx.updateTable('schedules').set({ status: 'applied', applied_at: nowIso(), claimed_until: null }).where('id', '=', schedule.id).where('status', '=', 'pending').returningAll().executeTakeFirst();
  if (!taken) throw new AlreadySettled();
  // It acts for its creator: not once they may no longer change flags here.
  const role = await findMemberRole(trx, taken.project_id, taken.created_by_user_id);
  if (!role || !atLeast(role, 'editor')) throw new Conflict(`its creator (${taken.created_by_email}) is no longer an editor of the project`);
  const applied = toSchedule(taken);
  await updateFlagWrite(trx, record, { projectId: taken.project_id, envId: taken.environment_id, flagId: taken.flag_id }, applied.change);
  return applied;
}

/** In the write's transaction: a pending schedule failed, with why; nothing when it was settled meanwhile. */
export async function failScheduleWrite(trx: Db, record: RecordChange, scheduleId: string, error: string): Promise<void> {
  const before = await trx.selectFrom('schedules').selectAll().where('id', '=', scheduleId).where('status', '=', 'pending').executeTakeFirst();
  if (!before) return;
  const after = await trx.updateTable('schedules').set({ status: 'failed', error, claimed_until: null }).where('id', '=', scheduleId).returningAll().executeTakeFirstOrThrow();
  record(scheduleChange('schedule.failed', toSchedule(before), toSchedule(after)));
}
