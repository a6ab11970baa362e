/**
 * Untrusted text made safe to show a person: on a terminal, in a log line, a chat message or a
 * page. Every character that is not shown as itself is written as an escape, so nothing can move
 * the cursor, erase a line, reorder what follows or hide in plain sight:
 *
 * - control characters (C0 including ESC, DEL, C1) and line/paragraph separators;
 * - format characters (Unicode Cf): bidi embeddings, overrides and isolates, zero-width space,
 *   joiners, word joiner, BOM, soft hyphen, invisible operators, tag characters;
 * - other characters that render as nothing or as blank: variation selectors, Hangul fillers,
 *   combining grapheme joiner, Khmer inherent vowels, braille blank, and every space but U+0020;
 * - lone surrogates, private-use and unassigned code points.
 *
 * `\n`, `\r`, `\t` become those two-character escapes, anything else `\u{HEX}`. With
 * `keepNewlines`, line feeds (and tabs) stay as they are (multi-line text shown in a block).
 */
// Combining marks (variation selectors, U+034F) are listed on purpose: they are what is escaped.
// eslint-disable-next-line no-misleading-character-class
const HIDDEN = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Co}\p{Cs}\p{Cn}\u00a0\u115f\u1160\u1680\u2000-\u200a\u202f\u205f\u3000\u3164\uffa0\u034f\u17b4\u17b5\u180b-\u180f\u2800\ufe00-\ufe0f\u{e0100}-\u{e01ef}]/gu;
// The same class, without g: test() keeps no state.
// eslint-disable-next-line no-misleading-character-class
const HIDDEN_TEST = new RegExp(HIDDEN.source, 'u');

function escapeOne(c: string, keepNewlines: boolean): string {
  if (c === '\n') return keepNewlines ? c : '\\n';
  if (c === '\t') return keepNewlines ? c : '\\t';
  if (c === '\r') return '\\r';
  return `\\u{${c.codePointAt(0)!.toString(16).toUpperCase()}}`;
}

/** `text` with control, invisible and bidi characters shown as escapes (one line unless `keepNewlines`). */
export function escapeControls(text: string, keepNewlines = false): string {
  if (!HIDDEN_TEST.test(text)) return text;
  return text.replace(HIDDEN, (c) => escapeOne(c, keepNewlines));
}

/** Whether `text` has anything `escapeControls` would escape. */
export function hasHidden(text: string): boolean {
  return HIDDEN_TEST.test(text);
}

/** A value for a terminal line: strings escaped, anything else as compact JSON (then escaped). */
export function shown(value: unknown): string {
  if (value === undefined || value === null) return '';
  return escapeControls(typeof value === 'string' ? value : JSON.stringify(value) ?? String(value));
}

/** Text of several lines for a terminal: each line escaped, the line breaks kept. */
export function terminalText(text: string): string {
  if (!HIDDEN_TEST.test(text)) return text;
  return text.split('\n').map((line) => escapeControls(line)).join('\n');
}

/**
 * JSON text with every character `escapeControls` would escape written as a JSON `\uXXXX`
 * escape: still the same JSON, safe on a terminal. (JSON.stringify escapes only C0 controls; it
 * leaves DEL, C1, bidi and invisible characters, and U+2028/U+2029, as they are.) Line breaks
 * outside strings are layout and stay.
 */
export function jsonText(json: string): string {
  if (!HIDDEN_TEST.test(json)) return json;
  return json.replace(HIDDEN, (c) => {
    if (c === '\n' || c === '\r' || c === '\t') return c;
    let out = '';
    for (let i = 0; i < c.length; i++) out += `\\u${c.charCodeAt(i).toString(16).padStart(4, '0')}`;
    return out;
  });
}

/**
 * A template tag for one line of output: every interpolated value is escaped as one line
 * (`escapeControls`: a newline in a value cannot start a forged line), the literal text is kept.
 */
export function oneLine(strings: TemplateStringsArray, ...values: unknown[]): string {
  let out = strings[0];
  for (let i = 0; i < values.length; i++) out += escapeControls(String(values[i] ?? '')) + strings[i + 1];
  return out;
}
