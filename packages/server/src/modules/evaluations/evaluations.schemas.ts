import { Type } from 'typebox';
import { Timestamp, Uuid } from '../../http/schemas.js';

export const EvaluationItem = Type.Object(
  {
    id: Type.String({ description: 'unique per evaluated flag: <request row>-<flag position>' }),
    environment_id: Uuid,
    flag_id: Uuid,
    flag_key: Type.String(),
    user_id: Type.Union([Type.String(), Type.Null()]),
    enabled: Type.Boolean(),
    reason: Type.String(),
    variant: Type.Union([Type.String(), Type.Null()], { description: 'the variant served (docs/variants.md); null for a flag without variants' }),
    evaluated_at: Timestamp,
  },
  { $id: 'Evaluation' },
);

export const EvaluationPage = Type.Object({
  items: Type.Array(Type.Ref('Evaluation')),
  next_cursor: Type.Union([Type.String(), Type.Null()], { description: 'pass as cursor for the next, older page; null on the last page' }),
});

export const EvaluationQuery = Type.Object({
  flag_key: Type.Optional(Type.String({ maxLength: 100 })),
  user_id: Type.Optional(Type.String({ maxLength: 1024 })),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 500, default: 50 })),
  cursor: Type.Optional(Type.String({ maxLength: 200 })),
});

export const MetricsQuery = Type.Object({
  hours: Type.Optional(Type.Integer({ minimum: 1, maximum: 24 * 30, default: 24 })),
});

export const FlagKeyMetricsQuery = Type.Object({
  flag_key: Type.String({ minLength: 1, maxLength: 100 }),
  hours: Type.Optional(Type.Integer({ minimum: 1, maximum: 24 * 30, default: 24 })),
});

/** Per variant key, how often it was served: only for a flag that served variants in the window (docs/variants.md). */
const VariantCounts = Type.Optional(Type.Record(Type.String(), Type.Integer(), { description: 'per variant key, how often it was served; present for a flag that served variants' }));

export const FlagMetrics = Type.Object({
  flag_key: Type.String(),
  buckets: Type.Array(Type.Object({ start: Timestamp, enabled: Type.Integer(), disabled: Type.Integer(), variants: VariantCounts }), { description: 'one per hour, oldest first' }),
  totals: Type.Object({ enabled: Type.Integer(), disabled: Type.Integer(), variants: VariantCounts }),
});
