/** What every resource test file checks answers with (docs/api.md "Resources and their fields", docs/api.md). */
import assert from 'node:assert/strict';
import { request, type Answer, type TestServer, type TestUser } from './harness.js';

export const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const ISO_UTC = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?Z$/;
const STATUS_TEXT: Record<number, string> = {
  400: 'Bad Request',
  401: 'Unauthorized',
  404: 'Not Found',
  409: 'Conflict',
  413: 'Payload Too Large',
};

export function assertIsoUtc(value: unknown, what: string): void {
  assert.equal(typeof value, 'string', `${what} is a string`);
  assert.match(value as string, ISO_UTC, `${what} is ISO 8601 UTC`);
  assert.ok(!Number.isNaN(Date.parse(value as string)), `${what} parses`);
}

/** An error answer: the status, JSON, and exactly {statusCode, error, message} (docs/api.md). */
export function assertError(answer: Answer, status: number, what = ''): void {
  assert.equal(answer.status, status, `${what}: status ${answer.status} ${answer.text}`);
  assert.match(answer.headers.get('content-type') ?? '', /^application\/json/, `${what}: JSON error body`);
  assert.deepEqual(Object.keys(answer.body).sort(), ['error', 'message', 'statusCode'], `${what}: error body keys`);
  assert.equal(answer.body.statusCode, status, what);
  if (STATUS_TEXT[status]) assert.equal(answer.body.error, STATUS_TEXT[status], what);
  assert.equal(typeof answer.body.message, 'string', what);
  assert.ok(answer.body.message.length > 0, what);
}

export function assertNoContent(answer: Answer, what = ''): void {
  assert.equal(answer.status, 204, `${what}: ${answer.status} ${answer.text}`);
  assert.equal(answer.text, '', `${what}: 204 has no body`);
}

/** The JSON API as one user: a request with the user's login token. */
export const apiAs = (server: TestServer, user: TestUser) => (method: string, path: string, body?: unknown) =>
  request(server, method, path, { token: user.token, ...(body === undefined ? {} : { body }) });
