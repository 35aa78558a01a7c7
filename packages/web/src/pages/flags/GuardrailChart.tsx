import { useRef } from 'react';
import { themedAxis, useUplot } from '../../components/useUplot';

export interface GuardrailPoint {
  at: string;
  bound: number | null;
  difference: number;
  limit: number;
}

/**
 * One guardrail over a release's checks (uPlot): the bound of the difference, the tolerance it must
 * not cross and the difference itself. An image for assistive technology, named and described by
 * the caller; the same figures are in the table beside it.
 */
export default function GuardrailChart({ points, label, describedBy }: { points: GuardrailPoint[]; label: string; describedBy: string }) {
  const box = useRef<HTMLDivElement>(null);
  const key = points.map((point) => `${point.at}:${point.bound}`).join();
  useUplot(
    box,
    160,
    (colour) => {
      if (points.length === 0) return null;
      const axis = themedAxis(colour);
      return {
        data: [points.map((point) => Date.parse(point.at) / 1000), points.map((point) => point.bound), points.map((point) => point.limit), points.map((point) => point.difference)],
        options: {
          legend: { show: true },
          cursor: { drag: { x: false, y: false } },
          // Zero is always in sight: the tolerance is read against it.
          scales: { y: { range: (_u, min, max) => [Math.min(0, min), Math.max(0, max)] } },
          axes: [axis, { ...axis, size: 56 }],
          series: [
            {},
            { label: 'Bound', stroke: colour('--accent'), width: 2, points: { show: true } },
            { label: 'Tolerance', stroke: colour('--danger'), width: 2, dash: [6, 4] },
            { label: 'Difference', stroke: colour('--off'), width: 1 },
          ],
        },
      };
    },
    [key],
  );
  return <div ref={box} className="chart-box small-chart" role="img" aria-label={label} aria-describedby={describedBy} />;
}
