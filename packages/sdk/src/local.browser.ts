/**
 * Local mode in a browser bundle (package.json `browser` maps local.js here): a page must never
 * hold the rules (they name users) nor an API token, so bundlers leave the engine out and a
 * local client only says why it cannot run. Use remote evaluation (`sdkKey`) in browsers.
 */
import { GuidonError } from './client.js';
import { valueOr } from './values.js';
import type { LocalClient, LocalClientEvents, LocalClientOptions, LocalFlagSet } from './local.js';

export const RULESET_FORMAT = 1;
export const REASON_NO_RULESET = 'Fallback: no ruleset from Guidon';
export const REASON_UNKNOWN_FLAG = 'Flag not in the ruleset';

const NO_FLAGS: LocalFlagSet = {
  isEnabled: () => false,
  reason: () => REASON_NO_RULESET,
  variant: () => undefined,
  value: (_key, fallback) => valueOr(undefined, fallback),
  allFlags: () => ({}),
};

export function createLocalClient(_options: LocalClientOptions): LocalClient {
  const errors = new Set<LocalClientEvents['error']>();
  const error = new GuidonError('Local evaluation is for servers: in a browser, use remote evaluation with an SDK key', 'ruleset');
  queueMicrotask(() => errors.forEach((listener) => listener(error)));
  return {
    ready: async () => false,
    evaluate: () => NO_FLAGS,
    ruleset: () => undefined,
    on: (event, listener) => {
      if (event !== 'error') return () => undefined;
      errors.add(listener as LocalClientEvents['error']);
      return () => errors.delete(listener as LocalClientEvents['error']);
    },
    close: async () => undefined,
  };
}
