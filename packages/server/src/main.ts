import cluster from 'node:cluster';
import type { FastifyBaseLogger } from 'fastify';
import pino from 'pino';
import { buildApp } from './app.js';
import { ConfigError, loadConfig, type Config } from './config.js';
import { openDatabase } from './db/database.js';
import { listenOnSockets } from './http/listen.js';
import { relayClusterChanges } from './modules/changes/carriers.js';

/** On a terminal, readable log lines; otherwise (production, files, collectors) JSON lines, and pino-pretty is not loaded. */
async function logStream(): Promise<NodeJS.WritableStream | undefined> {
  if (!process.stdout.isTTY) return undefined;
  const { default: pinoPretty } = await import('pino-pretty');
  return pinoPretty({ sync: true, translateTime: 'SYS:HH:MM:ss', ignore: 'pid,hostname' });
}

/** Where a person opens the dashboard: a wildcard listen address is reached as localhost. */
function dashboardUrl(address: string): string {
  const url = new URL(address);
  if (['0.0.0.0', '[::]', '127.0.0.1', '[::1]'].includes(url.hostname)) url.hostname = 'localhost';
  return url.href;
}

const SHUTDOWN_GRACE_MS = 500;

/**
 * Connections the kernel may hold for us before we accept them. Node's default (511) overflowed
 * when 10,000 SDKs in local mode fetched the ruleset after one change: their first SYNs were
 * dropped and retried after 1, 3, 7 s. The kernel caps this at net.core.somaxconn (4096 on Linux
 * 5.4 and later; raise it for larger bursts: docs/deploy.md).
 */
const LISTEN_BACKLOG = 65_535;

/** One server: listens, and on SIGTERM/SIGINT finishes in-flight requests, flushes history, closes the database. */
async function serve(config: Readonly<Config>): Promise<void> {
  let log: FastifyBaseLogger | undefined;
  const database = await openDatabase(config.database, {
    migrate: !cluster.isWorker, // the primary migrated before forking
    poolSize: config.databasePoolSize,
    onPoolError: (error) => log?.error({ err: error }, 'database connection lost; the pool will open a new one'),
  });
  const stream = await logStream();
  const app = await buildApp(config, database, stream ? { logStream: stream } : {});
  log = app.log;

  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    app.readiness.state = 'stopping'; // GET /ready answers 503 from now on, while requests are still served
    app.log.info({ signal }, 'shutting down: finishing in-flight requests');
    // The history flush gives up after its own timeout; this is the backstop for anything else that hangs.
    setTimeout(() => {
      app.log.error('shutdown did not finish in time; exiting');
      process.exit(1);
    }, (config.historyFlushTimeoutSeconds + 10) * 1000).unref();
    try {
      // Connections the kernel accepted may not have been read yet, and close() drops those as
      // idle: keep serving a moment (SHUTDOWN_GRACE_MS) so every request already sent is answered.
      await new Promise((resolve) => setTimeout(resolve, SHUTDOWN_GRACE_MS));
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

  // The first line a person reads says where to go.
  const options = { port: config.port, host: config.host, backlog: LISTEN_BACKLOG, listenTextResolver: (address: string) => `Guidon dashboard at ${dashboardUrl(address)} (Server listening at ${address}; API docs at ${dashboardUrl(address)}docs)` };
  // Several sockets where Node can (http/listen.ts); a worker of WORKERS listens through the primary, which accepts for all.
  if (cluster.isWorker) await app.listen(options);
  else await listenOnSockets(app, options);
}

/**
 * WORKERS=N: this process migrates the database, then forks N servers that share the port. It
 * relays change notifications between them (SQLite) and keeps the rate-limit counters (no
 * Redis), restarts a worker that dies, and on SIGTERM/SIGINT stops them all gracefully.
 */
async function supervise(config: Readonly<Config>): Promise<void> {
  const log = pino({ level: config.logLevel }, (await logStream()) ?? process.stdout);
  const database = await openDatabase(config.database, { poolSize: 1 });
  await database.close();
  if (!config.redisUrl) new (await import('rate-limiter-flexible')).RateLimiterClusterMaster();
  relayClusterChanges();

  let stopping = false;
  let failed = false;
  cluster.on('exit', (worker, code, signal) => {
    if (stopping) {
      if (code !== 0) failed = true;
      if (Object.keys(cluster.workers ?? {}).length === 0) process.exit(failed ? 1 : 0);
      return;
    }
    log.error({ pid: worker.process.pid, code, signal }, 'worker died; starting another');
    setTimeout(() => cluster.fork(), 1000).unref();
  });
  const stop = (signal: NodeJS.Signals) => {
    if (stopping) return;
    stopping = true;
    log.info({ signal }, 'shutting down the workers');
    for (const worker of Object.values(cluster.workers ?? {})) worker?.process.kill('SIGTERM');
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));

  for (let i = 0; i < config.workers; i++) cluster.fork();
  log.info({ workers: config.workers, port: config.port }, `Guidon dashboard at ${dashboardUrl(`http://${config.host}:${config.port}`)}: started the workers`);
}

async function main(): Promise<void> {
  const config = loadConfig();
  if (config.workers > 1 && cluster.isPrimary) await supervise(config);
  else await serve(config);
}

main().catch((error: unknown) => {
  console.error(error instanceof ConfigError ? `Configuration error: ${error.message}` : error);
  process.exit(1);
});
