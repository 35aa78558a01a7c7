import type { ReactNode } from 'react';

/**
 * The dashboard's one error alert: a form's or an action's (most often the server's refusal), and
 * under a field (Field, with the id its input is described by). An alert, so it is announced the
 * moment it appears; nothing is rendered without a message. A success is never shown here: it is
 * a status (`Outcome`), which screen readers and the walks tell apart.
 */
export function FormError({ message, id, children }: { message: string | null | undefined; id?: string; children?: ReactNode }) {
  if (!message) return null;
  return (
    <p className="error" id={id} role="alert">
      {message}
      {children}
    </p>
  );
}

/** How an action ended: a success is a status, a failure an alert. */
export function Outcome({ message }: { message: { ok: boolean; text: string } | null }) {
  if (!message) return null;
  if (!message.ok) return <FormError message={message.text} />;
  return (
    <p className="notice" role="status">
      {message.text}
    </p>
  );
}
