import { Type } from 'typebox';
import { Timestamp, Uuid } from '../../http/schemas.js';

/** One flag key in one environment, as the side-by-side view shows it (contract §13). */
const FlagInEnvironment = Type.Object({
  flag_id: Uuid,
  enabled: Type.Boolean(),
  rollout_percentage: Type.Integer(),
  rules_count: Type.Integer({ description: 'rules of the flag, enabled or not' }),
  last_evaluated_at: Type.Union([Timestamp, Type.Null()], {
    description: 'start of the latest hour with an evaluation of the flag (hourly precision, from the hourly counts); null when never evaluated',
  }),
  variants: Type.Array(Type.Object({ key: Type.String(), weight: Type.Integer() }), {
    description: "the flag's variants in its order with their weights (of 1000), without values; [] for a flag without variants (contract §15)",
  }),
  off_variant: Type.Union([Type.String(), Type.Null()]),
  prerequisites: Type.Array(Type.Object({ flag_key: Type.String(), enabled: Type.Boolean(), variants: Type.Optional(Type.Array(Type.String())) }), {
    description: 'the flags of the same environment this one needs (docs/prerequisites.md); [] for none',
  }),
  updated_at: Timestamp,
});

export const ProjectFlag = Type.Object(
  {
    key: Type.String(),
    name: Type.String({ description: 'the name in the first environment (by creation) that has the key' }),
    environments: Type.Record(Type.String(), FlagInEnvironment, { description: 'by environment key; an environment without the flag is absent' }),
  },
  { $id: 'ProjectFlag' },
);

export const CopyFlagBody = Type.Object({
  target_environment_id: Uuid,
  overwrite: Type.Optional(Type.Boolean({ description: 'replace a flag with the same key in the target (keeps its id and history)' })),
});
