/**
 * A flag's arms and the share of units each is expected to get (docs/experiments.md): what an
 * experiment is started on, and what the sample-ratio test compares against.
 */

/** What the arms depend on: the flag's fields (flags.repository.ts toFlag). */
export interface ArmedFlag {
  enabled: boolean;
  rollout_percentage: number;
  everyone_else: 'rollout' | 'off';
  variants: readonly { key: string; weight: number }[];
  off_variant: string | null;
}

/** The variant keys, or `on` and `off` for a flag without variants. */
export function armsOf(flag: ArmedFlag): string[] {
  return flag.variants.length > 0 ? flag.variants.map((variant) => variant.key) : ['on', 'off'];
}

/** The arm a unit gets when the flag answers enabled: false. */
const offArmOf = (flag: ArmedFlag): string => (flag.variants.length > 0 ? flag.off_variant! : 'off');

/**
 * Each arm's expected share of the units no rule served (rule-served exposures are not part of an
 * experiment). With R = N/100 for a rollout 0 < N < 100, else 1 (a rollout of 0 or 100 serves
 * everyone): a variant v gets R·w_v/1000 + (1 − R)·[v is the off variant]; `on` gets R and `off`
 * 1 − R. A disabled flag, or one whose everyone_else is `off`, serves only its off arm. Computed
 * as one integer over 100,000 so that the shares are exact to a double (0.85, not 0.8500…01).
 */
export function expectedShares(flag: ArmedFlag): Record<string, number> {
  const off = offArmOf(flag);
  if (!flag.enabled || flag.everyone_else === 'off') return Object.fromEntries(armsOf(flag).map((arm) => [arm, arm === off ? 1 : 0]));
  const n = flag.rollout_percentage;
  const percent = n > 0 && n < 100 ? n : 100;
  const offPart = (arm: string) => (arm === off ? (100 - percent) * 1000 : 0);
  if (flag.variants.length === 0) return { on: (percent * 1000) / 100_000, off: offPart('off') / 100_000 };
  return Object.fromEntries(flag.variants.map((variant) => [variant.key, (percent * variant.weight + offPart(variant.key)) / 100_000]));
}

/** How many arms are expected to get any unit: an experiment needs two. */
export const armsWithShare = (shares: Record<string, number>): string[] => Object.keys(shares).filter((arm) => shares[arm]! > 0);
