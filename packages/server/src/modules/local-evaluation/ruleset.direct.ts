/**
 * GET /sdk/v1/ruleset in front of Fastify (http/direct-path.ts). After a change too big for the
 * stream's message, every local SDK of the project fetches the ruleset within the message's spread,
 * each most likely on a new connection: Fastify's pipeline was a fifth of such a fetch's server
 * CPU (docs/performance.md). The direct path answers only the plainest requests, and only when
 * their token and its project are kept (TokenAccessReader.kept: read within the last second):
 * `?environment=<key>` alone, a project-scoped API token, a known environment. It answers them
 * with the route's own function (rulesetReply), 200 or 304. Everything else goes to the route:
 * CORS (configured), a token not kept or of every project, an SDK key, another query, an unknown
 * environment, a request over the rate limit (counted before it is answered, by inFrontOfFastify,
 * as evaluate's; the route's hook takes a refused one's outcome and answers the 429).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { FastifyInstance } from 'fastify';
import type { Config } from '../../config.js';
import { hooksADirectPathWouldSkip, inFrontOfFastify } from '../../http/direct-path.js';
import { requestIdOf } from '../../http/request-id.js';
import type { RateLimits } from '../../rate-limits.js';
import { TOKEN_PREFIX } from '../api-tokens/api-tokens.repository.js';
import type { Metrics } from '../metrics/metrics.js';
import { rulesetAnswer, rulesetReply } from './ruleset.document.js';
import type { TokenAccess, TokenAccessReader } from './token-auth.js';

const PATH = '/sdk/v1/ruleset';
const QUERY = `${PATH}?environment=`;
/** An environment key that needs no decoding in a URL: anything else (or nothing) goes to the route, which decodes and validates it. */
const PLAIN_KEY = /^[\w.-]{1,64}$/;
const BEARER = `Bearer ${TOKEN_PREFIX}`;

/**
 * What the direct path does itself, by the name of the hook that does it for Fastify's route: the
 * request-id headers (app.ts), the rate limit and the token (tokenAccess), and the request metrics
 * (observe). A hook that applies to the route and is not named here stops the start
 * (tests/ruleset-direct.test.ts).
 */
export const DIRECT_PATH_DOES: Readonly<Record<string, readonly string[]>> = Object.freeze({
  onRequest: ['requestHeaders', 'tokenAccess'],
  onResponse: ['observe'],
});

/** The hooks that apply to the ruleset route and that the direct path does not do (DIRECT_PATH_DOES). */
export const hooksTheRulesetPathWouldSkip = (app: FastifyInstance): string[] => hooksADirectPathWouldSkip(app, 'GET', PATH, DIRECT_PATH_DOES);

export function directRuleset(app: FastifyInstance, { config, limits, metrics, tokenAccess }: { config: Readonly<Config>; limits: RateLimits; metrics: Metrics; tokenAccess: TokenAccessReader }): void {
  inFrontOfFastify(app, config, { method: 'GET', path: PATH, file: 'ruleset.direct.ts', does: DIRECT_PATH_DOES, limit: limits.evaluate, take });

  function take(request: IncomingMessage, response: ServerResponse): (() => void) | undefined {
    const url = request.url!;
    if (request.method !== 'GET' || !url.startsWith(QUERY)) return undefined;
    const headers = request.headers;
    if (headers['content-length'] !== undefined || headers['transfer-encoding'] !== undefined || headers['x-sdk-key'] !== undefined || headers['x-api-key'] !== undefined) return undefined;
    const authorization = headers.authorization;
    if (authorization === undefined || !authorization.startsWith(BEARER)) return undefined;
    const access = tokenAccess.kept(authorization.slice(7)); // a secret with spaces around it is not kept under that text: the route's
    if (access === undefined) return undefined;
    const key = url.slice(QUERY.length);
    if (!PLAIN_KEY.test(key) || !access.project.environments.has(key)) return undefined;

    const started = performance.now();
    return () => answer(request, response, access, key, started);
  }

  function answer(request: IncomingMessage, response: ServerResponse, access: TokenAccess, key: string, started: number): void {
    const { project } = access;
    const { status, headers, body } = rulesetReply(rulesetAnswer(project.environments.get(key)!, project.revision), request.headers);
    headers['x-request-id'] = requestIdOf(request);
    headers['x-content-type-options'] = 'nosniff';
    if (body !== null) headers['content-length'] = String(body.length);
    response.writeHead(status, headers);
    response.end(body ?? undefined);
    metrics.count('GET', PATH, status, (performance.now() - started) / 1000);
  }
}
