/** Debian's Chromium driven by playwright-core (never a downloaded browser), and a test server with a mailbox. */
import { existsSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { chromium, type Browser, type Page } from 'playwright-core';
import { SMTPServer } from 'smtp-server';

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

export interface Mailbox {
  port: number;
  /** The decoded text of every message to the address. */
  to(address: string): string[];
  close(): Promise<void>;
}

/** An SMTP server inside the test: the server's reset emails arrive here. */
export async function startMailbox(): Promise<Mailbox> {
  const messages: { to: string[]; text: string }[] = [];
  const smtp = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS'],
    logger: false,
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on('data', (chunk: Buffer) => chunks.push(chunk));
      stream.on('end', () => {
        // Soft line breaks and =XX escapes of quoted-printable bodies.
        const text = Buffer.concat(chunks)
          .toString('utf8')
          .replace(/=\r?\n/g, '')
          .replace(/=([0-9A-F]{2})/g, (_, hex: string) => String.fromCharCode(parseInt(hex, 16)));
        messages.push({ to: session.envelope.rcptTo.map((rcpt) => rcpt.address.toLowerCase()), text });
        callback();
      });
    },
  });
  await new Promise<void>((resolve, reject) => {
    smtp.once('error', reject);
    smtp.listen(0, '127.0.0.1', () => resolve());
  });
  const { port } = smtp.server.address() as AddressInfo;
  return {
    port,
    to: (address) => messages.filter((mail) => mail.to.includes(address.toLowerCase())).map((mail) => mail.text),
    close: () => new Promise<void>((resolve) => smtp.close(() => resolve())),
  };
}
