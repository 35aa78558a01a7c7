import { useInfiniteQuery } from '@tanstack/react-query';
import { Link } from 'react-router';
import { api, unwrap, type AuditEvent, type ResourceType } from '../../api/client';
import { Empty, ErrorState, Loading } from '../../components/States';
import { dateTime } from '../../components/time';

export interface AuditFilters {
  resource_type?: ResourceType | undefined;
  resource_id?: string | undefined;
  actor_id?: string | undefined;
}

const PAGE = 25;

/** A project's audit events, newest first, a page at a time (the server's cursor). */
export function useAudit(projectId: string, filters: AuditFilters) {
  return useInfiniteQuery({
    queryKey: ['audit', projectId, filters],
    initialPageParam: undefined as string | undefined,
    queryFn: ({ pageParam }) =>
      unwrap(api.GET('/api/projects/{project_id}/audit', { params: { path: { project_id: projectId }, query: { ...clean(filters), limit: PAGE, ...(pageParam ? { cursor: pageParam } : {}) } } })),
    getNextPageParam: (page) => page.next_cursor ?? undefined,
  });
}

const clean = (filters: AuditFilters) => Object.fromEntries(Object.entries(filters).filter(([, value]) => value)) as AuditFilters;

/** Fields not worth showing in a diff: they change with every write or are ids. */
const HIDDEN = new Set(['updated_at', 'created_at', 'id', 'project_id', 'environment_id', 'flag_id', 'user_id']);

export interface FieldChange {
  field: string;
  before: unknown;
  after: unknown;
}

/** The fields an event changed: on update the ones that differ, on create/delete every field. */
export function changes(event: Pick<AuditEvent, 'before' | 'after'>): FieldChange[] {
  const before = event.before ?? {};
  const after = event.after ?? {};
  const fields = [...new Set([...Object.keys(before), ...Object.keys(after)])].filter((field) => !HIDDEN.has(field));
  return fields
    .map((field) => ({ field, before: event.before ? before[field] : undefined, after: event.after ? after[field] : undefined }))
    .filter((change) => JSON.stringify(change.before) !== JSON.stringify(change.after));
}

const show = (value: unknown) => (value === undefined ? '' : value === null ? 'none' : typeof value === 'string' ? value : JSON.stringify(value));

/** What the event is about, in words: the flag or environment key, else a member's email or a webhook's URL. */
function subject(event: AuditEvent): string | null {
  const object = event.after ?? event.before ?? {};
  const named = [event.resource_key, object.email, object.url].find((value) => typeof value === 'string' && value !== '');
  return (named as string | undefined) ?? null;
}

const actorName = (event: AuditEvent) => `${event.actor.email ?? 'a deleted user'}${event.actor.token_id ? ' (API token)' : ''}`;

export function AuditList({ projectId, filters, emptyText }: { projectId: string; filters: AuditFilters; emptyText: string }) {
  const audit = useAudit(projectId, filters);
  if (audit.isPending) return <Loading what="the audit log" />;
  if (audit.error) return <ErrorState error={audit.error} retry={() => void audit.refetch()} />;
  const events = audit.data.pages.flatMap((page) => page.items);
  if (events.length === 0) return <Empty title="Nothing recorded yet">{<p>{emptyText}</p>}</Empty>;
  return (
    <>
      <ol className="audit" aria-label="Changes, newest first">
        {events.map((event) => (
          <li key={event.id} className="audit-event">
            <div className="audit-head">
              <code className="action">{event.action}</code>
              {subject(event) && <strong className="audit-subject">{subject(event)}</strong>}
              <span className="muted small">
                by {actorName(event)} · <time dateTime={event.created_at}>{dateTime(event.created_at)}</time>
                {event.schedule_id && ' · scheduled'}
                {event.release_id && event.resource_type !== 'release' && ' · by a guarded release'}
                {event.change_request_id && event.resource_type !== 'change_request' && (
                  <>
                    {' · '}
                    <Link to={`/projects/${projectId}/change-requests/${event.change_request_id}`}>change request</Link>
                    {event.approvers?.length ? `, approved by ${event.approvers.map((approver) => approver.email).join(', ')}` : ''}
                  </>
                )}
              </span>
            </div>
            <Diff event={event} />
          </li>
        ))}
      </ol>
      {audit.hasNextPage && (
        <div className="actions start">
          <button type="button" className="secondary" onClick={() => void audit.fetchNextPage()} disabled={audit.isFetchingNextPage}>
            {audit.isFetchingNextPage ? 'Loading…' : 'Show older changes'}
          </button>
        </div>
      )}
    </>
  );
}

/** The fields a change changed, before and after (an audit event's, or a change request's foreseen change). */
export function Diff({ event }: { event: Pick<AuditEvent, 'before' | 'after'> & { action: string } }) {
  const list = changes(event);
  if (list.length === 0) return null;
  const verb = event.before === null ? 'Created with' : event.after === null ? 'Deleted, was' : null;
  return (
    <div className="diff">
      {verb && <p className="muted small">{verb}</p>}
      <table>
        <caption className="visually-hidden">Fields changed by {event.action}</caption>
        <thead className={verb ? 'visually-hidden' : undefined}>
          <tr>
            <th scope="col">Field</th>
            {event.before && <th scope="col">Before</th>}
            {event.after && <th scope="col">After</th>}
          </tr>
        </thead>
        <tbody>
          {list.map((change) => (
            <tr key={change.field}>
              <th scope="row">{change.field}</th>
              {event.before && (
                <td className="before">
                  <del>{show(change.before)}</del>
                </td>
              )}
              {event.after && (
                <td className="after">
                  <ins>{show(change.after)}</ins>
                </td>
              )}
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
