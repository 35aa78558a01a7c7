/**
 * A real HTTP proxy in front of a test server, for the failures a network brings: it forwards
 * every request as it is, and on demand cuts the open streams, or lets a request reach the server
 * and loses its answer (the server did the work; the client sees its connection cut), or holds
 * its answer back until the test releases it.
 */
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

export interface CuttingProxy {
  url: string;
  /** Requests forwarded, by path (without the query), answered or not. */
  forwarded: string[];
  /**
   * Cuts every open stream (GET /sdk/v1/stream) on both sides, as a network failure would; with
   * `hold`, new streams are refused (503) until releaseStreams(), so the outage lasts as long as
   * the test needs to look at it; with `hold: 'everything'`, every other request too (Guidon
   * away): requests under way are cut as well, and new ones refused, so no fetch can bring the
   * client up to date meanwhile, as one started by a change announced just before the cut would
   * otherwise do.
   */
  cutStreams(hold?: boolean | 'everything'): void;
  releaseStreams(): void;
  /** The next request to `path` reaches the server; its answer is read and lost: the client's connection is cut instead. */
  loseNextAnswer(path: string): Promise<void>;
  /** The next request to `path` reaches the server; its answer waits until release() (`reached` resolves once the server answered). */
  holdNextAnswer(path: string): { reached: Promise<void>; release: () => void };
  close(): Promise<void>;
}

export async function startCuttingProxy(target: string): Promise<CuttingProxy> {
  type Exchange = { client: Socket; upstream: http.ClientRequest };
  const streams = new Set<Exchange>();
  /** Every exchange whose answer has not ended yet, streams included. */
  const underWay = new Set<Exchange>();
  const losing = new Map<string, () => void>();
  const holding = new Map<string, { answered: () => void; released: Promise<void> }>();
  const forwarded: string[] = [];
  let held: boolean | 'everything' = false;
  const agent = new http.Agent({ keepAlive: false });
  const proxy = http.createServer((request: IncomingMessage, response: ServerResponse) => {
    const path = new URL(request.url ?? '/', 'http://proxy').pathname;
    forwarded.push(path);
    if ((held && path === '/sdk/v1/stream') || held === 'everything') {
      response.writeHead(503, { 'content-type': 'application/json', 'retry-after': '1' }).end('{"statusCode":503,"error":"Service Unavailable","message":"held by the test"}');
      return;
    }
    const lost = losing.get(path);
    if (lost) losing.delete(path);
    const hold = holding.get(path);
    if (hold) holding.delete(path);
    const upstream = http.request(`${target}${request.url}`, { method: request.method, headers: request.headers, agent }, (answer) => {
      if (lost) {
        answer.resume();
        answer.on('end', () => {
          request.socket.destroy();
          lost();
        });
        return;
      }
      const forward = () => {
        response.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(response);
      };
      if (!hold) return forward();
      hold.answered();
      void hold.released.then(forward);
    });
    upstream.on('error', () => request.socket.destroy());
    request.pipe(upstream);
    const exchange = { client: request.socket, upstream };
    underWay.add(exchange);
    response.once('close', () => underWay.delete(exchange));
    if (path === '/sdk/v1/stream') {
      streams.add(exchange);
      request.socket.once('close', () => {
        streams.delete(exchange);
        upstream.destroy();
      });
    }
  });
  const cut = (exchanges: Set<Exchange>) => {
    for (const { client, upstream } of exchanges) {
      client.destroy();
      upstream.destroy();
    }
    exchanges.clear();
  };
  await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`,
    forwarded,
    cutStreams(hold = false) {
      held = hold;
      if (hold === 'everything') cut(underWay);
      cut(streams);
    },
    releaseStreams() {
      held = false;
    },
    loseNextAnswer(path) {
      return new Promise<void>((resolve) => losing.set(path, resolve));
    },
    holdNextAnswer(path) {
      let release!: () => void;
      const released = new Promise<void>((resolve) => (release = resolve));
      const reached = new Promise<void>((answered) => holding.set(path, { answered, released }));
      return { reached, release };
    },
    async close() {
      proxy.closeAllConnections();
      await new Promise<void>((resolve) => proxy.close(() => resolve()));
      agent.destroy();
    },
  };
}
