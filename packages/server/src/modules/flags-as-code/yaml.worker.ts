/**
 * Parses one YAML document off the event loop (yaml-parse.ts starts it): the yaml library's
 * parse is synchronous and may take seconds on a large or deeply nested body, which on the
 * server's thread would hold every other request. Answers the value, or the problem in one line.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { parse } from 'yaml';

/** Deeper values are refused here: the structured clone back to the server's thread recurses per level. */
const MAX_DEPTH = (workerData as { maxDepth: number }).maxDepth;

/** The deepest nesting of arrays and objects in `value` (walked without recursion). */
function depthOf(value: unknown): number {
  let deepest = 0;
  const todo: [unknown, number][] = [[value, 0]];
  while (todo.length > 0) {
    const [item, depth] = todo.pop()!;
    if (item === null || typeof item !== 'object') continue;
    deepest = Math.max(deepest, depth + 1);
    if (deepest > MAX_DEPTH) return deepest;
    for (const child of Object.values(item)) todo.push([child, depth + 1]);
  }
  return deepest;
}

parentPort!.once('message', (text: string) => {
  try {
    // Aliases are bounded (a billion laughs is refused); a duplicated key is a problem, not a silent overwrite.
    const value: unknown = parse(text, { version: '1.2', maxAliasCount: 100, uniqueKeys: true });
    if (depthOf(value) > MAX_DEPTH) parentPort!.postMessage({ problem: `it nests deeper than ${MAX_DEPTH} levels` });
    else parentPort!.postMessage({ value });
  } catch (error) {
    parentPort!.postMessage({ problem: (error instanceof Error ? error.message : String(error)).split('\n')[0] });
  }
});
