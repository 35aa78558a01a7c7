import { useRef, useState, type ClipboardEvent, type KeyboardEvent } from 'react';
import { splitValues } from './conditions';

/** Chips drawn at most: a pasted list of thousands stays one count, not thousands of buttons. */
const SHOWN = 50;

interface ValueChipsProps {
  id: string;
  values: readonly string[];
  onChange: (values: string[]) => void;
  /** Says what the chips are of, e.g. "condition 2": in each remove button's name. */
  of: string;
  single: boolean;
  placeholder?: string;
  listId?: string;
  describedBy?: string;
}

/**
 * Values as chips: typing and Enter adds one, a pasted list (one a line or comma-separated) adds
 * them all, each chip has a remove button. Text left in the box is added when it loses the
 * focus, so a value typed and then saved is not lost. An operator that takes one value keeps the last.
 */
export function ValueChips({ id, values, onChange, of, single, placeholder, listId, describedBy }: ValueChipsProps) {
  const [text, setText] = useState('');
  // A removed chip takes its button with it: the focus goes to the box (it fell to <body> before).
  const input = useRef<HTMLInputElement>(null);
  const remove = (next: string[]) => {
    onChange(next);
    input.current?.focus();
  };
  const add = (items: string[]) => {
    if (items.length === 0) return;
    const next = single ? items.slice(-1) : [...new Set([...values, ...items])];
    onChange(next);
    setText('');
  };
  const onKeyDown = (event: KeyboardEvent<HTMLInputElement>) => {
    if (event.key === 'Enter') {
      event.preventDefault(); // adds a chip, never submits the dialog
      add(splitValues(text));
    } else if (event.key === 'Backspace' && text === '' && values.length > 0) {
      onChange(values.slice(0, -1));
    }
  };
  const onPaste = (event: ClipboardEvent<HTMLInputElement>) => {
    const pasted = event.clipboardData.getData('text');
    if (!/[\n,]/.test(pasted)) return;
    event.preventDefault();
    add(splitValues(text + pasted));
  };
  const hidden = values.length - SHOWN;
  return (
    <div className="chips">
      {values.length > 0 && (
        <ul className="chip-list" aria-label={`Values of ${of}`}>
          {values.slice(0, SHOWN).map((value) => (
            <li key={value} className="chip">
              <span>{value}</span>
              <button type="button" className="chip-remove" aria-label={`Remove ${value} from ${of}`} onClick={() => remove(values.filter((item) => item !== value))}>
                ×
              </button>
            </li>
          ))}
          {hidden > 0 && (
            <li className="chip more">
              and {hidden} more
              <button type="button" className="secondary small" onClick={() => remove([])}>
                Remove all {values.length} values of {of}
              </button>
            </li>
          )}
        </ul>
      )}
      <input
        ref={input}
        id={id}
        value={text}
        placeholder={placeholder}
        list={listId}
        autoComplete="off"
        aria-describedby={describedBy}
        onChange={(event) => setText(event.target.value)}
        onKeyDown={onKeyDown}
        onPaste={onPaste}
        onBlur={() => add(splitValues(text))}
      />
    </div>
  );
}
