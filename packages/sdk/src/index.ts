/**
 * @guidon/sdk (docs/sdk.md): createClient makes a remote client (client.ts), or with
 * `mode: 'local'` a local one (local.ts; in a browser bundle local.browser.ts, which says why it
 * cannot run). Both talk to Guidon through transport.ts and never import each other.
 */
import { createRemoteClient, type ClientOptions, type GuidonClient } from './client.js';
import { createLocalClient, type LocalClient, type LocalClientOptions } from './local.js';

/** A Guidon client: call ready() before the first read if you can wait; reads never throw. */
export function createClient(options: LocalClientOptions): LocalClient;
export function createClient(options: ClientOptions): GuidonClient;
export function createClient(options: ClientOptions | LocalClientOptions): GuidonClient | LocalClient {
  return (options as Partial<LocalClientOptions>).mode === 'local' ? createLocalClient(options as LocalClientOptions) : createRemoteClient(options as ClientOptions);
}

export { GuidonError } from './errors.js';
export { REASON_BOOTSTRAP, REASON_FALLBACK, REASON_NOT_FOUND, REASON_NO_RULESET, REASON_UNKNOWN_FLAG } from './reasons.js';
export { RULESET_FORMAT } from './local.js';
export type { FlagState, Flags, GuidonContext, JsonValue, ValueOf } from './model.js';
export type { ClientEvents, ClientOptions, FlagSet, GuidonClient } from './client.js';
export type { EventStats, ExperimentOptions } from './exposures.js';
export type { LocalClient, LocalClientEvents, LocalClientOptions, LocalFlagSet, LocalFlagState, LocalResolution } from './local.js';
export type { ReasonKind, RulesetDocument } from '@guidon/engine';
