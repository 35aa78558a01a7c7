import { Type } from 'typebox';
import { Timestamp, Uuid } from '../../http/schemas.js';
import { UpdateFlagBody } from '../flags/flags.schemas.js';

const Nullable = <T extends Parameters<typeof Type.Union>[0][number]>(schema: T) => Type.Union([schema, Type.Null()]);

export const SCHEDULE_STATUSES = ['pending', 'applied', 'failed', 'cancelled'] as const;
export type ScheduleStatus = (typeof SCHEDULE_STATUSES)[number];

/** When a change is to apply: ISO 8601 with an offset or Z (a time without one names no instant). */
export const At = Type.String({ format: 'date-time', description: 'ISO 8601 with an offset or Z; in the future, at most a year ahead' });
export const Note = Type.Union([Type.String({ maxLength: 500 }), Type.Null()]);

export const Schedule = Type.Object(
  {
    id: Uuid,
    project_id: Uuid,
    environment_id: Uuid,
    flag_id: Uuid,
    flag_key: Type.String(),
    at: Timestamp,
    change: Type.Object({}, { additionalProperties: true, description: 'a PUT body of the flag' }),
    note: Nullable(Type.String()),
    status: Type.Enum([...SCHEDULE_STATUSES]),
    created_by: Type.Object({ user_id: Uuid, email: Type.String(), token_id: Nullable(Uuid) }),
    change_request_id: Nullable(Uuid),
    created_at: Timestamp,
    applied_at: Nullable(Timestamp),
    error: Nullable(Type.String({ description: 'why it failed' })),
  },
  { $id: 'Schedule' },
);

export const CreateScheduleBody = Type.Object({ at: At, change: UpdateFlagBody, note: Type.Optional(Note) });
export const ScheduleParams = Type.Object({ project_id: Uuid, env_id: Uuid, flag_id: Uuid, schedule_id: Uuid });
export const ScheduleQuery = Type.Object({ status: Type.Optional(Type.Enum([...SCHEDULE_STATUSES])), environment_id: Type.Optional(Uuid) });
