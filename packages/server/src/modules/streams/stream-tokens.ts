import { SignJWT, jwtVerify } from 'jose';

/** Long enough for a page's EventSource to (re)connect; a later bulk answer hands out a fresh one. */
const LIFETIME_SECONDS = 10 * 60;

/** What a stream token lets its holder do: follow one environment of one project, while the SDK key it was issued under is current. */
export interface StreamScope {
  projectId: string;
  environment: string;
  /** sdkKeyHash of the key it was issued under: rotating the key retires its tokens. */
  keyHash: string;
}

/**
 * Stream tokens, for a browser EventSource that cannot send the SDK key as a header (docs/sdk.md): JWT HS256 under a key of their own, short-lived and scoped. One is issued per scope and
 * reused for half its lifetime, so handing them out costs the hot path nothing.
 */
export class StreamTokens {
  private readonly issued = new Map<string, { token: string; renewAt: number }>();

  constructor(private readonly key: Uint8Array) {}

  async issue(scope: StreamScope): Promise<string> {
    const id = `${scope.projectId} ${scope.environment} ${scope.keyHash}`;
    const now = Date.now();
    const kept = this.issued.get(id);
    if (kept && kept.renewAt > now) return kept.token;
    const token = await new SignJWT({ env: scope.environment, kh: scope.keyHash })
      .setProtectedHeader({ alg: 'HS256', typ: 'guidon-stream' })
      .setSubject(scope.projectId)
      .setIssuedAt()
      .setExpirationTime(`${LIFETIME_SECONDS}s`)
      .sign(this.key);
    if (this.issued.size > 10_000) for (const [key, entry] of this.issued) if (entry.renewAt <= now) this.issued.delete(key);
    this.issued.set(id, { token, renewAt: now + (LIFETIME_SECONDS * 1000) / 2 });
    return token;
  }

  /** The token's scope, or null when it is malformed, badly signed or expired. */
  async verify(token: string): Promise<StreamScope | null> {
    try {
      const { payload, protectedHeader } = await jwtVerify(token, this.key, { algorithms: ['HS256'], requiredClaims: ['sub', 'exp'] });
      if (protectedHeader.typ !== 'guidon-stream' || typeof payload.sub !== 'string' || typeof payload.env !== 'string' || typeof payload.kh !== 'string') return null;
      return { projectId: payload.sub, environment: payload.env, keyHash: payload.kh };
    } catch {
      return null;
    }
  }
}
