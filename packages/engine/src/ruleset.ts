/**
 * The ruleset document (docs/local-evaluation.md, "The ruleset"): what `GET /sdk/v1/ruleset`
 * answers and what an SDK in local mode compiles with compileFlagSet. The server writes it, the
 * SDK reads it: one declaration for both. Types only.
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
