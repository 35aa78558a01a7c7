import { useState, type FormEvent, type ReactNode } from 'react';
import { Field } from './Field';
import { Modal } from './Modal';
import { FormError } from './FormError';

interface ConfirmProps {
  open: boolean;
  onOpenChange: (open: boolean) => void;
  title: string;
  description: ReactNode;
  confirmLabel: string;
  /** When set, the person types it before the button works (e.g. the project's name). */
  typeToConfirm?: string;
  /** Fields the confirmation needs (e.g. a password), above the buttons. */
  children?: ReactNode;
  onConfirm: () => Promise<unknown>;
}

/** A confirmation that says what will happen, and shows the server's refusal if there is one. */
export function ConfirmDialog({ open, onOpenChange, title, description, confirmLabel, typeToConfirm, children, onConfirm }: ConfirmProps) {
  const [typed, setTyped] = useState('');
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const ready = !typeToConfirm || typed === typeToConfirm;

  const submit = async (event: FormEvent) => {
    event.preventDefault();
    if (!ready) return;
    setBusy(true);
    setError(null);
    try {
      await onConfirm();
      setTyped('');
      onOpenChange(false);
    } catch (caught) {
      setError((caught as Error).message);
    } finally {
      setBusy(false);
    }
  };

  return (
    <Modal open={open} onOpenChange={onOpenChange} title={title} description={description}>
      <form onSubmit={submit} noValidate>
        {typeToConfirm && <Field label={`Type "${typeToConfirm}" to confirm`} value={typed} onChange={setTyped} autoComplete="off" />}
        {children}
        <FormError message={error} />
        <div className="actions">
          <button type="button" className="secondary" onClick={() => onOpenChange(false)}>
            Cancel
          </button>
          <button type="submit" className="danger" disabled={busy || !ready}>
            {confirmLabel}
          </button>
        </div>
      </form>
    </Modal>
  );
}
