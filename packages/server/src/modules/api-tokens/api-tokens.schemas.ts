import { Type } from 'typebox';
import { Name, Timestamp, Uuid } from '../../http/schemas.js';
import { RoleName } from '../members/members.schemas.js';

export const ApiToken = Type.Object(
  {
    id: Uuid,
    name: Type.String(),
    project_id: Type.Union([Uuid, Type.Null()], { description: 'null: every project of the user, with the user’s roles' }),
    role: Type.Union([RoleName, Type.Null()], { description: 'the most this token may do in its project (its creator’s role there when created without one); null for a token of every project' }),
    created_at: Timestamp,
    expires_at: Type.Union([Timestamp, Type.Null()]),
    last_used_at: Type.Union([Timestamp, Type.Null()], { description: 'set on first use, then refreshed at most once a minute' }),
  },
  { $id: 'ApiToken' },
);

export const CreatedApiToken = Type.Object({ ...ApiToken.properties, token: Type.String({ description: 'the secret (gdn_…), shown only here' }) });

export const CreateApiTokenBody = Type.Object({
  name: Name,
  project_id: Type.Optional(Type.Union([Uuid, Type.Null()])),
  role: Type.Optional(Type.Union([RoleName, Type.Null()], { description: 'with project_id: at most your role there; left out, your role there now' })),
  expires_in_days: Type.Optional(Type.Union([Type.Integer({ minimum: 1, maximum: 3650 }), Type.Null()])),
});

export const ApiTokenParams = Type.Object({ token_id: Uuid });
