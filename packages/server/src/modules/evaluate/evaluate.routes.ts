import type { FastifyRequest, HookHandlerDoneFunction } from 'fastify';
import type { ApiPlugin } from '../../services.js';
import { NotFound, Unauthorized } from '../../errors.js';
import { errorResponses } from '../../http/schemas.js';
import type { CompiledProject } from './evaluate.cache.js';
import { answerFor } from './evaluate.answers.js';
import { bodyReadBefore, directEvaluate } from './evaluate.direct.js';
import { EvaluateBody, EvaluateResult } from './evaluate.schemas.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** The project that owns the request's SDK key (evaluate only). */
    sdkProject: CompiledProject | null;
  }
}

/** POST /sdk/v1/evaluate: the endpoint applications call at runtime. */
export const evaluateRoutes: ApiPlugin = async (app, services) => {
  const { limits, evaluateCache, history } = services;
  app.decorateRequest('sdkProject', null);

  const missingKey = () => new Unauthorized('Missing or invalid SDK key');
  /** Finds the project of the SDK key: synchronously on a cache hit, so the hot path makes no promise. */
  const identify = (request: FastifyRequest, done: HookHandlerDoneFunction) => {
    const sdkKey = request.headers['x-sdk-key'];
    if (typeof sdkKey !== 'string' || sdkKey === '') return done(missingKey());
    const found = evaluateCache.project(sdkKey);
    if (!(found instanceof Promise)) {
      request.sdkProject = found;
      return done();
    }
    found.then((project) => {
      request.sdkProject = project;
      done(project ? undefined : missingKey());
    }, done);
  };

  app.post('/sdk/v1/evaluate', {
    // Applications call this thousands of times a second: no per-request log lines (errors are still logged).
    logLevel: 'warn',
    // Contract §2 order: rate limit (429), SDK key (401), then the body (400), then the environment (404).
    onRequest: function sdkProjectHook(request, _reply, done) {
      const limit = limits.evaluate;
      if (!limit) return identify(request, done);
      limit.hit(request.ip).then(() => identify(request, done), done);
    },
    preParsing: bodyReadBefore,
    schema: {
      tags: ['evaluate'],
      security: [{ sdkKey: [] }],
      body: EvaluateBody,
      response: { 200: EvaluateResult, ...errorResponses(400, 401, 404, 429, 500) },
    },
  }, (request, reply) => {
    const environment = request.sdkProject?.environments.get(request.body.environment);
    if (!environment) throw new NotFound(`Environment "${request.body.environment}" not found in this project`);
    const answer = answerFor(environment, request.body.context?.user_id, request.body.context?.user_email, history);
    // Already JSON (the response schema documents its shape).
    reply.type('application/json; charset=utf-8').send(answer.body as never);
  });
  directEvaluate(app, services);
};
