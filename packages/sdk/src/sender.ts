/**
 * The SDK's one way of sending what it gathers to Guidon: the local client's usage reports
 * (usage.ts) and both clients' exposures and events (exposures.ts). A round every interval, one
 * sooner when asked (a full batch), and a last one at close(); rounds never overlap. A batch whose
 * failure says Guidon did not take it is kept and sent first, in order, next round (what gathered
 * meanwhile waits where it is); any other failure drops it, which the owner counts.
 */
import { GuidonError } from './errors.js';
import { later, type Transport } from './transport.js';

export interface SenderOptions<Batch> {
  /** POST path, with the query naming the project when the credential needs it. */
  path: string;
  intervalMs: number;
  /** What gathered since the last round, as request bodies (none: nothing is sent). */
  take: () => Batch[];
  /** Whether a batch that failed so may be sent again as it is (else it is dropped). */
  keep: (error: GuidonError) => boolean;
  /** What a batch is, for error messages: "Usage report", "Exposures and events". */
  what: string;
  onError: (error: GuidonError) => void;
  /** A batch given up (refused, or its fate unknown and sending it again could count it twice). */
  onDropped?: (batch: Batch) => void;
  /** A batch Guidon took (a 2xx). */
  onSent?: (batch: Batch) => void;
}

export class BatchSender<Batch> {
  /** Batches sent without an answer that says they were taken or refused: sent again first, as they are. */
  private unanswered: Batch[] = [];
  /** Rounds, one after the other (an interval's and close()'s never overlap). */
  private sending: Promise<void> = Promise.resolve();
  private timer: ReturnType<typeof setTimeout> | undefined;
  private closed = false;
  /** False from a batch kept for later until one is taken: no round before the interval meanwhile (Guidon is away or holding requests back). */
  private taking = true;

  constructor(
    private readonly transport: Transport,
    private readonly options: SenderOptions<Batch>,
  ) {}

  /** A round every interval from now on. */
  start(): void {
    this.timer = later(() => {
      void this.send(false).finally(() => {
        if (!this.closed) this.start();
      });
    }, this.options.intervalMs);
  }

  /** A round now, after the one under way, unless the last one had to keep a batch (then the interval's); never rejects. */
  flush(): Promise<void> {
    return this.closed || !this.taking ? this.sending : this.send(false);
  }

  /** The last round, once; never rejects. */
  close(): Promise<void> {
    if (this.closed) return this.sending;
    this.closed = true;
    clearTimeout(this.timer);
    return this.send(true);
  }

  private send(final: boolean): Promise<void> {
    this.sending = this.sending.then(() => this.round(final)).catch((error: unknown) => this.options.onError(new GuidonError(`${this.options.what} not sent: ${(error as Error)?.message ?? error}`, 'network')));
    return this.sending;
  }

  private async round(final: boolean): Promise<void> {
    if (this.unanswered.length > 0 && !(await this.deliver(final))) return;
    this.unanswered = this.options.take();
    await this.deliver(final);
  }

  /** Sends the unanswered batches in order; false when one must wait for the next round. */
  private async deliver(final: boolean): Promise<boolean> {
    while (this.unanswered.length > 0) {
      const answer = await this.transport.request(this.options.path, { method: 'POST', json: this.unanswered[0], evenClosed: final });
      if (answer.kind === 'failed') {
        const { error } = answer;
        this.options.onError(new GuidonError(`${this.options.what} not taken: ${error.message}`, error.kind, error.status, error.retryAfterMs));
        if (this.options.keep(error)) {
          this.taking = false;
          return false;
        }
        this.options.onDropped?.(this.unanswered[0]!);
      } else {
        this.taking = true;
        this.options.onSent?.(this.unanswered[0]!);
      }
      this.unanswered.shift();
    }
    return true;
  }
}
