/** Local evaluation (docs/local-evaluation.md): the ruleset an SDK evaluates from, and the usage it reports back. */
import type { Config } from '../../config.js';
import { Invalid, NotFound } from '../../errors.js';
import { isForeignKeyViolation } from '../../db/errors.js';
import type { Db } from '../../db/database.js';
import type { ApiPlugin } from '../../http/plugin.js';
import { errorResponses } from '../../http/schemas.js';
import type { RateLimits } from '../../rate-limits.js';
import { environmentOf } from '../evaluate/evaluate.cache.js';
import { NotModified } from '../evaluate/evaluate.schemas.js';
import type { Metrics } from '../metrics/metrics.js';
import { Ruleset, RulesetQuery, UsageAccepted, UsageBody } from './local-evaluation.schemas.js';
import { rulesetAnswer, rulesetReply } from './ruleset.document.js';
import { directRuleset } from './ruleset.direct.js';
import { tokenAccessHook, type TokenAccessReader } from './token-auth.js';
import { addUsage, OLDEST_REPORT_MS } from './usage.repository.js';

export const localEvaluationRoutes: ApiPlugin<{ config: Readonly<Config>; db: Db; limits: RateLimits; metrics: Metrics; tokenAccess: TokenAccessReader }> = async (app, options) => {
  const { db, limits, tokenAccess } = options;
  const onRequest = tokenAccessHook(limits, tokenAccess);

  app.get('/sdk/v1/ruleset', {
    // Every SDK of a project fetches it after a change too big for the stream's message: no per-request log lines (errors are still logged).
    logLevel: 'warn',
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
    const { status, headers, body } = rulesetReply(rulesetAnswer(environment, project.revision), request.headers);
    reply.code(status).headers(headers).send((body ?? undefined) as never);
  });
  directRuleset(app, options);

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
