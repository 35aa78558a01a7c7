/**
 * A server in a process of its own, for tests that kill it (SIGKILL, no shutdown) or stop it
 * (SIGTERM: the app closes as main.js closes it, then the process exits). Started by
 * tests with: node server-process.js '<json>' where json is { env, options } (options as buildApp
 * takes them); listens on PORT (default: any free port) and prints "listening <url>" once it serves.
 */
import { buildApp, type BuildOptions } from '../src/app.js';
import { loadConfig } from '../src/config.js';
import { openDatabase } from '../src/db/database.js';

const { env, options } = JSON.parse(process.argv[2] ?? '{}') as { env: Record<string, string>; options: BuildOptions };
const config = loadConfig({ HOST: '127.0.0.1', PORT: '0', LOG_LEVEL: 'warn', RATE_LIMIT_AUTH: '0', RATE_LIMIT_EVALUATE: '0', ...env });
const database = await openDatabase(config.database, {});
const app = await buildApp(config, database, options);
await app.listen({ port: config.port, host: '127.0.0.1' });
const address = app.server.address();
if (address && typeof address === 'object') process.stdout.write(`listening http://127.0.0.1:${address.port}\n`);
process.once('SIGTERM', () => {
  void app
    .close()
    .then(() => database.close())
    .finally(() => process.exit(0));
});
