import { useEffect, useRef, useState } from 'react';

/**
 * A removed row takes its Remove button with it, and the keyboard focus falls to <body>. After
 * `removedAt(index)`, the focus goes to the first field of the row that took its place, or to the
 * `fallback` control (an "Add …" button) when the last row went. `container` goes on the list.
 */
export function useFocusAfterRemoval<T extends HTMLElement>(selectors: { row: string; field: string; fallback: string }) {
  const container = useRef<T>(null);
  const [removed, setRemoved] = useState<number | null>(null);
  const { row, field, fallback } = selectors;
  useEffect(() => {
    if (removed === null || !container.current) return;
    const next = container.current.querySelectorAll<HTMLElement>(row)[removed]?.querySelector<HTMLElement>(field);
    (next ?? container.current.querySelector<HTMLElement>(fallback))?.focus();
    setRemoved(null);
  }, [removed, row, field, fallback]);
  return { container, removedAt: setRemoved };
}
