/**
 * What evaluating means, in one place for every SDK surface (evaluate, OFREP, the stream): which
 * credential names the project, the rate limit, the outcome of each flag, the ETag of an answer,
 * and the history it leaves. The routes only differ in the JSON they build from the outcomes.
 */
import { hash, randomUUID } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import type { EvaluationContext } from '@guidon/engine';
import type { FastifyPluginAsync, FastifyRequest, HookHandlerDoneFunction, RawServerDefault } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { Services } from '../../services.js';
import { Unauthorized } from '../../errors.js';
import { isStorable, toStorable } from '../../http/well-formed.js';
import type { HistoryRecorder } from '../history/history.recorder.js';
import type { BatchEnvironment } from '../history/history.protocol.js';
import type { RateLimits } from '../../rate-limits.js';
import type { CompiledEnvironment, CompiledProject, EvaluateCache } from './evaluate.cache.js';
import { OUTCOMES, outcomeOf, type Outcome } from './outcomes.js';
import type { StreamTokens } from './stream.tokens.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** The project that owns the request's SDK key (SDK routes only). */
    sdkProject: CompiledProject | null;
  }
}

export type { EvaluationContext };

/** Where a route reads the SDK key: evaluate takes X-SDK-Key only (interface.md); the newer surfaces also take the usual alternatives. */
export type CredentialReader = (request: FastifyRequest) => string | undefined;

export const sdkKeyHeader: CredentialReader = (request) => {
  const key = request.headers['x-sdk-key'];
  return typeof key === 'string' && key !== '' ? key : undefined;
};

/** X-SDK-Key, X-API-Key, or Authorization: Bearer sdk_… (contract §12). */
export const anySdkCredential: CredentialReader = (request) => {
  const key = sdkKeyHeader(request) ?? request.headers['x-api-key'];
  if (typeof key === 'string' && key !== '') return key;
  const authorization = request.headers.authorization;
  if (typeof authorization === 'string' && /^bearer sdk_/i.test(authorization)) return authorization.slice(7).trim();
  return undefined;
};

const missingKey = () => new Unauthorized('Missing or invalid SDK key');

/**
 * The onRequest hook of every SDK route, in contract §2 order: the rate limit (429), then the SDK
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
  return (request: FastifyRequest, _reply: unknown, done: HookHandlerDoneFunction) => {
    const limit = limits.evaluate;
    if (!limit) return identify(request, done);
    // Once per request: evaluate's direct path may have counted it before handing it over (evaluate.direct.ts).
    limit.hitOnce(request.raw, request.ip).then(() => identify(request, done), done);
  };
}

/** The context as the engine takes it, from the fields of a request. */
export function contextOf(userId: string | null | undefined, userEmail: string | null | undefined): EvaluationContext {
  return { user_id: userId ?? undefined, user_email: userEmail ?? undefined };
}

/** What evaluating every flag gave; reused, since a request is evaluated synchronously. */
export interface Evaluated {
  /** The outcome code of each flag, in the environment's order (more bytes may follow: read `count`). */
  readonly codes: Uint8Array;
  /** False: no targeting rule matched, so only the environment's rollout flags may differ from its base codes. */
  readonly ruleMatched: boolean;
}
const evaluated = { codes: new Uint8Array(1024), ruleMatched: false };

/** Evaluates every flag of the environment; the result is valid until the next call. */
export function evaluateAll(environment: CompiledEnvironment, context: EvaluationContext): Evaluated {
  const { flagSet } = environment;
  if (flagSet.size > evaluated.codes.length) evaluated.codes = new Uint8Array(flagSet.size * 2);
  evaluated.ruleMatched = flagSet.evaluateInto(context, evaluated.codes);
  return evaluated;
}

export const outcomeByCode = (code: number): Outcome => OUTCOMES[code]!;

const flagIndexes = new WeakMap<CompiledEnvironment, Map<string, number>>();

/** The position of a flag in its environment, or -1. */
export function flagIndex(environment: CompiledEnvironment, key: string): number {
  let byKey = flagIndexes.get(environment);
  if (!byKey) {
    byKey = new Map(environment.flagKeys.map((flagKey, i) => [flagKey, i]));
    flagIndexes.set(environment, byKey);
  }
  return byKey.get(key) ?? -1;
}

const oneCode = new Uint8Array(1);

/** Evaluates one flag and records it in history, as a one-flag evaluate would. */
export function evaluateOne(history: HistoryRecorder, environment: CompiledEnvironment, index: number, context: EvaluationContext): Outcome {
  const outcome = outcomeOf(environment.flags[index]!.evaluate(context));
  oneCode[0] = outcome.code;
  history.record(oneFlagView(environment, index), storableUserId(context), oneCode, 1);
  return outcome;
}

/** Records the evaluation of every flag of the environment (codes from evaluateAll). */
export function recordAll(history: HistoryRecorder, environment: CompiledEnvironment, context: EvaluationContext, outcomes: Uint8Array): void {
  if (environment.flags.length > 0) history.record(environment, storableUserId(context), outcomes, environment.flags.length);
}

const storableUserId = ({ user_id }: EvaluationContext) => (user_id === undefined ? null : isStorable(user_id) ? user_id : toStorable(user_id));

/** History's view of a one-flag evaluation: a flag list of its own, named once per compiled environment. */
const oneFlagViews = new WeakMap<CompiledEnvironment, BatchEnvironment[]>();
function oneFlagView(environment: CompiledEnvironment, index: number): BatchEnvironment {
  let views = oneFlagViews.get(environment);
  if (!views) oneFlagViews.set(environment, (views = []));
  return (views[index] ??= {
    environmentId: environment.environmentId,
    snapshotId: randomUUID(),
    flagIds: [environment.flagIds[index]!],
    flagKeys: [environment.flagKeys[index]!],
  });
}

/** Per compiled flag list, the SHA-1 of its keys in order (computed once per compile). */
const keyDigests = new WeakMap<readonly string[], Uint8Array>();
let scratch = new Uint8Array(1024 + 20);

/**
 * A weak ETag that hashes the answer (contract §12). An answer is fully determined by its flag
 * keys, in order, and each flag's outcome code (outcomes.ts, fixed forever), so the tag hashes
 * that compact form: the same answer gives the same tag on every instance, a context whose
 * attributes change the answer gets a new one, and 1,000 flags hash 1 KB instead of 60 KB of JSON.
 */
export function etagOf(environment: CompiledEnvironment, outcomes: Uint8Array): string {
  let keys = keyDigests.get(environment.flagKeys);
  if (!keys) keyDigests.set(environment.flagKeys, (keys = hash('sha1', JSON.stringify(environment.flagKeys), 'buffer')));
  const count = environment.flagKeys.length;
  if (scratch.length < count + 20) scratch = new Uint8Array((count + 20) * 2);
  scratch.set(keys, 0);
  scratch.set(outcomes.subarray(0, count), 20);
  return `W/"${hash('sha1', scratch.subarray(0, count + 20), 'base64url')}"`;
}

/** Whether If-None-Match names this ETag (a list, `*`, weak or strong: comparison is weak, RFC 9110). */
export function notModified(headers: IncomingHttpHeaders, etag: string): boolean {
  const header = headers['if-none-match'];
  if (typeof header !== 'string' || header === '') return false;
  if (header.trim() === '*') return true;
  const opaque = etag.slice(2);
  for (const candidate of header.split(',')) {
    const tag = candidate.trim();
    if ((tag.startsWith('W/') ? tag.slice(2) : tag) === opaque) return true;
  }
  return false;
}

/** A plugin of the SDK surfaces: the services, and the stream tokens evaluate's plugin made for them. */
export type SdkPlugin = FastifyPluginAsync<Services & { streamTokens: StreamTokens }, RawServerDefault, TypeBoxTypeProvider>;
