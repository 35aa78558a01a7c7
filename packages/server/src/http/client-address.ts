import type { IncomingMessage } from 'node:http';
import proxyAddr from '@fastify/proxy-addr';
import type { Config } from '../config.js';

/**
 * The client address Fastify gives as `request.ip` under app.ts's `trustProxy: config.trustProxy`,
 * for code that sees a request before Fastify does (evaluate's direct path, whose rate-limit key
 * must be the route's). Fastify 5 (lib/request.js): without trustProxy, the socket's remote
 * address; with it, the last address `proxy-addr` returns, trusting every hop for `true` and the
 * compiled list otherwise. tests/evaluate-direct.test.ts checks both paths count under one key.
 */
export function clientAddressOf(trustProxy: Config['trustProxy']): (request: IncomingMessage) => string | undefined {
  if (!trustProxy) return (request) => request.socket?.remoteAddress;
  const trust = trustProxy === true ? () => true : proxyAddr.compile(trustProxy);
  return (request) => {
    const addresses = proxyAddr.all(request, trust);
    return addresses[addresses.length - 1];
  };
}
