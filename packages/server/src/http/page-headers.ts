import type { onSendAsyncHookHandler } from 'fastify';

/**
 * The headers of every page this origin serves: the dashboard and the API docs (/docs, Swagger
 * UI), which share the origin where the dashboard keeps its login token (docs/security.md). Scripts
 * come only from this origin (no inline scripts); inline styles are allowed because the dialog
 * library and Swagger UI set element styles. No framing, no sniffing, no referrer (the reset
 * link carries a token in its query).
 */
export const PAGE_HEADERS = {
  'content-security-policy':
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; " +
    "font-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'x-frame-options': 'DENY',
} as const;

/** An onSend hook for a plugin whose every answer is (part of) a page. */
export const pageHeaders: onSendAsyncHookHandler = async (_request, reply, payload) => {
  reply.headers(PAGE_HEADERS);
  return payload;
};
