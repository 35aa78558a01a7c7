import { Type } from 'typebox';
import { Timestamp, Uuid } from '../../http/schemas.js';
import { AuditActionRef, RESOURCE_TYPES, ResourceTypeRef } from '../changes/changes.schemas.js';

const Nullable = <T extends Parameters<typeof Type.Union>[0][number]>(schema: T) => Type.Union([schema, Type.Null()]);

export const AuditEvent = Type.Object(
  {
    id: Uuid,
    project_id: Uuid,
    environment_id: Nullable(Uuid),
    action: AuditActionRef,
    resource_type: ResourceTypeRef,
    resource_id: Uuid,
    resource_key: Nullable(Type.String()),
    actor: Type.Object({ user_id: Nullable(Uuid), email: Nullable(Type.String()), token_id: Nullable(Uuid) }),
    before: Nullable(Type.Object({}, { additionalProperties: true })),
    after: Nullable(Type.Object({}, { additionalProperties: true })),
    import_id: Type.Union([Uuid, Type.Null()], { description: 'the import that made the change (docs/flags-as-code.md); null for any other write' }),
    schedule_id: Type.Union([Uuid, Type.Null()], { description: 'the scheduled change this change applied (docs/change-management.md); else null' }),
    change_request_id: Type.Union([Uuid, Type.Null()], { description: 'the change request the write applied, or found failing (docs/change-management.md); else null' }),
    approvers: Type.Union([Type.Array(Type.Object({ user_id: Uuid, email: Type.String() })), Type.Null()], { description: "with change_request_id, when it applied the request: who approved the request's content; else null" }),
    release_id: Type.Union([Uuid, Type.Null()], { description: 'the guarded release that made the change: a step, a rollback (docs/releases.md); else null' }),
    created_at: Timestamp,
  },
  { $id: 'AuditEvent' },
);

export const AuditPage = Type.Object({ items: Type.Array(Type.Ref('AuditEvent')), next_cursor: Nullable(Type.String()) });

export const AuditQuery = Type.Object({
  resource_type: Type.Optional(Type.Enum([...RESOURCE_TYPES])),
  resource_id: Type.Optional(Uuid),
  environment_id: Type.Optional(Uuid),
  actor_id: Type.Optional(Uuid),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 500 })),
  cursor: Type.Optional(Type.String({ maxLength: 500 })),
});
