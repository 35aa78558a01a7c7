import type { Selectable } from 'kysely';
import type { Db } from '../../db/database.js';
import { afterCursor, encodeCursor } from '../../db/cursors.js';
import type { ChangeRequestReviewsTable, ChangeRequestsTable } from '../../db/schema.js';
import { toIso } from '../../db/values.js';
import { NotFound } from '../../errors.js';
import { atLeast, lowerOf } from '../members/access.js';
import type { Actor, Approver } from '../changes/changes.schemas.js';
import type { RequestedChange } from './change-ops.js';
import type { ChangeRequestStatus } from './change-requests.schemas.js';

export type RequestRow = Selectable<ChangeRequestsTable>;
export type ReviewRow = Selectable<ChangeRequestReviewsTable>;

/** One entry of a request's diff: what one of its changes does to one resource. */
export interface DiffItem {
  change: number;
  op: string;
  resource_type: string;
  resource_id: string;
  resource_key: string | null;
  before: object | null;
  after: object | null;
}

const parsed = <T>(value: string | object) => (typeof value === 'string' ? JSON.parse(value) : value) as T;
const isoOrNull = (value: string | Date | null) => (value === null ? null : toIso(value));

export const authorOf = (row: RequestRow): Actor & { user_id: string; email: string } => ({ user_id: row.author_user_id, email: row.author_email, token_id: row.author_token_id });

/** The reviews that count: each reviewer's latest of the current version. */
export function currentReviews(row: Pick<RequestRow, 'version'>, reviews: readonly ReviewRow[]): ReviewRow[] {
  const latest = new Map<string, ReviewRow>();
  for (const review of reviews) if (review.version === row.version) latest.set(review.user_id, review); // oldest first: the last one wins
  return [...latest.values()];
}

/** The approvals of the current version that count: those whose reviewer still stands (standingReviews). */
export const approversOf = (row: Pick<RequestRow, 'version'>, reviews: readonly ReviewRow[], standing: ReadonlySet<string>): Approver[] =>
  currentReviews(row, reviews)
    .filter((review) => review.decision === 'approve' && standing.has(review.id))
    .map((review) => ({ user_id: review.user_id, email: review.email }));

/**
 * The ids of the reviews whose reviewer could still review (docs/change-management.md, Who may do
 * what): still a member of the project with at least the editor role, and, for a review given
 * through an API token, that token not revoked and with at least the editor role too (a token acts
 * as its user, with the lower of the two roles). An approval counts only while its reviewer
 * stands; a removed or demoted member's approval no longer lets the request apply.
 */
export async function standingReviews(db: Db, projectId: string, reviews: readonly ReviewRow[]): Promise<Set<string>> {
  if (reviews.length === 0) return new Set();
  const userIds = [...new Set(reviews.map((review) => review.user_id))];
  const tokenIds = [...new Set(reviews.map((review) => review.token_id).filter((id): id is string => id !== null))];
  const members = await db.selectFrom('project_members').select(['user_id', 'role']).where('project_id', '=', projectId).where('user_id', 'in', userIds).execute();
  const roleOf = new Map(members.map((member) => [member.user_id, member.role]));
  const tokens = tokenIds.length === 0 ? [] : await db.selectFrom('api_tokens').select(['id', 'user_id', 'project_id', 'role']).where('id', 'in', tokenIds).execute();
  const tokenOf = new Map(tokens.map((token) => [token.id, token]));
  const standing = new Set<string>();
  for (const review of reviews) {
    const member = roleOf.get(review.user_id);
    if (!member || !atLeast(member, 'editor')) continue;
    if (review.token_id !== null) {
      const token = tokenOf.get(review.token_id);
      if (!token || token.user_id !== review.user_id || (token.project_id !== null && token.project_id !== projectId) || !atLeast(lowerOf(member, token.role), 'editor')) continue;
    }
    standing.add(review.id);
  }
  return standing;
}

/** The approvals a request needs: its environment's setting, and always at least one besides its author. */
export const approvalsNeeded = (approvalsRequired: number) => Math.max(1, approvalsRequired);

/** The request as the API lists it (docs/change-management.md). */
export function toChangeRequest(row: RequestRow, reviews: readonly ReviewRow[], approvalsRequired: number, standing: ReadonlySet<string>) {
  return {
    id: row.id,
    project_id: row.project_id,
    environment_id: row.environment_id,
    title: row.title,
    description: row.description,
    changes: parsed<RequestedChange[]>(row.changes),
    apply_at: isoOrNull(row.apply_at),
    status: row.status as ChangeRequestStatus,
    version: row.version,
    author: authorOf(row),
    approvals_required: approvalsNeeded(approvalsRequired),
    approved_by: approversOf(row, reviews, standing),
    reviews: reviews.map((review) => ({
      id: review.id,
      user_id: review.user_id,
      email: review.email,
      token_id: review.token_id,
      decision: review.decision,
      comment: review.comment,
      version: review.version,
      created_at: toIso(review.created_at),
    })),
    error: row.error,
    created_at: toIso(row.created_at),
    updated_at: toIso(row.updated_at),
    applied_at: isoOrNull(row.applied_at),
  };
}
export type ChangeRequest = ReturnType<typeof toChangeRequest>;

export const diffOf = (row: RequestRow) => parsed<DiffItem[]>(row.diff);

export async function reviewsOf(db: Db, requestIds: readonly string[]): Promise<Map<string, ReviewRow[]>> {
  const byRequest = new Map<string, ReviewRow[]>(requestIds.map((id) => [id, []]));
  if (requestIds.length === 0) return byRequest;
  const rows = await db.selectFrom('change_request_reviews').selectAll().where('change_request_id', 'in', requestIds).orderBy('created_at').orderBy('id').execute();
  for (const row of rows) byRequest.get(row.change_request_id)!.push(row);
  return byRequest;
}

export async function approvalsRequiredOf(db: Db, environmentId: string): Promise<number> {
  const row = await db.selectFrom('environments').select('approvals_required').where('id', '=', environmentId).executeTakeFirst();
  return row?.approvals_required ?? 0;
}

export async function requireRequestRow(db: Db, scope: { projectId: string; requestId: string }): Promise<RequestRow> {
  const row = await db.selectFrom('change_requests').selectAll().where('id', '=', scope.requestId).where('project_id', '=', scope.projectId).executeTakeFirst();
  if (!row) throw new NotFound('Change request not found');
  return row;
}

/** The request as the API shows one, with its diff. */
export async function describeRequest(db: Db, row: RequestRow) {
  const reviews = (await reviewsOf(db, [row.id])).get(row.id)!;
  return { ...toChangeRequest(row, reviews, await approvalsRequiredOf(db, row.environment_id), await standingReviews(db, row.project_id, reviews)), diff: diffOf(row) };
}

export async function listChangeRequests(db: Db, projectId: string, query: { status?: ChangeRequestStatus | undefined; environment_id?: string | undefined; limit: number; cursor?: string | undefined }) {
  let select = db.selectFrom('change_requests').selectAll().where('project_id', '=', projectId);
  if (query.status) select = select.where('status', '=', query.status);
  if (query.environment_id) select = select.where('environment_id', '=', query.environment_id);
  if (query.cursor) select = select.where(afterCursor(query.cursor));
  const rows = await select.orderBy('created_at', 'desc').orderBy('id', 'desc').limit(query.limit + 1).execute();
  const page = rows.slice(0, query.limit);
  const reviews = await reviewsOf(db, page.map((row) => row.id));
  const environments = await db.selectFrom('environments').select(['id', 'approvals_required']).where('project_id', '=', projectId).execute();
  const requiredOf = new Map(environments.map((env) => [env.id, env.approvals_required]));
  const standing = await standingReviews(db, projectId, [...reviews.values()].flat());
  const items = page.map((row) => toChangeRequest(row, reviews.get(row.id)!, requiredOf.get(row.environment_id) ?? 0, standing));
  const last = items.at(-1);
  return { items, next_cursor: rows.length > query.limit && last ? encodeCursor(last.created_at, last.id) : null };
}

