import { existsSync, readFileSync } from 'node:fs';
import fastifyStatic from '@fastify/static';
import type { FastifyPluginAsync, FastifyReply } from 'fastify';
import { NotFound } from '../../errors.js';
import { pageHeaders } from '../../http/page-headers.js';
import { DASHBOARD_DIR } from '../../paths.js';


/** Paths that belong to the API: an unknown one stays a JSON 404, never the dashboard. */
const API_PREFIXES = ['/api', '/auth', '/sdk', '/docs', '/health', '/ready', '/ofrep', '/downloads'];
const isApiPath = (path: string) => API_PREFIXES.some((prefix) => path === prefix || path.startsWith(`${prefix}/`));

/**
 * The dashboard (packages/web) at /: its files, and index.html for any other GET that asks for
 * HTML (client-side routes such as /reset-password or /projects/…). API paths are unchanged.
 */
export const dashboardRoutes: FastifyPluginAsync<{ dir?: string }> = async (app, { dir = DASHBOARD_DIR }) => {
  const indexPath = `${dir}index.html`;
  if (!existsSync(indexPath)) {
    app.log.warn({ dir }, 'the dashboard is not built (npm run build): / answers 404');
    return;
  }
  const indexHtml = readFileSync(indexPath);

  app.addHook('onSend', pageHeaders);
  await app.register(fastifyStatic, {
    root: dir,
    wildcard: false, // one route per built file; everything else reaches the fallback below
    index: false,
    cacheControl: false, // set below: the hashed assets for a year, the rest revalidated
    setHeaders: (res, path) => {
      // Vite names files under assets/ by content hash: they never change.
      res.setHeader('cache-control', path.includes('/assets/') ? 'public, max-age=31536000, immutable' : 'no-cache');
    },
  });

  const sendIndex = (_request: unknown, reply: FastifyReply) => {
    reply.header('cache-control', 'no-cache');
    reply.type('text/html; charset=utf-8');
    return reply.send(indexHtml);
  };
  app.get('/', { schema: { hide: true } }, sendIndex);
  app.get('/*', { schema: { hide: true } }, async (request, reply) => {
    const path = request.url.split('?')[0] ?? '/';
    const wantsHtml = (request.headers.accept ?? '').includes('text/html');
    if (isApiPath(path) || !wantsHtml) throw new NotFound(`Route ${request.method} ${path} not found`);
    return sendIndex(request, reply);
  });
};
