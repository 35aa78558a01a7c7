/** Reasons of the answers Guidon did not give (read with `reason(key)`; Guidon's own are in docs/api.md). */

/** Remote client: the flag's `bootstrap` value, before the first answer or while Guidon is away. */
export const REASON_BOOTSTRAP = 'Bootstrap value';
/** Remote client: no answer from Guidon and no bootstrap value: false. */
export const REASON_FALLBACK = 'Fallback: no answer from Guidon';
/** Remote client: Guidon answered without this flag: false. */
export const REASON_NOT_FOUND = 'Flag not returned by Guidon';
/** Local client: no ruleset held (none fetched, no bootstrap): false. */
export const REASON_NO_RULESET = 'Fallback: no ruleset from Guidon';
/** Local client: the ruleset held has no such flag: false. */
export const REASON_UNKNOWN_FLAG = 'Flag not in the ruleset';
