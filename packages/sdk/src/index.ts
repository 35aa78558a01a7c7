export type { JsonValue, ValueOf } from './values.js';
export { createClient, GuidonError, REASON_BOOTSTRAP, REASON_FALLBACK, REASON_NOT_FOUND } from './client.js';
export type { ClientEvents, ClientOptions, FlagSet, FlagState, Flags, GuidonClient, GuidonContext } from './client.js';
export { RULESET_FORMAT, REASON_NO_RULESET, REASON_UNKNOWN_FLAG } from './local.js';
export type { LocalClient, LocalClientEvents, LocalClientOptions, LocalFlagSet, LocalFlagState, RulesetDocument } from './local.js';
