/** The SDK's Server-Sent Events reader on awkward input. */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readSse, type SseMessage } from '#internal/sse.js';

function bodyOf(chunks: string[]): ReadableStream<Uint8Array> {
  const encoder = new TextEncoder();
  return new ReadableStream({
    start(controller) {
      for (const chunk of chunks) controller.enqueue(encoder.encode(chunk));
      controller.close();
    },
  });
}

async function parse(chunks: string[]): Promise<SseMessage[]> {
  const messages: SseMessage[] = [];
  await readSse(bodyOf(chunks), (message) => messages.push(message), () => undefined);
  return messages;
}

describe('readSse', () => {
  test('messages split across chunks anywhere, CRLF and CR line ends, comments, multi-line data, ids', async () => {
    const text = 'retry: 1000\r\n\r\n: heartbeat\r\nid: 7\r\nevent: message\r\ndata: {"type":\r\ndata: "refetchEvaluation"}\r\n\r\ndata:plain\r\rid: 8\nevent: other\ndata: x\n\n';
    const expected = [
      { event: 'message', data: '{"type":\n"refetchEvaluation"}', id: '7' },
      { event: 'message', data: 'plain', id: '7' },
      { event: 'other', data: 'x', id: '8' },
    ];
    assert.deepEqual(await parse([text]), expected);
    for (let cut = 1; cut < text.length; cut++) assert.deepEqual(await parse([text.slice(0, cut), text.slice(cut)]), expected, `cut at ${cut}`);
    assert.deepEqual(await parse([...text]), expected, 'one character per chunk');
  });

  test('an id without data dispatches no message but sets the last event id, as a message\'s id does', async () => {
    const ids: string[] = [];
    const messages: SseMessage[] = [];
    await readSse(bodyOf(['retry: 1000\n\nid: 41\n\n: heartbeat\n\nid: 42\ndata: x\n\ndata: y\n\n']), (message) => messages.push(message), () => undefined, (id) => ids.push(id));
    assert.deepEqual(messages, [
      { event: 'message', data: 'x', id: '42' },
      { event: 'message', data: 'y', id: '42' },
    ]);
    assert.deepEqual(ids, ['41', '42'], 'once per block that names one');
  });

  test('multi-byte characters split between chunks survive', async () => {
    const bytes = new TextEncoder().encode('data: é ✓\n\n');
    const body = new ReadableStream<Uint8Array>({
      start(controller) {
        for (const byte of bytes) controller.enqueue(new Uint8Array([byte]));
        controller.close();
      },
    });
    const messages: SseMessage[] = [];
    await readSse(body, (message) => messages.push(message), () => undefined);
    assert.equal(messages[0]?.data, 'é ✓');
  });
});
