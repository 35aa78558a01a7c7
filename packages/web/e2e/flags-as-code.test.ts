/**
 * Flags as code in the dashboard (docs/flags-as-code.md), walked in Debian's Chromium by role and accessible
 * name, the buttons by keyboard: a project's settings download its document as JSON and YAML (the
 * bytes the API exports); another project imports that file: the check lists what would be
 * created, applying it creates the flags; a pasted document with mistakes is refused with each
 * problem and where it is; Unleash exports are checked, their skipped parts listed with the
 * reason, and applied. axe finds no serious violation in any state reached.
 *
 * GUIDON_SCREENSHOTS=<dir> also saves the settings page with an import plan and with the Unleash
 * check (desktop and phone, light and dark).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser, Locator, Page } from 'playwright-core';
import { flagsPath, newFlag, newProject, newUser, request, type TestServer } from '@guidon/server/dist/tests/harness.js';
import { checkA11y, failureReport, forEachScreenshotView, serverAndBrowser, signIn, tabTo, walkPage, watchConsole } from './browser.js';

let server: TestServer;
let browser: Browser;
serverAndBrowser({}, (started, chromium) => {
  server = started;
  browser = chromium;
});

const shots = process.env.GUIDON_SCREENSHOTS;

/** A small Unleash export (features-batch/export) of one environment: one feature that maps, one that cannot. */
const UNLEASH_EXPORT = {
  features: [{ name: 'new-onboarding', description: 'the new first steps', type: 'release', project: 'default' }, { name: 'office-hours-banner', type: 'release', project: 'default' }],
  featureStrategies: [
    { name: 'flexibleRollout', featureName: 'new-onboarding', parameters: { rollout: '20', stickiness: 'default', groupId: 'new-onboarding' }, constraints: [{ contextName: 'country', operator: 'IN', values: ['fr', 'de'] }], segments: [] },
    { name: 'office-hours', featureName: 'office-hours-banner', parameters: {}, constraints: [], segments: [] },
  ],
  featureEnvironments: [
    { featureName: 'new-onboarding', environment: 'production', enabled: true, variants: [] },
    { featureName: 'office-hours-banner', environment: 'production', enabled: true, variants: [] },
  ],
  segments: [],
  tagTypes: [],
  contextFields: [],
};

/** Tab to the control, press Enter: a keyboard user's click. */
async function press(page: Page, control: Locator): Promise<void> {
  await tabTo(page, control);
  await page.keyboard.press('Enter');
}

test('a person downloads a project as a file, imports it into another, fixes a refused paste, and moves flags in from Unleash', { timeout: 300_000 }, async () => {
  const user = await newUser(server, 'gitops');
  const source = await newProject(server, user, 'Shop front');
  await newFlag(server, user, source, { key: 'checkout', name: 'Checkout', enabled: true, rollout_percentage: 30 });
  await newFlag(server, user, source, { key: 'dark_mode', name: 'Dark mode' }, source.staging);
  const target = await newProject(server, user, 'Shop copy');
  const exported = (await request(server, 'GET', `/api/projects/${source.id}/export`, { token: user.token })).text;

  const { context, page } = await walkPage(browser, server.url);
  const consoleErrors = watchConsole(page, () => /400 \(Bad Request\)/);
  try {
    await signIn(page, server.url, user.token);
    await page.goto(`${server.url}/projects/${source.id}/settings`);
    const exportPanel = page.getByRole('region', { name: 'Export' });
    await exportPanel.getByRole('button', { name: 'Download JSON' }).waitFor();
    await checkA11y(page, 'project settings with export and import');

    // Export: the file the browser saves is the API's document, byte for byte.
    for (const [format, name] of [['json', 'Download JSON'], ['yaml', 'Download YAML']] as const) {
      const downloading = page.waitForEvent('download');
      await press(page, exportPanel.getByRole('button', { name }));
      const download = await downloading;
      assert.equal(download.suggestedFilename(), `shop-front-flags.${format}`);
      const saved = readFileSync((await download.path())!, 'utf8');
      assert.equal(saved, (await request(server, 'GET', `/api/projects/${source.id}/export?format=${format}`, { token: user.token })).text);
      await exportPanel.getByRole('status').filter({ hasText: `Downloaded shop-front-flags.${format}` }).waitFor();
    }

    // Import into the other project: the check lists what would be created; nothing is yet.
    await page.goto(`${server.url}/projects/${target.id}/settings`);
    const importPanel = page.getByRole('region', { name: 'Import', exact: true });
    await importPanel.getByLabel('Document file').setInputFiles({ name: 'shop-front-flags.json', mimeType: 'application/json', buffer: Buffer.from(exported) });
    await press(page, importPanel.getByRole('button', { name: 'Check the import' }));
    const plan = importPanel.getByRole('region', { name: 'Import plan' });
    await plan.getByRole('status').filter({ hasText: 'Would change: 2 to create, 0 to update, 0 to delete, 2 unchanged.' }).waitFor();
    assert.deepEqual(await plan.getByRole('list', { name: 'Creates' }).getByRole('listitem').allTextContents(), ['Flag checkout in production', 'Flag dark_mode in staging']);
    assert.equal((await request(server, 'GET', flagsPath(target), { token: user.token })).body.length, 0, 'a check changes nothing');
    await checkA11y(page, 'an import plan');

    await press(page, plan.getByRole('button', { name: 'Apply the import' }));
    await importPanel.getByRole('status').filter({ hasText: 'Imported: 2 created, 0 updated, 0 deleted, 2 unchanged.' }).waitFor();
    const created = (await request(server, 'GET', flagsPath(target), { token: user.token })).body;
    assert.deepEqual(created.map((flag: { key: string; rollout_percentage: number }) => [flag.key, flag.rollout_percentage]), [['checkout', 30]]);

    // A pasted document with mistakes: each problem with where it is; editing it clears the refusal.
    const pasted = importPanel.getByLabel('Or paste the document');
    await tabTo(page, pasted);
    await page.keyboard.press('Control+A');
    await page.keyboard.insertText('guidon: 1\nenvironments: [{key: production, name: Production}]\nflags:\n  - key: Bad Key\n    name: Bad\n    environments: {production: {rollout_percentage: 150}}\n');
    await press(page, importPanel.getByRole('button', { name: 'Check the import' }));
    const problems = importPanel.getByRole('list', { name: 'Problems in the document' });
    await problems.waitFor();
    assert.deepEqual(await problems.getByRole('listitem').allTextContents(), ['flags[0].key must match pattern "^[a-z][a-z0-9_-]*$"', 'flags[0].environments.production.rollout_percentage must be <= 100']);
    await checkA11y(page, 'a refused document');
    await tabTo(page, pasted);
    await page.keyboard.press('End');
    await page.keyboard.insertText(' ');
    assert.equal(await problems.count(), 0, 'editing the document clears the refusal');

    // From Unleash: the check lists what maps and what is skipped, and why.
    const unleash = page.getByRole('region', { name: 'Import from Unleash' });
    await unleash.getByLabel('Unleash export files').setInputFiles({ name: 'production.json', mimeType: 'application/json', buffer: Buffer.from(JSON.stringify(UNLEASH_EXPORT)) });
    await press(page, unleash.getByRole('button', { name: 'Check the Unleash import' }));
    const unleashPlan = unleash.getByRole('region', { name: 'Import plan' });
    await unleashPlan.getByRole('list', { name: 'Creates' }).getByText('Flag new-onboarding in production').waitFor();
    const skipped = unleashPlan.getByRole('table', { name: 'Skipped' });
    assert.deepEqual(await skipped.getByRole('row').nth(1).getByRole('cell').allTextContents(), ['office-hours-banner', 'production', 'the feature', 'strategy "office-hours" (office-hours-banner): Guidon has default, flexibleRollout, gradualRolloutUserId, userWithId and remoteAddress']);
    await checkA11y(page, 'an Unleash check with skipped features');
    await press(page, unleashPlan.getByRole('button', { name: 'Apply the import' }));
    await unleash.getByRole('status').filter({ hasText: /^Imported from Unleash: 1 created/ }).waitFor();
    const flags = (await request(server, 'GET', flagsPath(target), { token: user.token })).body.map((flag: { key: string }) => flag.key);
    assert.deepEqual(flags.sort(), ['checkout', 'new-onboarding']);
    assert.deepEqual(consoleErrors, []);
  } catch (error) {
    throw await failureReport(page, 'flags-as-code', error);
  } finally {
    await context.close();
  }

  if (!shots) return;
  await forEachScreenshotView(shots, browser, async (shotPage, view) => {
    await signIn(shotPage, server.url, user.token);
    await shotPage.goto(`${server.url}/projects/${source.id}/settings`);
    const panel = shotPage.getByRole('region', { name: 'Import', exact: true });
    await panel.getByLabel('Or paste the document').fill(exported.replace('"rollout_percentage": 30', '"rollout_percentage": 45'));
    await panel.getByRole('button', { name: 'Check the import' }).click();
    await panel.getByRole('region', { name: 'Import plan' }).waitFor();
    // Desktop: the whole page from its top (the sticky header in its place); phone: the panel in view.
    await panel.evaluate((element, full) => window.scrollTo(0, full ? 0 : element.getBoundingClientRect().top + window.scrollY - 64), view.fullPage);
    await shotPage.screenshot({ path: join(shots, `settings-import-${view.suffix}.png`), fullPage: view.fullPage });
    const unleash = shotPage.getByRole('region', { name: 'Import from Unleash' });
    await unleash.getByLabel('Unleash export files').setInputFiles({ name: 'production.json', mimeType: 'application/json', buffer: Buffer.from(JSON.stringify(UNLEASH_EXPORT)) });
    await unleash.getByRole('button', { name: 'Check the Unleash import' }).click();
    await unleash.getByRole('table', { name: 'Skipped' }).waitFor();
    await unleash.evaluate((element, full) => window.scrollTo(0, full ? 0 : element.getBoundingClientRect().top + window.scrollY - 64), view.fullPage);
    await shotPage.screenshot({ path: join(shots, `settings-unleash-${view.suffix}.png`), fullPage: view.fullPage });
  });
});
