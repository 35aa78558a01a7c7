/**
 * Evaluation: the flags of one environment compiled together, and the one pipeline that answers
 * a flag for a context, top to bottom (docs/api.md, "Evaluate"; docs/adr/0007-engine-shape.md):
 *
 *   disabled → [prerequisites] → rules → everyone else (rollout) → variant
 *
 * Its answer names the rule that served. The whole-set evaluation runs the same pipeline, only for
 * the flags whose answer can depend on the context.
 */
import { codeOf, NO_RULE, ruleOf, ruleServed, variantOf, withoutRule, withVariant, type PackedAnswer } from './answer-codec.js';
import { ConditionTable } from './conditions.js';
import { hashKeyOf, NO_VARIANT } from './model.js';
import type { Answer, CompiledFlagSet, CompileOptions, EvaluationContext, FlagDefinition, Outcome, ReasonKind, VariantDefinition } from './model.js';
import { murmur3_x86_32, murmur3_x86_32_state, type Murmur3State } from './murmur3.js';
import { DISABLED_CODE, ENABLED, OUTCOMES, PREREQUISITE_CODE, everyoneElseCode, inRolloutCode, isPrerequisiteCode, notInRolloutCode, prerequisiteReason } from './outcomes.js';
import { compilePrerequisites, firstUnmet, foldPrerequisites, type PrerequisitePlan } from './prerequisites.js';
import { compileRule, ruleMatches, SeedIndex, type CompiledRule } from './rules.js';
import { Scratch } from './scratch.js';
import { chooseVariant, compileVariants, type VariantPlan } from './variants.js';

export { NO_VARIANT } from './model.js';
export type { CompiledFlagSet, CompileOptions, EvaluationContext, FlagDefinition, PrerequisiteDefinition, RuleDefinition, VariantDefinition } from './model.js';

/** Bucket in [0, 100): murmur3_x86_32(`${flagKey}:${identifier}`, 0) % 100. */
export function bucketOf(flagKey: string, identifier: string): number {
  return murmur3_x86_32(`${flagKey}:${identifier}`, 0) % 100;
}

export { codeOf, variantOf, enabledOf } from './answer-codec.js';

/*
 * How evaluateInto answers a flag (FlagSet.isVarying): which loop, if any, runs its pipeline, so
 * that the seed rules' loop knows whether it was answered already. Module constants rather than an
 * enum: tsc emits this package's enums as objects, and the seed loop would read one per flag.
 */
/** Its base answer, unless a seed rule names the context (the array's initial 0). */
const FIXED = 0;
/** Stage 4 or 5 alone, in the rolloutOnly or weightsOnly loop: the pipeline still runs when a seed rule names the context. */
const ONE_STAGE = 1;
/** The whole pipeline, in the varying, gated or dependents' loop: a seed rule naming the context changes nothing more. */
const PIPELINE = 2;

/** One flag, compiled for the pipeline. */
interface CompiledFlag {
  /** Whether the pipeline runs for it; false: it answers offCode for every context. */
  readonly enabled: boolean;
  /** Its answer when not enabled: disabled, or a prerequisite never met (the position in the code, docs/prerequisites.md). */
  readonly offCode: number;
  /** Its rules tried one by one, in order; null when its seed rules (if any) are in the set's SeedIndex. */
  readonly ordered: readonly CompiledRule[] | null;
  /** Whether it has seed rules in the SeedIndex. */
  readonly indexed: boolean;
  /** Per rule rank, its packed answer (for the SeedIndex's answers). */
  readonly ruleAnswers: Int32Array;
  /** What everyone else gets when it does not depend on the bucket; -1: from the rollout. */
  readonly everyoneElse: number;
  readonly rollout: number;
  readonly inRollout: number;
  readonly notInRollout: number;
  /** "<key>:" absorbed into murmur3's state: the bucket hashes only the identifier. */
  readonly bucketPrefix: Murmur3State;
  readonly variants: VariantPlan | null;
  /** Its prerequisites (stage 2), or null. */
  readonly prerequisites: PrerequisitePlan | null;
  /** Per prerequisite, the parent's key (for the reason). */
  readonly parentKeys: readonly string[];
}

/** Whether a flag's rules must be tried one by one (conditions, or a rollout of their own) rather than looked up. */
const triedInOrder = (def: FlagDefinition) => def.rules.some((rule) => rule.enabled === true && (rule.type === 'conditions' || (rule.rolloutPercentage ?? 100) < 100));

class FlagSet implements CompiledFlagSet {
  readonly size: number;
  readonly keys: readonly string[];
  readonly baseCodes: Uint8Array;
  readonly rollouts: Uint32Array;
  readonly inRolloutCodes: Uint8Array;
  readonly variants: readonly (readonly VariantDefinition[] | null)[];
  readonly splits: Uint32Array;
  readonly hasVariants: boolean;
  readonly baseVariants: Uint8Array;
  private readonly scratch = new Scratch();
  private readonly table: ConditionTable;
  private readonly seeds: SeedIndex;
  private readonly flags: readonly CompiledFlag[];
  /**
   * The flags whose answer, unless a seed rule names the context, is their rollout (no rules tried
   * in order, no variants): stage 4 is all that runs for them, in one loop.
   */
  private readonly rolloutOnly: Uint32Array;
  /** The flags whose answer, unless a seed rule names the context, is on with a variant chosen by weight: stage 5 alone, in one loop. */
  private readonly weightsOnly: Uint32Array;
  /** The other flags whose answer may differ per context when no seed rule names it: rules tried in order, a rollout with variants. */
  private readonly varying: Uint32Array;
  /**
   * Where the gated flags (ConditionTable.gateOf: every rule needs an IN condition's value, and
   * no rule serving leaves the base answer) that a context's values let through are written: only
   * they run the pipeline, the others keep their base answer.
   */
  private readonly gatedCandidates: Int32Array;
  /** Per flag, FIXED, ONE_STAGE or PIPELINE. */
  private readonly isVarying: Uint8Array;
  private readonly isSplit: Uint8Array;
  /** The enabled flags with prerequisites, parents before children: evaluated last, once their parents are answered. */
  private readonly dependents: Uint32Array;
  /** Per flag with prerequisites, it and its ancestors, parents first: what evaluating it alone evaluates. */
  private readonly closures: readonly (Uint32Array | null)[];
  /** Whether a prerequisite names variants: evaluateInto then knows every variant even when not asked for them. */
  private readonly needsVariants: boolean;
  /** The codes and variants stage 2 reads: evaluateInto's arrays, or these for one flag's closure. */
  private readonly ownCodes: Uint8Array;
  private readonly ownVariants: Uint8Array;
  private parentCodes: Uint8Array;
  private parentVariants: Uint8Array | undefined;

  constructor(defs: readonly FlagDefinition[], options: CompileOptions) {
    this.size = defs.length;
    this.keys = Object.freeze(defs.map((def) => def.key));
    this.table = new ConditionTable(this.scratch, options);
    this.seeds = new SeedIndex(defs.length, this.scratch);
    const prerequisites = compilePrerequisites(defs);
    const neverMet = foldPrerequisites(defs, prerequisites);
    this.flags = defs.map((def, index) => this.compileFlag(def, index, prerequisites.plans[index]!, neverMet[index]!));
    this.dependents = Uint32Array.from([...prerequisites.dependents].filter((index) => this.flags[index]!.enabled));
    this.closures = prerequisites.closures;
    this.needsVariants = prerequisites.needsVariants;
    this.ownCodes = new Uint8Array(this.size);
    this.ownVariants = new Uint8Array(this.size);
    this.parentCodes = this.ownCodes;
    this.parentVariants = this.ownVariants;
    this.baseCodes = Uint8Array.from(this.flags, (flag) => (flag.enabled ? Math.max(flag.everyoneElse, 0) : flag.offCode));
    const rollouts = this.flags.flatMap((flag, index) => (flag.enabled && flag.everyoneElse < 0 ? [index] : []));
    this.rollouts = Uint32Array.from(rollouts);
    this.inRolloutCodes = Uint8Array.from(rollouts, (index) => this.flags[index]!.inRollout);
    this.splits = Uint32Array.from(this.flags.flatMap((flag, index) => (flag.enabled && flag.variants !== null && flag.variants.only < 0 ? [index] : [])));
    this.isSplit = new Uint8Array(this.size);
    for (const index of this.splits) this.isSplit[index] = 1;
    this.hasVariants = this.flags.some((flag) => flag.variants !== null);
    // Where no rule serves and the weights leave no choice, the variant follows the code.
    this.baseVariants = Uint8Array.from(this.flags, (flag, index) => {
      const plan = flag.variants;
      if (plan === null) return NO_VARIANT;
      if (!flag.enabled || flag.everyoneElse < 0 || ENABLED[this.baseCodes[index]!] === 0) return plan.off;
      return plan.only >= 0 ? plan.only : NO_VARIANT;
    });
    // Which stages can make a flag's answer differ per context, short of a seed rule naming it.
    // A flag with prerequisites is answered after its parents, in the dependents' loop.
    const indexes = (which: (flag: CompiledFlag, index: number) => boolean) => Uint32Array.from(this.flags.flatMap((flag, index) => (flag.enabled && flag.prerequisites === null && which(flag, index) ? [index] : [])));
    const seedsOnly = (flag: CompiledFlag) => flag.ordered === null;
    this.rolloutOnly = indexes((flag) => seedsOnly(flag) && flag.variants === null && flag.everyoneElse < 0);
    this.weightsOnly = indexes((flag, index) => seedsOnly(flag) && this.isSplit[index] === 1 && flag.everyoneElse >= 0 && ENABLED[flag.everyoneElse] === 1);
    const gatesOf = this.flags.map((flag, index) => (flag.enabled && flag.prerequisites === null ? this.gatesOf(flag, index) : null));
    const gated = Uint32Array.from(gatesOf.flatMap((gates, index) => (gates === null ? [] : [index])));
    const isGated = Uint8Array.from(gatesOf, (gates) => (gates === null ? 0 : 1));
    let room = 0;
    for (const index of gated) for (const gate of gatesOf[index]!) room += this.table.gate(gate, index);
    this.gatedCandidates = new Int32Array(room);
    this.varying = indexes((flag, index) => isGated[index] === 0 && (flag.ordered !== null || (flag.variants !== null && flag.everyoneElse < 0)));
    this.isVarying = new Uint8Array(this.size).fill(FIXED);
    for (const index of [...this.rolloutOnly, ...this.weightsOnly]) this.isVarying[index] = ONE_STAGE;
    for (const index of [...this.varying, ...gated, ...this.dependents]) this.isVarying[index] = PIPELINE;
    this.variants = Object.freeze(defs.map((def, index) => (this.flags[index]!.variants === null ? null : Object.freeze(def.variants!.map(({ key, value, weight }) => Object.freeze({ key, value, weight }))))));
  }

  get patternCount(): number {
    return this.table.patterns.size;
  }

  evaluateInto(ctx: EvaluationContext, codes: Uint8Array, asked?: Uint8Array): boolean {
    this.scratch.begin(ctx);
    codes.set(this.baseCodes);
    // Stage 2 reads the parents' variants: known even when the caller does not ask for them.
    const variants = asked !== undefined || !this.needsVariants ? asked : this.ownVariants;
    const withVariants = variants !== undefined && this.hasVariants;
    if (withVariants) variants.set(this.baseVariants);
    // Only a set with prerequisites reads them (two field writes cost a one-flag set a third of its time).
    if (this.dependents.length > 0) {
      this.parentCodes = codes;
      this.parentVariants = withVariants ? variants : undefined;
    }
    let served = false;
    // A seed rule that names the context overrides these below (the pipeline runs for it then).
    const { rolloutOnly, weightsOnly, flags, scratch } = this;
    for (let i = 0; i < rolloutOnly.length; i++) {
      const index = rolloutOnly[i]!;
      const flag = flags[index]!;
      codes[index] = this.rolloutCode(flag, scratch.hash(flag.bucketPrefix) % 100);
    }
    if (withVariants) {
      for (let i = 0; i < weightsOnly.length; i++) {
        const index = weightsOnly[i]!;
        variants[index] = chooseVariant(flags[index]!.variants!, true, -1, scratch);
      }
    }
    const { varying } = this;
    for (let i = 0; i < varying.length; i++) {
      const index = varying[i]!;
      const packed = this.answerOf(index, ctx);
      codes[index] = codeOf(packed);
      if (withVariants) variants[index] = variantOf(packed);
      if (ruleServed(packed)) served = true;
    }
    const { gatedCandidates } = this;
    if (gatedCandidates.length > 0) {
      const count = this.table.gatedFlags(ctx, gatedCandidates);
      for (let i = 0; i < count; i++) {
        const index = gatedCandidates[i]!;
        const packed = this.answerOf(index, ctx);
        codes[index] = codeOf(packed);
        if (withVariants) variants[index] = variantOf(packed);
        if (ruleServed(packed)) served = true;
      }
    }
    // A flag whose only way to differ is a seed rule: evaluated when one names the context.
    const { seeds } = this;
    const matched = seeds.matchedCount();
    for (let i = 0; i < matched; i++) {
      const index = seeds.matched[i]!;
      if (this.isVarying[index] === PIPELINE) continue; // answered above
      const packed = this.answerOf(index, ctx);
      codes[index] = codeOf(packed);
      if (withVariants) variants[index] = variantOf(packed);
      served = true;
    }
    // Flags with prerequisites, parents first: each reads its parents' answers written above.
    const { dependents } = this;
    if (dependents.length === 0) return served;
    for (let i = 0; i < dependents.length; i++) {
      const index = dependents[i]!;
      const packed = this.answerOf(index, ctx);
      const code = codeOf(packed);
      codes[index] = code;
      if (withVariants) variants[index] = variantOf(packed);
      if (ruleServed(packed) || isPrerequisiteCode(code)) served = true;
    }
    return served;
  }

  evaluateFlag(ctx: EvaluationContext, index: number): PackedAnswer {
    this.scratch.begin(ctx);
    return withoutRule(this.alone(index, ctx));
  }

  answer(ctx: EvaluationContext, index: number): Answer {
    this.scratch.begin(ctx);
    const packed = this.alone(index, ctx);
    const code = codeOf(packed);
    return { outcome: OUTCOMES[code]!, reason: this.reasonOf(index, code), prerequisite: this.prerequisiteOf(index, code), variant: variantOf(packed), rule: ruleOf(packed), kind: this.reasonKind(index, code) };
  }

  reasonOf(index: number, code: number): string {
    const key = this.prerequisiteOf(index, code);
    return key === null ? OUTCOMES[code]!.reason : prerequisiteReason(key);
  }

  prerequisiteOf(index: number, code: number): string | null {
    return isPrerequisiteCode(code) ? (this.flags[index]?.parentKeys[code - PREREQUISITE_CODE] ?? null) : null;
  }

  /** One flag's packed answer: with prerequisites, its ancestors first, each once, parents before children. */
  private alone(index: number, ctx: EvaluationContext): PackedAnswer {
    const closure = this.closures[index];
    if (closure === null || closure === undefined || !this.flags[index]!.enabled) return this.answerOf(index, ctx);
    const { ownCodes, ownVariants } = this;
    this.parentCodes = ownCodes;
    this.parentVariants = ownVariants;
    let packed = 0;
    for (let i = 0; i < closure.length; i++) {
      const flag = closure[i]!;
      packed = this.answerOf(flag, ctx);
      ownCodes[flag] = codeOf(packed);
      ownVariants[flag] = variantOf(packed);
    }
    return packed;
  }

  reasonKind(index: number, code: number): ReasonKind {
    const { kind } = OUTCOMES[code]!;
    return kind === 'STATIC' && this.isSplit[index] === 1 ? 'SPLIT' : kind;
  }

  /** The pipeline: the flag's answer for the scratch's context (answer-codec.ts). */
  private answerOf(index: number, ctx: EvaluationContext): PackedAnswer {
    const flag = this.flags[index]!;
    // 1. Disabled: off, rules not consulted (or a prerequisite never met, folded at compile time).
    if (!flag.enabled) return this.withVariant(flag, flag.offCode, NO_RULE);
    // 2. Prerequisites: off when one is not met, naming the first (its position is in the code);
    //    the parents were answered before (docs/prerequisites.md).
    const prerequisites = flag.prerequisites;
    if (prerequisites !== null) {
      const unmet = firstUnmet(prerequisites, this.parentCodes, this.parentVariants);
      if (unmet >= 0) return this.withVariant(flag, PREREQUISITE_CODE + unmet, NO_RULE);
    }
    // 3. Rules: the first that matches the context and whose own rollout takes it serves.
    let bucket = -1;
    const rules = flag.ordered;
    if (rules === null) {
      const rank = flag.indexed ? this.seeds.rankOf(index) : -1;
      if (rank >= 0) return this.withVariant(flag, flag.ruleAnswers[rank]!, rank);
    } else {
      for (let r = 0; r < rules.length; r++) {
        const rule = rules[r]!;
        if (!ruleMatches(rule, ctx, this.scratch, this.table)) continue;
        if (rule.rollout < 100) {
          if (bucket < 0) bucket = this.scratch.hash(flag.bucketPrefix) % 100;
          if (bucket >= rule.rollout) continue;
        }
        return this.withVariant(flag, rule.answer, rule.rank);
      }
    }
    // 4. Everyone else: off, on, or the rollout by bucket.
    let code = flag.everyoneElse;
    if (code < 0) code = this.rolloutCode(flag, bucket >= 0 ? bucket : this.scratch.hash(flag.bucketPrefix) % 100);
    return this.withVariant(flag, code, NO_RULE);
  }

  /**
   * The gates of a flag (enabled, without prerequisites), one per rule, or null when it is not
   * gated: it is when its rules are tried in order, each has a gate (ConditionTable.gateOf), and
   * when none serves its answer is its base one (a fixed everyone-else code, and a variant the
   * weights do not choose).
   */
  private gatesOf(flag: CompiledFlag, index: number): number[] | null {
    if (flag.ordered === null || flag.everyoneElse < 0) return null;
    if (this.isSplit[index] === 1 && ENABLED[flag.everyoneElse] === 1) return null;
    const gates = flag.ordered.map((rule) => (rule.conditions === null ? -1 : this.table.gateOf(rule.conditions)));
    return gates.includes(-1) ? null : gates;
  }

  /** Stage 4's rollout: in when the context's bucket is below the flag's percentage. */
  private rolloutCode(flag: CompiledFlag, bucket: number): number {
    return bucket < flag.rollout ? flag.inRollout : flag.notInRollout;
  }

  /** 5. The variant, for a flag that has them: `answer` (a code, and the rule that served) with its variant. */
  private withVariant(flag: CompiledFlag, answer: PackedAnswer, rank: number): PackedAnswer {
    const plan = flag.variants;
    return plan === null ? answer : withVariant(answer, chooseVariant(plan, ENABLED[codeOf(answer)] === 1, rank, this.scratch));
  }

  private compileFlag(def: FlagDefinition, index: number, prerequisites: PrerequisitePlan | null, neverMet: number): CompiledFlag {
    // A prerequisite that no context meets answers for every context, as a disabled flag does.
    const enabled = def.enabled && neverMet < 0;
    const ruleAnswers = new Int32Array(def.rules.length);
    const compiled: CompiledRule[] = [];
    if (enabled) {
      def.rules.forEach((rule, rank) => {
        const one = compileRule(rule, rank, this.table);
        if (one === null) return;
        ruleAnswers[rank] = one.answer;
        compiled.push(one);
      });
    }
    const ordered = enabled && triedInOrder(def) ? compiled : null;
    if (ordered === null) for (const rule of compiled) this.seeds.add(index, rule);
    const n = def.rolloutPercentage;
    const everyoneElse = everyoneElseCode(def);
    return {
      enabled,
      offCode: def.enabled ? PREREQUISITE_CODE + neverMet : DISABLED_CODE,
      ordered,
      indexed: ordered === null && compiled.length > 0,
      ruleAnswers,
      everyoneElse,
      rollout: n,
      inRollout: everyoneElse < 0 ? inRolloutCode(n) : 0,
      notInRollout: everyoneElse < 0 ? notInRolloutCode(n) : 0,
      bucketPrefix: murmur3_x86_32_state(hashKeyOf(def) + ':', 0),
      variants: compileVariants(def),
      prerequisites,
      parentKeys: prerequisites === null ? [] : (def.prerequisites ?? []).map((p) => p.flagKey),
    };
  }
}

export function compileFlagSet(defs: readonly FlagDefinition[], options: CompileOptions = {}): CompiledFlagSet {
  // Not frozen: reading the fields of a frozen class instance cost V8 twice as much in the hot loop.
  return new FlagSet(defs, options);
}

/** The outcome of one flag for a context, compiled on the spot: for tests and one-off use, not for a hot path. */
export function evaluateFlag(def: FlagDefinition, ctx: EvaluationContext, options?: CompileOptions): Outcome {
  return OUTCOMES[codeOf(compileFlagSet([def], options).evaluateFlag(ctx, 0))]!;
}

/** The variant (key and value) one flag serves a context, compiled on the spot (null: the flag has no variants): for tests and one-off use. */
export function evaluateVariant(def: FlagDefinition, ctx: EvaluationContext, options?: CompileOptions): VariantDefinition | null {
  const set = compileFlagSet([def], options);
  return set.variants[0]?.[variantOf(set.evaluateFlag(ctx, 0))] ?? null;
}
