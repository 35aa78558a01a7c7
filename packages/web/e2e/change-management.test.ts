/**
 * Scheduled changes and change requests (docs/change-management.md) walked through in
 * Debian's Chromium, by keyboard, role and accessible name: in staging a person schedules a change
 * at the time offered (its time zone shown), cancels it, and schedules a ramp of four steps; the
 * owner makes production need one approval; there, switching the flag on and setting its rollout
 * go into a draft change request instead of the server, sent with "Request changes"; the request
 * page shows the diff; another member approves it with a comment and applies it, and the server
 * then holds the change. No console error on any page; axe finds no serious violation in any
 * state reached.
 *
 * GUIDON_SCREENSHOTS=<dir> also saves the schedules, the draft, the request list and a request
 * (desktop and phone, light and dark).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import type { Browser, Locator, Page } from 'playwright-core';
import { eventually, flagsPath, newFlag, newProject, newUser, request, type TestServer } from '@guidon/server/dist/tests/harness.js';
import { addMember } from '@guidon/server/dist/tests/team.js';
import { checkA11y, failureReport, forEachScreenshotView, selectByKeyboard, serverAndBrowser, signIn, tabTo, watchConsole } from './browser.js';

let server: TestServer;
let browser: Browser;
serverAndBrowser({ PUBLIC_URL: 'http://guidon.test' }, (started, chromium) => {
  server = started;
  browser = chromium;
});

const shots = process.env.GUIDON_SCREENSHOTS;

// A generous limit: axe runs at four views in every state reached, on a machine that may be shared.
test('a person schedules changes and a ramp; in production their edits become a change request that another member approves and applies', { timeout: 300_000 }, async () => {
  const owner = await newUser(server, 'launcher');
  const reviewer = await newUser(server, 'reviewer');
  const project = await newProject(server, owner, 'Launch shop');
  await addMember(server, owner, project.id, reviewer, 'editor');
  const production = await newFlag(server, owner, project, { key: 'new_checkout', name: 'New checkout' });
  const staging = await newFlag(server, owner, project, { key: 'new_checkout', name: 'New checkout' }, project.staging);
  const stored = async (id = production.id, envId = project.production) => (await request(server, 'GET', `${flagsPath(project, envId)}/${id}`, { token: owner.token })).body;

  // A browser in Paris: times are shown and picked there, and sent as instants.
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 }, timezoneId: 'Europe/Paris' });
  const page = await context.newPage();
  page.setDefaultTimeout(10_000);
  const consoleErrors = watchConsole(page);
  const press = async (control: Locator, key = 'Enter') => {
    await tabTo(page, control);
    await page.keyboard.press(key);
  };
  const type = async (field: Locator, text: string) => {
    await tabTo(page, field);
    await page.keyboard.press('Control+A');
    await page.keyboard.insertText(text);
  };

  try {
    await signIn(page, server.url, owner.token);

    // Staging: one change at the time offered (an hour from now, in the browser's zone), then cancelled.
    await page.goto(`${server.url}/projects/${project.id}/flags/${project.staging}/${staging.id}`);
    const schedules = page.getByRole('region', { name: 'Scheduled changes' });
    await schedules.getByText('Nothing scheduled.').waitFor();
    // The time zone is shown with the time asked for: the browser's own.
    const offset = await page.evaluate(() => -new Date().getTimezoneOffset() / 60);
    await schedules.getByLabel(`When (Europe/Paris, UTC+0${offset}:00)`).waitFor();
    const single = schedules.getByRole('form', { name: 'Schedule a change' });
    await press(single.getByRole('radio', { name: 'Switch it on' }), 'Space');
    await press(single.getByRole('button', { name: 'Schedule change' }));
    await single.getByRole('status').filter({ hasText: /^Scheduled: at .*, switch on\.$/ }).waitFor();
    // Offered: an hour from now, to the minute, in Paris; stored as that instant.
    const [offered] = (await request(server, 'GET', `${flagsPath(project, project.staging)}/${staging.id}/schedules`, { token: owner.token })).body;
    assert.ok(Math.abs(Date.parse(offered.at) - (Date.now() + 3_600_000)) < 120_000, `${offered.at} is about an hour from now`);
    const pending = schedules.getByRole('list', { name: 'Pending scheduled changes' });
    await pending.getByRole('listitem').filter({ hasText: 'switch on' }).waitFor();
    await checkA11y(page, 'a scheduled change');
    await press(pending.getByRole('button', { name: /^Cancel the change at / }));
    await schedules.getByText('Nothing scheduled.').waitFor();

    // A ramp: 10 → 25 → 50 → 100 %, a day apart, switched on at the first step.
    const ramp = schedules.getByRole('form', { name: 'Ramp up' });
    assert.equal(await ramp.getByRole('list', { name: "The ramp's steps" }).getByRole('listitem').count(), 4);
    await press(ramp.getByRole('button', { name: 'Schedule the ramp' }));
    await ramp.getByRole('status').filter({ hasText: 'Scheduled: 4 steps, 10 → 25 → 50 → 100 %.' }).waitFor();
    await pending.getByRole('listitem').nth(3).waitFor();
    const rampStored = (await request(server, 'GET', `${flagsPath(project, project.staging)}/${staging.id}/schedules`, { token: owner.token })).body.filter((item: any) => item.status === 'pending');
    assert.deepEqual(rampStored.map((item: any) => item.change), [{ enabled: true, rollout_percentage: 10 }, { rollout_percentage: 25 }, { rollout_percentage: 50 }, { rollout_percentage: 100 }]);
    assert.equal(Date.parse(rampStored[1].at) - Date.parse(rampStored[0].at), 24 * 3600_000);
    await checkA11y(page, 'a ramp of four scheduled changes');

    // The owner makes production need one approval.
    await page.getByRole('navigation', { name: 'Project sections' }).getByRole('link', { name: 'Environments', exact: true }).click();
    const approvals = page.getByLabel('Approvals needed for changes to Production');
    await tabTo(page, approvals);
    await selectByKeyboard(page, approvals, '1');
    await eventually(async () => (await request(server, 'GET', `/api/projects/${project.id}/environments/${project.production}`, { token: owner.token })).body.approvals_required === 1, 'production needs one approval');
    await checkA11y(page, 'environments with approvals');

    // Production: the edits go into a draft, not to the server.
    await page.goto(`${server.url}/projects/${project.id}/flags/${project.production}/${production.id}`);
    await page.getByText(/Changes to Production need an approval from other members/).waitFor();
    await press(page.getByRole('switch', { name: 'new_checkout in Production' }), 'Space');
    const draft = page.getByRole('region', { name: 'Draft change request for Production' });
    await draft.getByText('new_checkout: switch on').waitFor();
    await type(page.getByLabel('Rollout percentage', { exact: true }), '25');
    await page.keyboard.press('Enter');
    await draft.getByText('new_checkout: switch on, rollout 25%').waitFor();
    assert.deepEqual([(await stored()).enabled, (await stored()).rollout_percentage], [false, 0], 'nothing reached the server');
    await checkA11y(page, 'a draft change request');
    if (shots) await screenshots(shots, owner.token, project.id, project.staging, staging.id, project.production, production.id, 'draft');

    await type(draft.getByLabel('Title of the request'), 'Launch the new checkout');
    await type(draft.getByLabel('Why (for the reviewers)'), 'Marketing starts Monday');
    await press(draft.getByRole('button', { name: 'Request changes' }));
    await page.getByRole('heading', { name: /Launch the new checkout/ }).waitFor();
    const changes = page.getByRole('list', { name: 'Changes of this request' });
    await changes.getByText('new_checkout: switch on, rollout 25%').waitFor();
    await changes.getByRole('table').getByRole('row', { name: /enabled/ }).waitFor();
    await page.getByText('You asked for these changes: another member reviews them.').waitFor();
    assert.equal(await page.getByRole('button', { name: 'Approve' }).count(), 0, 'no self-approval');
    await checkA11y(page, 'a change request, open');
    const requestUrl = page.url();

    // Another member approves it with a comment, and applies it.
    await signIn(page, server.url, reviewer.token);
    await page.goto(`${server.url}/projects/${project.id}/change-requests`);
    await page.getByRole('list', { name: 'Change requests, newest first' }).getByRole('link', { name: 'Launch the new checkout' }).waitFor();
    await checkA11y(page, 'change requests, open');
    await press(page.getByRole('link', { name: 'Launch the new checkout' }));
    await page.waitForURL(requestUrl);
    await type(page.getByLabel('Comment (optional)'), 'Looks right to me');
    await press(page.getByRole('button', { name: 'Approve' }));
    await page.getByRole('status').filter({ hasText: 'Approved.' }).waitFor();
    await page.getByRole('list', { name: 'Reviews, oldest first' }).getByText('Looks right to me').waitFor();
    await press(page.getByRole('button', { name: 'Apply now' }));
    await page.getByRole('status').filter({ hasText: 'Applied.' }).waitFor();
    await page.getByRole('heading', { name: /Launch the new checkout/ }).getByText('applied').waitFor();
    assert.deepEqual([(await stored()).enabled, (await stored()).rollout_percentage], [true, 25], 'the server holds the approved change');
    await checkA11y(page, 'a change request, applied');
    if (shots) await screenshots(shots, reviewer.token, project.id, project.staging, staging.id, project.production, production.id, 'request', requestUrl);

    assert.deepEqual(consoleErrors, []);
  } catch (error) {
    throw await failureReport(page, 'change-management', error);
  } finally {
    await context.close();
  }
});

/** The new pages in every view: the schedules and the draft (owner), or the list and the applied request (reviewer). */
async function screenshots(dir: string, token: string, projectId: string, stagingId: string, stagingFlag: string, productionId: string, productionFlag: string, stage: 'draft' | 'request', requestUrl = ''): Promise<void> {
  await forEachScreenshotView(dir, browser, async (page: Page, view) => {
    await signIn(page, server.url, token);
    if (stage === 'draft') {
      // The owner's view: how many approvals each environment needs, Production at one.
      await page.goto(`${server.url}/projects/${projectId}/environments`);
      await page.getByLabel('Approvals needed for changes to Production').waitFor();
      await page.screenshot({ path: join(dir, `environments-${view.suffix}.png`), fullPage: view.fullPage });
      await page.goto(`${server.url}/projects/${projectId}/flags/${stagingId}/${stagingFlag}`);
      const schedules = page.getByRole('region', { name: 'Scheduled changes' });
      await schedules.getByRole('list', { name: 'Pending scheduled changes' }).waitFor();
      if (!view.fullPage) await schedules.evaluate((element) => window.scrollTo(0, element.getBoundingClientRect().top + window.scrollY - 64));
      await page.screenshot({ path: join(dir, `schedules-${view.suffix}.png`), fullPage: view.fullPage });
      // The draft lives in this browser: the screenshot's own browser makes one of its own.
      await page.goto(`${server.url}/projects/${projectId}/flags/${productionId}/${productionFlag}`);
      await page.getByRole('switch', { name: 'new_checkout in Production' }).click();
      await page.getByRole('region', { name: 'Draft change request for Production' }).waitFor();
      await page.screenshot({ path: join(dir, `change-draft-${view.suffix}.png`), fullPage: view.fullPage });
      return;
    }
    await page.goto(`${server.url}/projects/${projectId}/change-requests?status=all`);
    await page.getByRole('list', { name: 'Change requests, newest first' }).waitFor();
    await page.screenshot({ path: join(dir, `change-requests-${view.suffix}.png`), fullPage: view.fullPage });
    await page.goto(requestUrl);
    await page.getByRole('list', { name: 'Reviews, oldest first' }).waitFor();
    await page.screenshot({ path: join(dir, `change-request-${view.suffix}.png`), fullPage: view.fullPage });
  });
}
