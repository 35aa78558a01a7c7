/**
 * Sign-in with the OpenID provider walked in Debian's Chromium (docs/api.md, Account), against a real
 * provider started here (oidc-provider), with PASSWORD_LOGIN=false: the login page shows only the
 * "Sign in with …" button; signing in there creates the account, whose projects page offers the
 * invitation waiting for it (accepted there: nobody joins without accepting); the
 * account page names the sign-in method; log out ends the provider's session too; a failed
 * sign-in is a page that leads back. No console error on Guidon's pages; axe finds no serious
 * violation on them.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import type { Browser } from 'playwright-core';
import { freePort, newProject, request, startServer, type TestServer } from '@guidon/server/dist/tests/harness.js';
import { Browser as HttpBrowser, startProvider, type TestProvider } from '@guidon/server/dist/tests/oidc-provider.js';
import { checkA11y, hasChromium, launch, watchConsole } from './browser.js';

let server: TestServer;
let provider: TestProvider;
let browser: Browser;

before(async () => {
  assert.ok(hasChromium(), 'Chromium is installed (apt-get install chromium)');
  const port = await freePort();
  const publicUrl = `http://127.0.0.1:${port}`;
  provider = await startProvider(publicUrl);
  server = await startServer({ ...provider.env, PUBLIC_URL: publicUrl, PASSWORD_LOGIN: 'false', OIDC_NAME: 'Acme SSO' }, { port });
  browser = await launch();
});
after(async () => {
  await browser?.close();
  await server?.close();
  await provider?.close();
});

test('only the SSO button; after the first sign-in the invitation waits on the projects page; log out ends the provider session', async () => {
  // An owner, signed in at the provider through HTTP, invites the person who walks in Chromium.
  provider.accounts.set('owner-sub', { email: 'owner@corp.test', email_verified: true });
  const http = new HttpBrowser();
  await http.walk(`${server.url}/auth/oidc/login`, 'owner-sub', (next) => new URL(next).pathname === '/login');
  const owner = JSON.parse((await http.request(`${server.url}/auth/oidc/session`, { method: 'POST' })).text) as { token: string };
  const project = await newProject(server, { id: '', email: 'owner@corp.test', password: '', token: owner.token }, 'Checkout');
  const invited = await request(server, 'POST', `/api/projects/${project.id}/members`, { token: owner.token, body: { email: 'alice@corp.test', role: 'viewer' } });
  assert.equal(invited.status, 201);
  provider.accounts.set('alice-sub', { email: 'alice@corp.test', email_verified: true });

  const context = await browser.newContext();
  const page = await context.newPage();
  page.setDefaultTimeout(10_000);
  // The provider's own development pages are not Guidon's: only errors on Guidon's pages count.
  const consoleErrors = watchConsole(page);

  await page.goto(`${server.url}/login`);
  const sso = page.getByRole('link', { name: 'Sign in with Acme SSO' });
  await sso.waitFor();
  assert.equal(await page.getByRole('textbox', { name: 'Email' }).count(), 0, 'no password form');
  assert.equal(await page.getByRole('button', { name: 'Log in' }).count(), 0);
  assert.equal(await page.getByRole('link', { name: 'Create an account' }).count(), 0);
  await checkA11y(page, 'login, SSO only');
  // The invitation email's link (a sign-up page) leads to the provider too.
  await page.goto(`${server.url}/register?invitation=from-the-email`);
  await page.getByText(/Passwords are turned off here/).waitFor();
  assert.equal(await page.getByRole('textbox', { name: 'Email' }).count(), 0);
  await checkA11y(page, 'sign-up, SSO only');
  await page.getByRole('link', { name: 'Back to log in' }).click();

  await sso.click();
  await page.waitForURL((url) => url.origin === provider.issuer);
  await page.getByPlaceholder('Enter any login').fill('alice-sub');
  await page.getByPlaceholder('and password').fill('any');
  await page.getByRole('button', { name: 'Sign-in' }).click();
  await page.getByRole('button', { name: 'Continue' }).click();
  await page.waitForURL(`${server.url}/`);
  const accept = page.getByRole('button', { name: 'Accept the invitation to Checkout' });
  await accept.waitFor();
  assert.equal(await page.getByRole('link', { name: /Checkout/ }).count(), 0, 'not a member before accepting');
  await checkA11y(page, 'projects, an invitation after the first sign-in');
  await accept.click();
  await page.getByRole('status').filter({ hasText: 'You joined Checkout as viewer.' }).waitFor();
  await page.getByRole('link', { name: /Checkout/ }).first().waitFor();

  await page.getByRole('link', { name: 'Account' }).click();
  await page.getByRole('heading', { name: 'Sign-in methods' }).waitFor();
  await page.getByText("Acme SSO (your organisation's sign-in)").waitFor();
  assert.equal(await page.getByText('Email and password').count(), 0);
  await checkA11y(page, 'account, sign-in methods');

  const ended = provider.endedSessions;
  await page.getByRole('button', { name: 'Log out' }).click();
  await page.waitForURL((url) => url.origin === provider.issuer);
  await page.getByRole('button', { name: 'Yes, sign me out' }).click();
  await page.waitForURL(`${server.url}/login`);
  assert.equal(provider.endedSessions, ended + 1, 'the provider ended its session');
  await sso.waitFor();
  assert.equal(await page.evaluate(() => localStorage.getItem('guidon.token')), null);

  assert.deepEqual(consoleErrors.filter((line) => line.startsWith(server.url)), []);

  // A failed sign-in is a page of its own, which says what happened and leads back.
  await page.goto(`${server.url}/auth/oidc/callback?code=made-up&state=made-up`);
  await page.getByRole('heading', { name: 'Sign-in failed' }).waitFor();
  await page.getByText(/not started in this browser/).waitFor();
  await checkA11y(page, 'sign-in failed page');
  await page.getByRole('link', { name: 'Back to sign in' }).click();
  await page.getByRole('link', { name: 'Sign in with Acme SSO' }).waitFor();
  await context.close();
});

test('with password login on, the login page offers both', async () => {
  const port = await freePort();
  const both = await startProvider(`http://127.0.0.1:${port}`);
  const open = await startServer({ ...both.env, PUBLIC_URL: `http://127.0.0.1:${port}` }, { port });
  const context = await browser.newContext();
  try {
    const page = await context.newPage();
    page.setDefaultTimeout(10_000);
    const consoleErrors = watchConsole(page);
    await page.goto(`${open.url}/login`);
    await page.getByRole('link', { name: 'Sign in with SSO' }).waitFor();
    await page.getByRole('textbox', { name: 'Email' }).waitFor();
    await page.getByRole('button', { name: 'Log in' }).waitFor();
    await page.getByRole('link', { name: 'Create an account' }).waitFor();
    await checkA11y(page, 'login, SSO and password');
    assert.deepEqual(consoleErrors, []);
  } finally {
    await context.close();
    await open.close();
    await both.close();
  }
});
