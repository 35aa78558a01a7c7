import { createHmac } from 'node:crypto';
import http from 'node:http';
import https from 'node:https';
import { isIP } from 'node:net';
import type { FastifyBaseLogger } from 'fastify';
import type { Db } from '../../db/database.js';
import { toBool } from '../../db/values.js';
import { LogThrottle } from '../../log-throttle.js';
import { BlockedAddress, isBlockedAddress, pinnedLookup } from './addresses.js';
import { claimDeliveries, dropDelivery, dueDeliveries, findWebhookForSend, recordAttempt, recordInterrupted, type AttemptOutcome, type ClaimedDelivery, type DueDelivery } from './webhooks.repository.js';

/** docs/api.md, Webhooks: retried after about 10 s, 1 min, 10 min, 1 h, then failed. */
const RETRY_DELAYS_MS = [10_000, 60_000, 600_000, 3_600_000];

/**
 * Sends at once on one instance: in all, to one project, to one webhook. A receiver that hangs
 * holds `perWebhook` of them for up to the timeout, a project whose 20 webhooks all hang
 * `perProject`, and the rest go to the others (docs/api.md, Webhooks: one project cannot delay another's).
 * `total` can still be filled by projects that all hang (anyone may create projects, 20 fill it):
 * so beyond it, a project with no send in flight here may still start one, up to `total +
 * reserve` (the hard ceiling: a finite machine's sockets and memory), and a quiet project's
 * first attempt does not wait for a hanging send's timeout. Filling the ceiling too takes
 * 20 projects of 10 plus 100 more of 1 all hanging at once on this instance.
 */
export const SEND_SLOTS = { total: 200, reserve: 100, perProject: 10, perWebhook: 2 };
export type SendSlots = typeof SEND_SLOTS;
/** Due deliveries read per claim to choose from: one a project first (dueDeliveries), so up to this many projects. */
const CANDIDATES = 500;

/** Sends in flight on this instance, by project and by webhook. */
export interface InFlight {
  project(projectId: string): number;
  webhook(webhookId: string): number;
}

/**
 * Of the candidates (as dueDeliveries ranks them), the ones to send now, one slot at a time. Each
 * slot goes to the project with the fewest sends (in flight here and taken now), by need: a
 * project whose sends hang then never wins a freed slot from one waiting for its first. Ties go
 * to a project whose next is a first attempt, then to the one ranked first (its oldest). Within a
 * project: first attempts before retries, then the webhook with the fewest in flight (a webhook's
 * second send waits for its siblings' first), then the oldest. At most `perProject` a
 * project. Up to `room` slots, then up to `reserve` more, only to projects with none in flight
 * or taken (see SEND_SLOTS).
 */
export function takeInTurns(candidates: readonly DueDelivery[], slots: { room: number; reserve: number; perProject: number }, inFlight: InFlight): DueDelivery[] {
  const queues = new Map<string, DueDelivery[]>(); // in rank order
  for (const candidate of candidates) {
    const queue = queues.get(candidate.project_id) ?? [];
    queue.push(candidate);
    queues.set(candidate.project_id, queue);
  }
  const sends = new Map<string, number>();
  for (const [projectId, queue] of queues) {
    queue.sort((a, b) => Number(a.retry) - Number(b.retry) || inFlight.webhook(a.webhook_id) - inFlight.webhook(b.webhook_id)); // stable: else the rank
    sends.set(projectId, inFlight.project(projectId));
  }
  const taken: DueDelivery[] = [];
  while (taken.length < slots.room + slots.reserve) {
    let best: string | undefined;
    for (const [projectId, queue] of queues) {
      if (queue.length === 0 || sends.get(projectId)! >= slots.perProject) continue;
      if (best === undefined) best = projectId;
      else {
        const [count, bestCount] = [sends.get(projectId)!, sends.get(best)!];
        if (count < bestCount || (count === bestCount && !queue[0]!.retry && queues.get(best)![0]!.retry)) best = projectId;
      }
    }
    if (best === undefined) break;
    // The reserve: only a project with nothing in flight (the best has the fewest, so none is left).
    if (taken.length >= slots.room && sends.get(best)! > 0) break;
    taken.push(queues.get(best)!.shift()!);
    sends.set(best, sends.get(best)! + 1);
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
  /** Smaller slots (SEND_SLOTS), so a test fills them with a few hanging receivers. */
  slots?: Partial<SendSlots>;
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
  private readonly slots: SendSlots;
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
    this.slots = { ...SEND_SLOTS, ...options.slots };
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
      const { total, reserve, perProject: projectCap, perWebhook: webhookCap } = this.slots;
      if (this.inFlight.size >= total + reserve) return; // a send that ends wakes the sender
      const perWebhook = new Map<string, number>();
      const perProject = new Map<string, number>();
      for (const { webhookId, projectId } of this.inFlight.values()) {
        perWebhook.set(webhookId, (perWebhook.get(webhookId) ?? 0) + 1);
        perProject.set(projectId, (perProject.get(projectId) ?? 0) + 1);
      }
      const room = Math.max(0, total - this.inFlight.size);
      // With `total` taken, only projects with nothing in flight here may start one (the reserve).
      const cap = room > 0 ? projectCap : 1;
      const full = (counts: Map<string, number>, limit: number) => [...counts].filter(([, count]) => count >= limit).map(([id]) => id);
      const candidates = await dueDeliveries(this.db, { webhooks: full(perWebhook, webhookCap), projects: full(perProject, cap) }, projectCap, CANDIDATES);
      const taken = takeInTurns(
        candidates,
        { room, reserve: total + reserve - Math.max(total, this.inFlight.size), perProject: projectCap },
        { project: (id) => perProject.get(id) ?? 0, webhook: (id) => perWebhook.get(id) ?? 0 },
      );
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
    if (delivery.interrupted.length > 0) {
      // Attempts cut short by a stop or a crash are logged now, and each counted as a try.
      const outOfTries = delivery.attempts > this.retryDelaysMs.length + 1;
      await recordInterrupted(this.db, delivery, outOfTries);
      if (outOfTries) return;
    }
    const webhook = await findWebhookForSend(this.db, delivery.webhook_id);
    if (!webhook || !toBool(webhook.enabled)) {
      await dropDelivery(this.db, delivery.id);
      return;
    }
    const outcome = await this.post(webhook.url, webhook.secret, delivery);
    // The lease brings it back; the next claim logs this attempt as interrupted.
    if (this.closing.signal.aborted && outcome.error === 'shutting down') return;
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
