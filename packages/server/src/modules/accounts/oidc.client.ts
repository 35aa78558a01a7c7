import * as client from 'openid-client';
import { EncryptJWT, jwtDecrypt } from 'jose';
import type { FastifyBaseLogger } from 'fastify';
import type { OidcConfig } from '../../config.js';
import { AppError, Forbidden, Invalid, UpstreamFailed } from '../../errors.js';
import { asciiLower, type ProviderAccount } from './oidc.repository.js';

/** How long a started sign-in may take at the provider before its state is refused. */
const FLOW_LIFETIME_SECONDS = 10 * 60;
const SCOPE = 'openid email profile';

/** What the browser carries between /auth/oidc/login and the callback, sealed (docs/api.md, Account). */
export interface SignInFlow {
  state: string;
  nonce: string;
  verifier: string;
  /** Where the dashboard goes after signing in (a path on this origin). */
  next: string;
}

/**
 * The OpenID provider as openid-client sees it: found by discovery on first use (again after a
 * failure: a provider that was away may be back), with the flow's state sealed for a cookie so
 * that any instance behind the address can finish a sign-in that another started.
 */
export class OidcClient {
  private configuration: Promise<client.Configuration> | null = null;
  readonly callbackUrl: string;

  constructor(
    readonly settings: OidcConfig,
    publicUrl: string,
    private readonly sealKey: Uint8Array,
    private readonly log: FastifyBaseLogger,
  ) {
    this.callbackUrl = `${publicUrl}/auth/oidc/callback`;
  }

  private discover(): Promise<client.Configuration> {
    // http:// only when the operator configured an http:// issuer (a provider inside the same network, tests).
    const insecure = new URL(this.settings.issuer).protocol === 'http:' ? { execute: [client.allowInsecureRequests] } : undefined;
    this.configuration ??= client.discovery(new URL(this.settings.issuer), this.settings.clientId, this.settings.clientSecret, undefined, { ...insecure, timeout: 10 }).catch((error: unknown) => {
      this.configuration = null;
      this.log.warn({ err: error, issuer: this.settings.issuer }, 'OpenID discovery failed');
      throw new UpstreamFailed(`Could not reach the identity provider (${this.settings.name}) to sign you in. Try again in a moment; if it keeps failing, tell the person who runs Guidon.`);
    });
    return this.configuration;
  }

  /** The provider's authorization address for a new flow, and the flow sealed for the cookie. */
  async start(next: string): Promise<{ url: string; sealed: string }> {
    const configuration = await this.discover();
    const flow: SignInFlow = { state: client.randomState(), nonce: client.randomNonce(), verifier: client.randomPKCECodeVerifier(), next };
    const url = client.buildAuthorizationUrl(configuration, {
      redirect_uri: this.callbackUrl,
      scope: SCOPE,
      code_challenge: await client.calculatePKCECodeChallenge(flow.verifier),
      code_challenge_method: 'S256',
      state: flow.state,
      nonce: flow.nonce,
    });
    const sealed = await new EncryptJWT({ ...flow }).setProtectedHeader({ alg: 'dir', enc: 'A256GCM' }).setIssuedAt().setExpirationTime(`${FLOW_LIFETIME_SECONDS}s`).encrypt(this.sealKey);
    return { url: url.href, sealed };
  }

  /** The flow this browser started, or null when the cookie is missing, forged or expired. */
  async unseal(sealed: string | undefined): Promise<SignInFlow | null> {
    if (!sealed) return null;
    try {
      const { payload } = await jwtDecrypt(sealed, this.sealKey);
      const { state, nonce, verifier, next } = payload;
      if (typeof state !== 'string' || typeof nonce !== 'string' || typeof verifier !== 'string' || typeof next !== 'string') return null;
      return { state, nonce, verifier, next };
    } catch {
      return null;
    }
  }

  /**
   * Exchanges the callback's code (PKCE, state and nonce checked by openid-client) and reads who
   * signed in. Every failure becomes an AppError whose message a person can act on.
   */
  async finish(query: string, flow: SignInFlow): Promise<{ account: ProviderAccount; idToken: string | undefined }> {
    const configuration = await this.discover();
    const current = new URL(this.callbackUrl);
    current.search = query;
    try {
      const tokens = await client.authorizationCodeGrant(configuration, current, { pkceCodeVerifier: flow.verifier, expectedState: flow.state, expectedNonce: flow.nonce, idTokenExpected: true });
      let claims: Record<string, unknown> = { ...tokens.claims() };
      // Some providers put email only in the userinfo answer (scope claims beside an access token).
      if (typeof claims.email !== 'string' || claims.email_verified === undefined) {
        claims = { ...claims, ...(await client.fetchUserInfo(configuration, tokens.access_token, String(claims.sub))) };
      }
      const email = typeof claims.email === 'string' ? asciiLower(claims.email) : '';
      const verified = claims.email_verified === true || claims.email_verified === 'true';
      return {
        account: { issuer: configuration.serverMetadata().issuer, subject: String(claims.sub), verifiedEmail: email && verified ? email : null },
        idToken: tokens.id_token,
      };
    } catch (error) {
      throw this.explain(error);
    }
  }

  private explain(error: unknown): AppError {
    if (error instanceof client.AuthorizationResponseError) {
      return new Forbidden(`The identity provider did not sign you in (${error.error}${error.error_description ? `: ${error.error_description}` : ''}).`);
    }
    if (error instanceof client.ResponseBodyError && error.error === 'invalid_grant') {
      return new Invalid('This sign-in link was already used or has expired. Start again from the sign-in page.');
    }
    if (error instanceof client.ClientError) {
      const cause = error.cause as { code?: string; message?: string; cause?: { claim?: string } } | undefined;
      if (error.code === 'OAUTH_INVALID_RESPONSE' && /"state"/.test(cause?.message ?? '')) {
        return new Invalid('The answer from the identity provider does not belong to the sign-in this browser started (state mismatch). Start again from the sign-in page.');
      }
      if (error.code === 'OAUTH_JWT_CLAIM_COMPARISON_FAILED' && cause?.cause?.claim === 'nonce') {
        return new Invalid('The identity provider\'s answer was not made for the sign-in this browser started (nonce mismatch). Start again from the sign-in page.');
      }
    }
    this.log.warn({ err: error }, 'OpenID sign-in failed');
    if (error instanceof TypeError) return new UpstreamFailed(`Could not reach the identity provider (${this.settings.name}) to finish signing you in. Try again in a moment.`);
    return new UpstreamFailed('The identity provider\'s answer could not be verified, so you were not signed in. Try again; if it keeps failing, tell the person who runs Guidon.');
  }

  /** Where log out sends the browser: the provider's end-session endpoint when it publishes one, else null. */
  async endSessionUrl(idToken: string | undefined, after: string): Promise<string | null> {
    const configuration = await this.discover();
    if (!configuration.serverMetadata().end_session_endpoint) return null;
    return client.buildEndSessionUrl(configuration, { post_logout_redirect_uri: after, ...(idToken ? { id_token_hint: idToken } : {}) }).href;
  }
}
