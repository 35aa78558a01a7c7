import { Type } from 'typebox';

export const RulesetQuery = Type.Object({
  environment: Type.String({ minLength: 1, maxLength: 64, description: 'environment key' }),
  project: Type.Optional(Type.String({ maxLength: 64, description: 'project id: only with an API token of every project (a project-scoped token names its own)' })),
});

export const Ruleset = Type.Object(
  {
    format: Type.Union([Type.Literal(1), Type.Literal(2)], { description: '2 when a flag has prerequisites (an SDK that knows only 1 refuses it rather than ignore them), else 1' }),
    environment: Type.String(),
    revision: Type.Integer({ description: "the project's revision when the ruleset was built" }),
    flags: Type.Array(Type.Unknown(), { description: 'flag definitions as the engine compiles them, in evaluation order' }),
    segments: Type.Record(Type.String(), Type.Array(Type.Unknown()), { description: 'the conditions of each segment the flags name' }),
  },
  { description: 'Everything local evaluation needs (docs/local-evaluation.md)' },
);

/** Counts of one report: non-negative integers, far below what the bigint columns hold. */
const Count = Type.Integer({ minimum: 0, maximum: 1_000_000_000_000 });

export const UsageBody = Type.Object({
  report_id: Type.String({ format: 'uuid', description: "the report's id, chosen by the SDK: a report sent again with it is counted once" }),
  environment: Type.String({ minLength: 1, maxLength: 64 }),
  started_at: Type.String({ format: 'date-time' }),
  ended_at: Type.String({ format: 'date-time' }),
  flags: Type.Record(
    Type.String(),
    Type.Object({
      enabled: Count,
      disabled: Count,
      variants: Type.Optional(Type.Record(Type.String(), Count, { maxProperties: 50, propertyNames: { minLength: 1, maxLength: 100 } })),
    }),
    { maxProperties: 1000, propertyNames: { minLength: 1, maxLength: 100 }, description: 'per flag key: how often it answered enabled and disabled (and each variant)' },
  ),
});

export const UsageAccepted = Type.Object({ accepted: Type.Integer({ description: 'flags of the report that were counted (unknown keys are ignored); for a report sent again, the answer it had' }) });
