import type { ArmVersusControl, Comparison, Metric } from '../../api/experiments';

const MINUS = '\u2212';

/** "+4.1 %", "−0.3 %": a relative change with its sign, one decimal (two under 1 %). */
export function percent(share: number): string {
  const value = share * 100;
  const digits = Math.abs(value) < 1 && value !== 0 ? 2 : 1;
  const text = Math.abs(value).toFixed(digits);
  return `${value < 0 ? MINUS : '+'}${text} %`;
}

const significant = new Intl.NumberFormat('en-US', { maximumSignificantDigits: 3 });
/** An absolute difference with its sign and three significant digits: "+0.0412", "−12.3". */
export const signed = (value: number) => `${value < 0 ? MINUS : '+'}${significant.format(Math.abs(value))}`;

/** The confidence level of an experiment's intervals: "95 %" for alpha 0.05. */
export const level = (alpha: number) => `${Number(((1 - alpha) * 100).toFixed(1))} %`;

/** Which comparison the words and the chart use: the relative one (the headline), else the absolute one when the control's mean is 0. */
export function headline(versus: ArmVersusControl): { comparison: Comparison; relative: boolean } {
  return versus.relative ? { comparison: versus.relative, relative: true } : { comparison: versus.absolute, relative: false };
}

/** A comparison's interval as [low, high] (an answer short of either end gives the estimate there). */
export const bounds = (comparison: Comparison): [number, number] => [comparison.ci[0] ?? comparison.estimate, comparison.ci[1] ?? comparison.estimate];

export const formatChange = (value: number, relative: boolean) => (relative ? percent(value) : signed(value));

/**
 * One arm against the control in words: "B raised Purchases by +4.1 %, 95 % CI +1.2 % to +7.0 %",
 * "lowered", or "B made no clear difference to Purchases (…)" when it is not significant.
 */
export function sentence(arm: string, metricName: string, versus: ArmVersusControl, alpha: number): string {
  const { comparison, relative } = headline(versus);
  const [lo, hi] = bounds(comparison);
  const interval = `${level(alpha)} CI ${formatChange(lo, relative)} to ${formatChange(hi, relative)}`;
  const by = `${formatChange(comparison.estimate, relative)}${relative ? '' : ' (absolute)'}`;
  if (!versus.significant) return `${arm} made no clear difference to ${metricName} (${by}, ${interval}).`;
  return `${arm} ${comparison.estimate >= 0 ? 'raised' : 'lowered'} ${metricName} by ${by}, ${interval}.`;
}

/** Whether a significant change is the way the metric calls better: 'good', 'bad', or 'unclear' when not significant. */
export function verdict(versus: ArmVersusControl, better: Metric['better'] | undefined): 'good' | 'bad' | 'unclear' {
  if (!versus.significant) return 'unclear';
  const up = headline(versus).comparison.estimate >= 0;
  return up === (better !== 'lower') ? 'good' : 'bad';
}
