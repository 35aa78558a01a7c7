import { useState, type FormEvent } from 'react';
import { Link, useParams } from 'react-router';
import type { ChangeRequest, RequestedChange } from '../../api/client';
import { useChangeRequestMutations } from '../../api/changeRequests';
import { useChangeRequest, useEnvironments, useMe } from '../../api/queries';
import { useRole } from '../../api/roles';
import { Field } from '../../components/Field';
import { Outcome } from '../../components/FormError';
import { QueryState } from '../../components/States';
import { dateTime } from '../../components/time';
import { Diff } from '../audit/AuditList';
import { statusBadge } from './ChangeRequestsPage';
import { describeChange } from './describe';

/** Still waiting for reviews or for its time: reviews count, and it can be cancelled. */
const PENDING = new Set<ChangeRequest['status']>(['open', 'approved', 'scheduled', 'rejected']);

/** One change request: what it changes (the diff), its reviews, and what the viewer may do with it. */
export function ChangeRequestPage() {
  const { projectId = '', crId = '' } = useParams();
  const request = useChangeRequest(projectId, crId);
  return (
    <QueryState query={request} what="the change request">
      {(data) => <RequestView projectId={projectId} request={data} />}
    </QueryState>
  );
}

function RequestView({ projectId, request }: { projectId: string; request: ChangeRequest }) {
  const environments = useEnvironments(projectId);
  const environment = environments.data?.find((env) => env.id === request.environment_id);
  const me = useMe();
  const { can } = useRole(projectId);
  const mine = me.data?.user_id === request.author.user_id;
  const { review, apply, cancel, refresh } = useChangeRequestMutations(projectId);
  const [outcome, setOutcome] = useState<{ ok: boolean; text: string } | null>(null);
  const [comment, setComment] = useState('');

  const act = async (run: () => Promise<unknown>, done: string, failure: string) => {
    setOutcome(null);
    try {
      await run();
      setOutcome({ ok: true, text: done });
    } catch (error) {
      setOutcome({ ok: false, text: `${failure}: ${(error as Error).message}` });
      void refresh(request.id);
    }
  };
  const decide = (decision: 'approve' | 'reject') => (event?: FormEvent) => {
    event?.preventDefault();
    void act(() => review.mutateAsync({ crId: request.id, decision, comment: comment.trim() || null }).then(() => setComment('')), decision === 'approve' ? 'Approved.' : 'Rejected.', 'Not reviewed');
  };

  const canReview = can('editor') && !mine && PENDING.has(request.status);
  const canApply = can('editor') && request.status === 'approved';
  const canCancel = (mine || can('owner')) && request.status !== 'applied' && request.status !== 'cancelled';
  const subjectOf = (index: number) => request.diff.find((item) => item.change === index)?.resource_key ?? 'a flag';

  return (
    <div className="stack">
      <nav aria-label="Breadcrumb" className="crumbs">
        <Link to={`/projects/${projectId}/change-requests`}>Change requests</Link> <span aria-hidden="true">/</span> <span>{request.title}</span>
      </nav>
      <section className="panel">
        <h2>
          {request.title} <span className={`badge ${statusBadge(request.status)}`}>{request.status}</span>
        </h2>
        <dl className="facts">
          <dt>Environment</dt>
          <dd>{environment?.name ?? request.environment_id}</dd>
          <dt>Asked by</dt>
          <dd>
            {request.author.email}
            {request.author.token_id ? ' (API token)' : ''}, {dateTime(request.created_at)}
          </dd>
          <dt>Approvals</dt>
          <dd>
            {request.approved_by.length} of {request.approvals_required}
            {request.approved_by.length > 0 && `: ${request.approved_by.map((person) => person.email).join(', ')}`}
          </dd>
          {request.apply_at && (
            <>
              <dt>Applies at</dt>
              <dd>{dateTime(request.apply_at)}</dd>
            </>
          )}
          {request.applied_at && (
            <>
              <dt>Applied</dt>
              <dd>{dateTime(request.applied_at)}</dd>
            </>
          )}
        </dl>
        {request.description && <p className="request-description">{request.description}</p>}
        {request.status === 'outdated' && <p className="notice">A flag it changes has changed since it was sent: its author sends it again (an edit), and it is reviewed again.</p>}
        {request.error && <p className="notice">Not applied, nothing changed: {request.error}</p>}
        <div className="actions start">
          {canApply && (
            <button type="button" onClick={() => void act(() => apply.mutateAsync(request.id), 'Applied.', 'Not applied')} disabled={apply.isPending}>
              Apply now
            </button>
          )}
          {canCancel && (
            <button type="button" className="secondary" onClick={() => void act(() => cancel.mutateAsync(request.id), 'Cancelled.', 'Not cancelled')} disabled={cancel.isPending}>
              Cancel request
            </button>
          )}
        </div>
        <Outcome message={outcome} />
      </section>

      <section className="panel" aria-labelledby="changes-heading">
        <h3 id="changes-heading">Changes</h3>
        <p className="muted small">{request.status === 'applied' ? 'What each change did.' : 'What each change would do, checked against the flags as they were when it was sent.'}</p>
        <ol className="audit" aria-label="Changes of this request">
          {(request.changes as RequestedChange[]).map((change, index) => (
            <li key={index} className="audit-event">
              <div className="audit-head">
                <code className="action">{change.op}</code>
                <strong className="audit-subject">{describeChange(change, subjectOf(index))}</strong>
              </div>
              {request.diff
                .filter((item) => item.change === index)
                .map((item) => (
                  <Diff key={`${item.resource_type}-${item.resource_id}`} event={{ action: item.op, before: item.before, after: item.after }} />
                ))}
            </li>
          ))}
        </ol>
      </section>

      <section className="panel" aria-labelledby="reviews-heading">
        <h3 id="reviews-heading">Reviews</h3>
        {request.reviews.length === 0 ? (
          <p className="state">No review yet.</p>
        ) : (
          <ol className="rows" aria-label="Reviews, oldest first">
            {request.reviews.map((item) => (
              <li key={item.id} className="row">
                <div>
                  <strong>{item.email}</strong> {item.decision === 'approve' ? 'approved' : 'rejected'}
                  {item.version !== request.version && <span className="muted"> an earlier version (it no longer counts)</span>}
                  <span className="muted small"> · {dateTime(item.created_at)}</span>
                  {item.comment && <p className="small">{item.comment}</p>}
                </div>
              </li>
            ))}
          </ol>
        )}
        {canReview && (
          <form onSubmit={decide('approve')} noValidate>
            <Field label="Comment (optional)" value={comment} onChange={setComment} multiline maxLength={2000} />
            <div className="actions start">
              <button type="submit" disabled={review.isPending}>
                Approve
              </button>
              <button type="button" className="danger" onClick={() => decide('reject')()} disabled={review.isPending}>
                Reject
              </button>
            </div>
          </form>
        )}
        {mine && PENDING.has(request.status) && <p className="muted small">You asked for these changes: another member reviews them.</p>}
      </section>
    </div>
  );
}
