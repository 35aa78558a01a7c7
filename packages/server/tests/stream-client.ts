/** A test's own reader of GET /sdk/v1/stream: fetch, and a kept Server-Sent Events parser (not the SDK's: an independent reading of the wire format). */
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

export async function openStream(url: string, headers: Record<string, string> = {}): Promise<TestStream> {
  const controller = new AbortController();
  const response = await fetch(url, { headers: { accept: 'text/event-stream', ...headers }, signal: controller.signal });
  const stream: TestStream = { status: response.status, headers: response.headers, messages: [], raw: '', ended: Promise.resolve(), close: () => controller.abort() };
  if (response.status !== 200 || !response.body) {
    await response.text();
    return stream;
  }
  const [forMessages, forRaw] = response.body.tee();
  void (async () => {
    const decoder = new TextDecoder();
    try {
      for await (const chunk of forRaw as unknown as AsyncIterable<Uint8Array>) stream.raw += decoder.decode(chunk, { stream: true });
    } catch {
      // aborted
    }
  })();
  const parser = createParser({ onEvent: ({ event, data, id }) => stream.messages.push({ event: event ?? 'message', data, id }) });
  stream.ended = (async () => {
    const decoder = new TextDecoder();
    try {
      for await (const chunk of forMessages as unknown as AsyncIterable<Uint8Array>) parser.feed(decoder.decode(chunk, { stream: true }));
    } catch {
      // aborted
    }
  })();
  return stream;
}
