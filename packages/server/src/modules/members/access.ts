import type { FastifyRequest, RouteOptions } from 'fastify';
import type { Role } from '../../db/schema.js';
import { Forbidden, NotFound } from '../../errors.js';
import type { Db } from '../../db/database.js';
import type { Actor } from '../changes/changes.schemas.js';
import { findMemberRole } from './members.repository.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /**
     * The least a caller needs to use the route (docs/api.md, Who may do what): 'user' is any
     * signed-in caller, 'session' a login (no API token), 'login' a login of a verified account;
     * the project roles apply to routes under /api/projects/{project_id}. Declared by every /api
     * route (the app does not start otherwise) and decided in one place: authorize() below.
     */
    role?: DeclaredRole;
  }
  interface FastifyRequest {
    /** Who is calling (audit events name it). */
    actor: Actor;
    /** The API token used, or null for a login. */
    apiToken: { id: string; project_id: string | null; role: Role | null } | null;
    /** On project routes: the caller's role there, capped by the token's. */
    projectRole: Role | null;
    /** Whether the caller's address is verified (docs/api.md, Account; always so for an API token). */
    emailVerified: boolean;
  }
}

export type DeclaredRole = 'login' | 'session' | 'user' | Role;
const RANK: Record<Role, number> = { viewer: 1, editor: 2, owner: 3 };
const DECLARABLE = new Set<string>(['login', 'session', 'user', 'viewer', 'editor', 'owner']);
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export const atLeast = (role: Role, least: Role) => RANK[role] >= RANK[least];
export const lowerOf = (a: Role, b: Role | null): Role => (b && RANK[b] < RANK[a] ? b : a);

export interface DeclaredRoute {
  method: string;
  url: string;
  role: DeclaredRole;
}

/**
 * onRoute under /api: a route that declares no least role (config.role) stops the app from
 * starting, so a new route cannot forget authorization. Returns what it saw for the route table.
 */
export function declaredRoute(route: RouteOptions): DeclaredRoute[] {
  const role = (route.config as { role?: unknown } | undefined)?.role;
  const methods = [route.method].flat().filter((method) => method !== 'HEAD');
  if (typeof role !== 'string' || !DECLARABLE.has(role)) {
    throw new Error(`${methods.join(',')} ${route.url} declares no role: add config: { role: 'user' | 'session' | 'login' | 'viewer' | 'editor' | 'owner' } (src/modules/members/access.ts)`);
  }
  if (RANK[role as Role] && !route.url.includes(':project_id')) throw new Error(`${route.url} declares a project role but has no :project_id`);
  return methods.map((method) => ({ method, url: route.url, role: role as DeclaredRole }));
}

/**
 * The one authorization decision for /api (docs/api.md, Who may do what), from the route's declared least role:
 * - session: a signed-in user, verified or not, not an API token (deleting one's account);
 * - login: a signed-in user whose address is verified, not an API token (tokens cannot manage tokens);
 * - user: any caller; a project-scoped token may only read there;
 * - viewer / editor / owner: a member of :project_id (else 404) whose role, capped by the
 *   token's, is at least that (else 403). A token scoped to another project gets 404.
 * Handlers then act without checking who may.
 */
export function authorize({ db }: { db: Db }) {
  return async (request: FastifyRequest): Promise<void> => {
    const least = request.routeOptions.config.role;
    const token = request.apiToken;
    if (least === 'session') {
      if (token) throw new Forbidden('This needs you signed in, not an API token');
      return;
    }
    if (least === 'login') {
      if (token) throw new Forbidden('API tokens cannot manage tokens: sign in with a password');
      if (!request.emailVerified) throw new Forbidden('Verify your email address first: open the link we emailed you (or ask for a new one)');
      return;
    }
    if (least === 'user') {
      if (token?.project_id && request.method !== 'GET') throw new Forbidden('A project token can only act inside its project');
      return;
    }
    if (!least) throw new Forbidden(); // unreachable: declaredRoute refuses such routes
    const projectId = (request.params as { project_id?: string } | undefined)?.project_id;
    if (!projectId || !UUID.test(projectId) || (token?.project_id && token.project_id !== projectId)) throw new NotFound('Project not found');
    const member = await findMemberRole(db, projectId, request.userId);
    if (!member) throw new NotFound('Project not found');
    const role = lowerOf(member, token?.role ?? null);
    if (!atLeast(role, least)) throw new Forbidden(`This needs the ${least} role in the project; ${token?.role ? 'this token has' : 'you have'} ${role}`);
    request.projectRole = role;
  };
}
