/**
 * The ruleset document (docs/local-evaluation.md, "The ruleset"): what `GET /sdk/v1/ruleset`
 * answers and what an SDK in local mode compiles with compileFlagSet. The server writes it, the
 * SDK reads it: one declaration for both. With the patch that a stream message may carry from
 * one document to the next, and how a client applies it.
 */
import type { Condition, FlagDefinition } from './model.js';

export interface RulesetDocument {
  /**
   * The document's version: an SDK refuses a format it does not know (and keeps the ruleset it
   * holds). 2 when a flag has prerequisites (an SDK of format 1 would ignore them and answer on
   * where the flag is off), else 1 (docs/local-evaluation.md).
   */
  format: 1 | 2;
  /** The environment's key. */
  environment: string;
  /** The project's revision when the document was built. */
  revision: number;
  /** The environment's flags as compileFlagSet takes them, in evaluation order. */
  flags: FlagDefinition[];
  /** The conditions of each segment the flags name (IN_SEGMENT), and no other. */
  segments: Record<string, Condition[]>;
}

/**
 * The change from one ruleset document to the next, as the stream's `refetchRuleset` message
 * carries it (docs/local-evaluation.md, "Freshness: the stream"). It applies to the document whose ETag is
 * `from`, and only to it: applied there, it gives the document GET /sdk/v1/ruleset answers for the
 * message's revision, deep-equal, in the same order.
 */
export interface RulesetPatch {
  /** The ETag of the document this patch applies to. */
  from: string;
  /** The new document's format. */
  format: RulesetDocument['format'];
  /** The flags added or defined otherwise, whole. */
  flags: FlagDefinition[];
  /** The keys of the flags no longer in the document. */
  removed: string[];
  /**
   * Every key in the new evaluation order, when it is not the old order without the removed flags
   * followed by the added ones in the order of `flags`.
   */
  order?: string[];
  /** The segments added or changed (their conditions), or removed (null). */
  segments: Record<string, Condition[] | null>;
}

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * The document a patch makes of `document` at `revision`, or null when it does not fit (a flag
 * it changes or removes is not there, the order names other keys, a part is malformed): the client
 * then fetches the document. The caller checks `from` against the ETag it holds. Neither argument
 * is changed. Flags and segments the patch does not name are shared with `document`.
 */
export function applyRulesetPatch(document: RulesetDocument, patch: unknown, revision: number): RulesetDocument | null {
  if (!isObject(patch) || !Array.isArray(patch.flags) || !Array.isArray(patch.removed) || !isObject(patch.segments) || (patch.format !== 1 && patch.format !== 2)) return null;
  if (!Number.isSafeInteger(revision)) return null;
  const byKey = new Map<string, FlagDefinition>(document.flags.map((flag) => [flag.key, flag]));
  for (const key of patch.removed as unknown[]) if (typeof key !== 'string' || !byKey.delete(key)) return null;
  const added: string[] = [];
  for (const flag of patch.flags as unknown[]) {
    if (!isObject(flag) || typeof flag.key !== 'string') return null;
    if (!byKey.has(flag.key)) added.push(flag.key);
    byKey.set(flag.key, flag as unknown as FlagDefinition);
  }
  let order: string[];
  if (patch.order === undefined) {
    const removed = new Set(patch.removed as string[]);
    order = document.flags.map((flag) => flag.key).filter((key) => !removed.has(key)).concat(added);
  } else {
    if (!Array.isArray(patch.order) || patch.order.length !== byKey.size || new Set(patch.order).size !== byKey.size) return null;
    order = patch.order as string[];
  }
  const flags: FlagDefinition[] = [];
  for (const key of order) {
    const flag = byKey.get(key);
    if (flag === undefined) return null;
    flags.push(flag);
  }
  const entries: [string, Condition[]][] = [];
  const changed = patch.segments;
  // Keys sorted, as the server writes them: the document stays canonical.
  for (const key of [...new Set([...Object.keys(document.segments), ...Object.keys(changed)])].sort()) {
    const conditions = Object.hasOwn(changed, key) ? changed[key] : document.segments[key];
    if (conditions === null) continue;
    if (!Array.isArray(conditions)) return null;
    entries.push([key, conditions as Condition[]]);
  }
  return { format: patch.format, environment: document.environment, revision, flags, segments: Object.fromEntries(entries) };
}
