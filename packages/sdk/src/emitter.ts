/** Listeners by event, for both clients: a listener's error stays the application's, and a closed client is silent. */
type Listener = (...args: any[]) => void;

export class Emitter<Events extends { [E in keyof Events]: Listener }> {
  private readonly listeners = new Map<keyof Events, Set<Listener>>();
  private silent = false;

  /** Adds a listener; returns what removes it. */
  on<E extends keyof Events>(event: E, listener: Events[E]): () => void {
    let listeners = this.listeners.get(event);
    if (!listeners) this.listeners.set(event, (listeners = new Set()));
    listeners.add(listener);
    return () => void listeners.delete(listener);
  }

  emit<E extends keyof Events>(event: E, ...args: Parameters<Events[E]>): void {
    if (this.silent) return;
    for (const listener of [...(this.listeners.get(event) ?? [])]) {
      try {
        listener(...args);
      } catch {
        // A listener's error is the application's own; it must not stop the client.
      }
    }
  }

  /** No event from now on (the client is closed). */
  silence(): void {
    this.silent = true;
  }
}
