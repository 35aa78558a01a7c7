/**
 * A refresh that coalesces overlapping calls: a call while one runs gets that run's result, and
 * the run goes once more after it (the state may have changed since it began), unless stopped.
 */
export function coalesced(run: () => Promise<boolean>, stopped: () => boolean): () => Promise<boolean> {
  let running: Promise<boolean> | undefined;
  let again = false;
  return () => {
    if (running) {
      again = true;
      return running;
    }
    running = (async () => {
      let ok: boolean;
      do {
        again = false;
        ok = await run();
      } while (again && !stopped());
      return ok;
    })().finally(() => (running = undefined));
    return running;
  };
}
