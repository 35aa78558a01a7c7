/**
 * Targeting on any attribute (issue 20, contract §14) walked through in Debian's Chromium, by role
 * and accessible name: a segment is created with its values as chips (typed, pasted as a list,
 * one removed), a bad one is refused with the server's message; a flag gets a conditions rule
 * naming the segment and a version, and a rule that serves off; everyone else is set to off; the
 * segment then says where it is used and refuses to be deleted (409); try it sends custom
 * attributes and shows the reason and the rule that served (explain); the attribute field of the
 * rule editor then offers the attributes Try it sent first. No console error on any page except
 * the deliberate refusals; axe finds no serious violation in any state reached.
 *
 * GUIDON_SCREENSHOTS=<dir> also saves the new pages (desktop and phone, light and dark).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import type { Browser } from 'playwright-core';
import { eventually, flagsPath, newFlag, newProject, newUser, request, type TestServer } from '@guidon/server/dist/tests/harness.js';
import { checkA11y, dialogByKeyboard, failureReport, focusReturnsTo, forEachScreenshotView, serverAndBrowser, signIn, walkPage, watchConsole } from './browser.js';

let server: TestServer;
let browser: Browser;
serverAndBrowser({ PUBLIC_URL: 'http://guidon.test' }, (started, chromium) => {
  server = started;
  browser = chromium;
});

const shots = process.env.GUIDON_SCREENSHOTS;

// A generous limit: axe runs at four views in every state reached, on a machine that may be shared.
test('a person targets beta customers on a recent app version, and no one else', { timeout: 300_000 }, async () => {
  const user = await newUser(server, 'targeter');
  const project = await newProject(server, user, 'Targeting shop');
  // On, rollout 0: before "everyone else: off", everyone gets it.
  const flag = await newFlag(server, user, project, { key: 'beta_checkout', name: 'Beta checkout', enabled: true });

  const { context, page } = await walkPage(browser, server.url);
  let allowed: RegExp | null = null;
  const consoleErrors = watchConsole(page, () => allowed);
  const heading = (name: string | RegExp) => page.getByRole('heading', { name }).first().waitFor();
  const section = (name: string) => page.getByRole('navigation', { name: 'Project sections' }).getByRole('link', { name, exact: true }).click();

  try {
    await signIn(page, server.url, user.token);
    await page.goto(`${server.url}/projects/${project.id}`);
    await heading('Targeting shop');

    // Segments: none yet, then one made from the keyboard's dialog.
    await section('Segments');
    await heading('No segments yet');
    await checkA11y(page, 'segments, none yet');
    const newSegment = page.getByRole('button', { name: 'New segment' });
    let dialog = await dialogByKeyboard(page, newSegment, 'New segment');
    await dialog.getByLabel('Name').fill('Beta customers');
    await dialog.getByLabel('Key').fill('beta');
    const first = dialog.getByRole('group', { name: 'Condition 1' });
    await first.getByLabel('Attribute').fill('plan');
    assert.equal(await first.getByLabel('Operator').inputValue(), 'IN', '"is one of" first');
    const values = first.getByLabel('Values', { exact: true });
    await values.fill('beta');
    await values.press('Enter');
    // A pasted list adds each of its items: one a line or comma-separated.
    await page.evaluate(() => navigator.clipboard.writeText('gamma\ndelta, epsilon'));
    await values.focus();
    await page.keyboard.press('Control+V');
    const chips = first.getByRole('list', { name: 'Values of condition 1' });
    await chips.getByRole('listitem').filter({ hasText: 'epsilon' }).waitFor();
    assert.deepEqual(await chips.getByRole('listitem').allInnerTexts().then((items) => items.map((item) => item.replace('×', '').trim())), ['beta', 'gamma', 'delta', 'epsilon']);
    await first.getByRole('button', { name: 'Remove delta from condition 1' }).click();
    await first.getByRole('button', { name: 'Remove epsilon from condition 1' }).click();
    await first.getByRole('checkbox', { name: 'ignore case' }).check();
    await checkA11y(page, 'new segment dialog, with chips');
    if (shots) await dialog.screenshot({ path: join(shots, 'segment-dialog-desktop-light.png') });
    await dialog.getByRole('button', { name: 'Create segment' }).click();
    await dialog.waitFor({ state: 'detached' });
    const row = page.getByRole('row', { name: /^beta Beta customers/ });
    await row.getByText('plan is one of beta, gamma (any case)').waitFor();
    await row.getByText('Not used').waitFor();

    // A version that is not x.y.z: the server's 400, in the dialog, and nothing made.
    allowed = /status of 400/;
    dialog = await dialogByKeyboard(page, newSegment, 'New segment');
    await dialog.getByLabel('Name').fill('Recent app');
    await dialog.getByLabel('Key').fill('recent');
    await dialog.getByLabel('Attribute').fill('app_version');
    await dialog.getByLabel('Operator').selectOption({ label: 'version ≥' });
    await dialog.getByLabel('Value', { exact: true }).fill('2.4');
    await dialog.getByRole('button', { name: 'Create segment' }).click();
    await dialog.getByRole('alert').filter({ hasText: '"2.4" is not a version' }).waitFor();
    assert.equal(await dialog.getByRole('group', { name: 'Condition 1' }).getByRole('checkbox', { name: 'ignore case' }).count(), 0, 'no case toggle for versions');
    await checkA11y(page, 'new segment dialog, refused by the server');
    await dialog.getByRole('button', { name: 'Cancel' }).click();
    allowed = null;
    assert.equal((await request(server, 'GET', `/api/projects/${project.id}/segments`, { token: user.token })).body.length, 1, 'nothing made');
    await checkA11y(page, 'segments, one');

    // The flag: a conditions rule naming the segment and a version; a user_id rule that serves off.
    await section('Flags');
    await page.getByRole('link', { name: 'Open beta_checkout in Production' }).click();
    await heading(/Beta checkout/);
    const addRule = () => page.getByRole('button', { name: 'Add rule' });
    dialog = await dialogByKeyboard(page, addRule(), 'Add rule');
    await dialog.getByRole('radio', { name: 'Conditions' }).check();
    await dialog.getByLabel('Operator').selectOption({ label: 'is in segment' });
    await dialog.getByLabel('Segments').fill('beta');
    await dialog.getByLabel('Segments').press('Enter');
    await dialog.getByRole('button', { name: 'Add condition' }).click();
    const second = dialog.getByRole('group', { name: 'Condition 2' });
    await second.getByLabel('Attribute').fill('app_version');
    await second.getByLabel('Operator').selectOption({ label: 'version ≥' });
    // Typed and left in the box: added when the dialog is saved.
    await second.getByLabel('Value', { exact: true }).fill('2.4.0');
    await dialog.getByLabel('Rule rollout (%)').fill('100');
    await checkA11y(page, 'add rule dialog, conditions');
    if (shots) await dialog.screenshot({ path: join(shots, 'rule-conditions-dialog-desktop-light.png') });
    await dialog.getByRole('button', { name: 'Add rule' }).click();
    await dialog.waitFor({ state: 'detached' });
    const rules = page.getByRole('list').filter({ has: page.getByRole('button', { name: /^Reorder rule/ }) });
    await rules.getByText('is in segment beta and app_version version ≥ 2.4.0 → on').waitFor();

    dialog = await dialogByKeyboard(page, addRule(), 'Add rule');
    await dialog.getByLabel('Value').fill('user-blocked');
    await dialog.getByRole('radio', { name: 'the flag off' }).check();
    await dialog.getByLabel('Rule rollout (%)').fill('150');
    await dialog.getByRole('button', { name: 'Add rule' }).click();
    await dialog.getByRole('alert').filter({ hasText: 'A whole number from 0 to 100' }).waitFor();
    await dialog.getByLabel('Rule rollout (%)').fill('100');
    await dialog.getByRole('button', { name: 'Add rule' }).click();
    await dialog.waitFor({ state: 'detached' });
    await focusReturnsTo(page, addRule());
    await rules.getByText('user_id is user-blocked → off').waitFor();
    // The blocked user first: above the conditions rule.
    await page.getByRole('button', { name: 'Move User id user-blocked up' }).click();
    await page.getByRole('button', { name: 'Reorder rule 1 of 2: User id user-blocked' }).waitFor();

    // Everyone else: off.
    const everyoneElse = page.getByRole('group', { name: 'Everyone else' });
    assert.ok(await everyoneElse.getByRole('radio', { name: 'served by the rollout' }).isChecked());
    // Checked once the server has it.
    await everyoneElse.getByRole('radio', { name: 'off' }).click();
    await everyoneElse.getByRole('radio', { name: 'off', checked: true }).waitFor();
    await page.getByText('Everyone else gets it off').waitFor();
    await eventually(async () => (await request(server, 'GET', `${flagsPath(project)}/${flag.id}`, { token: user.token })).body.everyone_else === 'off', 'everyone_else off stored');
    await checkA11y(page, 'flag, conditions rule, everyone else off');

    // The segment says where it is used, and cannot be deleted while it is.
    await section('Segments');
    await row.getByRole('link', { name: 'beta_checkout in Production' }).waitFor();
    allowed = /status of 409/;
    const deleteSegment = page.getByRole('button', { name: 'Delete segment beta' });
    dialog = await dialogByKeyboard(page, deleteSegment, 'Delete segment beta?');
    await dialog.getByRole('button', { name: 'Delete segment' }).click();
    await dialog.getByRole('alert').filter({ hasText: 'beta_checkout' }).waitFor();
    await checkA11y(page, 'delete segment dialog, in use');
    await page.keyboard.press('Escape');
    await dialog.waitFor({ state: 'detached' });
    allowed = null;
    await checkA11y(page, 'segments, used by a flag');

    // Editing: a pasted list of a thousand values is counted, not drawn; re-keying it while in
    // use is the server's 409; a new name is saved.
    const editSegment = page.getByRole('button', { name: 'Edit segment beta' });
    dialog = await dialogByKeyboard(page, editSegment, 'Edit segment beta');
    await dialog.getByLabel('Key').fill('beta_v2');
    await page.evaluate((list) => navigator.clipboard.writeText(list), Array.from({ length: 1000 }, (_, i) => `customer-${i}`).join('\n'));
    await dialog.getByLabel('Values', { exact: true }).focus();
    await page.keyboard.press('Control+V');
    await dialog.getByText('and 952 more').waitFor();
    await dialog.getByRole('button', { name: 'Remove all 1002 values of condition 1' }).waitFor();
    await checkA11y(page, 'edit segment dialog, a thousand values pasted');
    allowed = /status of 409/;
    await dialog.getByRole('button', { name: 'Save segment' }).click();
    await dialog.getByRole('alert').filter({ hasText: 'cannot change while it is in use' }).waitFor();
    await dialog.getByRole('button', { name: 'Cancel' }).click();
    await dialog.waitFor({ state: 'detached' });
    allowed = null;
    dialog = await dialogByKeyboard(page, editSegment, 'Edit segment beta');
    assert.equal(await dialog.getByRole('list', { name: 'Values of condition 1' }).getByRole('listitem').count(), 2, 'the cancelled edit changed nothing');
    await dialog.getByLabel('Name').fill('Beta testers');
    await dialog.getByRole('button', { name: 'Save segment' }).click();
    await dialog.waitFor({ state: 'detached' });
    await page.getByRole('row', { name: /^beta Beta testers/ }).waitFor();

    // Try it with custom attributes: the reason says which rule served.
    await section('Try it');
    await page.getByLabel('user_id').fill('user-7');
    await page.getByRole('button', { name: 'Add attribute' }).click();
    await page.getByRole('button', { name: 'Add attribute' }).click();
    await page.getByLabel('Name of attribute 1').fill('plan');
    await page.getByLabel('Value of attribute 1').fill('Gamma');
    await page.getByLabel('Name of attribute 2').fill('app_version');
    await page.getByLabel('Value of attribute 2').fill('2.5.0');
    // The served-by column names the rule as the rules editor numbers and words it.
    const tryIt = async (enabled: 'On' | 'Off', reason: string, servedBy: string) => {
      await page.getByRole('button', { name: 'Evaluate' }).click();
      await page.getByRole('row', { name: `beta_checkout ${enabled} ${reason} ${servedBy}` }).waitFor();
    };
    await page.getByText('Which rule served is worked out apart from it by the dashboard').waitFor();
    await tryIt('On', 'Matched conditions targeting rule', 'Rule 2: is in segment beta and app_version version ≥ 2.4.0');
    await checkA11y(page, 'try it, custom attributes, served by the conditions rule');
    if (shots) await page.screenshot({ path: join(shots, 'try-targeting-desktop-light.png'), fullPage: true });
    await page.getByLabel('user_id').fill('user-blocked');
    await tryIt('Off', 'Matched user_id targeting rule', 'Rule 1: user_id is user-blocked');
    await page.getByLabel('user_id').fill('user-7');
    await page.getByLabel('Value of attribute 2').fill('2.3.9');
    await tryIt('Off', 'No targeting rule matched', 'No rule: No targeting rule matched');
    await page.getByRole('button', { name: 'Remove attribute 2' }).click();
    await tryIt('Off', 'No targeting rule matched', 'No rule: No targeting rule matched');
    assert.equal(await page.getByRole('columnheader', { name: 'Variant' }).count(), 0, 'no variant columns for boolean flags');
    // A flag that serves values (contract §15): its variant and value (compact JSON) in two more columns.
    await newFlag(server, user, project, { key: 'button', name: 'Button', enabled: true, variants: [{ key: 'blue', value: { color: 'blue', size: 2 }, weight: 1000 }, { key: 'grey', value: { color: 'grey' }, weight: 0 }], off_variant: 'grey' });
    await page.getByRole('button', { name: 'Evaluate' }).click();
    await page.getByRole('row', { name: 'button On Flag enabled globally No rule: Flag enabled globally blue {"color":"blue","size":2}' }).waitFor();
    await page.getByRole('row', { name: 'beta_checkout Off No targeting rule matched No rule: No targeting rule matched — —' }).waitFor();
    await page.getByRole('columnheader', { name: 'Value' }).waitFor();
    await checkA11y(page, 'try it, a flag with variants');
    if (shots) {
      await page.screenshot({ path: join(shots, 'try-variants-desktop-light.png'), fullPage: true });
      // On a phone the answer table scrolls sideways inside its focusable region.
      const desktop = page.viewportSize()!;
      await page.setViewportSize({ width: 360, height: 800 });
      await page.screenshot({ path: join(shots, 'try-variants-phone-light.png'), fullPage: true });
      await page.setViewportSize(desktop);
    }

    // The attributes Try it sent (a real evaluation) are offered first in the rule editor's attribute field.
    await eventually(
      async () => (await request(server, 'GET', `/api/projects/${project.id}/environments/${project.production}/attributes`, { token: user.token })).body.items.length === 2,
      'plan and app_version recorded',
    );
    await section('Flags');
    await page.getByRole('link', { name: 'Open beta_checkout in Production' }).click();
    await heading(/Beta checkout/);
    dialog = await dialogByKeyboard(page, addRule(), 'Add rule');
    await dialog.getByRole('radio', { name: 'Conditions' }).check();
    const attribute = dialog.getByRole('combobox', { name: 'Attribute' });
    const offered = async () => attribute.evaluate((input) => Array.from((input as HTMLInputElement).list?.options ?? [], (option) => option.value));
    await eventually(async () => (await offered()).length === 7, 'seen and built-in attributes offered');
    const options = await offered();
    assert.deepEqual(options.slice(0, 2).sort(), ['app_version', 'plan'], 'seen attributes first');
    assert.deepEqual(options.slice(2), ['user_id', 'user_email', 'email_domain', 'environment', 'current_time']);
    await attribute.fill('pla');
    await checkA11y(page, 'add rule dialog, seen attributes offered');
    await dialog.getByRole('button', { name: 'Cancel' }).click();
    await dialog.waitFor({ state: 'detached' });
    // A segment applies in every environment: the names seen in any of them are offered first.
    await section('Segments');
    dialog = await dialogByKeyboard(page, newSegment, 'New segment');
    const segmentAttribute = dialog.getByRole('combobox', { name: 'Attribute' });
    await eventually(async () => (await segmentAttribute.evaluate((input) => (input as HTMLInputElement).list?.options.length ?? 0)) === 7, 'seen attributes offered for a segment');
    assert.deepEqual((await segmentAttribute.evaluate((input) => Array.from((input as HTMLInputElement).list?.options ?? [], (option) => option.value))).slice(0, 2).sort(), ['app_version', 'plan']);
    await dialog.getByRole('button', { name: 'Cancel' }).click();
    await dialog.waitFor({ state: 'detached' });
  } catch (error) {
    throw await failureReport(page, 'targeting', error);
  }
  assert.deepEqual(consoleErrors, [], 'no console errors on any page');
  if (shots) await screenshots(shots, user.token, project.id);
  await context.close();
});

/** The new pages, desktop and phone, light and dark. */
async function screenshots(dir: string, token: string, projectId: string) {
  const flags = (await request(server, 'GET', `/api/projects/${projectId}/flags`, { token })).body;
  const state = flags[0].environments.production;
  const environments = (await request(server, 'GET', `/api/projects/${projectId}/environments`, { token })).body;
  const production = environments.find((env: { key: string }) => env.key === 'production');
  const pages = [
    { name: 'segments', path: `/projects/${projectId}/segments` },
    { name: 'flag-targeting', path: `/projects/${projectId}/flags/${production.id}/${state.flag_id}` },
  ];
  await forEachScreenshotView(dir, browser, async (page, view) => {
    await signIn(page, server.url, token);
    for (const shot of pages) {
      await page.goto(server.url + shot.path);
      await page.waitForLoadState('networkidle');
      await page.screenshot({ path: join(dir, `${shot.name}-${view.suffix}.png`), fullPage: view.fullPage });
    }
  });
}
