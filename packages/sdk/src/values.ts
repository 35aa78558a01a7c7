/**
 * Values served by flags with variants (docs/variants.md): what getValue and getVariant read from
 * a flag's answer, alike for every flag set (remote or local).
 */
import type { JsonValue, ValueOf } from './model.js';

/** The JSON type of a value: string, number, boolean, object, array or null. */
function jsonType(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  return typeof value;
}

/**
 * The value a flag served when it has one of the default's JSON type (an array only for an array
 * default, a plain object only for an object default), else the default. Never throws.
 */
export function valueOr<T extends JsonValue | object>(state: { value?: unknown } | undefined, defaultValue: T): ValueOf<T> {
  if (state === undefined || state === null || !('value' in state)) return defaultValue as ValueOf<T>;
  const value = state.value;
  if (value === undefined || jsonType(value) !== jsonType(defaultValue)) return defaultValue as ValueOf<T>;
  if (typeof value === 'number' && !Number.isFinite(value)) return defaultValue as ValueOf<T>;
  return value as ValueOf<T>;
}

/** The key of the variant a flag served, or undefined (a flag without variants, or no answer). */
export function variantOf(state: { variant?: unknown } | undefined): string | undefined {
  const variant = state?.variant;
  return typeof variant === 'string' ? variant : undefined;
}

/** Whether two answers of a flag serve the same variant and value (a change of either is a change). */
export function sameVariant(a: { variant?: unknown; value?: unknown } | undefined, b: { variant?: unknown; value?: unknown } | undefined): boolean {
  if (a?.variant !== b?.variant) return false;
  const va = a?.value;
  const vb = b?.value;
  if (va === vb) return true;
  if (typeof va !== 'object' || typeof vb !== 'object' || va === null || vb === null) return false;
  return JSON.stringify(va) === JSON.stringify(vb);
}
