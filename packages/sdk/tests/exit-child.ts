/**
 * Run by client.test.ts in a child process: a remote client that polls and a local client whose
 * stream is refused (it waits between attempts), neither closed. Writes what ready() said; then
 * the process must end by itself: no timer of the SDK keeps it alive.
 */
import { createClient } from '@guidon/sdk';

const [baseUrl, sdkKey] = process.argv.slice(2) as [string, string];
const polling = createClient({ baseUrl, sdkKey, environment: 'production', stream: false, pollIntervalMs: 200 });
const refused = createClient({ baseUrl, apiToken: 'gdn_not_a_token', environment: 'production', mode: 'local', pollIntervalMs: 200 });
process.stdout.write(`${JSON.stringify([await polling.ready(), await refused.ready()])}\n`);
