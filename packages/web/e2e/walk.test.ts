/**
 * The dashboard walked through in Debian's Chromium, as a person would: every element found by
 * its role and accessible name. Sign up → verify the address through the emailed link → project →
 * flag → rules (added and reordered by keyboard) → switch on → try it → history → copy to staging
 * → rotate the key → expired session → log out (the token ends on the server) → forgot/reset
 * password through the emailed link (the server's test mailbox). No console error on any page; axe
 * finds no serious violation on any of them (checkA11y, both widths, both themes); every dialog is
 * opened from the keyboard, keeps the focus inside and gives it back (dialogByKeyboard).
 *
 * GUIDON_SCREENSHOTS=<dir> also saves screenshots of the main pages (desktop and phone, light and
 * dark) into that directory: `npm run screenshots -w packages/web`.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { eventually, newFlag, newProject, newUser, request, type TestServer } from '@guidon/server/dist/tests/harness.js';
import { bucketOf } from '@guidon/engine';
import { checkA11y, dialogByKeyboard, failureReport, focusIsPlaced, focusReturnsTo, forEachScreenshotView, serverAndBrowser, signIn, walkPage, watchConsole } from './browser.js';

let server: TestServer;
let browser: Browser;
serverAndBrowser({ PUBLIC_URL: 'http://guidon.test' }, (started, chromium) => {
  server = started;
  browser = chromium;
});

/** The path and query of the newest link to `path` in the emails to the address (the server's test mailbox). */
async function emailedLink(address: string, path: string): Promise<string> {
  const links = () =>
    server.mailbox!.to(address).flatMap((mail) => [...mail.text.matchAll(/http:\/\/guidon\.test(\/[^\s"'<>]+)/g)].map((match) => match[1]!)).filter((link) => link.startsWith(`${path}?`));
  await eventually(() => links().length > 0, `an email to ${address} with a ${path} link`);
  return links().at(-1)!;
}

const email = `walker-${process.pid}@example.com`;
const password = 'correct horse battery';
const newPassword = 'a brand new passphrase';

// A generous limit: axe runs at four views on every page reached, on a machine that may be shared.
test('a person runs their flags from the dashboard', { timeout: 300_000 }, async () => {
  const { context, page } = await walkPage(browser, server.url);
  // Only the deliberate failures (a refused toggle, an expired session) may show the browser's
  // "failed to load resource" error, each during its own step.
  let allowed: RegExp | null = null;
  const consoleErrors = watchConsole(page, () => allowed);
  let projectId = '';
  try {
    projectId = await walk(page, (pattern) => (allowed = pattern));
  } catch (error) {
    throw await failureReport(page, 'walk', error);
  }
  assert.deepEqual(consoleErrors, [], 'no console errors on any page');

  if (process.env.GUIDON_SCREENSHOTS) await screenshots(process.env.GUIDON_SCREENSHOTS, await token(page), projectId);
  await context.close();
});

/** The steps; answers the project's id. */
async function walk(page: Page, allowConsoleError: (allowed: RegExp | null) => void): Promise<string> {
  const heading = (name: string | RegExp) => page.getByRole('heading', { name }).first().waitFor();
  const section = (name: string) => page.getByRole('navigation', { name: 'Project sections' }).getByRole('link', { name, exact: true }).click();

  // Sign up: the root sends a visitor to log in, which links to sign-up.
  await page.goto(server.url);
  await heading('Log in');
  await checkA11y(page, 'log in');
  await page.getByRole('link', { name: 'Create an account' }).click();
  await heading('Create your account');
  await page.getByLabel('Email').fill(email);
  await page.getByLabel('Password').fill('short');
  await page.getByRole('button', { name: 'Sign up' }).click();
  await page.getByRole('alert').filter({ hasText: 'Use at least 8 characters' }).waitFor();
  await checkA11y(page, 'sign up, with an error');
  await page.getByLabel('Password').fill(password);
  await page.getByRole('button', { name: 'Sign up' }).click();
  await heading('Projects');
  await heading('No projects yet');
  await checkA11y(page, 'projects, none yet');

  // Unverified: a banner says what waits, and sends a new link on request.
  const banner = page.getByRole('region', { name: 'Email address not verified' });
  await banner.getByText(`We emailed a link to ${email}`).waitFor();
  await checkA11y(page, 'projects, with the banner of an unverified address');
  await banner.getByRole('button', { name: 'Resend the email' }).click();
  await banner.getByRole('status').filter({ hasText: 'A new link is on its way' }).waitFor();
  await eventually(() => server.mailbox!.to(email).length === 2, 'the second verification email');
  await page.getByRole('navigation', { name: 'Account' }).getByRole('link', { name: 'Account', exact: true }).click();
  await heading('Account');
  await page.getByText('Not verified', { exact: true }).waitFor();
  await checkA11y(page, 'account, unverified');
  // The emailed link: a press of the button verifies (a mail scanner opening the link does not).
  await page.goto(server.url + (await emailedLink(email, '/verify-email')));
  await heading('Verify your email address');
  await checkA11y(page, 'verify email');
  await page.getByRole('button', { name: 'Verify my email address' }).click();
  await page.getByRole('status').filter({ hasText: 'Your email address is verified' }).waitFor();
  await checkA11y(page, 'verify email, done');
  await page.getByRole('link', { name: 'Go to your projects' }).first().click();
  await heading('No projects yet');
  assert.equal(await page.getByRole('region', { name: 'Email address not verified' }).count(), 0, 'no banner once verified');
  await page.getByRole('navigation', { name: 'Account' }).getByRole('link', { name: 'Account', exact: true }).click();
  await page.getByText('Verified', { exact: true }).waitFor();
  await checkA11y(page, 'account, verified');
  await page.getByRole('link', { name: 'Guidon: your projects' }).click();
  await heading('No projects yet');

  // A project: the dialog traps focus and names what comes with it.
  const projectDialog = await dialogByKeyboard(page, page.getByRole('button', { name: 'Create your first project' }), 'New project');
  await projectDialog.getByLabel('Name').fill('Shop');
  await checkA11y(page, 'new project dialog');
  await projectDialog.getByRole('button', { name: 'Create project' }).click();
  await heading('Shop');
  await heading('No flags yet');
  await checkA11y(page, 'flags, none yet');
  const projectUrl = page.url();
  const projectId = projectUrl.split('/projects/')[1]!;

  // A flag: the key rule is checked before submit.
  const flagDialog = await dialogByKeyboard(page, page.getByRole('button', { name: 'Create your first flag' }), 'New flag');
  await flagDialog.getByLabel('Name').fill('New checkout');
  assert.equal(await flagDialog.getByLabel('Key').inputValue(), 'new_checkout', 'the key is suggested from the name');
  await flagDialog.getByLabel('Key').fill('New Checkout');
  await flagDialog.getByRole('button', { name: 'Create flag' }).click();
  await flagDialog.getByRole('alert').filter({ hasText: 'The key allows a-z, 0-9, _ and -' }).waitFor();
  await checkA11y(page, 'new flag dialog, with an error');
  await flagDialog.getByLabel('Key').fill('new_checkout');
  await flagDialog.getByRole('button', { name: 'Create flag' }).click();
  await heading(/New checkout/);
  await checkA11y(page, 'flag, new');

  // Two rules added with the keyboard alone (the value has the focus, the kind is the radio group
  // before it, Enter adds), then the second moved to the top (drag handle, Space, arrow, Space).
  const addRule = page.getByRole('button', { name: 'Add rule' });
  for (const [type, value] of [['Email domain', 'example.com'], ['User id', 'user-42']] as const) {
    const ruleDialog = await dialogByKeyboard(page, addRule, 'Add rule');
    await focusReturnsTo(page, ruleDialog.getByLabel('Value'));
    if (type === 'Email domain') {
      await page.keyboard.press('Shift+Tab');
      await page.keyboard.press('ArrowDown');
      await page.keyboard.press('ArrowDown');
      assert.ok(await ruleDialog.getByRole('radio', { name: type }).isChecked(), `${type} picked with the arrow keys`);
      await page.keyboard.press('Tab');
    }
    await page.keyboard.type(value);
    if (type === 'Email domain') await checkA11y(page, 'add rule dialog');
    await page.keyboard.press('Enter');
    await ruleDialog.waitFor({ state: 'detached' });
    await focusReturnsTo(page, addRule);
  }
  const rules = page.getByRole('list').filter({ has: page.getByRole('button', { name: /^Reorder rule/ }) });
  await rules.getByRole('listitem').nth(1).filter({ hasText: 'user-42' }).waitFor();
  await page.getByRole('button', { name: 'Reorder rule 2 of 2: User id user-42' }).focus();
  // dnd-kit measures between key presses: give it a frame or two.
  for (const key of ['Space', 'ArrowUp', 'Space']) {
    await page.keyboard.press(key);
    await page.waitForTimeout(250);
  }
  await page.getByRole('button', { name: 'Reorder rule 1 of 2: User id user-42' }).waitFor();
  await eventually(async () => {
    const flags = await request(server, 'GET', `/api/projects/${projectId}/flags`, { token: await token(page) });
    const flagId = flags.body[0].environments.production.flag_id;
    const stored = await request(server, 'GET', `/api/projects/${projectId}/environments/${page.url().split('/flags/')[1]!.split('/')[0]}/flags/${flagId}/rules`, { token: await token(page) });
    return stored.body[0]?.rule_value === 'user-42';
  }, 'the new rule order stored');
  // Editing a rule: the same dialog, from the rule's Edit button; Escape leaves it as it was.
  const editRule = page.getByRole('button', { name: 'Edit rule User id user-42' });
  const editDialog = await dialogByKeyboard(page, editRule, 'Edit rule');
  assert.equal(await editDialog.getByLabel('Value').inputValue(), 'user-42');
  await checkA11y(page, 'edit rule dialog');
  await page.keyboard.press('Escape');
  await editDialog.waitFor({ state: 'detached' });
  await focusReturnsTo(page, editRule);

  // Switch it on in Production (Space on the switch); the state survives a reload (and so does the session).
  const productionSwitch = page.getByRole('switch', { name: 'new_checkout in Production' });
  assert.equal(await productionSwitch.getAttribute('aria-checked'), 'false');
  await productionSwitch.press('Space');
  await page.getByRole('switch', { name: 'new_checkout in Production', checked: true }).waitFor();
  await page.reload();
  await page.getByRole('switch', { name: 'new_checkout in Production', checked: true }).waitFor();

  // Half the users outside the rules: typed into the number beside the slider.
  await page.getByLabel('Rollout percentage', { exact: true }).fill('50');
  await page.getByLabel('Rollout percentage', { exact: true }).press('Enter');
  await page.getByText('Of everyone else, 50% get it').waitFor();
  // The slider moves with the arrow keys, and each step is saved.
  const storedRollout = async () => (await request(server, 'GET', `/api/projects/${projectId}/flags`, { token: await token(page) })).body[0].environments.production.rollout_percentage as number;
  const slider = page.getByRole('slider', { name: 'Rollout percentage of new_checkout in Production' });
  await slider.press('ArrowRight');
  await page.getByText('Of everyone else, 51% get it').waitFor();
  await eventually(async () => (await storedRollout()) === 51, 'rollout 51 stored');
  await slider.press('ArrowLeft');
  await page.getByText('Of everyone else, 50% get it').waitFor();
  await eventually(async () => (await storedRollout()) === 50, 'rollout 50 stored');
  await checkA11y(page, 'flag, with rules, on, 50% rollout');

  // Try it: the real evaluate endpoint, reasons as it answers them.
  await section('Try it');
  const tryIt = async (userId: string, userEmail: string, reason: string) => {
    await page.getByLabel('user_id').fill(userId);
    await page.getByLabel('user_email').fill(userEmail);
    await page.getByRole('button', { name: 'Evaluate' }).click();
    await page.getByRole('row', { name: `new_checkout On ${reason}` }).or(page.getByRole('row', { name: `new_checkout Off ${reason}` })).waitFor();
  };
  await tryIt('user-7', 'bob@example.com', 'Matched email_domain targeting rule');
  await tryIt('user-42', 'ada@other.org', 'Matched user_id targeting rule');
  const rolloutReason = bucketOf('new_checkout', 'user-9') < 50 ? 'User in 50% rollout' : 'User not in 50% rollout';
  await tryIt('user-9', 'eve@other.org', rolloutReason);
  await checkA11y(page, 'try it, with results');

  // History shows those evaluations, newest first, and filters by user.
  await section('Usage');
  await heading('Evaluation history');
  await eventually(async () => {
    await page.getByRole('button', { name: 'Filter' }).click();
    return (await page.getByRole('row').filter({ hasText: 'new_checkout' }).count()) >= 3;
  }, 'three evaluations in the history');
  const firstRow = page.getByRole('row').filter({ hasText: 'new_checkout' }).first();
  assert.match((await firstRow.textContent()) ?? '', new RegExp(`user-9.*${rolloutReason}`), 'newest first');
  await page.getByLabel('User id').fill('user-42');
  await page.getByRole('button', { name: 'Filter' }).click();
  await eventually(async () => (await page.getByRole('row').filter({ hasText: 'new_checkout' }).count()) === 1, 'only user-42');
  assert.match((await page.getByRole('row').filter({ hasText: 'new_checkout' }).textContent()) ?? '', /Matched user_id targeting rule/);
  await checkA11y(page, 'usage, filtered history');
  // On a phone each evaluation is a card: its reason, the last column, is in view without scrolling sideways.
  const desktop = page.viewportSize()!;
  await page.setViewportSize({ width: 360, height: 760 });
  const reason = await page.getByRole('cell', { name: /Matched user_id targeting rule/ }).boundingBox();
  assert.ok(reason && reason.x >= 0 && reason.x + reason.width <= 360, `the reason is within a phone's width: ${JSON.stringify(reason)}`);
  await page.setViewportSize(desktop);

  // Copy the flag to Staging; it appears there in the side-by-side view.
  await section('Flags');
  await page.getByRole('link', { name: 'Open new_checkout in Production' }).click();
  await page.getByLabel('Target environment').selectOption({ label: 'Staging' });
  await page.getByRole('button', { name: 'Copy flag' }).click();
  await page.getByRole('status').filter({ hasText: 'Copied new_checkout to Staging, with its rules.' }).waitFor();
  await checkA11y(page, 'flag, copied to another environment');
  await section('Flags');
  await page.getByRole('switch', { name: 'new_checkout in Staging', checked: true }).waitFor();
  // A toggle the server refuses moves back, and says so.
  allowConsoleError(/status of 500/);
  await page.route('**/api/projects/*/environments/*/flags/*', (route) =>
    route.request().method() === 'PUT' ? route.fulfill({ status: 500, contentType: 'application/json', body: '{"statusCode":500,"error":"Internal Server Error","message":"Internal server error"}' }) : route.continue(),
  );
  await page.getByRole('switch', { name: 'new_checkout in Staging' }).click();
  await page.getByRole('alert').filter({ hasText: 'Not switched, it is back as it was' }).waitFor();
  await page.getByRole('switch', { name: 'new_checkout in Staging', checked: true }).waitFor();
  await checkA11y(page, 'flags, side by side, a refused toggle');
  await page.unrouteAll();
  allowConsoleError(null);
  await page.getByLabel('Search flags').fill('checkout');
  await page.getByRole('status').filter({ hasText: /^1 flag$/ }).waitFor();

  // Rotate the key: the dialog says the old one stops at once, and it does.
  const oldKey = (await request(server, 'GET', `/api/projects/${projectId}`, { token: await token(page) })).body.sdk_key as string;
  await section('Settings');
  const rotateButton = page.getByRole('button', { name: 'Rotate SDK key' });
  const rotate = await dialogByKeyboard(page, rotateButton, 'Rotate the SDK key?');
  await rotate.getByText('The old key stops working at once').waitFor();
  await checkA11y(page, 'rotate key dialog');
  await rotate.getByRole('button', { name: 'Rotate key' }).press('Enter');
  await rotate.waitFor({ state: 'detached' });
  await focusReturnsTo(page, rotateButton);
  const newKey = (await request(server, 'GET', `/api/projects/${projectId}`, { token: await token(page) })).body.sdk_key as string;
  assert.notEqual(newKey, oldKey);
  await page.getByLabel('SDK key').filter({ hasText: newKey }).waitFor();
  await checkA11y(page, 'project settings');
  const withOld = await request(server, 'POST', '/sdk/v1/evaluate', { sdkKey: oldKey, body: { environment: 'production' } });
  assert.equal(withOld.status, 401);

  // How to connect an app, with the new key in its examples.
  await section('Connect an app');
  await page.getByText(newKey).first().waitFor();
  // Local evaluation (docs/local-evaluation.md): the snippet takes an API token, never the SDK key; OFREP for other languages.
  const localSnippet = await page.getByLabel('Local evaluation on a server (@guidon/sdk) snippet', { exact: true }).textContent();
  assert.match(localSnippet ?? '', /mode: 'local'/);
  assert.ok(!(localSnippet ?? '').includes(newKey), 'the local-mode snippet does not carry the SDK key');
  const ofrepSnippet = (await page.getByLabel('OpenFeature in Go, Java, Python or .NET (OFREP) snippet', { exact: true }).textContent()) ?? '';
  for (const part of ['providers/ofrep', 'dev.openfeature.contrib.providers:ofrep', 'openfeature-provider-ofrep', 'OpenFeature.Providers.Ofrep', newKey]) assert.ok(ofrepSnippet.includes(part), part);
  // Installing the SDK today: from this server's /downloads/ (the engine with it), beside the registry's line for later.
  await page.getByText(/downloads\/guidon-sdk-/).first().waitFor();
  const sdkSnippet = (await page.getByLabel('TypeScript SDK (@guidon/sdk) snippet', { exact: true }).textContent()) ?? '';
  const installUrls = /npm install (http\S+\/downloads\/guidon-engine-[\d.]+\.tgz) (http\S+\/downloads\/guidon-sdk-[\d.]+\.tgz)\n/.exec(sdkSnippet);
  assert.ok(installUrls, sdkSnippet);
  assert.match(sdkSnippet, /from the npm registry: npm install @guidon\/sdk/);
  for (const url of installUrls.slice(1)) assert.equal((await fetch(url)).status, 200, url);
  await page.getByRole('button', { name: 'Copy the Local evaluation on a server (@guidon/sdk) snippet' }).waitFor();
  await checkA11y(page, 'connect an app');

  // An expired session: to the login page, then back to where the person was.
  allowConsoleError(/status of 401/);
  await page.evaluate(() => localStorage.setItem('guidon.token', 'expired.token.value'));
  await page.goto(`${projectUrl}/environments`);
  await heading('Log in');
  await page.getByText('Your session ended').waitFor();
  await checkA11y(page, 'log in, session ended');
  allowConsoleError(null);
  await page.getByLabel('Email').fill(email);
  await page.getByLabel('Password').fill(password);
  await page.getByRole('button', { name: 'Log in' }).click();
  await heading('New environment');
  await checkA11y(page, 'environments');
  // Renaming and deleting an environment: dialogs from the keyboard, each closed with Escape.
  for (const [button, dialogName] of [['Rename Staging', 'Rename Staging'], ['Delete Staging', 'Delete Staging?']] as const) {
    const opener = page.getByRole('button', { name: button });
    const dialog = await dialogByKeyboard(page, opener, dialogName);
    await checkA11y(page, `${dialogName} dialog`);
    await page.keyboard.press('Escape');
    await dialog.waitFor({ state: 'detached' });
    await focusReturnsTo(page, opener);
  }
  assert.equal(new URL(page.url()).pathname, `/projects/${projectId}/environments`);

  // Log out ends the login token on the server too, then forgot / reset password through the emailed link.
  const loggedOut = await token(page);
  await page.getByRole('button', { name: 'Log out' }).click();
  await heading('Log in');
  assert.equal((await request(server, 'GET', '/api/me', { token: loggedOut })).status, 401, 'the logged-out token is refused');
  await page.getByRole('link', { name: 'Forgot your password?' }).click();
  // The log-in page has an Email field too: fill only once the next page is there.
  await heading('Reset your password');
  await page.getByLabel('Email').fill(email);
  await page.getByRole('button', { name: 'Send reset link' }).click();
  await page.getByRole('status').filter({ hasText: 'Check your inbox' }).waitFor();
  await checkA11y(page, 'forgot password, sent');
  await page.goto(server.url + (await emailedLink(email, '/reset-password')));
  await heading('Choose a new password');
  await page.getByLabel('New password', { exact: true }).fill(newPassword);
  await page.getByLabel('Repeat the new password').fill('something else');
  await page.getByRole('button', { name: 'Change password' }).click();
  await page.getByRole('alert').filter({ hasText: 'The two passwords differ' }).waitFor();
  await checkA11y(page, 'reset password, with an error');
  await page.getByLabel('Repeat the new password').fill(newPassword);
  await page.getByRole('button', { name: 'Change password' }).click();
  await page.getByRole('link', { name: 'Log in with it' }).click();
  await page.getByLabel('Email').fill(email);
  await page.getByLabel('Password', { exact: true }).fill(newPassword);
  await page.getByRole('button', { name: 'Log in' }).click();
  await page.getByRole('link', { name: 'Shop' }).waitFor();
  await checkA11y(page, 'projects');

  // Deleting by keyboard: a throwaway flag, then a throwaway project; Tab reaches the button, Enter deletes.
  const me = { token: await token(page) } as Parameters<typeof newProject>[1];
  const spare = await newProject(server, me, 'Spare');
  const doomed = await newFlag(server, me, spare, { key: 'old_banner' });
  await newFlag(server, me, spare, { key: 'kept_banner' });
  await page.goto(`${server.url}/projects/${spare.id}/flags/${spare.production}/${doomed.id}`);
  const deleteFlag = page.getByRole('button', { name: 'Delete flag' });
  const deleteFlagDialog = await dialogByKeyboard(page, deleteFlag, 'Delete old_banner in Production?');
  await checkA11y(page, 'delete flag dialog');
  await page.keyboard.press('Tab');
  assert.ok(await deleteFlagDialog.getByRole('button', { name: 'Delete flag' }).evaluate((node) => node === document.activeElement), 'Tab reaches "Delete flag"');
  await page.keyboard.press('Enter');
  await deleteFlagDialog.waitFor({ state: 'detached' });
  await page.waitForURL(`${server.url}/projects/${spare.id}`);
  await page.getByRole('link', { name: 'Open kept_banner in Production' }).waitFor();
  assert.equal(await page.getByRole('link', { name: 'Open old_banner in Production' }).count(), 0, 'the flag is gone');
  assert.match(await focusIsPlaced(page, 'deleting a flag'), /^<main id="main"/, 'the focus is on the new page\'s main content');

  await section('Settings');
  const deleteProject = page.getByRole('button', { name: 'Delete project' });
  const deleteProjectDialog = await dialogByKeyboard(page, deleteProject, 'Delete Spare?');
  await checkA11y(page, 'delete project dialog');
  assert.ok(await deleteProjectDialog.getByLabel('Type "Spare" to confirm').evaluate((node) => node === document.activeElement), 'the focus starts in the confirmation field');
  await page.keyboard.type('Spare');
  await page.keyboard.press('Tab');
  await page.keyboard.press('Tab');
  assert.ok(await deleteProjectDialog.getByRole('button', { name: 'Delete project' }).evaluate((node) => node === document.activeElement), 'Tab reaches "Delete project"');
  await page.keyboard.press('Enter');
  await deleteProjectDialog.waitFor({ state: 'detached' });
  await page.waitForURL(`${server.url}/`);
  await page.getByRole('link', { name: 'Shop' }).waitFor();
  assert.equal(await page.getByRole('link', { name: 'Spare' }).count(), 0, 'the project is gone');
  assert.equal((await request(server, 'GET', `/api/projects/${spare.id}`, { token: me.token })).status, 404);
  assert.match(await focusIsPlaced(page, 'deleting a project'), /^<main id="main"/, 'the focus is on the new page\'s main content');

  return projectId;
}

const token = (page: Page) => page.evaluate(() => localStorage.getItem('guidon.token') ?? '');

/** The main pages, desktop and phone, light and dark. */
async function screenshots(dir: string, sessionToken: string, projectId: string) {
  const flags = (await request(server, 'GET', `/api/projects/${projectId}/flags`, { token: sessionToken })).body;
  const environments = (await request(server, 'GET', `/api/projects/${projectId}/environments`, { token: sessionToken })).body;
  const production = environments.find((env: { key: string }) => env.key === 'production');
  const unverified = (await newUser(server, 'new-account', { verified: false })).token;
  const pages = [
    { name: 'login', path: '/login', token: '' },
    { name: 'projects', path: '/', token: sessionToken },
    { name: 'flags', path: `/projects/${projectId}`, token: sessionToken },
    { name: 'flag', path: `/projects/${projectId}/flags/${production.id}/${flags[0].environments.production.flag_id}`, token: sessionToken },
    { name: 'usage', path: `/projects/${projectId}/usage`, token: sessionToken },
    { name: 'connect', path: `/projects/${projectId}/connect`, token: sessionToken },
    // Proven addresses (docs/adr/0011-proven-addresses.md): the account page (verified, and unverified with its banner), the emailed links' pages.
    { name: 'account', path: '/account', token: sessionToken },
    { name: 'account-unverified', path: '/account', token: unverified },
    { name: 'verify-email', path: '/verify-email?token=from-the-email', token: '' },
    { name: 'signup-invitation', path: '/register?invitation=from-the-email', token: '' },
  ];
  await forEachScreenshotView(dir, browser, async (page, view) => {
    for (const shot of pages) {
      await signIn(page, server.url, shot.token);
      await page.goto(server.url + shot.path);
      await page.waitForLoadState('networkidle');
      await page.waitForTimeout(300); // the chart's first paint
      await page.screenshot({ path: join(dir, `${shot.name}-${view.suffix}.png`), fullPage: view.fullPage });
    }
  });
}
