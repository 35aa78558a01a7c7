/**
 * @guidon/sdk in a real browser (Chromium, driven by playwright-core): the ESM build loaded by a
 * page from another origin, CORS as configured by CORS_ORIGINS, changes streamed over fetch, and
 * the last answer kept in localStorage so a reload shows it before any request.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { dirname, join, normalize } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium, type Browser, type Page } from 'playwright-core';
import { flagsPath, freePort, newFlag, newProject, newUser, request, startServer, type TestProject, type TestServer, type TestUser } from '@guidon/server/dist/tests/harness.js';

const CHROMIUM = '/usr/bin/chromium';

/** What the page's globals hold (the test's tsconfig has no DOM types). */
interface PageGlobals {
  guidon: import('@guidon/sdk').GuidonClient;
  changes: string[][];
  localStorage: { length: number };
}

describe('@guidon/sdk in Chromium', { skip: existsSync(CHROMIUM) ? false : `no browser at ${CHROMIUM}` }, () => {
  let guidon: TestServer;
  let user: TestUser;
  let project: TestProject;
  let flagId: string;
  let pages: Server;
  let origin: string;
  let browser: Browser;
  let page: Page;

  before(async () => {
    // The page's origin: serves an empty page and the SDK's ESM build.
    const sdkDir = dirname(fileURLToPath(import.meta.resolve('@guidon/sdk')));
    pages = createServer((req, res) => {
      const path = new URL(req.url ?? '/', 'http://x').pathname;
      if (path.startsWith('/sdk/')) {
        // What a bundler gives a browser (package.json `browser`): local mode's stub, without the engine.
        const file = normalize(join(sdkDir, path === '/sdk/local.js' ? 'local.browser.js' : path.slice(5)));
        if (!file.startsWith(sdkDir) || !existsSync(file)) return res.writeHead(404).end();
        return res.writeHead(200, { 'content-type': 'text/javascript' }).end(readFileSync(file));
      }
      res.writeHead(200, { 'content-type': 'text/html' }).end('<!doctype html><title>app</title>');
    });
    const port = await freePort();
    await new Promise<void>((resolve) => pages.listen(port, '127.0.0.1', resolve));
    origin = `http://127.0.0.1:${(pages.address() as AddressInfo).port}`;

    guidon = await startServer({ CORS_ORIGINS: origin });
    user = await newUser(guidon);
    project = await newProject(guidon, user);
    flagId = (await newFlag(guidon, user, project, { key: 'checkout', enabled: false })).id;
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking'] });
    page = await browser.newPage();
    await page.goto(`${origin}/`);
  });
  after(async () => {
    await browser?.close();
    pages?.closeAllConnections();
    pages?.close();
    await guidon?.close();
  });

  const start = (baseUrl: string, sdkKey: string) =>
    page.evaluate(
      async ({ baseUrl, sdkKey }) => {
        const { createClient } = await import('/sdk/index.js' as string);
        const window = globalThis as unknown as PageGlobals;
        window.changes = [];
        window.guidon = createClient({ baseUrl, sdkKey, environment: 'production', context: { user_id: 'browser-user' } });
        const before = window.guidon.isEnabled('checkout');
        const ready = await window.guidon.ready();
        // Changes from here on (the first answer is itself a change from the empty start).
        window.guidon.on('change', ({ keys }: { keys: string[] }) => window.changes.push(keys));
        return { before, ready, checkout: window.guidon.isEnabled('checkout'), reason: window.guidon.reason('checkout'), stored: window.localStorage.length };
      },
      { baseUrl, sdkKey },
    );

  test('reads flags across origins, streams a change, and shows the stored answer on a reload', async () => {
    const first = await start(guidon.url, project.sdk_key);
    assert.deepEqual([first.ready, first.checkout, first.reason], [true, false, 'Flag is globally disabled']);
    assert.equal(first.stored, 1, 'one answer kept in localStorage');

    await page.waitForTimeout(300); // the stream connects
    await request(guidon, 'POST', `${flagsPath(project)}/${flagId}/toggle`, { token: user.token });
    await page.waitForFunction(() => (globalThis as unknown as PageGlobals).changes.length > 0, undefined, { timeout: 10_000 });
    assert.deepEqual(await page.evaluate(() => [(globalThis as unknown as PageGlobals).changes[0], (globalThis as unknown as PageGlobals).guidon.isEnabled('checkout')]), [['checkout'], true]);

    await page.reload();
    const reloaded = await start(guidon.url, project.sdk_key);
    assert.equal(reloaded.before, true, 'the stored answer, before any request');
    assert.equal(reloaded.ready, true);
    await page.evaluate(() => (globalThis as unknown as PageGlobals).guidon.close());
  });

  test('an unreachable Guidon: ready() resolves false and flags read false, without an exception in the page', async () => {
    await page.reload();
    const errors: string[] = [];
    page.on('pageerror', (error) => errors.push(error.message));
    const down = await start(`http://127.0.0.1:${await freePort()}`, project.sdk_key);
    assert.deepEqual([down.ready, down.checkout], [false, false]);
    await page.evaluate(() => (globalThis as unknown as PageGlobals).guidon.close());
    assert.deepEqual(errors, []);
  });
});
