import { Type } from 'typebox';
import { Name, Timestamp, Uuid } from '../../http/schemas.js';

export const METRIC_KINDS = ['conversion', 'count', 'sum', 'mean'] as const;
export const BETTER = ['higher', 'lower'] as const;

const MetricKey = Type.String({ pattern: '^[a-z][a-z0-9_-]*$', maxLength: 100, description: 'a-z, 0-9, _ and -; starts with a letter; unique in the project' });
/** As the event intake names events. */
const EventName = Type.String({ pattern: '^[A-Za-z0-9_.:-]+$', minLength: 1, maxLength: 100, description: 'the name of the events it counts: 1–100 of A-Z a-z 0-9 _ . : -' });
const Kind = Type.Enum([...METRIC_KINDS], { description: 'conversion: 1 if any event, else 0; count: their number; sum: the sum of their values; mean: the sum of the values over the number of events' });
const Better = Type.Enum([...BETTER], { description: 'which way is an improvement' });
const WindowHours = Type.Union([Type.Integer({ minimum: 1, maximum: 8760 }), Type.Null()], { description: "a unit's events from its first exposure to this many hours after; null: to the end of the experiment" });

export const Metric = Type.Object(
  {
    id: Uuid,
    project_id: Uuid,
    key: Type.String(),
    name: Type.String(),
    event: Type.String(),
    kind: Kind,
    better: Better,
    window_hours: Type.Union([Type.Integer(), Type.Null()]),
    created_at: Timestamp,
    updated_at: Timestamp,
  },
  { $id: 'Metric' },
);

export const CreateMetricBody = Type.Object({
  key: MetricKey,
  name: Name,
  event: EventName,
  kind: Kind,
  better: Better,
  window_hours: Type.Optional(WindowHours),
});

export const UpdateMetricBody = Type.Object({
  key: Type.Optional(MetricKey),
  name: Type.Optional(Name),
  event: Type.Optional(EventName),
  kind: Type.Optional(Kind),
  better: Type.Optional(Better),
  window_hours: Type.Optional(WindowHours),
});

export const MetricParams = Type.Object({ project_id: Uuid, metric_id: Uuid });
