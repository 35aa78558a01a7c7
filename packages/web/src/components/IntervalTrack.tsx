/**
 * Intervals drawn as HTML boxes placed by percent across [−extent, extent], so they are sharp at
 * any width: an experiment's arms against zero, a guarded release's bound against its tolerance.
 * The caller wraps the rows in one labelled image and says the same figures in words.
 */

/** Where a value sits on a track of ±extent, as a CSS length. */
export const placeOn = (extent: number) => (value: number) => `${((Math.max(-extent, Math.min(extent, value)) + extent) / (2 * extent)) * 100}%`;

/** Half the width a track needs to show every value, with a margin. */
export const extentOf = (values: readonly number[]) => Math.max(1e-9, ...values.map(Math.abs)) * 1.15;

export type Verdict = 'good' | 'bad' | 'unclear';

/** One row: its label, the bar from lo to hi, the point, and vertical marks (zero, a limit). */
export function IntervalRow({ label, extent, lo, hi, estimate, verdict, marks = [{ at: 0, kind: 'zero' }] }: { label: string; extent: number; lo: number; hi: number; estimate: number; verdict: Verdict; marks?: { at: number; kind: 'zero' | 'limit' }[] }) {
  const x = placeOn(extent);
  return (
    <div className="interval-row">
      <span className="interval-arm">{label}</span>
      <div className="interval-track">
        {marks.map((mark) => (
          <span key={`${mark.kind}-${mark.at}`} className={`interval-${mark.kind}`} style={{ left: x(mark.at) }} />
        ))}
        <span className={`interval-bar ${verdict}`} style={{ left: x(lo), width: `calc(${x(hi)} - ${x(lo)})` }} />
        <span className={`interval-point ${verdict}`} style={{ left: x(estimate) }} />
      </div>
    </div>
  );
}

/** The axis under the rows: −extent, 0 and +extent, formatted by the caller. */
export function IntervalAxis({ extent, format }: { extent: number; format: (value: number) => string }) {
  return (
    <div className="interval-row axis" aria-hidden="true">
      <span />
      <div className="interval-axis">
        <span>{format(-extent)}</span>
        <span>0</span>
        <span>{format(extent)}</span>
      </div>
    </div>
  );
}
