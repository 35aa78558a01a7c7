import type { ReactNode } from 'react';
import { CopyButton } from './CopyButton';

interface SecretOnceProps {
  /** id of the heading, which names the section. */
  id: string;
  title: ReactNode;
  /** Why to copy it now. */
  note: ReactNode;
  secret: string;
  /** Accessible names of the secret and of its copy button. */
  secretLabel: string;
  copyLabel: string;
  onDone: () => void;
  headingLevel?: 2 | 3;
}

/** A secret the server shows only once (an API token, a webhook's signing secret), with a copy button. */
export function SecretOnce({ id, title, note, secret, secretLabel, copyLabel, onDone, headingLevel = 2 }: SecretOnceProps) {
  const Heading = headingLevel === 2 ? 'h2' : 'h3';
  return (
    <section className="panel secret-once" aria-labelledby={id}>
      <Heading id={id}>{title}</Heading>
      <p>{note}</p>
      <div className="key-row">
        <code className="secret" aria-label={secretLabel}>
          {secret}
        </code>
        <CopyButton text={secret} label={copyLabel} />
      </div>
      <button type="button" className="secondary small" onClick={onDone}>
        I have copied it
      </button>
    </section>
  );
}
