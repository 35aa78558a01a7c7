/** Local evaluation (docs/local-evaluation.md): the ruleset an SDK evaluates from, and the usage it reports back. */
import { Invalid, NotFound } from '../../errors.js';
import { isForeignKeyViolation } from '../../db/errors.js';
import type { Db } from '../../db/database.js';
import type { ApiPlugin } from '../../http/plugin.js';
import { errorResponses } from '../../http/schemas.js';
import type { RateLimits } from '../../rate-limits.js';
import { environmentOf, type EvaluateCache } from '../evaluate/evaluate.cache.js';
import { notModified } from '../evaluate/evaluation.js';
import { NotModified } from '../evaluate/evaluate.schemas.js';
import { Ruleset, RulesetQuery, UsageAccepted, UsageBody } from './local-evaluation.schemas.js';
import { encodedBody, rulesetAnswer } from './ruleset.document.js';
import { tokenAccessHook } from './token-auth.js';
import { addUsage, OLDEST_REPORT_MS } from './usage.repository.js';

export const localEvaluationRoutes: ApiPlugin<{ db: Db; limits: RateLimits; evaluateCache: EvaluateCache }> = async (app, { db, limits, evaluateCache }) => {
  const onRequest = tokenAccessHook(db, limits, evaluateCache);

  app.get('/sdk/v1/ruleset', {
    onRequest,
    schema: {
      tags: ['evaluate'],
      description: 'The rules of one environment, for an SDK that evaluates locally. An API token of the project, never an SDK key (403).',
      security: [{ bearer: [] }],
      querystring: RulesetQuery,
      response: { 200: Ruleset, 304: NotModified, ...errorResponses(400, 401, 403, 404, 429, 500, 503) },
    },
  }, (request, reply) => {
    const { project } = request.tokenAccess!;
    const environment = environmentOf(project, request.query.environment);
    const answer = rulesetAnswer(environment, project.revision);
    reply.header('etag', answer.etag).header('cache-control', 'no-cache').header('vary', 'accept-encoding');
    if (notModified(request.headers, answer.etag)) {
      reply.code(304).send(undefined as never);
      return;
    }
    // Rules compress well (repeated keys and operators): br or gzip when the client takes it, compressed once per change.
    const { body, encoding } = encodedBody(answer, request.headers['accept-encoding']);
    if (encoding) reply.header('content-encoding', encoding);
    reply.type('application/json; charset=utf-8').send(body as never);
  });

  app.post('/sdk/v1/usage', {
    onRequest,
    schema: {
      tags: ['evaluate'],
      description:
        'What a local evaluator counted: added to the hourly metrics and last_evaluated_at (not to the per-user history). Unknown flag keys are ignored. A report whose report_id was counted before is answered as then and not counted again.',
      security: [{ bearer: [] }],
      body: UsageBody,
      response: { 202: UsageAccepted, ...errorResponses(400, 401, 403, 404, 413, 429, 500, 503) },
    },
  }, async (request, reply) => {
    const { project } = request.tokenAccess!;
    const { report_id, started_at, ended_at, flags } = request.body;
    const started = Date.parse(started_at);
    const ended = Date.parse(ended_at);
    if (!(started <= ended)) throw new Invalid('started_at must not be after ended_at');
    if (ended < Date.now() - OLDEST_REPORT_MS) throw new Invalid('ended_at is more than 7 days ago');
    const environment = environmentOf(project, request.body.environment);
    let accepted: number;
    try {
      accepted = await addUsage(db, environment, report_id, ended, flags);
    } catch (error) {
      if (isForeignKeyViolation(error)) throw new NotFound(`Environment "${environment.key}" not found in this project`); // deleted meanwhile
      throw error;
    }
    reply.code(202).send({ accepted });
  });
};
