import type { FastifyBaseLogger } from 'fastify';
import type { Transporter } from 'nodemailer';

export interface Mailer {
  sendPasswordReset(to: string, link: string): Promise<void>;
  /** The single-use link that proves the address (docs/api.md, Account). */
  sendVerification(to: string, link: string): Promise<void>;
  /** The link (with the invitation's secret) opens the dashboard's sign-up (docs/api.md, Members). */
  sendInvitation(to: string, link: string, projectName: string): Promise<void>;
  /** To a guarded release's creator when it rolled back by itself (docs/releases.md). */
  sendReleaseRolledBack(to: string, release: { flagKey: string; releaseId: string; explanation: string }): Promise<void>;
  close(): void;
}

const MAX_NAME_IN_EMAIL = 60;

/**
 * A project's name as an invitation email quotes it: the owner chose it, and whoever can create a
 * project can invite anyone, so it must not read as the email's own text (issue 18, finding 7).
 * One line (control, format and separator characters become spaces: no new paragraphs, no bidi
 * tricks), at most 60 characters, no double quote to end the quotation early, and nothing a mail
 * client would turn into a link (dots, colons and @ are bracketed: "https[:]//evil[.]example").
 */
export function nameForEmail(name: string): string {
  const oneLine = name.normalize('NFKC').replace(/[\p{C}\p{Z}]+/gu, ' ').trim();
  const short = [...oneLine].length > MAX_NAME_IN_EMAIL ? `${[...oneLine].slice(0, MAX_NAME_IN_EMAIL - 1).join('').trimEnd()}…` : oneLine;
  return short.replace(/[.:@]/g, (character) => `[${character}]`).replaceAll('"', "'") || 'unnamed';
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
      async sendVerification(to, link) {
        log.warn({ to, link }, 'SMTP_URL is not set: email verification link logged instead of emailed');
      },
      async sendInvitation(to, link, projectName) {
        log.warn({ to, link, projectName }, 'SMTP_URL is not set: invitation link logged instead of emailed');
      },
      async sendReleaseRolledBack(to, release) {
        log.warn({ to, ...release }, 'SMTP_URL is not set: a release rolled back; the email to its creator is logged instead');
      },
      close() {},
    };
  }
  if (pointsHere(publicUrl)) log.warn({ publicUrl }, 'PUBLIC_URL points to this machine: the links in password-reset, verification and invitation emails will not open for their readers; set PUBLIC_URL to the address users reach');
  // nodemailer is loaded with the first email, not at start (start-up time: docs/performance.md).
  let made: Promise<Transporter> | undefined;
  const transport = () => (made ??= import('nodemailer').then(({ default: nodemailer }) => nodemailer.createTransport(smtpUrl)));
  return {
    async sendPasswordReset(to, link) {
      await (await transport()).sendMail({
        from,
        to,
        subject: 'Reset your Guidon password',
        text: `Someone asked to reset the password of your Guidon account.\n\nOpen this link within 30 minutes to choose a new password:\n${link}\n\nIf it was not you, ignore this email: your password stays as it is.\n`,
      });
    },
    async sendVerification(to, link) {
      await (await transport()).sendMail({
        from,
        to,
        subject: 'Verify your email address for Guidon',
        text: `Someone created a Guidon account with this email address, or asked for a new verification link.\n\nOpen this link within 24 hours to verify that the address is yours:\n${link}\n\nIf you did not create this account, do not open the link: ignore this email, and the account stays unverified.\n`,
      });
    },
    // Fixed text: the only words the inviter chooses are the project's name, quoted as a name.
    async sendInvitation(to, link, projectName) {
      await (await transport()).sendMail({
        from,
        to,
        subject: 'You are invited to a project on Guidon',
        text: `You are invited to join a project on Guidon, the feature-flag service at this address:\n${publicUrl}\n\nThe project's name, as its owner wrote it: "${nameForEmail(projectName)}"\n\nTo accept, open this link within 7 days and create your account with this email address:\n${link}\n\nIf you already have an account, sign in instead: the invitation waits on your projects page, where you accept or decline it.\nIf you did not expect this invitation, ignore this email: nothing happens unless you accept it.\n`,
      });
    },
    // The flag key and the figures are the server's words; no text a member typed is quoted.
    async sendReleaseRolledBack(to, release) {
      await (await transport()).sendMail({
        from,
        to,
        subject: `Guidon rolled back the release of ${release.flagKey}`,
        text: `A guarded release you started on Guidon rolled back by itself: one of its guardrails got worse.\n\nFlag: ${release.flagKey}\nRelease: ${release.releaseId}\n\n${release.explanation}\n\nThe flag is back to what it served before the release. Every check and its figures are on the flag's page:\n${publicUrl}\n`,
      });
    },
    close: () => void made?.then((transporter) => transporter.close()),
  };
}
