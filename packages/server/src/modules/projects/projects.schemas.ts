import { Type } from 'typebox';
import { Description, Name, Timestamp, Uuid } from '../../http/schemas.js';

export const Project = Type.Object(
  {
    id: Uuid,
    name: Type.String(),
    description: Type.Union([Type.String(), Type.Null()]),
    sdk_key: Type.String({ description: 'Credential for POST /sdk/v1/evaluate; prefix sdk_' }),
    created_at: Timestamp,
    updated_at: Timestamp,
    role: Type.Union([Type.Literal('viewer'), Type.Literal('editor'), Type.Literal('owner')], { description: "the caller's role in the project" }),
  },
  { $id: 'Project' },
);

export const CreateProjectBody = Type.Object({ name: Name, description: Type.Optional(Description) });
export const UpdateProjectBody = Type.Object({ name: Type.Optional(Name), description: Type.Optional(Description) });
