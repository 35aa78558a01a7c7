/**
 * Targeting on any attribute (docs/targeting.md) walked through in Debian's Chromium, by role
 * and accessible name: a segment is created with its values as chips (typed, pasted as a list,
 * one removed), a bad one is refused with the server's message; a flag gets a conditions rule
 * naming the segment and a version, and a rule that serves off; everyone else is set to off; the
 * segment then says where it is used and refuses to be deleted (409); try it sends custom
 * attributes and shows the reason and the rule that served (explain); the attribute field of the
 * rule editor then offers the attributes Try it sent first. No console error on any page except
 * the deliberate refusals; axe finds no serious violation in any state reached. The new editors
 * (conditions builder, segment dialogs, the rules' order, everyone else, Try it's attributes) are
 * worked with the keyboard alone (docs/adr/0015-dashboard-accessibility.md): Tab to reach, Enter/Space to press, arrows to choose;
 * each dialog gives the focus back to what opened it, a removed chip, condition or attribute row
 * passes it to its box, the next row or the Add button.
 *
 * GUIDON_SCREENSHOTS=<dir> also saves the new pages (desktop and phone, light and dark).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import type { Browser } from 'playwright-core';
import { eventually, flagsPath, newFlag, newProject, newUser, request, type TestServer } from '@guidon/server/dist/tests/harness.js';
import { checkA11y, dialogByKeyboard, failureReport, focusReturnsTo, focusStaysIn, forEachScreenshotView, pressUntil, selectByKeyboard, serverAndBrowser, signIn, tabTo, walkPage, watchConsole } from './browser.js';

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
    // By keyboard alone: Tab from field to field, Enter for a chip and on buttons.
    let dialog = await dialogByKeyboard(page, newSegment, 'New segment');
    await focusReturnsTo(page, dialog.getByLabel('Name'));
    await page.keyboard.type('Beta customers');
    await page.keyboard.press('Tab');
    await page.keyboard.type('beta');
    const first = dialog.getByRole('group', { name: 'Condition 1' });
    await tabTo(page, first.getByLabel('Attribute'));
    await page.keyboard.type('plan');
    await page.keyboard.press('Tab');
    assert.equal(await first.getByLabel('Operator').inputValue(), 'IN', '"is one of" first');
    await page.keyboard.press('Tab');
    await page.keyboard.type('beta');
    await page.keyboard.press('Enter');
    // A pasted list adds each of its items: one a line or comma-separated.
    await page.evaluate(() => navigator.clipboard.writeText('gamma\ndelta, epsilon'));
    await page.keyboard.press('Control+V');
    const chips = first.getByRole('list', { name: 'Values of condition 1' });
    await chips.getByRole('listitem').filter({ hasText: 'epsilon' }).waitFor();
    assert.deepEqual(await chips.getByRole('listitem').allInnerTexts().then((items) => items.map((item) => item.replace('×', '').trim())), ['beta', 'gamma', 'delta', 'epsilon']);
    // Each chip's remove button is reached with Shift+Tab; the focus goes back to the box after.
    for (const value of ['delta', 'epsilon']) {
      await tabTo(page, first.getByRole('button', { name: `Remove ${value} from condition 1` }));
      await page.keyboard.press('Enter');
      await focusReturnsTo(page, first.getByLabel('Values', { exact: true }));
    }
    await tabTo(page, first.getByRole('checkbox', { name: 'ignore case' }));
    await page.keyboard.press('Space');
    assert.ok(await first.getByRole('checkbox', { name: 'ignore case' }).isChecked(), 'ignore case ticked with Space');
    await checkA11y(page, 'new segment dialog, with chips');
    if (shots) await dialog.screenshot({ path: join(shots, 'segment-dialog-desktop-light.png') });
    await tabTo(page, dialog.getByRole('button', { name: 'Create segment' }));
    await page.keyboard.press('Enter');
    await dialog.waitFor({ state: 'detached' });
    await focusReturnsTo(page, newSegment);
    const row = page.getByRole('row', { name: /^beta Beta customers/ });
    await row.getByText('plan is one of beta, gamma (any case)').waitFor();
    await row.getByText('Not used').waitFor();

    // A version that is not x.y.z: the server's 400, in the dialog, and nothing made.
    allowed = /status of 400/;
    dialog = await dialogByKeyboard(page, newSegment, 'New segment');
    await page.keyboard.type('Recent app');
    await page.keyboard.press('Tab');
    await page.keyboard.type('recent');
    await tabTo(page, dialog.getByLabel('Attribute'));
    await page.keyboard.type('app_version');
    await page.keyboard.press('Tab');
    await selectByKeyboard(page, dialog.getByLabel('Operator'), 'version ≥');
    await page.keyboard.press('Tab');
    await page.keyboard.type('2.4');
    await tabTo(page, dialog.getByRole('button', { name: 'Create segment' }));
    await page.keyboard.press('Enter');
    await dialog.getByRole('alert').filter({ hasText: '"2.4" is not a version' }).waitFor();
    assert.equal(await dialog.getByRole('group', { name: 'Condition 1' }).getByRole('checkbox', { name: 'ignore case' }).count(), 0, 'no case toggle for versions');
    await checkA11y(page, 'new segment dialog, refused by the server');
    await tabTo(page, dialog.getByRole('button', { name: 'Cancel' }));
    await page.keyboard.press('Enter');
    await dialog.waitFor({ state: 'detached' });
    await focusReturnsTo(page, newSegment);
    allowed = null;
    assert.equal((await request(server, 'GET', `/api/projects/${project.id}/segments`, { token: user.token })).body.length, 1, 'nothing made');
    await checkA11y(page, 'segments, one');

    // The flag: a conditions rule naming the segment and a version; a user_id rule that serves off.
    await section('Flags');
    await page.getByRole('link', { name: 'Open beta_checkout in Production' }).click();
    await heading(/Beta checkout/);
    const addRule = () => page.getByRole('button', { name: 'Add rule' });
    // By keyboard alone: the kind with the arrow keys, each field reached with Tab,
    // values as chips with Enter, options with the arrow keys, buttons with Enter.
    dialog = await dialogByKeyboard(page, addRule(), 'Add rule');
    const condition = (n: number) => dialog.getByRole('group', { name: `Condition ${n}` });
    await page.keyboard.press('Shift+Tab'); // from Value to the kind's radio group
    await pressUntil(page, 'ArrowDown', () => dialog.getByRole('radio', { name: 'Conditions' }).isChecked(), 'the Conditions kind');
    await tabTo(page, condition(1).getByLabel('Attribute'));
    await page.keyboard.type('plan');
    await page.keyboard.press('Tab');
    assert.equal(await condition(1).getByLabel('Operator').inputValue(), 'IN', '"is one of" first');
    await page.keyboard.press('Tab');
    for (const value of ['beta', 'gamma']) {
      await page.keyboard.type(value);
      await page.keyboard.press('Enter');
    }
    const ruleChips = condition(1).getByRole('list', { name: 'Values of condition 1' });
    await ruleChips.getByRole('listitem').filter({ hasText: 'gamma' }).waitFor();
    // A chip removed with Enter on its button: the focus goes back to the box.
    await tabTo(page, condition(1).getByRole('button', { name: 'Remove gamma from condition 1' }));
    await page.keyboard.press('Enter');
    await focusReturnsTo(page, condition(1).getByLabel('Values', { exact: true }));
    assert.deepEqual(await ruleChips.getByRole('listitem').allInnerTexts().then((items) => items.map((item) => item.replace('×', '').trim())), ['beta']);
    // A second condition: the segment (the last operator, End on the select).
    const addCondition = dialog.getByRole('button', { name: 'Add condition' });
    await tabTo(page, addCondition);
    await page.keyboard.press('Enter');
    await tabTo(page, condition(2).getByLabel('Operator'));
    await selectByKeyboard(page, condition(2).getByLabel('Operator'), 'is in segment');
    await condition(2).getByLabel('Segments').waitFor();
    await page.keyboard.press('Tab');
    await page.keyboard.type('beta');
    await page.keyboard.press('Enter');
    await condition(2).getByRole('list', { name: 'Values of condition 2' }).getByRole('listitem').filter({ hasText: 'beta' }).waitFor();
    // A third: the app's version.
    await tabTo(page, addCondition);
    await page.keyboard.press('Enter');
    await tabTo(page, condition(3).getByLabel('Attribute'));
    await page.keyboard.type('app_version');
    await page.keyboard.press('Tab');
    await selectByKeyboard(page, condition(3).getByLabel('Operator'), 'version ≥');
    await page.keyboard.press('Tab');
    // Typed and left in the box: added when it loses the focus.
    await page.keyboard.type('2.4.0');
    // The first condition removed with Enter on its Remove button: the focus goes to the first
    // field of the condition that took its place (not to <body>).
    await tabTo(page, condition(1).getByRole('button', { name: 'Remove condition 1' }));
    await page.keyboard.press('Enter');
    await dialog.getByRole('group', { name: 'Condition 3' }).waitFor({ state: 'detached' });
    await focusReturnsTo(page, condition(1).getByLabel('Operator'));
    assert.equal(await condition(1).getByLabel('Segments').count(), 1, 'the segment condition is now the first');
    assert.equal(await condition(2).getByLabel('Attribute').inputValue(), 'app_version');
    await condition(2).getByRole('list', { name: 'Values of condition 2' }).getByRole('listitem').filter({ hasText: '2.4.0' }).waitFor();
    await tabTo(page, dialog.getByLabel('Rule rollout (%)'));
    await page.keyboard.press('Control+A');
    await page.keyboard.type('100');
    // The builder has grown since the dialog opened: Tab and Shift+Tab still go round inside it.
    await focusStaysIn(page, dialog, 'add rule dialog, conditions');
    await checkA11y(page, 'add rule dialog, conditions');
    if (shots) await dialog.screenshot({ path: join(shots, 'rule-conditions-dialog-desktop-light.png') });
    await tabTo(page, dialog.getByRole('button', { name: 'Add rule' }));
    await page.keyboard.press('Enter');
    await dialog.waitFor({ state: 'detached' });
    await focusReturnsTo(page, addRule());
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
    // The blocked user first: the conditions rule moved below it with its drag handle (Space picks
    // it up, an arrow moves it, Space drops it), as walk.test.ts reorders rules; each press waits
    // for the state it makes (picked up, moved over the other rule) instead of a fixed time.
    const conditionsHandle = page.getByRole('button', { name: /^Reorder rule 1 of 2: / });
    await tabTo(page, conditionsHandle);
    await page.keyboard.press('Space');
    await page.waitForFunction((node) => node?.getAttribute('aria-pressed') === 'true', await conditionsHandle.elementHandle());
    await page.keyboard.press('ArrowDown');
    // dnd-kit's live region says where it is: over the blocked user's rule (not over itself).
    const blocked = (await request(server, 'GET', `${flagsPath(project)}/${flag.id}/rules`, { token: user.token })).body.find((rule: { rule_value: string | null }) => rule.rule_value === 'user-blocked');
    await page.getByRole('status').filter({ hasText: `was moved over droppable area ${blocked.id}.` }).waitFor();
    await page.keyboard.press('Space');
    await page.getByRole('button', { name: 'Reorder rule 1 of 2: User id user-blocked' }).waitFor();

    // Everyone else: off.
    const everyoneElse = page.getByRole('group', { name: 'Everyone else' });
    assert.ok(await everyoneElse.getByRole('radio', { name: 'served by the rollout' }).isChecked());
    // Checked once the server has it. By keyboard: Tab to the checked radio, the arrow picks off.
    await tabTo(page, everyoneElse.getByRole('radio', { name: 'served by the rollout' }));
    await page.keyboard.press('ArrowDown');
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
    await tabTo(page, dialog.getByLabel('Key'));
    await page.keyboard.press('Control+A');
    await page.keyboard.type('beta_v2');
    await page.evaluate((list) => navigator.clipboard.writeText(list), Array.from({ length: 1000 }, (_, i) => `customer-${i}`).join('\n'));
    await tabTo(page, dialog.getByLabel('Values', { exact: true }));
    await page.keyboard.press('Control+V');
    await dialog.getByText('and 952 more').waitFor();
    await dialog.getByRole('button', { name: 'Remove all 1002 values of condition 1' }).waitFor();
    await checkA11y(page, 'edit segment dialog, a thousand values pasted');
    allowed = /status of 409/;
    await tabTo(page, dialog.getByRole('button', { name: 'Save segment' }));
    await page.keyboard.press('Enter');
    await dialog.getByRole('alert').filter({ hasText: 'cannot change while it is in use' }).waitFor();
    // Escape cancels it: nothing saved, the focus back on the row's Edit button.
    await page.keyboard.press('Escape');
    await dialog.waitFor({ state: 'detached' });
    await focusReturnsTo(page, editSegment);
    allowed = null;
    dialog = await dialogByKeyboard(page, editSegment, 'Edit segment beta');
    assert.equal(await dialog.getByRole('list', { name: 'Values of condition 1' }).getByRole('listitem').count(), 2, 'the cancelled edit changed nothing');
    await focusReturnsTo(page, dialog.getByLabel('Name'));
    await page.keyboard.press('Control+A');
    await page.keyboard.type('Beta testers');
    await tabTo(page, dialog.getByRole('button', { name: 'Save segment' }));
    await page.keyboard.press('Enter');
    await dialog.waitFor({ state: 'detached' });
    await focusReturnsTo(page, editSegment);
    await page.getByRole('row', { name: /^beta Beta testers/ }).waitFor();

    // Try it with custom attributes: the reason says which rule served.
    await section('Try it');
    await page.getByLabel('user_id').fill('user-7');
    // Custom attributes by keyboard: Enter on "Add attribute" twice, Tab through the rows.
    const addAttribute = page.getByRole('button', { name: 'Add attribute' });
    await tabTo(page, addAttribute);
    await page.keyboard.press('Enter');
    await page.getByLabel('Name of attribute 1').waitFor();
    await page.keyboard.press('Enter');
    await page.getByLabel('Name of attribute 2').waitFor();
    await tabTo(page, page.getByLabel('Name of attribute 1'));
    for (const [n, name, value] of [[1, 'plan', 'Gamma'], [2, 'app_version', '2.5.0']] as const) {
      await focusReturnsTo(page, page.getByLabel(`Name of attribute ${n}`));
      await page.keyboard.type(name);
      await page.keyboard.press('Tab');
      await page.keyboard.type(value);
      await page.keyboard.press('Tab'); // its Remove button
      await page.keyboard.press('Tab');
    }
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
    await tabTo(page, page.getByLabel('Value of attribute 2'));
    await page.keyboard.press('Control+A');
    await page.keyboard.type('2.3.9');
    await tryIt('Off', 'No targeting rule matched', 'No rule: No targeting rule matched');
    // Removed with Enter: the focus goes to "Add attribute" (the last row gone), not to <body>.
    await tabTo(page, page.getByRole('button', { name: 'Remove attribute 2' }));
    await page.keyboard.press('Enter');
    await page.getByLabel('Name of attribute 2').waitFor({ state: 'detached' });
    await focusReturnsTo(page, addAttribute);
    await tryIt('Off', 'No targeting rule matched', 'No rule: No targeting rule matched');
    assert.equal(await page.getByRole('columnheader', { name: 'Variant' }).count(), 0, 'no variant columns for boolean flags');
    // A flag that serves values (docs/variants.md): its variant and value (compact JSON) in two more columns.
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
    await page.keyboard.press('Shift+Tab');
    await pressUntil(page, 'ArrowDown', () => dialog.getByRole('radio', { name: 'Conditions' }).isChecked(), 'the Conditions kind');
    const attribute = dialog.getByRole('combobox', { name: 'Attribute' });
    const offered = async () => attribute.evaluate((input) => Array.from((input as HTMLInputElement).list?.options ?? [], (option) => option.value));
    await eventually(async () => (await offered()).length === 7, 'seen and built-in attributes offered');
    const options = await offered();
    assert.deepEqual(options.slice(0, 2).sort(), ['app_version', 'plan'], 'seen attributes first');
    assert.deepEqual(options.slice(2), ['user_id', 'user_email', 'email_domain', 'environment', 'current_time']);
    await tabTo(page, attribute);
    await page.keyboard.type('pla');
    await checkA11y(page, 'add rule dialog, seen attributes offered');
    await tabTo(page, dialog.getByRole('button', { name: 'Cancel' }));
    await page.keyboard.press('Enter');
    await dialog.waitFor({ state: 'detached' });
    await focusReturnsTo(page, addRule());
    // A segment applies in every environment: the names seen in any of them are offered first.
    await section('Segments');
    dialog = await dialogByKeyboard(page, newSegment, 'New segment');
    const segmentAttribute = dialog.getByRole('combobox', { name: 'Attribute' });
    await eventually(async () => (await segmentAttribute.evaluate((input) => (input as HTMLInputElement).list?.options.length ?? 0)) === 7, 'seen attributes offered for a segment');
    assert.deepEqual((await segmentAttribute.evaluate((input) => Array.from((input as HTMLInputElement).list?.options ?? [], (option) => option.value))).slice(0, 2).sort(), ['app_version', 'plan']);
    await tabTo(page, dialog.getByRole('button', { name: 'Cancel' }));
    await page.keyboard.press('Enter');
    await dialog.waitFor({ state: 'detached' });
    await focusReturnsTo(page, newSegment);
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
