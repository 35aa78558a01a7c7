/**
 * Long work on the server's thread (an import's hundreds of writes, a write's events: on SQLite
 * every query runs on this thread) gives the event loop a turn every few milliseconds, so that
 * other requests (/health, evaluate from the compiled views) are not held until it ends.
 */

/** A full turn of the event loop: two setImmediate hops, so that timers and I/O run in between whatever phase this resumes in. */
export const nextTurn = (): Promise<void> => new Promise((resolve) => setImmediate(() => setImmediate(resolve)));

/** A function to await between steps of long work: it gives a turn once `everyMs` of work has passed since the last. */
export function pacer(everyMs = 10): () => Promise<void> {
  let since = performance.now();
  return async () => {
    if (performance.now() - since < everyMs) return;
    await nextTurn();
    since = performance.now();
  };
}
