/** A webhook receiver for the tests: a real HTTP server on 127.0.0.1 that keeps what it was sent. */
import { createServer, type IncomingHttpHeaders, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Received {
  url: string;
  headers: IncomingHttpHeaders;
  body: string;
  /** When the request arrived (Date.now()). */
  at: number;
}

/** An HTTP receiver; `answer` decides each request's status, or 'hang' to never answer. */
export class Receiver {
  readonly requests: Received[] = [];
  answer: (received: Received, index: number) => number | 'hang' = () => 200;
  private readonly server: Server;
  private readonly hanging: ServerResponse[] = [];
  url = '';
  port = 0;

  constructor() {
    this.server = createServer((req, res) => {
      const at = Date.now();
      let body = '';
      req.setEncoding('utf8');
      req.on('data', (chunk: string) => (body += chunk));
      req.on('end', () => {
        const received = { url: req.url ?? '', headers: req.headers, body, at };
        this.requests.push(received);
        const status = this.answer(received, this.requests.length - 1);
        if (status === 'hang') this.hanging.push(res);
        else res.writeHead(status).end();
      });
    });
  }
  async start(): Promise<this> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.port = (this.server.address() as AddressInfo).port;
    this.url = `http://127.0.0.1:${this.port}/hook`;
    return this;
  }
  of(action: string): Received[] {
    return this.requests.filter((received) => received.headers['x-guidon-event'] === action);
  }
  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise((resolve) => this.server.close(resolve));
  }
}
