import { useRef, useState } from 'react';
import { keepPreviousData, useQuery } from '@tanstack/react-query';
import { api, unwrap } from '../../api/client';
import { flagParams } from '../../api/queries';
import { ErrorState, Loading } from '../../components/States';
import { themedAxis, useUplot } from '../../components/useUplot';

const RANGES = [
  { hours: 24, label: '24 hours' },
  { hours: 24 * 7, label: '7 days' },
] as const;

/** Counts of the whole range; `variants` only for a flag that served variants (docs/variants.md). */
type Totals = { enabled: number; disabled: number; variants?: Record<string, number> };

/** Series colours after enabled and disabled, one per variant in turn (styles.css, both themes). */
const VARIANT_COLOURS = 6;

/** The variants to draw: the flag's, in its order, then any the counts name that it no longer has. */
function variantSeries(totals: Totals | undefined, variantKeys: readonly string[]): string[] {
  if (!totals?.variants) return [];
  return [...variantKeys, ...Object.keys(totals.variants).filter((key) => !variantKeys.includes(key))];
}

/**
 * Enabled and disabled evaluations of one flag per hour, over 24 hours or 7 days (uPlot); for a
 * flag with variants, each variant's too.
 */
export default function FlagChart({ projectId, envId, flagId, flagKey, variantKeys = [] }: { projectId: string; envId: string; flagId: string; flagKey: string; variantKeys?: readonly string[] }) {
  const [hours, setHours] = useState<number>(24);
  const metrics = useQuery({
    queryKey: ['metrics', flagId, hours],
    queryFn: () => unwrap(api.GET('/api/projects/{project_id}/environments/{env_id}/flags/{flag_id}/metrics', { ...flagParams(projectId, envId, flagId), params: { ...flagParams(projectId, envId, flagId).params, query: { hours } } })),
    placeholderData: keepPreviousData,
    refetchInterval: 30_000,
  });
  const variants = variantSeries(metrics.data?.totals, variantKeys);
  const variantsKey = variants.join('\n');
  const box = useRef<HTMLDivElement>(null);

  useUplot(
    box,
    200,
    (colour) => {
      const data = metrics.data;
      if (!data) return null;
      const axis = themedAxis(colour);
      return {
        data: [
          data.buckets.map((bucket) => Date.parse(bucket.start) / 1000),
          data.buckets.map((bucket) => bucket.enabled),
          data.buckets.map((bucket) => bucket.disabled),
          ...variants.map((key) => data.buckets.map((bucket) => bucket.variants?.[key] ?? 0)),
        ],
        options: {
          legend: { show: true },
          cursor: { drag: { x: false, y: false } },
          scales: { y: { range: (_u, _min, max) => [0, Math.max(1, max)] } },
          axes: [axis, { ...axis, size: 48 }],
          series: [
            {},
            { label: 'Enabled', stroke: colour('--on'), fill: colour('--on-fill'), width: 2 },
            { label: 'Disabled', stroke: colour('--off'), width: 2, dash: [4, 3] },
            ...variants.map((key, i) => ({ label: key, stroke: colour(`--series-${(i % VARIANT_COLOURS) + 1}`), width: 2 })),
          ],
        },
      };
    },
    // `variants` is derived from the data and the flag's keys: redrawn when either changes.
    [metrics.data, variantsKey],
  );

  const totals = metrics.data?.totals;
  return (
    <div className="chart">
      <div className="segmented" role="group" aria-label="Chart range">
        {RANGES.map((range) => (
          <button key={range.hours} type="button" className={hours === range.hours ? 'selected' : ''} aria-pressed={hours === range.hours} onClick={() => setHours(range.hours)}>
            {range.label}
          </button>
        ))}
      </div>
      {metrics.isPending && <Loading what="usage" />}
      {metrics.error && <ErrorState error={metrics.error} retry={() => void metrics.refetch()} />}
      {totals && (
        <p className="muted" role="status">
          {flagKey} over the last {RANGES.find((range) => range.hours === hours)?.label}: {totals.enabled} enabled, {totals.disabled} disabled evaluations.
          {totals.enabled + totals.disabled === 0 && ' No app has asked for it in that time.'}
        </p>
      )}
      {totals?.variants && variants.length > 0 && <VariantTotals counts={totals.variants} keys={variants} />}
      <div ref={box} className="chart-box" role="img" aria-label={`Hourly evaluations of ${flagKey}: enabled and disabled${variants.length > 0 ? ', and of each variant' : ''}`} />
    </div>
  );
}

/** How many evaluations served each variant over the range, and their share. */
function VariantTotals({ counts, keys }: { counts: Record<string, number>; keys: readonly string[] }) {
  const sum = keys.reduce((total, key) => total + (counts[key] ?? 0), 0);
  return (
    <table className="plain variant-totals">
      <caption className="visually-hidden">Evaluations by variant</caption>
      <thead>
        <tr>
          <th scope="col">Variant</th>
          <th scope="col">Evaluations</th>
          <th scope="col">Share</th>
        </tr>
      </thead>
      <tbody>
        {keys.map((key, i) => (
          <tr key={key}>
            <th scope="row">
              <span className="swatch" style={{ background: `var(--series-${(i % VARIANT_COLOURS) + 1})` }} aria-hidden="true" /> <code>{key}</code>
            </th>
            <td>{counts[key] ?? 0}</td>
            <td>{sum === 0 ? '–' : `${(((counts[key] ?? 0) / sum) * 100).toFixed(1)} %`}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}
