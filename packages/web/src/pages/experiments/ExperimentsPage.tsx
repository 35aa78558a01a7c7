import { useState, type FormEvent } from 'react';
import { Link, useParams, useSearchParams } from 'react-router';
import type { Environment, ProjectFlag } from '../../api/client';
import { useExperimentMutations, useExperiments, useMetrics, type Experiment, type ExperimentBody, type MetricRole } from '../../api/experiments';
import { useEnvironments, useProjectFlags } from '../../api/queries';
import { useRole } from '../../api/roles';
import { ConfirmDialog } from '../../components/ConfirmDialog';
import { DialogActions } from '../../components/DialogActions';
import { Field } from '../../components/Field';
import { FormError, Outcome } from '../../components/FormError';
import { Modal } from '../../components/Modal';
import { RoleNote } from '../../components/RoleNote';
import { Empty, ErrorState, Loading, QueryState } from '../../components/States';
import { useDialogSave } from '../../components/useDialogSave';
import { ago, dateTime } from '../../components/time';

export const STATUS_LABELS: Record<Experiment['status'], string> = { draft: 'Draft', running: 'Running', stopped: 'Stopped' };
export const statusClass = (status: Experiment['status']) => (status === 'running' ? 'badge on' : status === 'stopped' ? 'badge off' : 'badge role');

/** A flag's arms in an environment (docs/experiments.md): its variant keys, or on and off for a flag without variants. */
export const armsOf = (state: ProjectFlag['environments'][string] | undefined) => (state && state.variants.length > 0 ? state.variants.map((variant) => variant.key) : ['on', 'off']);

/** The environment the page shows: `?env=<key>` (kept in the address, so a link or a reload shows the same one), else the first. */
export function useChosenEnvironment(environments: Environment[] | undefined) {
  const [params, setParams] = useSearchParams();
  const chosen = environments?.find((env) => env.key === params.get('env')) ?? environments?.[0];
  const choose = (key: string) => setParams((previous) => ({ ...Object.fromEntries(previous), env: key }), { replace: true });
  return { chosen, choose };
}

/** An environment's experiments: each asks of one flag whether an arm changed what units do. */
export function ExperimentsPage() {
  const { projectId = '' } = useParams();
  const environments = useEnvironments(projectId);
  const { chosen, choose } = useChosenEnvironment(environments.data);
  const envId = chosen?.id ?? '';
  const experiments = useExperiments(projectId, envId);
  const { can } = useRole(projectId);
  const canEdit = can('editor');
  const [creating, setCreating] = useState(false);

  if (environments.isPending) return <Loading what="environments" />;
  if (environments.error) return <ErrorState error={environments.error} retry={() => void environments.refetch()} />;
  if (!chosen)
    return (
      <Empty title="No environments" level={2}>
        <p>
          Experiments run in an environment. <Link to="../environments">Add an environment</Link> first.
        </p>
      </Empty>
    );

  return (
    <div className="stack">
      <div className="page-head">
        <h2>Experiments</h2>
        {canEdit && (
          <button type="button" onClick={() => setCreating(true)}>
            New experiment
          </button>
        )}
      </div>
      <p className="muted">
        An experiment compares the arms of one flag (its variants, or on and off) on the <Link to="../metrics">metrics</Link> you pick, from the exposures and events your app sends.
      </p>
      {!canEdit && <RoleNote need="editor" what="create, start or stop experiments" />}
      <div className="toolbar">
        <div className="field">
          <label htmlFor="experiments-env">Environment</label>
          <select id="experiments-env" value={chosen.key} onChange={(event) => choose(event.target.value)}>
            {(environments.data ?? []).map((env) => (
              <option key={env.id} value={env.key}>
                {env.name}
              </option>
            ))}
          </select>
        </div>
      </div>
      <QueryState query={experiments} what="experiments">
        {(list) =>
          list.length === 0 ? (
            <Empty title={`No experiments in ${chosen.name} yet`}>
              <p>Pick a flag with two arms that get units (variants by weight, or a rollout between 1 and 99 %), the control, and what to measure.</p>
            </Empty>
          ) : (
            <div className="table-wrap">
              <table className="plain list">
                <caption className="visually-hidden">Experiments in {chosen.name}, oldest first</caption>
                <thead>
                  <tr>
                    <th scope="col">Experiment</th>
                    <th scope="col">Flag</th>
                    <th scope="col">Status</th>
                    <th scope="col">Since</th>
                    {canEdit && <th scope="col">Actions</th>}
                  </tr>
                </thead>
                <tbody>
                  {list.map((experiment) => (
                    <ExperimentRow key={experiment.id} projectId={projectId} envId={envId} experiment={experiment} canEdit={canEdit} />
                  ))}
                </tbody>
              </table>
            </div>
          )
        }
      </QueryState>
      {creating && <CreateExperimentDialog projectId={projectId} environment={chosen} onClose={() => setCreating(false)} />}
    </div>
  );
}

function ExperimentRow({ projectId, envId, experiment, canEdit }: { projectId: string; envId: string; experiment: Experiment; canEdit: boolean }) {
  const since = experiment.stopped_at ?? experiment.started_at ?? experiment.created_at;
  return (
    <tr>
      <th scope="row">
        <Link to={`${envId}/${experiment.id}`}>{experiment.name}</Link>
      </th>
      <td data-label="Flag">
        <code>{experiment.flag_key}</code>
      </td>
      <td data-label="Status">
        <span className={statusClass(experiment.status)}>{STATUS_LABELS[experiment.status]}</span>
        {experiment.decision && <span className="muted small"> decided: {experiment.decision}</span>}
      </td>
      <td data-label="Since">
        <time dateTime={since} title={dateTime(since)}>
          {ago(since)}
        </time>
      </td>
      {canEdit && (
        <td>
          <ExperimentActions projectId={projectId} envId={envId} experiment={experiment} small />
        </td>
      )}
    </tr>
  );
}

/** Start a draft, stop a running one (with a decision), delete a draft or stopped one: each refusal (409) shown as the server words it. */
export function ExperimentActions({ projectId, envId, experiment, small, onDeleted }: { projectId: string; envId: string; experiment: Experiment; small?: boolean; onDeleted?: () => void }) {
  const write = useExperimentMutations(projectId, envId);
  const [stopping, setStopping] = useState(false);
  const [deleting, setDeleting] = useState(false);
  const [message, setMessage] = useState<{ ok: boolean; text: string } | null>(null);
  const size = small ? ' small' : '';
  const start = async () => {
    setMessage(null);
    try {
      await write.start.mutateAsync(experiment.id);
      setMessage({ ok: true, text: `${experiment.name} is running.` });
    } catch (caught) {
      setMessage({ ok: false, text: `Not started: ${(caught as Error).message}` });
    }
  };
  return (
    <>
      <div className="row-actions">
        {experiment.status === 'draft' && (
          <button type="button" className={`secondary${size}`} onClick={() => void start()} disabled={write.start.isPending} aria-label={`Start ${experiment.name}`}>
            Start
          </button>
        )}
        {experiment.status === 'running' && (
          <button type="button" className={`secondary${size}`} onClick={() => setStopping(true)} aria-label={`Stop ${experiment.name}`}>
            Stop
          </button>
        )}
        {experiment.status !== 'running' && (
          <button type="button" className={`danger${size}`} onClick={() => setDeleting(true)} aria-label={`Delete ${experiment.name}`}>
            Delete
          </button>
        )}
      </div>
      <Outcome message={message} />
      {stopping && (
        <StopDialog
          experiment={experiment}
          onClose={() => setStopping(false)}
          onStop={async (body) => {
            await write.stop.mutateAsync({ id: experiment.id, ...body });
          }}
        />
      )}
      <ConfirmDialog
        open={deleting}
        onOpenChange={setDeleting}
        title={`Delete ${experiment.name}?`}
        description={experiment.status === 'stopped' ? 'Its results go with it; the flag is not changed.' : 'The draft goes; the flag is not changed.'}
        confirmLabel="Delete experiment"
        onConfirm={async () => {
          // Left only once it is gone: a refusal stays in the dialog, and the list is read after the delete.
          await write.remove.mutateAsync(experiment.id);
          onDeleted?.();
        }}
      />
    </>
  );
}

function StopDialog({ experiment, onClose, onStop }: { experiment: Experiment; onClose: () => void; onStop: (body: { decision?: string; note?: string }) => Promise<void> }) {
  const arms = Object.keys(experiment.expected_shares ?? {});
  const [decision, setDecision] = useState('');
  const [note, setNote] = useState('');
  const { busy, error, save } = useDialogSave(onClose);
  const submit = async (event: FormEvent) => {
    event.preventDefault();
    await save(() => onStop({ ...(decision ? { decision } : {}), ...(note.trim() ? { note: note.trim() } : {}) }));
  };
  return (
    <Modal open onOpenChange={(open) => !open && onClose()} title={`Stop ${experiment.name}?`} description="Exposures after now no longer count. The flag is not changed: ship the decision by changing the flag.">
      <form onSubmit={submit} noValidate>
        <div className="field">
          <label htmlFor="stop-decision">Decision</label>
          <select id="stop-decision" value={decision} onChange={(event) => setDecision(event.target.value)} autoFocus>
            <option value="">No decision</option>
            {arms.map((arm) => (
              <option key={arm} value={arm}>
                Ship {arm}
                {arm === experiment.control ? ' (the control)' : ''}
              </option>
            ))}
          </select>
        </div>
        <Field label="Note (optional)" value={note} onChange={setNote} multiline maxLength={2000} hint="Why: what the results showed, what happens next." />
        <DialogActions error={error} busy={busy} submitLabel="Stop experiment" onCancel={onClose} />
      </form>
    </Modal>
  );
}

interface MetricChoice {
  metric_id: string;
  role: MetricRole;
}

function CreateExperimentDialog({ projectId, environment, onClose }: { projectId: string; environment: Environment; onClose: () => void }) {
  const flags = useProjectFlags(projectId);
  const metrics = useMetrics(projectId);
  const write = useExperimentMutations(projectId, environment.id);
  const inEnv = (flags.data ?? []).filter((flag) => flag.environments[environment.key]);
  const [flagKey, setFlagKey] = useState('');
  const [name, setName] = useState('');
  const [hypothesis, setHypothesis] = useState('');
  const [control, setControl] = useState('');
  const [chosen, setChosen] = useState<MetricChoice[]>([]);
  const [alpha, setAlpha] = useState('0.05');
  const [sequential, setSequential] = useState(false);
  const [tuning, setTuning] = useState('5000');
  const [cuped, setCuped] = useState(false);
  const [lookback, setLookback] = useState('14');
  const [minUnits, setMinUnits] = useState('100');
  const [errors, setErrors] = useState<Partial<Record<'flag' | 'name' | 'metrics' | 'alpha' | 'tuning' | 'lookback' | 'minUnits', string>>>({});
  const { busy, error, save } = useDialogSave(onClose);
  const flag = inEnv.find((candidate) => candidate.key === flagKey);
  const state = flag?.environments[environment.key];
  const arms = armsOf(state);
  // The control: the one chosen, else off for an on/off flag (what everyone got before), else the first variant.
  const controlArm = arms.includes(control) ? control : arms.includes('off') ? 'off' : (arms[0] ?? '');
  const roleOf = (id: string) => chosen.find((choice) => choice.metric_id === id)?.role;
  const setRole = (id: string, role: MetricRole | null) => setChosen(role === null ? chosen.filter((choice) => choice.metric_id !== id) : roleOf(id) ? chosen.map((choice) => (choice.metric_id === id ? { ...choice, role } : choice)) : [...chosen, { metric_id: id, role }]);

  const submit = async (event: FormEvent) => {
    event.preventDefault();
    const number = (text: string) => (text.trim() === '' ? NaN : Number(text));
    const found = {
      flag: state ? undefined : 'Pick the flag to experiment on',
      name: name.trim() ? undefined : 'Give the experiment a name',
      metrics: chosen.length >= 1 && chosen.length <= 20 ? undefined : 'Pick at least one metric (at most 20)',
      alpha: number(alpha) >= 0.001 && number(alpha) <= 0.2 ? undefined : 'From 0.001 to 0.2',
      tuning: Number.isInteger(number(tuning)) && number(tuning) > 0 ? undefined : 'A whole number above 0',
      lookback: Number.isInteger(number(lookback)) && number(lookback) >= 1 && number(lookback) <= 60 ? undefined : 'A whole number of days from 1 to 60',
      minUnits: Number.isInteger(number(minUnits)) && number(minUnits) > 0 ? undefined : 'A whole number above 0',
    };
    setErrors(found);
    if (Object.values(found).some(Boolean) || !state) return;
    const body: ExperimentBody = {
      flag_id: state.flag_id,
      name: name.trim(),
      hypothesis: hypothesis.trim() || null,
      control: controlArm,
      metrics: chosen,
      alpha: number(alpha),
      sequential,
      sequential_tuning: number(tuning),
      cuped,
      cuped_lookback_days: number(lookback),
      min_units: number(minUnits),
    };
    await save(() => write.create.mutateAsync(body));
  };

  const advancedInvalid = Boolean(errors.alpha || errors.tuning || errors.lookback || errors.minUnits);
  return (
    <Modal open onOpenChange={(open) => !open && onClose()} title="New experiment" description={`In ${environment.name}. It starts as a draft: start it when the flag is ready.`}>
      {flags.isPending || metrics.isPending ? (
        <Loading what="flags and metrics" />
      ) : flags.error || metrics.error ? (
        <ErrorState error={flags.error ?? metrics.error} />
      ) : (
        <form onSubmit={submit} noValidate className="experiment-form">
          <div className="field">
            <label htmlFor="experiment-flag">Flag</label>
            <select id="experiment-flag" value={flagKey} onChange={(event) => setFlagKey(event.target.value)} aria-invalid={errors.flag ? true : undefined} aria-describedby={errors.flag ? 'experiment-flag-error' : undefined} autoFocus>
              <option value="">Choose a flag…</option>
              {inEnv.map((candidate) => (
                <option key={candidate.key} value={candidate.key}>
                  {candidate.key}
                </option>
              ))}
            </select>
            <FormError message={errors.flag} id="experiment-flag-error" />
          </div>
          <Field label="Name" value={name} onChange={setName} error={errors.name} maxLength={200} placeholder="New checkout raises purchases" />
          <Field label="Hypothesis (optional)" value={hypothesis} onChange={setHypothesis} multiline maxLength={2000} hint="What you expect, and why: “the shorter form raises purchases without more errors”." />
          <div className="field">
            <label htmlFor="experiment-control">Control arm</label>
            <select id="experiment-control" value={controlArm} onChange={(event) => setControl(event.target.value)} disabled={!state} aria-describedby="experiment-control-hint">
              {arms.map((arm) => (
                <option key={arm} value={arm}>
                  {arm}
                </option>
              ))}
            </select>
            <p className="hint" id="experiment-control-hint">
              {state ? (state.variants.length > 0 ? 'The flag’s variants are its arms: the others are compared with this one.' : 'A flag without variants has two arms, on and off.') : 'Pick a flag first.'}
            </p>
          </div>
          <fieldset className="metric-picker" aria-describedby={errors.metrics ? 'experiment-metrics-error' : undefined}>
            <legend>Metrics</legend>
            {(metrics.data ?? []).length === 0 ? (
              <p className="hint">
                This project has no metrics yet: <Link to="../metrics">create one</Link> first.
              </p>
            ) : (
              <ul className="plain-list">
                {(metrics.data ?? []).map((metric) => {
                  const role = roleOf(metric.id);
                  return (
                    <li key={metric.id} className="metric-choice">
                      <label className="checkbox">
                        <input type="checkbox" checked={role !== undefined} onChange={(event) => setRole(metric.id, event.target.checked ? (chosen.length === 0 ? 'primary' : 'secondary') : null)} /> {metric.name} <code className="muted small">{metric.key}</code>
                      </label>
                      {role && (
                        <select aria-label={`Role of ${metric.name}`} value={role} onChange={(event) => setRole(metric.id, event.target.value as MetricRole)}>
                          <option value="primary">Primary</option>
                          <option value="secondary">Secondary</option>
                          <option value="guardrail">Guardrail</option>
                        </select>
                      )}
                    </li>
                  );
                })}
              </ul>
            )}
            <FormError message={errors.metrics} id="experiment-metrics-error" />
          </fieldset>
          <details open={advancedInvalid || undefined}>
            <summary>Advanced: significance, sequential testing, CUPED</summary>
            <div className="inline-form">
              <Field label="Alpha" type="number" inputMode="decimal" step="0.001" min={0.001} max={0.2} value={alpha} onChange={setAlpha} error={errors.alpha} hint="0.05 gives 95 % intervals." />
              <Field label="Units per arm for enough data" type="number" inputMode="numeric" min={1} value={minUnits} onChange={setMinUnits} error={errors.minUnits} />
            </div>
            <label className="checkbox">
              <input type="checkbox" checked={sequential} onChange={(event) => setSequential(event.target.checked)} /> Sequential: safe to look at the results every day
            </label>
            {sequential && <Field label="Units the sequential intervals are tuned for" type="number" inputMode="numeric" min={1} value={tuning} onChange={setTuning} error={errors.tuning} />}
            <label className="checkbox">
              <input type="checkbox" checked={cuped} onChange={(event) => setCuped(event.target.checked)} /> CUPED: narrower intervals from each unit’s behaviour before it was exposed
            </label>
            {cuped && <Field label="CUPED lookback in days" type="number" inputMode="numeric" min={1} max={60} value={lookback} onChange={setLookback} error={errors.lookback} />}
          </details>
          <DialogActions error={error} busy={busy} submitLabel="Create experiment" onCancel={onClose} />
        </form>
      )}
    </Modal>
  );
}
