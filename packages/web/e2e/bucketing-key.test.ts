/**
 * The flag page's bucketing key (docs/flags-as-code.md, "Bucketing key") in Debian's Chromium, by
 * role and accessible name: the Details form shows the field with its hint, refuses a key outside
 * the syntax in the page (nothing stored), saves a valid one, and clears it again.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Browser } from 'playwright-core';
import { flagsPath, newFlag, newProject, newUser, request, type TestServer } from '@guidon/server/dist/tests/harness.js';
import { failureReport, serverAndBrowser, signIn, walkPage, watchConsole } from './browser.js';

let server: TestServer;
let browser: Browser;
serverAndBrowser({ PUBLIC_URL: 'http://guidon.test' }, (started, chromium) => {
  server = started;
  browser = chromium;
});

test('a person gives a renamed flag its former key as bucketing key, and clears it', { timeout: 120_000 }, async () => {
  const user = await newUser(server, 'bucketer');
  const project = await newProject(server, user, 'Renamed flags');
  const flag = await newFlag(server, user, project, { key: 'new_checkout', name: 'New checkout', enabled: true, rollout_percentage: 30 });
  const stored = async () => (await request(server, 'GET', `${flagsPath(project)}/${flag.id}`, { token: user.token })).body.bucketing_key as string | null;
  const { context, page } = await walkPage(browser, server.url);
  const consoleErrors = watchConsole(page);
  try {
    await signIn(page, server.url, user.token);
    await page.goto(`${server.url}/projects/${project.id}/flags/${project.production}/${flag.id}`);
    const field = page.getByRole('textbox', { name: 'Bucketing key' });
    await field.waitFor();
    assert.equal(await field.inputValue(), '');
    assert.match((await field.getAttribute('aria-describedby')) ?? '', /./, 'the hint is tied to the field');
    const save = page.getByRole('button', { name: 'Save details' });

    await field.fill('old checkout');
    await save.click();
    await page.getByRole('alert').filter({ hasText: 'Up to 100 of' }).waitFor();
    assert.equal(await field.getAttribute('aria-invalid'), 'true');
    assert.equal(await stored(), null, 'refused in the page: nothing stored');

    await field.fill('Checkout.Old');
    await save.click();
    await page.getByRole('status').filter({ hasText: 'Saved' }).waitFor();
    assert.equal(await stored(), 'Checkout.Old');

    await page.reload();
    await field.waitFor();
    assert.equal(await field.inputValue(), 'Checkout.Old', 'shown after a reload');
    await field.fill('');
    await save.click();
    await page.getByRole('status').filter({ hasText: 'Saved' }).waitFor();
    assert.equal(await stored(), null, 'empty: the flag key again');
    assert.deepEqual(consoleErrors, []);
  } catch (error) {
    throw await failureReport(page, 'bucketing-key', error);
  } finally {
    await context.close();
  }
});
