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

  /** The token, when it was read less than TOKEN_RECHECK_MS ago and has not expired since; else undefined. */
  kept(secret: string): Token | undefined {
    const revocations = tokenRevocations();
    if (revocations !== this.revocations) {
      this.bySecret.clear();
      this.revocations = revocations;
    }
    const now = Date.now();
    const kept = this.bySecret.get(secret);
    return kept && now - kept.readAt < TOKEN_RECHECK_MS && (kept.token.expiresAt === null || kept.token.expiresAt > now) ? kept.token : undefined;
  }

  async find(secret: string): Promise<Token | undefined> {
    const kept = this.kept(secret);
    if (kept) return kept;
    const revocations = this.revocations;
    const now = Date.now();
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

  /** The project as compiled, when it is kept for the member; else undefined (find reads it). */
  kept(projectId: string, userId: string): CompiledProject | undefined {
    const kept = this.byProject.get(projectId)?.get(userId);
    return kept && this.cache.holds(kept) ? kept : undefined;
  }

  /** The project as compiled, when the user is a member; else null. */
  async find(projectId: string, userId: string): Promise<CompiledProject | null> {
    const kept = this.kept(projectId, userId);
    if (kept) return kept;
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
 * Reads an API token's access from a request's Authorization: 401 without a valid token; then the
 * project (a project-scoped token names its own; a token of every project names it with
 * ?project=<id>), the caller's membership (404), then the compiled project. One per app
 * (app.ts), shared by the SDK surfaces, so that a burst of one token's SDKs reads it once a second.
 */
export class TokenAccessReader {
  private readonly memberProjects: MemberProjects;
  private readonly tokens: RecentTokens;

  constructor(db: Db, cache: EvaluateCache) {
    this.memberProjects = new MemberProjects(db, cache);
    this.tokens = new RecentTokens(db);
  }

  async read(request: FastifyRequest): Promise<TokenAccess> {
    const secret = bearer(request);
    if (secret === undefined) throw new Unauthorized('Missing or invalid API token');
    const token = await this.tokens.find(secret);
    if (!token) throw new Unauthorized('Missing or invalid API token');
    const named = (request.query as { project?: unknown } | undefined)?.project;
    let projectId = token.project_id;
    if (projectId === null) {
      if (typeof named !== 'string' || named === '') throw new Invalid('A token of every project must name one: add ?project=<project id> (or use a project-scoped token)');
      projectId = named;
    } else if (typeof named === 'string' && named !== projectId) throw new NotFound('Project not found');
    const project = UUID.test(projectId) ? await this.memberProjects.find(projectId, token.user_id) : null;
    if (!project) throw new NotFound('Project not found');
    return { tokenId: token.id, projectId, project };
  }

  /**
   * What read gives a request that names no project, when the token and its member's project are
   * both kept here: no read, no wait (the ruleset's direct path). Undefined otherwise: read then.
   * A token of every project must name one, so it is never answered here.
   */
  kept(secret: string): TokenAccess | undefined {
    const token = this.tokens.kept(secret);
    if (token === undefined || token.project_id === null) return undefined;
    const project = this.memberProjects.kept(token.project_id, token.user_id);
    return project && { tokenId: token.id, projectId: token.project_id, project };
  }
}

/**
 * The credential check of the local-evaluation surfaces, in order: the rate limit (429; counted
 * once per request, as the ruleset's direct path may have counted it), an SDK key (403), then the
 * token as TokenAccessReader.read says. Sets request.tokenAccess.
 */
export function tokenAccessHook(limits: RateLimits, reader: TokenAccessReader) {
  return async function tokenAccess(request: FastifyRequest): Promise<void> {
    await limits.evaluate?.hitOnce(request.raw, request.ip);
    const secret = bearer(request);
    const sdkKeyGiven = request.headers['x-sdk-key'] !== undefined || request.headers['x-api-key'] !== undefined || (secret !== undefined && !secret.startsWith(TOKEN_PREFIX));
    if (sdkKeyGiven && (secret === undefined || !secret.startsWith(TOKEN_PREFIX))) {
      throw new Forbidden('Local evaluation needs an API token of the project (Authorization: Bearer gdn_…), not an SDK key: the ruleset names users');
    }
    request.tokenAccess = await reader.read(request);
  };
}
