import { Type } from 'typebox';
import { Name, Timestamp, Uuid } from '../../http/schemas.js';

export const EXPERIMENT_STATUSES = ['draft', 'running', 'stopped'] as const;
export type ExperimentStatus = (typeof EXPERIMENT_STATUSES)[number];
export const METRIC_ROLES = ['primary', 'secondary', 'guardrail'] as const;

const Arm = Type.String({ minLength: 1, maxLength: 100, description: "an arm of the flag: one of its variant keys, or on / off for a flag without variants" });
const Note = Type.Union([Type.String({ maxLength: 2000 }), Type.Null()]);
const ExperimentMetric = Type.Object({ metric_id: Uuid, role: Type.Enum([...METRIC_ROLES]) });

export const Experiment = Type.Object(
  {
    id: Uuid,
    project_id: Uuid,
    environment_id: Uuid,
    flag_id: Uuid,
    flag_key: Type.String(),
    name: Type.String(),
    hypothesis: Type.Union([Type.String(), Type.Null()]),
    control: Type.String(),
    metrics: Type.Array(ExperimentMetric),
    alpha: Type.Number(),
    sequential: Type.Boolean(),
    sequential_tuning: Type.Integer(),
    cuped: Type.Boolean(),
    cuped_lookback_days: Type.Integer(),
    min_units: Type.Integer(),
    status: Type.Enum([...EXPERIMENT_STATUSES]),
    expected_shares: Type.Union([Type.Record(Type.String(), Type.Number()), Type.Null()], { description: "each arm's expected share of the units, fixed at start; null before" }),
    decision: Type.Union([Type.String(), Type.Null()]),
    note: Type.Union([Type.String(), Type.Null()]),
    created_at: Timestamp,
    updated_at: Timestamp,
    started_at: Type.Union([Timestamp, Type.Null()]),
    stopped_at: Type.Union([Timestamp, Type.Null()]),
  },
  { $id: 'Experiment' },
);

export const CreateExperimentBody = Type.Object({
  flag_id: Uuid,
  name: Name,
  hypothesis: Type.Optional(Note),
  control: Arm,
  metrics: Type.Array(ExperimentMetric, { minItems: 1, maxItems: 20, description: 'each metric of the project once' }),
  alpha: Type.Optional(Type.Number({ minimum: 0.001, maximum: 0.2, description: 'default 0.05' })),
  sequential: Type.Optional(Type.Boolean({ description: 'default false' })),
  sequential_tuning: Type.Optional(Type.Integer({ minimum: 1, maximum: 1_000_000_000, description: 'the expected number of units the confidence sequence is tuned for; default 5000' })),
  cuped: Type.Optional(Type.Boolean({ description: 'default false' })),
  cuped_lookback_days: Type.Optional(Type.Integer({ minimum: 1, maximum: 60, description: 'default 14' })),
  min_units: Type.Optional(Type.Integer({ minimum: 1, maximum: 1_000_000_000, description: 'per arm, before the results say there is enough data; default 100' })),
});

export const StopExperimentBody = Type.Object({
  decision: Type.Optional(Type.Union([Arm, Type.Null()], { description: 'the arm chosen; the flag is not changed' })),
  note: Type.Optional(Note),
});

export const ExperimentParams = Type.Object({ project_id: Uuid, env_id: Uuid, experiment_id: Uuid });

const Estimate = Type.Object({
  estimate: Type.Number(),
  ci: Type.Tuple([Type.Number(), Type.Number()], { description: 'the interval at 1 − alpha (a confidence sequence when the experiment is sequential)' }),
  p_value: Type.Number(),
});

export const ExperimentResults = Type.Object(
  {
    computed_at: Timestamp,
    units: Type.Integer({ description: 'every exposed unit, those exposed to more than one arm included' }),
    arms: Type.Record(Type.String(), Type.Object({ units: Type.Integer(), expected_share: Type.Number() })),
    srm: Type.Object({ p_value: Type.Number(), flagged: Type.Boolean() }, { description: "the sample-ratio check: the arms' units against their expected shares" }),
    multiple_exposures: Type.Object({ units: Type.Integer(), share: Type.Number() }, { description: 'units exposed to more than one arm: left out of every other figure' }),
    metrics: Type.Array(
      Type.Object({
        metric_id: Uuid,
        key: Type.String(),
        role: Type.Enum([...METRIC_ROLES]),
        arms: Type.Record(Type.String(), Type.Object({ units: Type.Integer(), mean: Type.Number(), variance: Type.Number() })),
        versus_control: Type.Record(
          Type.String(),
          Type.Object({
            absolute: Estimate,
            relative: Type.Union([Estimate, Type.Null()], { description: 'null when the control mean is 0' }),
            chance_to_win: Type.Union([Type.Number(), Type.Null()]),
            significant: Type.Boolean({ description: 'the relative interval excludes 0' }),
            cuped_applied: Type.Boolean(),
          }),
        ),
      }),
    ),
    enough_data: Type.Boolean({ description: 'every arm with a positive expected share has at least min_units units' }),
  },
  { $id: 'ExperimentResults' },
);
