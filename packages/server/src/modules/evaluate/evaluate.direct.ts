import type { IncomingMessage, ServerResponse } from 'node:http';
import { Readable } from 'node:stream';
import type { FastifyInstance, preParsingHookHandler } from 'fastify';
import type { Static } from 'typebox';
import type { Config } from '../../config.js';
import type { RateLimits } from '../../rate-limits.js';
import type { HistoryRecorder } from '../history/history.recorder.js';
import type { Metrics } from '../metrics/metrics.js';
import { hooksADirectPathWouldSkip, inFrontOfFastify, type Listener } from '../../http/direct-path.js';
import { bodyValidator } from '../../http/compilers.js';
import { requestIdOf } from '../../http/request-id.js';
import { answerFor, releaseAnswer, type Answer } from './evaluate.answers.js';
import type { CompiledProject, EvaluateCache } from './evaluate.cache.js';
import { EvaluateBody, wantsKinds } from './evaluate.schemas.js';

const PATH = '/sdk/v1/evaluate';
/** The app's bodyLimit (app.ts): a longer body goes to Fastify, which answers 413. */
const BODY_LIMIT = 1024 * 1024;
const READ_BODY = Symbol('body read by the direct evaluate path');

type WithBody = IncomingMessage & { [READ_BODY]?: Buffer };

/**
 * preParsing hook of the evaluate route: a request the direct path handed over has had its body
 * read already; Fastify reads the same bytes again from here.
 */
export const bodyReadBefore: preParsingHookHandler = (request, _reply, payload, done) => {
  const body = (request.raw as WithBody)[READ_BODY];
  done(null, body === undefined ? payload : Readable.from([body]));
};

/**
 * What the direct path does itself for a 200, by the name of the hook that does it for Fastify's
 * route: the request-id headers (app.ts), the rate limit and SDK key (sdkProject), reading the
 * body once (bodyReadBefore) and the request metrics (observe). These are all the hooks the
 * evaluate route may have: at start-up (onReady) the hooks that apply to it are compared with
 * this list, and a hook it does not name stops the start, since the direct path would skip it.
 * Name it here once the direct path does what it does (tests/evaluate-direct.test.ts).
 */
export const DIRECT_PATH_DOES: Readonly<Record<string, readonly string[]>> = Object.freeze({
  onRequest: ['requestHeaders', 'sdkProject'],
  preParsing: ['bodyReadBefore'],
  onResponse: ['observe'],
});

/** The hooks that apply to the evaluate route and that the direct path does not do (DIRECT_PATH_DOES). */
export const hooksTheDirectPathWouldSkip = (app: FastifyInstance): string[] => hooksADirectPathWouldSkip(app, 'POST', PATH, DIRECT_PATH_DOES);

/**
 * POST /sdk/v1/evaluate in front of Fastify: Fastify's request pipeline costs evaluate more than
 * everything else it does (docs/performance.md). The direct path answers only requests that the
 * route would answer 200, with the route's own function (answerFor) and headers. Everything else
 * goes to Fastify's route, with the body it has read: CORS (configured), an SDK key not compiled
 * yet, another content type, a body that does not parse or validate, an unknown environment, a
 * request over the rate limit. So validation, errors and their order (docs/api.md) stay in one
 * place. With the evaluate rate limit on, the request's hit is counted before the body is read
 * (inFrontOfFastify, with Limit.hitOnce under the route's key): a request then handed over carries
 * that outcome, which the route's hook takes instead of counting again, and a refused one is
 * handed over unread, so the 429 is the route's.
 * A hook that applies to the route and is not in DIRECT_PATH_DOES stops the start.
 */
export function directEvaluate(
  app: FastifyInstance,
  { config, limits, evaluateCache, history, metrics }: { config: Readonly<Config>; limits: RateLimits; evaluateCache: EvaluateCache; history: HistoryRecorder; metrics: Metrics },
): void {
  // The route's schema, compiled as the route's is (no coercion, no defaults): what passes here passes there.
  const valid = bodyValidator(EvaluateBody);
  // Fastify's own JSON parser with the app's settings (prototype poisoning refused): a body parses
  // here as it would there; one it refuses goes to the route, which answers its 400.
  const parseJson = app.getDefaultJsonParser(app.initialConfig.onProtoPoisoning ?? 'error', app.initialConfig.onConstructorPoisoning ?? 'error');
  let parsed: unknown;
  const keepParsed = (error: Error | null, value?: unknown) => {
    parsed = error === null ? value : undefined;
  };
  inFrontOfFastify(app, config, { method: 'POST', path: PATH, file: 'evaluate.direct.ts', does: DIRECT_PATH_DOES, limit: limits.evaluate, take });

  /** Takes the request when its headers allow a 200 without Fastify: its answer reads the body. */
  function take(request: IncomingMessage, response: ServerResponse, fastify: Listener): (() => void) | undefined {
    if (request.method !== 'POST' || request.url !== PATH) return undefined;
    const headers = request.headers;
    const type = headers['content-type'];
    if (type !== 'application/json' && type !== 'application/json; charset=utf-8') return undefined;
    const length = Number(headers['content-length']);
    if (!(length > 0 && length <= BODY_LIMIT) || headers['transfer-encoding'] !== undefined) return undefined;
    const sdkKey = headers['x-sdk-key'];
    if (typeof sdkKey !== 'string' || sdkKey === '' || headers['if-none-match'] !== undefined) return undefined; // 304s: Fastify's
    const project = evaluateCache.project(sdkKey);
    if (project === null || project instanceof Promise) return undefined; // Fastify's hook waits for the same load

    const started = performance.now();
    return () => readAndAnswer(request, response, project, started, fastify);
  }

  /** Reads the body, and answers it 200 or hands it to Fastify. */
  function readAndAnswer(request: IncomingMessage, response: ServerResponse, project: CompiledProject, started: number, fastify: Listener): void {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('error', () => response.destroy());
    request.on('end', () => {
      const body = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks);
      parsed = undefined;
      parseJson(request as never, body.toString('utf8'), keepParsed); // calls keepParsed before it returns
      const environment = parsed !== undefined && valid(parsed) ? project.environments.get((parsed as EvaluateBody).environment) : undefined; // unknown: the route's 404
      let answer: Answer | undefined;
      try {
        if (environment !== undefined) answer = answerFor(environment, (parsed as EvaluateBody).context, history, wantsKinds(request.headers));
      } catch {
        answer = undefined; // the route meets the same failure and answers it (500, logged)
      }
      if (answer === undefined) {
        (request as WithBody)[READ_BODY] = body;
        fastify(request, response);
        return;
      }
      response.writeHead(200, {
        'x-request-id': requestIdOf(request),
        'x-content-type-options': 'nosniff',
        etag: answer.etag,
        'content-type': 'application/json; charset=utf-8',
        'content-length': answer.body.length,
      });
      response.end(answer.body);
      // A slab is given back once the answer is written. Usually the socket wrote it all within
      // end() (writableFinished: nothing left in the response or the socket), so at once; else at
      // 'finish'. end(body, callback) would add and remove a once-listener on every request.
      if (answer.slab !== undefined) {
        if (response.writableFinished) releaseAnswer(answer);
        else {
          const sent = answer;
          response.once('finish', () => releaseAnswer(sent));
        }
      }
      metrics.count('POST', PATH, 200, (performance.now() - started) / 1000);
    });
  }
}

type EvaluateBody = Static<typeof EvaluateBody>;
