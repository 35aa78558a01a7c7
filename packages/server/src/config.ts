import { readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';

/** Every setting of the service, read from the environment once (the README's Configuration table). */
export interface Config {
  port: number;
  host: string;
  database: { kind: 'sqlite'; path: string } | { kind: 'postgres'; url: string };
  /** PostgreSQL connections per process. */
  databasePoolSize: number;
  /** Server processes (node:cluster) sharing the port; 1 runs in this process. WORKERS=auto: one per CPU this process may use. */
  workers: number;
  redisUrl: string | null;
  /** null: generated once and kept in the database. */
  jwtSecret: string | null;
  smtpUrl: string | null;
  mailFrom: string;
  publicUrl: string;
  /** Passed to Fastify's trustProxy: addresses/CIDRs whose X-Forwarded-For is honoured. */
  trustProxy: boolean | string[];
  rateLimits: { evaluatePerMinute: number; authPerMinute: number; eventsPerMinute: number };
  logLevel: string;
  evaluationRetentionDays: number;
  /** Origins allowed by CORS; empty: CORS headers are not sent. `*` allows any. */
  corsOrigins: string[];
  /** false: /auth/register only for an address with a pending invitation. */
  allowRegistration: boolean;
  /** true: webhooks may target loopback, link-local and private addresses. */
  webhookAllowPrivate: boolean;
  /** Open streams at most per client address and SDK key together (docs/security.md, Change streams); 0: no cap. */
  streamsPerClient: number;
  /**
   * The fetches a second one instance asks its streams' clients to arrive at after a change
   * (docs/sdk.md, "Spread refetches"): each message carries a spread of its project's open
   * streams on the instance divided by this; 0: no spread announced.
   */
  refetchRate: number;
  /** Bearer token that GET /metrics (Prometheus) requires; null: /metrics answers 404. */
  metricsToken: string | null;
  /** At shutdown, how long the last history flush may take before its rows are given up. */
  historyFlushTimeoutSeconds: number;
  /** Sign-in with OpenID Connect (docs/security.md, docs/deploy.md); null when OIDC_ISSUER, OIDC_CLIENT_ID and OIDC_CLIENT_SECRET are not all set. */
  oidc: OidcConfig | null;
  /** false (with OIDC configured): password login, registration and reset answer 403. Always true without OIDC. */
  passwordLogin: boolean;
}

export interface OidcConfig {
  issuer: string;
  clientId: string;
  clientSecret: string;
  /** The button says "Sign in with <name>". */
  name: string;
  /** Lower-cased email domains that may create an account on first sign-in; empty: any. */
  allowedDomains: string[];
}

export class ConfigError extends Error {}

/**
 * proxy-addr's name for 127/8 and ::1. Private ranges are not trusted by default: any client
 * inside them could name its own address in X-Forwarded-For and dodge the per-IP limits (docs/security.md, Client addresses and rate limits).
 */
const DEFAULT_TRUSTED_PROXIES = ['loopback'];

/** HS256 wants a key at least as long as its hash (RFC 7518 §3.2): 256 bits. */
const MIN_JWT_SECRET_BYTES = 32;

type Env = Record<string, string | undefined>;

/**
 * The settings that hold secrets. Each may be given instead as <NAME>_FILE, a path whose content
 * (trimmed) is the value: how Docker and Kubernetes mount secrets (docs/deploy.md).
 */
const SECRET_SETTINGS = ['JWT_SECRET', 'DATABASE_URL', 'REDIS_URL', 'SMTP_URL', 'OIDC_CLIENT_SECRET'] as const;

/** The environment with each <NAME>_FILE read into <NAME>; both given is a mistake, not a choice between them. */
function withSecretFiles(env: Env): Env {
  const resolved = { ...env };
  for (const name of SECRET_SETTINGS) {
    const path = env[`${name}_FILE`];
    if (!path) continue;
    if (env[name]) throw new ConfigError(`${name} and ${name}_FILE are both set: give one of them`);
    let content: string;
    try {
      content = readFileSync(path, 'utf8');
    } catch (error) {
      throw new ConfigError(`${name}_FILE: cannot read ${path} (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`);
    }
    resolved[name] = content.trim();
    if (!resolved[name]) throw new ConfigError(`${name}_FILE: ${path} is empty`);
  }
  return resolved;
}

function intSetting(env: Env, name: string, fallback: number, min = 0): number {
  const raw = env[name]?.trim();
  if (raw === undefined || raw === '') return fallback;
  if (!/^\d+$/.test(raw) || Number(raw) < min) throw new ConfigError(`${name} must be a whole number ≥ ${min}, got "${raw}"`);
  return Number(raw);
}

/** WORKERS: a whole number ≥ 1, or `auto` for one per CPU the process may run on (honours taskset and cpusets). */
function workersSetting(env: Env): number {
  if (env.WORKERS?.trim().toLowerCase() === 'auto') return availableParallelism();
  return intSetting(env, 'WORKERS', 1, 1);
}

function parseDatabase(raw: string | undefined): Config['database'] {
  const value = raw?.trim();
  if (!value) return { kind: 'sqlite', path: './data/guidon.db' };
  if (value.startsWith('sqlite:')) {
    const path = value.slice('sqlite:'.length).replace(/^\/\/(?=\/)/, '');
    if (!path) throw new ConfigError('DATABASE_URL sqlite: needs a file path, e.g. sqlite:./data/guidon.db');
    return { kind: 'sqlite', path };
  }
  if (/^postgres(ql)?:\/\//.test(value)) return { kind: 'postgres', url: value };
  throw new ConfigError('DATABASE_URL must start with sqlite: or postgres://');
}

function boolSetting(env: Env, name: string, fallback: boolean): boolean {
  const raw = env[name]?.trim().toLowerCase();
  if (raw === undefined || raw === '') return fallback;
  if (raw === 'true') return true;
  if (raw === 'false') return false;
  throw new ConfigError(`${name} must be true or false, got "${env[name]}"`);
}

function parseTrustProxy(raw: string | undefined): Config['trustProxy'] {
  const value = raw?.trim();
  if (!value) return DEFAULT_TRUSTED_PROXIES;
  if (value === 'true') return true;
  if (value === 'false') return false;
  return value.split(',').map((part) => part.trim()).filter(Boolean);
}

/** PUBLIC_URL: the base of the links in emails, so an absolute http(s) address; this machine's by default. */
function publicUrlSetting(env: Env, port: number): string {
  const raw = env.PUBLIC_URL?.trim();
  if (!raw) return `http://localhost:${port === 0 ? 8080 : port}`;
  if (!URL.canParse(raw) || !['http:', 'https:'].includes(new URL(raw).protocol)) {
    throw new ConfigError(`PUBLIC_URL must be an absolute http(s) address such as https://flags.example.com, got "${raw}"`);
  }
  return raw.replace(/\/+$/, '');
}

/** JWT_SECRET: unset (generated and kept in the database), or at least 32 bytes. */
function jwtSecretSetting(env: Env): string | null {
  const secret = env.JWT_SECRET;
  if (!secret) return null;
  const bytes = Buffer.byteLength(secret, 'utf8');
  if (bytes < MIN_JWT_SECRET_BYTES) {
    throw new ConfigError(`JWT_SECRET must be at least ${MIN_JWT_SECRET_BYTES} bytes (got ${bytes}); e.g. openssl rand -base64 48, or leave it unset to have one generated`);
  }
  return secret;
}

/** OIDC_*: all three of issuer, client id and secret, or none (a half configuration is a mistake, not "off"). */
function oidcSetting(env: Env): OidcConfig | null {
  const issuer = env.OIDC_ISSUER?.trim() ?? '';
  const clientId = env.OIDC_CLIENT_ID?.trim() ?? '';
  const clientSecret = env.OIDC_CLIENT_SECRET ?? '';
  if (!issuer && !clientId && !clientSecret) return null;
  if (!issuer || !clientId || !clientSecret) throw new ConfigError('OIDC_ISSUER, OIDC_CLIENT_ID and OIDC_CLIENT_SECRET must be set together (or none of them)');
  if (!URL.canParse(issuer) || !['http:', 'https:'].includes(new URL(issuer).protocol)) {
    throw new ConfigError(`OIDC_ISSUER must be the provider's absolute http(s) issuer address, e.g. https://sso.example.com/realms/acme, got "${issuer}"`);
  }
  const allowedDomains = (env.OIDC_ALLOWED_DOMAINS ?? '').split(',').map((domain) => domain.trim().toLowerCase().replace(/^@/, '')).filter(Boolean);
  return { issuer, clientId, clientSecret, name: env.OIDC_NAME?.trim() || 'SSO', allowedDomains };
}

export function loadConfig(given: Env = process.env): Readonly<Config> {
  const env = withSecretFiles(given);
  const port = intSetting(env, 'PORT', 8080);
  if (port > 65535) throw new ConfigError('PORT must be at most 65535');
  const publicUrl = publicUrlSetting(env, port);
  const oidc = oidcSetting(env);
  return Object.freeze({
    port,
    host: env.HOST?.trim() || '0.0.0.0',
    database: parseDatabase(env.DATABASE_URL),
    databasePoolSize: intSetting(env, 'DATABASE_POOL_SIZE', 10, 1),
    workers: workersSetting(env),
    redisUrl: env.REDIS_URL?.trim() || null,
    jwtSecret: jwtSecretSetting(env),
    smtpUrl: env.SMTP_URL?.trim() || null,
    mailFrom: env.MAIL_FROM?.trim() || 'Guidon <no-reply@guidon.local>',
    publicUrl,
    trustProxy: parseTrustProxy(env.TRUST_PROXY),
    rateLimits: {
      evaluatePerMinute: intSetting(env, 'RATE_LIMIT_EVALUATE', 200),
      authPerMinute: intSetting(env, 'RATE_LIMIT_AUTH', 60),
      eventsPerMinute: intSetting(env, 'RATE_LIMIT_EVENTS', 600),
    },
    logLevel: env.LOG_LEVEL?.trim() || 'info',
    evaluationRetentionDays: intSetting(env, 'EVALUATION_RETENTION_DAYS', 30),
    corsOrigins: (env.CORS_ORIGINS ?? '').split(',').map((origin) => origin.trim()).filter(Boolean),
    allowRegistration: boolSetting(env, 'ALLOW_REGISTRATION', true),
    webhookAllowPrivate: boolSetting(env, 'WEBHOOK_ALLOW_PRIVATE', false),
    streamsPerClient: intSetting(env, 'STREAMS_PER_CLIENT', 50),
    refetchRate: intSetting(env, 'REFETCH_RATE', 5000),
    metricsToken: env.METRICS_TOKEN?.trim() || null,
    historyFlushTimeoutSeconds: intSetting(env, 'HISTORY_FLUSH_TIMEOUT_SECONDS', 10, 1),
    oidc,
    // Turning passwords off without another way in would lock everyone out: it needs OIDC (docs/security.md).
    passwordLogin: boolSetting(env, 'PASSWORD_LOGIN', true) || oidc === null,
  });
}
