/**
 * Local mode in a browser bundle (package.json `browser` maps local.js here): a page must never
 * hold the rules (they name users) nor an API token, so bundlers leave the engine out and a
 * local client only says why it cannot run. Use remote evaluation (`sdkKey`) in browsers.
 */
import type { RulesetDocument } from '@guidon/engine';
import { Emitter } from './emitter.js';
import { GuidonError } from './errors.js';
import { REASON_NO_RULESET } from './reasons.js';
import { valueOr } from './values.js';
import type { LocalClient, LocalClientEvents, LocalClientOptions, LocalFlagSet } from './local.js';

export const RULESET_FORMAT: RulesetDocument['format'] = 2;

const NO_FLAGS: LocalFlagSet = {
  isEnabled: () => false,
  reason: () => REASON_NO_RULESET,
  variant: () => undefined,
  value: (_key, fallback) => valueOr(undefined, fallback),
  flag: () => ({ enabled: false, reason: REASON_NO_RULESET }),
  allFlags: () => ({}),
  resolution: () => ({ state: { enabled: false, reason: REASON_NO_RULESET } }),
};

export function createLocalClient(_options: LocalClientOptions): LocalClient {
  const events = new Emitter<LocalClientEvents>();
  queueMicrotask(() => events.emit('error', new GuidonError('Local evaluation is for servers: in a browser, use remote evaluation with an SDK key', 'ruleset')));
  return {
    ready: async () => false,
    evaluate: () => NO_FLAGS,
    ruleset: () => undefined,
    on: (event, listener) => events.on(event, listener),
    track: () => undefined,
    eventStats: () => ({ queued: 0, sent: 0, dropped: 0, invalid: 0 }),
    close: async () => events.silence(),
  };
}
