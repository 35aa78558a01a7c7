import nodemailer from 'nodemailer';
import type { FastifyBaseLogger } from 'fastify';

export interface Mailer {
  sendPasswordReset(to: string, link: string): Promise<void>;
  /** Contract §8: the link opens the dashboard's sign-up with the address filled in. */
  sendInvitation(to: string, link: string, projectName: string): Promise<void>;
  close(): void;
}

/** Whether a URL names this machine: links to it in an email open nothing for whoever reads it elsewhere. */
function pointsHere(url: string): boolean {
  const host = new URL(url).hostname;
  return host === 'localhost' || host.endsWith('.localhost') || host === '[::1]' || host.startsWith('127.');
}

/**
 * Sends through SMTP_URL; without it the link is logged with a warning (development setups).
 * With it, a PUBLIC_URL left at its default (localhost) is said at start: every link it sends would be dead.
 */
export function createMailer(smtpUrl: string | null, from: string, publicUrl: string, log: FastifyBaseLogger): Mailer {
  if (!smtpUrl) {
    return {
      async sendPasswordReset(to, link) {
        log.warn({ to, link }, 'SMTP_URL is not set: password reset link logged instead of emailed');
      },
      async sendInvitation(to, link, projectName) {
        log.warn({ to, link, projectName }, 'SMTP_URL is not set: invitation link logged instead of emailed');
      },
      close() {},
    };
  }
  if (pointsHere(publicUrl)) log.warn({ publicUrl }, 'PUBLIC_URL points to this machine: the links in password-reset and invitation emails will not open for their readers; set PUBLIC_URL to the address users reach');
  const transport = nodemailer.createTransport(smtpUrl);
  return {
    async sendPasswordReset(to, link) {
      await transport.sendMail({
        from,
        to,
        subject: 'Reset your Guidon password',
        text: `Someone asked to reset the password of your Guidon account.\n\nOpen this link within 30 minutes to choose a new password:\n${link}\n\nIf it was not you, ignore this email: your password stays as it is.\n`,
      });
    },
    async sendInvitation(to, link, projectName) {
      await transport.sendMail({
        from,
        to,
        subject: `You are invited to ${projectName} on Guidon`,
        text: `You have been invited to the project "${projectName}" on Guidon.\n\nCreate your account with this address to join it:\n${link}\n`,
      });
    },
    close: () => transport.close(),
  };
}
