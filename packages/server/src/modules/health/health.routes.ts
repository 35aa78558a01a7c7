import { setTimeout as sleep } from 'node:timers/promises';
import { Type } from 'typebox';
import type { ApiPlugin } from '../../http/plugin.js';

/** A load balancer waits about 2 s: a database that does not answer by then is down for it. */
const PING_DEADLINE_MS = 1500;

/**
 * Whether this process should be sent traffic, apart from its database: `starting` until it
 * listens (migrations are done by then), `stopping` from the moment main.ts receives SIGTERM.
 */
export interface Readiness {
  state: 'starting' | 'ready' | 'stopping';
}

/** Resolves when the database answers within PING_DEADLINE_MS, rejects otherwise. */
async function answersInTime(ping: () => Promise<void>): Promise<void> {
  const timer = new AbortController();
  try {
    await Promise.race([
      ping(),
      sleep(PING_DEADLINE_MS, undefined, { signal: timer.signal }).then(() => Promise.reject(new Error(`no answer within ${PING_DEADLINE_MS} ms`))),
    ]);
  } finally {
    timer.abort();
  }
}

/**
 * GET /health (liveness): 200 while the database answers, else 503 (within PING_DEADLINE_MS).
 * GET /ready (readiness): 200 `ready` while the process takes traffic and the database answers;
 * 503 `starting`, `stopping` or `unavailable` otherwise (docs/operations.md, Health). Probes come
 * every few seconds: their answers are logged only when something is wrong.
 */
export const healthRoutes: ApiPlugin<{ ping: () => Promise<void>; readiness: Readiness }> = async (app, { ping, readiness }) => {
  const Status = Type.Object({ status: Type.String() });
  app.get('/health', { schema: { tags: ['health'], response: { 200: Status, 503: Status } }, logLevel: 'warn' }, async (request, reply) => {
    try {
      await answersInTime(ping);
      return { status: 'ok' };
    } catch (error) {
      request.log.error({ err: error }, 'health check: database does not answer');
      return reply.code(503).send({ status: 'unavailable' });
    }
  });

  const ReadyStatus = Type.Object({ status: Type.Union([Type.Literal('ready'), Type.Literal('starting'), Type.Literal('stopping'), Type.Literal('unavailable')]) });
  app.get('/ready', { schema: { tags: ['health'], response: { 200: ReadyStatus, 503: ReadyStatus } }, logLevel: 'warn' }, async (_request, reply) => {
    if (readiness.state !== 'ready') return reply.code(503).send({ status: readiness.state });
    try {
      await answersInTime(ping);
    } catch {
      return reply.code(503).send({ status: 'unavailable' }); // /health logs why
    }
    // SIGTERM may have come while the database was asked.
    return readiness.state === 'ready' ? { status: 'ready' as const } : reply.code(503).send({ status: readiness.state });
  });
};
