/**
 * The `guidon` command line against what it must not trust (security review finding 10): text with
 * terminal escapes in an Unleash export, in a document and in a server's answers; a server that
 * answers slowly or without end; a GUIDON_URL holding credentials; plain http off the machine. The
 * real server where it can say the thing (an Unleash feature's name), else node:http servers on
 * 127.0.0.1 started here, each answering one way.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { newProject, newUser, request, startServer, type TestProject, type TestServer } from '@guidon/server/dist/tests/harness.js';
import { onPostgres } from '@guidon/server/dist/tests/test-database.js';
import { run, type Ran } from './run-cli.js';

const skip = onPostgres ? 'the command line does not depend on the database: checked in the SQLite pass' : false;
const bin = join(resolve(dirname(fileURLToPath(import.meta.url)), '../..'), 'dist', 'src', 'cli.js');

function guidon(args: string[], env: Record<string, string>, input?: string): Promise<Ran> {
  return run(process.execPath, [bin, ...args], env, input);
}

/** What a terminal would obey: C0 but line breaks, DEL, C1, bidi overrides and isolates, U+2028/9. */
const RAW_CONTROL = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/;
/** A name that clears the screen, retitles the window, starts a C1 sequence and turns the rest of the line around. */
const EVIL = 'evil\u001b]0;pwned\u0007\u001b[2J\u009b31m\u202e\u007f';
const EVIL_SHOWN = 'evil\\x1b]0;pwned\\x07\\x1b[2J\\x9b31m\\u202e\\x7f';

/** A node:http server on 127.0.0.1 that answers every request with `answer`. */
async function fakeServer(answer: (request: IncomingMessage, response: ServerResponse) => void): Promise<{ url: string; server: Server }> {
  const server = createServer(answer);
  await new Promise<void>((resolveListen) => server.listen(0, '127.0.0.1', resolveListen));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server };
}

describe('guidon against hostile documents, answers and settings', { skip }, () => {
  let server: TestServer;
  let project: TestProject;
  let env: Record<string, string>;
  let dir: string;
  const fakes: Server[] = [];
  /** A fake Guidon answering as told; its environment for the CLI. */
  const fake = async (answer: (request: IncomingMessage, response: ServerResponse) => void) => {
    const started = await fakeServer(answer);
    fakes.push(started.server);
    return { ...env, GUIDON_URL: started.url };
  };

  before(async () => {
    server = await startServer();
    const user = await newUser(server, 'cli-hostile');
    project = await newProject(server, user, 'Hostile');
    const token = await request(server, 'POST', '/api/tokens', { token: user.token, body: { name: 'ci', project_id: project.id } });
    env = { GUIDON_URL: server.url, GUIDON_TOKEN: token.body.token, GUIDON_PROJECT: project.id };
    dir = mkdtempSync(join(tmpdir(), 'guidon-cli-hostile-'));
  });
  after(async () => {
    for (const started of fakes) started.closeAllConnections();
    await Promise.all(fakes.map((started) => new Promise((resolveClose) => started.close(resolveClose))));
    await server?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  describe('control characters are shown, not obeyed', () => {
    test('an Unleash feature named with terminal escapes: the real server skips it, the plan shows its name as escapes; --json keeps it, escaped', async () => {
      const file = join(dir, 'unleash-evil.json');
      writeFileSync(file, JSON.stringify({
        features: [{ name: EVIL, type: 'release' }],
        featureStrategies: [{ name: 'office-hours', featureName: EVIL, parameters: {}, constraints: [], segments: [] }],
        featureEnvironments: [{ featureName: EVIL, environment: 'production', enabled: true }],
      }));
      const dry = await guidon(['import-unleash', file, '--dry-run'], env);
      assert.ok(dry.code === 0 || dry.code === 2, dry.stderr);
      assert.match(dry.stdout, /^Skipped \(\d+\)/m);
      assert.doesNotMatch(dry.stdout, RAW_CONTROL);
      assert.ok(dry.stdout.includes(EVIL_SHOWN), dry.stdout);

      const json = await guidon(['import-unleash', file, '--dry-run', '--json'], env);
      assert.doesNotMatch(json.stdout, RAW_CONTROL, 'JSON.stringify leaves DEL, C1 and bidi raw: they are escaped too');
      const answer = JSON.parse(json.stdout) as { skipped: { feature: string | null }[] };
      assert.ok(answer.skipped.some((entry) => entry.feature === EVIL), 'the escapes parse back to the name itself');
    });

    test('a server answer with escapes and line breaks in keys, fields, environments and reasons: one visible line each, no forged lines', async () => {
      const plan = {
        mode: 'merge',
        dry_run: true,
        import_id: null,
        create: [{ resource: 'flag', key: `${EVIL}\nNothing to do: 0 unchanged.`, environment: `prod\u001b[8m`, fields: [`rules\u009b2K`] }],
        update: [],
        delete: [],
        unchanged: 0,
        change_requests: [{ environment: `staging\r\u2066`, id: null }],
        skipped: [{ feature: EVIL, environment: null, what: 'the feature\t', reason: `because\u001b[1A\u001b[2K` }],
      };
      const environment = await fake((_request, response) => response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(plan)));
      const ran = await guidon(['import', '-', '--dry-run'], environment, '{"guidon":1}');
      assert.equal(ran.code, 2, ran.stderr);
      assert.doesNotMatch(ran.stdout, RAW_CONTROL);
      assert.doesNotMatch(ran.stdout, /^Nothing to do/m, 'a line break in a key does not start a line');
      assert.match(ran.stdout, /^create\s+flag\s+prod\\x1b\[8m\s+evil\\x1b\]0;pwned\\x07\\x1b\[2J\\x9b31m\\u202e\\x7f\\x0aNothing to do: 0 unchanged\.\s+rules\\x9b2K$/m);
      assert.match(ran.stdout, /^staging\\x0d\\u2066 needs approval/m);
      assert.match(ran.stdout, /because\\x1b\[1A\\x1b\[2K$/m);

      const json = await guidon(['import', '-', '--dry-run', '--json'], environment, '{"guidon":1}');
      assert.doesNotMatch(json.stdout, RAW_CONTROL);
      assert.deepEqual(JSON.parse(json.stdout), plan);
    });

    test('errors quoting a server or a document: a refusal and its problems, an answer that is not JSON, a file that is not JSON', async () => {
      const refusing = await fake((_request, response) => response.writeHead(400, { 'content-type': 'application/json' }).end(JSON.stringify({ message: `bad\u001b[2J`, problems: [{ path: 'flags', message: `flags[0]: ${EVIL}\nguidon: applied` }] })));
      const refused = await guidon(['import', '-'], refusing, '{"guidon":1}');
      assert.equal(refused.code, 1);
      assert.doesNotMatch(refused.stderr, RAW_CONTROL);
      assert.match(refused.stderr, /^guidon: the document was refused \(400\): one problem, nothing changed$/m);
      assert.equal(refused.stderr.split('\n').length, 3, 'the problem on one line');
      assert.ok(refused.stderr.includes(`  flags[0]: ${EVIL_SHOWN}\\x0aguidon: applied`), refused.stderr);

      const failing = await fake((_request, response) => response.writeHead(500, { 'content-type': 'text/plain' }).end(`oops ${EVIL}`));
      const failed = await guidon(['export'], failing);
      assert.equal(failed.code, 1);
      assert.doesNotMatch(failed.stderr, RAW_CONTROL);
      assert.ok(failed.stderr.includes(`(500): oops ${EVIL_SHOWN}`), failed.stderr);

      const notJson = await fake((_request, response) => response.writeHead(200, { 'content-type': 'text/html' }).end(`<html>${EVIL}`));
      const garbled = await guidon(['import', '-', '--dry-run'], notJson, '{"guidon":1}');
      assert.equal(garbled.code, 1);
      assert.match(garbled.stderr, /^guidon: the server answered something that is not JSON: is GUIDON_URL the address of a Guidon server\?\n$/);

      const file = join(dir, 'not-json.json');
      writeFileSync(file, `{"features": ${EVIL}`);
      const local = await guidon(['import-unleash', file, '--dry-run'], env);
      assert.equal(local.code, 1);
      assert.match(local.stderr, /is not JSON/);
      assert.doesNotMatch(local.stderr, RAW_CONTROL);
    });

    test('export: to a pipe, the exact bytes; to a terminal, the escapes shown', { skip: spawnSync('script', ['--version']).status === 0 ? false : 'needs util-linux script(1) for a terminal' }, async () => {
      const document = `{"guidon": 1, "note": "${EVIL}"}\n`;
      const environment = await fake((_request, response) => response.writeHead(200, { 'content-type': 'application/json' }).end(document));
      assert.equal((await guidon(['export'], environment)).stdout, document, 'a pipe or a file gets the document as the server wrote it');

      // script(1) runs the program with a pseudo-terminal as its standard output (spawned, not spawnSync: the fake answers from this process).
      const command = [process.execPath, bin, 'export'].map((word) => `'${word}'`).join(' ');
      const onTerminal = await run('script', ['-qec', command, '/dev/null'], environment);
      assert.equal(onTerminal.code, 0, onTerminal.stderr);
      assert.doesNotMatch(onTerminal.stdout.replaceAll('\r\n', '\n'), RAW_CONTROL);
      assert.ok(onTerminal.stdout.includes(`"note": "${EVIL_SHOWN}"`), onTerminal.stdout);
    });
  });

  describe('a server that is slow or answers without end', () => {
    test('no answer, or headers then nothing: GUIDON_TIMEOUT=1 ends it with exit 1 and one line; a GUIDON_TIMEOUT that is not seconds is refused', { timeout: 60_000 }, async () => {
      const silent = await fake(() => {
        // never answers
      });
      const stalled = await fake((_request, response) => response.writeHead(200, { 'content-type': 'application/json' }).write('{"guidon": 1,'));
      for (const environment of [silent, stalled]) {
        const ran = await guidon(['export'], { ...environment, GUIDON_TIMEOUT: '1' });
        assert.equal(ran.code, 1, ran.stderr);
        assert.match(ran.stderr, /^guidon: http:\/\/127\.0\.0\.1:\d+ did not answer within 1 s \(GUIDON_TIMEOUT sets the limit, in seconds\)\n$/);
      }
      for (const value of ['soon', '0', '-5']) {
        const ran = await guidon(['export'], { ...env, GUIDON_TIMEOUT: value });
        assert.equal(ran.code, 1);
        assert.match(ran.stderr, /GUIDON_TIMEOUT ".*" is not a number of seconds above 0/);
      }
      assert.equal((await guidon(['export'], { ...env, GUIDON_TIMEOUT: '2.5' })).code, 0, 'a fraction is seconds too');
    });

    test('an answer past 64 MiB, streamed without end or announced by its Content-Length, is not read further: exit 1 and one line', { timeout: 60_000 }, async () => {
      const chunk = Buffer.alloc(1024 * 1024, 'x');
      const endless = await fake((_request, response) => {
        response.writeHead(200, { 'content-type': 'application/json' });
        const more = () => {
          while (!response.destroyed && response.write(chunk));
        };
        response.on('drain', more);
        more();
      });
      const announced = await fake((_request, response) => response.writeHead(200, { 'content-type': 'application/json', 'content-length': String(1024 ** 4) }).write('{'));
      for (const environment of [endless, announced]) {
        const ran = await guidon(['export'], environment);
        assert.equal(ran.code, 1, ran.stderr);
        assert.match(ran.stderr, /^guidon: http:\/\/127\.0\.0\.1:\d+ answered more than 64 MiB for \/api\/projects\/[^/]+\/export: not read further\n$/);
        assert.equal(ran.stdout, '');
      }
    });
  });

  describe('GUIDON_URL', () => {
    test('a user, password, query or fragment in it is refused, and never shown', async () => {
      const port = new URL(server.url).port;
      const cases: [string, RegExp][] = [
        [`http://ci:s3cret@127.0.0.1:${port}`, /^guidon: GUIDON_URL "http:\/\/\*\*\*@127\.0\.0\.1:\d+" carries a user or password: leave them out, the token goes in GUIDON_TOKEN\n$/],
        [`http://:s3cret@127.0.0.1:${port}/`, /carries a user or password/],
        [`http://127.0.0.1:${port}/?token=s3cret`, /^guidon: GUIDON_URL "http:\/\/127\.0\.0\.1:\d+\/\?\*\*\*" has a query or fragment: give the server's address only, the token goes in GUIDON_TOKEN\n$/],
        [`http://127.0.0.1:${port}/#s3cret`, /has a query or fragment/],
        ['http://ci:s3cret@[not-an-address', /^guidon: GUIDON_URL "http:\/\/\*\*\*@\[not-an-address" is not a URL/],
        ['ftp://ci:s3cret@example.com', /^guidon: GUIDON_URL "ftp:\/\/\*\*\*@example\.com" must start with http:\/\/ or https:\/\//],
      ];
      for (const [url, says] of cases) {
        const ran = await guidon(['export'], { ...env, GUIDON_URL: url });
        assert.equal(ran.code, 1, url);
        assert.match(ran.stderr, says, url);
        assert.doesNotMatch(ran.stderr, /s3cret/, url);
      }
    });

    test('plain http off the machine: one warning, and the call still made; loopback: no warning', async () => {
      const port = new URL(server.url).port;
      // 0.0.0.0 is no loopback address by its name, yet Linux connects it to this machine: the real server answers.
      const remote = await guidon(['export'], { ...env, GUIDON_URL: `http://0.0.0.0:${port}` });
      assert.equal(remote.code, 0, remote.stderr);
      assert.equal(remote.stderr, `guidon: warning: GUIDON_URL is plain http to 0.0.0.0:${port}: the token travels unencrypted, readable by anyone on the way; use https://\n`);
      assert.match(remote.stdout, /"guidon": 1/);
      for (const host of ['127.0.0.1', '127.1.2.3', 'localhost', '[::1]']) {
        const url = `http://${host}:${port}`;
        const ran = await guidon(['export'], { ...env, GUIDON_URL: url });
        assert.doesNotMatch(ran.stderr, /warning/, url);
        if (host === '127.0.0.1') assert.equal(ran.code, 0, `${url}: ${ran.stderr}`); // the server listens there only
      }
    });
  });
});
