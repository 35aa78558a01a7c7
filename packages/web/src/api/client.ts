import createClient, { type Middleware } from 'openapi-fetch';
import type { components, paths } from './schema';
import { session } from './session';

export type Project = components['schemas']['Project'];
export type Environment = components['schemas']['Environment'];
export type Flag = components['schemas']['Flag'];
/** One of a flag's variants (docs/variants.md). */
export type Variant = Flag['variants'][number];
export type Rule = components['schemas']['Rule'];
export type Evaluation = components['schemas']['Evaluation'];
export type ProjectFlag = components['schemas']['ProjectFlag'];
export type FlagState = ProjectFlag['environments'][string];
export type RuleType = Rule['rule_type'];
export type Member = components['schemas']['Member'];
export type ApiToken = components['schemas']['ApiToken'];
export type AuditEvent = components['schemas']['AuditEvent'];
export type ResourceType = NonNullable<NonNullable<paths['/api/projects/{project_id}/audit']['get']['parameters']['query']>['resource_type']>;
export type Webhook = components['schemas']['Webhook'];
export type Condition = components['schemas']['Condition'];
export type Segment = components['schemas']['Segment'];
export type Schedule = components['schemas']['Schedule'];
export type ChangeRequest = components['schemas']['ChangeRequest'];
export type ChangeRequestItem = components['schemas']['ChangeRequestItem'];
export type ChangeRequestStatus = ChangeRequest['status'];
export type DiffItem = ChangeRequest['diff'][number];
/** One change of a change request, as the create body types it: {op, ...its fields}. */
export type RequestedChange = paths['/api/projects/{project_id}/environments/{env_id}/change-requests']['post']['requestBody']['content']['application/json']['changes'][number];
/** A PUT body of a flag: what a flag.update or a schedule changes. */
export type FlagChange = paths['/api/projects/{project_id}/environments/{env_id}/flags/{flag_id}']['put']['requestBody']['content']['application/json'];

/** An answer other than 2xx, with the server's message (docs/api.md, "Errors"). */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

/** Called when a signed-in request is refused (expired or revoked token). */
let onSessionExpired: () => void = () => undefined;
export const setSessionExpiredHandler = (handler: () => void) => void (onSessionExpired = handler);

/** The calls that carry the login token: the API, and the two /auth calls of a signed-in person. */
const SIGNED_IN_AUTH = new Set(['/auth/logout', '/auth/resend-verification']);
const carriesToken = (path: string) => path.startsWith('/api/') || SIGNED_IN_AUTH.has(path);

const auth: Middleware = {
  onRequest({ request }) {
    const token = session.token();
    if (token && carriesToken(new URL(request.url).pathname)) request.headers.set('authorization', `Bearer ${token}`);
    return request;
  },
  onResponse({ request, response }) {
    const path = new URL(request.url).pathname;
    if (response.status === 401 && carriesToken(path) && path !== '/auth/logout') onSessionExpired();
    return response;
  },
};

export const api = createClient<paths>({ baseUrl: window.location.origin });
api.use(auth);

/** The data of a successful answer, or an ApiError with the server's message. */
export async function unwrap<T>(call: Promise<{ data?: T; error?: unknown; response: Response }>): Promise<T> {
  let result: Awaited<typeof call>;
  try {
    result = await call;
  } catch (error) {
    // fetch rejects with a TypeError when no answer arrives at all.
    if (error instanceof TypeError) throw new ApiError(0, 'The server cannot be reached. Check your connection and try again.');
    throw new ApiError(0, `Unexpected answer from the server: ${(error as Error).message}`);
  }
  if (result.response.ok) return result.data as T;
  const message = (result.error as { message?: string } | undefined)?.message ?? result.response.statusText;
  throw new ApiError(result.response.status, message);
}
