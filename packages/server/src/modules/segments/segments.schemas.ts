import { Type, type Static } from 'typebox';
import { BUILT_IN_ATTRIBUTES, CONDITION_LIMITS, OPERATOR_TABLE, OPERATORS } from '@guidon/engine';
import { Description, Name, Timestamp, Uuid } from '../../http/schemas.js';

/**
 * What each operator takes, from the engine's table, in the OpenAPI document: the dashboard's
 * editor reads it through its generated fields.ts (packages/web/scripts/openapi.mjs).
 */
const OPERATOR_RULES = Object.fromEntries(
  OPERATORS.map((operator) => {
    const { arity, maxValues, caseInsensitive } = OPERATOR_TABLE[operator];
    return [operator, { values: arity, max_values: maxValues, case_insensitive: caseInsensitive }];
  }),
);
const OPERATOR_TEXT = `one of ${OPERATORS.join(', ')} (docs/targeting.md)`;
const ATTRIBUTE_TEXT = `absent for IN_SEGMENT; built in: ${BUILT_IN_ATTRIBUTES.join(', ')}; any other name is a custom attribute`;
const FEWER = OPERATORS.filter((operator) => OPERATOR_TABLE[operator].arity === 'many' && OPERATOR_TABLE[operator].maxValues < CONDITION_LIMITS.valuesPerCondition);
const VALUES_TEXT = `any may match; none for EXISTS; one for NUM_, DATE_ and SEMVER_; segment keys for IN_SEGMENT; at most ${CONDITION_LIMITS.valuesPerCondition} (${FEWER.map((operator) => `${operator} ${OPERATOR_TABLE[operator].maxValues}`).join(', ')})`;

/** A condition as the API shows it (docs/targeting.md): its operator one of the engine's. */
export const Condition = Type.Object(
  {
    attribute: Type.Optional(Type.Union([Type.String(), Type.Null()], { description: ATTRIBUTE_TEXT, 'x-built-in': [...BUILT_IN_ATTRIBUTES] })),
    operator: Type.Enum([...OPERATORS], { description: OPERATOR_TEXT, 'x-operators': OPERATOR_RULES }),
    values: Type.Optional(Type.Array(Type.String(), { description: VALUES_TEXT })),
    negate: Type.Optional(Type.Boolean()),
    case_insensitive: Type.Optional(Type.Boolean()),
  },
  { $id: 'Condition' },
);

/**
 * A condition as a request sends it ($id ConditionBody: a body that holds conditions in several
 * places, a change request's changes, defines it once). Its operator and values are checked by
 * the engine's conditionProblem, not here, so that a mistake gets a message naming the condition
 * and its operator (an unknown operator too).
 */
export const ConditionBody = Type.Object(
  {
    attribute: Type.Optional(Type.Union([Type.String({ maxLength: 256 }), Type.Null()], { description: ATTRIBUTE_TEXT })),
    operator: Type.String({ maxLength: 32, description: OPERATOR_TEXT }),
    values: Type.Optional(Type.Array(Type.String(), { maxItems: CONDITION_LIMITS.valuesPerCondition, description: VALUES_TEXT })),
    negate: Type.Optional(Type.Boolean()),
    case_insensitive: Type.Optional(Type.Boolean()),
  },
  { $id: 'ConditionBody' },
);
/** By reference to the shared schema (app.ts registers it). */
export const Conditions = Type.Array(Type.Unsafe<Static<typeof ConditionBody>>(Type.Ref('ConditionBody')), { minItems: 1, maxItems: CONDITION_LIMITS.conditionsPerRule });

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
