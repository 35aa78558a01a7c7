/** A test's own reader of GET /sdk/v1/stream: fetch, and a kept Server-Sent Events parser (not the SDK's: an independent reading of the wire format). */
import http, { type IncomingMessage } from 'node:http';
import { createParser } from 'eventsource-parser';

/** One message as the stream sent it; `event` is `message` when the stream named none. */
export interface SseMessage {
  event: string;
  data: string;
  id: string | undefined;
}

export interface TestStream {
  status: number;
  headers: Headers;
  messages: SseMessage[];
  /** Every byte received, heartbeats and comments included. */
  raw: string;
  /** Resolves when the server ends the stream. */
  ended: Promise<void>;
  close(): void;
}

/**
 * node:http, not fetch: close() destroys the connection at once, as a client that goes away does.
 * fetch's abort could leave a reused keep-alive connection open until the server ended the
 * stream, so the server kept the stream (and its place under STREAMS_PER_CLIENT) and its close
 * waited out the 72 s keep-alive timeout.
 */
export async function openStream(url: string, headers: Record<string, string> = {}): Promise<TestStream> {
  const response = await new Promise<IncomingMessage>((resolve, reject) => {
    const sent = http.get(url, { headers: { accept: 'text/event-stream', ...headers }, agent: false }, resolve);
    sent.on('error', reject);
  });
  const responseHeaders = new Headers();
  for (const [name, value] of Object.entries(response.headers)) if (value !== undefined) responseHeaders.set(name, Array.isArray(value) ? value.join(', ') : value);
  const stream: TestStream = { status: response.statusCode ?? 0, headers: responseHeaders, messages: [], raw: '', ended: Promise.resolve(), close: () => response.destroy() };
  const parser = createParser({ onEvent: ({ event, data, id }) => stream.messages.push({ event: event ?? 'message', data, id }) });
  response.setEncoding('utf8');
  stream.ended = new Promise<void>((resolve) => {
    response.on('data', (chunk: string) => {
      stream.raw += chunk;
      if (stream.status === 200) parser.feed(chunk);
    });
    response.on('close', resolve); // ended by the server, or closed here
    response.on('error', () => undefined);
  });
  if (stream.status !== 200) await stream.ended;
  return stream;
}
