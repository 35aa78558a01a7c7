export type { JsonValue, ValueOf } from './values.js';
export { createClient, GuidonError, REASON_BOOTSTRAP, REASON_FALLBACK, REASON_NOT_FOUND } from './client.js';
export type { ClientEvents, ClientOptions, FlagSet, FlagState, Flags, GuidonClient, GuidonContext } from './client.js';
