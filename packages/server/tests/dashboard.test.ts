/**
 * The dashboard served at / (docs/adr/0013-dashboard.md): the built files of packages/web, index.html for
 * client-side routes, JSON 404 for unknown API paths, security headers on the pages (the API docs
 * at /docs too, which share the origin: docs/security.md, Headers), and the first log line naming the
 * dashboard's URL. Needs the dashboard built (`npm run build` does it).
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';
import { DASHBOARD_DIR } from '../src/paths.js';
import { request, startServer, type TestServer } from './harness.js';

const html = { accept: 'text/html,application/xhtml+xml,*/*;q=0.8' };
let server: TestServer;

before(async () => {
  assert.ok(existsSync(join(DASHBOARD_DIR, 'index.html')), `the dashboard is built in ${DASHBOARD_DIR} (run npm run build)`);
  server = await startServer();
});
after(() => server?.close());

function assertPageHeaders(headers: Headers) {
  const csp = headers.get('content-security-policy') ?? '';
  const scriptSrc = /script-src ([^;]*)/.exec(csp)?.[1] ?? /default-src ([^;]*)/.exec(csp)?.[1] ?? '';
  assert.match(scriptSrc, /'self'/);
  assert.doesNotMatch(scriptSrc, /unsafe-inline|unsafe-eval/, 'no inline scripts');
  assert.match(csp, /frame-ancestors 'none'/);
  assert.equal(headers.get('x-frame-options'), 'DENY');
  assert.equal(headers.get('x-content-type-options'), 'nosniff');
  assert.ok(headers.get('referrer-policy'), 'a referrer policy');
}

const CHROMIUM = '/usr/bin/chromium';

describe('the dashboard at /', () => {
  test('/ is the dashboard page with security headers, and it has no inline script', async () => {
    const page = await request(server, 'GET', '/', { headers: html });
    assert.equal(page.status, 200);
    assert.match(page.headers.get('content-type') ?? '', /^text\/html/);
    assert.match(page.text, /<div id="root"><\/div>/);
    assertPageHeaders(page.headers);
    const scripts = [...page.text.matchAll(/<script\b([^>]*)>([\s\S]*?)<\/script>/g)];
    assert.ok(scripts.length > 0);
    for (const [, attributes, body] of scripts) {
      assert.match(attributes!, /\bsrc="\/assets\//, 'every script is a file of this origin');
      assert.equal(body!.trim(), '', 'no inline script');
    }
  });

  test('its assets are served with a long cache (content-hashed names)', async () => {
    const page = await request(server, 'GET', '/', { headers: html });
    const script = /src="(\/assets\/[^"]+\.js)"/.exec(page.text)?.[1];
    assert.ok(script);
    const asset = await request(server, 'GET', script);
    assert.equal(asset.status, 200);
    assert.match(asset.headers.get('content-type') ?? '', /javascript/);
    assert.match(asset.headers.get('cache-control') ?? '', /immutable/);
    assert.equal(asset.headers.get('x-content-type-options'), 'nosniff');
  });

  test('client-side routes get index.html on a GET that accepts HTML', async () => {
    for (const path of ['/reset-password?token=abc', '/projects/3f1c0e9a-2b1d-4c8e-9a7b-1234567890ab/flags', '/login', '/signup']) {
      const page = await request(server, 'GET', path, { headers: html });
      assert.equal(page.status, 200, path);
      assert.match(page.text, /<div id="root"><\/div>/, path);
      assertPageHeaders(page.headers);
    }
  });

  test('unknown API paths keep their JSON 404, even when HTML is accepted; other methods too', async () => {
    for (const path of ['/api/nope', '/api/projects/x/y/z', '/auth/nope', '/sdk/v1/nope', '/sdk', '/health/x']) {
      const answer = await request(server, 'GET', path, { headers: html });
      assert.equal(answer.status, 404, path);
      assert.deepEqual(answer.body, { statusCode: 404, error: 'Not Found', message: `Route GET ${path} not found` });
    }
    const notHtml = await request(server, 'GET', '/projects/abc');
    assert.equal(notHtml.status, 404, 'a client that does not ask for HTML gets JSON');
    assert.equal(notHtml.body.statusCode, 404);
    const post = await request(server, 'POST', '/login', { headers: html, body: {} });
    assert.equal(post.status, 404);
    assert.equal(post.body.message, 'Route POST /login not found');
  });

  test('the API is unchanged beside it', async () => {
    const health = await request(server, 'GET', '/health', { headers: html });
    assert.deepEqual(health.body, { status: 'ok' });
    assert.equal((await request(server, 'GET', '/api/projects', { headers: html })).status, 401);
    const doc = await request(server, 'GET', '/docs/json');
    assert.equal(doc.status, 200);
    assert.ok(!Object.keys(doc.body.paths).some((path) => path === '/' || path === '/*'), 'the dashboard routes are not in the API document');
  });
});

describe('the API docs at /docs (Swagger UI, on the dashboard\'s origin)', () => {
  test('its page, its files and the OpenAPI document carry the pages\' headers', async () => {
    const page = await request(server, 'GET', '/docs', { headers: html });
    assert.equal(page.status, 200);
    assert.match(page.text, /swagger-ui-bundle\.js/);
    assertPageHeaders(page.headers);
    for (const path of ['/docs/', '/docs/json', '/docs/yaml', '/docs/static/swagger-ui-bundle.js', '/docs/static/swagger-initializer.js', '/docs/static/swagger-ui.css']) {
      const answer = await request(server, 'GET', path);
      assert.equal(answer.status, 200, path);
      assertPageHeaders(answer.headers);
    }
  });

  test('Swagger UI works under that policy in Chromium: it shows the API, an operation opens, no policy violation', { skip: existsSync(CHROMIUM) ? false : `no browser at ${CHROMIUM}` }, async () => {
    const browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking'] });
    try {
      const page = await browser.newPage();
      const problems: string[] = [];
      page.on('console', (message) => message.type() === 'error' && problems.push(`console: ${message.text()}`));
      page.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
      // Reported by the page itself as well (the console wording may change).
      await page.addInitScript(`document.addEventListener('securitypolicyviolation', (event) => console.error('CSP violation: ' + event.violatedDirective + ' ' + event.blockedURI))`);
      await page.goto(`${server.url}/docs`);
      await page.getByRole('heading', { name: /^Guidon/ }).waitFor();
      await page.getByRole('button', { name: /POST \/auth\/login/ }).first().click();
      await page.getByRole('button', { name: 'Try it out' }).first().waitFor();
      assert.deepEqual(problems, []);
    } finally {
      await browser.close();
    }
  });
});

describe('start-up', () => {
  test('the first log line names the dashboard URL; logs are JSON when stdout is not a terminal', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'guidon-dashboard-'));
    const main = fileURLToPath(new URL('../src/main.js', import.meta.url));
    const child = spawn(process.execPath, [main], {
      env: { ...process.env, PORT: '0', HOST: '127.0.0.1', DATABASE_URL: `sqlite:${join(dir, 'guidon.db')}`, LOG_LEVEL: 'info' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    try {
      const lines = createInterface({ input: child.stdout! });
      const first = await new Promise<string>((resolve, reject) => {
        lines.once('line', resolve);
        child.once('exit', (code) => reject(new Error(`the server exited (${code}) before logging`)));
      });
      const entry = JSON.parse(first) as { msg: string };
      assert.match(entry.msg, /^Guidon dashboard at http:\/\/localhost:\d+\//);
      const url = /http:\/\/localhost:\d+\//.exec(entry.msg)![0];
      const page = await fetch(url, { headers: html });
      assert.equal(page.status, 200);
    } finally {
      child.kill('SIGTERM');
      await new Promise((resolve) => child.once('exit', resolve));
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
