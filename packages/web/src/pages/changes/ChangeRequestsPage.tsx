import { Link, useParams, useSearchParams } from 'react-router';
import type { ChangeRequestItem, ChangeRequestStatus, Environment } from '../../api/client';
import { useChangeRequests, useEnvironments } from '../../api/queries';
import { Empty, QueryState } from '../../components/States';
import { ago, plural } from '../../components/time';
import { DraftPanel } from './DraftPanel';

/** The filters of the list: the states people look for, and all. */
const FILTERS: { value: ChangeRequestStatus | 'all'; label: string }[] = [
  { value: 'open', label: 'Open' },
  { value: 'approved', label: 'Approved' },
  { value: 'scheduled', label: 'Scheduled' },
  { value: 'applied', label: 'Applied' },
  { value: 'rejected', label: 'Rejected' },
  { value: 'outdated', label: 'Outdated' },
  { value: 'all', label: 'All' },
];

export const statusBadge = (status: ChangeRequestStatus) => (status === 'applied' || status === 'approved' ? 'ok' : status === 'rejected' || status === 'failed' || status === 'outdated' ? 'failed' : 'role');

/** A project's change requests (docs/change-management.md): the drafts of this browser, then the requests by state. */
export function ChangeRequestsPage() {
  const { projectId = '' } = useParams();
  const [params, setParams] = useSearchParams();
  const filter = (params.get('status') ?? 'open') as ChangeRequestStatus | 'all';
  const environments = useEnvironments(projectId);
  const requests = useChangeRequests(projectId, filter === 'all' ? undefined : filter);
  const envName = (id: string) => environments.data?.find((env) => env.id === id)?.name ?? 'an environment';

  return (
    <div className="stack">
      <section className="panel">
        <h2>Change requests</h2>
        <p className="muted">
          In an environment that needs approval, changes are requested here and applied once other members approve them. Owners set how many approvals each environment needs on the{' '}
          <Link to={`/projects/${projectId}/environments`}>Environments</Link> page.
        </p>
        <QueryState query={environments} what="environments">
          {(list) => <ReviewedEnvironments environments={list} />}
        </QueryState>
      </section>
      {(environments.data ?? []).map((env) => (
        <DraftPanel key={env.id} projectId={projectId} environment={env} headingLevel={2} />
      ))}
      <section className="panel" aria-labelledby="requests-heading">
        <h2 id="requests-heading">Requests</h2>
        <div className="toolbar">
          <div className="field">
            <label htmlFor="request-filter">Show</label>
            <select id="request-filter" value={filter} onChange={(event) => setParams(event.target.value === 'open' ? {} : { status: event.target.value }, { replace: true })}>
              {FILTERS.map(({ value, label }) => (
                <option key={value} value={value}>
                  {label}
                </option>
              ))}
            </select>
          </div>
        </div>
        <QueryState query={requests} what="change requests">
          {(page) =>
            page.items.length === 0 ? (
              <Empty title={filter === 'all' ? 'No change requests yet' : `No ${filter} change requests`}>
                <p>Edits to a flag in an environment that needs approval collect in a draft; send it with Request changes.</p>
              </Empty>
            ) : (
              <ul className="rows" aria-label="Change requests, newest first">
                {page.items.map((request) => (
                  <RequestRow key={request.id} projectId={projectId} request={request} environment={envName(request.environment_id)} />
                ))}
              </ul>
            )
          }
        </QueryState>
      </section>
    </div>
  );
}

function ReviewedEnvironments({ environments }: { environments: Environment[] }) {
  const reviewed = environments.filter((env) => env.approvals_required > 0);
  if (reviewed.length === 0) return <p className="small">No environment needs approval yet: changes apply directly everywhere.</p>;
  return (
    <p className="small">
      Needing approval:{' '}
      {reviewed.map((env, i) => (
        <span key={env.id}>
          {i > 0 && ', '}
          <strong>{env.name}</strong> ({plural(env.approvals_required, 'approval')})
        </span>
      ))}
      .
    </p>
  );
}

function RequestRow({ projectId, request, environment }: { projectId: string; request: ChangeRequestItem; environment: string }) {
  return (
    <li className="row">
      <div>
        <Link to={`/projects/${projectId}/change-requests/${request.id}`}>{request.title}</Link>
        <span className={`badge ${statusBadge(request.status)}`}>{request.status}</span>
        <p className="muted small">
          {environment} · {plural(request.changes.length, 'change')} · by {request.author.email} {ago(request.created_at)} · {request.approved_by.length} of {request.approvals_required} approvals
        </p>
      </div>
    </li>
  );
}
