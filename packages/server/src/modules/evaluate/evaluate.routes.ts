import type { FastifyRequest, HookHandlerDoneFunction } from 'fastify';
import type { ApiPlugin } from '../../services.js';
import { Invalid, NotFound, Unauthorized } from '../../errors.js';
import { errorResponses } from '../../http/schemas.js';
import { isStorable, toStorable } from '../../http/well-formed.js';
import type { CompiledProject } from './evaluate.cache.js';
import { outcomeOf } from './outcomes.js';
import { EvaluateBody, EvaluateResult } from './evaluate.schemas.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** The project that owns the request's SDK key (evaluate only). */
    sdkProject: CompiledProject | null;
  }
}

/** POST /sdk/v1/evaluate: the endpoint applications call at runtime. */
export const evaluateRoutes: ApiPlugin = async (app, { limits, evaluateCache, history }) => {
  app.decorateRequest('sdkProject', null);
  // The interface promises 400 for a missing or malformed body: a body that is not declared as
  // JSON (none at all, or form-encoded as curl sends by default) is one. Other routes keep 415.
  app.addContentTypeParser('*', (_request, _payload, done) => done(new Invalid('body must be JSON, sent with Content-Type: application/json'), undefined));
  /** Outcome codes of the request being answered; reused, since a request is answered synchronously. */
  let codes = new Uint8Array(1024);

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
    onRequest: (request, _reply, done) => {
      const limit = limits.evaluate;
      if (!limit) return identify(request, done);
      limit.hit(request.ip).then(() => identify(request, done), done);
    },
    schema: {
      tags: ['evaluate'],
      security: [{ sdkKey: [] }],
      body: EvaluateBody,
      response: { 200: EvaluateResult, ...errorResponses(400, 401, 404, 429, 500) },
    },
  }, async (request, reply) => {
    const environment = request.sdkProject?.environments.get(request.body.environment);
    if (!environment) throw new NotFound(`Environment "${request.body.environment}" not found in this project`);
    const context = { user_id: request.body.context?.user_id ?? undefined, user_email: request.body.context?.user_email ?? undefined };
    const { flags, jsonKeys } = environment;
    if (flags.length > codes.length) codes = new Uint8Array(flags.length * 2);
    // The answer is assembled from JSON fragments precomputed per flag key and per outcome.
    let json = '{"flags":{';
    for (let i = 0; i < flags.length; i++) {
      const outcome = outcomeOf(flags[i]!.evaluate(context));
      codes[i] = outcome.code;
      json += jsonKeys[i]! + outcome.json;
    }
    // Already JSON: Fastify sends a string as it is (the response schema documents its shape).
    reply.type('application/json; charset=utf-8').send(`${json}}}` as never);
    if (flags.length > 0) {
      const userId = context.user_id === undefined ? null : isStorable(context.user_id) ? context.user_id : toStorable(context.user_id);
      history.record(environment, userId, codes, flags.length);
    }
    return reply;
  });
};
