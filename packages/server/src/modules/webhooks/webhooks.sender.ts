import { createHmac } from 'node:crypto';
import type { FastifyBaseLogger } from 'fastify';
import type { Db } from '../../db/database.js';
import { toBool } from '../../db/values.js';
import { LogThrottle } from '../../log-throttle.js';
import { classifyHost } from './addresses.js';
import { claimDueDeliveries, dropDelivery, findWebhookForSend, recordAttempt, type AttemptOutcome, type ClaimedDelivery } from './webhooks.repository.js';

/** Contract §11: retried after about 10 s, 1 min, 10 min, 1 h, then failed. */
const RETRY_DELAYS_MS = [10_000, 60_000, 600_000, 3_600_000];
const BATCH = 20;

/** For tests only (passed by the test harness through buildApp, not a setting). */
export interface WebhookSenderOptions {
  retryDelaysMs?: readonly number[];
  /** How often due deliveries are looked for when nothing woke the sender (default 1 s). */
  pollIntervalMs?: number;
  /** A receiver that has not answered by then has failed this attempt (default 10 s). */
  timeoutMs?: number;
}

export function signature(secret: string, timestamp: string, body: string): string {
  return `sha256=${createHmac('sha256', secret).update(`${timestamp}.${body}`).digest('hex')}`;
}

/**
 * Sends the outbox (webhook_deliveries): every instance polls it, each delivery is claimed by
 * one of them (claimDueDeliveries), sent, and logged per attempt. Deliveries survive a restart:
 * they are rows, and a claim that was never finished ends with its lease.
 */
export class WebhookSender {
  private readonly retryDelaysMs: readonly number[];
  private readonly pollIntervalMs: number;
  private readonly timeoutMs: number;
  private readonly closing = new AbortController();
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private again = false;
  /** The database away: the poll fails every second; said at most every 10 s. */
  private readonly failureLog = new LogThrottle();

  constructor(
    private readonly db: Db,
    private readonly dialect: 'sqlite' | 'postgres',
    private readonly allowPrivate: boolean,
    private readonly log: FastifyBaseLogger,
    options: WebhookSenderOptions = {},
  ) {
    this.retryDelaysMs = options.retryDelaysMs ?? RETRY_DELAYS_MS;
    this.pollIntervalMs = options.pollIntervalMs ?? 1000;
    this.timeoutMs = options.timeoutMs ?? 10_000;
  }

  start(): void {
    this.timer = setInterval(() => this.wake(), this.pollIntervalMs);
    this.timer.unref();
    this.wake();
  }

  /** Looks for due deliveries now (after a change committed here), or right after the current round. */
  wake(): void {
    if (this.closing.signal.aborted) return;
    if (this.running) {
      this.again = true;
      return;
    }
    this.running = this.drain()
      .then(
        () => {
          if (this.failureLog.recovered()) this.log.info('webhook sender: reading the outbox again');
        },
        (error: unknown) => {
          if (this.failureLog.due()) this.log.warn({ err: error }, 'webhook sender: could not read the outbox; trying again shortly');
        },
      )
      .finally(() => {
        this.running = undefined;
      });
  }

  /** Sends stop; what was being sent is sent again by whichever instance runs next (at least once). */
  async close(): Promise<void> {
    clearInterval(this.timer);
    this.closing.abort();
    await this.running;
  }

  private async drain(): Promise<void> {
    do {
      this.again = false;
      // The lease outlasts a send (timeout + margin); a send cut short is retried when it ends.
      const leaseUntil = new Date(Date.now() + this.timeoutMs * 2 + 1000).toISOString();
      const batch = await claimDueDeliveries(this.db, this.dialect, BATCH, leaseUntil);
      await Promise.all(batch.map((delivery) => this.send(delivery)));
      if (batch.length === BATCH) this.again = true;
    } while (this.again && !this.closing.signal.aborted);
  }

  private async send(delivery: ClaimedDelivery): Promise<void> {
    const webhook = await findWebhookForSend(this.db, delivery.webhook_id);
    if (!webhook || !toBool(webhook.enabled)) {
      await dropDelivery(this.db, delivery.id);
      return;
    }
    const outcome = await this.post(webhook.url, webhook.secret, delivery);
    if (this.closing.signal.aborted && outcome.error === 'shutting down') return; // the lease brings it back
    const succeeded = outcome.status_code !== null && outcome.status_code >= 200 && outcome.status_code < 300;
    const delay = this.retryDelaysMs[delivery.attempts - 1];
    const retryAt = !succeeded && delay !== undefined ? new Date(Date.now() + delay).toISOString() : null;
    await recordAttempt(this.db, delivery, outcome, succeeded, retryAt);
    if (!succeeded) this.log.info({ deliveryId: delivery.id, attempt: delivery.attempts, status: outcome.status_code, error: outcome.error, retryAt }, 'webhook delivery failed');
  }

  private async post(rawUrl: string, secret: string, delivery: ClaimedDelivery): Promise<AttemptOutcome> {
    const started = performance.now();
    const elapsed = () => Math.round(performance.now() - started);
    try {
      const url = new URL(rawUrl);
      // Checked at every send: a name may resolve elsewhere than when the webhook was created.
      if (!this.allowPrivate && (await classifyHost(url)) === 'private') {
        return { status_code: null, error: 'refused: the host resolves to a private, loopback or link-local address', duration_ms: elapsed() };
      }
      const timestamp = String(Math.floor(Date.now() / 1000));
      const response = await fetch(url, {
        method: 'POST',
        redirect: 'manual',
        headers: {
          'content-type': 'application/json',
          'user-agent': 'Guidon-Webhooks',
          'x-guidon-event': delivery.action,
          'x-guidon-delivery': delivery.id,
          'x-guidon-timestamp': timestamp,
          'x-guidon-signature': signature(secret, timestamp, delivery.payload),
        },
        body: delivery.payload,
        signal: AbortSignal.any([AbortSignal.timeout(this.timeoutMs), this.closing.signal]),
      });
      await response.body?.cancel().catch(() => undefined);
      const ok = response.status >= 200 && response.status < 300;
      return { status_code: response.status, error: ok ? null : `HTTP ${response.status}`, duration_ms: elapsed() };
    } catch (error) {
      if (this.closing.signal.aborted) return { status_code: null, error: 'shutting down', duration_ms: elapsed() };
      const cause = (error as { cause?: { code?: string; message?: string } }).cause;
      const message = (error as Error).name === 'TimeoutError' ? `no answer within ${this.timeoutMs / 1000} s` : (cause?.code ?? cause?.message ?? (error as Error).message);
      return { status_code: null, error: String(message).slice(0, 500), duration_ms: elapsed() };
    }
  }
}
