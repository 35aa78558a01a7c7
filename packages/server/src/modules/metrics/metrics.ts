import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { ApiPlugin, Services } from '../../services.js';
import { passwordWork } from '../accounts/passwords.js';

/**
 * The Prometheus metrics of this process (docs/operations.md). One registry per app, so several
 * apps in one process (tests) do not share counters.
 */
export function createMetrics({ history, evaluateCache, changes }: Pick<Services, 'history' | 'evaluateCache' | 'changes'>) {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: 'guidon_' });
  const requestDuration = new Histogram({
    name: 'guidon_http_request_duration_seconds',
    help: 'HTTP requests by route (the route pattern, not the URL), method and status; _count is the request count',
    labelNames: ['method', 'route', 'status'],
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
    registers: [registry],
  });
  const evaluateRequests = new Counter({
    name: 'guidon_evaluate_requests_total',
    help: 'POST /sdk/v1/evaluate answers by status',
    labelNames: ['status'],
    registers: [registry],
  });
  // Totals kept elsewhere, read when scraped.
  new Counter({
    name: 'guidon_flag_evaluations_total',
    help: 'Flags evaluated (one per flag of each answered evaluate or OFREP request)',
    registers: [registry],
    collect() {
      this.reset();
      this.inc(history.stats.recorded);
    },
  });
  new Counter({
    name: 'guidon_history_rows_total',
    help: 'Evaluation history rows (one per evaluated flag) by fate: written; dropped (writer behind); discarded (environment deleted first); failed (database error, or lost at shutdown)',
    labelNames: ['state'],
    registers: [registry],
    collect() {
      this.reset();
      for (const state of ['written', 'dropped', 'discarded', 'failed'] as const) this.inc({ state }, history.stats[state]);
    },
  });
  new Gauge({
    name: 'guidon_history_pending_rows',
    help: 'Evaluation history rows waiting to be written',
    registers: [registry],
    collect() {
      this.set(history.metrics().pending);
    },
  });
  new Counter({
    name: 'guidon_history_count_retries_total',
    help: 'Hourly counts handed to the writer again after it could not store them (counts are never dropped)',
    registers: [registry],
    collect() {
      this.reset();
      this.inc(history.stats.countRetries);
    },
  });
  new Gauge({
    name: 'guidon_compiled_projects',
    help: 'Entries in the compiled evaluate cache (one per SDK key)',
    registers: [registry],
    collect() {
      this.set(evaluateCache.size);
    },
  });
  new Gauge({
    name: 'guidon_change_feed_lag_seconds',
    help: 'Seconds since a revision check last confirmed every compiled project current (how stale one can be if a notification was lost)',
    registers: [registry],
    collect() {
      this.set(changes.lagSeconds());
    },
  });
  new Counter({
    name: 'guidon_password_hashes_total',
    help: 'argon2id password hashes computed (register, reset)',
    registers: [registry],
    collect() {
      this.reset();
      this.inc(passwordWork.hashes);
    },
  });

  /** One answered request (route: the route pattern). */
  const count = (method: string, route: string, statusCode: number, seconds: number): void => {
    const status = String(statusCode);
    requestDuration.observe({ method, route, status }, seconds);
    if (route === '/sdk/v1/evaluate') evaluateRequests.inc({ status });
  };

  return {
    registry,
    /** For answers sent without Fastify (evaluate's direct path, evaluate.direct.ts). */
    count,
    /** onResponse hook for the whole app. */
    observe(request: FastifyRequest, reply: FastifyReply, done: () => void): void {
      // Unknown URLs share one label: bounded cardinality.
      count(request.method, request.routeOptions.url ?? 'unmatched', reply.statusCode, reply.elapsedTime / 1000);
      done();
    },
  };
}

export type Metrics = ReturnType<typeof createMetrics>;

const digest = (text: string) => createHash('sha256').update(text).digest();

/** GET /metrics for Prometheus: only with METRICS_TOKEN set, and only to a request bearing it; else 404, as if absent. */
export const metricsRoutes = (metrics: Metrics): ApiPlugin => async (app, { config }) => {
  const expected = config.metricsToken === null ? null : digest(config.metricsToken);
  app.get('/metrics', { schema: { hide: true }, logLevel: 'warn' }, async (request, reply) => {
    const given = /^Bearer\s+(\S+)\s*$/i.exec(request.headers.authorization ?? '')?.[1];
    if (!expected || given === undefined || !timingSafeEqual(digest(given), expected)) {
      return reply.callNotFound();
    }
    return reply.type(metrics.registry.contentType).send(await metrics.registry.metrics());
  });
};
