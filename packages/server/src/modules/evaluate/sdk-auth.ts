/** Which project an SDK request speaks for: its credential, read where each surface takes it, and the rate limit before it. */
import type { FastifyRequest, HookHandlerDoneFunction } from 'fastify';
import { Unauthorized } from '../../errors.js';
import type { RateLimits } from '../../rate-limits.js';
import type { CompiledProject, EvaluateCache } from './evaluate.cache.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** The project that owns the request's SDK key (SDK routes only). */
    sdkProject: CompiledProject | null;
  }
}

/** Where a route reads the SDK key: evaluate takes X-SDK-Key only (docs/api.md); the newer surfaces also take the usual alternatives. */
export type CredentialReader = (request: FastifyRequest) => string | undefined;

export const sdkKeyHeader: CredentialReader = (request) => {
  const key = request.headers['x-sdk-key'];
  return typeof key === 'string' && key !== '' ? key : undefined;
};

/** X-SDK-Key, X-API-Key, or Authorization: Bearer sdk_… (docs/sdk.md). */
export const anySdkCredential: CredentialReader = (request) => {
  const key = sdkKeyHeader(request) ?? request.headers['x-api-key'];
  if (typeof key === 'string' && key !== '') return key;
  const authorization = request.headers.authorization;
  if (typeof authorization === 'string' && /^bearer sdk_/i.test(authorization)) return authorization.slice(7).trim();
  return undefined;
};

const missingKey = () => new Unauthorized('Missing or invalid SDK key');

/**
 * The onRequest hook of every SDK route, in docs/api.md order: the rate limit (429), then the SDK
 * key (401). Sets request.sdkProject; synchronously on a cache hit, so the hot path makes no promise.
 */
export function sdkProjectHook(limits: RateLimits, cache: EvaluateCache, readKey: CredentialReader) {
  const identify = (request: FastifyRequest, done: HookHandlerDoneFunction) => {
    const sdkKey = readKey(request);
    if (sdkKey === undefined) return done(missingKey());
    const found = cache.project(sdkKey);
    if (!(found instanceof Promise)) {
      request.sdkProject = found;
      return done();
    }
    found.then((project) => {
      request.sdkProject = project;
      done(project ? undefined : missingKey());
    }, done);
  };
  return function sdkProject(request: FastifyRequest, _reply: unknown, done: HookHandlerDoneFunction) {
    const limit = limits.evaluate;
    if (!limit) return identify(request, done);
    // Once per request: evaluate's direct path may have counted it before handing it over (evaluate.direct.ts).
    limit.hitOnce(request.raw, request.ip).then(() => identify(request, done), done);
  };
}
