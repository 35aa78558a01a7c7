import { Type, type Static } from 'typebox';
import { Timestamp, Uuid } from '../../http/schemas.js';

export const RELEASE_STATUSES = ['running', 'paused', 'rolled_back', 'aborted', 'completed'] as const;
export type ReleaseStatus = (typeof RELEASE_STATUSES)[number];
/** A release that still moves (the releaser checks it); the others have ended. */
export const LIVE_STATUSES: readonly ReleaseStatus[] = ['running', 'paused'];
/** What a check decided (docs/releases.md, "Decisions"). */
export const CHECK_DECISIONS = ['roll_back', 'pause', 'advance', 'complete', 'wait'] as const;
export type CheckDecision = (typeof CHECK_DECISIONS)[number];
export const GUARDRAIL_DECISIONS = ['harmful', 'no_harm', 'not_enough_data'] as const;
export type GuardrailDecision = (typeof GUARDRAIL_DECISIONS)[number];

export const RELEASE_DEFAULTS = { steps: [5, 10, 25, 50, 100], hold_seconds: 3600, check_seconds: 300, min_units: 100, tolerance: 0 } as const;

const Guardrail = Type.Object(
  {
    metric_id: Uuid,
    tolerance: Type.Optional(
      Type.Number({ minimum: 0, description: 'the largest harm accepted, in the metric’s own unit per unit (e.g. 0.002 more errors per user); default 0' }),
    ),
  },
  { additionalProperties: false },
);

export const CreateReleaseBody = Type.Object(
  {
    steps: Type.Optional(
      Type.Array(Type.Integer({ minimum: 1, maximum: 100 }), {
        minItems: 2,
        maxItems: 10,
        description: 'rollout percentages, increasing, the last 100; default [5, 10, 25, 50, 100]',
      }),
    ),
    hold_seconds: Type.Optional(Type.Integer({ minimum: 10, maximum: 31_536_000, description: 'the least time at each step; default 3600' })),
    check_seconds: Type.Optional(Type.Integer({ minimum: 10, maximum: 86_400, description: 'how often it is analysed; default 300' })),
    min_units: Type.Optional(Type.Integer({ minimum: 1, maximum: 10_000_000, description: 'units each side needs before any decision; default 100' })),
    guardrails: Type.Array(Guardrail, { minItems: 1, maxItems: 10, description: 'metrics of the project that must not get worse, each once' }),
    treatment: Type.Optional(Type.String({ minLength: 1, maxLength: 100, description: 'a variant key of a flag with variants: the rollout serves it, everyone else the off variant; default on' })),
  },
  { additionalProperties: false },
);
export type CreateReleaseBody = Static<typeof CreateReleaseBody>;

const Sides = Type.Object({ treatment: Type.Number(), control: Type.Number() });

export const GuardrailFigures = Type.Object({
  metric_id: Uuid,
  metric_key: Type.String(),
  better: Type.Enum(['higher', 'lower']),
  tolerance: Type.Number(),
  units: Sides,
  means: Sides,
  difference: Type.Number({ description: 'treatment mean − control mean' }),
  bound: Type.Union([Type.Number(), Type.Null()], {
    description: "the one-sided confidence sequence's bound of the difference on the better side; null before each side has min_units and a standard error",
  }),
  limit: Type.Number({ description: 'the tolerance on the worse side of 0: −tolerance when higher is better, +tolerance when lower is; a bound beyond it rolls back' }),
  detectable_harm: Type.Union([Type.Number(), Type.Null()], { description: "the bound's distance from the difference: the smallest harm beyond the tolerance this check could have detected" }),
  decision: Type.Enum([...GUARDRAIL_DECISIONS]),
});
export type GuardrailFigures = Static<typeof GuardrailFigures>;

export const ReleaseCheck = Type.Object({
  at: Timestamp,
  step: Type.Integer({ description: 'the rollout percentage when it was checked' }),
  monitored: Type.Boolean({ description: 'false above 50 %: no control is left, the step advances on its hold time alone' }),
  units: Sides,
  srm: Type.Object({ p_value: Type.Number(), flagged: Type.Boolean() }),
  guardrails: Type.Array(GuardrailFigures),
  decision: Type.Enum([...CHECK_DECISIONS]),
  explanation: Type.String({ description: 'the decision in words' }),
});
export type ReleaseCheck = Static<typeof ReleaseCheck>;

export const Release = Type.Object(
  {
    id: Uuid,
    project_id: Uuid,
    environment_id: Uuid,
    flag_id: Uuid,
    flag_key: Type.String(),
    steps: Type.Array(Type.Integer()),
    hold_seconds: Type.Integer(),
    check_seconds: Type.Integer(),
    min_units: Type.Integer(),
    guardrails: Type.Array(Type.Object({ metric_id: Uuid, tolerance: Type.Number() })),
    treatment: Type.String({ description: 'what the rollout serves: on, or a variant key' }),
    control: Type.String({ description: 'what everyone else is served: off, or the off variant' }),
    status: Type.Enum([...RELEASE_STATUSES]),
    current_step: Type.Integer({ description: 'index into steps' }),
    rollout_percentage: Type.Integer({ description: 'steps[current_step]' }),
    step_started_at: Timestamp,
    reason: Type.Union([Type.String(), Type.Null()], { description: 'why it paused or ended, in words; null while it runs as planned' }),
    created_by: Type.Object({ user_id: Type.Union([Uuid, Type.Null()]), email: Type.Union([Type.String(), Type.Null()]) }),
    change_request_id: Type.Union([Uuid, Type.Null()], { description: 'the approved change request that created it, else null' }),
    created_at: Timestamp,
    updated_at: Timestamp,
    ended_at: Type.Union([Timestamp, Type.Null()]),
    next_check_at: Type.Union([Timestamp, Type.Null()], { description: 'null once it has ended' }),
    checks: Type.Optional(Type.Array(ReleaseCheck, { description: 'every check, oldest first (GET of one release only)' })),
  },
  { $id: 'Release' },
);

export const FlagReleaseParams = Type.Object({ project_id: Uuid, env_id: Uuid, flag_id: Uuid });
export const ReleaseParams = Type.Object({ project_id: Uuid, env_id: Uuid, flag_id: Uuid, release_id: Uuid });
