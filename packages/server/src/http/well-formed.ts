import type { FastifyRequest } from 'fastify';
import { Invalid } from '../errors.js';

/**
 * What a database cannot store as sent: a UTF-16 surrogate without its pair (JSON can carry
 * `"\ud800"`, UTF-8 cannot), and NUL, which PostgreSQL text refuses (SQLite would keep it, so
 * both refuse it to behave alike).
 */
const UNSTORABLE = /\u0000|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

export const isStorable = (text: string): boolean => !UNSTORABLE.test(text);

/** The text as the database can store it: each unstorable character becomes U+FFFD. */
export const toStorable = (text: string): string => text.replace(new RegExp(UNSTORABLE, 'g'), '\uFFFD');

/** Walks with a queue, not recursion: a body may nest deeper than the stack. */
export function holdsUnstorableText(input: unknown): boolean {
  const queue: unknown[] = [input];
  while (queue.length > 0) {
    const value = queue.pop();
    if (typeof value === 'string') {
      if (!isStorable(value)) return true;
    } else if (value !== null && typeof value === 'object') {
      for (const [key, item] of Object.entries(value)) {
        if (!isStorable(key)) return true;
        queue.push(item);
      }
    }
  }
  return false;
}

/**
 * preValidation hook for the routes that store or look up what they are sent: refuse text the
 * database would reject or store as something else, instead of failing or answering one value and
 * keeping another.
 */
export async function refuseUnstorableText(request: FastifyRequest): Promise<void> {
  if (holdsUnstorableText(request.body) || holdsUnstorableText(request.query)) {
    throw new Invalid('text must be well-formed Unicode without NUL characters');
  }
}
