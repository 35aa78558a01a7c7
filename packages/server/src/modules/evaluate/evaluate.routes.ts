import type { EvaluationContext, EvaluationResult } from '@guidon/engine';
import type { ApiPlugin } from '../../app.js';
import { newId } from '../../db/values.js';
import { NotFound, Unauthorized } from '../../errors.js';
import { errorResponses } from '../../http/schemas.js';
import type { EvaluationRow } from '../history/history.writer.js';
import type { CompiledProject } from './evaluate.cache.js';
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

  app.post('/sdk/v1/evaluate', {
    // Contract §2 order: rate limit (429), SDK key (401), then the body (400), then the environment (404).
    onRequest: async (request) => {
      await limits.evaluate?.hit(request.ip);
      const sdkKey = request.headers['x-sdk-key'];
      request.sdkProject = typeof sdkKey === 'string' && sdkKey !== '' ? await evaluateCache.project(sdkKey) : null;
      if (!request.sdkProject) throw new Unauthorized('Missing or invalid SDK key');
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
    const context: EvaluationContext = {
      user_id: request.body.context?.user_id ?? undefined,
      user_email: request.body.context?.user_email ?? undefined,
    };
    const flags: Record<string, EvaluationResult> = {};
    for (const flag of environment.flags) flags[flag.key] = flag.compiled.evaluate(context);
    reply.send({ flags });

    const evaluatedAt = new Date().toISOString();
    const userId = context.user_id ?? null;
    const rows: EvaluationRow[] = environment.flags.map((flag) => {
      const result = flags[flag.key]!;
      return {
        id: newId(),
        project_id: environment.projectId,
        environment_id: environment.environmentId,
        flag_id: flag.id,
        flag_key: flag.key,
        user_id: userId,
        enabled: result.enabled,
        reason: result.reason,
        evaluated_at: evaluatedAt,
      };
    });
    history.record(rows);
    return reply;
  });
};
