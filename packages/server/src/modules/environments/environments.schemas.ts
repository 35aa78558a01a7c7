import { Type } from 'typebox';
import { Name, Timestamp, Uuid } from '../../http/schemas.js';

export const EnvironmentKey = Type.String({ pattern: '^[a-z0-9_-]+$', minLength: 1, maxLength: 64, description: 'lowercase letters, digits, _ and -' });

const APPROVALS = 'approvals a change request needs before changes reach this environment; 0: changes apply directly (docs/change-management.md)';

export const Environment = Type.Object(
  { id: Uuid, project_id: Uuid, name: Type.String(), key: Type.String(), approvals_required: Type.Integer({ description: APPROVALS }), created_at: Timestamp },
  { $id: 'Environment' },
);

export const CreateEnvironmentBody = Type.Object({ name: Name, key: EnvironmentKey });
export const UpdateEnvironmentBody = Type.Object({
  name: Type.Optional(Name),
  key: Type.Optional(Type.String({ description: 'accepted only when equal to the current key: the key never changes' })),
  approvals_required: Type.Optional(Type.Integer({ minimum: 0, maximum: 5, description: `0–5, ${APPROVALS}; owners only` })),
});
