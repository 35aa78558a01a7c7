import { createHmac } from 'node:crypto';
import http from 'node:http';
import https from 'node:https';
import { isIP } from 'node:net';
import type { FastifyBaseLogger } from 'fastify';
import type { Db } from '../../db/database.js';
import { toBool } from '../../db/values.js';
import { LogThrottle } from '../../log-throttle.js';
import { BlockedAddress, isBlockedAddress, pinnedLookup } from './addresses.js';
import { claimDeliveries, dropDelivery, dueDeliveries, findWebhookForSend, recordAttempt, type AttemptOutcome, type ClaimedDelivery, type DueDelivery } from './webhooks.repository.js';

/** Contract §11: retried after about 10 s, 1 min, 10 min, 1 h, then failed. */
const RETRY_DELAYS_MS = [10_000, 60_000, 600_000, 3_600_000];

/**
 * Sends at once on one instance: in all, to one project, to one webhook. A receiver that hangs
 * holds `perWebhook` of them for up to the timeout, a project whose 20 webhooks all hang
 * `perProject`, and the rest go to the others (contract §11: one project cannot delay another's).
 */
export const SEND_SLOTS = { total: 200, perProject: 10, perWebhook: 2 };
/** Due deliveries read per claim (one a webhook) to choose from. */
const CANDIDATES = 500;

/**
 * Of the candidates (oldest first), up to `room` taken in turns between projects, each project in
 * the order of its oldest due delivery, and at most `projectRoom(project)` of one project.
 */
export function takeInTurns(candidates: readonly DueDelivery[], room: number, projectRoom: (projectId: string) => number): DueDelivery[] {
  const byProject = new Map<string, DueDelivery[]>();
  for (const candidate of candidates) {
    const queue = byProject.get(candidate.project_id) ?? [];
    queue.push(candidate);
    byProject.set(candidate.project_id, queue);
  }
  const taken: DueDelivery[] = [];
  for (let turn = 0; taken.length < room; turn++) {
    let tookAny = false;
    for (const [projectId, queue] of byProject) {
      const next = queue[turn];
      if (!next || turn >= projectRoom(projectId)) continue;
      taken.push(next);
      tookAny = true;
      if (taken.length === room) break;
    }
    if (!tookAny) break;
  }
  return taken;
}

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
 * one of them (claimDeliveries), sent, and logged per attempt. Deliveries survive a restart:
 * they are rows, and a claim that was never finished ends with its lease. Each send runs on its
 * own: a slot freed is taken again at once, and the claims share the slots fairly (SEND_SLOTS).
 */
export class WebhookSender {
  private readonly retryDelaysMs: readonly number[];
  private readonly pollIntervalMs: number;
  private readonly timeoutMs: number;
  private readonly closing = new AbortController();
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private again = false;
  /** Sends under way on this instance, by delivery id. */
  private readonly inFlight = new Map<string, { webhookId: string; projectId: string; done: Promise<void> }>();
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
    this.running = this.claim()
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
    await Promise.all([...this.inFlight.values()].map((send) => send.done));
  }

  /** Fills the free slots with due deliveries, in turns between projects and webhooks. */
  private async claim(): Promise<void> {
    do {
      this.again = false;
      const room = SEND_SLOTS.total - this.inFlight.size;
      if (room <= 0) return; // a send that ends wakes the sender
      const perWebhook = new Map<string, number>();
      const perProject = new Map<string, number>();
      for (const { webhookId, projectId } of this.inFlight.values()) {
        perWebhook.set(webhookId, (perWebhook.get(webhookId) ?? 0) + 1);
        perProject.set(projectId, (perProject.get(projectId) ?? 0) + 1);
      }
      const full = (counts: Map<string, number>, cap: number) => [...counts].filter(([, count]) => count >= cap).map(([id]) => id);
      const candidates = await dueDeliveries(this.db, { webhooks: full(perWebhook, SEND_SLOTS.perWebhook), projects: full(perProject, SEND_SLOTS.perProject) }, CANDIDATES);
      const taken = takeInTurns(candidates, room, (projectId) => SEND_SLOTS.perProject - (perProject.get(projectId) ?? 0));
      // The lease outlasts a send (timeout + margin); a send cut short is retried when it ends.
      const leaseUntil = new Date(Date.now() + this.timeoutMs * 2 + 1000).toISOString();
      const claimed = await claimDeliveries(this.db, this.dialect, taken.map((candidate) => candidate.id), leaseUntil);
      const projectOf = new Map(taken.map((candidate) => [candidate.id, candidate.project_id]));
      for (const delivery of claimed) this.startSend(delivery, projectOf.get(delivery.id)!);
      // One a webhook per claim: a webhook with room left, or another instance's leftovers, may have more.
      if (claimed.length > 0) this.again = true;
    } while (this.again && !this.closing.signal.aborted);
  }

  private startSend(delivery: ClaimedDelivery, projectId: string): void {
    const done = this.send(delivery)
      .catch((error: unknown) => {
        // The attempt could not be logged (the database away): the lease brings the delivery back.
        if (this.failureLog.due()) this.log.warn({ err: error, deliveryId: delivery.id }, 'webhook sender: could not log an attempt; it is sent again when its lease ends');
      })
      .finally(() => {
        this.inFlight.delete(delivery.id);
        this.wake();
      });
    this.inFlight.set(delivery.id, { webhookId: delivery.webhook_id, projectId, done });
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
    const timeout = AbortSignal.timeout(this.timeoutMs);
    try {
      const url = new URL(rawUrl);
      // An IP literal is connected to without a lookup, so pinnedLookup never sees it: checked here.
      const literal = url.hostname.replace(/^\[|\]$/g, '');
      if (!this.allowPrivate && isIP(literal) && isBlockedAddress(literal)) throw new BlockedAddress(literal);
      const timestamp = String(Math.floor(Date.now() / 1000));
      const status = await new Promise<number>((resolve, reject) => {
        const sent = (url.protocol === 'https:' ? https : http).request(
          url,
          {
            method: 'POST',
            agent: false, // a connection of its own, closed once the status is in
            // The socket connects to the addresses pinnedLookup checked; the name is not resolved again.
            lookup: this.allowPrivate ? undefined : pinnedLookup,
            headers: {
              'content-type': 'application/json',
              'content-length': Buffer.byteLength(delivery.payload),
              'user-agent': 'Guidon-Webhooks',
              'x-guidon-event': delivery.action,
              'x-guidon-delivery': delivery.id,
              'x-guidon-timestamp': timestamp,
              'x-guidon-signature': signature(secret, timestamp, delivery.payload),
            },
            signal: AbortSignal.any([timeout, this.closing.signal]),
          },
          // Only the status counts (node:http follows no redirect: a 3xx is a failure, and leads nowhere).
          (response) => {
            response.destroy();
            resolve(response.statusCode ?? 0);
          },
        );
        sent.on('error', reject);
        sent.end(delivery.payload);
      });
      const ok = status >= 200 && status < 300;
      return { status_code: status, error: ok ? null : `HTTP ${status}`, duration_ms: elapsed() };
    } catch (error) {
      if (this.closing.signal.aborted) return { status_code: null, error: 'shutting down', duration_ms: elapsed() };
      if (timeout.aborted) return { status_code: null, error: `no answer within ${this.timeoutMs / 1000} s`, duration_ms: elapsed() };
      const failure = error as Error & { code?: string };
      const message = failure instanceof BlockedAddress || !failure.code ? failure.message : failure.code;
      return { status_code: null, error: String(message).slice(0, 500), duration_ms: elapsed() };
    }
  }
}
