import { REASON_BOOTSTRAP, REASON_FALLBACK, REASON_NOT_FOUND, type GuidonContext } from '@guidon/sdk';

/** OpenFeature's evaluation context, as much of it as Guidon reads. */
export interface OpenFeatureContext {
  targetingKey?: string;
  email?: unknown;
  [attribute: string]: unknown;
}

/** Contract §12: targetingKey is Guidon's user_id, email its user_email; other attributes are not used. */
export function toGuidonContext(context: OpenFeatureContext | undefined): GuidonContext {
  return {
    user_id: typeof context?.targetingKey === 'string' ? context.targetingKey : null,
    user_email: typeof context?.email === 'string' ? context.email : null,
  };
}

/** How a Guidon value came to be, for a provider to answer with. */
export type Resolution =
  | { kind: 'evaluated'; value: boolean; reason: 'DISABLED' | 'STATIC' | 'TARGETING_MATCH' | 'SPLIT'; guidonReason: string }
  | { kind: 'bootstrap'; value: boolean }
  | { kind: 'not-found' }
  | { kind: 'unavailable' };

/** Maps Guidon's reason strings to OpenFeature's reasons (contract §12). */
export function resolve(enabled: boolean, reason: string): Resolution {
  if (reason === REASON_BOOTSTRAP) return { kind: 'bootstrap', value: enabled };
  if (reason === REASON_NOT_FOUND) return { kind: 'not-found' };
  if (reason === REASON_FALLBACK) return { kind: 'unavailable' };
  if (reason === 'Flag is globally disabled') return { kind: 'evaluated', value: enabled, reason: 'DISABLED', guidonReason: reason };
  if (reason === 'Flag enabled globally') return { kind: 'evaluated', value: enabled, reason: 'STATIC', guidonReason: reason };
  if (reason.startsWith('Matched ')) return { kind: 'evaluated', value: enabled, reason: 'TARGETING_MATCH', guidonReason: reason };
  return { kind: 'evaluated', value: enabled, reason: 'SPLIT', guidonReason: reason };
}
