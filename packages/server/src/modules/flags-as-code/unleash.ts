import type { GuidonDocument } from './document.schemas.js';

export interface Skipped {
  feature: string | null;
  environment: string | null;
  what: string;
  reason: string;
}

/** Placeholder until the mapping is written. */
export function fromUnleash(_input: unknown): { document: GuidonDocument; skipped: Skipped[] } {
  throw new Error('not yet');
}
