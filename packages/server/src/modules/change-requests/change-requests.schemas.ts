import { Type } from 'typebox';
import { Description, EnvironmentParams, Name, Timestamp, Uuid } from '../../http/schemas.js';
import { At } from '../schedules/schedules.schemas.js';
import { ChangeSchema } from './change-ops.js';

const Nullable = <T extends Parameters<typeof Type.Union>[0][number]>(schema: T) => Type.Union([schema, Type.Null()]);

export const CHANGE_REQUEST_STATUSES = ['open', 'approved', 'scheduled', 'applied', 'rejected', 'cancelled', 'failed', 'outdated'] as const;
export type ChangeRequestStatus = (typeof CHANGE_REQUEST_STATUSES)[number];

const Person = Type.Object({ user_id: Uuid, email: Type.String() });

export const Review = Type.Object({
  id: Uuid,
  user_id: Uuid,
  email: Type.String(),
  token_id: Nullable(Uuid),
  decision: Type.Union([Type.Literal('approve'), Type.Literal('reject')]),
  comment: Nullable(Type.String()),
  version: Type.Integer({ description: 'the content version reviewed; only reviews of the current version count' }),
  created_at: Timestamp,
});

export const DiffItem = Type.Object({
  change: Type.Integer({ description: 'the index of the change in changes' }),
  op: Type.String(),
  resource_type: Type.String(),
  resource_id: Uuid,
  resource_key: Nullable(Type.String()),
  before: Nullable(Type.Object({}, { additionalProperties: true })),
  after: Nullable(Type.Object({}, { additionalProperties: true })),
});

/** The most changes one request holds. */
export const CHANGE_REQUEST_LIMIT = 100;
const Changes = Type.Array(ChangeSchema, { minItems: 1, maxItems: CHANGE_REQUEST_LIMIT });

const fields = {
  id: Uuid,
  project_id: Uuid,
  environment_id: Uuid,
  title: Type.String(),
  description: Nullable(Type.String()),
  // As sent (the request bodies' schema lists each op's fields); a response is not validated.
  changes: Type.Array(Type.Object({ op: Type.String() }, { additionalProperties: true })),
  apply_at: Nullable(Timestamp),
  status: Type.Enum([...CHANGE_REQUEST_STATUSES]),
  version: Type.Integer({ description: 'moves with every edit of changes or apply_at, which withdraws every approval' }),
  author: Type.Object({ user_id: Uuid, email: Type.String(), token_id: Nullable(Uuid) }),
  approvals_required: Type.Integer({ description: "approvals it needs: the environment's approvals_required, at least 1" }),
  approved_by: Type.Array(Person, { description: 'who approved the current version and may still approve it (an editor or owner of the project): the approvals that count' }),
  reviews: Type.Array(Review, { description: 'every review, oldest first' }),
  error: Nullable(Type.String({ description: 'why applying failed' })),
  created_at: Timestamp,
  updated_at: Timestamp,
  applied_at: Nullable(Timestamp),
};

/** A change request as listed. */
export const ChangeRequestItem = Type.Object(fields, { $id: 'ChangeRequestItem' });
/** A change request with its diff: per change, the before and after of its resource (as foreseen until applied, then as applied). */
export const ChangeRequest = Type.Object({ ...fields, diff: Type.Array(DiffItem) }, { $id: 'ChangeRequest' });

export const ChangeRequestPage = Type.Object({ items: Type.Array(Type.Ref('ChangeRequestItem')), next_cursor: Nullable(Type.String()) });

export const CreateChangeRequestBody = Type.Object({
  title: Name,
  description: Type.Optional(Description),
  changes: Changes,
  apply_at: Type.Optional(Nullable(At)),
});

export const UpdateChangeRequestBody = Type.Object({
  title: Type.Optional(Name),
  description: Type.Optional(Description),
  changes: Type.Optional(Changes),
  apply_at: Type.Optional(Nullable(At)),
});

export const ReviewBody = Type.Object({
  decision: Type.Union([Type.Literal('approve'), Type.Literal('reject')]),
  comment: Type.Optional(Nullable(Type.String({ maxLength: 2000 }))),
});

export const ChangeRequestParams = Type.Object({ project_id: Uuid, cr_id: Uuid });
export const CreateChangeRequestParams = EnvironmentParams;
export const ChangeRequestQuery = Type.Object({
  status: Type.Optional(Type.Enum([...CHANGE_REQUEST_STATUSES])),
  environment_id: Type.Optional(Uuid),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 200 })),
  cursor: Type.Optional(Type.String({ maxLength: 500 })),
});
