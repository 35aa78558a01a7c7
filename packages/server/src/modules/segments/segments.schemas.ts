import { Type, type Static } from 'typebox';
import { CONDITION_LIMITS } from '@guidon/engine';
import { Description, Name, Timestamp, Uuid } from '../../http/schemas.js';

/**
 * A condition (docs/targeting.md). Operators and values are checked by the engine's conditionProblem,
 * not here, so that a mistake gets a message naming the condition and its operator.
 */
export const Condition = Type.Object(
  {
    attribute: Type.Optional(Type.Union([Type.String({ maxLength: 256 }), Type.Null()], { description: 'absent for IN_SEGMENT' })),
    operator: Type.String({ maxLength: 32, description: 'IN, NOT_IN, STR_CONTAINS, STR_STARTS_WITH, STR_ENDS_WITH, NUM_EQ, NUM_GT, NUM_GTE, NUM_LT, NUM_LTE, DATE_AFTER, DATE_BEFORE, SEMVER_EQ, SEMVER_GT, SEMVER_GTE, SEMVER_LT, SEMVER_LTE, REGEX, IN_CIDR, EXISTS, IN_SEGMENT' }),
    values: Type.Optional(Type.Array(Type.String(), { maxItems: CONDITION_LIMITS.valuesPerCondition, description: 'any may match; none for EXISTS; segment keys for IN_SEGMENT' })),
    negate: Type.Optional(Type.Boolean()),
    case_insensitive: Type.Optional(Type.Boolean()),
  },
  { $id: 'Condition' },
);
/** By reference to the shared schema: a body that holds conditions in several places (a change request's changes) defines Condition once. */
export const Conditions = Type.Array(Type.Unsafe<Static<typeof Condition>>(Type.Ref('Condition')), { minItems: 1, maxItems: CONDITION_LIMITS.conditionsPerRule });

const SegmentKey = Type.String({ pattern: '^[a-z][a-z0-9_-]*$', maxLength: 100, description: 'a-z, 0-9, _ and -; starts with a letter; unique in the project' });

export const Segment = Type.Object(
  {
    id: Uuid,
    project_id: Uuid,
    key: Type.String(),
    name: Type.String(),
    description: Type.Union([Type.String(), Type.Null()]),
    conditions: Type.Array(Type.Ref('Condition')),
    created_at: Timestamp,
    updated_at: Timestamp,
    used_by: Type.Array(Type.Object({ environment_id: Uuid, flag_id: Uuid, flag_key: Type.String() })),
  },
  { $id: 'Segment' },
);

export const CreateSegmentBody = Type.Object({
  key: SegmentKey,
  name: Name,
  description: Type.Optional(Description),
  conditions: Conditions,
});

export const UpdateSegmentBody = Type.Object({
  key: Type.Optional(SegmentKey),
  name: Type.Optional(Name),
  description: Type.Optional(Description),
  conditions: Type.Optional(Conditions),
});

export const SegmentParams = Type.Object({ project_id: Uuid, segment_id: Uuid });
