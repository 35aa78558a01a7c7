import { useId, type InputHTMLAttributes, type ReactNode } from 'react';
import { FormError } from './FormError';

interface FieldProps extends Omit<InputHTMLAttributes<HTMLInputElement>, 'onChange'> {
  label: string;
  value: string;
  onChange: (value: string) => void;
  /** Shown under the field and announced (role="alert") when set. */
  error?: string | null | undefined;
  hint?: ReactNode;
  multiline?: boolean;
}

/** A labelled input whose hint and error are tied to it (aria-describedby) and whose error is announced. */
export function Field({ label, value, onChange, error, hint, multiline, ...input }: FieldProps) {
  const id = useId();
  const describedBy = [hint ? `${id}-hint` : null, error ? `${id}-error` : null].filter(Boolean).join(' ') || undefined;
  const common = { id, value, 'aria-invalid': error ? true : undefined, 'aria-describedby': describedBy } as const;
  return (
    <div className="field">
      <label htmlFor={id}>{label}</label>
      {multiline ? (
        <textarea {...common} rows={3} onChange={(event) => onChange(event.target.value)} name={input.name} maxLength={input.maxLength} />
      ) : (
        <input {...input} {...common} onChange={(event) => onChange(event.target.value)} />
      )}
      {hint && (
        <p className="hint" id={`${id}-hint`}>
          {hint}
        </p>
      )}
      <FormError message={error} id={`${id}-error`} />
    </div>
  );
}
