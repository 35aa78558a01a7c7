import type { FastifyError, FastifyRequest } from 'fastify';
import { Type, type Static } from 'typebox';
import { AppError } from '../../errors.js';
import { CONDITION_LIMITS, NO_VARIANT, OUTCOMES, codeOf, isPrerequisiteCode, variantOf } from '@guidon/engine';
import type { ApiPlugin } from '../../http/plugin.js';
import type { RateLimits } from '../../rate-limits.js';
import { environmentOf, type CompiledEnvironment, type EvaluateCache } from '../evaluate/evaluate.cache.js';
import { contextOf, etagOf, evaluateAll, evaluateOne, notModified, recordAll } from '../evaluate/evaluation.js';
import { AttributeNumber, ReasonKind } from '../evaluate/evaluate.schemas.js';
import { anySdkCredential, sdkProjectHook } from '../evaluate/sdk-auth.js';
import { sdkKeyHash } from '../evaluate/sdk-key.js';
import { noteOfrepAttributes } from '../attributes/attributes.seen.js';
import type { HistoryRecorder } from '../history/history.recorder.js';
import type { StreamTokens } from '../streams/stream-tokens.js';

/**
 * OFREP, the OpenFeature Remote Evaluation Protocol (docs/sdk.md): any OpenFeature OFREP
 * provider evaluates Guidon's flags through it. Same semantics, rate limit and history as evaluate.
 */

const OfrepRequest = Type.Object({
  context: Type.Optional(
    Type.Object(
      {
        targetingKey: Type.Optional(Type.String({ maxLength: 1024, description: 'Guidon user_id' })),
        email: Type.Optional(Type.String({ maxLength: 1024, description: 'Guidon user_email' })),
      },
      {
        // docs/targeting.md: every other field is a custom attribute, with the same limits as evaluate's.
        additionalProperties: Type.Union([Type.String({ maxLength: CONDITION_LIMITS.customAttributeLength }), AttributeNumber, Type.Boolean(), Type.Null()]),
        maxProperties: CONDITION_LIMITS.customAttributes + 2,
        propertyNames: { minLength: 1, maxLength: CONDITION_LIMITS.attributeNameLength },
        description: 'every other field is a custom attribute (docs/targeting.md): a string, a number or a boolean',
      },
    ),
  ),
});

/** The engine's context from OFREP's: targetingKey is the user id, email the email, every other field a custom attribute. */
function ofrepContext(context: Static<typeof OfrepRequest>['context']) {
  if (context === undefined) return contextOf(undefined, undefined);
  const { targetingKey, email, ...custom } = context as Record<string, string | number | boolean | null | undefined>;
  return contextOf(targetingKey as string | undefined, email as string | undefined, custom);
}

const OfrepFlag = Type.Object({
  key: Type.String(),
  value: Type.Unknown({ description: 'a boolean flag: true or false; a flag with variants: its variant\'s value (docs/variants.md)' }),
  variant: Type.String({ description: 'a boolean flag: on or off; a flag with variants: the variant\'s key' }),
  reason: ReasonKind,
  metadata: Type.Object({
    reason: Type.String({ description: "Guidon's reason" }),
    prerequisite: Type.Optional(Type.String({ description: 'with PREREQUISITE_FAILED: the key of the first prerequisite not met (docs/prerequisites.md)' })),
  }),
});

const OfrepBulk = Type.Object({
  flags: Type.Array(OfrepFlag),
  eventStreams: Type.Array(
    Type.Object({
      type: Type.Literal('sse'),
      endpoint: Type.Object({ requestUri: Type.String({ description: 'the stream, with a short-lived stream token' }) }),
      inactivityDelaySec: Type.Integer(),
    }),
  ),
});

const OfrepError = Type.Object({
  key: Type.Optional(Type.String()),
  errorCode: Type.String({ description: 'FLAG_NOT_FOUND, INVALID_CONTEXT, PARSE_ERROR or GENERAL' }),
  errorDetails: Type.String(),
});

/** What both OFREP routes can answer besides success, as evaluate: 413 a body over 1 MiB, 503 the database away while the SDK key is not compiled yet. */
const OFREP_ERRORS = Object.fromEntries([400, 401, 404, 413, 429, 500, 503].map((status) => [status, OfrepError]));

const EnvironmentHeader = Type.Object({ 'x-environment': Type.Optional(Type.String({ minLength: 1, maxLength: 64, description: 'environment key; production when absent' })) });

declare module 'fastify' {
  interface FastifyContextConfig {
    /** 'ofrep': errors answer in OFREP's shape (ofrepErrorBody) instead of docs/api.md's. */
    errorShape?: 'ofrep';
  }
}

/** An OFREP error: the code travels in the body (see ofrepErrorBody). */
export class OfrepFailure extends AppError {
  constructor(
    statusCode: number,
    readonly errorCode: 'FLAG_NOT_FOUND' | 'INVALID_CONTEXT' | 'PARSE_ERROR' | 'GENERAL',
    message: string,
  ) {
    super(statusCode, message);
  }
}

/** The body of an OFREP route's error (app.ts sendError asks for it): `{key?, errorCode, errorDetails}`. */
export function ofrepErrorBody(request: FastifyRequest, status: number, message: string, error: unknown) {
  const key = (request.params as { key?: string } | undefined)?.key;
  let errorCode: string;
  if (error instanceof OfrepFailure) errorCode = error.errorCode;
  else if (status === 400) errorCode = (error as FastifyError).validation ? 'INVALID_CONTEXT' : 'PARSE_ERROR';
  else errorCode = 'GENERAL';
  return { ...(key === undefined ? {} : { key }), errorCode, errorDetails: message };
}

/** `"value":…,"variant":…,"reason":…,"metadata":{…}` for each outcome code, ready to splice (docs/sdk.md). */
const FRAGMENTS: readonly string[] = OUTCOMES.map(({ enabled, reason, kind }) => JSON.stringify({ value: enabled, variant: enabled ? 'on' : 'off', reason: kind, metadata: { reason } }).slice(1, -1));

/**
 * The members of a flag's OFREP answer: a boolean flag's from FRAGMENTS; a variant flag's value
 * and variant are its variant's (docs/variants.md), its reason the engine's (SPLIT where the
 * weights chose for a flag otherwise the same for everyone).
 */
function ofrepMembers(environment: CompiledEnvironment, flag: number, code: number, variant: number): string {
  const members = variant === NO_VARIANT ? undefined : environment.variantMembers[flag]?.[variant];
  if (isPrerequisiteCode(code)) {
    // PREREQUISITE_FAILED, with the unmet flag's key (docs/prerequisites.md).
    const { flagSet } = environment;
    const metadata = JSON.stringify({ reason: flagSet.reasonOf(flag, code), prerequisite: flagSet.prerequisiteOf(flag, code) });
    return `${members === undefined ? '"value":false,"variant":"off"' : members.slice(1)},"reason":"PREREQUISITE_FAILED","metadata":${metadata}`;
  }
  if (members === undefined) return FRAGMENTS[code]!;
  const { reason } = OUTCOMES[code]!;
  return `${members.slice(1)},"reason":"${environment.flagSet.reasonKind(flag, code)}","metadata":${JSON.stringify({ reason })}`;
}

export const ofrepRoutes: ApiPlugin<{ limits: RateLimits; evaluateCache: EvaluateCache; history: HistoryRecorder; streamTokens: StreamTokens }> = async (
  app,
  { limits, evaluateCache, history, streamTokens },
) => {
  const config = { errorShape: 'ofrep' as const };
  const onRequest = sdkProjectHook(limits, evaluateCache, anySdkCredential);
  const environmentName = (request: FastifyRequest) => {
    const header = request.headers['x-environment'];
    return typeof header === 'string' ? header : 'production';
  };
  const keyPrefix = (quotedKey: string) => `{"key":${quotedKey},`;
  // The custom attribute names the rule editor offers first (attributes.seen.ts).
  app.addHook('preHandler', async (request) => noteOfrepAttributes(request.sdkProject?.environments.get(environmentName(request))?.environmentId, (request.body as { context?: Record<string, unknown> } | undefined)?.context));

  app.post('/ofrep/v1/evaluate/flags/:key', {
    logLevel: 'warn',
    config,
    onRequest,
    schema: {
      tags: ['ofrep'],
      security: [{ sdkKey: [] }],
      params: Type.Object({ key: Type.String() }),
      headers: EnvironmentHeader,
      body: OfrepRequest,
      response: { 200: OfrepFlag, ...OFREP_ERRORS },
    },
  }, async (request, reply) => {
    const { key } = request.params;
    const environment = environmentOf(request.sdkProject, environmentName(request));
    const index = environment.indexOf(key);
    if (index < 0) throw new OfrepFailure(404, 'FLAG_NOT_FOUND', `Flag "${key}" not found in environment "${environment.key}"`);
    const context = ofrepContext(request.body.context);
    const packed = evaluateOne(history, environment, index, context);
    return reply.type('application/json; charset=utf-8').send(`${keyPrefix(environment.quotedKeys[index]!)}${ofrepMembers(environment, index, codeOf(packed), variantOf(packed))}}` as never);
  });

  app.post('/ofrep/v1/evaluate/flags', {
    logLevel: 'warn',
    config,
    onRequest,
    schema: {
      tags: ['ofrep'],
      security: [{ sdkKey: [] }],
      headers: EnvironmentHeader,
      // The stock web provider adds its last stream message's etag and time: accepted, not needed.
      querystring: Type.Object({ flagConfigEtag: Type.Optional(Type.String()), flagConfigLastModified: Type.Optional(Type.String()) }),
      body: OfrepRequest,
      response: { 200: OfrepBulk, 304: Type.Null({ description: 'Not modified (no body)' }), ...OFREP_ERRORS },
    },
  }, async (request, reply) => {
    const environment = environmentOf(request.sdkProject, environmentName(request));
    const context = ofrepContext(request.body.context);
    const evaluated = evaluateAll(environment, context);
    const { codes } = evaluated;
    let flags = '[';
    const { size, hasVariants } = environment.flagSet;
    for (let i = 0; i < size; i++) flags += `${i === 0 ? '' : ','}${keyPrefix(environment.quotedKeys[i]!)}${ofrepMembers(environment, i, codes[i]!, hasVariants ? codes[size + i]! : NO_VARIANT)}}`;
    flags += ']';
    recordAll(history, environment, context, evaluated);
    // The ETag covers the evaluated flags, not the stream token beside them (which is renewed).
    const etag = etagOf(environment, codes);
    reply.header('etag', etag);
    if (notModified(request.headers, etag)) return reply.code(304).send(undefined as never);
    const token = await streamTokens.issue({ projectId: environment.projectId, environment: environment.key, keyHash: sdkKeyHash(anySdkCredential(request)!) });
    const requestUri = `/sdk/v1/stream?token=${encodeURIComponent(token)}`;
    const eventStreams = JSON.stringify([{ type: 'sse', endpoint: { requestUri }, inactivityDelaySec: 120 }]);
    return reply.type('application/json; charset=utf-8').send(`{"flags":${flags},"eventStreams":${eventStreams}}` as never);
  });
};
