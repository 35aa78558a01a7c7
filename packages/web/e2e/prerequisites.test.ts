/**
 * Prerequisites (docs/prerequisites.md) walked through in Debian's Chromium, by role and
 * accessible name, by keyboard: a flag gets a prerequisite (a flag of the environment, the state it
 * must have, a variant of it); a cycle is refused and the server's message shown where it happens;
 * the flags list says "needs <key>"; the parent's page lists the flag that needs it; a prerequisite
 * is removed. axe finds no serious violation in any state reached; no console error except the
 * deliberate refusal.
 *
 * GUIDON_SCREENSHOTS=<dir> also saves the flag page's Prerequisites section (desktop and phone,
 * light and dark).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import type { Browser, Locator } from 'playwright-core';
import { flagsPath, newFlag, newProject, newUser, request, type TestServer } from '@guidon/server/dist/tests/harness.js';
import { checkA11y, failureReport, forEachScreenshotView, selectByKeyboard, serverAndBrowser, signIn, tabTo, walkPage, watchConsole } from './browser.js';

let server: TestServer;
let browser: Browser;
serverAndBrowser({ PUBLIC_URL: 'http://guidon.test' }, (started, chromium) => {
  server = started;
  browser = chromium;
});

const shots = process.env.GUIDON_SCREENSHOTS;

test('a person makes the new checkout need the payment API and arm b of an experiment, sees a cycle refused, and finds the dependency on both pages', { timeout: 300_000 }, async () => {
  const user = await newUser(server, 'prereq');
  const project = await newProject(server, user, 'Prerequisite shop');
  const checkout = await newFlag(server, user, project, { key: 'new_checkout', name: 'New checkout', enabled: true });
  const payments = await newFlag(server, user, project, { key: 'new_payment_api', name: 'New payment API', enabled: true });
  await newFlag(server, user, project, { key: 'pricing_exp', name: 'Pricing experiment', enabled: true, variants: [{ key: 'arm_a', value: 'a', weight: 500 }, { key: 'arm_b', value: 'b', weight: 500 }], off_variant: 'arm_a' });
  const stored = async (id: string) => (await request(server, 'GET', `${flagsPath(project)}/${id}`, { token: user.token })).body.prerequisites as unknown[];

  const { context, page } = await walkPage(browser, server.url);
  let allowed: RegExp | null = null;
  const consoleErrors = watchConsole(page, () => allowed);
  const panel = page.getByRole('region', { name: 'Prerequisites' });
  const press = async (control: Locator, key = 'Enter') => {
    await tabTo(page, control);
    await page.keyboard.press(key);
  };
  const choose = async (select: Locator, label: string) => {
    await tabTo(page, select);
    await selectByKeyboard(page, select, label);
  };
  const open = async (key: string, name: string) => {
    await page.goto(`${server.url}/projects/${project.id}`);
    await page.getByRole('link', { name: `Open ${key} in Production` }).click();
    await page.getByRole('heading', { name: new RegExp(name) }).waitFor();
  };

  try {
    await signIn(page, server.url, user.token);
    await open('new_checkout', 'New checkout');
    await panel.getByText('new_checkout needs no other flag.').waitFor();
    await checkA11y(page, 'prerequisites, none yet');

    // The payment API on.
    await choose(panel.getByLabel('Flag it needs'), 'new_payment_api');
    await press(panel.getByRole('button', { name: 'Add prerequisite' }));
    await panel.getByRole('status').filter({ hasText: 'Added: needs new_payment_api on' }).waitFor();
    // Arm b of the experiment: its variants are offered once it is picked.
    await choose(panel.getByLabel('Flag it needs'), 'pricing_exp');
    await press(panel.getByRole('checkbox', { name: 'arm_b' }), 'Space');
    await press(panel.getByRole('button', { name: 'Add prerequisite' }));
    await panel.getByRole('status').filter({ hasText: 'Added: needs pricing_exp serving arm_b' }).waitFor();
    const list = panel.getByRole('list', { name: 'Prerequisites of new_checkout' });
    assert.deepEqual(await list.getByRole('listitem').allInnerTexts().then((items) => items.map((item) => item.replace(/\s*Remove$/, '').trim())), ['Needs new_payment_api on', 'Needs pricing_exp serving arm_b']);
    assert.deepEqual(await stored(checkout.id), [{ flag_key: 'new_payment_api', enabled: true }, { flag_key: 'pricing_exp', enabled: true, variants: ['arm_b'] }]);
    await checkA11y(page, 'prerequisites, two');

    // The flags list says what it needs.
    await page.goto(`${server.url}/projects/${project.id}`);
    await page.getByText('needs new_payment_api, pricing_exp').waitFor();

    // On the payment API's page: the flag that needs it; making it need the checkout is a cycle.
    await open('new_payment_api', 'New payment API');
    await panel.getByRole('list', { name: 'Flags that need new_payment_api' }).getByRole('link', { name: 'new_checkout' }).waitFor();
    await panel.getByText('new_payment_api cannot be deleted or given another key').waitFor();
    allowed = /400/;
    await choose(panel.getByLabel('Flag it needs'), 'new_checkout');
    await press(panel.getByRole('button', { name: 'Add prerequisite' }));
    await panel.getByRole('alert').filter({ hasText: 'Not saved: prerequisites: a cycle (new_payment_api → new_checkout → new_payment_api)' }).waitFor();
    allowed = null;
    assert.deepEqual(await stored(payments.id), [], 'nothing stored');
    await checkA11y(page, 'prerequisites, cycle refused');

    // Back on the checkout: the experiment's prerequisite removed.
    await open('new_checkout', 'New checkout');
    await press(panel.getByRole('button', { name: 'Remove prerequisite pricing_exp' }));
    await panel.getByRole('status').filter({ hasText: 'Removed pricing_exp' }).waitFor();
    assert.deepEqual(await stored(checkout.id), [{ flag_key: 'new_payment_api', enabled: true }]);
  } catch (error) {
    throw await failureReport(page, 'prerequisites', error);
  }
  assert.deepEqual(consoleErrors, [], 'no console errors on any page');
  if (shots) await screenshots(shots, user.token, project.id, checkout.id);
  await context.close();
});

async function screenshots(dir: string, token: string, projectId: string, flagId: string) {
  const environments = (await request(server, 'GET', `/api/projects/${projectId}/environments`, { token })).body;
  const production = environments.find((env: { key: string }) => env.key === 'production');
  await forEachScreenshotView(dir, browser, async (page, view) => {
    await signIn(page, server.url, token);
    await page.goto(`${server.url}/projects/${projectId}/flags/${production.id}/${flagId}`);
    await page.waitForLoadState('networkidle');
    const panel = page.getByRole('region', { name: 'Prerequisites' });
    await panel.getByRole('list', { name: /Prerequisites of/ }).waitFor();
    if (!view.fullPage) await panel.evaluate((element) => window.scrollTo(0, element.getBoundingClientRect().top + window.scrollY - 64));
    await page.screenshot({ path: join(dir, `flag-prerequisites-${view.suffix}.png`), fullPage: view.fullPage });
  });
}
