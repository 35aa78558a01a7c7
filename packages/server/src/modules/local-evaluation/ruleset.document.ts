/**
 * The ruleset document (docs/local-evaluation.md): what an SDK in local mode needs to answer exactly what
 * POST /sdk/v1/evaluate answers, and nothing else (no ids, names, descriptions, timestamps,
 * disabled rules). Its `flags` are FlagDefinitions as the engine's compileFlagSet takes them, in
 * evaluation order; `segments` holds the conditions of the segments those flags name.
 */
import { hash } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import { brotliCompressSync, constants, gzipSync } from 'node:zlib';
import { Negotiator } from '@fastify/accept-negotiator';
import type { Condition, FlagDefinition, RuleDefinition, RulesetDocument, RulesetPatch } from '@guidon/engine';
import { notModified } from '../evaluate/evaluation.js';

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
  /** What the body holds: the stream's patch is the difference of two of these (rulesetPatch). */
  readonly document: RulesetDocument;
  /** Per flag key and per segment key, its entry as JSON text: made the first time a patch compares this answer. */
  texts?: { flags: Map<string, string>; segments: Map<string, string> };
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

/** What a ruleset is built from: a compiled environment (evaluate/evaluate.cache.ts). */
export interface RulesetSource {
  readonly key: string;
  /** The flags in evaluation order. */
  readonly definitions: readonly FlagDefinition[];
  readonly segments: ReadonlyMap<string, readonly Condition[]>;
}

/** Each compiled environment's answer, kept as long as the environment is (a change compiles a new one, and the old answer goes with the old one). */
const answers = new WeakMap<RulesetSource, RulesetAnswer>();

export function rulesetDocument(environment: RulesetSource, revision: number): RulesetDocument {
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
export function rulesetAnswer(environment: RulesetSource, revision: number): RulesetAnswer {
  let answer = answers.get(environment);
  if (answer === undefined) {
    const document = rulesetDocument(environment, revision);
    const body = Buffer.from(JSON.stringify(document));
    answer = { body, etag: `W/"${hash('sha1', body, 'base64url')}"`, document };
    answers.set(environment, answer);
  }
  return answer;
}

/** A patch larger than this is left out of the stream's message: the SDKs fetch the document instead (compressed, once each). */
export const PATCH_MAX_BYTES = 16 * 1024;

function textsOf(answer: RulesetAnswer): NonNullable<RulesetAnswer['texts']> {
  return (answer.texts ??= {
    flags: new Map(answer.document.flags.map((flag) => [flag.key, JSON.stringify(flag)])),
    segments: new Map(Object.entries(answer.document.segments).map(([key, conditions]) => [key, JSON.stringify(conditions)])),
  });
}

/**
 * The patch from one answer's document to another's (docs/local-evaluation.md, "Freshness: the stream"), as
 * JSON text, or null when it would not pay: larger than PATCH_MAX_BYTES, or more than half the
 * flags changed (the SDKs then fetch). Applied to `from`'s document by the engine's
 * applyRulesetPatch, it gives `to`'s, deep-equal and in the same order.
 */
export function rulesetPatch(from: RulesetAnswer, to: RulesetAnswer): string | null {
  if (from.document.environment !== to.document.environment) return null;
  const before = textsOf(from);
  const after = textsOf(to);
  const flags: FlagDefinition[] = [];
  const added: string[] = [];
  for (const flag of to.document.flags) {
    const was = before.flags.get(flag.key);
    if (was === undefined) added.push(flag.key);
    if (was !== after.flags.get(flag.key)) flags.push(flag);
  }
  if (flags.length > Math.max(1, to.document.flags.length / 2)) return null;
  const removed = from.document.flags.filter((flag) => !after.flags.has(flag.key)).map((flag) => flag.key);
  const gone = new Set(removed);
  const kept = from.document.flags.filter((flag) => !gone.has(flag.key)).map((flag) => flag.key).concat(added);
  const order = to.document.flags.map((flag) => flag.key);
  const segments: Record<string, Condition[] | null> = {};
  for (const [key, text] of after.segments) if (before.segments.get(key) !== text) segments[key] = to.document.segments[key]!;
  for (const key of before.segments.keys()) if (!after.segments.has(key)) segments[key] = null;
  const patch: RulesetPatch = { from: from.etag, format: to.document.format, flags, removed, segments };
  if (kept.length !== order.length || kept.some((key, i) => key !== order[i])) patch.order = order;
  const text = JSON.stringify(patch);
  return text.length > PATCH_MAX_BYTES ? null : text;
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

/** What GET /sdk/v1/ruleset answers: its status, the headers of the ruleset, and the body (none for a 304). */
export interface RulesetReply {
  status: 200 | 304;
  headers: Record<string, string>;
  body: Buffer | null;
}

/**
 * The ruleset route's answer to a request with these headers, from the route and from its direct
 * path alike (ruleset.direct.ts): 304 when the request holds the ETag, else the body in the encoding
 * it accepts. Without content-length, which each path sets as it sends.
 */
export function rulesetReply(answer: RulesetAnswer, requestHeaders: IncomingHttpHeaders): RulesetReply {
  const headers: Record<string, string> = { etag: answer.etag, 'cache-control': 'no-cache', vary: 'accept-encoding' };
  if (notModified(requestHeaders, answer.etag)) return { status: 304, headers, body: null };
  // Rules compress well (repeated keys and operators): br or gzip when the client takes it, compressed once per change.
  const { body, encoding } = encodedBody(answer, requestHeaders['accept-encoding']);
  if (encoding) headers['content-encoding'] = encoding;
  headers['content-type'] = 'application/json; charset=utf-8';
  return { status: 200, headers, body };
}
