/**
 * How a flag with variants picks one (docs/variants.md): the off variant for whom it answers off,
 * the serving rule's variant when it names one, else the one chosen by weight as Unleash does.
 */
import { murmur3_x86_32_state, type Murmur3State } from './murmur3.js';
import { hashKeyOf, NO_VARIANT, type FlagDefinition } from './model.js';
import type { Scratch } from './scratch.js';

/** Unleash's variant hashing seed. */
const VARIANT_SEED = 86028157;

/** The limits of a flag's variants (docs/variants.md): what the server checks at save and the dashboard's editor shows. */
export const VARIANT_LIMITS = Object.freeze({
  /** Variants a flag may have. */
  variants: 50,
  /** What a flag's weights sum to (0.1 % steps). */
  totalWeight: 1000,
  /** Bytes of a value as JSON. */
  valueBytes: 8 * 1024,
  /** Levels of arrays and objects in a value (parsers in other languages stop at a few hundred; some far fewer). */
  valueDepth: 32,
});

export interface VariantPlan {
  /** The variant served to whom the flag answers `enabled: false`. */
  readonly off: number;
  /** Per rule rank, the variant it names, or NO_VARIANT (chosen by weight). */
  readonly pinned: Uint8Array;
  /** The variant index when the weights leave no choice (one variant has them all), else -1. */
  readonly only: number;
  /** Running weight totals, in the flag's order. */
  readonly runningTotals: Uint16Array;
  /** "<key>:" absorbed into the variant hash's state. */
  readonly prefix: Murmur3State;
}

/** A flag's plan, or null for a flag without variants (or with more than a byte can index). */
export function compileVariants(def: FlagDefinition): VariantPlan | null {
  const variants = def.variants;
  if (!Array.isArray(variants) || variants.length === 0 || variants.length >= NO_VARIANT) return null;
  const indexOf = (key: string | null | undefined) => {
    const i = typeof key === 'string' ? variants.findIndex((variant) => variant.key === key) : -1;
    return i < 0 ? NO_VARIANT : i;
  };
  const runningTotals = new Uint16Array(variants.length);
  let total = 0;
  for (let i = 0; i < variants.length; i++) runningTotals[i] = total += Math.max(0, Math.trunc(variants[i]!.weight) || 0);
  const positive = variants.filter((variant) => variant.weight > 0);
  const off = indexOf(def.offVariant);
  return {
    off: off === NO_VARIANT ? 0 : off,
    pinned: Uint8Array.from(def.rules, (rule) => indexOf(rule.variant)),
    only: positive.length === 1 ? variants.indexOf(positive[0]!) : positive.length === 0 ? 0 : -1,
    runningTotals,
    prefix: murmur3_x86_32_state(hashKeyOf(def) + ':', VARIANT_SEED),
  };
}

/** The variant a flag serves: off when it answers off, else the serving rule's (rank ≥ 0) if it names one, else by weight. */
export function chooseVariant(plan: VariantPlan, enabled: boolean, rank: number, scratch: Scratch): number {
  if (!enabled) return plan.off;
  if (rank >= 0) {
    const pinned = plan.pinned[rank]!;
    if (pinned !== NO_VARIANT) return pinned;
  }
  if (plan.only >= 0) return plan.only;
  // The first variant whose running total reaches murmur3 mod 1000 + 1.
  const target = (scratch.hash(plan.prefix) % 1000) + 1;
  const totals = plan.runningTotals;
  for (let i = 0; i < totals.length; i++) if (totals[i]! >= target) return i;
  // Off the API's checks (weights not summing to 1000) the last positive weight takes the rest.
  let last = totals.length - 1;
  while (last > 0 && totals[last] === totals[last - 1]) last--;
  return last;
}
