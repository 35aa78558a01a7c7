/** A real SMTP server, started in the test, that keeps every message it receives (smtp-server). */
import type { AddressInfo } from 'node:net';
import { SMTPServer } from 'smtp-server';

export interface Mail {
  to: string[];
  subject: string;
  raw: string;
  /** The decoded text of every part. */
  text: string;
}

export interface Mailbox {
  port: number;
  /** For SMTP_URL. */
  url: string;
  messages: Mail[];
  to(address: string): Mail[];
  /** Waits until `count` messages have reached `address`, and returns them. */
  waitFor(address: string, count?: number): Promise<Mail[]>;
  close(): Promise<void>;
}

function decodeQuotedPrintable(body: string): string {
  const bytes = body.replace(/=\r?\n/g, '').replace(/=([0-9A-Fa-f]{2})/g, (_, hex: string) => String.fromCharCode(parseInt(hex, 16)));
  return Buffer.from(bytes, 'latin1').toString('utf8');
}

/** RFC 2047 encoded words (=?utf-8?Q?…?= and =?utf-8?B?…?=) in a header. */
function decodeHeader(value: string): string {
  return value.replace(/=\?[^?]+\?([QqBb])\?([^?]*)\?=\s*/g, (_, kind: string, text: string) =>
    kind.toUpperCase() === 'B' ? Buffer.from(text, 'base64').toString('utf8') : decodeQuotedPrintable(text.replace(/_/g, ' ')),
  );
}

function headersOf(entity: string): { head: string; body: string } {
  const split = /\r?\n\r?\n/.exec(entity);
  const head = (split ? entity.slice(0, split.index) : entity).replace(/\r?\n[ \t]+/g, ' ');
  return { head, body: split ? entity.slice(split.index + split[0].length) : '' };
}

const header = (head: string, name: string) => new RegExp(`^${name}:[ \\t]*(.*)$`, 'im').exec(head)?.[1]?.trim() ?? '';

/** Just enough MIME: unfolds headers, walks multipart bodies, decodes quoted-printable and base64. */
export function mimeText(entity: string): string {
  const { head, body } = headersOf(entity);
  const type = header(head, 'content-type');
  const boundary = /boundary="?([^";]+)"?/i.exec(type)?.[1];
  if (/^multipart\//i.test(type) && boundary) {
    return body
      .split(`--${boundary}`)
      .slice(1)
      .filter((part) => !part.startsWith('--'))
      .map((part) => mimeText(part.replace(/^\r?\n/, '')))
      .join('\n');
  }
  const encoding = header(head, 'content-transfer-encoding').toLowerCase();
  if (encoding === 'quoted-printable') return decodeQuotedPrintable(body);
  if (encoding === 'base64') return Buffer.from(body.replace(/\s+/g, ''), 'base64').toString('utf8');
  return body;
}

export async function startMailbox(): Promise<Mailbox> {
  const messages: Mail[] = [];
  const waiters = new Set<() => void>();
  const smtp = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS'],
    logger: false,
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on('data', (chunk: Buffer) => chunks.push(chunk));
      stream.on('end', () => {
        const raw = Buffer.concat(chunks).toString('utf8');
        const subject = decodeHeader(header(headersOf(raw).head, 'subject'));
        messages.push({ to: session.envelope.rcptTo.map((rcpt) => rcpt.address.toLowerCase()), subject, raw, text: mimeText(raw) });
        waiters.forEach((wake) => wake());
        callback();
      });
    },
  });
  await new Promise<void>((resolve, reject) => {
    smtp.once('error', reject);
    smtp.listen(0, '127.0.0.1', () => resolve());
  });
  const { port } = smtp.server.address() as AddressInfo;
  const to = (address: string) => messages.filter((mail) => mail.to.includes(address.toLowerCase()));
  return {
    port,
    url: `smtp://127.0.0.1:${port}`,
    messages,
    to,
    waitFor(address, count = 1) {
      if (to(address).length >= count) return Promise.resolve(to(address));
      return new Promise<Mail[]>((resolve, reject) => {
        const timer = setTimeout(() => {
          waiters.delete(wake);
          reject(new Error(`timed out waiting for ${count} email(s) to ${address} (got ${to(address).length})`));
        }, 10_000);
        const wake = () => {
          if (to(address).length < count) return;
          clearTimeout(timer);
          waiters.delete(wake);
          resolve(to(address));
        };
        waiters.add(wake);
      });
    },
    close: () => new Promise<void>((resolve) => smtp.close(() => resolve())),
  };
}

/** The token of the first link in the mail whose path is `path` (e.g. /verify-email, /register?invitation=). */
export function linkToken(mail: Mail, path: string, parameter = 'token'): string {
  const link = (mail.text.match(/https?:\/\/[^\s"'<>]+/g) ?? [])
    .map((found) => found.replace(/[.,;:!?)]+$/, '')) // the end of a sentence is not part of the link
    .filter((found) => URL.canParse(found))
    .map((found) => new URL(found))
    .find((url) => url.pathname === path && url.searchParams.has(parameter));
  const token = link?.searchParams.get(parameter);
  if (!token) throw new Error(`no ${path}?${parameter}= link in the email:\n${mail.text}`);
  return token;
}
