import { lazy, Suspense, useEffect, useId, useRef, useState, type FormEvent } from 'react';
import { useQueryClient } from '@tanstack/react-query';
import { Link } from 'react-router';
import type { Environment, Flag } from '../../api/client';
import { isDrafted } from '../../api/drafts';
import { useMetrics, type Metric } from '../../api/experiments';
import { keys } from '../../api/queries';
import { isLive, useRelease, useReleaseMutations, useReleases, type GuardrailFigures, type Release, type ReleaseAction, type ReleaseBody, type ReleaseCheck } from '../../api/releases';
import { ConfirmDialog } from '../../components/ConfirmDialog';
import { Field } from '../../components/Field';
import { FormError, Outcome } from '../../components/FormError';
import { extentOf, IntervalAxis, IntervalRow } from '../../components/IntervalTrack';
import { Loading, QueryState } from '../../components/States';
import { dateTime, plural } from '../../components/time';
import { signed } from '../experiments/wording';
import type { GuardrailPoint } from './GuardrailChart';
import { DECISION_LABELS, detectableText, duration, GUARDRAIL_LABELS, guardrailSentence, number, releaseSummary, STATUS_CLASSES, STATUS_LABELS, stepsText, toleranceUnit } from './releaseWording';

const GuardrailChart = lazy(() => import('./GuardrailChart'));

/** Steps above this are not monitored: no comparison group is left (docs/releases.md). */
const MONITORED_UP_TO = 50;
const DEFAULT_STEPS = [5, 10, 25, 50, 100];
/** The checks listed before "Show all". */
const CHECKS_SHOWN = 8;

/**
 * A flag's guarded releases in one environment (docs/releases.md): the latest one with its steps,
 * its guardrails at each check and its decisions in words; pause, resume and abort; and a form to
 * start one when none is live. The release moves the flag, so the flag is read again whenever the
 * release's step or status changes.
 */
export function ReleasePanel({ projectId, environment, flag, readOnly }: { projectId: string; environment: Environment; flag: Flag; readOnly: boolean }) {
  const releases = useReleases(projectId, environment.id, flag.id);
  const latest = releases.data?.[0];
  const detail = useRelease(projectId, environment.id, flag.id, latest?.id);
  const metrics = useMetrics(projectId);
  const client = useQueryClient();
  const focusStatus = useRef(false);

  // A step, a pause, a rollback or the end changed the flag on the server: read it again.
  const moved = latest ? `${latest.id}:${latest.status}:${latest.current_step}` : '';
  const seen = useRef(moved);
  useEffect(() => {
    if (seen.current === moved) return;
    seen.current = moved;
    void client.invalidateQueries({ queryKey: keys.flag(flag.id) });
    void client.invalidateQueries({ queryKey: keys.projectFlags(projectId) });
    if (latest) void client.invalidateQueries({ queryKey: ['release', latest.id] });
  }, [moved, client, flag.id, projectId, latest]);

  const shown = detail.data && detail.data.id === latest?.id ? detail.data : latest;
  return (
    <section className="panel" aria-labelledby="release-heading">
      <h3 id="release-heading">Guarded release</h3>
      <p className="muted small">
        A guarded release raises the rollout step by step. At each check it compares guardrail metrics of the users it serves with users it does not serve yet, and rolls back by itself when one gets worse beyond its tolerance.
      </p>
      <QueryState query={releases} what="releases">
        {(list) => (
          <>
            {shown ? (
              <ReleaseView key={shown.id} projectId={projectId} environment={environment} flag={flag} release={shown} metrics={metrics.data ?? []} readOnly={readOnly} focusStatus={focusStatus} checksLoading={detail.isPending} />
            ) : (
              <p className="state">No release of {flag.key} in {environment.name} yet.</p>
            )}
            {list.length > 1 && <EarlierReleases releases={list.slice(1)} />}
            {!readOnly && !(latest && isLive(latest)) && <StartRelease projectId={projectId} environment={environment} flag={flag} metrics={metrics.data} metricsError={metrics.error} focusStatus={focusStatus} />}
          </>
        )}
      </QueryState>
    </section>
  );
}

/** The form behind a button: the flag page is long, and most visits do not start a release. */
function StartRelease({ focusStatus, ...props }: { projectId: string; environment: Environment; flag: Flag; metrics: Metric[] | undefined; metricsError: unknown; focusStatus: { current: boolean } }) {
  const [open, setOpen] = useState(false);
  const id = useId();
  return (
    <div className="release-start">
      <button type="button" className={open ? 'secondary' : undefined} aria-expanded={open} aria-controls={open ? `${id}-form` : undefined} onClick={() => setOpen(!open)}>
        Start a guarded release
      </button>
      {open && (
        <div id={`${id}-form`}>
          <StartReleaseForm {...props} onStarted={() => (focusStatus.current = true)} />
        </div>
      )}
    </div>
  );
}

function ReleaseView({ projectId, environment, flag, release, metrics, readOnly, focusStatus, checksLoading }: { projectId: string; environment: Environment; flag: Flag; release: Release; metrics: Metric[]; readOnly: boolean; focusStatus: { current: boolean }; checksLoading: boolean }) {
  const { act } = useReleaseMutations(projectId, environment.id, flag.id);
  const [error, setError] = useState<string | null>(null);
  const [aborting, setAborting] = useState(false);
  const live = isLive(release);
  const run = async (action: ReleaseAction) => {
    setError(null);
    try {
      await act.mutateAsync({ action, releaseId: release.id });
    } catch (caught) {
      setError(`Not ${action === 'pause' ? 'paused' : action === 'resume' ? 'resumed' : 'aborted'}: ${(caught as Error).message}`);
    }
  };
  return (
    <div className="release stack">
      {/* Announced when the release moves on, pauses or ends while the page is open. */}
      <p
        className="release-status"
        aria-live="polite"
        tabIndex={-1}
        ref={(node) => {
          if (node && focusStatus.current) {
            focusStatus.current = false;
            node.focus();
          }
        }}
      >
        <span className={STATUS_CLASSES[release.status]}>{STATUS_LABELS[release.status]}</span> {releaseSummary(release)}
      </p>
      <Stepper release={release} />
      <dl className="facts">
        <dt>Serves</dt>
        <dd>
          <span>
            <code>{release.treatment}</code> to the rollout; everyone else the release has not reached gets <code>{release.control}</code>
          </span>
        </dd>
        <dt>Started</dt>
        <dd>
          <span>
            <time dateTime={release.created_at}>{dateTime(release.created_at)}</time> by {release.created_by.email ?? 'a deleted user'}
            {release.change_request_id && (
              <>
                {' '}
                (<Link to={`/projects/${projectId}/change-requests/${release.change_request_id}`}>change request</Link>)
              </>
            )}
          </span>
        </dd>
        {release.ended_at ? (
          <>
            <dt>Ended</dt>
            <dd>
              <time dateTime={release.ended_at}>{dateTime(release.ended_at)}</time>
            </dd>
          </>
        ) : (
          release.next_check_at && (
            <>
              <dt>Next check</dt>
              <dd>
                <time dateTime={release.next_check_at}>{dateTime(release.next_check_at)}</time>
              </dd>
            </>
          )
        )}
        <dt>Each step</dt>
        <dd>
          at least {duration(release.hold_seconds)}, checked every {duration(release.check_seconds)}, {plural(release.min_units, 'unit')} on each side before any decision
        </dd>
      </dl>
      {live && !readOnly && (
        <div className="actions start">
          {/* One button that changes its name, so the focus stays on it from pause to resume. */}
          {/* Not disabled while it is sent: a disabled button loses the focus. */}
          <button type="button" className="secondary" aria-disabled={act.isPending || undefined} onClick={() => !act.isPending && void run(release.status === 'paused' ? 'resume' : 'pause')}>
            {release.status === 'paused' ? 'Resume release' : 'Pause release'}
          </button>
          <button type="button" className="danger" disabled={act.isPending} onClick={() => setAborting(true)}>
            Abort release
          </button>
        </div>
      )}
      {live && <p className="muted small">While it is live, the release alone sets the rollout. Paused, it no longer moves on, but its checks go on and a harmful guardrail still rolls it back. Aborting it, or switching {flag.key} off, ends it.</p>}
      <FormError message={error} />
      {checksLoading && !release.checks ? <Loading what="the checks" /> : <Guardrails release={release} metrics={metrics} />}
      {release.checks && <Checks checks={release.checks} />}
      <ConfirmDialog
        open={aborting}
        onOpenChange={setAborting}
        title={`Abort the release of ${flag.key}?`}
        description={`It ends at ${release.rollout_percentage} % and ${flag.key} goes back to what it was before the release. A new release can be started afterwards.`}
        confirmLabel="Abort release"
        onConfirm={() => act.mutateAsync({ action: 'abort', releaseId: release.id })}
      />
    </div>
  );
}

/** The release's steps in order: done, the current one (aria-current) and those not reached. */
function Stepper({ release }: { release: Release }) {
  const live = isLive(release);
  const stateOf = (index: number): { className: string; words: string } => {
    if (release.status === 'completed' || index < release.current_step) return { className: 'done', words: 'done' };
    if (index > release.current_step) return { className: 'todo', words: 'not reached' };
    if (live) return { className: 'current', words: release.status === 'paused' ? 'current step, paused' : 'current step' };
    return { className: 'stopped', words: release.status === 'rolled_back' ? 'rolled back here' : 'aborted here' };
  };
  return (
    <>
      <ol className="stepper" aria-label="Steps of the release">
        {release.steps.map((step, index) => {
          const state = stateOf(index);
          return (
            <li key={step} className={`step ${state.className}`} aria-current={live && index === release.current_step ? 'step' : undefined}>
              <span className="step-mark" aria-hidden="true">
                {state.className === 'done' ? '✓' : state.className === 'stopped' ? '✕' : index + 1}
              </span>
              <span className="step-value">{step} %</span>
              <span className="visually-hidden">, {state.words}</span>
            </li>
          );
        })}
      </ol>
      {release.steps.some((step) => step > MONITORED_UP_TO) && <p className="muted small">Steps above {MONITORED_UP_TO} % are not monitored (no comparison group is left): they move on when their time is up.</p>}
    </>
  );
}

/** Each guardrail: the latest check in words, its bound against the tolerance now and over time, and the figures of every check. */
function Guardrails({ release, metrics }: { release: Release; metrics: Metric[] }) {
  const checks = (release.checks ?? []).filter((check) => check.monitored);
  return (
    <div className="guardrails">
      <h4>Guardrails</h4>
      {release.guardrails.map((guardrail) => {
        const series = checks.flatMap((check) => {
          const figures = check.guardrails.find((item) => item.metric_id === guardrail.metric_id);
          return figures ? [{ check, figures }] : [];
        });
        return <GuardrailView key={guardrail.metric_id} release={release} tolerance={guardrail.tolerance} metric={metrics.find((metric) => metric.id === guardrail.metric_id)} series={series} />;
      })}
    </div>
  );
}

function GuardrailView({ release, tolerance, metric, series }: { release: Release; tolerance: number; metric: Metric | undefined; series: { check: ReleaseCheck; figures: GuardrailFigures }[] }) {
  const id = useId();
  const latest = series.at(-1);
  const name = metric?.name ?? latest?.figures.metric_key ?? 'A deleted metric';
  const better = metric?.better ?? latest?.figures.better;
  const points: GuardrailPoint[] = series.map(({ check, figures }) => ({ at: check.at, bound: figures.bound, difference: figures.difference, limit: figures.limit }));
  return (
    <article className="guardrail" aria-labelledby={`${id}-title`}>
      <h5 id={`${id}-title`}>
        {name}{' '}
        <span className="muted small">
          {better ? `${better} is better, ` : ''}tolerance {number(tolerance)} ({toleranceUnit(metric)})
        </span>
      </h5>
      <p id={`${id}-words`}>
        {latest ? (
          <>
            At the latest check (<time dateTime={latest.check.at}>{dateTime(latest.check.at)}</time>, {latest.check.step} %): {guardrailSentence(latest.figures, name, release.min_units)}
          </>
        ) : release.next_check_at ? (
          `Not checked yet: the first check is due at ${dateTime(release.next_check_at)}.`
        ) : (
          'No monitored check.'
        )}
      </p>
      {latest && latest.figures.bound !== null && <LatestBound name={name} figures={latest.figures} describedBy={`${id}-words`} />}
      <dl className="facts">
        <dt>Smallest detectable harm</dt>
        <dd>{detectableText(latest?.figures)}</dd>
      </dl>
      {points.length > 0 && (
        <>
          <Suspense fallback={<Loading what="the chart" />}>
            <GuardrailChart points={points} label={`${name} at each check: the bound of the difference against the tolerance`} describedBy={`${id}-chart-note`} />
          </Suspense>
          <p className="muted small" id={`${id}-chart-note`}>
            The bound (solid) is the difference at its most favourable; it rolls the release back when it crosses the tolerance (dashed). The figures of each check are in the table below.
          </p>
          <details>
            <summary>Figures of {name} at each check ({series.length})</summary>
            <div className="table-wrap">
              <table className="plain list">
                <caption className="visually-hidden">{name} at each check, oldest first</caption>
                <thead>
                  <tr>
                    <th scope="col">Checked</th>
                    <th scope="col">Step</th>
                    <th scope="col">With the release</th>
                    <th scope="col">Without</th>
                    <th scope="col">Difference</th>
                    <th scope="col">Bound</th>
                    <th scope="col">Tolerance</th>
                    <th scope="col">Guardrail</th>
                  </tr>
                </thead>
                <tbody>
                  {series.map(({ check, figures }) => (
                    <tr key={check.at}>
                      <th scope="row">
                        <time dateTime={check.at}>{dateTime(check.at)}</time>
                      </th>
                      <td data-label="Step">{check.step} %</td>
                      <td data-label="With the release">
                        {number(figures.means.treatment)} <span className="muted small">({plural(figures.units.treatment, 'unit')})</span>
                      </td>
                      <td data-label="Without">
                        {number(figures.means.control)} <span className="muted small">({plural(figures.units.control, 'unit')})</span>
                      </td>
                      <td data-label="Difference">{signed(figures.difference)}</td>
                      <td data-label="Bound">{figures.bound === null ? '—' : signed(figures.bound)}</td>
                      <td data-label="Tolerance">{signed(figures.limit)}</td>
                      <td data-label="Guardrail">{GUARDRAIL_LABELS[figures.decision]}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          </details>
        </>
      )}
    </article>
  );
}

/**
 * The latest check as an interval (the experiment page's drawing): the difference, and the range
 * the check cannot rule out, from the bound open towards worse; the tolerance is a dashed mark.
 */
function LatestBound({ name, figures, describedBy }: { name: string; figures: GuardrailFigures; describedBy: string }) {
  const bound = figures.bound ?? figures.difference;
  const extent = extentOf([bound, figures.difference, figures.limit]);
  const lowerIsBetter = figures.better === 'lower';
  return (
    <figure className="intervals">
      <div role="img" aria-label={`${name} at the latest check: the difference and its bound against the tolerance`} aria-describedby={describedBy}>
        <IntervalRow
          label="difference"
          extent={extent}
          lo={lowerIsBetter ? bound : -extent}
          hi={lowerIsBetter ? extent : bound}
          estimate={figures.difference}
          verdict={figures.decision === 'harmful' ? 'bad' : 'unclear'}
          marks={[
            { at: 0, kind: 'zero' },
            { at: figures.limit, kind: 'limit' },
          ]}
        />
        <IntervalAxis extent={extent} format={signed} />
      </div>
      <figcaption className="muted small">
        With the release against without it. The bar runs from the bound towards worse ({lowerIsBetter ? 'higher' : 'lower'}); a bar wholly past the dashed tolerance is harm.
      </figcaption>
    </figure>
  );
}

/** Every check in words, newest first: when, at which step, what it decided and why. */
function Checks({ checks }: { checks: ReleaseCheck[] }) {
  const [all, setAll] = useState(false);
  const newest = [...checks].reverse();
  const shown = all ? newest : newest.slice(0, CHECKS_SHOWN);
  return (
    <div className="release-checks">
      <h4>Checks</h4>
      {checks.length === 0 ? (
        <p className="state">No check yet.</p>
      ) : (
        <>
          <ol className="timeline" aria-label="Checks, newest first">
            {shown.map((check) => (
              <li key={check.at} className={`timeline-item${check.decision === 'roll_back' ? ' harmful' : check.decision === 'wait' ? '' : ' own'}`}>
                <time dateTime={check.at}>{dateTime(check.at)}</time>
                <span>
                  <strong>{DECISION_LABELS[check.decision]}</strong> at {check.step} %{!check.monitored && <span className="muted"> (not monitored)</span>}: {check.explanation}
                  {check.srm.flagged && <span className="badge stale">sample ratio mismatch</span>}
                  <span className="muted small">
                    {' '}
                    {plural(check.units.treatment, 'unit')} with the release, {check.units.control} without
                  </span>
                </span>
              </li>
            ))}
          </ol>
          {newest.length > CHECKS_SHOWN && (
            <div className="actions start">
              <button type="button" className="secondary small" aria-expanded={all} onClick={() => setAll(!all)}>
                {all ? `Show the latest ${CHECKS_SHOWN} checks` : `Show all ${newest.length} checks`}
              </button>
            </div>
          )}
        </>
      )}
    </div>
  );
}

function EarlierReleases({ releases }: { releases: Release[] }) {
  return (
    <details>
      <summary>Earlier releases ({releases.length})</summary>
      <ol className="rows" aria-label="Earlier releases, newest first">
        {releases.map((release) => (
          <li key={release.id} className="row">
            <span>
              <time dateTime={release.created_at}>{dateTime(release.created_at)}</time>: {stepsText(release.steps)} <span className={STATUS_CLASSES[release.status]}>{STATUS_LABELS[release.status]}</span>
              {release.reason && <span className="muted small"> {release.reason}</span>}
            </span>
          </li>
        ))}
      </ol>
    </details>
  );
}

const UNITS = [
  { seconds: 1, label: 'seconds' },
  { seconds: 60, label: 'minutes' },
  { seconds: 3600, label: 'hours' },
  { seconds: 86_400, label: 'days' },
] as const;

/** A length of time as a number and a unit; the value is in seconds (NaN when not a number). */
function DurationField({ label, amount, unit, onChange, error, hint }: { label: string; amount: string; unit: number; onChange: (amount: string, unit: number) => void; error?: string | undefined; hint: string }) {
  const id = useId();
  return (
    <div className="field">
      <label htmlFor={id}>{label}</label>
      <span className="duration">
        <input id={id} className="number" type="number" min={1} value={amount} onChange={(event) => onChange(event.target.value, unit)} aria-invalid={error ? true : undefined} aria-describedby={`${id}-hint${error ? ` ${id}-error` : ''}`} />
        <select aria-label={`Unit of ${label.toLowerCase()}`} value={unit} onChange={(event) => onChange(amount, Number(event.target.value))}>
          {UNITS.map((choice) => (
            <option key={choice.seconds} value={choice.seconds}>
              {choice.label}
            </option>
          ))}
        </select>
      </span>
      <p className="hint" id={`${id}-hint`}>
        {hint}
      </p>
      <FormError message={error} id={`${id}-error`} />
    </div>
  );
}

type FormErrors = Partial<Record<'steps' | 'hold' | 'check' | 'minUnits' | 'guardrails' | 'treatment', string>> & { tolerance?: Record<string, string> };

/** The form's fields checked as the server checks them (its schema), so most mistakes are said before sending. */
function checkForm(fields: { steps: number[]; hold: number; check: number; minUnits: number; picked: Record<string, string>; treatment: string; variants: boolean }): FormErrors {
  const { steps, hold, check, minUnits, picked } = fields;
  const errors: FormErrors = {};
  const increasing = steps.every((step, i) => i === 0 || step > steps[i - 1]!);
  if (steps.length < 2 || steps.length > 10 || !steps.every((step) => Number.isInteger(step) && step >= 1 && step <= 100) || !increasing || steps.at(-1) !== 100)
    errors.steps = 'From 2 to 10 whole percentages, each above the one before, the last 100: such as 5, 10, 25, 50, 100';
  if (!(Number.isInteger(hold) && hold >= 10 && hold <= 31_536_000)) errors.hold = 'At least 10 seconds, at most a year, in whole seconds';
  if (!(Number.isInteger(check) && check >= 10 && check <= 86_400)) errors.check = 'At least 10 seconds, at most a day, in whole seconds';
  if (!(Number.isInteger(minUnits) && minUnits >= 1 && minUnits <= 10_000_000)) errors.minUnits = 'A whole number from 1 to 10,000,000';
  const ids = Object.keys(picked);
  if (ids.length === 0) errors.guardrails = 'Pick at least one guardrail metric';
  else if (ids.length > 10) errors.guardrails = 'At most 10 guardrails';
  const tolerance = Object.fromEntries(ids.flatMap((metricId) => (Number(picked[metricId]) >= 0 && picked[metricId]!.trim() !== '' ? [] : [[metricId, 'A number of 0 or more']])));
  if (Object.keys(tolerance).length > 0) errors.tolerance = tolerance;
  if (fields.variants && !fields.treatment) errors.treatment = 'Pick the variant the release serves';
  return errors;
}

const hasErrors = (errors: FormErrors) => Object.values(errors).some((value) => (typeof value === 'string' ? true : value !== undefined && Object.keys(value).length > 0));

function StartReleaseForm({ projectId, environment, flag, metrics, metricsError, onStarted }: { projectId: string; environment: Environment; flag: Flag; metrics: Metric[] | undefined; metricsError: unknown; onStarted: () => void }) {
  const { start } = useReleaseMutations(projectId, environment.id, flag.id);
  const id = useId();
  const reviewed = environment.approvals_required > 0;
  const variants = flag.variants.filter((variant) => variant.key !== flag.off_variant);
  const [steps, setSteps] = useState(DEFAULT_STEPS.join(', '));
  const [hold, setHold] = useState({ amount: '1', unit: 3600 });
  const [check, setCheck] = useState({ amount: '5', unit: 60 });
  const [minUnits, setMinUnits] = useState('100');
  /** The guardrails picked: metric id → its tolerance as typed. */
  const [picked, setPicked] = useState<Record<string, string>>({});
  const [treatment, setTreatment] = useState(variants[0]?.key ?? '');
  const [errors, setErrors] = useState<FormErrors>({});
  const [outcome, setOutcome] = useState<{ ok: boolean; text: string } | null>(null);
  /** A field's error goes once the field is edited: it said what to change. */
  const editing = (field: keyof FormErrors, change: () => void) => {
    change();
    setErrors((current) => (current[field] === undefined ? current : { ...current, [field]: undefined }));
  };

  const percents = steps.split(/[\s,→>%]+/).filter(Boolean).map(Number);
  const first = percents[0];
  const startsTooHigh = flag.enabled && first !== undefined && flag.rollout_percentage > first;

  const submit = async (event: FormEvent) => {
    event.preventDefault();
    setOutcome(null);
    const fields = { steps: percents, hold: Number(hold.amount) * hold.unit, check: Number(check.amount) * check.unit, minUnits: Number(minUnits), picked, treatment, variants: variants.length > 0 };
    const found = checkForm(fields);
    setErrors(found);
    if (hasErrors(found)) return;
    const body: ReleaseBody = {
      steps: fields.steps,
      hold_seconds: fields.hold,
      check_seconds: fields.check,
      min_units: fields.minUnits,
      guardrails: Object.entries(picked).map(([metric_id, tolerance]) => ({ metric_id, tolerance: Number(tolerance) })),
      ...(variants.length > 0 ? { treatment } : {}),
    };
    try {
      const answer = await start.mutateAsync(body);
      if (isDrafted(answer)) setOutcome({ ok: true, text: `Added to the draft request: a guarded release of ${flag.key}, ${stepsText(fields.steps)}.` });
      else onStarted();
    } catch (caught) {
      setOutcome({ ok: false, text: `Not started: ${(caught as Error).message}` });
    }
  };

  const toggle = (metric: Metric, on: boolean) =>
    setPicked((current) => {
      const next = { ...current };
      if (on) next[metric.id] = '0';
      else delete next[metric.id];
      return next;
    });

  return (
    <form onSubmit={submit} noValidate aria-labelledby={`${id}-title`} className="release-form">
      <h4 id={`${id}-title`}>A new guarded release</h4>
      {startsTooHigh && (
        <p className="notice">
          {flag.key} is on at {flag.rollout_percentage} % in {environment.name}. A release starts from off, or from a rollout no higher than its first step ({first} %).
        </p>
      )}
      {flag.enabled && flag.everyone_else === 'off' && <p className="notice">{flag.key} is on, and everyone else gets it off: the rollout is not used. Set Everyone else to “served by the rollout”, or switch it off, before a release.</p>}
      <div className="inline-form">
        <Field label="Steps (%)" value={steps} onChange={(value) => editing('steps', () => setSteps(value))} error={errors.steps} hint="Comma-separated, increasing, the last 100" />
        <DurationField label="Hold at each step" amount={hold.amount} unit={hold.unit} onChange={(amount, unit) => editing('hold', () => setHold({ amount, unit }))} error={errors.hold} hint="The least time at a step before it moves on; at least 10 seconds" />
        <DurationField label="Check every" amount={check.amount} unit={check.unit} onChange={(amount, unit) => editing('check', () => setCheck({ amount, unit }))} error={errors.check} hint="How often the guardrails are compared; at least 10 seconds" />
        <Field label="Units on each side" type="number" min={1} value={minUnits} onChange={(value) => editing('minUnits', () => setMinUnits(value))} error={errors.minUnits} hint="Users with and without the release needed before any decision" />
        {variants.length > 0 && (
          <div className="field">
            <label htmlFor={`${id}-treatment`}>Variant to release</label>
            <select id={`${id}-treatment`} value={treatment} onChange={(event) => setTreatment(event.target.value)} aria-describedby={`${id}-treatment-hint`}>
              {variants.map((variant) => (
                <option key={variant.key} value={variant.key}>
                  {variant.key}
                </option>
              ))}
            </select>
            <p className="hint" id={`${id}-treatment-hint`}>
              The rollout serves it; everyone else gets {flag.off_variant ? <code>{flag.off_variant}</code> : 'the off variant'}.
            </p>
            <FormError message={errors.treatment} />
          </div>
        )}
      </div>
      <fieldset className="metric-picker" aria-describedby={`${id}-guardrails-hint`}>
        <legend>Guardrails</legend>
        <p className="hint" id={`${id}-guardrails-hint`}>
          Metrics that must not get worse. The tolerance is the largest harm you accept, as a difference per user; 0 rolls back on any harm the data shows.
        </p>
        {metrics === undefined ? (
          metricsError ? <FormError message={`The metrics could not be read: ${(metricsError as Error).message}`} /> : <Loading what="metrics" />
        ) : metrics.length === 0 ? (
          <p className="state">
            This project has no metrics yet. <Link to={`/projects/${projectId}/metrics`}>Create one</Link>, such as errors per user, lower is better.
          </p>
        ) : (
          <ul className="plain-list guardrail-choices">
            {metrics.map((metric) => {
              const on = picked[metric.id] !== undefined;
              return (
                <li key={metric.id} className="guardrail-choice">
                  <label className="checkbox">
                    <input type="checkbox" checked={on} onChange={(event) => editing('guardrails', () => toggle(metric, event.target.checked))} /> {metric.name} <span className="muted small">({metric.better} is better)</span>
                  </label>
                  {on && (
                    <Field
                      label={`Tolerance of ${metric.name}`}
                      type="number"
                      min={0}
                      step="any"
                      value={picked[metric.id] ?? ''}
                      onChange={(value) => setPicked((current) => ({ ...current, [metric.id]: value }))}
                      error={errors.tolerance?.[metric.id]}
                      hint={`In ${toleranceUnit(metric)}`}
                    />
                  )}
                </li>
              );
            })}
          </ul>
        )}
        <FormError message={errors.guardrails} />
      </fieldset>
      {reviewed && <p className="muted small">Changes to {environment.name} need approval: the release goes into the draft change request and starts when the request is applied.</p>}
      <div className="actions start">
        <button type="submit" disabled={start.isPending}>
          {reviewed ? 'Add the release to the request' : 'Start release'}
        </button>
      </div>
      <Outcome message={outcome} />
    </form>
  );
}
