/**
 * One check of a guarded release (docs/releases.md, "Who is compared" and "Decisions"): who took
 * part on each side, each guardrail's one-sided sequential bound, the sample-ratio test, and the
 * decision they lead to. `analyse` reads the rows; everything after it is pure.
 */
import { bucketOf, hashKeyOf } from '@guidon/engine';
import type { Database } from '../../db/database.js';
import { eachRow, valueOf } from '../experiments/results.js';
import type { Metric } from '../experiments/metrics.repository.js';
import { oneSidedSequentialHalfWidth, sampleRatioMismatch, summarize, summarizeRatio, type ArmSummary } from '../experiments/statistics.js';
import type { Guardrail } from './releases.repository.js';
import type { CheckDecision, GuardrailDecision, GuardrailFigures, ReleaseCheck } from './releases.schemas.js';

/** The level of the whole release, split over its guardrails (α/k each), and the sequence's tuning N*. */
export const ALPHA = 0.05;
export const TUNING = 5000;
/** The highest step with a control left: above it there is no bucket in [50, 50 + r) that the flag does not serve. */
export const MONITORED_UP_TO = 50;

const HOUR_MS = 60 * 60 * 1000;
const TREATMENT = 0;
const CONTROL = 1;

/** What a check needs of a release. */
export interface ReleaseUnderCheck {
  steps: number[];
  /** Epoch ms each reached step started, by index (its length is the current step + 1). */
  stepStarts: number[];
  currentStep: number;
  paused: boolean;
  environmentId: string;
  flag: { key: string; bucketingKey: string | null };
  treatment: string;
  control: string;
  holdMs: number;
  minUnits: number;
  guardrails: Guardrail[];
}

/** The units taking part: per unit its side and the time it entered (its first exposure that counts). */
export interface Participants {
  side: Map<string, number>;
  since: Map<string, number>;
  counts: [treatment: number, control: number];
}

/**
 * The step whose rollout first puts a bucket's side in range (treatment: bucket < r; control:
 * bucket − 50 < r), or -1 when no monitored step does.
 */
export function entryStep(steps: readonly number[], bucket: number): number {
  const offset = bucket < 50 ? bucket : bucket - 50;
  for (let i = 0; i < steps.length && steps[i]! <= MONITORED_UP_TO; i++) if (steps[i]! > offset) return i;
  return -1;
}

/**
 * Every unit that takes part, from the flag's exposures: its side set by its bucket, from its
 * first exposure at or after the step that put its bucket in range, with the arm that side is
 * served (an exposure that disagrees, a ruleset not caught up, is left out).
 */
export async function readParticipants(database: Database, release: ReleaseUnderCheck): Promise<Participants> {
  const hashKey = hashKeyOf({ key: release.flag.key, bucketingKey: release.flag.bucketingKey ?? undefined });
  const side = new Map<string, number>();
  const since = new Map<string, number>();
  const entryByBucket = Array.from({ length: 100 }, (_, bucket) => entryStep(release.steps, bucket));
  const counts: [number, number] = [0, 0];
  await eachRow(database, 'exposures', release.environmentId, release.flag.key, ([, unit, arm, rowAt]) => {
    const at = Number(rowAt);
    const known = since.get(unit);
    if (known !== undefined && known <= at) return;
    const bucket = bucketOf(hashKey, unit);
    const entry = entryByBucket[bucket]!;
    if (entry < 0 || entry > release.currentStep || at < release.stepStarts[entry]!) return;
    const s = bucket < 50 ? TREATMENT : CONTROL;
    if (arm !== (s === TREATMENT ? release.treatment : release.control)) return;
    if (known === undefined) {
      side.set(unit, s);
      counts[s]++;
    }
    since.set(unit, at);
  });
  return { side, since, counts };
}

/** Per side, one metric's summary over the participants: their events from their entry on (within the metric's window). */
export async function readSummaries(database: Database, environmentId: string, metric: Metric, participants: Participants): Promise<[ArmSummary, ArmSummary]> {
  const count = new Map<string, number>();
  const sum = new Map<string, number>();
  const window = metric.window_hours === null ? Infinity : metric.window_hours * HOUR_MS;
  await eachRow(database, 'events', environmentId, metric.event, ([, unit, value, rowAt]) => {
    const entered = participants.since.get(unit);
    const at = Number(rowAt);
    if (entered === undefined || at < entered || at - entered > window) return;
    count.set(unit, (count.get(unit) ?? 0) + 1);
    sum.set(unit, (sum.get(unit) ?? 0) + Number(value));
  });
  return [TREATMENT, CONTROL].map((s) => summaryOf(metric.kind, participants, s, count, sum)) as [ArmSummary, ArmSummary];
}

function summaryOf(kind: Metric['kind'], participants: Participants, s: number, count: Map<string, number>, sum: Map<string, number>): ArmSummary {
  const moments = { n: 0, sum: 0, sumSquares: 0 };
  const ratio = { n: 0, numerator: { sum: 0, sumSquares: 0 }, denominator: { sum: 0, sumSquares: 0 }, sumOfProducts: 0 };
  for (const [unit, unitSide] of participants.side) {
    if (unitSide !== s) continue;
    const c = count.get(unit) ?? 0;
    const y = sum.get(unit) ?? 0;
    if (kind === 'mean') {
      ratio.n++;
      ratio.numerator.sum += y;
      ratio.numerator.sumSquares += y * y;
      ratio.denominator.sum += c;
      ratio.denominator.sumSquares += c * c;
      ratio.sumOfProducts += y * c;
    } else {
      const value = valueOf(kind, c, y);
      moments.n++;
      moments.sum += value;
      moments.sumSquares += value * value;
    }
  }
  return kind === 'mean' ? summarizeRatio(ratio) : summarize(kind, moments);
}

/**
 * One guardrail's figures: the difference of means (treatment − control), its one-sided bound
 * on the better side at level α/k, and whether that bound lies beyond the tolerance on the worse
 * side. No decision before each side has `minUnits` and the standard error is positive.
 */
export function guardrailFigures(
  metric: Pick<Metric, 'id' | 'key' | 'better'>,
  tolerance: number,
  [treatment, control]: readonly [ArmSummary, ArmSummary],
  options: { guardrails: number; minUnits: number },
): GuardrailFigures {
  const difference = treatment.mean - control.mean;
  const se = Math.sqrt(treatment.variance / treatment.n + control.variance / control.n);
  const worseIsHigher = metric.better === 'lower';
  const limit = worseIsHigher ? tolerance : -tolerance;
  const base = {
    metric_id: metric.id,
    metric_key: metric.key,
    better: metric.better,
    tolerance,
    units: { treatment: treatment.n, control: control.n },
    means: { treatment: treatment.mean, control: control.mean },
    difference,
    limit,
  };
  if (treatment.n < options.minUnits || control.n < options.minUnits || !(se > 0) || !Number.isFinite(se)) {
    return { ...base, bound: null, detectable_harm: null, decision: 'not_enough_data' };
  }
  const halfWidth = oneSidedSequentialHalfWidth(se, treatment.n + control.n, ALPHA / options.guardrails, TUNING);
  const bound = worseIsHigher ? difference - halfWidth : difference + halfWidth;
  const harmful = worseIsHigher ? bound > limit : bound < limit;
  const decision: GuardrailDecision = harmful ? 'harmful' : 'no_harm';
  return { ...base, bound, detectable_harm: halfWidth, decision };
}

const percent = (value: number) => `${value} %`;
/** A time left in words: "45 s", "12 min", "3 h 20 min". */
function duration(ms: number): string {
  const minutes = Math.round(ms / 60_000);
  if (ms < 60_000) return `${Math.max(1, Math.round(ms / 1000))} s`;
  if (minutes < 60) return `${minutes} min`;
  return `${Math.floor(minutes / 60)} h${minutes % 60 === 0 ? '' : ` ${minutes % 60} min`}`;
}
const figure = (value: number) => (Math.abs(value) >= 100 ? value.toFixed(1) : Number(value.toPrecision(3)).toString());
const signed = (value: number) => (value > 0 ? `+${figure(value)}` : figure(value));

/** The decision of a check from its figures, with the words that explain it. */
export function decide(release: ReleaseUnderCheck, figures: Omit<ReleaseCheck, 'decision' | 'explanation'>, now: number): { decision: CheckDecision; explanation: string } {
  const step = release.steps[release.currentStep]!;
  const next = release.steps[release.currentStep + 1];
  const harmful = figures.guardrails.find((guardrail) => guardrail.decision === 'harmful');
  if (figures.monitored && harmful) {
    const worse = harmful.better === 'lower' ? 'higher' : 'lower';
    return {
      decision: 'roll_back',
      explanation:
        `${harmful.metric_key} got worse: ${figure(harmful.means.treatment)} per unit with the change against ${figure(harmful.means.control)} without ` +
        `(${harmful.units.treatment} and ${harmful.units.control} units; difference ${signed(harmful.difference)}). Even at its most favourable bound, ` +
        `${signed(harmful.bound!)}, it is ${worse} than the tolerance allows (${signed(harmful.limit)}).`,
    };
  }
  if (figures.monitored && figures.srm.flagged && !release.paused) {
    return {
      decision: 'pause',
      explanation: `Sample ratio mismatch: ${figures.units.treatment} units with the change against ${figures.units.control} without, where half and half were expected (p = ${figures.srm.p_value.toPrecision(2)}). Paused until someone resumes it: check that exposures are sent for both sides.`,
    };
  }
  if (release.paused) return { decision: 'wait', explanation: `Paused at ${percent(step)}: no guardrail showed harm; it goes on when resumed.` };
  const holdEnds = release.stepStarts[release.currentStep]! + release.holdMs;
  if (now < holdEnds) return { decision: 'wait', explanation: `Holding at ${percent(step)} for ${duration(holdEnds - now)} more; no guardrail showed harm so far.` };
  if (figures.monitored && (figures.units.treatment < release.minUnits || figures.units.control < release.minUnits)) {
    return { decision: 'wait', explanation: `Waiting at ${percent(step)} for ${release.minUnits} units on each side: ${figures.units.treatment} with the change, ${figures.units.control} without.` };
  }
  const reason = figures.monitored ? 'no guardrail showed harm' : 'not monitored above 50 % (no control is left)';
  if (next === 100) return { decision: 'complete', explanation: `Hold passed at ${percent(step)} and ${reason}: raised to 100 %, the release is complete.` };
  return { decision: 'advance', explanation: `Hold passed at ${percent(step)} and ${reason}: raised to ${percent(next!)}.` };
}

/** Every figure of a check and its decision, read from the database now. */
export async function analyse(database: Database, release: ReleaseUnderCheck, metrics: ReadonlyMap<string, Metric>, now: number): Promise<ReleaseCheck> {
  const step = release.steps[release.currentStep]!;
  const monitored = step <= MONITORED_UP_TO;
  const participants = monitored ? await readParticipants(database, release) : { side: new Map(), since: new Map(), counts: [0, 0] as [number, number] };
  const [treatmentUnits, controlUnits] = participants.counts;
  const guardrails: GuardrailFigures[] = [];
  if (monitored) {
    for (const guardrail of release.guardrails) {
      const metric = metrics.get(guardrail.metric_id);
      if (!metric) continue; // deleted since: nothing left to compare
      const summaries = await readSummaries(database, release.environmentId, metric, participants);
      guardrails.push(guardrailFigures(metric, guardrail.tolerance, summaries, { guardrails: release.guardrails.length, minUnits: release.minUnits }));
    }
  }
  const figures = {
    at: new Date(now).toISOString(),
    step,
    monitored,
    units: { treatment: treatmentUnits, control: controlUnits },
    srm: sampleRatioMismatch({ treatment: treatmentUnits, control: controlUnits }, { treatment: 0.5, control: 0.5 }),
    guardrails,
  };
  return { ...figures, ...decide(release, figures, now) };
}
