import { FormError } from './FormError';

/** A form dialog's end: the server's refusal, if any, then Cancel and the submit button (disabled while saving). */
export function DialogActions({ error, busy, submitLabel, onCancel }: { error: string | null; busy: boolean; submitLabel: string; onCancel: () => void }) {
  return (
    <>
      <FormError message={error} />
      <div className="actions">
        <button type="button" className="secondary" onClick={onCancel}>
          Cancel
        </button>
        <button type="submit" disabled={busy}>
          {submitLabel}
        </button>
      </div>
    </>
  );
}
