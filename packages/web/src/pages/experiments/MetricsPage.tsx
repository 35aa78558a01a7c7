import { useState, type FormEvent } from 'react';
import { useParams } from 'react-router';
import { useMetricMutations, useMetrics, type Metric, type MetricBody } from '../../api/experiments';
import { useRole } from '../../api/roles';
import { ConfirmDialog } from '../../components/ConfirmDialog';
import { DialogActions } from '../../components/DialogActions';
import { Field } from '../../components/Field';
import { Modal } from '../../components/Modal';
import { RoleNote } from '../../components/RoleNote';
import { Empty, QueryState } from '../../components/States';
import { useDialogSave } from '../../components/useDialogSave';

/** How each kind counts a unit's events, in the words docs/experiments.md uses. */
export const KIND_LABELS: Record<Metric['kind'], string> = {
  conversion: 'Conversion: did the unit do it at all',
  count: 'Count: how many times',
  sum: 'Sum: the total of their values',
  mean: 'Mean: the average value per event',
};

const KEY = /^[a-z][a-z0-9_-]{0,99}$/;
const EVENT = /^[A-Za-z0-9_.:-]{1,100}$/;

export const windowText = (hours: number | null) => (hours === null ? 'to the end of the experiment' : `${hours} h after the first exposure`);

/** A project's metrics: what its experiments measure, in any environment. */
export function MetricsPage() {
  const { projectId = '' } = useParams();
  const metrics = useMetrics(projectId);
  const { can } = useRole(projectId);
  const canEdit = can('editor');
  const [editing, setEditing] = useState<Metric | 'new' | null>(null);
  const [deleting, setDeleting] = useState<Metric | null>(null);
  const write = useMetricMutations(projectId);

  return (
    <div className="stack">
      <div className="page-head">
        <h2>Metrics</h2>
        {canEdit && (
          <button type="button" onClick={() => setEditing('new')}>
            New metric
          </button>
        )}
      </div>
      <p className="muted">A metric turns the events your app sends (such as <code>purchase</code>) into a number per unit that experiments compare between arms, and says which way is better.</p>
      {!canEdit && <RoleNote need="editor" what="create or change metrics" />}
      <QueryState query={metrics} what="metrics">
        {(list) =>
          list.length === 0 ? (
            <Empty title="No metrics yet">
              <p>Name an event your app sends, say how to count it, and use the metric in any experiment of this project.</p>
            </Empty>
          ) : (
            <div className="table-wrap">
              <table className="plain list">
                <caption className="visually-hidden">Metrics of this project</caption>
                <thead>
                  <tr>
                    <th scope="col">Key</th>
                    <th scope="col">Name</th>
                    <th scope="col">Event</th>
                    <th scope="col">Kind</th>
                    <th scope="col">Better</th>
                    <th scope="col">Window</th>
                    {canEdit && <th scope="col">Actions</th>}
                  </tr>
                </thead>
                <tbody>
                  {list.map((metric) => (
                    <tr key={metric.id}>
                      <th scope="row">
                        <code>{metric.key}</code>
                      </th>
                      <td data-label="Name">{metric.name}</td>
                      <td data-label="Event">
                        <code>{metric.event}</code>
                      </td>
                      <td data-label="Kind">{metric.kind}</td>
                      <td data-label="Better">{metric.better}</td>
                      <td data-label="Window">{windowText(metric.window_hours)}</td>
                      {canEdit && (
                        <td>
                          <div className="row-actions">
                            <button type="button" className="secondary small" onClick={() => setEditing(metric)} aria-label={`Edit metric ${metric.key}`}>
                              Edit
                            </button>
                            <button type="button" className="danger small" onClick={() => setDeleting(metric)} aria-label={`Delete metric ${metric.key}`}>
                              Delete
                            </button>
                          </div>
                        </td>
                      )}
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          )
        }
      </QueryState>
      {editing && (
        <MetricDialog
          metric={editing === 'new' ? null : editing}
          onClose={() => setEditing(null)}
          onSave={async (body) => void (editing === 'new' ? await write.create.mutateAsync(body) : await write.update.mutateAsync({ id: editing.id, ...body }))}
        />
      )}
      <ConfirmDialog
        open={deleting !== null}
        onOpenChange={(open) => !open && setDeleting(null)}
        title={`Delete metric ${deleting?.key ?? ''}?`}
        description="Draft and stopped experiments lose it from their lists. A metric that a running experiment uses cannot be deleted: stop the experiment first."
        confirmLabel="Delete metric"
        onConfirm={() => write.remove.mutateAsync(deleting?.id ?? '')}
      />
    </div>
  );
}

function MetricDialog({ metric, onClose, onSave }: { metric: Metric | null; onClose: () => void; onSave: (body: MetricBody) => Promise<void> }) {
  const [name, setName] = useState(metric?.name ?? '');
  const [key, setKey] = useState(metric?.key ?? '');
  const [event, setEvent] = useState(metric?.event ?? '');
  const [kind, setKind] = useState<Metric['kind']>(metric?.kind ?? 'conversion');
  const [better, setBetter] = useState<Metric['better']>(metric?.better ?? 'higher');
  const [windowHours, setWindowHours] = useState(metric?.window_hours?.toString() ?? '');
  const [errors, setErrors] = useState<{ name?: string; key?: string; event?: string; window?: string }>({});
  const { busy, error, save } = useDialogSave(onClose);
  const submit = async (submitted: FormEvent) => {
    submitted.preventDefault();
    const hours = windowHours.trim() === '' ? null : Number(windowHours);
    const found = {
      name: name.trim() ? undefined : 'Give the metric a name',
      key: KEY.test(key) ? undefined : 'The key allows a-z, 0-9, _ and -, starting with a letter (at most 100)',
      event: EVENT.test(event) ? undefined : 'The event name allows A-Z, a-z, 0-9, _ . : and - (1 to 100)',
      window: hours === null || (Number.isInteger(hours) && hours >= 1 && hours <= 8760) ? undefined : 'A whole number of hours from 1 to 8760, or empty',
    };
    setErrors(found);
    if (Object.values(found).some(Boolean)) return;
    await save(() => onSave({ key, name: name.trim(), event, kind, better, window_hours: hours }));
  };
  return (
    <Modal open onOpenChange={(open) => !open && onClose()} title={metric ? `Edit metric ${metric.key}` : 'New metric'} description="A unit's events count from its first exposure to the experiment.">
      <form onSubmit={submit} noValidate>
        <Field label="Name" value={name} onChange={setName} error={errors.name} maxLength={200} placeholder="Purchases" autoFocus />
        <Field label="Key" value={key} onChange={setKey} error={errors.key} maxLength={100} placeholder="purchase" hint="How the API and results name it: a-z, 0-9, _ and -, starting with a letter." />
        <Field label="Event" value={event} onChange={setEvent} error={errors.event} maxLength={100} placeholder="purchase" hint="The name your app sends with track() or POST /sdk/v1/events." />
        <div className="field">
          <label htmlFor="metric-kind">Kind</label>
          <select id="metric-kind" value={kind} onChange={(changed) => setKind(changed.target.value as Metric['kind'])}>
            {(Object.keys(KIND_LABELS) as Metric['kind'][]).map((value) => (
              <option key={value} value={value}>
                {KIND_LABELS[value]}
              </option>
            ))}
          </select>
        </div>
        <fieldset className="radio-list inline">
          <legend>Better when it is</legend>
          {(['higher', 'lower'] as const).map((value) => (
            <label key={value} className="checkbox">
              <input type="radio" name="metric-better" value={value} checked={better === value} onChange={() => setBetter(value)} /> {value === 'higher' ? 'Higher' : 'Lower'}
            </label>
          ))}
        </fieldset>
        <Field label="Window in hours (optional)" type="number" inputMode="numeric" min={1} max={8760} value={windowHours} onChange={setWindowHours} error={errors.window} hint="Count a unit's events only this long after its first exposure; empty: until the experiment stops." />
        <DialogActions error={error} busy={busy} submitLabel={metric ? 'Save metric' : 'Create metric'} onCancel={onClose} />
      </form>
    </Modal>
  );
}
