import { createHmac, randomBytes } from 'node:crypto';
import { SignJWT, jwtVerify } from 'jose';
import type { Db } from '../../db/database.js';

const LIFETIME_SECONDS = 24 * 60 * 60;

export interface TokenClaims {
  userId: string;
  tokenVersion: number;
}

export interface VerifiedClaims extends TokenClaims {
  /** The token's own id, which log out revokes; null in tokens issued before log out existed. */
  jti: string | null;
  issuedAt: Date;
  expiresAt: Date;
}

/** Login tokens: JWT HS256, sub = user id, exp = iat + 24 h, tv = the user's token version, jti = its id (log out). */
export class LoginTokens {
  private constructor(private readonly key: Uint8Array) {}

  /** The secret comes from JWT_SECRET, or is generated once and kept in the settings table. */
  static async create(db: Db, configured: string | null): Promise<LoginTokens> {
    if (configured) return new LoginTokens(new TextEncoder().encode(configured));
    const generated = randomBytes(48).toString('base64url');
    // Insert-if-absent, then read back: several instances starting at once agree on one secret.
    await db.insertInto('settings').values({ key: 'jwt_secret', value: generated }).onConflict((c) => c.column('key').doNothing()).execute();
    const row = await db.selectFrom('settings').select('value').where('key', '=', 'jwt_secret').executeTakeFirstOrThrow();
    return new LoginTokens(new TextEncoder().encode(row.value));
  }

  /** A key of its own for another kind of token (e.g. SDK stream tokens), derived from the same secret. */
  keyFor(purpose: string): Uint8Array {
    return createHmac('sha256', this.key).update(purpose).digest();
  }

  issue(claims: TokenClaims): Promise<string> {
    return new SignJWT({ tv: claims.tokenVersion })
      .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
      .setSubject(claims.userId)
      .setJti(randomBytes(16).toString('base64url'))
      .setIssuedAt()
      .setExpirationTime(`${LIFETIME_SECONDS}s`)
      .sign(this.key);
  }

  /** The token's claims, or null when it is malformed, badly signed or expired. */
  async verify(token: string): Promise<VerifiedClaims | null> {
    try {
      const { payload } = await jwtVerify(token, this.key, { algorithms: ['HS256'], requiredClaims: ['sub', 'exp', 'iat'] });
      if (typeof payload.sub !== 'string' || typeof payload.tv !== 'number') return null;
      const jti = typeof payload.jti === 'string' && payload.jti.length > 0 ? payload.jti : null;
      return { userId: payload.sub, tokenVersion: payload.tv, jti, issuedAt: new Date(payload.iat! * 1000), expiresAt: new Date(payload.exp! * 1000) };
    } catch {
      return null;
    }
  }
}
