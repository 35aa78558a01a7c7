/** OpenFeature's evaluation context as Guidon's (docs/sdk.md, "OpenFeature"). */
import type { GuidonContext } from '@guidon/sdk';

/** OpenFeature's evaluation context, as much of it as Guidon reads. */
export interface OpenFeatureContext {
  targetingKey?: string;
  email?: unknown;
  [attribute: string]: unknown;
}

/** What a custom attribute may be (docs/targeting.md): the server refuses a whole request for one that is not. */
const MAX_ATTRIBUTES = 100;
const MAX_NAME = 64;
const MAX_TEXT = 1024;

/**
 * targetingKey is Guidon's user_id, email its user_email, and every other field a custom
 * attribute. A Date is sent as ISO 8601; a field the server would refuse (an object, a list,
 * text over 1,024 characters, a name over 64) is left out rather than failing the evaluation,
 * and so are fields past the 100th.
 */
export function toGuidonContext(context: OpenFeatureContext | undefined): GuidonContext {
  const custom: Record<string, string | number | boolean | null> = {};
  let count = 0;
  for (const [name, value] of Object.entries(context ?? {})) {
    if (name === 'targetingKey' || name === 'email' || name.length === 0 || name.length > MAX_NAME || count >= MAX_ATTRIBUTES) continue;
    const sent = value instanceof Date ? value.toISOString() : value;
    if (sent === null || typeof sent === 'boolean' || (typeof sent === 'number' && Number.isFinite(sent)) || (typeof sent === 'string' && [...sent].length <= MAX_TEXT)) {
      custom[name] = sent;
      count++;
    }
  }
  return {
    user_id: typeof context?.targetingKey === 'string' ? context.targetingKey : null,
    user_email: typeof context?.email === 'string' ? context.email : null,
    ...(count > 0 ? { custom_attributes: custom } : {}),
  };
}
