import nodemailer from 'nodemailer';
import type { FastifyBaseLogger } from 'fastify';

export interface Mailer {
  sendPasswordReset(to: string, link: string): Promise<void>;
  /** Contract §8: the link opens the dashboard's sign-up with the address filled in. */
  sendInvitation(to: string, link: string, projectName: string): Promise<void>;
  close(): void;
}

/** Sends through SMTP_URL; without it the link is logged with a warning (development setups). */
export function createMailer(smtpUrl: string | null, from: string, log: FastifyBaseLogger): Mailer {
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
