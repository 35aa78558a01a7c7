import { STATUS_CODES } from 'node:http';
import cluster from 'node:cluster';
import type { Socket } from 'node:net';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import Fastify, { type FastifyError, type FastifyReply, type FastifyRequest, type FastifyServerOptions } from 'fastify';
import cors from '@fastify/cors';
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { Config } from './config.js';
import type { Database } from './db/database.js';
import type { ApiPlugin, App } from './http/plugin.js';
import type { Db } from './db/database.js';
import { AppError, Invalid, InvalidDocument, setRetryAfter, Unavailable } from './errors.js';
import { documentCommonErrors, ErrorBody } from './http/schemas.js';
import { buildSerializer, buildValidator } from './http/compilers.js';
import { lazyChildLogger } from './http/lazy-logger.js';
import { pageHeaders } from './http/page-headers.js';
import { requestIdOf } from './http/request-id.js';
import { refuseUnstorableText } from './http/well-formed.js';
import { createRateLimits, type CounterStore, type RateLimits } from './rate-limits.js';
import { closeRedis, createRedis } from './redis.js';
import { accountRoutes, currentUserRoutes } from './modules/accounts/accounts.routes.js';
import { ReturnPath } from './modules/accounts/accounts.schemas.js';
import { oidcRoutes } from './modules/accounts/oidc.routes.js';
import { removeAccount } from './modules/account-removal/account-removal.js';
import { accountRemovalRoutes } from './modules/account-removal/account-removal.routes.js';
import { requireUser } from './modules/api-tokens/bearer.js';
import { createMailer, type Mailer } from './modules/accounts/mailer.js';
import { LoginTokens } from './modules/accounts/tokens.js';
import { Environment } from './modules/environments/environments.schemas.js';
import { environmentRoutes } from './modules/environments/environments.routes.js';
import { ChangeFeed } from './modules/changes/change-feed.js';
import { changeBusFor } from './modules/changes/carriers.js';
import { AuditActionSchema, ResourceTypeSchema } from './modules/changes/changes.schemas.js';
import { ProjectWrites } from './modules/changes/project-writes.js';
import { EvaluateCache } from './modules/evaluate/evaluate.cache.js';
import { evaluateRoutes } from './modules/evaluate/evaluate.routes.js';
import { routeMeta } from './http/direct-path.js';
import { ofrepErrorBody, ofrepRoutes } from './modules/ofrep/ofrep.routes.js';
import { streamRoutes } from './modules/streams/streams.routes.js';
import { openStreamCount } from './modules/streams/open-streams.js';
import { StreamTokens } from './modules/streams/stream-tokens.js';
import { Flag, Rule } from './modules/flags/flags.schemas.js';
import { flagRoutes } from './modules/flags/flags.routes.js';
import { acrossRoutes } from './modules/flags/across.routes.js';
import { ruleRoutes } from './modules/flags/rules.routes.js';
import { segmentRoutes } from './modules/segments/segments.routes.js';
import { documentSchemaRoutes, flagsAsCodeRoutes } from './modules/flags-as-code/flags-as-code.routes.js';
import { AttributeWriter } from './modules/attributes/attributes.seen.js';
import { attributeRoutes } from './modules/attributes/attributes.routes.js';
import { explainRoutes } from './modules/explain/explain.routes.js';
import { Condition, ConditionBody, Segment } from './modules/segments/segments.schemas.js';
import { dashboardRoutes } from './modules/dashboard/dashboard.routes.js';
import { downloadRoutes } from './modules/downloads/downloads.routes.js';
import { healthRoutes, type Readiness } from './modules/health/health.routes.js';
import { createMetrics, metricsRoutes } from './modules/metrics/metrics.js';
import { HistoryRecorder } from './modules/history/history.recorder.js';
import { localEvaluationRoutes } from './modules/local-evaluation/local-evaluation.routes.js';
import { TokenAccessReader } from './modules/local-evaluation/token-auth.js';
import { evaluationRoutes } from './modules/evaluations/evaluations.routes.js';
import { EvaluationItem } from './modules/evaluations/evaluations.schemas.js';
import { Project } from './modules/projects/projects.schemas.js';
import { projectRoutes } from './modules/projects/projects.routes.js';
import { ApiToken } from './modules/api-tokens/api-tokens.schemas.js';
import { apiTokenRoutes } from './modules/api-tokens/api-tokens.routes.js';
import { insertAuditEvent } from './modules/audit/audit.repository.js';
import { AuditEvent } from './modules/audit/audit.schemas.js';
import { auditRoutes } from './modules/audit/audit.routes.js';
import { authorize, declaredRoute, type DeclaredRoute } from './modules/members/access.js';
import { Member } from './modules/members/members.schemas.js';
import { memberRoutes } from './modules/members/members.routes.js';
import { answerInvitation } from './modules/members/invitations.js';
import { invitationRoutes } from './modules/members/invitations.routes.js';
import { enqueueDeliveries } from './modules/webhooks/webhooks.repository.js';
import { Webhook } from './modules/webhooks/webhooks.schemas.js';
import { webhookRoutes } from './modules/webhooks/webhooks.routes.js';
import { WebhookSender, type WebhookSenderOptions } from './modules/webhooks/webhooks.sender.js';
import { Schedule } from './modules/schedules/schedules.schemas.js';
import { scheduleRoutes } from './modules/schedules/schedules.routes.js';
import { cancelSchedulesOfDeletedFlags } from './modules/schedules/schedule-writes.js';
import { ChangeRequest, ChangeRequestItem } from './modules/change-requests/change-requests.schemas.js';
import { changeRequestRoutes } from './modules/change-requests/change-requests.routes.js';
import { refuseUnapprovedWrites, requestConsequences } from './modules/change-requests/approvals.js';
import { DueChanges, type SchedulerOptions } from './modules/due-work/due-changes.js';
import { Metric } from './modules/experiments/metrics.schemas.js';
import { metricRoutes } from './modules/experiments/metrics.routes.js';
import { Experiment, ExperimentResults } from './modules/experiments/experiments.schemas.js';
import { experimentRoutes } from './modules/experiments/experiments.routes.js';
import { EventIntake } from './modules/experiments/intake.js';
import { eventIntakeRoutes } from './modules/experiments/intake.routes.js';
import { ResultsService } from './modules/experiments/results.service.js';
import { stopExperimentsOfDeletedFlags } from './modules/experiments/experiment-writes.js';
import { Release } from './modules/releases/releases.schemas.js';
import { releaseRoutes } from './modules/releases/releases.routes.js';
import { ReleaseChecks, type ReleaseCheckOptions } from './modules/due-work/release-checks.js';
import { endReleasesOfChangedFlags, refuseRolloutChangesDuringRelease } from './modules/releases/release-writes.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** The authenticated user (routes under /api). */
    userId: string;
  }
  interface FastifyInstance {
    /** Every /api route with its declared least role (the role matrix test reads it). */
    apiRoutes: DeclaredRoute[];
    /** What GET /ready answers: main.ts sets it to `stopping` on SIGTERM. */
    readiness: Readiness;
  }
}

/** What the composition root builds once; each route plugin takes the part of it it names. */
interface Services {
  config: Readonly<Config>;
  db: Db;
  ping: () => Promise<void>;
  readiness: Readiness;
  tokens: LoginTokens;
  limits: RateLimits;
  mailer: Mailer;
  evaluateCache: EvaluateCache;
  history: HistoryRecorder;
  /** The one change path for every write under a project (changes/project-writes.ts). */
  writes: ProjectWrites;
  webhooks: WebhookSender;
  /** Exposures and events waiting to be written (experiments/intake.ts). */
  intake: EventIntake;
  /** Experiments' results, computed in the background and kept (experiments/results.service.ts). */
  results: ResultsService;
}

export interface BuildOptions {
  /** Where logs go; process stdout when not given. */
  logStream?: NodeJS.WritableStream;
  /** How often compiled projects are checked against their stored revision (default 1 s). */
  revisionCheckIntervalMs?: number;
  /** Tests only: false runs without change notifications (the revision check alone). */
  changeNotifications?: boolean;
  /** Tests only: a faster retry schedule, poll and timeout for webhook deliveries. */
  webhooks?: WebhookSenderOptions;
  /** Tests only: how often the scheduler looks for due changes. */
  scheduler?: SchedulerOptions;
  /** Tests only: how often due release checks are looked for, and how long a release's second lasts. */
  releaser?: ReleaseCheckOptions;
}

/** Query parameters that may carry a secret: a reset, verification or invitation link's token, an SDK or API key, a password, an OpenID callback's code and state. */
const SECRET_PARAMETER = /token|secret|password|invitation|^key$|sdk_?key|api_?key|^code$|^state$/i;

/** A URL as logged, with the values of secret-looking query parameters redacted. */
function redactedUrl(url: string): string {
  return url.replace(/([?&])([^=&#]*)=([^&#]*)/g, (whole, separator: string, name: string) => (SECRET_PARAMETER.test(name) ? `${separator}${name}=[redacted]` : whole));
}

function loggerOptions(config: Config, stream?: NodeJS.WritableStream): FastifyServerOptions['logger'] {
  return {
    level: config.logLevel,
    // Fastify's request serializer, with the query string's secrets (reset and stream tokens…) redacted.
    serializers: {
      req: (request: FastifyRequest) => ({ method: request.method, url: redactedUrl(request.url), host: request.host, remoteAddress: request.ip, remotePort: request.socket?.remotePort }),
    },
    // Fastify logs no headers or bodies by default; these paths stay censored if that changes.
    redact: { paths: ['req.headers.authorization', 'req.headers["x-sdk-key"]', 'req.headers["x-api-key"]', '*.password', '*.newPassword', '*.token'], censor: '[redacted]' },
    ...(stream ? { stream } : {}),
  };
}

/** One place where errors become HTTP answers (the shape in docs/api.md, Errors). */
function sendError(error: FastifyError | AppError, request: FastifyRequest, reply: FastifyReply) {
  let status: number;
  let message: string;
  if (error instanceof AppError) {
    status = error.statusCode;
    message = error.message;
    setRetryAfter(error, reply);
    if (error instanceof Unavailable) request.log.warn({ err: error.cause }, 'database unavailable');
  } else if (error.validation) {
    // A path id that is not a UUID names nothing that exists.
    status = error.validationContext === 'params' ? 404 : 400;
    message = status === 404 ? 'Not found' : error.message;
  } else if (typeof error.statusCode === 'number' && error.statusCode >= 400 && error.statusCode < 500) {
    status = error.statusCode; // malformed JSON, empty body, 413, 415 … raised by Fastify itself
    message = error.message;
  } else {
    status = 500;
    message = 'Internal server error';
    request.log.error({ err: error }, 'request failed');
  }
  reply.code(status);
  reply.header('x-content-type-options', 'nosniff'); // also for answers no hook saw (an unreadable URL)
  reply.type('application/json; charset=utf-8');
  if (request.routeOptions.config?.errorShape === 'ofrep') return reply.send(ofrepErrorBody(request, status, message, error));
  const problems = error instanceof InvalidDocument ? { problems: error.problems } : {};
  return reply.send({ statusCode: status, error: STATUS_CODES[status] ?? 'Error', message, ...problems });
}

/** The composition root: builds every service once and registers the route plugins with them. */
export async function buildApp(config: Readonly<Config>, database: Database, options: BuildOptions = {}): Promise<App> {
  const app: App = Fastify({
    logger: loggerOptions(config, options.logStream),
    childLoggerFactory: lazyChildLogger, // a request that logs nothing makes no pino child
    trustProxy: config.trustProxy,
    bodyLimit: 1024 * 1024,
    // The caller's X-Request-Id when it is a sane token (it goes into logs and a header), else a new UUID.
    requestIdHeader: false,
    genReqId: requestIdOf,
    // Long path ids reach the UUID check (404) and the auth hook (401) like short ones.
    // routeMeta: how a direct path reads the hooks of its route (http/direct-path.ts);
    // buildPrettyMeta is one of Fastify's documented router options, left out of its types.
    routerOptions: { ignoreTrailingSlash: true, maxParamLength: 2048, buildPrettyMeta: routeMeta } as FastifyServerOptions['routerOptions'],
    // URLs the router cannot even read (bad percent-encoding, a huge id) name nothing that exists.
    frameworkErrors: (_error, request, reply) => sendError(new AppError(404, 'Not found'), request, reply),
    schemaController: { compilersFactory: { buildValidator: buildValidator(), buildSerializer: buildSerializer() } },
  }).withTypeProvider<TypeBoxTypeProvider>();
  app.addHook('onRoute', documentCommonErrors);
  // The id in every log line of the request, handed back so a caller can quote it.
  app.addHook('onRequest', function requestHeaders(request, reply, done) {
    reply.header('x-request-id', request.id);
    reply.header('x-content-type-options', 'nosniff'); // every answer says what it is; browsers must not guess
    done();
  });
  // A connection that has sent nothing is not idle to Node, so the server's close waited for it as
  // long as the client kept it: undici opens one after a stream it was reading is aborted (the
  // SDK's close()), and a port probe holds one. Closing, they are cut: they carry no request.
  const connections = new Set<Socket>();
  app.server.on('connection', (socket: Socket) => {
    connections.add(socket);
    socket.once('close', () => connections.delete(socket));
  });
  app.addHook('preClose', async () => {
    for (const socket of connections) if (socket.bytesRead === 0) socket.destroy();
  });
  app.setErrorHandler((error: FastifyError, request, reply) => sendError(error, request, reply));
  app.setNotFoundHandler((request, reply) => sendError(new AppError(404, `Route ${request.method} ${request.url.split('?')[0]} not found`), request, reply));

  const { db } = database;
  const redis = config.redisUrl ? await createRedis(config.redisUrl, app.log) : null;
  const counters: CounterStore = redis ? { kind: 'redis', client: redis } : cluster.isWorker ? { kind: 'cluster' } : { kind: 'memory' };
  const bus = options.changeNotifications === false ? null : await changeBusFor(config, db, redis, app.log);
  const changes = new ChangeFeed(bus, app.log);
  const evaluateCache = new EvaluateCache(db, changes, app.log, options.revisionCheckIntervalMs);
  const webhooks = new WebhookSender(db, database.dialect, config.webhookAllowPrivate, app.log, options.webhooks);
  const tokens = await LoginTokens.create(db, config.jwtSecret);
  const services: Services = {
    config,
    db,
    ping: database.ping,
    readiness: { state: 'starting' },
    tokens,
    limits: createRateLimits(config.rateLimits, app.log, counters),
    mailer: createMailer(config.smtpUrl, config.mailFrom, config.publicUrl, app.log),
    evaluateCache,
    history: new HistoryRecorder(config.database, app.log, { retentionDays: config.evaluationRetentionDays, closeTimeoutMs: config.historyFlushTimeoutSeconds * 1000 }),
    // Audit records each change; webhooks queue its deliveries in the same transaction and are woken after the commit.
    // Every write is refused in an environment that needs approval unless it applies an approved
    // change request; a changed flag outdates the requests built on it; a deleted one's schedules are
    // cancelled and its running experiments stopped. While a release runs, its flag's rollout is
    // the release's to change; switching the flag off or deleting it aborts the release.
    writes: new ProjectWrites(
      db,
      changes,
      {
        record: insertAuditEvent,
        checks: [refuseUnapprovedWrites, refuseRolloutChangesDuringRelease],
        consequences: [cancelSchedulesOfDeletedFlags, stopExperimentsOfDeletedFlags, endReleasesOfChangedFlags, requestConsequences],
        withEvent: [enqueueDeliveries],
        afterEvents: [() => webhooks.wake()],
      },
      app.log,
    ),
    webhooks,
    intake: new EventIntake(database, config.database, evaluateCache, app.log),
    results: new ResultsService(database, config.database, app.log),
  };
  // New exposures or events: the running experiments of their environments are computed again.
  services.intake.onWritten((environments) => services.results.markWritten(environments));
  const attributeWriter = new AttributeWriter(db, app.log);
  await changes.start();
  evaluateCache.start();
  attributeWriter.start();
  // The history worker's thread starts with the first evaluation to write, not with the server
  // (start-up time: docs/performance.md).
  app.addHook('onReady', async () => services.history.start());
  webhooks.start();
  services.intake.start();
  services.results.start();
  app.addHook('onClose', async () => {
    await services.history.close();
    await services.intake.close();
    await services.results.close();
    await attributeWriter.close();
    await webhooks.close();
    evaluateCache.close();
    await changes.close();
    if (redis) await closeRedis(redis);
    services.mailer.close();
  });

  for (const schema of [ErrorBody, ReturnPath, Project, Environment, Flag, Condition, ConditionBody, Rule, Segment, EvaluationItem, Member, ApiToken, AuditActionSchema, ResourceTypeSchema, AuditEvent, Webhook, Schedule, ChangeRequestItem, ChangeRequest, Metric, Experiment, ExperimentResults, Release]) app.addSchema(schema);
  await app.register(swagger, {
    openapi: {
      info: { title: 'Guidon', description: 'Self-hosted feature flags: JSON API and evaluate endpoint', version: '0.1.0' },
      components: {
        securitySchemes: {
          bearer: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT' },
          sdkKey: { type: 'apiKey', in: 'header', name: 'X-SDK-Key' },
        },
      },
    },
    refResolver: { buildLocalReference: (json, _base, _fragment, i) => (typeof json.$id === 'string' ? json.$id : `def-${i}`) },
  });
  // Swagger UI shares the dashboard's origin: every answer under /docs gets the pages' headers.
  await app.register(async (docs) => {
    docs.addHook('onSend', pageHeaders);
    await docs.register(swaggerUi, { routePrefix: '/docs' });
  });
  if (config.corsOrigins.length > 0) {
    await app.register(cors, {
      origin: config.corsOrigins.includes('*') ? true : config.corsOrigins,
      // SDK and OFREP calls from a page: their credential headers, and the ETag and Retry-After they must read.
      allowedHeaders: ['Content-Type', 'Authorization', 'X-SDK-Key', 'X-API-Key', 'X-Environment', 'If-None-Match', 'Last-Event-ID', 'X-Request-Id', 'X-Guidon-Answer', 'X-Guidon-Context'],
      exposedHeaders: ['ETag', 'Retry-After', 'X-Request-Id'],
    });
  }

  const metrics = createMetrics({ history: services.history, evaluateCache });
  app.addHook('onResponse', metrics.observe);
  // Applies scheduled changes and scheduled change requests when due, on every instance, each once.
  const scheduler = new DueChanges(db, database.dialect, services.writes, metrics.scheduled, app.log, options.scheduler);
  app.addHook('onReady', async () => scheduler.start());
  app.addHook('onClose', () => scheduler.close());
  // Checks guarded releases when due and takes each decision once (due-work/release-checks.ts).
  const releaser = new ReleaseChecks(database, services.writes, services.mailer, app.log, options.releaser);
  app.addHook('onReady', async () => releaser.start());
  app.addHook('onClose', () => releaser.close());
  await app.register(metricsRoutes(metrics), services);
  await app.register(healthRoutes, services);
  await app.register(documentSchemaRoutes);
  // Ready once it listens: the database is migrated before the app is built, and onReady has run.
  app.decorate('readiness', services.readiness);
  app.addHook('onListen', () => {
    if (services.readiness.state === 'starting') services.readiness.state = 'ready';
  });
  await app.register(async (auth) => {
    auth.addHook('preValidation', refuseUnstorableText);
    // Signing up through an invitation's emailed link accepts that invitation (docs/api.md, Members).
    const invitationLinkUsed = async (user: { id: string; email: string }, memberId: string | null) => {
      if (memberId) await answerInvitation(services.writes, db, { user_id: user.id, email: user.email, token_id: null }, memberId, true);
    };
    await auth.register(accountRoutes, { ...services, invitationLinkUsed });
    // OpenID sign-in, when configured. An account that never proved the address it holds is replaced, not taken over.
    const replaceUnprovenAccount = async (user: { id: string; email: string }) => {
      await removeAccount(services, user, { withdrawInvitations: false, onlyUnverified: true });
    };
    await auth.register(oidcRoutes, { ...services, replaceUnprovenAccount });
  });
  // The SDK surfaces: evaluate (what applications call at runtime), the change stream, and OFREP.
  await app.register(async (sdk) => {
    sdk.decorateRequest('sdkProject', null);
    sdk.decorateRequest('tokenAccess', null);
    // The interface promises 400 for a missing or malformed body: a body that is not declared as
    // JSON (none at all, or form-encoded as curl sends by default) is one. Other routes keep 415.
    sdk.addContentTypeParser('*', (_request, _payload, done) => done(new Invalid('body must be JSON, sent with Content-Type: application/json'), undefined));
    const streamTokens = new StreamTokens(tokens.keyFor('sdk stream tokens'));
    await sdk.register(evaluateRoutes, { ...services, metrics }); // metrics: for evaluate's direct path
    const openStreams = openStreamCount(redis, app.log);
    sdk.addHook('onClose', async () => openStreams.close());
    // API tokens on the SDK surfaces: one reader, so a token is read once a second whichever surface meets it.
    const tokenAccess = new TokenAccessReader(db, services.evaluateCache);
    await sdk.register(streamRoutes, { ...services, streamTokens, openStreams, tokenAccess });
    await sdk.register(ofrepRoutes, { ...services, streamTokens });
    await sdk.register(localEvaluationRoutes, { ...services, metrics, tokenAccess }); // local evaluation: the ruleset and usage reports (docs/local-evaluation.md); metrics: for the ruleset's direct path
    await sdk.register(eventIntakeRoutes, { ...services, tokenAccess }); // exposures and events for experiments (docs/experiments.md)
  });
  app.decorate('apiRoutes', [] as DeclaredRoute[]);
  await app.register(
    async (api) => {
      api.decorateRequest('userId', '');
      api.decorateRequest('actor', null as never);
      api.decorateRequest('apiToken', null);
      api.decorateRequest('projectRole', null);
      api.decorateRequest('emailVerified', false);
      api.addHook('onRoute', (route) => {
        route.schema = { ...route.schema, security: [{ bearer: [] }] };
        app.apiRoutes.push(...declaredRoute(route)); // throws for a route that declares no role
      });
      api.addHook('onRequest', requireUser(services));
      api.addHook('onRequest', authorize(services));
      api.addHook('preValidation', refuseUnstorableText);
      // Writes go through services.writes.apply (the one change path), not a hook here.
      for (const routes of <ApiPlugin<Services>[]>[currentUserRoutes, accountRemovalRoutes, apiTokenRoutes, projectRoutes, memberRoutes, invitationRoutes, environmentRoutes, flagRoutes, acrossRoutes, ruleRoutes, scheduleRoutes, changeRequestRoutes, segmentRoutes, metricRoutes, experimentRoutes, releaseRoutes, flagsAsCodeRoutes, explainRoutes, attributeRoutes, evaluationRoutes, auditRoutes, webhookRoutes]) {
        await api.register(routes, services);
      }
    },
    { prefix: '/api' },
  );
  await app.register(downloadRoutes, services);
  await app.register(dashboardRoutes);
  return app;
}
