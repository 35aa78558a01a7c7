/**
 * Change requests (docs/change-management.md): changes to one environment collected, reviewed
 * by others, and applied all at once. Each write here runs inside ProjectWrites.apply.
 *
 * The content (changes, apply_at) has a version; an approval counts for the version it saw, so
 * any edit of the content withdraws every approval. The request records the revision of each
 * flag it builds on; a change to one of them by anything else outdates it (approvals.ts).
 */
import type { Db } from '../../db/database.js';
import { rolledBack } from '../../db/dry-run.js';
import { newId, nowIso, onlyProvided } from '../../db/values.js';
import { AlreadySettled, AppError, Conflict, Forbidden, Invalid, Unavailable } from '../../errors.js';
import type { Actor, Approver, Change, ChangeOrigin } from '../changes/changes.schemas.js';
import type { ProjectWrites, RecordChange } from '../changes/project-writes.js';
import { requireEnvironment, type EnvironmentScope } from '../environments/environments.repository.js';
import type { Role } from '../../db/schema.js';
import { checkedAt } from '../schedules/schedule-writes.js';
import { atLeast } from '../members/access.js';
import { findMemberRole } from '../members/members.repository.js';
import { flagOf, runChange, type OpContext, type RequestedChange } from './change-ops.js';
import {
  approvalsNeeded,
  approvalsRequiredOf,
  authorOf,
  currentReviews,
  describeRequest,
  diffOf,
  requireRequestRow,
  reviewsOf,
  standingReviews,
  toChangeRequest,
  type ChangeRequest,
  type DiffItem,
  type RequestRow,
} from './change-requests.repository.js';
import type { ChangeRequestStatus } from './change-requests.schemas.js';

type Scope = { projectId: string; requestId: string };

/** Waiting for reviews or for their time: what reviews settle, and what a change to a touched flag outdates. */
export const PENDING: ChangeRequestStatus[] = ['open', 'approved', 'scheduled', 'rejected'];

/** The audit record of a change to a request: the request without its diff (its changes' own events describe them). */
function requestChange(action: Change['action'], before: ChangeRequest | null, after: ChangeRequest | null): Change {
  const request = (after ?? before)!;
  return { action, resource_type: 'change_request', resource_id: request.id, resource_key: null, environment_id: request.environment_id, before, after };
}

async function described(trx: Db, row: RequestRow): Promise<ChangeRequest> {
  const { diff: _diff, ...request } = await describeRequest(trx, row);
  return request;
}

/** A change of a request that its direct write refused: named by its index. */
export class ChangeRefused extends Invalid {
  constructor(index: number, op: string, cause: AppError) {
    super(`changes[${index}] (${op}): ${cause.message}`);
  }
}

/** Runs the changes in order, as one write; returns what each did, or throws ChangeRefused for the first refused. */
async function runAll(trx: Db, record: RecordChange, context: OpContext, changes: readonly RequestedChange[]): Promise<DiffItem[]> {
  const diff: DiffItem[] = [];
  for (const [index, change] of changes.entries()) {
    const recorded: Change[] = [];
    try {
      await runChange(trx, (item) => {
        recorded.push(item);
        record(item);
      }, context, change);
    } catch (error) {
      if (error instanceof AppError && !(error instanceof Unavailable)) throw new ChangeRefused(index, change.op, error);
      throw error;
    }
    for (const item of recorded) diff.push({ change: index, op: change.op, resource_type: item.resource_type, resource_id: item.resource_id, resource_key: item.resource_key ?? null, before: item.before, after: item.after });
  }
  return diff;
}

/**
 * The content checked as its direct writes would check it now, by running them and rolling them
 * back: the diff they would make, and the revisions of the flags they build on.
 */
async function foresee(trx: Db, context: OpContext, changes: readonly RequestedChange[]) {
  const flagIds = [...new Set(changes.map(flagOf).filter((id): id is string => id !== null))];
  const revisions = flagIds.length === 0 ? [] : await trx.selectFrom('flags').select(['id', 'revision']).where('id', 'in', flagIds).where('environment_id', '=', context.env.envId).execute();
  const diff = await rolledBack(trx, () => runAll(trx, () => undefined, context, changes));
  return { diff, revisions };
}

/** Records the flags the request now builds on, each at its revision (replacing the earlier base). */
async function rebase(trx: Db, requestId: string, revisions: readonly { id: string; revision: number }[]): Promise<void> {
  await trx.deleteFrom('change_request_flags').where('change_request_id', '=', requestId).execute();
  if (revisions.length > 0) await trx.insertInto('change_request_flags').values(revisions.map((flag) => ({ change_request_id: requestId, flag_id: flag.id, revision: flag.revision }))).execute();
}

const applyAtOf = (applyAt: string | null | undefined) => (applyAt ? checkedAt(applyAt) : null);

export interface RequestContent {
  title: string;
  description?: string | null | undefined;
  changes: RequestedChange[];
  apply_at?: string | null | undefined;
}

export async function createRequestWrite(trx: Db, record: RecordChange, scope: EnvironmentScope, body: RequestContent, author: Actor) {
  const environment = await requireEnvironment(trx, scope);
  const id = newId();
  const apply_at = applyAtOf(body.apply_at);
  const { diff, revisions } = await foresee(trx, { env: scope, author, changeRequestId: id }, body.changes);
  const now = nowIso();
  const row = {
    id,
    project_id: environment.project_id,
    environment_id: environment.id,
    title: body.title,
    description: body.description ?? null,
    changes: JSON.stringify(body.changes),
    apply_at,
    status: 'open',
    version: 1,
    author_user_id: author.user_id!,
    author_email: author.email!,
    author_token_id: author.token_id,
    diff: JSON.stringify(diff),
    error: null,
    claimed_until: null,
    created_at: now,
    updated_at: now,
    applied_at: null,
  };
  await trx.insertInto('change_requests').values(row).execute();
  await rebase(trx, id, revisions);
  const request = toChangeRequest(row, [], environment.approvals_required, new Set());
  record(requestChange('change_request.created', null, request));
  return { ...request, diff };
}

/**
 * Its author edits it. New content (changes or apply_at sent) is checked again, re-based on the
 * flags as they are, and is a new version: every approval is withdrawn and it is open again
 * (also after it was rejected, outdated or failed). A new title or description alone keeps them.
 */
export async function updateRequestWrite(trx: Db, record: RecordChange, scope: Scope, body: Partial<RequestContent>, caller: Actor) {
  const row = await requireRequestRow(trx, scope);
  if (row.author_user_id !== caller.user_id) throw new Forbidden('Only its author may edit a change request');
  if (row.status === 'applied' || row.status === 'cancelled') throw new Conflict(`This change request is ${row.status}: it can no longer be edited`);
  const before = await described(trx, row);
  let content = {};
  if (body.changes !== undefined || body.apply_at !== undefined) {
    const changes = body.changes ?? before.changes;
    const { diff, revisions } = await foresee(trx, { env: { projectId: row.project_id, envId: row.environment_id }, author: authorOf(row), changeRequestId: row.id }, changes);
    await rebase(trx, row.id, revisions);
    const apply_at = body.apply_at !== undefined ? applyAtOf(body.apply_at) : before.apply_at;
    content = { changes: JSON.stringify(changes), apply_at, diff: JSON.stringify(diff), version: row.version + 1, status: 'open', error: null };
  }
  const updated = await trx
    .updateTable('change_requests')
    .set({ ...onlyProvided({ title: body.title, description: body.description }), ...content, updated_at: nowIso() })
    .where('id', '=', row.id)
    .returningAll()
    .executeTakeFirstOrThrow();
  const after = await described(trx, updated);
  record(requestChange('change_request.updated', before, after));
  return { ...after, diff: diffOf(updated) };
}

/**
 * What the reviews of its current content make of a pending request. An approval counts while its
 * reviewer stands (standingReviews); a rejection counts whoever gave it: it never lets anything
 * apply, and an edit of the content opens the request again.
 */
async function settledStatus(trx: Db, row: RequestRow): Promise<ChangeRequestStatus> {
  const reviews = (await reviewsOf(trx, [row.id])).get(row.id)!;
  const current = currentReviews(row, reviews);
  if (current.some((review) => review.decision === 'reject')) return 'rejected';
  const standing = await standingReviews(trx, row.project_id, current);
  const approvals = current.filter((review) => review.decision === 'approve' && standing.has(review.id)).length;
  if (approvals >= approvalsNeeded(await approvalsRequiredOf(trx, row.environment_id))) return row.apply_at === null ? 'approved' : 'scheduled';
  return 'open';
}

/** Sets each pending request's status to what its reviews make of it (after a review, a new approvals_required, a member removed or demoted, a token revoked). */
export async function settle(trx: Db, rows: readonly RequestRow[]): Promise<void> {
  for (const row of rows) {
    const status = await settledStatus(trx, row);
    if (status !== row.status) await trx.updateTable('change_requests').set({ status }).where('id', '=', row.id).execute();
  }
}

/** After an API token's revocation: the pending requests it reviewed are settled again, in their projects (its approvals no longer count). */
export async function settleReviewedWith(writes: ProjectWrites, db: Db, actor: Actor, tokenId: string): Promise<void> {
  const reviewed = await db
    .selectFrom('change_requests')
    .select(['id', 'project_id'])
    .where('status', 'in', ['open', 'approved', 'scheduled'])
    .where('id', 'in', (eb) => eb.selectFrom('change_request_reviews').select('change_request_id').where('token_id', '=', tokenId))
    .execute();
  for (const projectId of new Set(reviewed.map((row) => row.project_id))) {
    const ids = reviewed.filter((row) => row.project_id === projectId).map((row) => row.id);
    await writes.apply(actor, projectId, async (trx) => settle(trx, await trx.selectFrom('change_requests').selectAll().where('id', 'in', ids).where('status', 'in', ['open', 'approved', 'scheduled']).execute()));
  }
}

/** Another member (never its author, whatever the credential: a token acts as its user) approves or rejects its current content. */
export async function reviewWrite(trx: Db, record: RecordChange, scope: Scope, body: { decision: 'approve' | 'reject'; comment?: string | null | undefined }, reviewer: Actor) {
  const row = await requireRequestRow(trx, scope);
  if (reviewer.user_id === row.author_user_id) throw new Forbidden('You cannot review your own change request: another member must');
  if (row.status === 'outdated') throw new Conflict('This change request is outdated: a flag it changes has changed since; its author updates it first');
  if (!PENDING.includes(row.status as ChangeRequestStatus)) throw new Conflict(`This change request is ${row.status}: it can no longer be reviewed`);
  const before = await described(trx, row);
  await trx
    .insertInto('change_request_reviews')
    .values({ id: newId(), change_request_id: row.id, version: row.version, user_id: reviewer.user_id!, email: reviewer.email!, token_id: reviewer.token_id, decision: body.decision, comment: body.comment ?? null, created_at: nowIso() })
    .execute();
  await settle(trx, [row]);
  const updated = await requireRequestRow(trx, scope);
  const after = await described(trx, updated);
  record(requestChange('change_request.reviewed', before, after));
  if (after.status === 'rejected' && before.status !== 'rejected') record(requestChange('change_request.rejected', before, after));
  return { ...after, diff: diffOf(updated) };
}

export async function cancelRequestWrite(trx: Db, record: RecordChange, scope: Scope, caller: Actor, callerRole: Role | null) {
  const row = await requireRequestRow(trx, scope);
  if (row.author_user_id !== caller.user_id && callerRole !== 'owner') throw new Forbidden('Only its author or an owner may cancel a change request');
  if (row.status === 'applied' || row.status === 'cancelled') throw new Conflict(`This change request is ${row.status}`);
  const before = await described(trx, row);
  const updated = await trx.updateTable('change_requests').set({ status: 'cancelled', updated_at: nowIso() }).where('id', '=', row.id).returningAll().executeTakeFirstOrThrow();
  const after = await described(trx, updated);
  record(requestChange('change_request.cancelled', before, after));
  return { ...after, diff: diffOf(updated) };
}

/** The requests outdated (a flag they build on changed): their approvals are void until the author updates them. */
export async function outdate(trx: Db, rows: readonly RequestRow[]): Promise<Change[]> {
  if (rows.length === 0) return [];
  const before = await Promise.all(rows.map((row) => described(trx, row)));
  const updated = await trx.updateTable('change_requests').set({ status: 'outdated', updated_at: nowIso() }).where('id', 'in', rows.map((row) => row.id)).returningAll().execute();
  const after = new Map((await Promise.all(updated.map((row) => described(trx, row)))).map((request) => [request.id, request]));
  return before.map((request) => requestChange('change_request.outdated', request, after.get(request.id)!));
}

class Outdated extends Error {}
/** Approved, but by reviewers of whom too many no longer stand: open again, not applied. */
class ApprovalsLapsed extends Error {}
/** Something besides its changes makes it inapplicable for good (its author gone, for a scheduled one): failed. */
class NotApplicable extends Error {}

/**
 * Applies an approved request (a scheduled one, from the scheduler): in ONE transaction, through
 * the one write path, every change as its direct write, or none. Its content's approvals are
 * counted again inside the transaction, each only while its reviewer stands (a member who may still
 * approve it), and the flags it builds on must be at the revisions it recorded. A scheduled one
 * acts for its author, who must still be an editor of the project. Each event carries
 * change_request_id and the approvers. A change that its direct write now refuses fails the
 * request (status failed, with the reason) and changes nothing else.
 */
export async function applyRequest(writes: ProjectWrites, db: Db, scope: Scope, actor: Actor, from: 'approved' | 'scheduled'): Promise<ChangeRequest & { diff: DiffItem[] }> {
  const row = await requireRequestRow(db, scope);
  // The approvers are read in the transaction (below) before any event is recorded.
  const origin: ChangeOrigin & { approvers: Approver[] } = { change_request_id: row.id, approvers: [] };
  const context: OpContext = { env: { projectId: row.project_id, envId: row.environment_id }, author: authorOf(row), changeRequestId: row.id };
  let lapsed = null as { needed: number; counted: number; voided: string[] } | null;
  try {
    return await writes.apply(actor, row.project_id, async (trx, record) => {
      // From `from` to applied, once (a refusal below rolls it back): what the approval check reads.
      const taken = await trx.updateTable('change_requests').set({ status: 'applied' }).where('id', '=', row.id).where('status', '=', from).where('version', '=', row.version).returningAll().executeTakeFirst();
      if (!taken) throw new AlreadySettled();
      const reviews = (await reviewsOf(trx, [row.id])).get(row.id)!;
      const current = currentReviews(taken, reviews);
      const required = await approvalsRequiredOf(trx, row.environment_id);
      const standing = await standingReviews(trx, row.project_id, reviews);
      const approvals = current.filter((review) => review.decision === 'approve');
      origin.approvers = approvals.filter((review) => standing.has(review.id)).map((review) => ({ user_id: review.user_id, email: review.email }));
      if (current.some((review) => review.decision === 'reject')) throw new AlreadySettled();
      if (origin.approvers.length < approvalsNeeded(required)) {
        if (approvals.length < approvalsNeeded(required)) throw new AlreadySettled();
        lapsed = { needed: approvalsNeeded(required), counted: origin.approvers.length, voided: approvals.filter((review) => !standing.has(review.id)).map((review) => review.email) };
        throw new ApprovalsLapsed();
      }
      if (from === 'scheduled') {
        // It acts for its author, as a schedule for its creator: not once they may no longer change flags here.
        const role = await findMemberRole(trx, row.project_id, row.author_user_id);
        if (!role || !atLeast(role, 'editor')) throw new NotApplicable(`its author (${row.author_email}) is no longer an editor of the project`);
      }
      const moved = await trx
        .selectFrom('change_request_flags')
        .leftJoin('flags', 'flags.id', 'change_request_flags.flag_id')
        .select('change_request_flags.flag_id')
        .where('change_request_flags.change_request_id', '=', row.id)
        .where((eb) => eb.or([eb('flags.revision', 'is', null), eb('flags.revision', '!=', eb.ref('change_request_flags.revision'))]))
        .execute();
      if (moved.length > 0) throw new Outdated();
      const diff = await runAll(trx, record, context, toChangeRequest(taken, reviews, required, standing).changes);
      const applied = await trx
        .updateTable('change_requests')
        .set({ applied_at: nowIso(), updated_at: nowIso(), diff: JSON.stringify(diff), claimed_until: null })
        .where('id', '=', row.id)
        .returningAll()
        .executeTakeFirstOrThrow();
      const after = toChangeRequest(applied, reviews, required, standing);
      record(requestChange('change_request.applied', toChangeRequest(row, reviews, required, standing), after));
      return { ...after, diff };
    }, origin);
  } catch (error) {
    if (error instanceof ChangeRefused || error instanceof NotApplicable) {
      await settleAs(writes, row, actor, from, 'failed', error.message);
      throw new Conflict(`Not applied, nothing changed; the request failed: ${error.message}`);
    }
    if (error instanceof Outdated) {
      await settleAs(writes, row, actor, from, 'outdated', null);
      throw new Conflict('Not applied: a flag it changes has changed since it was approved; its author updates it');
    }
    if (error instanceof ApprovalsLapsed && lapsed) {
      const { needed, counted, voided } = lapsed;
      await writes.apply(actor, row.project_id, async (trx) => settle(trx, await trx.selectFrom('change_requests').selectAll().where('id', '=', row.id).where('status', '=', from).execute()), { change_request_id: row.id });
      throw new Conflict(`Not applied, nothing changed: it needs ${needed} approval(s) of its current content from editors of the project other than its author, and has ${counted}; the approval(s) of ${voided.join(', ')} no longer count (no longer an editor of the project, or approved with a token since revoked). It is open for review again`);
    }
    throw error;
  }
}

/** After a refused apply: the request failed (with why) or is outdated, if still as it was. */
async function settleAs(writes: ProjectWrites, row: RequestRow, actor: Actor, from: ChangeRequestStatus, status: 'failed' | 'outdated', error: string | null): Promise<void> {
  await writes.apply(actor, row.project_id, async (trx, record) => {
    const current = await trx.selectFrom('change_requests').selectAll().where('id', '=', row.id).where('status', '=', from).executeTakeFirst();
    if (!current) return;
    if (status === 'outdated') {
      for (const change of await outdate(trx, [current])) record(change);
      return;
    }
    const before = await described(trx, current);
    const updated = await trx.updateTable('change_requests').set({ status, error, updated_at: nowIso(), claimed_until: null }).where('id', '=', row.id).returningAll().executeTakeFirstOrThrow();
    record(requestChange('change_request.failed', before, await described(trx, updated)));
  }, { change_request_id: row.id });
}

/** A scheduled request whose time passed while no instance ran, more than a day ago: failed, not applied late. */
export async function failMissedRequest(writes: ProjectWrites, row: RequestRow, reason: string): Promise<void> {
  await settleAs(writes, row, authorOf(row), 'scheduled', 'failed', reason);
}
