import type { FastifyPluginAsync, RawServerDefault } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { Services } from '../../services.js';
import type { Metrics } from '../metrics/metrics.js';
import { Invalid, NotFound } from '../../errors.js';
import { errorResponses } from '../../http/schemas.js';
import { answerFor } from './evaluate.answers.js';
import { bodyReadBefore, directEvaluate } from './evaluate.direct.js';
import { notModified, sdkKeyHeader, sdkProjectHook } from './evaluation.js';
import { EvaluateBody, EvaluateResult, NotModified } from './evaluate.schemas.js';
import { ofrepRoutes } from './ofrep.routes.js';
import { streamRoutes } from './stream.routes.js';
import { StreamTokens } from './stream.tokens.js';

/** The SDK surfaces: POST /sdk/v1/evaluate (what applications call at runtime), the change stream, and OFREP. */
export const evaluateRoutes: FastifyPluginAsync<Services & { metrics: Metrics }, RawServerDefault, TypeBoxTypeProvider> = async (app, { metrics, ...services }) => {
  const { limits, evaluateCache, history } = services;
  app.decorateRequest('sdkProject', null);
  // The interface promises 400 for a missing or malformed body: a body that is not declared as
  // JSON (none at all, or form-encoded as curl sends by default) is one. Other routes keep 415.
  app.addContentTypeParser('*', (_request, _payload, done) => done(new Invalid('body must be JSON, sent with Content-Type: application/json'), undefined));

  app.post('/sdk/v1/evaluate', {
    // Applications call this thousands of times a second: no per-request log lines (errors are still logged).
    logLevel: 'warn',
    // Contract §2 order: rate limit (429), SDK key (401), then the body (400), then the environment (404).
    onRequest: sdkProjectHook(limits, evaluateCache, sdkKeyHeader),
    preParsing: bodyReadBefore,
    schema: {
      tags: ['evaluate'],
      security: [{ sdkKey: [] }],
      body: EvaluateBody,
      // 413: a body over 1 MiB; 503: the database away while the SDK key is not compiled yet (Retry-After).
      response: { 200: EvaluateResult, 304: NotModified, ...errorResponses(400, 401, 404, 413, 429, 500, 503) },
    },
  }, (request, reply) => {
    const environment = request.sdkProject?.environments.get(request.body.environment);
    if (!environment) throw new NotFound(`Environment "${request.body.environment}" not found in this project`);
    const answer = answerFor(environment, request.body.context?.user_id, request.body.context?.user_email, history);
    reply.header('etag', answer.etag);
    if (notModified(request.headers, answer.etag)) reply.code(304).send(undefined as never);
    // Already JSON (the response schema documents its shape).
    else reply.type('application/json; charset=utf-8').send(answer.body as never);
  });
  directEvaluate(app, services, metrics);

  const streamTokens = new StreamTokens(services.tokens.keyFor('sdk stream tokens'));
  await app.register(streamRoutes, { ...services, streamTokens });
  await app.register(ofrepRoutes, { ...services, streamTokens });
};
