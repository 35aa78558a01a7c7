import { useEffect, useRef, useState } from 'react';
import { keepPreviousData, useQuery } from '@tanstack/react-query';
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import { api, unwrap } from '../../api/client';
import { flagParams } from '../../api/queries';
import { ErrorState, Loading } from '../../components/States';

const RANGES = [
  { hours: 24, label: '24 hours' },
  { hours: 24 * 7, label: '7 days' },
] as const;

/** Enabled and disabled evaluations of one flag per hour, over 24 hours or 7 days (uPlot). */
export default function FlagChart({ projectId, envId, flagId, flagKey }: { projectId: string; envId: string; flagId: string; flagKey: string }) {
  const [hours, setHours] = useState<number>(24);
  const metrics = useQuery({
    queryKey: ['metrics', flagId, hours],
    queryFn: () => unwrap(api.GET('/api/projects/{project_id}/environments/{env_id}/flags/{flag_id}/metrics', { ...flagParams(projectId, envId, flagId), params: { ...flagParams(projectId, envId, flagId).params, query: { hours } } })),
    placeholderData: keepPreviousData,
    refetchInterval: 30_000,
  });
  const box = useRef<HTMLDivElement>(null);

  useEffect(() => {
    const element = box.current;
    const data = metrics.data;
    if (!element || !data) return;
    const style = getComputedStyle(element);
    const colour = (name: string) => style.getPropertyValue(name).trim() || '#888';
    const series: uPlot.AlignedData = [
      data.buckets.map((bucket) => Date.parse(bucket.start) / 1000),
      data.buckets.map((bucket) => bucket.enabled),
      data.buckets.map((bucket) => bucket.disabled),
    ];
    const axis = { stroke: colour('--muted'), grid: { stroke: colour('--border'), width: 1 }, ticks: { stroke: colour('--border') } };
    const chart = new uPlot(
      {
        width: element.clientWidth,
        height: 200,
        legend: { show: true },
        cursor: { drag: { x: false, y: false } },
        scales: { y: { range: (_u, _min, max) => [0, Math.max(1, max)] } },
        axes: [axis, { ...axis, size: 48 }],
        series: [
          {},
          { label: 'Enabled', stroke: colour('--on'), fill: colour('--on-fill'), width: 2 },
          { label: 'Disabled', stroke: colour('--off'), width: 2, dash: [4, 3] },
        ],
      },
      series,
      element,
    );
    const resize = new ResizeObserver(() => chart.setSize({ width: element.clientWidth, height: 200 }));
    resize.observe(element);
    return () => {
      resize.disconnect();
      chart.destroy();
    };
  }, [metrics.data]);

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
      <div ref={box} className="chart-box" role="img" aria-label={`Hourly evaluations of ${flagKey}: enabled and disabled`} />
    </div>
  );
}
