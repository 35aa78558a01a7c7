import { Type } from 'typebox';
import type { ApiPlugin } from '../../services.js';

/** GET /health: 200 while the database answers, else 503. */
export const healthRoutes: ApiPlugin = async (app, { ping }) => {
  const Status = Type.Object({ status: Type.String() });
  app.get('/health', { schema: { tags: ['health'], response: { 200: Status, 503: Status } } }, async (request, reply) => {
    try {
      await ping();
      return { status: 'ok' };
    } catch (error) {
      request.log.error({ err: error }, 'health check: database does not answer');
      return reply.code(503).send({ status: 'unavailable' });
    }
  });
};
