import { Type } from 'typebox';
import { PREREQUISITE_LIMITS, VARIANT_LIMITS } from '@guidon/engine';
import { Description, Name, Timestamp, Uuid } from '../../http/schemas.js';
import { Conditions } from '../segments/segments.schemas.js';

export const FlagKey = Type.String({ pattern: '^[a-z][a-z0-9_-]*$', maxLength: 100, description: 'a-z, 0-9, _ and -; starts with a letter; unique per environment' });
export const RolloutPercentage = Type.Integer({ minimum: 0, maximum: 100 });
/** Who no rule served (docs/targeting.md): the rollout or nobody. */
export const EveryoneElse = Type.Union([Type.Literal('rollout'), Type.Literal('off')], { description: "rollout: the flag's rollout_percentage (default); off: a user no rule served gets false" });

/**
 * What a flag serves besides on/off (docs/variants.md). Type.Unknown: any JSON, checked in
 * variants.ts; its limits, from the engine, also as `x-max-bytes` and `x-max-depth` for the
 * dashboard's generated fields.ts.
 */
const VariantValue = Type.Unknown({
  description: `any JSON of at most ${VARIANT_LIMITS.valueBytes / 1024} KiB and ${VARIANT_LIMITS.valueDepth} levels of arrays and objects, numbers within ±(2^53−1); all values of one flag have one JSON type (string, number, boolean, or object/array)`,
  'x-max-bytes': VARIANT_LIMITS.valueBytes,
  'x-max-depth': VARIANT_LIMITS.valueDepth,
});
const VariantWeight = Type.Integer({ minimum: 0, maximum: VARIANT_LIMITS.totalWeight, description: `in 0.1% steps; the weights of a flag sum to exactly ${VARIANT_LIMITS.totalWeight}` });
const Variant = Type.Object({ key: Type.String(), value: VariantValue, weight: Type.Integer(), description: Type.Optional(Type.String()) });
const VariantKey = Type.String({ pattern: '^[a-z][a-z0-9_-]*$', maxLength: 100, description: 'flag-key syntax (a-z, 0-9, _ and -; starts with a letter); unique in the flag' });
export const VariantBody = Type.Object({ key: VariantKey, value: VariantValue, weight: VariantWeight, description: Type.Optional(Description) });
export const Variants = Type.Array(VariantBody, { description: `0–${VARIANT_LIMITS.variants} variants; [] for none`, maxItems: VARIANT_LIMITS.variants });
export const OffVariant = Type.Union([Type.String({ maxLength: 100 }), Type.Null()], { description: 'the variant served when the flag answers enabled: false; required with variants, null without' });
/** docs/flags-as-code.md: what the rollout and variant hashes use instead of the flag's key. */
export const BucketingKey = Type.Union([Type.String({ pattern: '^[A-Za-z0-9._~:-]{1,100}$', minLength: 1, maxLength: 100 }), Type.Null()], {
  description: "hashed instead of the flag's key for the rollout bucket and the variant (1–100 of A-Z a-z 0-9 . _ ~ : -); null: the key. Keeps users' buckets when a flag is renamed or comes from another system",
});
/** docs/prerequisites.md: a flag of the same environment this one needs. */
export const PrerequisiteBody = Type.Object({
  flag_key: FlagKey,
  enabled: Type.Optional(Type.Boolean({ description: 'the state the flag must answer (default true)' })),
  variants: Type.Optional(Type.Union([Type.Array(Type.String({ maxLength: 100 }), { minItems: 1, maxItems: VARIANT_LIMITS.variants, description: "with enabled true only: keys of that flag's variants, one of which it must serve" }), Type.Null()])),
});
export const Prerequisites = Type.Array(PrerequisiteBody, {
  maxItems: PREREQUISITE_LIMITS.perFlag,
  description: `0–${PREREQUISITE_LIMITS.perFlag} flags of the same environment, by key, that must be met (in order; the first unmet is named) before the rules are consulted; chains up to ${PREREQUISITE_LIMITS.depth} links, no cycles`,
});
const Prerequisite = Type.Object({ flag_key: Type.String(), enabled: Type.Boolean(), variants: Type.Optional(Type.Array(Type.String())) });

export const RuleVariant = Type.Union([Type.String({ maxLength: 100 }), Type.Null()], { description: "a key of the flag's variants: the users the rule serves get it; null: the weights choose" });

export const Flag = Type.Object(
  {
    id: Uuid,
    project_id: Uuid,
    environment_id: Uuid,
    name: Type.String(),
    key: Type.String(),
    description: Type.Union([Type.String(), Type.Null()]),
    enabled: Type.Boolean(),
    rollout_percentage: Type.Integer(),
    everyone_else: EveryoneElse,
    variants: Type.Array(Variant, { description: 'docs/variants.md; [] for a flag that serves only on/off' }),
    off_variant: Type.Union([Type.String(), Type.Null()]),
    bucketing_key: Type.Union([Type.String(), Type.Null()]),
    prerequisites: Type.Array(Prerequisite, { description: 'docs/prerequisites.md; [] for a flag that needs no other' }),
    created_at: Timestamp,
    updated_at: Timestamp,
  },
  { $id: 'Flag' },
);

export const CreateFlagBody = Type.Object({
  name: Name,
  key: FlagKey,
  description: Type.Optional(Description),
  enabled: Type.Optional(Type.Boolean()),
  rollout_percentage: Type.Optional(RolloutPercentage),
  everyone_else: Type.Optional(EveryoneElse),
  variants: Type.Optional(Variants),
  off_variant: Type.Optional(OffVariant),
  bucketing_key: Type.Optional(BucketingKey),
  prerequisites: Type.Optional(Prerequisites),
});

export const UpdateFlagBody = Type.Object({
  name: Type.Optional(Name),
  key: Type.Optional(FlagKey),
  description: Type.Optional(Description),
  enabled: Type.Optional(Type.Boolean()),
  rollout_percentage: Type.Optional(RolloutPercentage),
  everyone_else: Type.Optional(EveryoneElse),
  variants: Type.Optional(Variants),
  off_variant: Type.Optional(OffVariant),
  bucketing_key: Type.Optional(BucketingKey),
  prerequisites: Type.Optional(Prerequisites),
});

export const FlagParams = Type.Object({ project_id: Uuid, env_id: Uuid, flag_id: Uuid });

export const RuleType = Type.Union([Type.Literal('user_id'), Type.Literal('user_email'), Type.Literal('email_domain'), Type.Literal('conditions')]);
export const RuleValue = Type.Union([Type.String({ maxLength: 400 }), Type.Null()], { description: 'the seed types\' value; absent or null for conditions' });
const RuleConditions = Type.Union([Conditions, Type.Null()], { description: 'for rule_type conditions: all must hold (docs/targeting.md)' });
export const Serve = Type.Boolean({ description: 'what the rule serves to the users it matches (default true)' });
export const RuleRollout = Type.Integer({ minimum: 0, maximum: 100, description: 'a matched user is served by the rule when their bucket is below it (default 100)' });
export const Priority = Type.Integer({ minimum: -1_000_000, maximum: 1_000_000, description: 'higher is evaluated first' });

export const Rule = Type.Object(
  {
    id: Uuid,
    flag_id: Uuid,
    rule_type: RuleType,
    rule_value: Type.Union([Type.String(), Type.Null()]),
    conditions: Type.Union([Type.Array(Type.Ref('Condition')), Type.Null()]),
    enabled: Type.Boolean(),
    priority: Type.Integer(),
    rollout_percentage: Type.Integer(),
    serve: Type.Boolean(),
    variant: Type.Union([Type.String(), Type.Null()]),
    created_at: Timestamp,
    updated_at: Timestamp,
  },
  { $id: 'Rule' },
);

export const CreateRuleBody = Type.Object({
  rule_type: RuleType,
  rule_value: Type.Optional(RuleValue),
  conditions: Type.Optional(RuleConditions),
  enabled: Type.Optional(Type.Boolean()),
  priority: Type.Optional(Priority),
  rollout_percentage: Type.Optional(RuleRollout),
  serve: Type.Optional(Serve),
  variant: Type.Optional(RuleVariant),
});

export const UpdateRuleBody = Type.Object({
  rule_type: Type.Optional(RuleType),
  rule_value: Type.Optional(RuleValue),
  conditions: Type.Optional(RuleConditions),
  enabled: Type.Optional(Type.Boolean()),
  priority: Type.Optional(Priority),
  rollout_percentage: Type.Optional(RuleRollout),
  serve: Type.Optional(Serve),
  variant: Type.Optional(RuleVariant),
});

export const RuleParams = Type.Object({ project_id: Uuid, env_id: Uuid, flag_id: Uuid, rule_id: Uuid });
