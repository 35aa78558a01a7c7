/**
 * Four eyes on an environment (docs/change-management.md). Wired into every write by app.ts
 * (ProjectWrites' participants), so no route, present or future, can skip them:
 * - refuseUnapprovedWrites: while an environment's approvals_required is at least 1, a write that
 *   changes its flags, rules or schedules is refused unless it applies an approved change request
 *   (or a schedule such a request created), as that request's own transaction shows;
 * - requestConsequences: a change to a flag moves its revision and outdates the pending requests
 *   that build on it; a new approvals_required settles the environment's pending requests again, a
 *   member removed or demoted the project's (their approvals no longer count).
 */
import type { Db } from '../../db/database.js';
import { Conflict } from '../../errors.js';
import type { AuditAction, Change, ChangeOrigin } from '../changes/changes.schemas.js';
import type { WriteContext } from '../changes/project-writes.js';
import { outdate, PENDING, settle } from './change-requests.writes.js';

/** The actions that change what an environment serves or will serve. */
const REVIEWED_ACTIONS = new Set<AuditAction>(['flag.created', 'flag.updated', 'flag.toggled', 'flag.deleted', 'rule.created', 'rule.updated', 'rule.deleted', 'schedule.created', 'schedule.cancelled', 'release.created']);

/** The message of every refused direct write. */
const needsApprovalMessage = (environmentKey: string) => `Changes to ${environmentKey} need an approved change request`;

/**
 * Whether this write applies an approved change request of the environment, or a schedule one
 * created, or is a step or the rollback of a release of the environment (its creation needed the
 * approval: docs/releases.md). Such a write names its origin; only change-requests.writes.ts
 * (applyRequest, after it counted the approvals of the exact content in the same transaction and
 * moved the request to applied), the scheduler (for a schedule) and the releases module (the
 * releaser, and abort, whose write rolls back that release's flag only) name one, and no route
 * takes one from a caller's body.
 */
async function appliesApproved(trx: Db, environmentId: string, origin: ChangeOrigin): Promise<boolean> {
  if (origin?.change_request_id) {
    const request = await trx.selectFrom('change_requests').select('status').where('id', '=', origin.change_request_id).where('environment_id', '=', environmentId).executeTakeFirst();
    return request?.status === 'applied';
  }
  if (origin?.schedule_id) {
    const schedule = await trx.selectFrom('schedules').select('change_request_id').where('id', '=', origin.schedule_id).where('environment_id', '=', environmentId).executeTakeFirst();
    return schedule !== undefined && schedule.change_request_id !== null;
  }
  if (origin?.release_id) {
    const release = await trx.selectFrom('releases').select('id').where('id', '=', origin.release_id).where('environment_id', '=', environmentId).executeTakeFirst();
    return release !== undefined;
  }
  return false;
}

/** A check of every write (app.ts): 409 for a direct change to an environment that needs approval. */
export async function refuseUnapprovedWrites(trx: Db, changes: readonly Change[], context: WriteContext): Promise<void> {
  const environmentIds = [...new Set(changes.filter((change) => REVIEWED_ACTIONS.has(change.action) && change.environment_id).map((change) => change.environment_id!))];
  if (environmentIds.length === 0) return;
  const reviewed = await trx.selectFrom('environments').select(['id', 'key']).where('id', 'in', environmentIds).where('approvals_required', '>', 0).execute();
  for (const environment of reviewed) {
    if (!(await appliesApproved(trx, environment.id, context.origin))) throw new Conflict(needsApprovalMessage(environment.key));
  }
}

/**
 * For writes that would rather make a change request than be refused (an import into the
 * environment): the key of the environment when direct writes to it are refused, else null.
 */
export async function reviewedEnvironmentKey(db: Db, environmentId: string): Promise<string | null> {
  const environment = await db.selectFrom('environments').select(['key', 'approvals_required']).where('id', '=', environmentId).executeTakeFirst();
  return environment && environment.approvals_required > 0 ? environment.key : null;
}

/** The flag whose state a change moves: a flag's own, a rule's flag (a new flag has no request built on it yet). */
function flagIdOf(change: Change): string | null {
  if (change.action === 'flag.created') return null;
  if (change.resource_type === 'flag') return change.resource_id;
  if (change.resource_type === 'rule') return ((change.after ?? change.before) as { flag_id: string }).flag_id;
  return null;
}

/** A consequence of every write (app.ts). */
export async function requestConsequences(trx: Db, changes: readonly Change[], context: WriteContext): Promise<Change[]> {
  const flagIds = [...new Set(changes.map(flagIdOf).filter((id): id is string => id !== null))];
  const consequences: Change[] = [];
  if (flagIds.length > 0) {
    await trx.updateTable('flags').set((eb) => ({ revision: eb('revision', '+', 1) })).where('id', 'in', flagIds).execute();
    // The request being applied is no longer pending: only the others are outdated.
    const touched = await trx
      .selectFrom('change_requests')
      .selectAll()
      .where('status', 'in', PENDING)
      .where('id', 'in', (eb) => eb.selectFrom('change_request_flags').select('change_request_id').where('flag_id', 'in', flagIds))
      .execute();
    consequences.push(...(await outdate(trx, touched)));
  }
  const newRequirement = changes.filter((change) => change.action === 'environment.updated' && (change.before as { approvals_required?: number }).approvals_required !== (change.after as { approvals_required?: number }).approvals_required);
  for (const change of newRequirement) {
    await settle(trx, await trx.selectFrom('change_requests').selectAll().where('environment_id', '=', change.resource_id).where('status', 'in', ['open', 'approved', 'scheduled']).execute());
  }
  // A member's approvals count only while they may approve (standingReviews): a removal or a new role settles the project's requests again.
  if (changes.some((change) => change.action === 'member.removed' || change.action === 'member.updated')) {
    await settle(trx, await trx.selectFrom('change_requests').selectAll().where('project_id', '=', context.projectId).where('status', 'in', ['open', 'approved', 'scheduled']).execute());
  }
  return consequences;
}
