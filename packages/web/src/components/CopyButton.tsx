import { useState } from 'react';

/** Copies text to the clipboard and says so (politely announced). */
export function CopyButton({ text, label }: { text: string; label: string }) {
  const [copied, setCopied] = useState(false);
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(text);
      setCopied(true);
      setTimeout(() => setCopied(false), 2000);
    } catch {
      setCopied(false);
    }
  };
  return (
    <>
      <button type="button" className="secondary small" onClick={() => void copy()} aria-label={label}>
        Copy
      </button>
      <span className="copied" role="status" aria-live="polite">
        {copied ? 'Copied' : ''}
      </span>
    </>
  );
}
