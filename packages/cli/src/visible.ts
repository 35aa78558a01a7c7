/**
 * What the CLI prints comes partly from elsewhere: a document, an Unleash export, a server's answer.
 * A terminal obeys control characters in it (an escape sequence can clear the screen, retitle the
 * window, hide a line or fake one), and bidi overrides reorder what is read. So every line is
 * printed through visible(), which shows those characters as escapes instead.
 */

/**
 * C0 (a line break or tab inside one line's text is someone else's, not the CLI's), DEL, C1, and
 * the bidi embeddings, overrides and isolates (U+202A–U+202E, U+2066–U+2069); U+2028 and U+2029
 * break lines in some terminals and editors.
 */
const CONTROL = /[\u0000-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;

/** The same less C0, which JSON.stringify escapes itself (the raw line breaks left are its indentation). */
const CONTROL_IN_JSON = /[\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;

const hex = (char: string, digits: number) => char.charCodeAt(0).toString(16).padStart(digits, '0');

/** The text with each control character shown as `\xNN` (C0, DEL, C1) or `\uNNNN` (the rest): printable ASCII, on one line. */
export function visible(text: string): string {
  return text.replace(CONTROL, (char) => (char <= '\u00ff' ? `\\x${hex(char, 2)}` : `\\u${hex(char, 4)}`));
}

/** Lines for a person, each made visible, as one text ending in a line break. */
export function lines(...texts: string[]): string {
  return `${texts.map(visible).join('\n')}\n`;
}

/**
 * A value as JSON (for --json): JSON.stringify escapes C0 itself but leaves DEL, C1 and the bidi
 * characters raw inside strings; they are written as \uNNNN escapes, which parse back to the same
 * value (JSON's structure is ASCII, so they can only be inside strings).
 */
export function jsonText(value: unknown): string {
  return `${JSON.stringify(value, null, 2).replace(CONTROL_IN_JSON, (char) => `\\u${hex(char, 4)}`)}\n`;
}
