/**
 * A guarded release from the flag page (docs/releases.md, "In the dashboard"), walked through in
 * Debian's Chromium by role and accessible name, on the real server and its releaser: the start
 * form opened and filled by keyboard (a bad list of steps and no guardrail refused in the page),
 * the release started at 5 % with a check every 10 s, then exposures and errors sent to the
 * server's intake (POST /sdk/v1/events) for units the flag's own bucketing puts in the treatment
 * (bucket < 5) and in the comparison group (bucket 50–54): errors for 70 % of the treatment, 5 %
 * of the control. The page, reading the release again by itself, shows it rolled back with the
 * server's explanation, the guardrail's figures, chart and table, and the flag off again. Then a
 * second release is paused, resumed and aborted from the keyboard, the focus kept on the button,
 * and a start the server refuses (the flag on above the first step) is shown in its words. A long
 * completed release is read on a fixed answer (the latest eight checks, then all; a sample-ratio
 * mismatch; steps above 50 % not monitored). A
 * second walk releases a variant where changes need approval: it goes into the draft change
 * request. No console error but the deliberate refusal; axe finds no serious violation in any state.
 *
 * GUIDON_SCREENSHOTS=<dir> also saves the rolled-back release's section (desktop and phone, light
 * and dark) and the start form.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import type { Browser, Locator, Page } from 'playwright-core';
import { bucketOf } from '@guidon/engine';
import { flagsPath, newFlag, newProject, newUser, request, type TestServer } from '@guidon/server/dist/tests/harness.js';
import { checkA11y, dialogByKeyboard, failureReport, focusReturnsTo, forEachScreenshotView, serverAndBrowser, signIn, tabTo, walkPage, watchConsole } from './browser.js';

let server: TestServer;
let browser: Browser;
serverAndBrowser({ PUBLIC_URL: 'http://guidon.test' }, (started, chromium) => {
  server = started;
  browser = chromium;
});

const shots = process.env.GUIDON_SCREENSHOTS;
const FLAG = 'new_search';

/** `count` units whose bucket of the flag is in [from, to), by the engine's own hash. */
function unitsIn(from: number, to: number, count: number, prefix: string): string[] {
  const units: string[] = [];
  for (let i = 0; units.length < count; i++) {
    const unit = `${prefix}-${i}`;
    const bucket = bucketOf(FLAG, unit);
    if (bucket >= from && bucket < to) units.push(unit);
  }
  return units;
}

test('a person starts a guarded release that rolls itself back when errors rise', { timeout: 400_000 }, async () => {
  const user = await newUser(server, 'releaser');
  const project = await newProject(server, user, 'Release shop');
  const flag = await newFlag(server, user, project, { key: FLAG, name: 'New search', enabled: false });
  const metric = await request(server, 'POST', `/api/projects/${project.id}/metrics`, { token: user.token, body: { key: 'errors', name: 'Errors', event: 'error', kind: 'conversion', better: 'lower' } });
  assert.equal(metric.status, 201, metric.text);
  const flagUrl = `${server.url}/projects/${project.id}/flags/${project.production}/${flag.id}`;
  const releasesPath = `${flagsPath(project)}/${flag.id}/releases`;

  const { context, page } = await walkPage(browser, server.url);
  // Only the deliberate refusal may show the browser's "failed to load resource" error.
  let allowed: RegExp | null = null;
  const consoleErrors = watchConsole(page, () => allowed);
  const press = async (control: Locator, key = 'Enter') => {
    await tabTo(page, control);
    await page.keyboard.press(key);
  };

  try {
    await signIn(page, server.url, user.token);
    await page.goto(flagUrl);
    const section = page.getByRole('region', { name: 'Guarded release' });
    await section.getByText(`No release of ${FLAG} in Production yet.`).waitFor();
    await checkA11y(page, 'flag page, no release');

    // The form, behind its button, opened and filled by keyboard; the page refuses what the server would.
    const opener = section.getByRole('button', { name: 'Start a guarded release' });
    await press(opener);
    assert.equal(await opener.getAttribute('aria-expanded'), 'true');
    const form = section.getByRole('form', { name: 'A new guarded release' });
    const steps = form.getByLabel('Steps (%)');
    await tabTo(page, steps);
    await page.keyboard.press('ControlOrMeta+A');
    await page.keyboard.type('5, 10, 25');
    await press(form.getByRole('button', { name: 'Start release' }));
    await form.getByRole('alert').filter({ hasText: 'the last 100' }).waitFor();
    await form.getByRole('alert').filter({ hasText: 'Pick at least one guardrail metric' }).waitFor();
    assert.equal(await steps.getAttribute('aria-invalid'), 'true');
    await checkA11y(page, 'start form, with errors');

    await tabTo(page, steps);
    await page.keyboard.press('ControlOrMeta+A');
    await page.keyboard.type('5, 10, 25, 50, 100');
    for (const [label, amount] of [['Hold at each step', '10'], ['Check every', '10']] as const) {
      await tabTo(page, form.getByLabel(label, { exact: true }));
      await page.keyboard.press('ControlOrMeta+A');
      await page.keyboard.type(amount);
      await form.getByLabel(`Unit of ${label.toLowerCase()}`).selectOption({ label: 'seconds' });
    }
    await tabTo(page, form.getByLabel('Units on each side'));
    await page.keyboard.press('ControlOrMeta+A');
    await page.keyboard.type('30');
    await press(form.getByRole('checkbox', { name: /Errors/ }), 'Space');
    const tolerance = form.getByLabel('Tolerance of Errors');
    assert.equal(await tolerance.inputValue(), '0', 'a guardrail picked starts at tolerance 0');
    assert.match((await form.getByText(/^In a share of units with error/).textContent()) ?? '', /percentage point/);
    await checkA11y(page, 'start form, filled in');
    if (shots) await sectionShot(page, section, join(shots, 'release-new-desktop-light.png'));
    await press(form.getByRole('button', { name: 'Start release' }));

    // Running at 5 %: the status has the focus, the stepper marks the first step, the rollout is the release's.
    const status = section.locator('.release-status');
    await status.getByText('Running').waitFor();
    await page.waitForFunction(() => document.activeElement?.classList.contains('release-status'));
    const stepper = section.getByRole('list', { name: 'Steps of the release' });
    assert.equal(await stepper.getByRole('listitem').count(), 5);
    assert.match((await stepper.locator('[aria-current="step"]').textContent()) ?? '', /5 %, current step/);
    await page.getByRole('switch', { name: `${FLAG} in Production` }).and(page.locator('[aria-checked="true"]')).waitFor();
    assert.equal(await page.getByLabel('Rollout percentage', { exact: true }).inputValue(), '5');
    assert.ok(await page.getByLabel('Rollout percentage', { exact: true }).isDisabled(), 'the rollout is the release’s while it runs');
    const refused = await request(server, 'PUT', `${flagsPath(project)}/${flag.id}`, { token: user.token, body: { rollout_percentage: 40 } });
    assert.equal(refused.status, 409, refused.text);
    await checkA11y(page, 'flag page, a running release');

    // Exposures and errors, by the flag's own buckets: 60 units on each side, errors for 70 % of the treatment and 5 % of the control.
    const treatment = unitsIn(0, 5, 60, 'treated');
    const control = unitsIn(50, 55, 60, 'control');
    const sent = await request(server, 'POST', '/sdk/v1/events', {
      sdkKey: project.sdk_key,
      body: {
        environment: 'production',
        exposures: [...treatment.map((unit) => ({ flag: FLAG, unit, arm: 'on' })), ...control.map((unit) => ({ flag: FLAG, unit, arm: 'off' }))],
        events: [...treatment.filter((_, i) => i % 10 < 7), ...control.filter((_, i) => i % 20 === 0)].map((unit) => ({ name: 'error', unit })),
      },
    });
    assert.equal(sent.status, 202, sent.text);

    // The page reads the release again by itself: rolled back, in the server's words.
    await status.getByText('Rolled back').waitFor({ timeout: 120_000 });
    const [stored] = (await request(server, 'GET', releasesPath, { token: user.token })).body as { id: string; status: string; reason: string }[];
    assert.equal(stored?.status, 'rolled_back');
    const release = (await request(server, 'GET', `${releasesPath}/${stored.id}`, { token: user.token })).body as { checks: { decision: string; explanation: string }[] };
    const rollback = release.checks.find((check) => check.decision === 'roll_back');
    assert.ok(rollback, 'a check decided the rollback');
    assert.match(rollback.explanation, /^errors got worse/);
    await status.getByText(rollback.explanation, { exact: false }).waitFor();
    const checks = section.getByRole('list', { name: 'Checks, newest first' });
    await checks.getByRole('listitem').first().filter({ hasText: `Rolled back at 5 %: ${rollback.explanation}` }).waitFor();
    assert.match((await stepper.getByRole('listitem').first().textContent()) ?? '', /rolled back here/);
    assert.equal(await stepper.locator('[aria-current="step"]').count(), 0, 'an ended release has no current step');

    // The flag is back off, and the rollout is the person's again.
    await page.getByRole('switch', { name: `${FLAG} in Production` }).and(page.locator('[aria-checked="false"]')).waitFor();
    const after = await request(server, 'GET', `${flagsPath(project)}/${flag.id}`, { token: user.token });
    assert.equal(after.body.enabled, false, 'the flag is off again');
    assert.ok(!(await page.getByLabel('Rollout percentage', { exact: true }).isDisabled()), 'the rollout is free again');

    // The guardrail: the latest check in words, its bound drawn against the tolerance, over time as a chart and a table.
    const guardrail = section.getByRole('article', { name: /^Errors lower is better/ });
    await guardrail.getByText(/Errors: [\d.]+ per unit with the release against [\d.]+ without it, .* beyond the tolerance \(above \+0\): harmful\./).waitFor();
    await guardrail.getByRole('img', { name: 'Errors at the latest check: the difference and its bound against the tolerance' }).waitFor();
    const chart = guardrail.getByRole('img', { name: 'Errors at each check: the bound of the difference against the tolerance' });
    await chart.locator('canvas').waitFor();
    assert.ok(await chart.getAttribute('aria-describedby'), 'the chart is described in words');
    // The system switching between light and dark draws the chart again, in the other theme's colours (read as it is drawn).
    const dark = await page.evaluate(() => matchMedia('(prefers-color-scheme: dark)').matches);
    const drawnBefore = await chart.locator('canvas').elementHandle();
    await page.emulateMedia({ colorScheme: dark ? 'light' : 'dark' });
    await page.waitForFunction((canvas) => !canvas?.isConnected, drawnBefore);
    await chart.locator('canvas').waitFor();
    await page.emulateMedia({ colorScheme: dark ? 'dark' : 'light' });
    await guardrail.getByText(/^[\d.]+ \(a harm beyond the tolerance smaller than this could go unnoticed at this check\)$/).waitFor();
    await press(guardrail.getByText(/^Figures of Errors at each check/));
    const table = guardrail.getByRole('table', { name: 'Errors at each check, oldest first' });
    await table.getByRole('cell', { name: 'harmful' }).last().waitFor();
    await checkA11y(page, 'flag page, a release rolled back');
    if (shots) await screenshots(shots, user.token, new URL(flagUrl).pathname);

    // A long release on a fixed answer (the route answered by the test): ten checks, the latest
    // eight listed until "Show all"; a sample-ratio mismatch marked; the steps above 50 % not monitored.
    const real = (await request(server, 'GET', `${releasesPath}/${stored.id}`, { token: user.token })).body;
    const figures = real.checks.at(-1).guardrails[0];
    const at = (minute: number) => new Date(Date.parse(real.created_at) + minute * 60_000).toISOString();
    const fixedCheck = (minute: number, step: number, decision: string, explanation: string, srm = false) => ({
      at: at(minute), step, monitored: step <= 50, units: { treatment: 100 * minute, control: 100 * minute }, srm: { p_value: srm ? 0.0004 : 0.6, flagged: srm },
      guardrails: step <= 50 ? [{ ...figures, decision: 'no_harm', bound: -0.01, difference: 0.002, limit: 0, detectable_harm: 0.012 }] : [], decision, explanation,
    });
    const fixed = {
      ...real, status: 'completed', current_step: 4, rollout_percentage: 100, reason: 'Hold passed at 50 % and not monitored above 50 %: raised to 100 %, the release is complete.', ended_at: at(10), next_check_at: null,
      checks: [
        fixedCheck(1, 5, 'wait', 'Holding at 5 %.'), fixedCheck(2, 5, 'advance', 'Hold passed at 5 % and no guardrail showed harm: raised to 10 %.'),
        fixedCheck(3, 10, 'wait', 'Holding at 10 %.', true), fixedCheck(4, 10, 'advance', 'Hold passed at 10 %: raised to 25 %.'),
        fixedCheck(5, 25, 'wait', 'Holding at 25 %.'), fixedCheck(6, 25, 'advance', 'Hold passed at 25 %: raised to 50 %.'),
        fixedCheck(7, 50, 'wait', 'Holding at 50 %.'), fixedCheck(8, 50, 'advance', 'Hold passed at 50 %: raised to 100 %.'),
        fixedCheck(9, 100, 'wait', 'Holding at 100 %.'), fixedCheck(10, 100, 'complete', 'Hold passed at 100 %: the release is complete.'),
      ],
    };
    await page.route(`**/releases/${stored.id}`, (route) => route.fulfill({ status: 200, contentType: 'application/json', body: JSON.stringify(fixed) }));
    await page.reload();
    await status.getByText('Completed').waitFor();
    assert.equal(await stepper.getByText(', done').count(), 5, 'every step done');
    assert.equal(await checks.getByRole('listitem').count(), 8, 'the latest eight checks');
    await checks.getByRole('listitem').first().filter({ hasText: 'Completed at 100 % (not monitored): Hold passed at 100 %' }).waitFor();
    const showAll = section.getByRole('button', { name: 'Show all 10 checks' });
    assert.equal(await showAll.getAttribute('aria-expanded'), 'false');
    await press(showAll);
    assert.equal(await checks.getByRole('listitem').count(), 10);
    await focusReturnsTo(page, section.getByRole('button', { name: 'Show the latest 8 checks', expanded: true }));
    await checks.getByRole('listitem').filter({ hasText: 'Waited at 10 %' }).getByText('sample ratio mismatch').waitFor();
    await section.getByRole('article', { name: /^Errors/ }).getByText(/^At the latest check \(.*, 50 %\): Errors: .* within the tolerance \(not above \+0\): no harm beyond the tolerance\.$/).waitFor();
    await checkA11y(page, 'flag page, a completed release with ten checks');
    await page.unrouteAll();

    // A second release (an hour per step: it stays at 5 %), paused, resumed and aborted by keyboard.
    const second = await request(server, 'POST', releasesPath, { token: user.token, body: { guardrails: [{ metric_id: metric.body.id, tolerance: 0.01 }] } });
    assert.equal(second.status, 201, second.text);
    await page.reload();
    await status.getByText('Running').waitFor();
    await section.getByText('Earlier releases (1)').waitFor();
    const pause = section.getByRole('button', { name: 'Pause release' });
    await press(pause);
    await status.getByText(/Paused at step 1 of 5 \(5 %\): Paused by /).waitFor();
    const resume = section.getByRole('button', { name: 'Resume release' });
    await focusReturnsTo(page, resume);
    assert.match((await stepper.locator('[aria-current="step"]').textContent()) ?? '', /current step, paused/);
    await checkA11y(page, 'flag page, a paused release');
    await page.keyboard.press('Enter');
    await status.getByText('Running').waitFor();
    await focusReturnsTo(page, pause);
    const dialog = await dialogByKeyboard(page, section.getByRole('button', { name: 'Abort release' }), `Abort the release of ${FLAG}?`);
    await checkA11y(page, 'abort dialog');
    await dialog.getByRole('button', { name: 'Abort release' }).click();
    await dialog.waitFor({ state: 'detached' });
    await status.getByText(/Aborted at step 1 of 5 \(5 %\): Aborted by .*: the flag was rolled back\./).waitFor();
    await page.getByRole('switch', { name: `${FLAG} in Production` }).and(page.locator('[aria-checked="false"]')).waitFor();
    // Ended, it can be neither paused nor aborted again; a new one can be started.
    assert.equal(await section.getByRole('button', { name: /Pause release|Resume release|Abort release/ }).count(), 0);
    await section.getByRole('button', { name: 'Start a guarded release' }).waitFor();

    // A flag on above the first step: the page says so beforehand, and the server's refusal is shown in its words.
    const on = await request(server, 'PUT', `${flagsPath(project)}/${flag.id}`, { token: user.token, body: { enabled: true, rollout_percentage: 60 } });
    assert.equal(on.status, 200, on.text);
    await page.reload();
    await press(section.getByRole('button', { name: 'Start a guarded release' }));
    await form.getByText(`${FLAG} is on at 60 % in Production. A release starts from off, or from a rollout no higher than its first step (5 %).`).waitFor();
    await press(form.getByRole('checkbox', { name: /Errors/ }), 'Space');
    allowed = /status of 409/;
    await press(form.getByRole('button', { name: 'Start release' }));
    await form.getByRole('alert').filter({ hasText: `Not started: Flag "${FLAG}" is on at 60 %: a release starts from a flag that is off` }).waitFor();
    await checkA11y(page, 'start form, refused by the server');
    allowed = null;

    // The audit log names the release's own events.
    const audit = await request(server, 'GET', `/api/projects/${project.id}/audit?resource_type=release`, { token: user.token });
    const actions = (audit.body.items as { action: string }[]).map((event) => event.action);
    for (const action of ['release.created', 'release.rolled_back', 'release.paused', 'release.resumed', 'release.aborted']) assert.ok(actions.includes(action), `${action} in the audit log`);
  } catch (error) {
    throw await failureReport(page, 'releases', error);
  }
  assert.deepEqual(consoleErrors, [], 'no console errors');
  await context.close();
});

test('a release of a variant, where changes need approval, goes into the draft change request', { timeout: 200_000 }, async () => {
  const user = await newUser(server, 'reviewed');
  const project = await newProject(server, user, 'Reviewed shop');
  const metric = await request(server, 'POST', `/api/projects/${project.id}/metrics`, { token: user.token, body: { key: 'errors', name: 'Errors', event: 'error', kind: 'count', better: 'lower' } });
  assert.equal(metric.status, 201, metric.text);
  const variants = [
    { key: 'classic', value: 'classic', weight: 1000 },
    { key: 'blue', value: 'blue', weight: 0 },
    { key: 'green', value: 'green', weight: 0 },
  ];
  const flag = await newFlag(server, user, project, { key: 'redesign', name: 'Redesign', enabled: false, variants, off_variant: 'classic' }, project.staging);
  const reviewed = await request(server, 'PUT', `/api/projects/${project.id}/environments/${project.staging}`, { token: user.token, body: { approvals_required: 1 } });
  assert.equal(reviewed.status, 200, reviewed.text);

  const { context, page } = await walkPage(browser, server.url);
  const consoleErrors = watchConsole(page);
  const press = async (control: Locator, key = 'Enter') => {
    await tabTo(page, control);
    await page.keyboard.press(key);
  };
  try {
    await signIn(page, server.url, user.token);
    await page.goto(`${server.url}/projects/${project.id}/flags/${project.staging}/${flag.id}`);
    const section = page.getByRole('region', { name: 'Guarded release' });
    await press(section.getByRole('button', { name: 'Start a guarded release' }));
    const form = section.getByRole('form', { name: 'A new guarded release' });
    const variant = form.getByLabel('Variant to release');
    assert.deepEqual(await variant.locator('option').allTextContents(), ['blue', 'green'], 'every variant but the off one');
    await variant.selectOption('green');
    await press(form.getByRole('checkbox', { name: /Errors/ }), 'Space');
    await tabTo(page, form.getByLabel('Tolerance of Errors'));
    await page.keyboard.press('ControlOrMeta+A');
    await page.keyboard.type('0.05');
    await form.getByText('In error events per unit').waitFor();
    await form.getByText(/Changes to Staging need approval: the release goes into the draft change request/).waitFor();
    await checkA11y(page, 'start form, a variant in a reviewed environment');
    await press(form.getByRole('button', { name: 'Add the release to the request' }));
    await form.getByRole('status').filter({ hasText: 'Added to the draft request: a guarded release of redesign, 5 → 10 → 25 → 50 → 100 %.' }).waitFor();
    const draft = page.getByRole('region', { name: 'Draft change request for Staging' });
    await draft.getByText('redesign: start a guarded release, 5 → 10 → 25 → 50 → 100 %, with one guardrail').waitFor();
    const stored = await page.evaluate((key) => JSON.parse(localStorage.getItem(key) ?? '[]'), `guidon.draft.${project.id}.${project.staging}`);
    assert.deepEqual(stored[0]?.change, {
      op: 'release.create',
      flag_id: flag.id,
      release: { steps: [5, 10, 25, 50, 100], hold_seconds: 3600, check_seconds: 300, min_units: 100, guardrails: [{ metric_id: metric.body.id, tolerance: 0.05 }], treatment: 'green' },
    });
    assert.equal((await request(server, 'GET', `${flagsPath(project, project.staging)}/${flag.id}/releases`, { token: user.token })).body.length, 0, 'nothing started on the server');
    await checkA11y(page, 'a release in the draft');
  } catch (error) {
    throw await failureReport(page, 'releases-reviewed', error);
  }
  assert.deepEqual(consoleErrors, [], 'no console errors');
  await context.close();
});

/** One section of the page; the sticky top bar is let go first, or it would be drawn over the section as the shot scrolls. */
async function sectionShot(page: Page, section: Locator, path: string) {
  await page.evaluate(() => document.querySelector<HTMLElement>('.topbar')?.style.setProperty('position', 'static'));
  await section.screenshot({ path });
}

/** The rolled-back release's section of the flag page, desktop and phone, light and dark. */
async function screenshots(dir: string, token: string, path: string) {
  await forEachScreenshotView(dir, browser, async (page: Page, view) => {
    await signIn(page, server.url, token);
    await page.goto(server.url + path);
    const section = page.getByRole('region', { name: 'Guarded release' });
    await section.locator('canvas').first().waitFor();
    await section.getByText(/^Figures of Errors at each check/).click();
    await page.waitForLoadState('networkidle');
    await sectionShot(page, section, join(dir, `release-${view.suffix}.png`));
  });
}
