/**
 * Run by private-host.ts inside the private host's network namespace: sends the requests given as
 * JSON (argv[3]) to the server at argv[2], one after another, and prints their statuses as JSON.
 */
import type { ClientRequest } from './private-host.js';

const [url, list] = process.argv.slice(2) as [string, string];
const statuses: number[] = [];
for (const { method, path, headers = {}, body } of JSON.parse(list) as ClientRequest[]) {
  const answer = await fetch(url + path, {
    method,
    headers: body === undefined ? headers : { 'content-type': 'application/json', ...headers },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  await answer.arrayBuffer();
  statuses.push(answer.status);
}
process.stdout.write(JSON.stringify(statuses));
