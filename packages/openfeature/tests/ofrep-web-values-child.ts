/**
 * Run by variants.test.ts in a child process with `node --experimental-eventsource` (Node 20 has
 * no global EventSource without it): the stock @openfeature/ofrep-web-provider, unmodified, for
 * one user (GUIDON_CONTEXT). It evaluates each of GUIDON_CALLS ([type, key, default]) with the
 * typed getters and writes their details as one JSON line on stdout.
 */
import { OpenFeature } from '@openfeature/web-sdk';
import { OFREPWebProvider } from '@openfeature/ofrep-web-provider';

type Call = ['boolean' | 'string' | 'number' | 'object', string, never];
const calls = JSON.parse(process.env.GUIDON_CALLS!) as Call[];
const provider = new OFREPWebProvider({ baseUrl: process.env.GUIDON_URL!, headers: [['X-SDK-Key', process.env.GUIDON_SDK_KEY!]], cacheMode: 'disabled' });
await OpenFeature.setContext(JSON.parse(process.env.GUIDON_CONTEXT!));
await OpenFeature.setProviderAndWait(provider);
const client = OpenFeature.getClient();
const getters: Record<Call[0], (key: string, fallback: never) => unknown> = {
  boolean: client.getBooleanDetails.bind(client),
  string: client.getStringDetails.bind(client),
  number: client.getNumberDetails.bind(client),
  object: client.getObjectDetails.bind(client),
};
process.stdout.write(`${JSON.stringify(calls.map(([type, key, fallback]) => getters[type](key, fallback)))}\n`);
await OpenFeature.close();
process.exit(0);
