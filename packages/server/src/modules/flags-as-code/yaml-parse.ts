/**
 * An import's YAML body parsed on a thread of its own (yaml.worker.ts), within bounds that keep
 * one tenant's document from holding anyone else's requests: one parse at a time (the machine's
 * other core stays for requests), a few waiting, each stopped after PARSE_TIME_MS.
 */
import { Worker } from 'node:worker_threads';
import { Invalid, RateLimited } from '../../errors.js';
import { YAML_WORKER_URL } from '../../paths.js';

export const YAML_LIMITS = Object.freeze({
  /** A parse still running after this is stopped: the document is refused (send it as JSON). */
  parseMs: 5_000,
  /** Parses waiting for the one running; one more is 429. */
  waiting: 4,
  /** Levels of arrays and objects: a document with variant values nested 32 deep fits easily. */
  depth: 64,
});

let running: Promise<unknown> = Promise.resolve();
let waiting = 0;

function parseOnce(text: string): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const worker = new Worker(YAML_WORKER_URL, { workerData: { maxDepth: YAML_LIMITS.depth }, resourceLimits: { maxOldGenerationSizeMb: 512, stackSizeMb: 8 } });
    const timer = setTimeout(() => {
      void worker.terminate();
      reject(new Invalid(`The YAML does not parse within ${YAML_LIMITS.parseMs / 1000} s: send the document as JSON, or import it in parts`));
    }, YAML_LIMITS.parseMs);
    const settle = (outcome: () => void) => {
      clearTimeout(timer);
      void worker.terminate();
      outcome();
    };
    worker.once('message', (answer: { value?: unknown; problem?: string }) =>
      settle(() => (answer.problem !== undefined ? reject(new Invalid(`The YAML does not parse: ${answer.problem}`)) : resolve(answer.value))),
    );
    // Out of memory or stack inside the worker: the document's fault, not the server's.
    worker.once('error', (error) => settle(() => reject(new Invalid(`The YAML does not parse: ${error.message.split('\n')[0]}`))));
    worker.postMessage(text);
  });
}

/** The YAML text as a value, or Invalid saying why (parse error, too deep, too slow); RateLimited when too many wait. */
export async function parseYamlBounded(text: string): Promise<unknown> {
  if (waiting >= YAML_LIMITS.waiting) throw new RateLimited(1, 'Too many YAML imports are being parsed: try again in a moment, or send JSON');
  waiting++;
  const turn = running.then(() => {
    waiting--;
    return parseOnce(text);
  });
  running = turn.catch(() => undefined);
  return turn;
}
