/**
 * A direct path: one hot route answered in front of Fastify, for the requests it would answer 200
 * (or 304) without anything Fastify's pipeline adds: evaluate (modules/evaluate/evaluate.direct.ts)
 * and the ruleset fetch (modules/local-evaluation/ruleset.direct.ts). Fastify's pipeline costs
 * those routes more than everything else they do (docs/performance.md). Everything else still
 * goes to the route, so validation, errors and their order stay in one place.
 *
 * A direct path names the hooks it does itself (`does`); at start-up the hooks that apply to its
 * route are read from Fastify's router, and one it does not name stops the start, since the direct
 * path would skip it.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { FastifyInstance } from 'fastify';
import type { Config } from '../config.js';
import type { Limit } from '../rate-limits.js';
import { clientAddressOf } from './client-address.js';

export type Listener = (request: IncomingMessage, response: ServerResponse) => void;

/** The hooks of a route by kind (onRequest, preParsing, onResponse, …), by function name. */
export type HookNames = Readonly<Record<string, readonly string[]>>;

/** A route as Fastify's router hands it to routerOptions.buildPrettyMeta (find-my-way's route). */
interface RouterRoute {
  method: string;
  path: string;
  store: unknown;
}

let reading: ((route: RouterRoute) => void) | null = null;

/**
 * Fastify's router option buildPrettyMeta (set in app.ts), one of its documented server options:
 * the router hands it each route's store, which holds the hooks that apply to the route by kind,
 * as functions. hooksOf reads them here, as objects, while app.printRoutes walks
 * the routes; the printout itself is not read. For printRoutes it returns what Fastify's own does.
 */
export function routeMeta(route: RouterRoute): Record<string, unknown> {
  reading?.(route);
  const store = route.store as Record<string, unknown>;
  return Object.fromEntries(Object.entries(store).filter(([key, value]) => isHookList(value) || key === 'errorHandler' || key === 'logLevel' || key === 'logSerializers'));
}

const isHookList = (value: unknown): value is ((...args: never[]) => unknown)[] => Array.isArray(value) && value.length > 0 && value.every((hook) => typeof hook === 'function');

/**
 * The hooks that apply to a route, by kind, by function name (Fastify binds them: "bound name").
 * Every hook the direct path names in `does` applies to the route, so a read that misses one is a
 * read that no longer works (another Fastify, routeMeta not set): it stops the start rather than
 * finding nothing to skip.
 */
function hooksOf(app: FastifyInstance, method: string, path: string, does: HookNames): Record<string, string[]> {
  let store: Record<string, unknown> | undefined;
  reading = (route) => {
    if (route.method === method && route.path === path) store = route.store as Record<string, unknown>;
  };
  try {
    app.printRoutes({ method, includeMeta: [] }); // includeMeta: buildPrettyMeta is called for each route
  } finally {
    reading = null;
  }
  if (store === undefined) throw new Error(`${method} ${path}: its hooks could not be read (routerOptions.buildPrettyMeta: routeMeta, app.ts)`);
  const hooks: Record<string, string[]> = {};
  for (const [kind, value] of Object.entries(store)) if (isHookList(value)) hooks[kind] = value.map((hook) => hook.name.replace(/^bound /, ''));
  for (const [kind, names] of Object.entries(does)) {
    for (const name of names) if (!hooks[kind]?.includes(name)) throw new Error(`${method} ${path}: its hooks as read lack ${kind} ${name}, which applies to it: the read (http/direct-path.ts, hooksOf) no longer works`);
  }
  return hooks;
}

/** The hooks that apply to the route and that its direct path does not do (`does`). */
export function hooksADirectPathWouldSkip(app: FastifyInstance, method: string, path: string, does: HookNames): string[] {
  const skipped: string[] = [];
  for (const [kind, names] of Object.entries(hooksOf(app, method, path, does))) {
    for (const name of names) if (!does[kind]?.includes(name)) skipped.push(`${kind} ${name}`);
  }
  return skipped;
}

export interface DirectPath {
  method: string;
  path: string;
  /** Where the direct path is written, for the error that names it. */
  file: string;
  /** The hooks of the route it does itself, by the name of the hook that does it for Fastify's route. */
  does: HookNames;
  /** The route's rate limit (its hook counts the same hit with Limit.hitOnce), or null. */
  limit: Limit | null;
  /**
   * The answer to give once the request is counted against the limit, when the request is one the
   * direct path may take; undefined leaves it to Fastify. An answer may still hand the request over
   * (`handOver`), once it turns out not to be one it answers.
   */
  take(request: IncomingMessage, response: ServerResponse, handOver: Listener): (() => void) | undefined;
}

/**
 * Puts `direct` in front of the app's request listener (Fastify's, or the direct path put there
 * before). It is on once the app is ready and no hook would be skipped, and off while the app
 * closes (Fastify answers 503 to new requests then). With CORS configured it takes nothing: CORS's
 * hooks are Fastify's to run. With the rate limit on, a request taken is counted here under the
 * route's key (request.ip, as app.ts's Fastify computes it) before it is answered; a refused one
 * goes to the route unread, whose hook takes the same outcome from hitOnce and answers the 429.
 */
export function inFrontOfFastify(app: FastifyInstance, config: Readonly<Config>, direct: DirectPath): void {
  const clientAddress = clientAddressOf(config.trustProxy);
  let on = false;
  app.addHook('onReady', async () => {
    if (config.corsOrigins.length > 0) return;
    const skipped = hooksADirectPathWouldSkip(app, direct.method, direct.path, direct.does);
    if (skipped.length > 0) throw new Error(`${direct.method} ${direct.path}: its direct path (${direct.file}) would skip ${skipped.join(', ')}: do what it does there and name it in its DIRECT_PATH_DOES`);
    on = true;
  });
  app.addHook('preClose', async () => {
    on = false;
  });
  const server = app.server;
  const next = server.listeners('request')[0] as Listener;
  server.removeListener('request', next);
  server.on('request', (request: IncomingMessage, response: ServerResponse) => {
    const answer = on ? direct.take(request, response, next) : undefined;
    if (answer === undefined) next(request, response);
    else if (direct.limit === null) answer();
    // (No address only once the socket is gone; request.ip is undefined then too.)
    else direct.limit.hitOnce(request, clientAddress(request) as string).then(answer, () => next(request, response));
  });
}
