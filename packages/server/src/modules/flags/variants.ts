import { VARIANT_LIMITS } from '@guidon/engine';
import { Invalid } from '../../errors.js';

/** A flag's variant as the API shows it and the flags.variants column stores it (docs/variants.md). */
export interface Variant {
  key: string;
  value: unknown;
  weight: number;
  description?: string;
}

/** A variant as a request sends it (the schema has checked key syntax, weight range and description). */
export interface VariantBody {
  key: string;
  value: unknown;
  weight: number;
  description?: string | null;
}

const { variants: MAX_VARIANTS, totalWeight: TOTAL_WEIGHT, valueBytes: MAX_VALUE_BYTES, valueDepth: MAX_DEPTH } = VARIANT_LIMITS;
const LIMIT = Number.MAX_SAFE_INTEGER;

/** The column as read: text on SQLite, already parsed by pg for jsonb; null (no variants) is []. */
export function toVariants(stored: string | object[] | null): Variant[] {
  if (stored === null) return [];
  return (typeof stored === 'string' ? JSON.parse(stored) : stored) as Variant[];
}

/** What the flags.variants column stores: null for a flag without variants. */
export const storedVariants = (variants: readonly Variant[]): string | null => (variants.length === 0 ? null : JSON.stringify(variants));

type JsonType = 'string' | 'number' | 'boolean' | 'object or array';

/**
 * The value's JSON type, or Invalid: every number anywhere inside within ±(2^53−1), at most
 * VARIANT_LIMITS.valueDepth levels of arrays and objects (deeper values break clients' JSON
 * parsers, docs/variants.md), at most 8 KiB serialized. Walked without recursion, and stopped
 * once it has seen more nodes than the byte limit allows, so a deeply nested body cannot exhaust
 * the stack.
 */
function checkedValue(value: unknown, where: string): JsonType {
  if (value === null || value === undefined) throw new Invalid(`${where}.value must be a string, number, boolean, object or array (not null)`);
  const stack: [unknown, number][] = [[value, 1]];
  let nodes = 0;
  let deepest = 0;
  while (stack.length > 0) {
    const [node, depth] = stack.pop()!;
    if (++nodes > MAX_VALUE_BYTES) throw new Invalid(`${where}.value must be at most ${MAX_VALUE_BYTES} bytes as JSON`);
    if (typeof node === 'number' && !(Math.abs(node) <= LIMIT)) throw new Invalid(`${where}.value holds the number ${node}, outside ±(2^53−1)`);
    if (node === null || typeof node !== 'object') continue;
    deepest = Math.max(deepest, depth);
    for (const child of Array.isArray(node) ? node : Object.values(node)) stack.push([child, depth + 1]);
  }
  if (deepest > MAX_DEPTH) throw new Invalid(`${where}.value nests arrays and objects ${deepest} levels deep, over the ${MAX_DEPTH} allowed`);
  if (Buffer.byteLength(JSON.stringify(value)) > MAX_VALUE_BYTES) throw new Invalid(`${where}.value must be at most ${MAX_VALUE_BYTES} bytes as JSON`);
  return typeof value === 'object' ? 'object or array' : (typeof value as JsonType);
}

/** A flag's variants as stored (docs/variants.md), or Invalid naming the variant and the field. */
export function checkVariants(sent: readonly VariantBody[]): Variant[] {
  if (sent.length > MAX_VARIANTS) throw new Invalid(`A flag has at most ${MAX_VARIANTS} variants (${sent.length} sent)`);
  const seen = new Set<string>();
  let type: { type: JsonType; key: string } | null = null;
  let total = 0;
  const variants = sent.map((variant, i) => {
    const where = `variants[${i}] ("${variant.key}")`;
    if (seen.has(variant.key)) throw new Invalid(`${where}: the key "${variant.key}" is used by another variant of the flag`);
    seen.add(variant.key);
    const valueType = checkedValue(variant.value, where);
    if (type === null) type = { type: valueType, key: variant.key };
    else if (valueType !== type.type) throw new Invalid(`${where}.value is a ${valueType}, but variant "${type.key}" is a ${type.type}: all values of a flag have one JSON type`);
    if (!Number.isInteger(variant.weight) || variant.weight < 0 || variant.weight > TOTAL_WEIGHT) throw new Invalid(`${where}.weight must be an integer from 0 to ${TOTAL_WEIGHT}`);
    total += variant.weight;
    const kept: Variant = { key: variant.key, value: variant.value, weight: variant.weight };
    if (typeof variant.description === 'string') kept.description = variant.description;
    return kept;
  });
  if (variants.length > 0 && total !== TOTAL_WEIGHT) throw new Invalid(`The variants' weights must sum to exactly ${TOTAL_WEIGHT} (0.1% steps); they sum to ${total}`);
  return variants;
}

/** off_variant: required with variants and one of their keys; null without. */
export function checkOffVariant(variants: readonly Variant[], offVariant: string | null): string | null {
  if (variants.length === 0) {
    if (offVariant !== null) throw new Invalid(`off_variant "${offVariant}" names no variant: the flag has no variants (send null or leave it out)`);
    return null;
  }
  if (offVariant === null) throw new Invalid('off_variant is required when the flag has variants: the key of the variant served when the flag is off');
  if (!variants.some((variant) => variant.key === offVariant)) throw new Invalid(`off_variant "${offVariant}" is not one of the flag's variants (${variants.map((v) => `"${v.key}"`).join(', ')})`);
  return offVariant;
}

/** A rule's variant: null, or a key of its flag's variants; a rule that serves false gets off_variant, so it names none. */
export function checkRuleVariant(flag: { key: string; variants: readonly Variant[] }, variant: string | null, serve: boolean): string | null {
  if (variant === null) return null;
  if (flag.variants.length === 0) throw new Invalid(`variant "${variant}": flag "${flag.key}" has no variants (send null or leave it out)`);
  if (!flag.variants.some((v) => v.key === variant)) throw new Invalid(`variant "${variant}" is not one of flag "${flag.key}"'s variants (${flag.variants.map((v) => `"${v.key}"`).join(', ')})`);
  if (!serve) throw new Invalid(`variant "${variant}": a rule that serves false gives the flag's off_variant; send variant null for it`);
  return variant;
}
