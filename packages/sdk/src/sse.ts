/** One Server-Sent Events message (https://html.spec.whatwg.org/multipage/server-sent-events.html). */
export interface SseMessage {
  event: string;
  data: string;
  id: string | undefined;
}

/**
 * Reads Server-Sent Events from a fetch body, so the same code streams in Node 20 (which has no
 * global EventSource) and in browsers. Calls onMessage per message and onActivity for every chunk
 * (heartbeat comments included); resolves when the body ends, rejects when reading fails.
 */
export async function readSse(
  body: ReadableStream<Uint8Array>,
  onMessage: (message: SseMessage) => void,
  onActivity: () => void,
  /** The last event id, at the end of each block that set one: also a block without data (no message), which a server may send to say where the stream starts. */
  onLastEventId: (id: string) => void = () => undefined,
): Promise<void> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let buffer = '';
  let event = '';
  let data: string[] = [];
  let id: string | undefined;
  let idSet = false;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return;
      onActivity();
      buffer += decoder.decode(value, { stream: true });
      let newline: RegExpExecArray | null;
      const lineEnd = /\r\n|\r|\n/g;
      let consumed = 0;
      while ((newline = lineEnd.exec(buffer)) !== null) {
        // A lone \r at the very end may be the first half of \r\n: wait for the next chunk.
        if (newline[0] === '\r' && newline.index === buffer.length - 1) break;
        const line = buffer.slice(consumed, newline.index);
        consumed = newline.index + newline[0].length;
        if (line === '') {
          if (idSet) onLastEventId(id!);
          idSet = false;
          if (data.length > 0) onMessage({ event: event || 'message', data: data.join('\n'), id });
          event = '';
          data = [];
          continue;
        }
        if (line.startsWith(':')) continue;
        const colon = line.indexOf(':');
        const field = colon < 0 ? line : line.slice(0, colon);
        let value = colon < 0 ? '' : line.slice(colon + 1);
        if (value.startsWith(' ')) value = value.slice(1);
        if (field === 'data') data.push(value);
        else if (field === 'event') event = value;
        else if (field === 'id' && !value.includes('\0')) {
          id = value;
          idSet = true;
        }
      }
      buffer = buffer.slice(consumed);
    }
  } finally {
    reader.releaseLock();
  }
}
