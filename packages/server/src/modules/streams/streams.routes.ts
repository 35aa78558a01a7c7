import type { OutgoingHttpHeaders } from 'node:http';
import { Type } from 'typebox';
import { Invalid, RateLimited, Unauthorized } from '../../errors.js';
import type { Config } from '../../config.js';
import { errorResponses } from '../../http/schemas.js';
import type { Db } from '../../db/database.js';
import type { ApiPlugin } from '../../http/plugin.js';
import type { RateLimits } from '../../rate-limits.js';
import { environmentOf, type CompiledProject, type EvaluateCache } from '../evaluate/evaluate.cache.js';
import { currentSdkKey } from '../evaluate/evaluate.repository.js';
import { anySdkCredential, sdkProjectHook } from '../evaluate/sdk-auth.js';
import { EvaluateContext, wantsKinds } from '../evaluate/evaluate.schemas.js';
import type { SentContext } from '../evaluate/evaluate.answers.js';
import type { HistoryRecorder } from '../history/history.recorder.js';
import { bodyValidator } from '../../http/compilers.js';
import { sdkKeyHash } from '../evaluate/sdk-key.js';
import { carriesApiToken, tokenAccessHook, type TokenAccessReader } from '../local-evaluation/token-auth.js';
import { TokenStreams } from '../local-evaluation/token-streams.js';
import { StreamHub, type OpenStream } from './streams.hub.js';
import type { OpenStreamCount } from './open-streams.js';
import type { StreamScope, StreamTokens } from './stream-tokens.js';

const StreamQuery = Type.Object({
  environment: Type.Optional(Type.String({ minLength: 1, maxLength: 64, description: 'environment key (with an SDK key; a stream token names its own)' })),
  token: Type.Optional(Type.String({ minLength: 1, maxLength: 2048, description: 'stream token from an OFREP bulk answer, for a browser EventSource' })),
  project: Type.Optional(Type.String({ maxLength: 64, description: 'project id, with an API token of every project (local evaluation)' })),
});

const StreamHeaders = Type.Object({
  'x-guidon-context': Type.Optional(
    Type.String({ maxLength: 8192, description: 'with an SDK key: the context, as JSON percent-encoded (encodeURIComponent); each message then carries the evaluate answer for it (docs/sdk.md, "The answer in the message")' }),
  ),
  'x-guidon-answer': Type.Optional(Type.String({ description: '`kind`: the answers in the messages carry each flag\'s kind, as evaluate\'s do with the same header' })),
});

const validContext = bodyValidator(EvaluateContext);

/** X-Guidon-Context, read: undefined without it; a 400 for one that is not a percent-encoded JSON context. */
function sentContext(header: string | undefined): SentContext | undefined {
  if (header === undefined) return undefined;
  let context: unknown;
  try {
    context = JSON.parse(decodeURIComponent(header));
  } catch {
    throw new Invalid('X-Guidon-Context must be a JSON context percent-encoded (encodeURIComponent)');
  }
  if (!validContext(context)) throw new Invalid(`X-Guidon-Context is not a valid context: ${validContext.errors?.map((error) => `${error.instancePath || 'context'} ${error.message}`).join(', ')}`);
  return context as SentContext;
}

declare module 'fastify' {
  interface FastifyRequest {
    /** The verified stream token of the request (stream route only). */
    streamScope: StreamScope | null;
  }
}

/** GET /sdk/v1/stream: Server-Sent Events, one refetchEvaluation message per change (docs/sdk.md). */
/** How long a client over its open-stream cap is told to wait: about as long as a stream of a well-behaved client lasts between reconnects. */
const STREAM_CAP_RETRY_SECONDS = 30;

export const streamRoutes: ApiPlugin<{ config: Readonly<Config>; db: Db; limits: RateLimits; evaluateCache: EvaluateCache; history: HistoryRecorder; streamTokens: StreamTokens; openStreams: OpenStreamCount; tokenAccess: TokenAccessReader }> = async (
  app,
  { config, db, limits, evaluateCache, history, streamTokens, openStreams, tokenAccess },
) => {
  const hub = new StreamHub(db, evaluateCache, app.log, { refetchRate: config.refetchRate, history });
  // The server waits for open answers when it closes: end the streams first.
  app.addHook('preClose', async () => hub.close());
  app.decorateRequest('streamScope', null);

  const byKey = sdkProjectHook(limits, evaluateCache, anySdkCredential);
  const byApiToken = tokenAccessHook(limits, tokenAccess);
  const tokenStreams = new TokenStreams(db, app.log);
  const unsubscribe = evaluateCache.onInvalidate((projectId) => tokenStreams.projectChanged(projectId));
  app.addHook('onClose', async () => {
    unsubscribe();
    tokenStreams.close();
  });
  const invalidToken = () => new Unauthorized('Missing or invalid stream token');

  app.get('/sdk/v1/stream', {
    onRequest: (request, reply, done) => {
      const token = (request.query as { token?: unknown }).token;
      // An API token: an SDK in local mode, told when to refetch its ruleset (docs/local-evaluation.md).
      if (typeof token !== 'string' && carriesApiToken(request)) return void byApiToken(request).then(() => done(), done);
      if (typeof token !== 'string') return byKey(request, reply, done);
      const verify = async () => {
        await limits.evaluate?.hit(request.ip);
        request.streamScope = await streamTokens.verify(token);
        if (!request.streamScope) throw invalidToken();
      };
      verify().then(() => done(), done);
    },
    schema: {
      tags: ['evaluate'],
      description: 'Server-Sent Events: `refetchEvaluation` after each change to the environment, a comment every 15 s.',
      security: [{ sdkKey: [] }],
      querystring: StreamQuery,
      headers: StreamHeaders,
      // 503: the database away while the SDK key (or a stream token's) is not compiled yet.
      response: { 200: Type.String({ description: 'text/event-stream' }), ...errorResponses(400, 401, 404, 429, 500, 503) },
    },
  }, async (request, reply) => {
    let project: CompiledProject | null;
    let environment: string;
    let keyHash: string;
    // Only an SDK key's stream carries answers: a ruleset's client evaluates itself, and a stream token's (an EventSource) sends no header.
    let answering: OpenStream['answering'];
    const scope = request.streamScope;
    const access = request.tokenAccess;
    if (access) {
      project = access.project;
      if (request.query.environment === undefined) throw new Invalid("querystring must have required property 'environment'");
      environment = request.query.environment;
      keyHash = `token ${access.tokenId}`;
    } else if (scope) {
      // A token outlives nothing: its project must still exist under the key it was issued for.
      // Compiled under that key, it does (as for evaluate): no database read, and browsers'
      // streams open while the database is away.
      project = evaluateCache.compiledUnderKeyHash(scope.projectId, scope.keyHash) ?? null;
      if (!project) {
        const sdkKey = await currentSdkKey(db, scope.projectId);
        if (sdkKey === null || sdkKeyHash(sdkKey) !== scope.keyHash) throw invalidToken();
        project = await evaluateCache.project(sdkKey);
      }
      environment = scope.environment;
      keyHash = scope.keyHash;
    } else {
      project = request.sdkProject;
      if (request.query.environment === undefined) throw new Invalid("querystring must have required property 'environment'");
      environment = request.query.environment;
      keyHash = sdkKeyHash(anySdkCredential(request)!);
      const context = sentContext(request.headers['x-guidon-context']);
      if (context !== undefined) answering = { context, withKinds: wantsKinds(request.headers) };
    }
    if (!project) throw invalidToken();
    const compiled = environmentOf(project, environment); // 404 for an unknown environment
    // Open streams per client address and SDK key (docs/sdk.md: at most STREAMS_PER_CLIENT together).
    const givePlaceBack = config.streamsPerClient > 0 ? await openStreams.take(`${request.ip} ${keyHash}`, config.streamsPerClient) : () => undefined;
    if (!givePlaceBack) throw new RateLimited(STREAM_CAP_RETRY_SECONDS);

    reply.hijack();
    const raw = reply.raw;
    let stream: OpenStream | undefined;
    let released = false;
    const unfollowToken = access ? tokenStreams.add(access.tokenId, project.projectId, () => raw.end()) : undefined;
    const release = () => {
      if (released) return;
      released = true;
      unfollowToken?.();
      if (stream) hub.remove(stream);
      givePlaceBack();
    };
    raw.on('close', release);
    raw.writeHead(200, {
      ...reply.getHeaders(),
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache, no-transform',
      'x-accel-buffering': 'no',
      // A stream that ends (shutdown, a token revoked) takes its connection with it: a client that
      // left it half-read (fetch may drain an aborted body to reuse the socket) would otherwise
      // hold an idle keep-alive connection that the server's close waits out (72 s).
      connection: 'close',
    } as OutgoingHttpHeaders);
    raw.socket?.setNoDelay(true);
    // Reconnect after 1 s. Then what the stream missed, or the revision it starts from (hub.openingMessage).
    raw.write('retry: 1000\n\n');
    const lastEventId = request.headers['last-event-id'];
    stream = {
      projectId: project.projectId,
      environment,
      keyHash,
      kind: access ? 'ruleset' : 'evaluation',
      answering,
      write(chunk) {
        // A client that reads nothing for ~1 MiB of messages is gone: let it reconnect.
        if (raw.writableLength > 1024 * 1024) raw.destroy();
        else raw.write(chunk);
      },
      close: (retryMs) => raw.end(retryMs === undefined ? undefined : `retry: ${retryMs}\n\n`),
    };
    raw.write(hub.openingMessage(stream, project, compiled, typeof lastEventId === 'string' ? lastEventId : undefined));
    hub.add(stream, project);
    if (raw.socket === null || raw.socket.destroyed) release(); // the client left before we listened
  });
};
