/** POST /sdk/v1/events (docs/experiments.md, "Sending exposures and events"): exposures and events from applications. */
import type { FastifyRequest } from 'fastify';
import { Invalid } from '../../errors.js';
import type { ApiPlugin } from '../../http/plugin.js';
import { errorResponses } from '../../http/schemas.js';
import type { RateLimits } from '../../rate-limits.js';
import { environmentOf, type CompiledProject, type EvaluateCache } from '../evaluate/evaluate.cache.js';
import { anySdkCredential, sdkProjectHook } from '../evaluate/sdk-auth.js';
import type { TokenAccessReader } from '../local-evaluation/token-auth.js';
import type { EventIntake } from './intake.js';
import { EventsAccepted, EventsBody, MAX_ITEMS } from './intake.schemas.js';

const carriesToken = (request: FastifyRequest) => /^bearer\s+gdn_/i.test(request.headers.authorization ?? '');

export const eventIntakeRoutes: ApiPlugin<{ limits: RateLimits; evaluateCache: EvaluateCache; intake: EventIntake; tokenAccess: TokenAccessReader }> = async (app, { limits, evaluateCache, intake, tokenAccess }) => {
  // The SDK key's hook without evaluate's per-address limit: events have their own, per credential, below.
  const sdkKey = sdkProjectHook({ ...limits, evaluate: null }, evaluateCache, anySdkCredential);

  app.post('/sdk/v1/events', {
    logLevel: 'warn',
    // The credential (401), its rate limit (429), then the body (400) and the environment (404).
    onRequest: (request, reply, done) => {
      if (!carriesToken(request)) return sdkKey(request, reply, done);
      tokenAccess.read(request).then((access) => {
        request.tokenAccess = access;
        done();
      }, done);
    },
    preHandler: async (request) => {
      const key = request.tokenAccess ? `token:${request.tokenAccess.tokenId}` : `sdk:${request.sdkProject!.projectId}`;
      await limits.events?.hit(key);
    },
    schema: {
      tags: ['evaluate'],
      description:
        'Exposures (a unit served an arm of a flag) and events (something a unit did) for experiments, with the SDK key (X-SDK-Key: a browser may send) or an API token of the project (Authorization: Bearer gdn_…). What is kept is written within a second; what is not is counted in `ignored` by reason.',
      security: [{ sdkKey: [] }, { bearer: [] }],
      body: EventsBody,
      response: { 202: EventsAccepted, ...errorResponses(400, 401, 404, 413, 429, 500, 503) },
    },
  }, async (request, reply) => {
    const { exposures = [], events = [] } = request.body;
    const items = exposures.length + events.length;
    if (items === 0 || items > MAX_ITEMS) throw new Invalid(`A batch holds 1 to ${MAX_ITEMS} items, exposures and events together; this one holds ${items}`);
    const at = events.findIndex((event) => event.value !== undefined && !Number.isFinite(event.value));
    if (at >= 0) throw new Invalid(`events[${at}].value must be a finite number`);
    const project: CompiledProject = request.tokenAccess?.project ?? request.sdkProject!;
    const environment = environmentOf(project, request.body.environment);
    reply.code(202);
    return intake.accept(project.projectId, environment.environmentId, request.body);
  });
};
