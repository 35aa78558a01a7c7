// The statistics of an experiment's results (docs/experiments.md, "How results are computed"):
// pure functions from per-unit data, or from the sums a query can add up, to every figure of the
// results answer. They follow GrowthBook's gbstats formula for formula (frequentist engine);
// where the contract deliberately differs, the comment says so. No database, no HTTP.
import chisquareCdf from '@stdlib/stats-base-dists-chisquare-cdf';
import normalCdf from '@stdlib/stats-base-dists-normal-cdf';
import tCdf from '@stdlib/stats-base-dists-t-cdf';
import tQuantile from '@stdlib/stats-base-dists-t-quantile';

export type MetricKind = 'conversion' | 'count' | 'sum' | 'mean';
export type Better = 'higher' | 'lower';

/** Σv and Σv² of one quantity over an arm's units. */
export interface Moments {
  sum: number;
  sumSquares: number;
}

/** What one arm needs for a conversion, count or sum metric: its units' values y. */
export interface ValueSums extends Moments {
  n: number;
}

/** What one arm needs for a `mean` (ratio) metric: per unit, y = the sum of its events' values
 *  and d = its number of events (0 for a unit without any: it still counts in n). */
export interface RatioSums {
  n: number;
  numerator: Moments;
  denominator: Moments;
  /** Σ y·d */
  sumOfProducts: number;
}

/** What one arm needs for CUPED: y the unit's value, x its value over the lookback (0 if none). */
export interface CupedSums {
  n: number;
  post: Moments;
  pre: Moments;
  /** Σ y·x */
  sumOfProducts: number;
}

export interface ArmSummary {
  n: number;
  mean: number;
  variance: number;
}

export interface Interval {
  estimate: number;
  ci: [number, number];
  p_value: number;
}

export interface Comparison {
  absolute: Interval;
  relative: Interval;
  /** null when the control mean is 0 or the comparison could not be made */
  chance_to_win: number | null;
  significant: boolean;
  cuped_applied: boolean;
}

export interface TestOptions {
  alpha: number;
  better: Better;
  /** N*, the sequential tuning; absent: a fixed-horizon test */
  sequentialTuning?: number;
}

const NULL_INTERVAL: Interval = { estimate: 0, ci: [0, 0], p_value: 1 };

// ---------------------------------------------------------------- sums from per-unit values

export function valueSums(values: readonly number[]): ValueSums {
  let sum = 0;
  let sumSquares = 0;
  for (const v of values) {
    sum += v;
    sumSquares += v * v;
  }
  return { n: values.length, sum, sumSquares };
}

/** Σa, Σa², Σb, Σb² and Σab over pairs: what the ratio and the CUPED figures are made of. */
function pairSums<T>(units: readonly T[], a: (unit: T) => number, b: (unit: T) => number) {
  const first = { sum: 0, sumSquares: 0 };
  const second = { sum: 0, sumSquares: 0 };
  let sumOfProducts = 0;
  for (const unit of units) {
    const [x, y] = [a(unit), b(unit)];
    first.sum += x;
    first.sumSquares += x * x;
    second.sum += y;
    second.sumSquares += y * y;
    sumOfProducts += x * y;
  }
  return { n: units.length, first, second, sumOfProducts };
}

export function ratioSums(units: readonly { value: number; events: number }[]): RatioSums {
  const { n, first, second, sumOfProducts } = pairSums(units, (unit) => unit.value, (unit) => unit.events);
  return { n, numerator: first, denominator: second, sumOfProducts };
}

export function cupedSums(units: readonly { value: number; covariate: number }[]): CupedSums {
  const { n, first, second, sumOfProducts } = pairSums(units, (unit) => unit.value, (unit) => unit.covariate);
  return { n, post: first, pre: second, sumOfProducts };
}

// ---------------------------------------------------------------- per-arm summaries

function meanOf(m: Moments, n: number): number {
  return n === 0 ? 0 : m.sum / n;
}

/** p(1 − p) for a conversion (gbstats' ProportionStatistic), else the sample variance (n − 1)
 *  (SampleMeanStatistic); 0 below two units. Not clamped here: as in gbstats, a component may
 *  come out slightly negative from rounded sums, and only the arm's final variance is clamped. */
function varianceOf(kind: MetricKind, m: Moments, n: number): number {
  if (kind === 'conversion') {
    const p = meanOf(m, n);
    return p * (1 - p);
  }
  if (n <= 1) return 0;
  return (m.sumSquares - (m.sum * m.sum) / n) / (n - 1);
}

/** cov(a, b): over n for two conversions, n − 1 otherwise (gbstats' compute_covariance). */
function covarianceOf(kind: MetricKind, a: Moments, b: Moments, sumOfProducts: number, n: number): number {
  if (n <= 1) return 0;
  if (kind === 'conversion') return sumOfProducts / n - (a.sum * b.sum) / (n * n);
  return (sumOfProducts - (a.sum * b.sum) / n) / (n - 1);
}

export function summarize(kind: Exclude<MetricKind, 'mean'>, sums: ValueSums): ArmSummary {
  return { n: sums.n, mean: meanOf(sums, sums.n), variance: Math.max(0, varianceOf(kind, sums, sums.n)) };
}

/** Var(M/D) by the delta method, M and D with the given means, variances and covariance. */
function varianceOfRatio(meanM: number, varM: number, meanD: number, varD: number, covMD: number): number {
  if (meanD === 0) return 0;
  return varM / meanD ** 2 + (varD * meanM ** 2) / meanD ** 4 - (2 * covMD * meanM) / meanD ** 3;
}

/** A `mean` metric per arm: Σ values / Σ events over its units, the per-unit variance of that
 *  ratio by the delta method (gbstats' RatioStatistic; divided by n in the tests as any other). */
export function summarizeRatio(sums: RatioSums): ArmSummary {
  const { n, numerator, denominator } = sums;
  const mean = denominator.sum === 0 ? 0 : numerator.sum / denominator.sum;
  const meanD = meanOf(denominator, n);
  if (meanD === 0 || n <= 1) return { n, mean, variance: 0 };
  const variance = varianceOfRatio(
    meanOf(numerator, n),
    varianceOf('sum', numerator, n),
    meanD,
    varianceOf('sum', denominator, n),
    covarianceOf('sum', numerator, denominator, sums.sumOfProducts, n),
  );
  return { n, mean, variance: Math.max(0, variance) };
}

// ---------------------------------------------------------------- tests

/** Welch–Satterthwaite; when one arm's variance is 0, the other arm's n − 1 (which the formula
 *  gives as well, written out so that 0/0 never happens). */
export function welchDegreesOfFreedom(vc: number, nc: number, vt: number, nt: number): number {
  if (vc === 0) return nt - 1;
  if (vt === 0) return nc - 1;
  const c = vc / nc;
  const t = vt / nt;
  return (c + t) ** 2 / (c ** 2 / (nc - 1) + t ** 2 / (nt - 1));
}

/** ρ of the asymptotic confidence sequence, two-sided, for the tuning N*. */
export function sequentialRho(alpha: number, tuning: number): number {
  const l = -2 * Math.log(alpha);
  return Math.sqrt((l + Math.log(l + 1)) / tuning);
}

/**
 * The half-width of the one-sided confidence sequence at level α (gbstats'
 * sequential_interval_halfwidth_one_sided; Waudby-Smith et al. 2023, eq. 134): ρ computed with
 * 2α, s² = SE²·n, n = n_t + n_c. A guarded release's bound on the better side is the estimate
 * ∓ this (docs/releases.md).
 */
export function oneSidedSequentialHalfWidth(se: number, n: number, alpha: number, tuning: number): number {
  const rho = sequentialRho(2 * alpha, tuning);
  const nr2 = n * rho * rho;
  return Math.sqrt(((se * se * n * 2 * (nr2 + 1)) / (n * rho) ** 2) * Math.log(1 + Math.sqrt(nr2 + 1) / (2 * alpha)));
}

/** An estimate with its standard error, as a fixed-horizon t interval or a confidence sequence. */
function interval(estimate: number, se: number, df: number, n: number, options: TestOptions): Interval {
  if (!(se > 0) || !Number.isFinite(se)) return NULL_INTERVAL;
  const { alpha, sequentialTuning } = options;
  if (sequentialTuning !== undefined) {
    // Waudby-Smith et al. (2023), as gbstats' SequentialTwoSidedTTest: n = n_t + n_c, s² = SE²·n.
    const rho = sequentialRho(alpha, sequentialTuning);
    const nr2 = n * rho * rho;
    const halfWidth = Math.sqrt(se * se * n) * Math.sqrt((2 * (nr2 + 1) * Math.log(Math.sqrt(nr2 + 1) / alpha)) / (n * rho) ** 2);
    const z = estimate / se;
    const p = Math.min(1, Math.sqrt(nr2 + 1) * Math.exp((-nr2 * z * z) / (2 * (nr2 + 1))));
    return { estimate, ci: [estimate - halfWidth, estimate + halfWidth], p_value: p };
  }
  const halfWidth = tQuantile(1 - alpha / 2, df) * se;
  // 2·F(−|t|) rather than 2·(1 − F(|t|)): no cancellation for small p.
  const p = Math.min(1, 2 * tCdf(-Math.abs(estimate / se), df));
  return { estimate, ci: [estimate - halfWidth, estimate + halfWidth], p_value: p };
}

/** The figures of one comparison, from what both the raw and the CUPED paths produce. */
interface Moments2 {
  nc: number;
  nt: number;
  /** means that `absolute` compares (CUPED-adjusted or raw) */
  meanC: number;
  meanT: number;
  /** variances of those means' units (CUPED-adjusted or raw): SE² and df */
  varC: number;
  varT: number;
  /** the raw control mean: the denominator of `relative` and its null rule */
  rawMeanC: number;
  /** SE² of `relative` */
  relativeVariance: number;
}

function compareMoments(m: Moments2, options: TestOptions, cupedApplied: boolean): Comparison {
  const nullComparison: Comparison = { absolute: NULL_INTERVAL, relative: NULL_INTERVAL, chance_to_win: null, significant: false, cuped_applied: cupedApplied };
  if (m.nc < 2 || m.nt < 2) return nullComparison;
  const df = welchDegreesOfFreedom(m.varC, m.nc, m.varT, m.nt);
  const n = m.nc + m.nt;
  const difference = m.meanT - m.meanC;
  const absolute = interval(difference, Math.sqrt(m.varT / m.nt + m.varC / m.nc), df, n, options);
  if (m.rawMeanC === 0) return { ...nullComparison, absolute };
  const relativeSe = Math.sqrt(m.relativeVariance);
  const relative = interval(difference / Math.abs(m.rawMeanC), relativeSe, df, n, options);
  if (relative === NULL_INTERVAL) return { ...nullComparison, absolute };
  // Flat prior: the posterior of the relative effect is normal around the estimate.
  const z = relative.estimate / relativeSe;
  const chance_to_win = normalCdf(options.better === 'lower' ? -z : z, 0, 1);
  const significant = relative.ci[0] > 0 || relative.ci[1] < 0;
  return { absolute, relative, chance_to_win, significant, cuped_applied: cupedApplied };
}

/** A treatment against the control without CUPED, from their summaries (any kind, `mean` too).
 *  Relative SE² = v_t/(mean_c²·n_t) + v_c·mean_t²/(mean_c⁴·n_c), gbstats' frequentist_variance. */
export function compare(control: ArmSummary, treatment: ArmSummary, options: TestOptions): Comparison {
  const mc = control.mean;
  const mt = treatment.mean;
  const relativeVariance = mc === 0 ? 0 : treatment.variance / (mc ** 2 * treatment.n) + (control.variance * mt ** 2) / (mc ** 4 * control.n);
  return compareMoments(
    { nc: control.n, nt: treatment.n, meanC: mc, meanT: mt, varC: control.variance, varT: treatment.variance, rawMeanC: mc, relativeVariance },
    options,
    false,
  );
}

/** θ = cov(y, x)/var(x) over the units of both arms together, around the grand means (gbstats'
 *  compute_theta); θ = 0 and not applied when var(x) or var(y) is 0 there. */
export function cupedTheta(kind: Exclude<MetricKind, 'mean'>, control: CupedSums, treatment: CupedSums): { theta: number; applied: boolean } {
  const n = control.n + treatment.n;
  const add = (a: Moments, b: Moments): Moments => ({ sum: a.sum + b.sum, sumSquares: a.sumSquares + b.sumSquares });
  const post = add(control.post, treatment.post);
  const pre = add(control.pre, treatment.pre);
  const varX = varianceOf(kind, pre, n);
  if (varX === 0 || varianceOf(kind, post, n) === 0) return { theta: 0, applied: false };
  return { theta: covarianceOf(kind, post, pre, control.sumOfProducts + treatment.sumOfProducts, n) / varX, applied: true };
}

interface CupedArm {
  n: number;
  mean: number;
  adjustedMean: number;
  varY: number;
  varX: number;
  covYX: number;
  adjustedVariance: number;
}

function cupedArm(kind: Exclude<MetricKind, 'mean'>, sums: CupedSums, theta: number): CupedArm {
  const { n } = sums;
  const mean = meanOf(sums.post, n);
  const varY = varianceOf(kind, sums.post, n);
  const varX = varianceOf(kind, sums.pre, n);
  const covYX = covarianceOf(kind, sums.post, sums.pre, sums.sumOfProducts, n);
  const adjustedVariance = n <= 1 ? 0 : Math.max(0, varY + theta ** 2 * varX - 2 * theta * covYX);
  return { n, mean, adjustedMean: mean - theta * meanOf(sums.pre, n), varY, varX, covYX, adjustedVariance };
}

/** A treatment against the control with CUPED (regression adjustment on the pre-exposure value).
 *  The adjusted means and variances replace the raw ones in `absolute` and the degrees of freedom;
 *  `relative` is the adjusted difference over the raw control mean with gbstats' regression-
 *  adjusted relative variance (frequentist_variance_relative_cuped). A `mean` (ratio) metric has
 *  no CUPED here: it goes through `compare`, which answers cuped_applied: false. */
export function compareCuped(kind: Exclude<MetricKind, 'mean'>, control: CupedSums, treatment: CupedSums, options: TestOptions): Comparison & { theta: number } {
  const { theta, applied } = cupedTheta(kind, control, treatment);
  const c = cupedArm(kind, control, theta);
  const t = cupedArm(kind, treatment, theta);
  let relativeVariance = 0;
  if (c.mean !== 0) {
    const r = t.mean / c.mean;
    relativeVariance = t.adjustedVariance / (t.n * c.mean ** 2) + (c.varY * r ** 2 - 2 * theta * c.covYX * r + theta ** 2 * c.varX) / (c.n * c.mean ** 2);
  }
  const comparison = compareMoments(
    { nc: c.n, nt: t.n, meanC: c.adjustedMean, meanT: t.adjustedMean, varC: c.adjustedVariance, varT: t.adjustedVariance, rawMeanC: c.mean, relativeVariance },
    options,
    applied,
  );
  return { ...comparison, theta };
}

// ---------------------------------------------------------------- sample ratio mismatch

/** Chi-squared goodness of fit of the arms' units against their expected shares, over the arms
 *  with a positive share (df = their number − 1); flagged when p < 0.001 and those arms hold at
 *  least 8 units per arm. gbstats' check_srm keeps every arm in df and in the total; the contract
 *  leaves the zero-share arms out of both. */
export function sampleRatioMismatch(units: Record<string, number>, expectedShares: Record<string, number>): { p_value: number; flagged: boolean } {
  const arms = Object.keys(expectedShares).filter((arm) => expectedShares[arm]! > 0);
  const total = arms.reduce((s, arm) => s + (units[arm] ?? 0), 0);
  const shareTotal = arms.reduce((s, arm) => s + expectedShares[arm]!, 0);
  if (arms.length < 2 || total === 0) return { p_value: 1, flagged: false };
  let chiSquared = 0;
  for (const arm of arms) {
    const expected = (expectedShares[arm]! / shareTotal) * total;
    chiSquared += ((units[arm] ?? 0) - expected) ** 2 / expected;
  }
  const p_value = 1 - chisquareCdf(chiSquared, arms.length - 1);
  return { p_value, flagged: p_value < 0.001 && total >= 8 * arms.length };
}
