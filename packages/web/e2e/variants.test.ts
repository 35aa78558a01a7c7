/**
 * Variants (docs/variants.md) walked through in Debian's Chromium, by role and accessible
 * name: a flag gets three string variants whose weights, typed as percentages, show their running
 * total; a total short of 100 % is refused in the page and nothing is stored; "Split evenly"
 * spreads the tenths; the off variant is chosen; a JSON value is checked as it is typed; a rule
 * pins a variant and its sentence says so; renaming that variant is the server's 400, shown as it
 * says it; after a reload all of it is still there, the usage chart counts each variant of thirty
 * evaluations, the history has a Variant column, and the flags overview shows the weights. No console
 * error on any page except the deliberate refusals; axe finds no serious violation in any state
 * reached.
 *
 * GUIDON_SCREENSHOTS=<dir> also saves the flag page with variants and the flags overview (desktop
 * and phone, light and dark), the JSON check and the rule dialog.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import type { Browser, Locator } from 'playwright-core';
import { evaluate, eventually, flagsPath, newFlag, newProject, newUser, request, type TestServer } from '@guidon/server/dist/tests/harness.js';
import { checkA11y, dialogByKeyboard, failureReport, focusReturnsTo, forEachScreenshotView, pressUntil, selectByKeyboard, serverAndBrowser, signIn, tabTo, walkPage, watchConsole } from './browser.js';

let server: TestServer;
let browser: Browser;
serverAndBrowser({ PUBLIC_URL: 'http://guidon.test' }, (started, chromium) => {
  server = started;
  browser = chromium;
});

const shots = process.env.GUIDON_SCREENSHOTS;

// A generous limit: axe runs at four views in every state reached, on a machine that may be shared.
test('a person gives a flag three button texts by weight, pins one for a user, and finds them after a reload', { timeout: 300_000 }, async () => {
  const user = await newUser(server, 'varier');
  const project = await newProject(server, user, 'Variant shop');
  const flag = await newFlag(server, user, project, { key: 'buy_button', name: 'Buy button', enabled: true });
  const stored = async () => (await request(server, 'GET', `${flagsPath(project)}/${flag.id}`, { token: user.token })).body as { variants?: { key: string; value: unknown; weight: number; description?: string | null }[]; off_variant?: string | null };

  const { context, page } = await walkPage(browser, server.url);
  let allowed: RegExp | null = null;
  const consoleErrors = watchConsole(page, () => allowed);
  const panel = page.getByRole('region', { name: 'Variants' });
  const variant = (n: number) => panel.getByRole('group', { name: `Variant ${n}`, exact: true });
  const total = panel.getByRole('status').filter({ hasText: /^Total:/ });
  // The editors by keyboard alone (docs/adr/0015-dashboard-accessibility.md): Tab to a control, then Enter, typing or arrows.
  const press = async (control: Locator, key = 'Enter') => {
    await tabTo(page, control);
    await page.keyboard.press(key);
  };
  const type = async (field: Locator, text: string) => {
    await tabTo(page, field);
    await page.keyboard.press('Control+A');
    await page.keyboard.insertText(text);
  };
  const choose = async (select: Locator, label: string) => {
    await tabTo(page, select);
    await selectByKeyboard(page, select, label);
  };

  try {
    await signIn(page, server.url, user.token);
    await page.goto(`${server.url}/projects/${project.id}`);
    await page.getByRole('link', { name: 'Open buy_button in Production' }).click();
    await page.getByRole('heading', { name: /Buy button/ }).waitFor();
    await panel.getByText('No variants: this flag serves on or off.').waitFor();
    await checkA11y(page, 'variants, none yet');
    assert.ok(await panel.getByRole('radio', { name: 'String' }).isChecked(), 'string values first');

    // Three string variants; the running total follows the weights as they are typed.
    const addVariant = panel.getByRole('button', { name: 'Add variant' });
    const fill = async (n: number, key: string, value: string, weight: string, description = '') => {
      await type(variant(n).getByLabel('Key'), key);
      await type(variant(n).getByLabel('Value', { exact: true }), value);
      await type(variant(n).getByLabel('Weight (%)'), weight);
      if (description) await type(variant(n).getByLabel('Description'), description);
    };
    // One too many, removed: the focus goes back to "Add variant".
    for (let n = 1; n <= 4; n++) await press(addVariant);
    await press(panel.getByRole('button', { name: 'Remove variant 4' }));
    await focusReturnsTo(page, addVariant);
    assert.equal(await variant(4).count(), 0);
    await fill(1, 'buy', 'Buy now', '50', 'The text of today');
    await fill(2, 'order', 'Order', '25');
    await fill(3, 'get', 'Get it', '12.5');
    await total.filter({ hasText: 'Total: 87.5 % (12.5 % to go' }).waitFor();
    await checkA11y(page, 'variants, total short of 100 %');

    // A total that is not 100 %: refused in the page, nothing stored.
    const saveVariants = panel.getByRole('button', { name: 'Save variants' });
    await press(saveVariants);
    await panel.getByRole('alert').filter({ hasText: 'Not saved: the weights total 87.5 %; they must total exactly 100 %.' }).waitFor();
    assert.deepEqual((await stored()).variants ?? [], [], 'nothing stored');
    await checkA11y(page, 'variants, wrong total refused');

    // Split evenly: tenths of a percent as even as they go; then the weights wanted.
    await press(panel.getByRole('button', { name: 'Split evenly' }));
    assert.deepEqual(await Promise.all([1, 2, 3].map((n) => variant(n).getByLabel('Weight (%)').inputValue())), ['33.4', '33.3', '33.3']);
    await total.filter({ hasText: /^Total: 100 %$/ }).waitFor();
    await type(variant(1).getByLabel('Weight (%)'), '50');
    await type(variant(2).getByLabel('Weight (%)'), '37.5');
    await type(variant(3).getByLabel('Weight (%)'), '12.5');
    await total.filter({ hasText: /^Total: 100 %$/ }).waitFor();

    // No off variant yet: refused in the page; then one chosen.
    await press(saveVariants);
    await panel.getByRole('alert').filter({ hasText: 'choose the off variant' }).waitFor();
    await checkA11y(page, 'variants, off variant missing');
    await choose(panel.getByLabel('Off variant'), 'get');

    // Reordered: "get" goes up one, above "order".
    const moveUp = panel.getByRole('button', { name: 'Move get up' });
    await press(moveUp);
    await focusReturnsTo(page, moveUp);
    assert.equal(await variant(2).getByLabel('Key').inputValue(), 'get');
    await press(saveVariants);
    await panel.getByRole('status').filter({ hasText: 'Variants saved' }).waitFor();
    const saved = await stored();
    assert.deepEqual(
      saved.variants?.map(({ key, value, weight }) => ({ key, value, weight })),
      [
        { key: 'buy', value: 'Buy now', weight: 500 },
        { key: 'get', value: 'Get it', weight: 125 },
        { key: 'order', value: 'Order', weight: 375 },
      ],
    );
    assert.equal(saved.variants?.[0]?.description, 'The text of today');
    assert.equal(saved.off_variant, 'get');
    await checkA11y(page, 'variants saved');

    // Numbers and JSON values are checked as they are typed; the changes are then discarded.
    await press(panel.getByRole('radio', { name: 'String' }), 'ArrowDown');
    assert.ok(await panel.getByRole('radio', { name: 'Number' }).isChecked(), 'Number chosen with an arrow key');
    await variant(1).getByRole('alert').filter({ hasText: 'Enter a number, for example 42 or 2.5' }).waitFor();
    await type(variant(1).getByLabel('Value', { exact: true }), '2.5');
    await variant(1).getByRole('alert').waitFor({ state: 'detached' });
    await tabTo(page, panel.getByRole('radio', { name: 'Number' }));
    await pressUntil(page, 'ArrowDown', () => panel.getByRole('radio', { name: 'JSON' }).isChecked(), 'the JSON type');
    const json = variant(1).getByLabel('Value', { exact: true });
    await type(json, '{"text": "Buy now",');
    await variant(1).getByText(/^Not valid JSON/).waitFor();
    assert.equal(await json.getAttribute('aria-invalid'), 'true');
    await checkA11y(page, 'variants, JSON value half typed');
    if (shots) await page.screenshot({ path: join(shots, 'variants-json-desktop-light.png'), fullPage: true, clip: await pageBox(panel) });
    await type(json, '{"text": "Buy now", "colour": "green"}');
    await variant(1).getByText('Valid JSON').waitFor();
    await press(panel.getByRole('button', { name: 'Discard changes' }));
    assert.ok(await panel.getByRole('radio', { name: 'String' }).isChecked(), 'back to strings');
    assert.equal(await variant(1).getByLabel('Value', { exact: true }).inputValue(), 'Buy now');

    // A rule pins a variant; its sentence says which.
    const addRule = page.getByRole('button', { name: 'Add rule' });
    const dialog = await dialogByKeyboard(page, addRule, 'Add rule');
    await type(dialog.getByLabel('Value'), 'user-42');
    const serveVariant = dialog.getByLabel('Serve variant');
    assert.equal(await serveVariant.inputValue(), '', 'by weight unless chosen');
    await choose(serveVariant, 'order');
    await checkA11y(page, 'add rule dialog, a variant pinned');
    if (shots) await dialog.screenshot({ path: join(shots, 'rule-variant-dialog-desktop-light.png') });
    await press(dialog.getByRole('button', { name: 'Add rule' }));
    await dialog.waitFor({ state: 'detached' });
    await focusReturnsTo(page, addRule);
    const rules = page.getByRole('list').filter({ has: page.getByRole('button', { name: /^Reorder rule/ }) });
    await rules.getByText('user_id is user-42 → on (variant order)').waitFor();

    // Renaming the variant the rule pins: the server's 400 as it says it, nothing changed; discarded.
    allowed = /status of 400/;
    await type(variant(3).getByLabel('Key'), 'place_order');
    await press(saveVariants);
    await panel.getByRole('alert').filter({ hasText: 'serves variant "order"' }).waitFor();
    assert.deepEqual((await stored()).variants?.map((item) => item.key), ['buy', 'get', 'order'], 'nothing changed');
    await checkA11y(page, 'variants, refused by the server');
    await press(panel.getByRole('button', { name: 'Discard changes' }));
    await panel.getByRole('alert').waitFor({ state: 'detached' });
    allowed = null;

    // Thirty users ask for it: the server counts each variant, and the chart will show them.
    for (let i = 0; i < 30; i++) await evaluate(server, project.sdk_key, 'production', { user_id: `shopper-${i}` });
    let counts: Record<string, number> = {};
    await eventually(async () => {
      const metrics = (await request(server, 'GET', `${flagsPath(project)}/${flag.id}/metrics?hours=24`, { token: user.token })).body;
      counts = metrics.totals.variants ?? {};
      return metrics.totals.enabled === 30;
    }, 'thirty evaluations counted');

    // After a reload: the variants in their order, the off variant, the pinned rule.
    await page.reload();
    await variant(3).waitFor();
    assert.deepEqual(await Promise.all([1, 2, 3].map((n) => variant(n).getByLabel('Key').inputValue())), ['buy', 'get', 'order']);
    assert.deepEqual(await Promise.all([1, 2, 3].map((n) => variant(n).getByLabel('Weight (%)').inputValue())), ['50', '12.5', '37.5']);
    assert.equal(await panel.getByLabel('Off variant').locator('option:checked').innerText(), 'get');
    await total.filter({ hasText: /^Total: 100 %$/ }).waitFor();
    assert.equal(await panel.getByRole('button', { name: 'Discard changes' }).count(), 0, 'nothing to discard');
    await rules.getByText('user_id is user-42 → on (variant order)').waitFor();
    // The usage chart's table: each variant's evaluations, as the metrics count them.
    const byVariant = page.getByRole('table', { name: 'Evaluations by variant' });
    for (const key of ['buy', 'get', 'order']) await byVariant.getByRole('row', { name: new RegExp(`^${key} ${counts[key] ?? 0} `) }).waitFor();
    await checkA11y(page, 'flag with variants, reloaded');

    // The evaluation history has a Variant column.
    await page.getByRole('navigation', { name: 'Project sections' }).getByRole('link', { name: 'Usage', exact: true }).click();
    await page.getByRole('columnheader', { name: 'Variant' }).waitFor();
    await page.getByRole('row', { name: /shopper-29/ }).getByRole('cell', { name: /^(buy|get|order)$/ }).waitFor();
    await checkA11y(page, 'evaluation history with variants');

    // The flags overview shows the weights side by side.
    await page.getByRole('navigation', { name: 'Project sections' }).getByRole('link', { name: 'Flags', exact: true }).click();
    await page.getByRole('row', { name: /^buy_button/ }).getByText('buy 50 %, get 12.5 %, order 37.5 %').waitFor();
    await checkA11y(page, 'flags overview with a variant flag');
  } catch (error) {
    throw await failureReport(page, 'variants', error);
  }
  assert.deepEqual(consoleErrors, [], 'no console errors on any page');
  if (shots) await screenshots(shots, user.token, project.id, flag.id);
  await context.close();
});

/** The flag page with its variants and the flags overview, desktop and phone, light and dark. */
async function screenshots(dir: string, token: string, projectId: string, flagId: string) {
  const environments = (await request(server, 'GET', `/api/projects/${projectId}/environments`, { token })).body;
  const production = environments.find((env: { key: string }) => env.key === 'production');
  await forEachScreenshotView(dir, browser, async (page, view) => {
    await signIn(page, server.url, token);
    await page.goto(`${server.url}/projects/${projectId}/flags/${production.id}/${flagId}`);
    await page.waitForLoadState('networkidle');
    const panel = page.getByRole('region', { name: 'Variants' });
    await panel.getByRole('group', { name: 'Variant 3' }).waitFor();
    // The phone's screen shows the variants, below the sticky header.
    if (!view.fullPage) await panel.evaluate((element) => window.scrollTo(0, element.getBoundingClientRect().top + window.scrollY - 64));
    await page.screenshot({ path: join(dir, `flag-variants-${view.suffix}.png`), fullPage: view.fullPage });
    await page.goto(`${server.url}/projects/${projectId}`);
    await page.getByText('buy 50 %, get 12.5 %, order 37.5 %').waitFor();
    await page.screenshot({ path: join(dir, `flags-variants-${view.suffix}.png`), fullPage: view.fullPage });
  });
}

/** An element's box on the whole page: a full-page shot clipped to it has no sticky header over it. */
const pageBox = (element: Locator) =>
  element.evaluate((node) => {
    const box = node.getBoundingClientRect();
    return { x: box.x + window.scrollX, y: box.y + window.scrollY, width: box.width, height: box.height };
  });
