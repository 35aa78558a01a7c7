import type { Metric } from '../../api/experiments';
import type { GuardrailFigures, Release, ReleaseCheck } from '../../api/releases';
import { plural } from '../../components/time';
import { signed } from '../experiments/wording';

export const STATUS_LABELS: Record<Release['status'], string> = { running: 'Running', paused: 'Paused', rolled_back: 'Rolled back', aborted: 'Aborted', completed: 'Completed' };
export const STATUS_CLASSES: Record<Release['status'], string> = { running: 'badge role', paused: 'badge stale', rolled_back: 'badge failed', aborted: 'badge off', completed: 'badge ok' };

export const DECISION_LABELS: Record<ReleaseCheck['decision'], string> = { roll_back: 'Rolled back', pause: 'Paused', advance: 'Moved to the next step', complete: 'Completed', wait: 'Waited' };
export const GUARDRAIL_LABELS: Record<GuardrailFigures['decision'], string> = { harmful: 'harmful', no_harm: 'no harm beyond the tolerance', not_enough_data: 'not enough data yet' };

/** A number of seconds as people say it: "10 s", "5 min", "1 h 30 min", "2 days". */
export function duration(seconds: number): string {
  if (seconds < 60) return `${seconds} s`;
  if (seconds < 3600) return seconds % 60 === 0 ? `${seconds / 60} min` : `${Math.floor(seconds / 60)} min ${seconds % 60} s`;
  if (seconds < 86_400 || seconds % 86_400 !== 0) {
    const hours = Math.floor(seconds / 3600);
    const minutes = Math.round((seconds % 3600) / 60);
    return minutes === 0 ? `${hours} h` : `${hours} h ${minutes} min`;
  }
  return plural(seconds / 86_400, 'day');
}

/** A mean or a difference with three significant digits. */
const figure = new Intl.NumberFormat('en-US', { maximumSignificantDigits: 3 });
export const number = (value: number) => figure.format(value);

/** What a tolerance is counted in, by the metric's kind: the unit of the difference the release tests. */
export function toleranceUnit(metric: Pick<Metric, 'kind' | 'event'> | undefined): string {
  switch (metric?.kind) {
    case 'conversion':
      return `a share of units with ${metric.event} (0.01 is one percentage point)`;
    case 'count':
      return `${metric.event} events per unit`;
    case 'sum':
      return `the value of ${metric.event} summed per unit`;
    case 'mean':
      return `the mean value of ${metric.event}`;
    default:
      return 'the metric’s own unit per unit';
  }
}

/** "5 → 10 → 25 → 50 → 100 %" */
export const stepsText = (steps: readonly number[]) => `${steps.join(' → ')} %`;

/**
 * One guardrail at one check in words: the means, the difference, its bound against the limit and
 * what that decided; before enough data, how many units each side has of the minimum.
 */
export function guardrailSentence(figures: GuardrailFigures, name: string, minUnits: number): string {
  if (figures.bound === null || figures.decision === 'not_enough_data') {
    return `${name}: not enough data yet. The release serves ${plural(figures.units.treatment, 'unit')}, the comparison group has ${plural(figures.units.control, 'unit')}; each side needs ${minUnits} and a spread of values.`;
  }
  const worse = figures.better === 'lower' ? 'above' : 'below';
  const where = figures.decision === 'harmful' ? `beyond the tolerance (${worse} ${signed(figures.limit)})` : `within the tolerance (not ${worse} ${signed(figures.limit)})`;
  return `${name}: ${number(figures.means.treatment)} per unit with the release against ${number(figures.means.control)} without it, a difference of ${signed(figures.difference)}. Even at its most favourable the difference is ${signed(figures.bound)}, ${where}: ${GUARDRAIL_LABELS[figures.decision]}.`;
}

/** The smallest harm beyond the tolerance a check could have detected, in words. */
export function detectableText(figures: GuardrailFigures | undefined): string {
  if (!figures || figures.detectable_harm === null) return 'Not known until each side has enough units.';
  return `${number(figures.detectable_harm)} (a harm beyond the tolerance smaller than this could go unnoticed at this check)`;
}

/** Where the release stands, in words. */
export function releaseSummary(release: Release): string {
  const step = `step ${release.current_step + 1} of ${release.steps.length} (${release.rollout_percentage} %)`;
  switch (release.status) {
    case 'running':
      return `At ${step}. It moves on once ${duration(release.hold_seconds)} have passed at a step, both sides have ${plural(release.min_units, 'unit')} and no guardrail shows harm; it is checked every ${duration(release.check_seconds)}.`;
    case 'paused':
      return `Paused at ${step}${release.reason ? `: ${release.reason}` : '.'} Resume it to carry on.`;
    case 'rolled_back':
      return `Rolled back at ${step}${release.reason ? `: ${release.reason}` : '.'} The flag is back to what it was before the release.`;
    case 'aborted':
      return `Aborted at ${step}${release.reason ? `: ${release.reason}` : '.'}`;
    case 'completed':
      return `Completed: the rollout is at 100 %${release.treatment === 'on' ? '' : `, serving ${release.treatment}`}.`;
  }
}
