import { Type } from 'typebox';
import { Name, Timestamp, Uuid } from '../../http/schemas.js';

export const EnvironmentKey = Type.String({ pattern: '^[a-z0-9_-]+$', minLength: 1, maxLength: 64, description: 'lowercase letters, digits, _ and -' });

export const Environment = Type.Object(
  { id: Uuid, project_id: Uuid, name: Type.String(), key: Type.String(), created_at: Timestamp },
  { $id: 'Environment' },
);

export const CreateEnvironmentBody = Type.Object({ name: Name, key: EnvironmentKey });
export const UpdateEnvironmentBody = Type.Object({
  name: Type.Optional(Name),
  key: Type.Optional(Type.String({ description: 'accepted only when equal to the current key: the key never changes' })),
});
