import type { Variant } from '../../api/client';
import { fields } from '../../api/fields';

/**
 * The variant editor's rules (docs/variants.md), checked in the page as one types; the server checks
 * them again on save and its message is shown as it is.
 */
export const VALUE_TYPES = { string: 'String', number: 'Number', boolean: 'Boolean', json: 'JSON' } as const;
export type ValueType = keyof typeof VALUE_TYPES;

/** A variant as the editor holds it: every field as typed, an id that survives renames and moves. */
export interface VariantRow {
  id: number;
  key: string;
  value: string;
  /** A percentage with at most one decimal, as typed: weight 125 is "12.5". */
  weight: string;
  description: string;
}

export const KEY_PATTERN = /^[a-z][a-z0-9_-]*$/;
const MAX_SAFE = Number.MAX_SAFE_INTEGER;
/** The engine's limits (docs/variants.md), through the OpenAPI document. */
const { valueBytes: MAX_VALUE_BYTES, valueDepth: MAX_DEPTH, variants: MAX_VARIANTS, totalWeight: TOTAL } = fields.variantLimits;
export { MAX_VARIANTS, TOTAL };

/** Levels of arrays and objects in a JSON value (a scalar: 0). */
function depthOf(value: unknown): number {
  if (value === null || typeof value !== 'object') return 0;
  return 1 + Math.max(0, ...(Array.isArray(value) ? value : Object.values(value)).map(depthOf));
}

export function typeOf(variants: readonly Variant[]): ValueType {
  const value = variants[0]?.value;
  if (typeof value === 'number') return 'number';
  if (typeof value === 'boolean') return 'boolean';
  if (typeof value === 'object' && value !== null) return 'json';
  return 'string';
}

export function valueText(value: unknown): string {
  if (typeof value === 'string') return value;
  if (typeof value === 'object' && value !== null) return JSON.stringify(value, null, 2);
  return String(value);
}

/** 125 → "12.5", 330 → "33". */
export const percent = (weight: number) => String(weight / 10);

/** The weight (0–1000) of a typed percentage, or null when it is not one with at most one decimal. */
export function weightOf(text: string): number | null {
  const trimmed = text.trim().replace(',', '.');
  if (!/^\d{1,3}(\.\d+)?$/.test(trimmed)) return null;
  const tenths = Number(trimmed) * 10;
  const weight = Math.round(tenths);
  if (Math.abs(tenths - weight) > 1e-9 || weight > TOTAL) return null;
  return weight;
}

/** The value a row's text stands for under the type, or the reason it does not. */
export function parseValue(type: ValueType, text: string): { value: unknown } | { problem: string } {
  let value: unknown;
  if (type === 'string') value = text;
  else if (type === 'boolean') value = text === 'true';
  else if (type === 'number') {
    const trimmed = text.trim();
    value = Number(trimmed);
    if (trimmed === '' || !Number.isFinite(value)) return { problem: 'Enter a number, for example 42 or 2.5' };
    if (Math.abs(value as number) > MAX_SAFE) return { problem: 'A number between −(2^53−1) and 2^53−1' };
  } else {
    if (text.trim() === '') return { problem: 'Enter a JSON object or array, for example {"color": "blue"}' };
    try {
      value = JSON.parse(text);
    } catch (error) {
      return { problem: `Not valid JSON: ${(error as Error).message}` };
    }
    if (typeof value !== 'object' || value === null) return { problem: 'A JSON object or array (for a single string, number or boolean, choose that value type)' };
  }
  const bytes = new TextEncoder().encode(JSON.stringify(value)).length;
  if (bytes > MAX_VALUE_BYTES) return { problem: `At most ${MAX_VALUE_BYTES / 1024} KiB as JSON: this is ${(bytes / 1024).toFixed(1)} KiB` };
  if (depthOf(value) > MAX_DEPTH) return { problem: `At most ${MAX_DEPTH} levels of arrays and objects: this has ${depthOf(value)}` };
  return { value };
}

/** Tenths of a percent spread as evenly as they go: 3 variants get 33.4, 33.3 and 33.3 %. */
export function evenWeights(count: number): number[] {
  const share = Math.floor(TOTAL / count);
  return Array.from({ length: count }, (_, i) => share + (i < TOTAL - share * count ? 1 : 0));
}

export interface RowProblems {
  key?: string;
  value?: string;
  weight?: string;
}

/** Every problem of the rows, by row id; an empty map when there is none. */
export function rowProblems(type: ValueType, rows: readonly VariantRow[]): Map<number, RowProblems> {
  const problems = new Map<number, RowProblems>();
  const seen = new Set<string>();
  for (const row of rows) {
    const found: RowProblems = {};
    const key = row.key.trim();
    if (!key) found.key = 'Enter a key, for example blue';
    else if (!KEY_PATTERN.test(key) || key.length > 100) found.key = 'a-z, 0-9, _ and -, starting with a letter';
    else if (seen.has(key)) found.key = `Another variant has the key ${key}`;
    seen.add(key);
    const parsed = parseValue(type, row.value);
    if ('problem' in parsed) found.value = parsed.problem;
    if (weightOf(row.weight) === null) found.weight = '0 to 100, one decimal at most';
    if (found.key || found.value || found.weight) problems.set(row.id, found);
  }
  return problems;
}

/** The sum of the weights that parse, in tenths of a percent. */
export const totalWeight = (rows: readonly VariantRow[]) => rows.reduce((sum, row) => sum + (weightOf(row.weight) ?? 0), 0);
