import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Registry } from 'prom-client';
import type { Config } from '../../config.js';
import type { ApiPlugin } from '../../http/plugin.js';
import type { MetricSources } from './prometheus.js';
import { RequestCounts } from './request-counts.js';
import { ScheduleCounts } from './schedule-counts.js';

/**
 * The metrics of this process (docs/operations.md): every answer is counted here (onResponse, and
 * evaluate's direct path); prom-client writes them, with the other sources, when /metrics is
 * scraped (prometheus.ts, loaded only when METRICS_TOKEN is set).
 */
export function createMetrics(sources: MetricSources) {
  const requests = new RequestCounts();
  const scheduled = new ScheduleCounts();
  let registry: Promise<Registry> | undefined;

  /** One answered request (route: the route pattern). */
  const count = (method: string, route: string, statusCode: number, seconds: number): void => requests.count(method, route, statusCode, seconds);

  return {
    /** prom-client's registry, made on first use. */
    registry: (): Promise<Registry> => (registry ??= import('./prometheus.js').then(({ prometheusRegistry }) => prometheusRegistry(requests, scheduled, sources))),
    /** For the scheduler (modules/due-work/due-changes.ts): each scheduled change applied or failed. */
    scheduled,
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
export const metricsRoutes = (metrics: Metrics): ApiPlugin<{ config: Readonly<Config> }> => async (app, { config }) => {
  const expected = config.metricsToken === null ? null : digest(config.metricsToken);
  // With a token, the registry is made now, so that its process metrics (GC, event loop) count from the start.
  const registry = expected ? await metrics.registry() : null;
  app.get('/metrics', { schema: { hide: true }, logLevel: 'warn' }, async (request, reply) => {
    const given = /^Bearer\s+(\S+)\s*$/i.exec(request.headers.authorization ?? '')?.[1];
    if (!expected || !registry || given === undefined || !timingSafeEqual(digest(given), expected)) {
      return reply.callNotFound();
    }
    return reply.type(registry.contentType).send(await registry.metrics());
  });
};
