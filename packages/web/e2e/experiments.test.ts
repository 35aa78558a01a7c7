/**
 * Experiments in the dashboard (docs/experiments.md, "In the dashboard") walked through in Debian's
 * Chromium, by role and accessible name: the grouped project navigation by keyboard, and folded on
 * a 360 px phone; a metric created (a bad key refused in the page), edited, and its deletion refused
 * (409) while a running experiment uses it; an experiment created from a flag with the control and
 * metrics picked, a start the server refuses (the flag serves one arm) and then a start, a change of
 * the flag on its timeline, the results read in words and drawn as intervals with the sample-ratio,
 * multiple-exposure and "not enough data" notices, a stop with a decision and a note, and a delete.
 * No console error except the deliberate refusals; axe finds no serious violation in any state.
 *
 * Results: exposures and events are fed to the server's intake (POST /sdk/v1/events) and the page
 * reads the server's own results; then the wording and the warnings are checked on a fixed answer
 * (the route answered by the test), so that every notice is seen.
 *
 * GUIDON_SCREENSHOTS=<dir> also saves the metrics, experiments and experiment pages and the folded
 * navigation (desktop and phone, light and dark).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser, Locator, Page } from 'playwright-core';
import { bucketOf } from '@guidon/engine';
import { eventually, flagsPath, newFlag, newProject, newUser, request, type TestServer } from '@guidon/server/dist/tests/harness.js';
import { checkA11y, dialogByKeyboard, failureReport, focusReturnsTo, forEachScreenshotView, serverAndBrowser, signIn, tabTo, walkPage, watchConsole } from './browser.js';

let server: TestServer;
let browser: Browser;
serverAndBrowser({ PUBLIC_URL: 'http://guidon.test' }, (started, chromium) => {
  server = started;
  browser = chromium;
});

const shots = process.env.GUIDON_SCREENSHOTS;

/** A fixed answer of GET …/results (docs/experiments.md): one clear rise, one unclear change, and every warning. */
const FIXED_RESULTS = {
  computed_at: new Date().toISOString(),
  units: 1000,
  arms: { off: { units: 520, expected_share: 0.5 }, on: { units: 468, expected_share: 0.5 } },
  srm: { p_value: 0.0002, flagged: true },
  multiple_exposures: { units: 12, share: 0.012 },
  metrics: [
    {
      metric_id: 'purchase',
      key: 'purchase',
      role: 'primary',
      arms: { off: { units: 520, mean: 0.2, variance: 0.16 }, on: { units: 468, mean: 0.2082, variance: 0.165 } },
      versus_control: { on: { absolute: { estimate: 0.0082, ci: [0.0024, 0.014], p_value: 0.005 }, relative: { estimate: 0.041, ci: [0.012, 0.07], p_value: 0.005 }, chance_to_win: 0.997, significant: true, cuped_applied: false } },
    },
    {
      metric_id: 'errors',
      key: 'errors',
      role: 'guardrail',
      arms: { off: { units: 520, mean: 0.5, variance: 0.5 }, on: { units: 468, mean: 0.495, variance: 0.5 } },
      versus_control: { on: { absolute: { estimate: -0.005, ci: [-0.025, 0.015], p_value: 0.6 }, relative: { estimate: -0.01, ci: [-0.05, 0.03], p_value: 0.6 }, chance_to_win: 0.7, significant: false, cuped_applied: false } },
    },
  ],
  enough_data: false,
};

test('a person measures a flag with an experiment: metrics, start, results in words, stop with a decision', { timeout: 400_000 }, async () => {
  const user = await newUser(server, 'experimenter');
  const project = await newProject(server, user, 'Experiment shop');
  // Off and at 100 %: it serves one arm, so the first start is refused.
  const flag = await newFlag(server, user, project, { key: 'new_checkout', name: 'New checkout', enabled: false });
  const projectUrl = `${server.url}/projects/${project.id}`;

  const { context, page } = await walkPage(browser, server.url);
  let allowed: RegExp | null = null;
  const consoleErrors = watchConsole(page, () => allowed);
  const nav = page.getByRole('navigation', { name: 'Project sections' });
  const press = async (control: Locator, key = 'Enter') => {
    await tabTo(page, control);
    await page.keyboard.press(key);
  };
  let experimentUrl = '';

  try {
    await signIn(page, server.url, user.token);
    await page.goto(projectUrl);
    await page.getByRole('heading', { name: 'Flags', level: 2 }).waitFor();

    // The grouped navigation: a labelled list per group, the section shown marked, reached by Tab.
    for (const group of ['Flags and targeting', 'Experiments', 'Changes and audit', 'Setup']) await nav.getByRole('list', { name: group }).waitFor();
    assert.equal(await nav.getByRole('link').count(), 13, 'thirteen sections for an owner');
    assert.equal(await nav.getByRole('link', { name: 'Flags', exact: true }).getAttribute('aria-current'), 'page');
    const metricsLink = nav.getByRole('list', { name: 'Experiments' }).getByRole('link', { name: 'Metrics', exact: true });
    await press(metricsLink);
    await page.getByRole('heading', { name: 'Metrics', level: 2 }).waitFor();
    assert.equal(await metricsLink.getAttribute('aria-current'), 'page');
    assert.equal(await nav.getByRole('link', { name: 'Flags', exact: true }).getAttribute('aria-current'), null);
    await page.getByRole('heading', { name: 'No metrics yet' }).waitFor();
    await checkA11y(page, 'metrics, none yet');

    // Metrics: a bad key is refused in the page; two are created, one edited.
    const newMetric = page.getByRole('button', { name: 'New metric' });
    let dialog = await dialogByKeyboard(page, newMetric, 'New metric');
    await dialog.getByLabel('Name').fill('Purchases');
    await dialog.getByLabel('Key').fill('Purchase!');
    await dialog.getByLabel('Event').fill('purchase');
    await dialog.getByRole('button', { name: 'Create metric' }).click();
    await dialog.getByRole('alert').filter({ hasText: 'The key allows a-z' }).waitFor();
    await checkA11y(page, 'new metric dialog, with an error');
    await dialog.getByLabel('Key').fill('purchase');
    await dialog.getByRole('button', { name: 'Create metric' }).click();
    await dialog.waitFor({ state: 'detached' });
    await page.getByRole('row', { name: /purchase Purchases purchase conversion higher/ }).waitFor();

    dialog = await dialogByKeyboard(page, newMetric, 'New metric');
    await dialog.getByLabel('Name').fill('Errors');
    await dialog.getByLabel('Key').fill('errors');
    await dialog.getByLabel('Event').fill('error');
    await dialog.getByLabel('Kind').selectOption('count');
    await dialog.getByRole('radio', { name: 'Lower' }).check();
    await dialog.getByRole('button', { name: 'Create metric' }).click();
    await dialog.waitFor({ state: 'detached' });
    await page.getByRole('row', { name: /errors Errors error count lower/ }).waitFor();

    const editPurchase = page.getByRole('button', { name: 'Edit metric purchase' });
    dialog = await dialogByKeyboard(page, editPurchase, 'Edit metric purchase');
    await dialog.getByLabel('Window in hours (optional)').fill('72');
    await checkA11y(page, 'edit metric dialog');
    await dialog.getByRole('button', { name: 'Save metric' }).click();
    await dialog.waitFor({ state: 'detached' });
    await page.getByRole('row', { name: /purchase Purchases .* 72 h after the first exposure/ }).waitFor();
    await checkA11y(page, 'metrics');

    // Experiments: created from the flag, the control and the metrics picked.
    await press(nav.getByRole('link', { name: 'Experiments', exact: true }));
    await page.getByRole('heading', { name: 'Experiments', level: 2 }).waitFor();
    await page.getByLabel('Environment').selectOption({ label: 'Production' });
    await page.getByRole('heading', { name: 'No experiments in Production yet' }).waitFor();
    await checkA11y(page, 'experiments, none yet');
    dialog = await dialogByKeyboard(page, page.getByRole('button', { name: 'New experiment' }), 'New experiment');
    await dialog.getByRole('button', { name: 'Create experiment' }).click();
    await dialog.getByRole('alert').filter({ hasText: 'Pick the flag to experiment on' }).waitFor();
    await dialog.getByRole('alert').filter({ hasText: 'Pick at least one metric' }).waitFor();
    await checkA11y(page, 'new experiment dialog, with errors');
    await dialog.getByLabel('Flag').selectOption('new_checkout');
    assert.deepEqual(await dialog.getByLabel('Control arm').locator('option').allTextContents(), ['on', 'off'], 'a flag without variants has the arms on and off');
    await dialog.getByLabel('Control arm').selectOption('off');
    await dialog.getByLabel('Name').fill('Checkout test');
    await dialog.getByLabel('Hypothesis (optional)').fill('The new checkout raises purchases without more errors.');
    await dialog.getByRole('checkbox', { name: /Purchases/ }).check();
    await dialog.getByRole('checkbox', { name: /Errors/ }).check();
    await dialog.getByLabel('Role of Errors').selectOption('guardrail');
    assert.equal(await dialog.getByLabel('Role of Purchases').inputValue(), 'primary', 'the first metric picked is the primary one');
    await dialog.getByText('Advanced: significance, sequential testing, CUPED').click();
    await dialog.getByLabel('Units per arm for enough data').fill('50');
    await checkA11y(page, 'new experiment dialog, filled in');
    await dialog.getByRole('button', { name: 'Create experiment' }).click();
    await dialog.waitFor({ state: 'detached' });
    const row = page.getByRole('row', { name: /Checkout test new_checkout Draft/ });
    await row.waitFor();

    // A start the server refuses: the flag is off, one arm. Then the flag at 50 % on, and a start.
    allowed = /status of 409/;
    await press(row.getByRole('button', { name: 'Start Checkout test' }));
    await page.getByRole('alert').filter({ hasText: /Not started: .*serves only "off"/ }).waitFor();
    await checkA11y(page, 'experiments, a refused start');
    allowed = null;
    const put = await request(server, 'PUT', `${flagsPath(project)}/${flag.id}`, { token: user.token, body: { enabled: true, rollout_percentage: 50 } });
    assert.equal(put.status, 200, put.text);
    await press(row.getByRole('button', { name: 'Start Checkout test' }));
    await page.getByRole('status').filter({ hasText: 'Checkout test is running.' }).waitFor();
    await page.getByRole('row', { name: /Checkout test new_checkout Running/ }).waitFor();
    await checkA11y(page, 'experiments, one running');

    // A metric a running experiment uses cannot be deleted: the server's 409, as it says it.
    await press(nav.getByRole('link', { name: 'Metrics', exact: true }));
    const deletePurchase = page.getByRole('button', { name: 'Delete metric purchase' });
    dialog = await dialogByKeyboard(page, deletePurchase, 'Delete metric purchase?');
    allowed = /status of 409/;
    await dialog.getByRole('button', { name: 'Delete metric' }).click();
    await dialog.getByRole('alert').filter({ hasText: 'is used by running experiment "Checkout test": stop it first' }).waitFor();
    await checkA11y(page, 'delete metric dialog, refused');
    allowed = null;
    await page.keyboard.press('Escape');
    await dialog.waitFor({ state: 'detached' });
    await focusReturnsTo(page, deletePurchase);

    // The flag changes while it runs: the timeline shows it.
    await request(server, 'PUT', `${flagsPath(project)}/${flag.id}`, { token: user.token, body: { rollout_percentage: 60 } });
    await press(nav.getByRole('link', { name: 'Experiments', exact: true }));
    await press(page.getByRole('link', { name: 'Checkout test' }));
    await page.getByRole('heading', { name: /Checkout test Running/, level: 2 }).waitFor();
    experimentUrl = page.url();
    assert.equal(await nav.getByRole('link', { name: 'Experiments', exact: true }).getAttribute('aria-current'), 'page', "an experiment's page is the Experiments section's");
    const timeline = page.getByRole('region', { name: 'Timeline' });
    for (const item of ['Experiment created', 'Experiment started', 'Flag changed']) await timeline.getByText(item).first().waitFor();
    await timeline.getByRole('listitem').filter({ hasText: 'Flag changed' }).filter({ hasText: 'while running' }).first().waitFor();
    const results = page.getByRole('region', { name: 'Results' });

    // The server's own results: exposures by the flag's own bucketing, purchases by half the units under "on" and a quarter under "off".
    const units = Array.from({ length: 400 }, (_, i) => `unit-${i}`);
    const armOf = (unit: string) => (bucketOf('new_checkout', unit) < 60 ? 'on' : 'off');
    let purchases = 0;
    for (let i = 0; i < units.length; i += 200) {
      const batch = units.slice(i, i + 200);
      const events = batch.filter((unit, n) => n % (armOf(unit) === 'on' ? 2 : 4) === 0).map((unit) => ({ name: 'purchase', unit }));
      purchases += events.length;
      const sent = await request(server, 'POST', '/sdk/v1/events', {
        sdkKey: project.sdk_key,
        body: { environment: 'production', exposures: batch.map((unit) => ({ flag: 'new_checkout', unit, arm: armOf(unit) })), events },
      });
      assert.equal(sent.status, 202, sent.text);
    }
    const resultsPath = `/api/projects/${project.id}/environments/${project.production}/experiments/${experimentUrl.split('/').at(-1)}/results`;
    // Every unit and every purchase: a flush commits exposures before events (packages/server/src/modules/experiments/intake.writer.ts).
    const convertedUnits = (body: any) => {
      const arms: { units: number; mean: number }[] = Object.values(body?.metrics?.find((metric: { key: string }) => metric.key === 'purchase')?.arms ?? {});
      return Math.round(arms.reduce((sum, arm) => sum + arm.units * arm.mean, 0));
    };
    await eventually(async () => {
      const body = (await request(server, 'GET', resultsPath, { token: user.token })).body;
      return body?.units === 400 && convertedUnits(body) === purchases;
    }, 'results over the 400 units and their purchases', 30_000);
    await page.reload();
    await results.getByText(/400 units exposed/).waitFor();
    await results.getByText(/^on raised Purchases by \+[\d.]+ %, 95 % CI \+[\d.]+ % to \+[\d.]+ %\./).waitFor();
    await results.getByRole('img', { name: 'Purchases: 95 % intervals of each arm against off, relative' }).waitFor();
    await checkA11y(page, 'experiment, results from the server');
    // The units export: one row per exposed unit, fetched with the login token.
    const [download] = await Promise.all([page.waitForEvent('download'), results.getByRole('button', { name: 'Download units (CSV)' }).click()]);
    const csv = readFileSync(await download.path(), 'utf8');
    assert.equal(csv.trim().split('\n').length, 401, 'a header and 400 units');
    assert.match(csv.split('\n')[0] ?? '', /^unit,arm,first_exposure/);

    // Every notice on a fixed answer: the words, the intervals, the warnings.
    const metricIds = Object.fromEntries(((await request(server, 'GET', `/api/projects/${project.id}/metrics`, { token: user.token })).body as { id: string; key: string }[]).map((metric) => [metric.key, metric.id]));
    await page.route('**/experiments/*/results', (route) => route.fulfill({ status: 200, contentType: 'application/json', body: JSON.stringify(withMetricIds(FIXED_RESULTS, metricIds)) }));
    await page.reload();
    await results.getByText('on raised Purchases by +4.1 %, 95 % CI +1.2 % to +7.0 %.').waitFor();
    await results.getByText('on made no clear difference to Errors (−1.0 %, 95 % CI −5.0 % to +3.0 %).').waitFor();
    await results.getByRole('note', { name: 'Sample ratio mismatch' }).waitFor();
    await results.getByRole('note', { name: 'Units in more than one arm' }).getByText('12 units (1.2 %) saw more than one arm').waitFor();
    await results.getByText('Not enough data yet.').waitFor();
    const chart = results.getByRole('img', { name: 'Purchases: 95 % intervals of each arm against off, relative' });
    assert.match((await chart.getAttribute('aria-describedby')) ?? '', /words/, 'the chart is described by the sentences');
    await checkA11y(page, 'experiment, results with every warning');
    if (shots) await screenshots(shots, user.token, [`/projects/${project.id}/metrics`, `/projects/${project.id}/experiments?env=production`, new URL(experimentUrl).pathname], FIXED_RESULTS, metricIds);

    // Stopped with a decision and a note.
    const stop = page.getByRole('button', { name: 'Stop Checkout test' });
    dialog = await dialogByKeyboard(page, stop, 'Stop Checkout test?');
    await dialog.getByLabel('Decision').selectOption({ label: 'Ship on' });
    await dialog.getByLabel('Note (optional)').fill('Purchases up, errors flat.');
    await checkA11y(page, 'stop experiment dialog');
    await dialog.getByRole('button', { name: 'Stop experiment' }).click();
    await dialog.waitFor({ state: 'detached' });
    await page.getByRole('heading', { name: /Checkout test Stopped/, level: 2 }).waitFor();
    await page.getByText('Purchases up, errors flat.').waitFor();
    await timeline.getByRole('listitem').filter({ hasText: 'Experiment stopped, decision: ship on' }).waitFor();
    const stored = await request(server, 'GET', new URL(experimentUrl).pathname.replace('/projects/', '/api/projects/').replace(/\/experiments\/([^/]+)\/([^/]+)$/, '/environments/$1/experiments/$2'), { token: user.token });
    assert.equal(stored.body.status, 'stopped');
    assert.equal(stored.body.decision, 'on');
    await checkA11y(page, 'experiment, stopped');
    await page.unrouteAll();

    // The grouped navigation on a 360 px phone: folded behind one button, opened and used by keyboard.
    await page.setViewportSize({ width: 360, height: 760 });
    const toggle = nav.getByRole('button', { name: 'Sections, showing Experiments' });
    await toggle.waitFor();
    assert.equal(await toggle.getAttribute('aria-expanded'), 'false');
    assert.ok(!(await nav.getByRole('link', { name: 'Metrics', exact: true }).isVisible()), 'folded: the links are out of sight');
    await press(toggle);
    assert.equal(await toggle.getAttribute('aria-expanded'), 'true');
    for (const name of ['Flags', 'Experiments', 'Metrics', 'Audit log', 'Settings']) {
      const box = await nav.getByRole('link', { name, exact: true }).boundingBox();
      assert.ok(box && box.x >= 0 && box.x + box.width <= 360 && box.height >= 24, `${name} is within a phone's width and big enough to tap: ${JSON.stringify(box)}`);
    }
    assert.ok(await page.evaluate(() => document.documentElement.scrollWidth <= 360), 'nothing runs past the phone\'s width');
    await checkA11y(page, 'navigation, opened on a phone');
    // Escape from a link inside folds it and gives the focus back to the button.
    await tabTo(page, nav.getByRole('link', { name: 'Flags', exact: true }));
    await page.keyboard.press('Escape');
    assert.equal(await toggle.getAttribute('aria-expanded'), 'false', 'Escape folds it');
    await focusReturnsTo(page, toggle);
    await page.keyboard.press('Enter');
    await press(nav.getByRole('link', { name: 'Metrics', exact: true }));
    await page.getByRole('heading', { name: 'Metrics', level: 2 }).waitFor();
    await nav.getByRole('button', { name: 'Sections, showing Metrics', expanded: false }).waitFor();
    await page.setViewportSize({ width: 1280, height: 900 });

    // A stopped experiment can be deleted; the list is empty again.
    await page.goto(experimentUrl);
    const remove = page.getByRole('button', { name: 'Delete Checkout test' });
    dialog = await dialogByKeyboard(page, remove, 'Delete Checkout test?');
    await dialog.getByRole('button', { name: 'Delete experiment' }).click();
    await page.getByRole('heading', { name: 'No experiments in Production yet' }).waitFor();
  } catch (error) {
    throw await failureReport(page, 'experiments', error);
  }
  assert.deepEqual(consoleErrors, [], 'no console errors but the deliberate refusals');
  await context.close();
});

/** The fixed answer with the project's metric ids (the results name metrics by id). */
function withMetricIds(results: typeof FIXED_RESULTS, ids: Record<string, string>) {
  return { ...results, metrics: results.metrics.map((metric) => ({ ...metric, metric_id: ids[metric.key] ?? metric.metric_id })) };
}

/** The pages, desktop and phone, light and dark; the experiment with the fixed results; the phone's navigation open too. */
async function screenshots(dir: string, token: string, [metrics, experiments, experiment]: string[], results: typeof FIXED_RESULTS, ids: Record<string, string>) {
  await forEachScreenshotView(dir, browser, async (page: Page, view) => {
    await page.route('**/experiments/*/results', (route) => route.fulfill({ status: 200, contentType: 'application/json', body: JSON.stringify(withMetricIds(results, ids)) }));
    await signIn(page, server.url, token);
    for (const [name, path] of [['metrics', metrics], ['experiments', experiments], ['experiment', experiment]] as const) {
      await page.goto(server.url + path);
      await page.waitForLoadState('networkidle');
      await page.screenshot({ path: join(dir, `${name}-${view.suffix}.png`), fullPage: view.fullPage });
    }
    if (view.fullPage) {
      await page.getByRole('button', { name: 'Stop Checkout test' }).click();
      await page.getByRole('dialog', { name: 'Stop Checkout test?' }).getByLabel('Decision').selectOption({ label: 'Ship on' });
      await page.screenshot({ path: join(dir, `experiment-stop-${view.suffix}.png`) });
      await page.keyboard.press('Escape');
      await page.goto(server.url + experiments);
      await page.getByRole('button', { name: 'New experiment' }).click();
      const dialog = page.getByRole('dialog', { name: 'New experiment' });
      await dialog.getByLabel('Flag').selectOption('new_checkout');
      await dialog.getByLabel('Name').fill('Shorter checkout form');
      await dialog.getByRole('checkbox', { name: /Purchases/ }).check();
      await dialog.getByRole('checkbox', { name: /Errors/ }).check();
      await dialog.getByLabel('Role of Errors').selectOption('guardrail');
      await page.screenshot({ path: join(dir, `experiment-new-${view.suffix}.png`) });
    } else {
      // The phone's viewport holds the head of the page: the results are taken on their own.
      await page.getByRole('region', { name: 'Results' }).screenshot({ path: join(dir, `experiment-results-${view.suffix}.png`) });
      await page.getByRole('button', { name: /^Sections, showing/ }).click();
      await page.screenshot({ path: join(dir, `project-nav-${view.suffix}.png`) });
    }
  });
}
