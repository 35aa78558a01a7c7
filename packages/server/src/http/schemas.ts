import type { RouteOptions } from 'fastify';
import { Type } from 'typebox';

/** docs/api.md: every error body. */
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

/** Path parameters of the routes under a project, shared by every module that serves one. */
export const ProjectParams = Type.Object({ project_id: Uuid });
export const EnvironmentParams = Type.Object({ project_id: Uuid, env_id: Uuid });

/** Names, labels: trimmed text of 1 to 200 characters. */
export const Name = Type.String({ minLength: 1, maxLength: 200, pattern: '\\S' });
export const Description = Type.Union([Type.String({ maxLength: 2000 }), Type.Null()]);

/** The error answers a route can give, referenced by $id so OpenAPI lists them once. */
export function errorResponses(...statuses: number[]) {
  return Object.fromEntries(statuses.map((status) => [status, Type.Ref('Error')]));
}

/**
 * onRoute: the errors any documented route can give, added where its responses do not list them,
 * in the route's own error shape (its 400's schema, else Error): 500, 503 while the database is
 * away (docs/api.md, with Retry-After), and 413 for a body over 1 MiB. So OpenAPI, and the
 * clients generated from it, know of them without every route repeating them. (415 is left to
 * the routes: the SDK surfaces answer 400 to a body that is not JSON.)
 */
export function documentCommonErrors(route: RouteOptions): void {
  const response = route.schema?.response as Record<string, unknown> | undefined;
  if (response === undefined) return;
  const shape = response[400] ?? Type.Ref('Error');
  const statuses = route.schema!.body === undefined ? [500, 503] : [413, 500, 503];
  route.schema = { ...route.schema, response: { ...Object.fromEntries(statuses.map((status) => [status, shape])), ...response } };
}
