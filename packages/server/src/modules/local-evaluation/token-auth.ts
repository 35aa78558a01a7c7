/**
 * The credential of the local-evaluation surfaces (docs/local-evaluation.md): an API token (any role) of
 * the project, never an SDK key. A ruleset names users in its rules, and an SDK key may sit in a
 * browser; an API token is a server's secret.
 */
import type { FastifyRequest } from 'fastify';
import type { Db } from '../../db/database.js';
import { Forbidden, Invalid, NotFound, Unauthorized } from '../../errors.js';
import type { RateLimits } from '../../rate-limits.js';
import { authenticateApiToken, TOKEN_PREFIX, tokenRevocations } from '../api-tokens/api-tokens.repository.js';
import type { CompiledProject, EvaluateCache } from '../evaluate/evaluate.cache.js';
import { currentSdkKey } from '../evaluate/evaluate.repository.js';
import { findMemberRole } from '../members/members.repository.js';

export interface TokenAccess {
  tokenId: string;
  projectId: string;
  /** The project's compiled view (the one evaluate serves from). */
  project: CompiledProject;
}

declare module 'fastify' {
  interface FastifyRequest {
    /** The API token's access, on the local-evaluation surfaces (and the stream, when it carries one). */
    tokenAccess: TokenAccess | null;
  }
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

function bearer(request: FastifyRequest): string | undefined {
  const authorization = request.headers.authorization;
  if (typeof authorization !== 'string' || !/^bearer\s/i.test(authorization)) return undefined;
  const secret = authorization.slice(7).trim();
  return secret === '' ? undefined : secret;
}

/** Whether the request carries an API token (the stream then serves ruleset changes). */
export const carriesApiToken = (request: FastifyRequest): boolean => bearer(request)?.startsWith(TOKEN_PREFIX) === true;

/** How long a token read from the database answers for itself here before it is read again. */
export const TOKEN_RECHECK_MS = 1000;
/** Tokens kept at most (only valid ones enter: an unknown secret is never kept). */
const KEPT_TOKENS = 10_000;

type Token = NonNullable<Awaited<ReturnType<typeof authenticateApiToken>>>;

/**
 * The tokens the SDK surfaces met in the last second. After a change, every SDK that holds one
 * token fetches within a few seconds: 10,000 reads of the same row were a fifth of each fetch's
 * CPU (docs/performance.md). A token deleted on this instance, or whose account was removed here,
 * is dropped at once (tokenRevocations); one deleted on another instance is read again within
 * TOKEN_RECHECK_MS, and an expired one fails on its next use. /api reads the token every time.
 */
class RecentTokens {
  private readonly bySecret = new Map<string, { token: Token; readAt: number }>();
  private revocations = tokenRevocations();

  constructor(private readonly db: Db) {}

  async find(secret: string): Promise<Token | undefined> {
    const revocations = tokenRevocations();
    if (revocations !== this.revocations) {
      this.bySecret.clear();
      this.revocations = revocations;
    }
    const now = Date.now();
    const kept = this.bySecret.get(secret);
    if (kept && now - kept.readAt < TOKEN_RECHECK_MS && (kept.token.expiresAt === null || kept.token.expiresAt > now)) return kept.token;
    const token = await authenticateApiToken(this.db, secret);
    // A read that overlapped a revocation is answered but not kept.
    if (!token || tokenRevocations() !== revocations) this.bySecret.delete(secret);
    else {
      if (this.bySecret.size >= KEPT_TOKENS && !this.bySecret.has(secret)) this.bySecret.clear();
      this.bySecret.set(secret, { token, readAt: now });
    }
    return token;
  }
}

/**
 * The compiled project each member reaches, kept until the project next changes. Removing a
 * member and rotating the SDK key are changes of the project (the change path): they drop its
 * compiled view on every instance, and what is kept here with it. With the token kept a second
 * (RecentTokens), a burst of fetches by one token's many SDKs reads nothing.
 */
class MemberProjects {
  private readonly byProject = new Map<string, Map<string, CompiledProject>>();
  /** Bumped by every change: a lookup that overlapped one is answered but not kept. */
  private changes = 0;

  constructor(
    private readonly db: Db,
    private readonly cache: EvaluateCache,
  ) {
    cache.onInvalidate((projectId) => {
      this.changes++;
      this.byProject.delete(projectId);
    });
  }

  /** The project as compiled, when the user is a member; else null. */
  async find(projectId: string, userId: string): Promise<CompiledProject | null> {
    const kept = this.byProject.get(projectId)?.get(userId);
    if (kept && this.cache.holds(kept)) return kept;
    const changes = this.changes;
    if (!(await findMemberRole(this.db, projectId, userId))) return null;
    const sdkKey = await currentSdkKey(this.db, projectId);
    const project = sdkKey === null ? null : await this.cache.project(sdkKey);
    if (project && changes === this.changes) {
      let members = this.byProject.get(projectId);
      if (!members) this.byProject.set(projectId, (members = new Map()));
      members.set(userId, project);
    }
    return project;
  }
}

/**
 * Checks the credential in order: an SDK key (403), none or an unknown token (401), the project
 * (a project-scoped token names its own; a token of every project names it with ?project=<id>),
 * the caller's membership (404), then the compiled project. Sets request.tokenAccess.
 */
export function tokenAccessHook(db: Db, limits: RateLimits, cache: EvaluateCache) {
  const readAccess = tokenAccessReader(db, cache);
  return async function tokenAccess(request: FastifyRequest): Promise<void> {
    await limits.evaluate?.hit(request.ip);
    const secret = bearer(request);
    const sdkKeyGiven = request.headers['x-sdk-key'] !== undefined || request.headers['x-api-key'] !== undefined || (secret !== undefined && !secret.startsWith(TOKEN_PREFIX));
    if (sdkKeyGiven && (secret === undefined || !secret.startsWith(TOKEN_PREFIX))) {
      throw new Forbidden('Local evaluation needs an API token of the project (Authorization: Bearer gdn_…), not an SDK key: the ruleset names users');
    }
    request.tokenAccess = await readAccess(request);
  };
}

/** The API token's access from the request's Authorization (401 without a valid one; then the project and membership as tokenAccessHook says). */
export function tokenAccessReader(db: Db, cache: EvaluateCache) {
  const memberProjects = new MemberProjects(db, cache);
  const tokens = new RecentTokens(db);
  return async function readAccess(request: FastifyRequest): Promise<TokenAccess> {
    const secret = bearer(request);
    if (secret === undefined) throw new Unauthorized('Missing or invalid API token');
    const token = await tokens.find(secret);
    if (!token) throw new Unauthorized('Missing or invalid API token');
    const named = (request.query as { project?: unknown } | undefined)?.project;
    let projectId = token.project_id;
    if (projectId === null) {
      if (typeof named !== 'string' || named === '') throw new Invalid('A token of every project must name one: add ?project=<project id> (or use a project-scoped token)');
      projectId = named;
    } else if (typeof named === 'string' && named !== projectId) throw new NotFound('Project not found');
    const project = UUID.test(projectId) ? await memberProjects.find(projectId, token.user_id) : null;
    if (!project) throw new NotFound('Project not found');
    return { tokenId: token.id, projectId, project };
  };
}
