import { useState, type FormEvent } from 'react';
import { keepPreviousData, useQuery } from '@tanstack/react-query';
import { useParams } from 'react-router';
import { api, unwrap } from '../../api/client';
import { envParams, useEnvironments } from '../../api/queries';
import { Field } from '../../components/Field';
import { Empty, ErrorState, Loading } from '../../components/States';
import { dateTime } from '../../components/time';

const PAGE_SIZE = 25;

/** Evaluation history of one environment, newest first, filtered by flag and user, in pages. */
export default function UsagePage() {
  const { projectId = '' } = useParams();
  const environments = useEnvironments(projectId);
  const [envId, setEnvId] = useState('');
  const [flagKey, setFlagKey] = useState('');
  const [userId, setUserId] = useState('');
  const [filters, setFilters] = useState({ flagKey: '', userId: '' });
  // Cursors of the pages seen so far: the last one is the page shown.
  const [cursors, setCursors] = useState<(string | undefined)[]>([undefined]);
  const chosenEnv = envId || environments.data?.[0]?.id || '';
  const cursor = cursors.at(-1);

  const history = useQuery({
    queryKey: ['evaluations', projectId, chosenEnv, filters, cursor],
    enabled: chosenEnv !== '',
    placeholderData: keepPreviousData,
    queryFn: () =>
      unwrap(
        api.GET('/api/projects/{project_id}/environments/{env_id}/evaluations', {
          params: {
            path: envParams(projectId, chosenEnv).params.path,
            query: { limit: PAGE_SIZE, ...(filters.flagKey && { flag_key: filters.flagKey }), ...(filters.userId && { user_id: filters.userId }), ...(cursor && { cursor }) },
          },
        }),
      ),
  });

  // Rows of a flag with variants record the variant (docs/variants.md): a column only when a row has one.
  const items = history.data?.items ?? [];
  const showVariant = items.some((item) => item.variant != null);

  if (environments.isPending) return <Loading what="environments" />;
  if (environments.error) return <ErrorState error={environments.error} retry={() => void environments.refetch()} />;

  const apply = (event: FormEvent) => {
    event.preventDefault();
    const next = { flagKey: flagKey.trim(), userId: userId.trim() };
    // The same filters again: fetch the newest evaluations anyway.
    if (next.flagKey === filters.flagKey && next.userId === filters.userId && cursors.length === 1) void history.refetch();
    setFilters(next);
    setCursors([undefined]);
  };

  return (
    <div className="stack">
      <section className="panel">
        <h2>Evaluation history</h2>
        <form onSubmit={apply} noValidate className="inline-form">
          <div className="field">
            <label htmlFor="history-env">Environment</label>
            <select
              id="history-env"
              value={chosenEnv}
              onChange={(event) => {
                setEnvId(event.target.value);
                setCursors([undefined]);
              }}
            >
              {(environments.data ?? []).map((env) => (
                <option key={env.id} value={env.id}>
                  {env.name}
                </option>
              ))}
            </select>
          </div>
          <Field label="Flag key" value={flagKey} onChange={setFlagKey} placeholder="new_checkout" maxLength={100} />
          <Field label="User id" value={userId} onChange={setUserId} placeholder="user-42" maxLength={1024} />
          <div className="actions start">
            <button type="submit">Filter</button>
          </div>
        </form>
      </section>
      <section className="panel">
        {history.isPending ? (
          <Loading what="history" />
        ) : history.error ? (
          <ErrorState error={history.error} retry={() => void history.refetch()} />
        ) : history.data.items.length === 0 ? (
          <Empty title="No evaluations">
            <p>{filters.flagKey || filters.userId ? 'Nothing matches these filters.' : 'When an app (or Try it) evaluates flags in this environment, each answer shows up here.'}</p>
          </Empty>
        ) : (
          <>
            <div className="table-wrap">
              <table className="list">
                <caption className="visually-hidden">Evaluations, newest first</caption>
                <thead>
                  <tr>
                    <th scope="col">When</th>
                    <th scope="col">Flag</th>
                    <th scope="col">User</th>
                    <th scope="col">Enabled</th>
                    {showVariant && <th scope="col">Variant</th>}
                    <th scope="col">Reason</th>
                  </tr>
                </thead>
                <tbody>
                  {items.map((item) => (
                    <tr key={item.id}>
                      <th scope="row">{dateTime(item.evaluated_at)}</th>
                      <td data-label="Flag">
                        <code>{item.flag_key}</code>
                      </td>
                      <td data-label="User">{item.user_id ?? <span className="muted">anonymous</span>}</td>
                      <td data-label="Enabled">
                        <span className={`badge ${item.enabled ? 'on' : 'off'}`}>{item.enabled ? 'On' : 'Off'}</span>
                      </td>
                      {showVariant && <td data-label="Variant">{item.variant ? <code>{item.variant}</code> : <span className="muted">none</span>}</td>}
                      <td data-label="Reason">{item.reason}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
            <nav className="pager" aria-label="History pages">
              <button type="button" className="secondary" disabled={cursors.length === 1} onClick={() => setCursors(cursors.slice(0, -1))}>
                Newer
              </button>
              <span className="muted">Page {cursors.length}</span>
              <button type="button" className="secondary" disabled={!history.data.next_cursor} onClick={() => setCursors([...cursors, history.data.next_cursor ?? undefined])}>
                Older
              </button>
            </nav>
          </>
        )}
      </section>
    </div>
  );
}
