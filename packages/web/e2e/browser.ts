/** Debian's Chromium driven by playwright-core (never a downloaded browser), and axe-core. The server's emails arrive in its test mailbox (harness.ts). */
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { after, before } from 'node:test';
import type { AxeResults, Result, RunOptions } from 'axe-core';
import { chromium, type Browser, type BrowserContext, type Locator, type Page } from 'playwright-core';
import { startServer, type TestServer } from '@guidon/server/dist/tests/harness.js';

export const CHROMIUM = process.env.GUIDON_CHROMIUM ?? '/usr/bin/chromium';
export const hasChromium = () => existsSync(CHROMIUM);

export function launch(): Promise<Browser> {
  return chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking'] });
}

/** axe-core's browser bundle, evaluated in the page by the test (never served by the dashboard). */
const axeSource = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');
/** WCAG 2.0 and 2.1, A and AA, and axe's best practices (heading order, landmarks, …). */
const axeOptions: RunOptions = { runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'best-practice'] }, resultTypes: ['violations'] };
/** Every page is measured at both widths in both themes: layouts and colours differ between them. */
const a11yViews = [
  { name: '1280 px light', width: 1280, height: 900, colorScheme: 'light' },
  { name: '360 px dark', width: 360, height: 760, colorScheme: 'dark' },
  { name: '1280 px dark', width: 1280, height: 900, colorScheme: 'dark' },
  { name: '360 px light', width: 360, height: 760, colorScheme: 'light' },
] as const;

const describe = (view: string, violation: Result) =>
  `${view}: ${violation.id} (${violation.impact}) ${violation.help}\n` +
  violation.nodes.map((node) => `    ${node.target.join(' ')}: ${node.failureSummary?.split('\n').slice(1).join(' ').trim() ?? ''}`).join('\n');

/**
 * axe-core on the page as it is now (a dialog open, an error shown…), at both widths in both
 * themes; the page is given back at its own size and theme. Throws on a serious or critical
 * violation; prints moderate and minor ones. The script goes in through the DevTools protocol,
 * which the page's Content-Security-Policy does not govern, so the context keeps its CSP and the
 * walk still sees a page that breaks it.
 */
export async function checkA11y(page: Page, label: string): Promise<void> {
  const size = page.viewportSize();
  const dark = await page.evaluate(() => matchMedia('(prefers-color-scheme: dark)').matches);
  const serious: string[] = [];
  try {
    for (const view of a11yViews) {
      await page.setViewportSize({ width: view.width, height: view.height });
      await page.emulateMedia({ colorScheme: view.colorScheme });
      // A frame for the new layout and colours.
      await page.evaluate(() => new Promise((resolve) => requestAnimationFrame(() => requestAnimationFrame(resolve))));
      if (!(await page.evaluate(() => 'axe' in window))) await page.evaluate(axeSource);
      const results = (await page.evaluate((options) => (window as unknown as { axe: { run(context: Document, options: unknown): Promise<unknown> } }).axe.run(document, options), axeOptions)) as AxeResults;
      for (const violation of results.violations) {
        if (violation.impact === 'serious' || violation.impact === 'critical') serious.push(describe(view.name, violation));
        else console.log(`a11y, ${label}, ${describe(view.name, violation)}`);
      }
    }
  } finally {
    if (size) await page.setViewportSize(size);
    await page.emulateMedia({ colorScheme: dark ? 'dark' : 'light' });
  }
  if (serious.length > 0) throw new Error(`a11y, ${label}: ${serious.length} serious or critical violations\n${serious.join('\n')}`);
}

/** The element that has the focus is inside the given one (or is it). */
const holdsFocus = (element: Locator) => element.evaluate((node) => node.contains(document.activeElement));

/**
 * A dialog opened from the keyboard (Enter on the button that opens it): the focus moves into it,
 * Tab and Shift+Tab go round inside it, Escape closes it and the focus is back on that button.
 * Then it is opened again the same way and answered, for the walk to fill in.
 */
export async function dialogByKeyboard(page: Page, opener: Locator, name: string): Promise<Locator> {
  const dialog = page.getByRole('dialog', { name });
  const open = async () => {
    await opener.focus();
    await page.keyboard.press('Enter');
    await dialog.waitFor();
    await page.waitForFunction((node) => node?.contains(document.activeElement), await dialog.elementHandle()).catch(async () => {
      throw new Error(`the focus moves into the dialog "${name}" (it is on ${await describeFocus(page)})`);
    });
  };
  await open();
  // More presses than the dialog has stops: a focus that left it would show.
  const stops = await dialog.evaluate((node) => node.querySelectorAll('a[href], button:not([disabled]), input:not([disabled]), select:not([disabled]), textarea:not([disabled]), [tabindex="0"]').length);
  for (const key of ['Tab', 'Shift+Tab']) {
    for (let i = 0; i <= stops; i++) {
      await page.keyboard.press(key);
      if (!(await holdsFocus(dialog))) assert.fail(`${key} keeps the focus in the dialog "${name}" (press ${i + 1}; the focus is on ${await describeFocus(page)})`);
    }
  }
  await page.keyboard.press('Escape');
  await dialog.waitFor({ state: 'detached' });
  await focusReturnsTo(page, opener);
  await open();
  return dialog;
}

/** Waits until the focus is on the element (a closed dialog gives it back to what opened it). */
export async function focusReturnsTo(page: Page, element: Locator): Promise<void> {
  const target = await element.elementHandle();
  await page.waitForFunction((node) => document.activeElement === node, target).catch(async () => {
    throw new Error(`the focus should be on ${await target?.evaluate((node) => node.outerHTML.slice(0, 120))}, it is on ${await describeFocus(page)}`);
  });
}

const describeFocus = (page: Page) => page.evaluate(() => document.activeElement?.outerHTML.slice(0, 120) ?? 'nothing');

/** Console errors and uncaught exceptions of a page, each with the URL it happened on. */
export function watchConsole(page: Page, allowed: () => RegExp | null = () => null): string[] {
  const errors: string[] = [];
  page.on('console', (message) => {
    if (message.type() !== 'error') return;
    const text = message.text();
    if (allowed()?.test(text)) return;
    errors.push(`${page.url()}: ${text}`);
  });
  page.on('pageerror', (error) => errors.push(`${page.url()}: ${error.message}`));
  return errors;
}

/** A walk file's server (started with `env`) and Chromium: up before its tests, closed after; `started` receives them. */
export function serverAndBrowser(env: Record<string, string>, started: (server: TestServer, browser: Browser) => void): void {
  let server: TestServer | undefined;
  let browser: Browser | undefined;
  before(async () => {
    assert.ok(hasChromium(), 'Chromium is installed (apt-get install chromium)');
    server = await startServer(env);
    browser = await launch();
    started(server, browser);
  });
  after(async () => {
    await browser?.close();
    await server?.close();
  });
}

/** A desktop page for a walk, allowed to use the clipboard (copy buttons, pasted lists). */
export async function walkPage(browser: Browser, serverUrl: string): Promise<{ context: BrowserContext; page: Page }> {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: serverUrl });
  const page = await context.newPage();
  page.setDefaultTimeout(10_000);
  return { context, page };
}

/** Signs the page in with a login token (an empty one signs it out), as the dashboard keeps it. */
export async function signIn(page: Page, serverUrl: string, token: string): Promise<void> {
  await page.goto(serverUrl + '/login');
  await page.evaluate((value) => (value ? localStorage.setItem('guidon.token', value) : localStorage.removeItem('guidon.token')), token);
}

/** A walk's failure with what the page showed when it failed: a screenshot (`guidon-<name>-failure.png`) and its alerts. */
export async function failureReport(page: Page, name: string, error: unknown): Promise<Error> {
  const shot = join(process.env.TMPDIR ?? '/tmp', `guidon-${name}-failure.png`);
  await page.screenshot({ path: shot }).catch(() => undefined);
  const alerts = (await page.getByRole('alert').allTextContents().catch(() => [])).join(' | ');
  const focus = await describeFocus(page).catch(() => 'unknown');
  return new Error(`${(error as Error).message}\nat ${page.url()} (screenshot ${shot}); alerts: ${alerts || 'none'}; focus on ${focus}`);
}

/**
 * Screenshots are taken on desktop and phone, light and dark: `shoot` gets a fresh page in each
 * view, the file-name suffix of that view and whether to take the full page (desktop).
 */
export async function forEachScreenshotView(dir: string, browser: Browser, shoot: (page: Page, view: { suffix: string; fullPage: boolean }) => Promise<void>): Promise<void> {
  mkdirSync(dir, { recursive: true });
  const variants = [
    { name: 'desktop', viewport: { width: 1280, height: 860 }, isMobile: false },
    { name: 'phone', viewport: { width: 360, height: 760 }, isMobile: true },
  ];
  for (const variant of variants) {
    for (const colorScheme of ['light', 'dark'] as const) {
      const context = await browser.newContext({ viewport: variant.viewport, isMobile: variant.isMobile, colorScheme, deviceScaleFactor: 1 });
      try {
        await shoot(await context.newPage(), { suffix: `${variant.name}-${colorScheme}`, fullPage: variant.name === 'desktop' });
      } finally {
        await context.close();
      }
    }
  }
}

/**
 * Presses Tab until the focus is on the element, as a keyboard user reaches a control (Shift+Tab
 * when it comes before the focus in the document); fails after `most` presses, saying where the focus is.
 * From the top of a project page that is the header, the thirteen sections of the sidebar, then the page.
 */
export async function tabTo(page: Page, element: Locator, most = 90): Promise<void> {
  const target = await element.elementHandle();
  const on = () => page.evaluate((node) => document.activeElement === node, target);
  const before = await page.evaluate((node) => !!(node && document.activeElement && node.compareDocumentPosition(document.activeElement) & Node.DOCUMENT_POSITION_FOLLOWING), target);
  const key = before ? 'Shift+Tab' : 'Tab';
  for (let i = 0; i < most && !(await on()); i++) await page.keyboard.press(key);
  if (!(await on())) assert.fail(`${key} reaches ${await target?.evaluate((node) => node.outerHTML.slice(0, 120))} within ${most} presses (the focus is on ${await describeFocus(page)})`);
}

/** Presses the key (an arrow on a focused select or radio group) until `done` holds; fails after `most` presses. */
export async function pressUntil(page: Page, key: string, done: () => Promise<boolean>, what: string, most = 30): Promise<void> {
  for (let i = 0; i < most; i++) {
    if (await done()) return;
    await page.keyboard.press(key);
  }
  if (!(await done())) assert.fail(`${key} reaches ${what} within ${most} presses (the focus is on ${await describeFocus(page)})`);
}

/** The option of the focused <select> with this text chosen with the arrow keys (down, then up if it was above). */
export async function selectByKeyboard(page: Page, select: Locator, label: string): Promise<void> {
  const chosen = () => select.evaluate((node, text) => (node as HTMLSelectElement).selectedOptions[0]?.textContent === text, label);
  const above = await select.evaluate((node, text) => {
    const element = node as HTMLSelectElement;
    return Array.from(element.options).findIndex((option) => option.textContent === text) < element.selectedIndex;
  }, label);
  await pressUntil(page, above ? 'ArrowUp' : 'ArrowDown', chosen, `the option "${label}"`, 40);
}

/** Tab and Shift+Tab keep the focus inside the open dialog as it is now (a builder grown since it opened); the focus is put back where it was. */
export async function focusStaysIn(page: Page, dialog: Locator, label: string): Promise<void> {
  const start = await page.evaluateHandle(() => document.activeElement);
  const stops = await dialog.evaluate((node) => node.querySelectorAll('a[href], button:not([disabled]), input:not([disabled]), select:not([disabled]), textarea:not([disabled]), [tabindex="0"]').length);
  for (const key of ['Tab', 'Shift+Tab']) {
    for (let i = 0; i <= stops; i++) {
      await page.keyboard.press(key);
      if (!(await holdsFocus(dialog))) assert.fail(`${key} keeps the focus in the dialog (${label}; press ${i + 1}; the focus is on ${await describeFocus(page)})`);
    }
  }
  await start.evaluate((node) => (node as HTMLElement | null)?.focus());
}

/** Waits until the focus is on something other than <body> (an action that removed the focused element must place it). */
export async function focusIsPlaced(page: Page, what: string): Promise<string> {
  await page.waitForFunction(() => document.activeElement !== null && document.activeElement !== document.body).catch(() => {
    throw new Error(`the focus is lost to <body> after ${what}`);
  });
  return page.evaluate(() => document.activeElement?.outerHTML.slice(0, 120) ?? '');
}
