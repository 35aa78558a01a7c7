/**
 * Run by openfeature.test.ts in a child process with `node --experimental-eventsource` (Node 20
 * has no global EventSource without it): the stock @openfeature/ofrep-web-provider, unmodified,
 * against Guidon. It reports on stdout, one JSON line per step, and takes the next step when the
 * parent writes a line on stdin.
 */
import { createInterface } from 'node:readline';
import { OpenFeature, ProviderEvents } from '@openfeature/web-sdk';
import { OFREPWebProvider } from '@openfeature/ofrep-web-provider';

const report = (step: string, details: Record<string, unknown>) => process.stdout.write(`${JSON.stringify({ step, ...details })}\n`);
const lines = createInterface({ input: process.stdin })[Symbol.asyncIterator]();
const next = async () => (await lines.next()).value as string;

const provider = new OFREPWebProvider({ baseUrl: process.env.GUIDON_URL!, headers: [['X-SDK-Key', process.env.GUIDON_SDK_KEY!]], cacheMode: 'disabled' });
const client = OpenFeature.getClient();
const flags = () => Object.fromEntries(['checkout', 'targeted'].map((key) => [key, client.getBooleanDetails(key, false)]));
client.addHandler(ProviderEvents.ConfigurationChanged, (event) => report('changed', { flagsChanged: event?.flagsChanged ?? [], flags: flags() }));

await OpenFeature.setContext({ targetingKey: 'user-1' });
await OpenFeature.setProviderAndWait(provider);
report('ready', { flags: flags(), typed: client.getStringDetails('checkout', 'x') });

// The parent toggles a flag and waits for 'changed'; then asks for a new user attribute.
await next();
await OpenFeature.setContext({ targetingKey: 'user-1', email: 'ada@example.com' });
report('context', { flags: flags() });
await next();
await OpenFeature.close();
process.exit(0);
