import type { FastifyBaseLogger } from 'fastify';
import { buildApp } from './app.js';
import { ConfigError, loadConfig } from './config.js';
import { openDatabase } from './db/database.js';

async function main(): Promise<void> {
  const config = loadConfig();
  let log: FastifyBaseLogger | undefined;
  const database = await openDatabase(config.database, {
    poolSize: config.databasePoolSize,
    onPoolError: (error) => log?.error({ err: error }, 'database connection lost; the pool will open a new one'),
  });
  const app = await buildApp(config, database);
  log = app.log;

  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    app.log.info({ signal }, 'shutting down: finishing in-flight requests');
    try {
      await app.close(); // stops accepting, waits for in-flight requests, flushes evaluation history
      await database.close();
      process.exit(0);
    } catch (error) {
      app.log.error({ err: error }, 'shutdown failed');
      process.exit(1);
    }
  };
  process.on('SIGTERM', () => void stop('SIGTERM'));
  process.on('SIGINT', () => void stop('SIGINT'));

  await app.listen({ port: config.port, host: config.host });
}

main().catch((error: unknown) => {
  console.error(error instanceof ConfigError ? `Configuration error: ${error.message}` : error);
  process.exit(1);
});
