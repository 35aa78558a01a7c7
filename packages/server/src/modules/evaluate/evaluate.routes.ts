import type { Config } from '../../config.js';
import type { RateLimits } from '../../rate-limits.js';
import type { ApiPlugin } from '../../http/plugin.js';
import { errorResponses } from '../../http/schemas.js';
import type { HistoryRecorder } from '../history/history.recorder.js';
import type { Metrics } from '../metrics/metrics.js';
import { answerFor } from './evaluate.answers.js';
import { environmentOf, type EvaluateCache } from './evaluate.cache.js';
import { bodyReadBefore, directEvaluate } from './evaluate.direct.js';
import { notModified } from './evaluation.js';
import { AnswerHeaders, EvaluateBody, EvaluateResult, NotModified, wantsKinds } from './evaluate.schemas.js';
import { sdkKeyHeader, sdkProjectHook } from './sdk-auth.js';

/** POST /sdk/v1/evaluate: what applications call at runtime. */
export const evaluateRoutes: ApiPlugin<{ config: Readonly<Config>; limits: RateLimits; evaluateCache: EvaluateCache; history: HistoryRecorder; metrics: Metrics }> = async (app, options) => {
  const { limits, evaluateCache, history } = options;
  app.post('/sdk/v1/evaluate', {
    // Applications call this thousands of times a second: no per-request log lines (errors are still logged).
    logLevel: 'warn',
    // docs/api.md order: rate limit (429), SDK key (401), then the body (400), then the environment (404).
    onRequest: sdkProjectHook(limits, evaluateCache, sdkKeyHeader),
    preParsing: bodyReadBefore,
    schema: {
      tags: ['evaluate'],
      security: [{ sdkKey: [] }],
      headers: AnswerHeaders,
      body: EvaluateBody,
      // 413: a body over 1 MiB; 503: the database away while the SDK key is not compiled yet (Retry-After).
      response: { 200: EvaluateResult, 304: NotModified, ...errorResponses(400, 401, 404, 413, 429, 500, 503) },
    },
  }, (request, reply) => {
    const environment = environmentOf(request.sdkProject, request.body.environment);
    const answer = answerFor(environment, request.body.context, history, wantsKinds(request.headers));
    reply.header('etag', answer.etag);
    if (notModified(request.headers, answer.etag)) reply.code(304).send(undefined as never);
    // Already JSON (the response schema documents its shape).
    else reply.type('application/json; charset=utf-8').send(answer.body as never);
  });
  directEvaluate(app, options);
};
