import { useEffect, useState, type DependencyList, type RefObject } from 'react';
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';

/** A colour of the theme (styles.css), read from the chart's element as it is drawn. */
export type ThemeColour = (name: string) => string;

/** The axes of the dashboard's charts: muted labels, border-coloured grid and ticks. */
export const themedAxis = (colour: ThemeColour): uPlot.Axis => ({ stroke: colour('--muted'), grid: { stroke: colour('--border'), width: 1 }, ticks: { stroke: colour('--border') } });

const DARK = '(prefers-color-scheme: dark)';

/** Whether the system's dark scheme is on now (styles.css follows it), followed as it changes. */
function useDarkScheme(): boolean {
  const [dark, setDark] = useState(() => window.matchMedia(DARK).matches);
  useEffect(() => {
    const query = window.matchMedia(DARK);
    const follow = () => setDark(query.matches);
    query.addEventListener('change', follow);
    return () => query.removeEventListener('change', follow);
  }, []);
  return dark;
}

/**
 * A uPlot chart in `box`, as wide as the box (redrawn at its new width when it is resized), in the
 * theme's colours (drawn again when the system switches between light and dark); drawn again when
 * `deps` change, and destroyed with the component. `draw` answers null when there is nothing to
 * draw yet.
 */
export function useUplot(box: RefObject<HTMLDivElement | null>, height: number, draw: (colour: ThemeColour) => { options: Omit<uPlot.Options, 'width' | 'height'>; data: uPlot.AlignedData } | null, deps: DependencyList): void {
  const dark = useDarkScheme();
  useEffect(() => {
    const element = box.current;
    if (!element) return;
    const style = getComputedStyle(element);
    const drawn = draw((name) => style.getPropertyValue(name).trim() || '#888');
    if (!drawn) return;
    const chart = new uPlot({ ...drawn.options, width: element.clientWidth, height }, drawn.data, element);
    const resize = new ResizeObserver(() => chart.setSize({ width: element.clientWidth, height }));
    resize.observe(element);
    return () => {
      resize.disconnect();
      chart.destroy();
    };
    // The caller names what the drawing depends on; the scheme changes the colours.
  }, [...deps, dark]);
}
