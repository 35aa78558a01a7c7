import { Type } from 'typebox';

/** Contract §3: every error body. */
export const ErrorBody = Type.Object(
  {
    statusCode: Type.Integer(),
    error: Type.String(),
    message: Type.String(),
  },
  { $id: 'Error' },
);

export const Timestamp = Type.String({ format: 'date-time', description: 'ISO 8601 UTC timestamp' });
export const Uuid = Type.String({ format: 'uuid' });

/** Names, labels: trimmed text of 1 to 200 characters. */
export const Name = Type.String({ minLength: 1, maxLength: 200, pattern: '\\S' });
export const Description = Type.Union([Type.String({ maxLength: 2000 }), Type.Null()]);

/** The error answers a route can give, referenced by $id so OpenAPI lists them once. */
export function errorResponses(...statuses: number[]) {
  return Object.fromEntries(statuses.map((status) => [status, Type.Ref('Error')]));
}
