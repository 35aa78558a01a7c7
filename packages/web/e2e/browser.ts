/** Debian's Chromium driven by playwright-core (never a downloaded browser). The server's emails arrive in its test mailbox (harness.ts). */
import { existsSync } from 'node:fs';
import { chromium, type Browser, type Page } from 'playwright-core';

export const CHROMIUM = process.env.GUIDON_CHROMIUM ?? '/usr/bin/chromium';
export const hasChromium = () => existsSync(CHROMIUM);

export function launch(): Promise<Browser> {
  return chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking'] });
}

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
