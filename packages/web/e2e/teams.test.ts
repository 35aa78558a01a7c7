/**
 * The teams pages walked through in Debian's Chromium, by role and accessible name: an owner
 * invites someone by email (the server's test mailbox receives it; its secret link opens sign-up,
 * and signing up through it joins the project at once), makes them a viewer, who sees the
 * switches disabled with the reason; the
 * owner toggles a flag and finds it in the audit log and the flag's history with its before and
 * after; creates an API token (shown once, used once, revoked, refused); and adds a webhook to a
 * receiver started here, whose test event shows as delivered. No console error on any page; axe
 * finds no serious violation on any of them; the dialogs work from the keyboard.
 *
 * GUIDON_SCREENSHOTS=<dir> also saves the new pages (desktop and phone, light and dark).
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { addMember, eventually, newFlag, newProject, newUser, request, startServer, type TestServer } from '@guidon/server/dist/tests/harness.js';
import { checkA11y, dialogByKeyboard, failureReport, focusIsPlaced, focusReturnsTo, forEachScreenshotView, hasChromium, launch, signIn, tabTo, watchConsole } from './browser.js';

let server: TestServer;
let browser: Browser;
let receiver: Server;
let receiverUrl = '';
const received: { headers: IncomingHttpHeaders; body: string }[] = [];

before(async () => {
  assert.ok(hasChromium(), 'Chromium is installed (apt-get install chromium)');
  // A webhook receiver on 127.0.0.1: allowed only because the server is told so.
  receiver = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      received.push({ headers: req.headers, body: Buffer.concat(chunks).toString('utf8') });
      res.writeHead(200).end('ok');
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/guidon`;
  server = await startServer({ PUBLIC_URL: 'http://guidon.test', WEBHOOK_ALLOW_PRIVATE: 'true' });
  browser = await launch();
});
after(async () => {
  await browser?.close();
  await server?.close();
  await new Promise((resolve) => receiver?.close(resolve));
});

const invitee = `teammate-${process.pid}@example.com`;

async function signedInPage(context: BrowserContext, token: string): Promise<Page> {
  const page = await context.newPage();
  page.setDefaultTimeout(10_000);
  await signIn(page, server.url, token);
  return page;
}

// A generous limit: axe runs at four views on every page reached, on a machine that may be shared.
test('a team shares a project: members, roles, audit log, API tokens, webhooks', { timeout: 300_000 }, async () => {
  const owner = await newUser(server, 'owner');
  const project = await newProject(server, owner, 'Team shop');
  await newFlag(server, owner, project, { key: 'new_checkout', name: 'New checkout' });

  const ownerContext = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  await ownerContext.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: server.url });
  const page = await signedInPage(ownerContext, owner.token);
  const consoleErrors = watchConsole(page);
  const guestContext = await browser.newContext({ viewport: { width: 360, height: 760 }, isMobile: true });
  const guest = await guestContext.newPage();
  guest.setDefaultTimeout(10_000);
  let guestAllowed: RegExp | null = null;
  const guestErrors = watchConsole(guest, () => guestAllowed);

  const heading = (where: Page, name: string | RegExp) => where.getByRole('heading', { name }).first().waitFor();
  const section = (where: Page, name: string) => where.getByRole('navigation', { name: 'Project sections' }).getByRole('link', { name, exact: true }).click();
  try {
    // Invite by email: no account yet, so an invitation, shown as invited.
    await page.goto(`${server.url}/projects/${project.id}`);
    await heading(page, 'Team shop');
    await section(page, 'Members');
    await heading(page, 'Invite someone');
    await page.getByLabel('Email of the person to invite').fill(invitee);
    await page.getByLabel('Role', { exact: true }).selectOption('editor');
    await page.getByRole('button', { name: 'Invite' }).click();
    await page.getByRole('status').filter({ hasText: `Invited ${invitee}` }).waitFor();
    const members = page.getByRole('list', { name: 'Members and invitations' });
    await members.getByRole('listitem').filter({ hasText: invitee }).getByText('invited', { exact: true }).waitFor();
    await checkA11y(page, 'members, an invitation');

    // The email's secret link opens sign-up; signing up through it proves the address: a member at once, verified.
    await eventually(() => server.mailbox!.to(invitee).length > 0, 'the invitation email');
    const link = /http:\/\/guidon\.test(\/register\?invitation=[\w-]+)/.exec(server.mailbox!.to(invitee)[0]!.text)?.[1];
    assert.ok(link, 'the invitation has the sign-up link with its secret');
    await guest.goto(server.url + link);
    await heading(guest, 'Create your account');
    await guest.getByText('You were invited to a project').waitFor();
    await checkA11y(guest, 'sign up, invited');
    await guest.getByLabel('Email').fill(invitee);
    await guest.getByLabel('Password').fill('another good passphrase');
    await guest.getByRole('button', { name: 'Sign up' }).click();
    await guest.getByRole('link', { name: 'Team shop' }).waitFor();
    await guest.getByRole('navigation', { name: 'Account' }).getByRole('link', { name: 'Account', exact: true }).click();
    await guest.getByText('Verified', { exact: true }).waitFor(); // the link proved the address
    assert.equal(await guest.getByRole('region', { name: 'Email address not verified' }).count(), 0, 'no banner');
    await checkA11y(guest, 'account page, guest');
    await guest.getByRole('link', { name: 'Guidon: your projects' }).click();
    await guest.getByRole('link', { name: 'Team shop' }).waitFor();
    await checkA11y(guest, 'projects list, guest');

    // Two more invitations, answered on the projects page by keyboard: nobody joins without accepting.
    const side = await newProject(server, owner, 'Side project');
    assert.equal((await request(server, 'POST', `/api/projects/${side.id}/members`, { token: owner.token, body: { email: invitee, role: 'viewer' } })).status, 201);
    const stranger = await newUser(server, 'stranger');
    const lure = await newProject(server, stranger, 'Security notice: your access expires');
    assert.equal((await request(server, 'POST', `/api/projects/${lure.id}/members`, { token: stranger.token, body: { email: invitee, role: 'owner' } })).status, 201);
    await guest.reload();
    const waiting = guest.getByRole('list', { name: 'Invitations waiting for your answer' });
    await waiting.getByRole('listitem').filter({ hasText: `Invited by ${owner.email}` }).waitFor();
    assert.equal(await guest.getByRole('link', { name: 'Side project' }).count(), 0, 'not a member before accepting');
    await checkA11y(guest, 'projects list, two invitations');
    const acceptSide = guest.getByRole('button', { name: 'Accept the invitation to Side project' });
    await tabTo(guest, acceptSide);
    await guest.keyboard.press('Enter');
    await guest.getByRole('status').filter({ hasText: 'You joined Side project as viewer.' }).waitFor();
    await guest.getByRole('link', { name: 'Side project' }).waitFor();
    const declineLure = guest.getByRole('button', { name: 'Decline the invitation to Security notice: your access expires' });
    await tabTo(guest, declineLure);
    await guest.keyboard.press('Enter');
    await guest.getByRole('status').filter({ hasText: 'You declined the invitation to Security notice: your access expires.' }).waitFor();
    await waiting.waitFor({ state: 'detached' });
    console.log('focus after answering the last invitation:', await focusIsPlaced(guest, 'answering the last invitation'));
    assert.equal(await guest.getByRole('link', { name: /Security notice/ }).count(), 0, 'the declined project never shows');
    await checkA11y(guest, 'projects list, invitations answered');

    // After logging in, only a path of this site is a place to go back to: the server's own rule.
    for (const next of ['/%5Cevil.example', '//evil.example', '/%09/evil.example']) {
      await guest.goto(`${server.url}/login?next=${next}`);
      await guest.waitForURL(`${server.url}/`);
      await guest.getByRole('heading', { name: 'Projects', exact: true }).waitFor();
    }

    // Now a member: the owner makes them a viewer.
    await page.reload();
    await members.getByRole('listitem').filter({ hasText: invitee }).waitFor();
    assert.equal(await members.getByRole('listitem').filter({ hasText: invitee }).getByText('invited', { exact: true }).count(), 0, 'no longer invited');
    await page.getByLabel(`Role of ${invitee}`).selectOption('viewer');
    await eventually(async () => {
      const list = await request(server, 'GET', `/api/projects/${project.id}/members`, { token: owner.token });
      return list.body.some((member: { email: string; role: string }) => member.email === invitee && member.role === 'viewer');
    }, 'the viewer role stored');

    // The viewer: switches disabled, with the reason; no create button that would 403.
    await guest.getByRole('link', { name: 'Team shop' }).click();
    const viewerSwitch = guest.getByRole('switch', { name: 'new_checkout in Production' });
    await viewerSwitch.waitFor();
    assert.ok(await viewerSwitch.isDisabled(), 'a viewer cannot toggle');
    const reasonId = await viewerSwitch.getAttribute('aria-describedby');
    assert.ok(reasonId, 'the disabled switch is described by its reason');
    assert.match((await guest.locator(`#${reasonId}`).textContent()) ?? '', /You are a viewer in this project/);
    assert.ok(await guest.getByRole('button', { name: 'New flag' }).isDisabled());
    await checkA11y(guest, 'flags, as a viewer');
    assert.equal(await guest.getByRole('navigation', { name: 'Project sections' }).getByRole('link', { name: 'Webhooks' }).count(), 0, 'webhooks are for owners');
    // On the guest's phone the sections fold behind one button (ProjectLayout.tsx).
    await guest.getByRole('navigation', { name: 'Project sections' }).getByRole('button', { name: 'Sections, showing Flags', expanded: false }).click();
    await guest.getByRole('navigation', { name: 'Project sections' }).getByRole('link', { name: 'Members', exact: true }).click();
    await guest.getByText('Only an owner can invite people or change roles.').waitFor();
    assert.ok(await guest.getByLabel(`Role of ${owner.email}`).isDisabled());
    assert.equal(await guest.getByRole('button', { name: 'Invite' }).count(), 0);
    await checkA11y(guest, 'members, as a viewer');

    // The owner toggles the flag: the audit log shows who, and before → after.
    await section(page, 'Flags');
    await page.getByRole('switch', { name: 'new_checkout in Production' }).click();
    await page.getByRole('switch', { name: 'new_checkout in Production', checked: true }).waitFor();
    await section(page, 'Audit log');
    await page.getByLabel('Resource type').selectOption('flag');
    const toggled = page.getByRole('listitem').filter({ hasText: 'flag.toggled' });
    await toggled.getByRole('row', { name: 'enabled false true' }).waitFor();
    assert.match((await toggled.textContent()) ?? '', new RegExp(`by ${owner.email}`));
    await checkA11y(page, 'audit log');
    await page.getByLabel('Changed by').selectOption({ label: invitee });
    await page.getByText('No change matches these filters.').waitFor();

    // The flag's own history tab.
    await section(page, 'Flags');
    await page.getByRole('link', { name: 'Open new_checkout in Production' }).click();
    await page.getByRole('navigation', { name: 'Flag views' }).getByRole('link', { name: 'History' }).click();
    await heading(page, 'History of new_checkout in Production');
    await page.getByRole('listitem').filter({ hasText: 'flag.toggled' }).getByRole('row', { name: 'enabled false true' }).waitFor();
    await page.getByRole('listitem').filter({ hasText: 'flag.created' }).waitFor();
    await checkA11y(page, 'flag history');

    // An API token: shown once with a copy button, used once, revoked, refused.
    await page.getByRole('navigation', { name: 'Account' }).getByRole('link', { name: 'API tokens' }).click();
    await heading(page, 'No tokens yet');
    await checkA11y(page, 'API tokens, none yet');
    const tokenDialog = await dialogByKeyboard(page, page.getByRole('button', { name: 'New token' }), 'New API token');
    await tokenDialog.getByLabel('Token name').fill('deploy script');
    await tokenDialog.getByLabel('Project').selectOption({ label: 'Team shop' });
    await tokenDialog.getByLabel('Role', { exact: true }).selectOption('editor');
    await checkA11y(page, 'new API token dialog');
    await tokenDialog.getByRole('button', { name: 'Create token' }).click();
    const secret = ((await page.getByLabel('The new token', { exact: true }).textContent()) ?? '').trim();
    assert.match(secret, /^gdn_/);
    await checkA11y(page, 'API tokens, a new one shown once');
    await page.getByRole('button', { name: 'Copy the new token' }).click();
    assert.equal(await page.evaluate(() => navigator.clipboard.readText()), secret, 'the copy button copies the secret');
    const withToken = await request(server, 'GET', `/api/projects/${project.id}/flags`, { token: secret });
    assert.equal(withToken.status, 200, 'the token works');
    await page.getByRole('button', { name: 'I have copied it' }).click();
    await page.reload();
    const tokenRow = page.getByRole('row', { name: /deploy script/ });
    await tokenRow.waitFor();
    assert.equal(await page.getByLabel('The new token', { exact: true }).count(), 0, 'the secret is not shown again');
    assert.match((await tokenRow.textContent()) ?? '', /Team shop as editor/);
    await checkA11y(page, 'API tokens');
    assert.notEqual((await tokenRow.getByRole('cell').nth(3).textContent())?.trim(), 'never', 'its use is shown as its last use');
    const revoke = await dialogByKeyboard(page, page.getByRole('button', { name: 'Revoke deploy script' }), 'Revoke deploy script?');
    await checkA11y(page, 'revoke token dialog');
    await revoke.getByRole('button', { name: 'Revoke token' }).press('Enter');
    await heading(page, 'No tokens yet');
    assert.equal((await request(server, 'GET', `/api/projects/${project.id}/flags`, { token: secret })).status, 401, 'a revoked token is refused');

    // A webhook to the receiver: secret shown once, events picked, a delivered test event.
    await page.goto(`${server.url}/projects/${project.id}`);
    await section(page, 'Webhooks');
    await heading(page, 'No webhooks yet');
    await checkA11y(page, 'webhooks, none yet');
    const hookDialog = await dialogByKeyboard(page, page.getByRole('button', { name: 'New webhook' }), 'New webhook');
    await hookDialog.getByLabel('Payload URL').fill(receiverUrl);
    // The events are checkboxes: Space picks them.
    await hookDialog.getByRole('checkbox', { name: 'Every event, including ones added later' }).press('Space');
    await hookDialog.getByRole('checkbox', { name: 'flag.created' }).press('Space');
    assert.ok(await hookDialog.getByRole('checkbox', { name: 'flag.created' }).isChecked());
    await checkA11y(page, 'new webhook dialog');
    await hookDialog.getByRole('button', { name: 'Create webhook' }).click();
    const signingSecret = ((await page.getByLabel("The webhook's signing secret").textContent()) ?? '').trim();
    assert.ok(signingSecret.length >= 32, 'the signing secret is shown');
    await page.getByText('Events: flag.toggled, flag.created').waitFor();
    await page.getByRole('button', { name: `Send test event to ${receiverUrl}` }).click();
    const deliveries = page.getByRole('table', { name: `Deliveries to ${receiverUrl}, newest first` });
    await eventually(async () => (await deliveries.getByRole('row').filter({ hasText: 'webhook.test' }).filter({ hasText: 'Delivered 200' }).count()) === 1, 'the test delivery shown as delivered', 20_000);
    const test = received.find((item) => item.headers['x-guidon-event'] === 'webhook.test');
    assert.ok(test, 'the receiver got the test event');
    const expected = createHmac('sha256', signingSecret).update(`${test.headers['x-guidon-timestamp']}.${test.body}`).digest('hex');
    assert.equal(test.headers['x-guidon-signature'], `sha256=${expected}`, 'signed with the secret shown once');
    await checkA11y(page, 'webhooks, a delivery');
    // Resend: a second delivery of the same event.
    await deliveries.getByRole('button', { name: /^Resend webhook\.test/ }).click();
    await eventually(async () => (await deliveries.getByRole('row').filter({ hasText: 'Delivered 200' }).count()) === 2, 'the resent delivery', 20_000);
    // Switched off: no test to send.
    await page.getByRole('switch', { name: `Webhook ${receiverUrl} enabled` }).press('Space');
    await page.getByRole('switch', { name: `Webhook ${receiverUrl} enabled`, checked: false }).waitFor();
    assert.ok(await page.getByRole('button', { name: `Send test event to ${receiverUrl}` }).isDisabled());
    await page.getByRole('switch', { name: `Webhook ${receiverUrl} enabled` }).click();
    await page.getByRole('switch', { name: `Webhook ${receiverUrl} enabled`, checked: true }).waitFor();

    // Edited by keyboard: the URL field has the focus, Tab goes to the description, Enter saves.
    const editHook = page.getByRole('button', { name: `Edit ${receiverUrl}` });
    const editDialog = await dialogByKeyboard(page, editHook, 'Edit webhook');
    await checkA11y(page, 'edit webhook dialog');
    await page.keyboard.press('Tab');
    assert.ok(await editDialog.getByLabel('Description (optional)').evaluate((node) => node === document.activeElement), 'Tab reaches the description');
    await page.keyboard.type('Tells CI');
    await page.keyboard.press('Enter');
    await editDialog.waitFor({ state: 'detached' });
    await page.getByText('Tells CI', { exact: true }).waitFor();
    await focusReturnsTo(page, editHook);

    // A second webhook, deleted by keyboard: the dialog traps the focus; Tab reaches "Delete webhook", Enter deletes.
    const throwaway = `${receiverUrl}?throwaway=1`;
    assert.equal((await request(server, 'POST', `/api/projects/${project.id}/webhooks`, { token: owner.token, body: { url: throwaway, events: ['*'] } })).status, 201);
    await page.reload();
    const deleteHook = page.getByRole('button', { name: `Delete ${throwaway}` });
    const deleteDialog = await dialogByKeyboard(page, deleteHook, `Delete the webhook to ${throwaway}?`);
    await checkA11y(page, 'delete webhook dialog');
    await page.keyboard.press('Tab');
    assert.ok(await deleteDialog.getByRole('button', { name: 'Delete webhook' }).evaluate((node) => node === document.activeElement), 'Tab reaches "Delete webhook"');
    await page.keyboard.press('Enter');
    await deleteDialog.waitFor({ state: 'detached' });
    await deleteHook.waitFor({ state: 'detached' });
    assert.equal(await page.getByRole('button', { name: `Edit ${receiverUrl}` }).count(), 1, 'the other webhook stays');
    console.log('focus after deleting a webhook:', await focusIsPlaced(page, 'deleting a webhook'));

    // A member removed by the owner, by keyboard: Tab reaches "Remove", Enter removes.
    const helper = await newUser(server, 'helper');
    await addMember(server, owner, project.id, helper, 'viewer');
    await section(page, 'Members');
    const removeHelper = page.getByRole('button', { name: `Remove ${helper.email}` });
    const removeDialog = await dialogByKeyboard(page, removeHelper, `Remove ${helper.email}?`);
    await checkA11y(page, 'remove member dialog');
    await page.keyboard.press('Tab');
    assert.ok(await removeDialog.getByRole('button', { name: 'Remove', exact: true }).evaluate((node) => node === document.activeElement), 'Tab reaches "Remove"');
    await page.keyboard.press('Enter');
    await removeDialog.waitFor({ state: 'detached' });
    await removeHelper.waitFor({ state: 'detached' });
    assert.equal(await members.getByRole('listitem').filter({ hasText: helper.email }).count(), 0, 'the member is gone');
    console.log('focus after removing a member:', await focusIsPlaced(page, 'removing a member'));

    // The guest leaves the project, by keyboard: back to the projects list, without it.
    await guest.reload();
    const leave = guest.getByRole('button', { name: 'Leave project' });
    const leaveDialog = await dialogByKeyboard(guest, leave, 'Leave this project?');
    await checkA11y(guest, 'leave project dialog');
    await guest.keyboard.press('Tab');
    assert.ok(await leaveDialog.getByRole('button', { name: 'Leave project' }).evaluate((node) => node === document.activeElement), 'Tab reaches "Leave project"');
    await guest.keyboard.press('Enter');
    await guest.waitForURL(`${server.url}/`);
    await guest.getByRole('heading', { name: /project/i }).first().waitFor();
    assert.equal(await guest.getByRole('link', { name: 'Team shop' }).count(), 0, 'the project is gone from the list');
    console.log('focus after leaving a project:', await focusIsPlaced(guest, 'leaving a project'));

    // The guest deletes their account from the Account page: the dialog asks for the password.
    await guest.getByRole('navigation', { name: 'Account' }).getByRole('link', { name: 'Account', exact: true }).click();
    const deleteAccount = await dialogByKeyboard(guest, guest.getByRole('button', { name: 'Delete my account' }), 'Delete your account?');
    await checkA11y(guest, 'delete account dialog');
    await deleteAccount.getByLabel('Your password').fill('not the passphrase');
    guestAllowed = /Failed to load resource: the server responded with a status of 403/; // the refusal, on purpose
    await deleteAccount.getByRole('button', { name: 'Delete account' }).click();
    await deleteAccount.getByRole('alert').filter({ hasText: 'Wrong password' }).waitFor();
    guestAllowed = null;
    await deleteAccount.getByLabel('Your password').fill('another good passphrase');
    await guest.keyboard.press('Enter');
    await guest.waitForURL(`${server.url}/login?account=deleted`);
    await guest.getByRole('status').filter({ hasText: 'Your account was deleted.' }).waitFor();
    await checkA11y(guest, 'log in, after deleting the account');
    assert.equal((await request(server, 'POST', '/auth/login', { body: { email: invitee, password: 'another good passphrase' } })).status, 401, 'the account is gone');
    assert.deepEqual((await request(server, 'GET', `/api/projects/${side.id}/members`, { token: owner.token })).body.map((m: { email: string }) => m.email), [owner.email]);
  } catch (error) {
    await guest.screenshot({ path: join(process.env.TMPDIR ?? '/tmp', 'guidon-teams-failure-guest.png') }).catch(() => undefined);
    throw await failureReport(page, 'teams', error);
  }
  assert.deepEqual([...consoleErrors, ...guestErrors], [], 'no console errors on any page');

  if (process.env.GUIDON_SCREENSHOTS) await screenshots(process.env.GUIDON_SCREENSHOTS, owner.token, project.id);
  await ownerContext.close();
  await guestContext.close();
});

/** The teams pages, desktop and phone, light and dark (and the projects page with an invitation, the delete-account dialog). */
async function screenshots(dir: string, token: string, projectId: string) {
  const flags = (await request(server, 'GET', `/api/projects/${projectId}/flags`, { token })).body;
  const environments = (await request(server, 'GET', `/api/projects/${projectId}/environments`, { token })).body;
  const production = environments.find((env: { key: string }) => env.key === 'production');
  // Tokens to show: one for every project, one scoped and used once.
  await request(server, 'POST', '/api/tokens', { token, body: { name: 'laptop scripts' } });
  const ci = await request(server, 'POST', '/api/tokens', { token, body: { name: 'CI deploy', project_id: projectId, role: 'editor', expires_in_days: 90 } });
  await request(server, 'GET', `/api/projects/${projectId}`, { token: ci.body.token });
  // An invitation waiting on the projects page.
  const me = (await request(server, 'GET', '/api/me', { token })).body;
  const colleague = await newUser(server, 'colleague');
  const theirs = await newProject(server, colleague, 'Billing');
  await request(server, 'POST', `/api/projects/${theirs.id}/members`, { token: colleague.token, body: { email: me.email, role: 'editor' } });
  const pages = [
    { name: 'invitations', path: '/' },
    { name: 'account-delete', path: '/account', dialog: 'Delete my account' },
    { name: 'members', path: `/projects/${projectId}/members` },
    { name: 'audit', path: `/projects/${projectId}/audit` },
    { name: 'flag-history', path: `/projects/${projectId}/flags/${production.id}/${flags[0].environments.production.flag_id}?view=history` },
    { name: 'webhooks', path: `/projects/${projectId}/webhooks`, open: true },
    // The event groups show once "every event" is unticked.
    { name: 'webhook-new', path: `/projects/${projectId}/webhooks`, dialog: 'New webhook', untick: 'Every event, including ones added later' },
    { name: 'tokens', path: '/account/tokens' },
  ];
  await forEachScreenshotView(dir, browser, async (page, view) => {
    await signIn(page, server.url, token);
    for (const shot of pages) {
      await page.goto(server.url + shot.path);
      await page.waitForLoadState('networkidle');
      if (shot.open) await page.getByRole('button', { name: /^Deliveries of/ }).first().click();
      if (shot.dialog) await page.getByRole('button', { name: shot.dialog }).click();
      if (shot.untick) await page.getByRole('checkbox', { name: shot.untick }).uncheck();
      await page.getByRole('status').filter({ hasText: /^\s*Loading/ }).waitFor({ state: 'detached' }).catch(() => undefined);
      await page.waitForTimeout(200);
      await page.screenshot({ path: join(dir, `${shot.name}-${view.suffix}.png`), fullPage: view.fullPage });
    }
  });
}
