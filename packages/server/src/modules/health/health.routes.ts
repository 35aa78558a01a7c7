import { setTimeout as sleep } from 'node:timers/promises';
import { Type } from 'typebox';
import type { ApiPlugin } from '../../http/plugin.js';

/** A load balancer waits about 2 s: a database that does not answer by then is down for it. */
const PING_DEADLINE_MS = 1500;

/** GET /health: 200 while the database answers, else 503 (within PING_DEADLINE_MS). */
export const healthRoutes: ApiPlugin<{ ping: () => Promise<void> }> = async (app, { ping }) => {
  const Status = Type.Object({ status: Type.String() });
  app.get('/health', { schema: { tags: ['health'], response: { 200: Status, 503: Status } } }, async (request, reply) => {
    const timer = new AbortController();
    try {
      await Promise.race([
        ping(),
        sleep(PING_DEADLINE_MS, undefined, { signal: timer.signal }).then(() => Promise.reject(new Error(`no answer within ${PING_DEADLINE_MS} ms`))),
      ]);
      return { status: 'ok' };
    } catch (error) {
      request.log.error({ err: error }, 'health check: database does not answer');
      return reply.code(503).send({ status: 'unavailable' });
    } finally {
      timer.abort();
    }
  });
};
