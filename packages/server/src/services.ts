import type { IncomingMessage, ServerResponse } from 'node:http';
import type { FastifyBaseLogger, FastifyInstance, FastifyPluginAsync, RawServerDefault } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { Config } from './config.js';
import type { Db } from './db/database.js';
import type { RateLimits } from './rate-limits.js';
import type { Mailer } from './modules/accounts/mailer.js';
import type { LoginTokens } from './modules/accounts/tokens.js';
import type { EvaluateCache } from './modules/evaluate/evaluate.cache.js';
import type { ChangeFeed } from './modules/evaluate/evaluate.changes.js';
import type { HistoryRecorder } from './modules/history/history.recorder.js';
import type { ProjectWrites } from './modules/audit/project-writes.js';
import type { WebhookSender } from './modules/webhooks/webhooks.sender.js';

export type App = FastifyInstance<RawServerDefault, IncomingMessage, ServerResponse, FastifyBaseLogger, TypeBoxTypeProvider>;

/** What the composition root (app.ts) builds once and hands to every route plugin. */
export interface Services {
  config: Readonly<Config>;
  db: Db;
  ping: () => Promise<void>;
  tokens: LoginTokens;
  limits: RateLimits;
  mailer: Mailer;
  evaluateCache: EvaluateCache;
  changes: ChangeFeed;
  history: HistoryRecorder;
  /** The one change path for every write under a project (audit/project-writes.ts). */
  writes: ProjectWrites;
  webhooks: WebhookSender;
}

/** A route plugin: registered by app.ts with the services as its options. */
export type ApiPlugin = FastifyPluginAsync<Services, RawServerDefault, TypeBoxTypeProvider>;

declare module 'fastify' {
  interface FastifyContextConfig {
    /**
     * The least a caller needs to use the route (contract §8): 'user' is any signed-in caller,
     * 'login' a signed-in user but no API token; the project roles apply to routes under
     * /api/projects/{project_id}. Declared by every /api route (the app does not start otherwise)
     * and decided in one place: authorize() in modules/members/access.ts.
     */
    role?: 'login' | 'user' | 'viewer' | 'editor' | 'owner';
  }
}
