import type { FastifyRequest } from 'fastify';
import { Invalid } from '../errors.js';

/** A UTF-16 surrogate without its pair: JSON can carry one (`"\ud800"`), UTF-8 storage cannot. */
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

export const isWellFormed = (text: string): boolean => !LONE_SURROGATE.test(text);

/** The text as UTF-8 can store it: each lone surrogate becomes U+FFFD. */
export const toWellFormed = (text: string): string => text.replace(new RegExp(LONE_SURROGATE, 'g'), '\uFFFD');

/** Walks with a queue, not recursion: a body may nest deeper than the stack. */
function holdsIllFormedText(body: unknown): boolean {
  const queue: unknown[] = [body];
  while (queue.length > 0) {
    const value = queue.pop();
    if (typeof value === 'string') {
      if (!isWellFormed(value)) return true;
    } else if (value !== null && typeof value === 'object') {
      for (const [key, item] of Object.entries(value)) {
        if (!isWellFormed(key)) return true;
        queue.push(item);
      }
    }
  }
  return false;
}

/**
 * preValidation hook for the routes that store what they are sent: refuse text the database
 * would store as something else, instead of answering one value and keeping another.
 */
export async function refuseIllFormedText(request: FastifyRequest): Promise<void> {
  if (holdsIllFormedText(request.body)) throw new Invalid('text must be well-formed Unicode (a lone surrogate is not)');
}
