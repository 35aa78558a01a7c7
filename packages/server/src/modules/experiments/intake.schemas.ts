import { Type, type Static } from 'typebox';

/** What POST /sdk/v1/events takes at most per request, exposures and events together (docs/experiments.md). */
export const MAX_ITEMS = 1000;

const Unit = Type.String({ minLength: 1, maxLength: 256, description: "the identifier the flag's rollout hashes: the context's user_id, else its email; `anonymous` is ignored" });
const At = Type.String({ format: 'date-time', description: 'ISO 8601; absent: the time of receipt. More than 24 h in the past or 5 min in the future: ignored' });

const Exposure = Type.Object(
  {
    flag: Type.String({ minLength: 1, maxLength: 100, description: 'the flag key' }),
    unit: Unit,
    arm: Type.String({ minLength: 1, maxLength: 100, description: 'the variant key served, or on / off for a flag without variants' }),
    reason: Type.Optional(Type.String({ maxLength: 200, description: "the evaluation's reason: one that says a targeting rule served the unit is ignored" })),
    at: Type.Optional(At),
  },
  { additionalProperties: false },
);

const Event = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 100, pattern: '^[A-Za-z0-9_.:-]+$', description: 'what the unit did; metrics count events by this name' }),
    unit: Unit,
    value: Type.Optional(Type.Number({ description: 'a finite number; absent: 1' })),
    at: Type.Optional(At),
  },
  { additionalProperties: false },
);

export const EventsBody = Type.Object(
  {
    environment: Type.String({ minLength: 1, maxLength: 64, description: 'the environment key' }),
    exposures: Type.Optional(Type.Array(Exposure, { maxItems: MAX_ITEMS })),
    events: Type.Optional(Type.Array(Event, { maxItems: MAX_ITEMS })),
  },
  { additionalProperties: false, description: `1 to ${MAX_ITEMS} items in all, exposures and events together` },
);
export type EventsBody = Static<typeof EventsBody>;

const IGNORED_REASONS = ['not_watched', 'unknown_arm', 'served_by_rule', 'anonymous', 'too_old', 'in_future', 'no_metric'] as const;

export const EventsAccepted = Type.Object({
  accepted: Type.Integer({ description: 'items kept: written within a second' }),
  ignored: Type.Object(Object.fromEntries(IGNORED_REASONS.map((reason) => [reason, Type.Optional(Type.Integer())])), {
    additionalProperties: false,
    description:
      'items not kept, by reason: not_watched (no running experiment of the environment watches the flag), unknown_arm (not an arm of that experiment), served_by_rule (a targeting rule chose the arm), anonymous (the unit `anonymous`), too_old / in_future (`at` outside the last 24 h and the next 5 min), no_metric (no metric of the project counts the event name)',
  }),
});
