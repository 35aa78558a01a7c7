import { memo, useCallback, useDeferredValue, useMemo, useState } from 'react';
import { Link, useParams } from 'react-router';
import type { Environment, ProjectFlag } from '../../api/client';
import { useEnvironments, useProjectFlags, } from '../../api/queries';
import { useSetEnabled } from '../../api/flags';
import { FlagSwitch } from '../../components/FlagSwitch';
import { Empty, ErrorState, Loading } from '../../components/States';
import { evaluatedAgo, isStale, plural } from '../../components/time';
import { CreateFlagDialog } from './CreateFlagDialog';
import { useRole } from '../../api/roles';
import { RoleNote } from '../../components/RoleNote';
import { FormError } from '../../components/FormError';

type Filter = 'all' | 'on' | 'off' | 'stale';

/** Rows rendered at a time: search covers every flag, the table shows the first matches. */
const PAGE = 50;

export const rowIsStale = (row: ProjectFlag, now = Date.now()) =>
  Object.values(row.environments).every((state) => isStale(state.updated_at, state.last_evaluated_at, now));

/** Search by key or name, then the on / off / stale filter. Kept pure so it can be measured. */
export function filterFlags(rows: ProjectFlag[], search: string, filter: Filter, now = Date.now()) {
  const needle = search.trim().toLowerCase();
  return rows.filter((row) => {
    if (needle && !row.key.includes(needle) && !row.name.toLowerCase().includes(needle)) return false;
    const states = Object.values(row.environments);
    if (filter === 'on') return states.some((state) => state.enabled);
    if (filter === 'off') return states.every((state) => !state.enabled);
    if (filter === 'stale') return rowIsStale(row, now);
    return true;
  });
}

export function FlagsPage() {
  const { projectId = '' } = useParams();
  const environments = useEnvironments(projectId);
  const flags = useProjectFlags(projectId);
  const [search, setSearch] = useState('');
  const [filter, setFilter] = useState<Filter>('all');
  const [creating, setCreating] = useState(false);
  const { can, reason } = useRole(projectId);
  const canEdit = can('editor');
  const deferredSearch = useDeferredValue(search);
  const rows = useMemo(() => filterFlags(flags.data ?? [], deferredSearch, filter), [flags.data, deferredSearch, filter]);
  const [shown, setShown] = useState(PAGE);
  const setEnabled = useSetEnabled(projectId);
  const toggle = useCallback((change: { envId: string; envKey: string; flagId: string; enabled: boolean }) => setEnabled.mutate(change), [setEnabled.mutate]);

  if (environments.isPending || flags.isPending) return <Loading what="flags" />;
  if (environments.error || flags.error) return <ErrorState error={environments.error ?? flags.error} retry={() => void Promise.all([environments.refetch(), flags.refetch()])} />;
  const envs = environments.data ?? [];
  const all = flags.data ?? [];

  return (
    <section>
      <div className="page-head">
        <h2>Flags</h2>
        <button type="button" onClick={() => setCreating(true)} disabled={envs.length === 0 || !canEdit} title={canEdit ? undefined : reason('editor')}>
          New flag
        </button>
      </div>
      {!canEdit && <RoleNote need="editor" what="switch, create or change flags" />}
      {canEdit && envs.some((env) => env.approvals_required > 0) && (
        <p className="notice" id="reviewed-note">
          {envs.filter((env) => env.approvals_required > 0).map((env) => env.name).join(', ')} take changes through approved change requests only: open a flag there to request a change.
        </p>
      )}
      {envs.length === 0 ? (
        <Empty title="No environments">
          <p>
            Flags live in environments. <Link to="environments">Add an environment</Link> first.
          </p>
        </Empty>
      ) : all.length === 0 ? (
        <Empty title="No flags yet">
          <p>Create a flag, switch it on in an environment, then call the evaluate endpoint from your app (see Connect an app).</p>
          {canEdit && (
            <button type="button" onClick={() => setCreating(true)}>
              Create your first flag
            </button>
          )}
        </Empty>
      ) : (
        <>
          <div className="toolbar">
            <div className="field search">
              <label htmlFor="flag-search">Search flags</label>
              <input id="flag-search" type="search" placeholder="Key or name" value={search} onChange={(event) => setSearch(event.target.value)} />
            </div>
            <fieldset className="segmented">
              <legend>Show</legend>
              {(['all', 'on', 'off', 'stale'] as const).map((value) => (
                <label key={value} className={filter === value ? 'selected' : ''}>
                  <input type="radio" name="flag-filter" value={value} checked={filter === value} onChange={() => setFilter(value)} />
                  {value === 'all' ? 'All' : value === 'on' ? 'On' : value === 'off' ? 'Off' : 'Stale'}
                </label>
              ))}
            </fieldset>
          </div>
          <FormError message={setEnabled.error && `Not switched, it is back as it was: ${setEnabled.error.message}`} />
          <p className="muted" role="status" aria-live="polite" data-testid="flag-count">
            {rows.length === all.length ? plural(all.length, 'flag') : `${rows.length} of ${plural(all.length, 'flag')}`}
          </p>
          <div className="table-wrap">
            <table className="flags">
              <thead>
                <tr>
                  <th scope="col">Flag</th>
                  {envs.map((env) => (
                    <th scope="col" key={env.id}>
                      {env.name}
                    </th>
                  ))}
                </tr>
              </thead>
              <tbody>
                {rows.slice(0, shown).map((row) => (
                  <FlagRow key={row.key} row={row} envs={envs} toggle={toggle} readOnly={!canEdit} />
                ))}
              </tbody>
            </table>
            {rows.length === 0 && <p className="state">No flag matches. Clear the search or the filter.</p>}
          </div>
          {rows.length > shown && (
            <div className="actions start">
              <button type="button" className="secondary" onClick={() => setShown(shown + PAGE)}>
                Show {Math.min(PAGE, rows.length - shown)} more ({rows.length - shown} not shown)
              </button>
            </div>
          )}
        </>
      )}
      {envs.length > 0 && <CreateFlagDialog projectId={projectId} environments={envs} open={creating} onOpenChange={setCreating} />}
    </section>
  );
}

type Toggle = (change: { envId: string; envKey: string; flagId: string; enabled: boolean }) => void;

const FlagRow = memo(function FlagRow({ row, envs, toggle, readOnly }: { row: ProjectFlag; envs: Environment[]; toggle: Toggle; readOnly: boolean }) {
  const lastEvaluated = Object.values(row.environments)
    .map((state) => state.last_evaluated_at)
    .filter((at): at is string => at !== null)
    .sort()
    .at(-1);
  return (
    <tr>
      <th scope="row">
        <span className="flag-key">{row.key}</span>
        {rowIsStale(row) && (
          <span className="badge stale" title="Neither changed nor evaluated for 30 days">
            stale
          </span>
        )}
        <span className="muted small">
          {row.name} · last evaluated {evaluatedAgo(lastEvaluated ?? null)}
        </span>
      </th>
      {envs.map((env) => {
        const state = row.environments[env.key];
        if (!state) {
          return (
            <td key={env.id} className="absent" data-env={env.name}>
              <span aria-label={`${row.key} is not in ${env.name}`}>—</span>
            </td>
          );
        }
        return (
          <td key={env.id} data-env={env.name}>
            <div className="cell">
              <FlagSwitch
                flagKey={row.key}
                environment={env.name}
                checked={state.enabled}
                disabled={readOnly || env.approvals_required > 0}
                reasonId={readOnly ? 'role-note-editor' : 'reviewed-note'}
                onChange={(enabled) => toggle({ envId: env.id, envKey: env.key, flagId: state.flag_id, enabled })}
              />
              <span className="rollout" title="Rollout">
                {state.rollout_percentage}%
              </span>
              <Link className="small" to={`flags/${env.id}/${state.flag_id}`} aria-label={`Open ${row.key} in ${env.name}`}>
                Open
              </Link>
            </div>
            {state.rules_count > 0 && <span className="muted small">{plural(state.rules_count, 'rule')}</span>}
            {state.variants.length > 0 && <span className="muted small block">{distribution(state.variants)}</span>}
            {state.prerequisites.length > 0 && <span className="muted small block">needs {state.prerequisites.map((p) => p.flag_key).join(', ')}</span>}
          </td>
        );
      })}
    </tr>
  );
});

/** At most this many variants are spelled out in a cell; the rest are counted. */
const SHOWN_VARIANTS = 3;

/** "buy 50 %, get 12.5 %, order 37.5 %": the weights of a flag's variants in its order (docs/variants.md). */
function distribution(variants: readonly { key: string; weight: number }[]): string {
  const shown = variants.slice(0, SHOWN_VARIANTS).map((variant) => `${variant.key} ${variant.weight / 10} %`);
  return variants.length > SHOWN_VARIANTS ? `${shown.join(', ')} and ${variants.length - SHOWN_VARIANTS} more` : shown.join(', ');
}
