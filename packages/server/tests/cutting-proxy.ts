/**
 * A real HTTP proxy in front of a test server, for the failures a network brings: it forwards
 * every request as it is, and on demand cuts the open streams, or lets a request reach the server
 * and loses its answer (the server did the work; the client sees its connection cut).
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
   * away): no fetch can bring the client up to date meanwhile, as a change announced just before
   * the cut would otherwise do.
   */
  cutStreams(hold?: boolean | 'everything'): void;
  releaseStreams(): void;
  /** The next request to `path` reaches the server; its answer is read and lost: the client's connection is cut instead. */
  loseNextAnswer(path: string): Promise<void>;
  close(): Promise<void>;
}

export async function startCuttingProxy(target: string): Promise<CuttingProxy> {
  const streams = new Set<{ client: Socket; upstream: http.ClientRequest }>();
  const losing = new Map<string, () => void>();
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
    const upstream = http.request(`${target}${request.url}`, { method: request.method, headers: request.headers, agent }, (answer) => {
      if (lost) {
        answer.resume();
        answer.on('end', () => {
          request.socket.destroy();
          lost();
        });
        return;
      }
      response.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(response);
    });
    upstream.on('error', () => request.socket.destroy());
    request.pipe(upstream);
    if (path === '/sdk/v1/stream') {
      const stream = { client: request.socket, upstream };
      streams.add(stream);
      request.socket.once('close', () => {
        streams.delete(stream);
        upstream.destroy();
      });
    }
  });
  await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`,
    forwarded,
    cutStreams(hold = false) {
      held = hold;
      for (const { client, upstream } of streams) {
        client.destroy();
        upstream.destroy();
      }
      streams.clear();
    },
    releaseStreams() {
      held = false;
    },
    loseNextAnswer(path) {
      return new Promise<void>((resolve) => losing.set(path, resolve));
    },
    async close() {
      proxy.closeAllConnections();
      await new Promise<void>((resolve) => proxy.close(() => resolve()));
      agent.destroy();
    },
  };
}
