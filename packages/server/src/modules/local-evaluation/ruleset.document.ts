/**
 * The ruleset document (docs/local-evaluation.md): what an SDK in local mode needs to answer exactly what
 * POST /sdk/v1/evaluate answers, and nothing else (no ids, names, descriptions, timestamps,
 * disabled rules). Its `flags` are FlagDefinitions as the engine's compileFlagSet takes them, in
 * evaluation order; `segments` holds the conditions of the segments those flags name.
 */
import { hash } from 'node:crypto';
import { brotliCompressSync, constants, gzipSync } from 'node:zlib';
import { Negotiator } from '@fastify/accept-negotiator';
import type { Condition, FlagDefinition, RuleDefinition, RulesetDocument } from '@guidon/engine';
import type { CompiledEnvironment } from '../evaluate/evaluate.cache.js';

/**
 * The document's format: an SDK refuses a format it does not know (and keeps its previous
 * ruleset). 2 when a flag has prerequisites: an SDK that knows only 1 would ignore them and answer
 * on where the flag is off (docs/local-evaluation.md); 1 otherwise, so older SDKs keep working.
 */
export const RULESET_FORMAT: RulesetDocument['format'] = 1;
export const RULESET_FORMAT_PREREQUISITES: RulesetDocument['format'] = 2;

export interface RulesetAnswer {
  readonly body: Buffer;
  readonly etag: string;
  /** The body compressed, each made on the first request that takes it (a 1,000-flag ruleset: 135 KiB → 5.6 KiB gzip, 2.9 KiB br). */
  gzip?: Buffer;
  br?: Buffer;
}

function condition(sent: Condition): Condition {
  const out: Condition = { operator: sent.operator };
  if (sent.attribute !== undefined && sent.attribute !== null) out.attribute = sent.attribute;
  if (sent.values !== undefined && sent.values !== null) out.values = sent.values;
  if (sent.negate === true) out.negate = true;
  if (sent.case_insensitive === true) out.case_insensitive = true;
  return out;
}

function rule(sent: RuleDefinition): RuleDefinition {
  const out: RuleDefinition = { type: sent.type, value: sent.value, enabled: true };
  if (sent.type === 'conditions') {
    out.value = '';
    out.conditions = (sent.conditions ?? []).map(condition);
  }
  if (sent.rolloutPercentage !== undefined && sent.rolloutPercentage !== 100) out.rolloutPercentage = sent.rolloutPercentage;
  if (sent.serve === false) out.serve = false;
  if (sent.variant !== undefined && sent.variant !== null) out.variant = sent.variant;
  return out;
}

function flag(sent: FlagDefinition): FlagDefinition {
  // A disabled flag answers the same for everyone: its rules are not needed (its variants are: off_variant).
  const out: FlagDefinition = {
    key: sent.key,
    enabled: sent.enabled,
    rolloutPercentage: sent.rolloutPercentage,
    everyoneElse: sent.everyoneElse === 'off' ? 'off' : 'rollout',
    rules: sent.enabled ? sent.rules.filter((r) => r.enabled === true).map(rule) : [],
  };
  if (sent.variants && sent.variants.length > 0) {
    out.variants = sent.variants.map(({ key, value, weight }) => ({ key, value, weight }));
    out.offVariant = sent.offVariant ?? null;
  }
  // A disabled flag answers off before its prerequisites are consulted: not needed either.
  if (sent.enabled && sent.prerequisites && sent.prerequisites.length > 0) {
    out.prerequisites = sent.prerequisites.map(({ flagKey, enabled, variants }) => (variants ? { flagKey, enabled: enabled !== false, variants: [...variants] } : { flagKey, enabled: enabled !== false }));
  }
  // Only when set: a flag without one hashes its key, as every SDK that predates the field does.
  if (typeof sent.bucketingKey === 'string') out.bucketingKey = sent.bucketingKey;
  return out;
}

/** The segment keys the flags' conditions name (IN_SEGMENT). */
function segmentsUsed(flags: readonly FlagDefinition[]): Set<string> {
  const keys = new Set<string>();
  for (const f of flags) for (const r of f.rules) for (const c of r.conditions ?? []) if (c.operator === 'IN_SEGMENT') for (const key of c.values ?? []) keys.add(key);
  return keys;
}

export function rulesetDocument(environment: CompiledEnvironment, revision: number): RulesetDocument {
  const flags = environment.definitions.map(flag);
  const segments: Record<string, Condition[]> = {};
  for (const key of [...segmentsUsed(flags)].sort()) {
    const conditions = environment.segments.get(key);
    if (conditions) segments[key] = conditions.map(condition);
  }
  const format = flags.some((f) => f.prerequisites !== undefined) ? RULESET_FORMAT_PREREQUISITES : RULESET_FORMAT;
  return { format, environment: environment.key, revision, flags, segments };
}

/**
 * Built once per compiled environment (a change compiles a new one) and dropped with it: the
 * stream builds it before it tells the SDKs to fetch it, and its ETag goes with that message. The
 * ETag hashes the bytes, so instances that compiled the same revision give the same tag.
 */
const built = new WeakMap<CompiledEnvironment, RulesetAnswer>();

export function rulesetAnswer(environment: CompiledEnvironment, revision: number): RulesetAnswer {
  let answer = built.get(environment);
  if (!answer) {
    const body = Buffer.from(JSON.stringify(rulesetDocument(environment, revision)));
    answer = { body, etag: `W/"${hash('sha1', body, 'base64url')}"` };
    built.set(environment, answer);
  }
  return answer;
}

/** Brotli first (half gzip's size here), then gzip, as the request's Accept-Encoding allows. */
const encodings = new Negotiator({ supportedValues: ['br', 'gzip', 'identity'] });

/**
 * Brotli's quality 6: a 1,000-flag ruleset in about 3 ms; its default (11) took 0.9 s, blocking
 * every other request, for a body a sixth smaller.
 */
const BROTLI = { params: { [constants.BROTLI_PARAM_QUALITY]: 6 } };

/** The answer's body in the encoding the request accepts, each compressed once per compiled environment. */
export function encodedBody(answer: RulesetAnswer, acceptEncoding: string | undefined): { body: Buffer; encoding: 'br' | 'gzip' | null } {
  const encoding = acceptEncoding ? encodings.negotiate(acceptEncoding) : null;
  if (encoding === 'br') return { body: (answer.br ??= brotliCompressSync(answer.body, BROTLI)), encoding };
  if (encoding === 'gzip') return { body: (answer.gzip ??= gzipSync(answer.body)), encoding };
  return { body: answer.body, encoding: null };
}
