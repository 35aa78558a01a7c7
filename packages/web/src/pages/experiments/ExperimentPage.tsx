import { useId, useState } from 'react';
import { Link, useNavigate, useParams } from 'react-router';
import type { AuditEvent } from '../../api/client';
import { downloadUnits, useExperiment, useMetrics, useResults, useTimeline, type Experiment, type Metric, type MetricResult, type Results } from '../../api/experiments';
import { useEnvironments } from '../../api/queries';
import { useRole } from '../../api/roles';
import { FormError } from '../../components/FormError';
import { extentOf, IntervalAxis, IntervalRow, type Verdict } from '../../components/IntervalTrack';
import { ErrorState, Loading, QueryState } from '../../components/States';
import { ago, dateTime, plural } from '../../components/time';
import { changes } from '../audit/AuditList';
import { ExperimentActions, STATUS_LABELS, statusClass } from './ExperimentsPage';
import { windowText } from './MetricsPage';
import { bounds, formatChange, headline, level, percent, sentence, verdict } from './wording';

/** A chance to win as a percentage; near certainty keeps a decimal, so that 99.7 % never reads as 100 %. */
const chance = (value: number) => `${(value * 100).toFixed(value > 0.99 || value < 0.01 ? 1 : 0)} %`;

const ROLE_LABELS: Record<MetricResult['role'], string> = { primary: 'Primary', secondary: 'Secondary', guardrail: 'Guardrail' };

/** One experiment: what it asks, its results in words and as intervals against zero, and its timeline. */
export function ExperimentPage() {
  const { projectId = '', envId = '', experimentId = '' } = useParams();
  const navigate = useNavigate();
  const experiment = useExperiment(projectId, envId, experimentId);
  const environments = useEnvironments(projectId);
  const metrics = useMetrics(projectId);
  const { can } = useRole(projectId);
  const envName = environments.data?.find((env) => env.id === envId)?.name ?? 'this environment';
  const envKey = environments.data?.find((env) => env.id === envId)?.key;
  const back = `/projects/${projectId}/experiments${envKey ? `?env=${envKey}` : ''}`;

  return (
    <QueryState query={experiment} what="the experiment">
      {(data) => (
        <div className="stack">
          <p className="crumbs">
            <Link to={back}>Experiments in {envName}</Link>
          </p>
          <div className="page-head">
            <div>
              <h2>
                {data.name} <span className={statusClass(data.status)}>{STATUS_LABELS[data.status]}</span>
              </h2>
              <p className="muted">
                Flag <code>{data.flag_key}</code> in {envName}, control <code>{data.control}</code>
              </p>
            </div>
            {can('editor') && <ExperimentActions projectId={projectId} envId={envId} experiment={data} onDeleted={() => navigate(back)} />}
          </div>
          {data.hypothesis && <p className="hypothesis">{data.hypothesis}</p>}
          <Facts experiment={data} metrics={metrics.data ?? []} />
          <ResultsSection projectId={projectId} envId={envId} experiment={data} metrics={metrics.data ?? []} canExport={can('editor')} />
          <Timeline projectId={projectId} experiment={data} />
        </div>
      )}
    </QueryState>
  );
}

function Facts({ experiment, metrics }: { experiment: Experiment; metrics: Metric[] }) {
  const metricName = (id: string) => metrics.find((metric) => metric.id === id)?.name ?? 'a deleted metric';
  return (
    <section className="panel" aria-labelledby="experiment-setup">
      <h3 id="experiment-setup">Setup</h3>
      <dl className="facts">
        <dt>Metrics</dt>
        <dd>
          <ul className="plain-list">
            {experiment.metrics.map((choice) => (
              <li key={choice.metric_id}>
                {metricName(choice.metric_id)} <span className="muted small">({ROLE_LABELS[choice.role].toLowerCase()})</span>
              </li>
            ))}
          </ul>
        </dd>
        <dt>Intervals</dt>
        <dd>
          {level(experiment.alpha)}
          {experiment.sequential ? `, sequential (tuned for ${experiment.sequential_tuning} units)` : ''}
          {experiment.cuped ? `, CUPED over ${plural(experiment.cuped_lookback_days, 'day')} before exposure` : ''}
        </dd>
        <dt>Enough data</dt>
        <dd>{plural(experiment.min_units, 'unit')} per arm</dd>
        {experiment.expected_shares && (
          <>
            <dt>Expected shares</dt>
            <dd>
              {Object.entries(experiment.expected_shares)
                .map(([arm, share]) => `${arm} ${(share * 100).toFixed(1)} %`)
                .join(', ')}
            </dd>
          </>
        )}
        {experiment.status === 'stopped' && (
          <>
            <dt>Decision</dt>
            <dd>
              {experiment.decision ? (
                <span>
                  Ship <code>{experiment.decision}</code>
                </span>
              ) : (
                'None'
              )}
              {experiment.note && <span className="muted">{experiment.note}</span>}
            </dd>
          </>
        )}
      </dl>
    </section>
  );
}

function ResultsSection({ projectId, envId, experiment, metrics, canExport }: { projectId: string; envId: string; experiment: Experiment; metrics: Metric[]; canExport: boolean }) {
  const results = useResults(projectId, envId, experiment);
  const [exportError, setExportError] = useState<string | null>(null);
  const exportUnits = async () => {
    setExportError(null);
    try {
      await downloadUnits(projectId, envId, experiment);
    } catch (caught) {
      setExportError(`Not downloaded: ${(caught as Error).message}`);
    }
  };
  let body;
  if (experiment.status === 'draft') body = <p className="state">Results appear once the experiment is started and your app sends exposures and events.</p>;
  else if (results.isPending) body = <Loading what="results" />;
  else if (results.error) body = <ErrorState error={results.error} retry={() => void results.refetch()} />;
  else if (results.data.computed_at === null) body = <p className="state">No results yet: they are computed within seconds of the first exposures and events your app sends.</p>;
  else body = <ResultsView experiment={experiment} results={results.data} metrics={metrics} />;
  return (
    <section className="panel" aria-labelledby="experiment-results">
      <div className="page-head">
        <h3 id="experiment-results">Results</h3>
        {canExport && experiment.status !== 'draft' && (
          <button type="button" className="secondary small" onClick={() => void exportUnits()}>
            Download units (CSV)
          </button>
        )}
      </div>
      <FormError message={exportError} />
      {body}
    </section>
  );
}

function ResultsView({ experiment, results, metrics }: { experiment: Experiment; results: Results; metrics: Metric[] }) {
  const arms = Object.entries(results.arms);
  const share = (units: number) => (results.units > 0 ? `${((units / results.units) * 100).toFixed(1)} %` : '—');
  return (
    <div className="stack">
      <p className="muted small">
        {plural(results.units, 'unit')} exposed · computed <time dateTime={results.computed_at ?? ''} title={results.computed_at ? dateTime(results.computed_at) : undefined}>{ago(results.computed_at)}</time>
      </p>
      {results.srm?.flagged && (
        <div className="warning" role="note" aria-label="Sample ratio mismatch">
          <strong>Sample ratio mismatch.</strong> The arms did not get the units the flag’s weights foresee ({results.srm.p_value < 0.001 ? 'p < 0.001' : `p = ${results.srm.p_value.toFixed(3)}`}): something other than chance decides who sees what (a rule, a cache, a redirect that loses units). Do not trust these results until the cause is found.
        </div>
      )}
      {results.multiple_exposures && results.multiple_exposures.units > 0 && (
        <div className="warning" role="note" aria-label="Units in more than one arm">
          <strong>{plural(results.multiple_exposures.units, 'unit')} ({percent(results.multiple_exposures.share).replace('+', '')}) saw more than one arm</strong> and are left out of the comparison. Many such units point at a unit id that changes, or a flag changed while the experiment ran.
        </div>
      )}
      {!results.enough_data && (
        <p className="notice">
          <strong>Not enough data yet.</strong> Each arm needs at least {plural(experiment.min_units, 'unit')} before its results are worth reading.
        </p>
      )}
      <div className="table-wrap">
        <table className="plain list">
          <caption className="visually-hidden">Units per arm</caption>
          <thead>
            <tr>
              <th scope="col">Arm</th>
              <th scope="col">Units</th>
              <th scope="col">Share</th>
              <th scope="col">Expected</th>
            </tr>
          </thead>
          <tbody>
            {arms.map(([arm, figures]) => (
              <tr key={arm}>
                <th scope="row">
                  <code>{arm}</code>
                  {arm === experiment.control && <span className="muted small"> control</span>}
                </th>
                <td data-label="Units">{figures.units}</td>
                <td data-label="Share">{share(figures.units)}</td>
                <td data-label="Expected">{(figures.expected_share * 100).toFixed(1)} %</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      {results.metrics.length === 0 ? (
        <p className="state">No metric has figures yet.</p>
      ) : (
        results.metrics.map((result) => <MetricResultView key={result.metric_id} experiment={experiment} result={result} metric={metrics.find((metric) => metric.id === result.metric_id)} />)
      )}
    </div>
  );
}

function MetricResultView({ experiment, result, metric }: { experiment: Experiment; result: MetricResult; metric: Metric | undefined }) {
  const id = useId();
  const name = metric?.name ?? result.key;
  const treatments = Object.entries(result.versus_control);
  const sentences = treatments.map(([arm, versus]) => ({ arm, versus, text: sentence(arm, name, versus, experiment.alpha), verdict: verdict(versus, metric?.better) }));
  return (
    <article className="metric-result" aria-labelledby={`${id}-title`}>
      <h4 id={`${id}-title`}>
        {name} <span className="muted small">{ROLE_LABELS[result.role].toLowerCase()}{metric ? `, ${metric.better} is better, ${metric.kind}, ${windowText(metric.window_hours)}` : ''}</span>
      </h4>
      {treatments.length === 0 ? (
        <p className="state">No arm to compare with the control yet.</p>
      ) : (
        <>
          <ul className="plain-list result-sentences" id={`${id}-words`}>
            {sentences.map((item) => (
              <li key={item.arm} className={`verdict-${item.verdict}`}>
                {item.text}
                {item.verdict !== 'unclear' && <span className="muted small"> {item.verdict === 'good' ? 'An improvement.' : 'Worse.'}</span>}
                {item.versus.chance_to_win !== null && <span className="muted small"> Chance to beat the control: {chance(item.versus.chance_to_win)}.</span>}
              </li>
            ))}
          </ul>
          <Intervals experiment={experiment} name={name} items={sentences} describedBy={`${id}-words`} />
        </>
      )}
    </article>
  );
}

/**
 * Each arm's interval against the control drawn across a zero line (IntervalTrack). One image for
 * assistive technology, named by what it shows and described by the sentences above it, which say
 * the same figures in words.
 */
function Intervals({ experiment, name, items, describedBy }: { experiment: Experiment; name: string; items: { arm: string; versus: MetricResult['versus_control'][string]; verdict: Verdict }[]; describedBy: string }) {
  const relative = items.every((item) => item.versus.relative !== null);
  const comparisons = items.map((item) => ({ ...item, comparison: relative ? headline(item.versus).comparison : item.versus.absolute }));
  const extent = extentOf(comparisons.flatMap(({ comparison }) => [...bounds(comparison), comparison.estimate]));
  return (
    <figure className="intervals">
      <div role="img" aria-label={`${name}: ${level(experiment.alpha)} intervals of each arm against ${experiment.control}, ${relative ? 'relative' : 'absolute'}`} aria-describedby={describedBy}>
        {comparisons.map(({ arm, comparison, verdict }) => {
          const [lo, hi] = bounds(comparison);
          return <IntervalRow key={arm} label={arm} extent={extent} lo={lo} hi={hi} estimate={comparison.estimate} verdict={verdict} />;
        })}
        <IntervalAxis extent={extent} format={(value) => formatChange(value, relative)} />
      </div>
      <figcaption className="muted small">
        {relative ? 'Relative change' : 'Absolute difference'} against <code>{experiment.control}</code>, {level(experiment.alpha)} {experiment.sequential ? 'confidence sequences' : 'confidence intervals'}; an interval clear of zero is a clear difference.
      </figcaption>
    </figure>
  );
}

const ACTION_WORDS: Record<string, string> = {
  'experiment.created': 'Experiment created',
  'experiment.started': 'Experiment started',
  'experiment.stopped': 'Experiment stopped',
  'flag.updated': 'Flag changed',
  'flag.toggled': 'Flag switched',
  'flag.deleted': 'Flag deleted',
  'rule.created': 'Rule added',
  'rule.updated': 'Rule changed',
  'rule.deleted': 'Rule removed',
};

/** What happened to the experiment and to its flag while it ran: a change of the flag in that time is a reason to read the results with care. */
function Timeline({ projectId, experiment }: { projectId: string; experiment: Experiment }) {
  const timeline = useTimeline(projectId, experiment);
  return (
    <section className="panel" aria-labelledby="experiment-timeline">
      <h3 id="experiment-timeline">Timeline</h3>
      <QueryState query={timeline} what="the timeline">
        {(events) =>
          events.length === 0 ? (
            <p className="state">Nothing recorded yet.</p>
          ) : (
            <ol className="timeline">
              {events.map((event) => (
                <TimelineItem key={event.id} experiment={experiment} event={event} />
              ))}
            </ol>
          )
        }
      </QueryState>
    </section>
  );
}

function TimelineItem({ experiment, event }: { experiment: Experiment; event: AuditEvent }) {
  const own = event.resource_type === 'experiment';
  const running = experiment.started_at !== null && event.created_at >= experiment.started_at && (experiment.stopped_at === null || event.created_at <= experiment.stopped_at);
  const fields = own ? [] : changes(event).map((change) => change.field);
  const decision = event.action === 'experiment.stopped' ? (event.after?.decision as string | null | undefined) : undefined;
  return (
    <li className={own ? 'timeline-item own' : running ? 'timeline-item during' : 'timeline-item'}>
      <time dateTime={event.created_at}>{dateTime(event.created_at)}</time>
      <span>
        <strong>{ACTION_WORDS[event.action] ?? event.action}</strong>
        {decision !== undefined && (decision ? <>, decision: ship <code>{decision}</code></> : ', no decision')}
        {fields.length > 0 && <span className="muted"> ({fields.join(', ')})</span>}
        {!own && running && <span className="badge stale">while running</span>}
        <span className="muted small"> by {event.actor.email ?? 'a deleted user'}</span>
      </span>
    </li>
  );
}
