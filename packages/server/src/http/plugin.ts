import type { IncomingMessage, ServerResponse } from 'node:http';
import type { FastifyBaseLogger, FastifyInstance, FastifyPluginAsync, RawServerDefault } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';

export type App = FastifyInstance<RawServerDefault, IncomingMessage, ServerResponse, FastifyBaseLogger, TypeBoxTypeProvider>;

/**
 * A route plugin, registered by the composition root (app.ts) with the services it names as its
 * options: a module names only what it uses.
 */
export type ApiPlugin<Options extends object = Record<never, never>> = FastifyPluginAsync<Options, RawServerDefault, TypeBoxTypeProvider>;
