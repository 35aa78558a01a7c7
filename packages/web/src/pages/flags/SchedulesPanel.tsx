import { useId, useState, type FormEvent } from 'react';
import type { Environment, Flag, FlagChange, Schedule } from '../../api/client';
import { useSchedules } from '../../api/queries';
import { useScheduleMutations } from '../../api/schedules';
import { Field } from '../../components/Field';
import { FormError, Outcome } from '../../components/FormError';
import { QueryState } from '../../components/States';
import { dateTime } from '../../components/time';
import { describeFlagChange, isoToLocal, localToIso, timeZoneName } from '../changes/describe';

type What = 'on' | 'off' | 'rollout';

const STATUS_LABEL: Record<Schedule['status'], string> = { pending: 'pending', applied: 'applied', failed: 'failed', cancelled: 'cancelled' };

/**
 * A flag's scheduled changes (docs/change-management.md): the pending and the past ones, a form for
 * one change at a chosen time (shown in the browser's time zone, sent with its offset), and a ramp
 * that schedules a series of rollouts. In an environment that needs approval they go into the draft.
 */
export function SchedulesPanel({ projectId, environment, flag, readOnly }: { projectId: string; environment: Environment; flag: Flag; readOnly: boolean }) {
  const schedules = useSchedules(projectId, environment.id, flag.id);
  const { cancel } = useScheduleMutations(projectId, environment.id, flag.id);
  const [error, setError] = useState<string | null>(null);
  const reviewed = environment.approvals_required > 0;

  const cancelOne = async (schedule: Schedule) => {
    setError(null);
    try {
      await cancel.mutateAsync(schedule.id);
    } catch (caught) {
      setError(`Not cancelled: ${(caught as Error).message}`);
    }
  };

  return (
    <section className="panel" aria-labelledby="schedules-heading">
      <h3 id="schedules-heading">Scheduled changes</h3>
      <p className="muted small">Times are in your time zone, {timeZoneName()}. A change applies within seconds of its time, as a change made by whoever scheduled it.</p>
      <FormError message={error} />
      <QueryState query={schedules} what="scheduled changes">
        {(list) => {
          const pending = list.filter((item) => item.status === 'pending');
          const past = list.filter((item) => item.status !== 'pending').reverse();
          return (
            <>
              {pending.length === 0 ? (
                <p className="state">Nothing scheduled.</p>
              ) : (
                <ol className="rows" aria-label="Pending scheduled changes">
                  {pending.map((item) => (
                    <li key={item.id} className="row">
                      <ScheduleText schedule={item} />
                      {!readOnly && (
                        <button type="button" className="secondary small" onClick={() => void cancelOne(item)} aria-label={`Cancel the change at ${dateTime(item.at)}`}>
                          {reviewed ? 'Request cancel' : 'Cancel'}
                        </button>
                      )}
                    </li>
                  ))}
                </ol>
              )}
              {past.length > 0 && (
                <details>
                  <summary>Past scheduled changes ({past.length})</summary>
                  <ol className="rows" aria-label="Past scheduled changes">
                    {past.map((item) => (
                      <li key={item.id} className="row">
                        <ScheduleText schedule={item} />
                      </li>
                    ))}
                  </ol>
                </details>
              )}
            </>
          );
        }}
      </QueryState>
      {!readOnly && <ScheduleForm projectId={projectId} environment={environment} flag={flag} />}
      {!readOnly && <RampForm projectId={projectId} environment={environment} flag={flag} />}
    </section>
  );
}

function ScheduleText({ schedule }: { schedule: Schedule }) {
  return (
    <span>
      <time dateTime={schedule.at}>{dateTime(schedule.at)}</time>: {describeFlagChange(schedule.change)}
      {schedule.note && <span className="muted"> ({schedule.note})</span>}
      <span className={`badge ${schedule.status === 'failed' ? 'failed' : schedule.status === 'applied' ? 'ok' : 'role'}`}>{STATUS_LABEL[schedule.status]}</span>
      <span className="muted small"> by {schedule.created_by.email}</span>
      {schedule.error && <span className="muted small"> · {schedule.error}</span>}
    </span>
  );
}

/** An hour from now, to the minute: a time in the near future to start from. */
const inAnHour = () => isoToLocal(new Date(Date.now() + 3_600_000));

function ScheduleForm({ projectId, environment, flag }: { projectId: string; environment: Environment; flag: Flag }) {
  const { create } = useScheduleMutations(projectId, environment.id, flag.id);
  const id = useId();
  const [when, setWhen] = useState(inAnHour);
  const [what, setWhat] = useState<What>(flag.enabled ? 'off' : 'on');
  const [rollout, setRollout] = useState(String(flag.rollout_percentage));
  const [note, setNote] = useState('');
  const [errors, setErrors] = useState<{ when?: string; rollout?: string }>({});
  const [outcome, setOutcome] = useState<{ ok: boolean; text: string } | null>(null);
  const reviewed = environment.approvals_required > 0;

  const submit = async (event: FormEvent) => {
    event.preventDefault();
    setOutcome(null);
    const at = localToIso(when);
    const percent = Number(rollout);
    const found = {
      when: at === null ? 'Pick a date and a time' : Date.parse(at) <= Date.now() ? 'Pick a time in the future' : undefined,
      rollout: what === 'rollout' && !(Number.isInteger(percent) && percent >= 0 && percent <= 100) ? 'A whole number from 0 to 100' : undefined,
    };
    setErrors(found);
    if (found.when || found.rollout || at === null) return;
    const change: FlagChange = what === 'rollout' ? { rollout_percentage: percent } : { enabled: what === 'on' };
    try {
      await create.mutateAsync([{ at, change, note: note.trim() || null }]);
      setOutcome({ ok: true, text: reviewed ? `Added to the draft request: at ${dateTime(at)}, ${describeFlagChange(change)}.` : `Scheduled: at ${dateTime(at)}, ${describeFlagChange(change)}.` });
      setNote('');
    } catch (caught) {
      setOutcome({ ok: false, text: `Not scheduled: ${(caught as Error).message}` });
    }
  };

  return (
    <form onSubmit={submit} noValidate aria-labelledby={`${id}-title`} className="schedule-form">
      <h4 id={`${id}-title`}>Schedule a change</h4>
      <div className="inline-form">
        <Field label={`When (${timeZoneName()})`} type="datetime-local" value={when} onChange={setWhen} error={errors.when} />
        <fieldset className="radio-list">
          <legend>What changes</legend>
          {(['on', 'off', 'rollout'] as const).map((value) => (
            <label key={value} className="checkbox">
              <input type="radio" name={`${id}-what`} value={value} checked={what === value} onChange={() => setWhat(value)} />
              {value === 'on' ? 'Switch it on' : value === 'off' ? 'Switch it off' : 'Set the rollout'}
            </label>
          ))}
        </fieldset>
        {what === 'rollout' && <Field label="Rollout percentage" type="number" min={0} max={100} value={rollout} onChange={setRollout} error={errors.rollout} />}
        <Field label="Note (optional)" value={note} onChange={setNote} maxLength={500} />
      </div>
      <div className="actions start">
        <button type="submit" disabled={create.isPending}>
          {reviewed ? 'Add to request' : 'Schedule change'}
        </button>
      </div>
      <Outcome message={outcome} />
    </form>
  );
}

const DEFAULT_STEPS = '10, 25, 50, 100';

/** The ramp's schedule: each step's rollout, and its time (the first at `start`, then every `hours`). */
export function rampSeries(steps: number[], startIso: string, hours: number, switchOn: boolean) {
  return steps.map((rollout_percentage, i) => ({
    at: new Date(Date.parse(startIso) + i * hours * 3_600_000).toISOString(),
    change: (i === 0 && switchOn ? { enabled: true, rollout_percentage } : { rollout_percentage }) as FlagChange,
    note: `ramp ${i + 1} of ${steps.length}`,
  }));
}

function RampForm({ projectId, environment, flag }: { projectId: string; environment: Environment; flag: Flag }) {
  const { create } = useScheduleMutations(projectId, environment.id, flag.id);
  const id = useId();
  const [steps, setSteps] = useState(DEFAULT_STEPS);
  const [start, setStart] = useState(inAnHour);
  const [hours, setHours] = useState('24');
  const [switchOn, setSwitchOn] = useState(!flag.enabled);
  const [errors, setErrors] = useState<{ steps?: string; start?: string; hours?: string }>({});
  const [outcome, setOutcome] = useState<{ ok: boolean; text: string } | null>(null);
  const reviewed = environment.approvals_required > 0;

  const percents = steps.split(/[\s,→>]+/).filter(Boolean).map(Number);
  const startIso = localToIso(start);
  const every = Number(hours);
  const valid = percents.length > 0 && percents.length <= 20 && percents.every((value) => Number.isInteger(value) && value >= 0 && value <= 100) && startIso !== null && Number.isFinite(every) && every > 0;
  const series = valid ? rampSeries(percents, startIso!, every, switchOn) : [];

  const submit = async (event: FormEvent) => {
    event.preventDefault();
    setOutcome(null);
    const found = {
      steps: percents.length === 0 || percents.length > 20 || !percents.every((value) => Number.isInteger(value) && value >= 0 && value <= 100) ? 'Up to 20 whole percentages from 0 to 100, such as 10, 25, 50, 100' : undefined,
      start: startIso === null ? 'Pick a date and a time' : Date.parse(startIso) <= Date.now() ? 'Pick a time in the future' : undefined,
      hours: !(Number.isFinite(every) && every > 0) ? 'A number of hours above 0' : undefined,
    };
    setErrors(found);
    if (found.steps || found.start || found.hours) return;
    try {
      await create.mutateAsync(series);
      setOutcome({ ok: true, text: `${reviewed ? 'Added to the draft request' : 'Scheduled'}: ${series.length} steps, ${percents.join(' → ')} %.` });
    } catch (caught) {
      setOutcome({ ok: false, text: `Not all scheduled (the list above shows what was): ${(caught as Error).message}` });
    }
  };

  return (
    <form onSubmit={submit} noValidate aria-labelledby={`${id}-title`} className="schedule-form">
      <h4 id={`${id}-title`}>Ramp up</h4>
      <p className="muted small">Raise the rollout step by step: one scheduled change per step.</p>
      <div className="inline-form">
        <Field label="Steps (%)" value={steps} onChange={setSteps} error={errors.steps} hint="Comma-separated, such as 10, 25, 50, 100" />
        <Field label={`First step at (${timeZoneName()})`} type="datetime-local" value={start} onChange={setStart} error={errors.start} />
        <Field label="Hours between steps" type="number" min={1} value={hours} onChange={setHours} error={errors.hours} />
        <label className="checkbox">
          <input type="checkbox" checked={switchOn} onChange={(event) => setSwitchOn(event.target.checked)} /> Switch it on at the first step
        </label>
      </div>
      {series.length > 0 && (
        <ol className="plain-list small" aria-label="The ramp's steps">
          {series.map((item) => (
            <li key={item.at}>
              <time dateTime={item.at}>{dateTime(item.at)}</time>: {describeFlagChange(item.change)}
            </li>
          ))}
        </ol>
      )}
      <div className="actions start">
        <button type="submit" disabled={create.isPending}>
          {reviewed ? 'Add the ramp to the request' : 'Schedule the ramp'}
        </button>
      </div>
      <Outcome message={outcome} />
    </form>
  );
}
