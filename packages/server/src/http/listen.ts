/**
 * How one server process listens: on several sockets of one port, where Node can (reusePort).
 *
 * libuv accepts one connection per turn of the event loop and listening socket (since 1.45, in
 * Node 20 and later: it used to accept until none was left). A turn that serves other work (a
 * change's 10,000 stream messages, a slice at a time, beside evaluate's load) takes milliseconds,
 * so a burst of new connections after a change was accepted at a few hundred a second: the
 * kernel's queue filled and the clients' SYNs were dropped and retried 1, 3 and 7 s later
 * (docs/performance.md, "Accepting a burst"). Each socket of a SO_REUSEPORT group is a queue of
 * its own that the kernel fills in turn by the connection's addresses, and each is accepted from
 * once a turn: ACCEPT_SOCKETS of them accept that many times faster.
 */
import { createServer, type Server } from 'node:net';
import type { FastifyInstance, FastifyListenOptions } from 'fastify';

/** Listening sockets of a single-process server, where the runtime has reusePort. */
export const ACCEPT_SOCKETS = 16;

/** Whether this Node has net's reusePort (22.12 and 23.1 and later; not Node 20). */
export function hasReusePort(version = process.versions.node): boolean {
  const [major = 0, minor = 0] = version.split('.').map(Number);
  return major > 23 || (major === 23 && minor >= 1) || (major === 22 && minor >= 12);
}

/**
 * app.listen, with ACCEPT_SOCKETS - 1 more sockets on the port it got, each handing its
 * connections to the app's HTTP server as its own would be. Without reusePort (Node 20), or for
 * a path (a Unix socket), one socket as before. A port already in use still fails the start:
 * it is first tried without reusePort, so a second Guidon on the same port does not join the
 * first's group (a process may join a SO_REUSEPORT group only when every socket in it allows it).
 */
export async function listenOnSockets(app: FastifyInstance, options: FastifyListenOptions & { port: number; host: string }, sockets = ACCEPT_SOCKETS): Promise<void> {
  if (sockets <= 1 || !hasReusePort()) {
    await app.listen(options);
    return;
  }
  if (options.port !== 0) await portIsFree(options.host, options.port);
  const extra: Server[] = [];
  // Stops them accepting as Fastify stops its own. Not waited for: a socket's close waits for its
  // connections, which are the HTTP server's, and Fastify ends them after this hook.
  app.addHook('preClose', async () => {
    for (const server of extra) server.close();
  });
  await app.listen({ ...options, reusePort: true } as FastifyListenOptions);
  const http = app.server;
  const address = http.address();
  if (address === null || typeof address === 'string') return;
  // As the HTTP server's own sockets are made (http.Server's net options), then handed to it.
  const settings = http as unknown as { noDelay: boolean; keepAlive: boolean; keepAliveInitialDelay: number; highWaterMark: number };
  for (let i = 1; i < sockets; i++) {
    const server = createServer(
      { allowHalfOpen: true, noDelay: settings.noDelay, keepAlive: settings.keepAlive, keepAliveInitialDelay: settings.keepAliveInitialDelay * 1000, highWaterMark: settings.highWaterMark },
      (socket) => http.emit('connection', socket),
    );
    try {
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        server.listen({ port: address.port, host: address.address, backlog: options.backlog, reusePort: true } as Parameters<Server['listen']>[0], () => {
          server.off('error', reject);
          resolve();
        });
      });
    } catch (error) {
      // The server works on the sockets it has: fewer only means slower accepting in a burst.
      app.log.warn({ err: error }, `listening on ${i} socket(s) of port ${address.port}, not ${sockets}`);
      return;
    }
    extra.push(server);
  }
}

/** Fails as listen would (EADDRINUSE) when something holds the port. */
function portIsFree(host: string, port: number): Promise<void> {
  const probe = createServer();
  return new Promise((resolve, reject) => {
    probe.once('error', reject);
    probe.listen({ port, host, exclusive: true }, () => probe.close(() => resolve()));
  });
}
