// The experiment statistics (src/modules/experiments/statistics.ts) against independent
// computations only: GrowthBook gbstats' own published test cases (packages/stats/tests of
// growthbook/growthbook; control = gbstats' stat_a / variation "zero"), scipy on seeded data,
// and the textbook property of the sequential test. Never against our own earlier output.
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { pythonWithScipy } from './python.js';
import { expectedShares, type ArmedFlag } from '../src/modules/experiments/arms.js';
import {
  type Interval,
  type TestOptions,
  compare,
  compareCuped,
  cupedTheta,
  oneSidedSequentialHalfWidth,
  sampleRatioMismatch,
  summarize,
  summarizeRatio,
  valueSums,
  welchDegreesOfFreedom,
} from '../src/modules/experiments/statistics.js';

/** gbstats rounds to `decimals` places before comparing: the same tolerance here. */
function assertRounded(actual: number, expected: number, decimals: number, what: string): void {
  const tolerance = 0.5 * 10 ** -decimals + 1e-12;
  assert.ok(Math.abs(actual - expected) <= tolerance, `${what}: ${actual} is not ${expected} to ${decimals} decimals`);
}

function assertInterval(actual: Interval, expected: { estimate: number; ci: [number, number]; p: number }, decimals: number, what: string): void {
  assertRounded(actual.estimate, expected.estimate, decimals, `${what} estimate`);
  assertRounded(actual.ci[0], expected.ci[0], decimals, `${what} ci low`);
  assertRounded(actual.ci[1], expected.ci[1], decimals, `${what} ci high`);
  assertRounded(actual.p_value, expected.p, decimals, `${what} p`);
}

function assertRelativeClose(actual: number, expected: number, relTol: number, what: string): void {
  const scale = Math.max(Math.abs(expected), 1e-300);
  assert.ok(Math.abs(actual - expected) / scale <= relTol, `${what}: ${actual} vs ${expected}`);
}

const FIXED: TestOptions = { alpha: 0.05, better: 'higher' };
const sampleMean = (n: number, sum: number, sumSquares: number) => ({ n, sum, sumSquares });

describe('gbstats tests/frequentist/test_tests.py', () => {
  // TestTwoSidedTTest.setUp: stat_a (control) and stat_b.
  const control = summarize('count', sampleMean(3407, 1396.87, 52377.9767));
  const treatment = summarize('count', sampleMean(3461, 2422.7, 134698.29));

  test('TestTwoSidedTTest.test_two_sided_ttest (relative)', () => {
    const r = compare(control, treatment, FIXED);
    assertInterval(r.relative, { estimate: 0.70732, ci: [-0.03526, 1.44989], p: 0.06191 }, 5, 'relative');
    // Uplift stddev 0.37879 is the relative SE: chance_to_win = Φ(0.70732 / 0.37879).
    assertRounded(r.chance_to_win!, 0.96907, 4, 'chance_to_win');
    assert.equal(r.significant, false);
  });

  test('TestTwoSidedTTest.test_two_sided_ttest_absolute', () => {
    const r = compare(control, treatment, FIXED);
    assertInterval(r.absolute, { estimate: 0.29, ci: [0.04538, 0.53462], p: 0.02016 }, 5, 'absolute');
  });

  test('TestTwoSidedTTest.test_two_sided_ttest_binom (conversion: p(1 − p), small n so df matters)', () => {
    const r = compare(summarize('conversion', sampleMean(28, 14, 14)), summarize('conversion', sampleMean(30, 16, 16)), FIXED);
    assertInterval(r.relative, { estimate: (16 / 30 - 0.5) / 0.5, ci: [-0.47767, 0.61101], p: 0.80707 }, 5, 'relative');
  });

  test('TestSequentialTTest.test_sequential_test_runs (N* = 1000)', () => {
    const c = summarize('count', sampleMean(3000, 1396.87, 52377.9767));
    const r = compare(c, treatment, { ...FIXED, sequentialTuning: 1000 });
    assertInterval(r.relative, { estimate: 0.50336, ci: [-0.55844, 1.56516], p: 1 }, 5, 'relative');
  });

  test('TestSequentialTTest.test_sequential_test_runs_prop (N* = 5000)', () => {
    const r = compare(summarize('conversion', sampleMean(3000, 1396, 1396)), summarize('conversion', sampleMean(3461, 2422, 2422)), { ...FIXED, sequentialTuning: 5000 });
    assertInterval(r.relative, { estimate: 0.50386, ci: [0.40098, 0.60675], p: 0 }, 5, 'relative');
    assert.equal(r.significant, true);
  });

  test('TestSequentialTTest.test_sequential_test_runs_ra (CUPED, N* = 5000)', () => {
    const c = { n: 3000, post: { sum: 1396.87, sumSquares: 52377.9767 }, pre: { sum: 16.87, sumSquares: 527.9767 }, sumOfProducts: 1 };
    const t = { n: 3461, post: { sum: 2422.7, sumSquares: 134698.29 }, pre: { sum: 22.7, sumSquares: 1348.29 }, sumOfProducts: 1 };
    const r = compareCuped('count', c, t, { ...FIXED, sequentialTuning: 5000 });
    assertInterval(r.relative, { estimate: 0.50338, ci: [-0.50969, 1.51646], p: 1 }, 5, 'relative');
    assert.equal(r.cuped_applied, true);
  });
});

describe('gbstats tests/frequentist/test_tests.py: the one-sided sequence (guarded releases, releases/analysis.ts)', () => {
  // TestSequentialOneSided{Greater,Lesser}TTest.test_one_sided_ttest_absolute: α 0.05, N* 5000.
  const c = summarize('count', sampleMean(3000, 1396.87, 52377.9767));
  const t = summarize('count', sampleMean(3461, 2422.7, 134698.29));
  const estimate = t.mean - c.mean;
  const se = Math.sqrt(t.variance / t.n + c.variance / c.n);
  const halfWidth = oneSidedSequentialHalfWidth(se, t.n + c.n, 0.05, 5000);
  test('Greater: the lower bound', () => assertRounded(estimate - halfWidth, -0.12656844172804982, 5, 'ci low'));
  test('Lesser: the upper bound', () => assertRounded(estimate + halfWidth, 0.5953217750613832, 5, 'ci high'));
});

describe('gbstats tests/test_gbstats.py (analyze_metric_df, frequentist, 9 decimals)', () => {
  test('TestAnalyzeMetricDfFrequentist.test_get_metric_dfs_frequentist (QUERY_OUTPUT, dimension "one")', () => {
    const c = summarize('count', sampleMean(100, 270, 848.79));
    const t = summarize('count', sampleMean(120, 300, 869));
    assertRounded(c.mean, 2.7, 9, 'control cr');
    assertRounded(t.mean, 2.5, 9, 'treatment cr');
    const r = compare(c, t, FIXED);
    assertRounded(r.relative.estimate, -0.074074074, 9, 'expected');
    assertRounded(r.relative.p_value, 0.145219005, 9, 'p');
  });

  test('TestAnalyzeMetricDfFrequentist.test_get_metric_dfs_frequentist_ratio (RATIO_STATISTICS_DF: the `mean` kind)', () => {
    const c = summarizeRatio({ n: 100, numerator: { sum: 270, sumSquares: 848.79 }, denominator: { sum: 510, sumSquares: 810 }, sumOfProducts: -900 });
    const t = summarizeRatio({ n: 120, numerator: { sum: 300, sumSquares: 869 }, denominator: { sum: 500, sumSquares: 800 }, sumOfProducts: -905 });
    assertRounded(c.mean, 0.529411765, 9, 'control cr');
    assertRounded(t.mean, 0.6, 9, 'treatment cr');
    const r = compare(c, t, FIXED);
    assertRounded(r.relative.estimate, 0.133333333, 9, 'expected');
    assertRounded(r.relative.p_value, 0.610663339, 9, 'p');
  });

  test('TestAnalyzeMetricDfFrequentist.test_get_metric_dfs_zero_val (ONE_USER_DF: one unit in an arm → null)', () => {
    const r = compare(summarize('count', sampleMean(3, 20, 443)), summarize('count', sampleMean(1, 1, 1)), FIXED);
    assert.deepEqual(r.relative, { estimate: 0, ci: [0, 0], p_value: 1 });
    assert.deepEqual(r.absolute, { estimate: 0, ci: [0, 0], p_value: 1 });
    assert.equal(r.chance_to_win, null);
  });

  test('TestAnalyzeMetricDfFrequentist.test_get_metric_dfs_ratio_zero_denom (control mean 0 → relative null)', () => {
    const c = summarizeRatio({ n: 100, numerator: { sum: 270, sumSquares: 848.79 }, denominator: { sum: 0, sumSquares: 0 }, sumOfProducts: 0 });
    const t = summarizeRatio({ n: 120, numerator: { sum: 300, sumSquares: 869 }, denominator: { sum: 500, sumSquares: 800 }, sumOfProducts: -905 });
    assert.equal(c.mean, 0);
    const r = compare(c, t, FIXED);
    assert.deepEqual(r.relative, { estimate: 0, ci: [0, 0], p_value: 1 });
    assert.equal(r.chance_to_win, null);
    // Deliberate difference: gbstats blanks the whole comparison here; the contract only blanks
    // `relative` and `chance_to_win`, so `absolute` (0.6 − 0 with the treatment's SE) stands.
    assert.equal(r.absolute.estimate, 0.6);
  });

  // RA_STATISTICS_DF: variation "zero" (control) and "one".
  const raControl = { n: 3001, post: { sum: 300, sumSquares: 600 }, pre: { sum: 210, sumSquares: 415 }, sumOfProducts: -20 };
  const raTreatment = { n: 3000, post: { sum: 222, sumSquares: 555 }, pre: { sum: 120, sumSquares: 405 }, sumOfProducts: -10 };

  test('TestAnalyzeMetricDfRegressionAdjustment.test_analyze_metric_df_ra (CUPED, count)', () => {
    assertRounded(summarize('count', { n: 3001, ...raControl.post }).mean, 0.099966678, 9, 'control mean (unadjusted)');
    const r = compareCuped('count', raControl, raTreatment, FIXED);
    assertRounded(r.relative.estimate, -0.281707154, 9, 'expected');
    assertRounded(r.relative.p_value, 0.003732549, 9, 'p');
  });

  test('TestAnalyzeMetricDfRegressionAdjustment.test_analyze_metric_df_ra_proportion (CUPED, conversion: covariance over n)', () => {
    const r = compareCuped('conversion', raControl, raTreatment, FIXED);
    assertRounded(r.relative.estimate, -0.31620216, 9, 'expected');
    assertRounded(r.relative.p_value, 0.000000353, 9, 'p');
  });
});

describe('gbstats tests/test_shared_models.py', () => {
  const METRIC_1 = [0.3, 0.5, 0.9, 22];
  const METRIC_3 = [2, 1, 5, 3];
  const arm = (pre: number[], post: number[]) => ({
    n: pre.length,
    pre: { sum: pre.reduce((a, b) => a + b, 0), sumSquares: pre.reduce((a, b) => a + b * b, 0) },
    post: { sum: post.reduce((a, b) => a + b, 0), sumSquares: post.reduce((a, b) => a + b * b, 0) },
    sumOfProducts: pre.reduce((s, x, i) => s + x * post[i]!, 0),
  });

  test('TestComputeTheta.test_returns_0_no_variance', () => {
    const a = arm(METRIC_1, METRIC_3);
    assertRounded(cupedTheta('count', a, a).theta, 0.01864, 5, 'theta');
    const noPre = { ...a, pre: { sum: 0, sumSquares: 0 }, sumOfProducts: 0 };
    assert.deepEqual(cupedTheta('count', noPre, noPre), { theta: 0, applied: false });
  });

  test('TestSampleMeanStatistic / TestProportionStatistic: variance n − 1, and p(1 − p)', () => {
    const s = summarize('sum', valueSums(METRIC_1));
    const mean = 23.7 / 4;
    assertRelativeClose(s.variance, METRIC_1.reduce((acc, v) => acc + (v - mean) ** 2, 0) / 3, 1e-12, 'sample variance');
    assert.equal(summarize('conversion', valueSums([1, 1, 1, 0])).variance, 0.75 * 0.25);
  });
});

// ------------------------------------------------------------------------------------- scipy

interface ScipyCase {
  control: number[];
  treatment: number[];
  statistic: number;
  pvalue: number;
  df: number;
  ci: [number, number];
}

const SCIPY_SCRIPT = String.raw`
import json, numpy as np
from scipy import stats
rng = np.random.default_rng(20251126)
cases = []
def add(c, t):
    r = stats.ttest_ind(t, c, equal_var=False)
    ci = r.confidence_interval(0.95)
    cases.append(dict(control=c.tolist(), treatment=t.tolist(), statistic=float(r.statistic), pvalue=float(r.pvalue), df=float(r.df), ci=[float(ci.low), float(ci.high)]))
add(rng.normal(10, 1, 8), rng.normal(11, 6, 15))
add(rng.normal(5, 3, 40), rng.normal(5.5, 0.5, 9))
add(rng.poisson(2.0, 500).astype(float), rng.poisson(2.2, 480).astype(float))
add(rng.exponential(30, 1000), rng.exponential(28, 1200))
add(np.full(12, 3.0), rng.normal(4, 2, 7))
quantiles = [dict(p=p, df=df, t=float(stats.t.ppf(p, df))) for p in (0.975, 0.995, 0.9) for df in (1.5, 3.7, 12.2, 250.0)]
srm_cases = []
for counts, shares in ([[5010, 4990], [0.5, 0.5]], [[4800, 5200], [0.5, 0.5]], [[3000, 3100, 3900], [0.3, 0.3, 0.4]], [[900, 1150, 950], [0.3, 0.4, 0.3]]):
    exp = np.array(shares) / sum(shares) * sum(counts)
    srm_cases.append(dict(counts=counts, shares=shares, p=float(stats.chisquare(counts, exp).pvalue)))
norm = [dict(x=x, cdf=float(stats.norm.cdf(x))) for x in (-3.1, -0.4, 0.0, 1.2, 2.5)]
print(json.dumps(dict(cases=cases, quantiles=quantiles, srm=srm_cases, norm=norm)))
`;

function scipy(): { cases: ScipyCase[]; quantiles: { p: number; df: number; t: number }[]; srm: { counts: number[]; shares: number[]; p: number }[]; norm: { x: number; cdf: number }[] } {
  const run = spawnSync(pythonWithScipy(), ['-c', SCIPY_SCRIPT], { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
  assert.equal(run.status, 0, `python3 with scipy failed: ${run.stderr}`);
  return JSON.parse(run.stdout);
}

describe('scipy on seeded data', () => {
  const reference = scipy();

  test('absolute: Welch t-test (estimate, CI, p, df) = scipy.stats.ttest_ind(equal_var=False)', () => {
    for (const [i, k] of reference.cases.entries()) {
      const c = summarize('sum', valueSums(k.control));
      const t = summarize('sum', valueSums(k.treatment));
      assertRelativeClose(welchDegreesOfFreedom(c.variance, c.n, t.variance, t.n), k.df, 1e-9, `case ${i} df`);
      const r = compare(c, t, FIXED);
      assertRelativeClose(r.absolute.ci[0], k.ci[0], 1e-8, `case ${i} ci low`);
      assertRelativeClose(r.absolute.ci[1], k.ci[1], 1e-8, `case ${i} ci high`);
      assertRelativeClose(r.absolute.p_value, k.pvalue, 1e-7, `case ${i} p`);
      assertRelativeClose(r.absolute.estimate / Math.sqrt(c.variance / c.n + t.variance / t.n), k.statistic, 1e-9, `case ${i} t`);
    }
  });

  test('one arm with variance 0: df is the other arm\'s n − 1 (scipy agrees)', () => {
    const k = reference.cases[4]!;
    assert.equal(k.df, k.treatment.length - 1);
    const r = compare(summarize('sum', valueSums(k.control)), summarize('sum', valueSums(k.treatment)), FIXED);
    assertRelativeClose(r.absolute.p_value, k.pvalue, 1e-7, 'p');
  });

  test('SRM: chi-squared goodness of fit = scipy.stats.chisquare', () => {
    for (const s of reference.srm) {
      const units = Object.fromEntries(s.counts.map((n, i) => [`arm${i}`, n]));
      const shares = Object.fromEntries(s.shares.map((w, i) => [`arm${i}`, w]));
      const r = sampleRatioMismatch(units, shares);
      assertRelativeClose(r.p_value, s.p, 1e-6, `srm ${s.counts}`);
      assert.equal(r.flagged, s.p < 0.001);
    }
  });

  test('t quantiles and the normal CDF of the library = scipy', async () => {
    const { default: tQuantile } = await import('@stdlib/stats-base-dists-t-quantile');
    const { default: normalCdf } = await import('@stdlib/stats-base-dists-normal-cdf');
    for (const q of reference.quantiles) assertRelativeClose(tQuantile(q.p, q.df), q.t, 1e-9, `t.ppf(${q.p}, ${q.df})`);
    for (const q of reference.norm) assert.ok(Math.abs(normalCdf(q.x, 0, 1) - q.cdf) < 1e-14, `norm.cdf(${q.x})`);
  });
});

// ------------------------------------------------------------------------------------- by hand

describe('sequential: the confidence sequence and its p agree', () => {
  test('p < α exactly when the CI excludes 0, over a sweep', () => {
    let excluded = 0;
    let included = 0;
    for (const alpha of [0.01, 0.05, 0.1]) {
      for (const tuning of [100, 5000, 1e5]) {
        for (const n of [10, 200, 5000, 200000]) {
          for (const shift of [0, 0.01, 0.03, 0.1, 0.3, 1]) {
            const control = { n, mean: 1, variance: 1 };
            const treatment = { n, mean: 1 + shift, variance: 1.3 };
            const r = compare(control, treatment, { alpha, better: 'higher', sequentialTuning: tuning });
            for (const iv of [r.absolute, r.relative]) {
              const excludes = iv.ci[0] > 0 || iv.ci[1] < 0;
              if (excludes) excluded++;
              else included++;
              assert.equal(iv.p_value < alpha, excludes, `α ${alpha} N* ${tuning} n ${n} shift ${shift}: p ${iv.p_value}, ci ${iv.ci}`);
            }
          }
        }
      }
    }
    // The sweep must hold both kinds of outcome for the check to mean anything.
    assert.ok(excluded > 20 && included > 20, `${excluded} excluded, ${included} included`);
  });

  test('the sequence is wider than the fixed-horizon interval (peeking costs width)', () => {
    const control = { n: 1000, mean: 1, variance: 1 };
    const treatment = { n: 1000, mean: 1.1, variance: 1 };
    const fixed = compare(control, treatment, FIXED);
    const sequential = compare(control, treatment, { ...FIXED, sequentialTuning: 5000 });
    assert.ok(sequential.absolute.ci[1] - sequential.absolute.ci[0] > fixed.absolute.ci[1] - fixed.absolute.ci[0]);
    assert.equal(sequential.absolute.estimate, fixed.absolute.estimate);
  });
});

describe('null rules and chance to win', () => {
  test('SE 0 (both arms constant) → null comparison', () => {
    const r = compare({ n: 10, mean: 1, variance: 0 }, { n: 10, mean: 2, variance: 0 }, FIXED);
    assert.deepEqual(r.absolute, { estimate: 0, ci: [0, 0], p_value: 1 });
    assert.equal(r.chance_to_win, null);
    assert.equal(r.significant, false);
  });

  test('chance_to_win = Φ(relative/SE), reversed when lower is better', () => {
    const control = { n: 400, mean: 10, variance: 4 };
    const treatment = { n: 400, mean: 10.3, variance: 4 };
    // relative 0.03; SE² = 4/(100·400) + 4·10.3²/(10⁴·400) by hand.
    const se = Math.sqrt(4 / (100 * 400) + (4 * 10.3 ** 2) / (1e4 * 400));
    const higher = compare(control, treatment, FIXED);
    const lower = compare(control, treatment, { ...FIXED, better: 'lower' });
    assertRelativeClose(higher.relative.estimate, 0.03, 1e-12, 'relative');
    // se = 0.0143558..., z = 2.08974, Φ(z) = 0.98168 (normal table).
    assert.ok(Math.abs(0.03 / se - 2.08974) < 1e-5);
    assertRounded(higher.chance_to_win!, 0.98168, 5, 'higher');
    assertRelativeClose(higher.chance_to_win! + lower.chance_to_win!, 1, 1e-12, 'sum');
  });
});

describe('expected shares', () => {
  // The flag's arms as an experiment starts on them (arms.ts); a rollout of 0 serves everyone, as the engine's everyoneElseCode.
  const flag = (fields: Partial<ArmedFlag>): ArmedFlag => ({ enabled: true, rollout_percentage: 100, everyone_else: 'rollout', variants: [], off_variant: null, ...fields });
  test('a flag without variants: on R, off 1 − R', () => {
    assert.deepEqual(expectedShares(flag({ rollout_percentage: 30 })), { on: 0.3, off: 0.7 });
    assert.deepEqual(expectedShares(flag({ rollout_percentage: 0 })), { on: 1, off: 0 });
    assert.deepEqual(expectedShares(flag({ rollout_percentage: 100 })), { on: 1, off: 0 });
    assert.deepEqual(expectedShares(flag({ enabled: false, rollout_percentage: 30 })), { on: 0, off: 1 });
    assert.deepEqual(expectedShares(flag({ everyone_else: 'off', rollout_percentage: 30 })), { on: 0, off: 1 });
  });

  test('variants: R·w/1000, plus 1 − R for the off variant; disabled → only the off variant', () => {
    const variants = [{ key: 'a', weight: 500 }, { key: 'b', weight: 300 }, { key: 'c', weight: 200 }];
    const s = expectedShares(flag({ rollout_percentage: 40, variants, off_variant: 'a' }));
    assertRelativeClose(s.a!, 0.4 * 0.5 + 0.6, 1e-12, 'a');
    assertRelativeClose(s.b!, 0.12, 1e-12, 'b');
    assertRelativeClose(s.c!, 0.08, 1e-12, 'c');
    assert.deepEqual(expectedShares(flag({ enabled: false, rollout_percentage: 40, variants, off_variant: 'c' })), { a: 0, b: 0, c: 1 });
  });

  test('SRM over the positive-share arms only, flagged only with 8 units per arm', () => {
    // The zero-share arm is left out: 60 vs 40 against 50/50 is χ² = 4, df 1, p = 0.0455.
    const r = sampleRatioMismatch({ on: 60, off: 40, stray: 500 }, { on: 0.5, off: 0.5, stray: 0 });
    assertRounded(r.p_value, 0.0455003, 6, 'p');
    // 15 vs 0: p ≈ 1e-4 < 0.001 but 15 < 8 × 2 units → not flagged; 17 vs 0 is.
    assert.equal(sampleRatioMismatch({ on: 15, off: 0 }, { on: 0.5, off: 0.5 }).flagged, false);
    assert.equal(sampleRatioMismatch({ on: 17, off: 0 }, { on: 0.5, off: 0.5 }).flagged, true);
  });
});
