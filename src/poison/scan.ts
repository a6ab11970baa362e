import { escapeControls } from '../display/index.js';
import type { ToolDefinition } from '../risk/types.js';
import { toolFields, type Field } from './fields.js';
import { PHRASE_SCAN_CHARS, phraseHits } from './phrases.js';
import type { Finding } from './types.js';

/**
 * Scans a tool definition for text aimed at the model rather than the user (SPEC 11, "Poisoned
 * definitions"): phrases (src/poison/phrases.ts), hidden characters, encoded blobs and text far
 * longer than a tool needs. Every pass is linear in the definition's size: characters are walked
 * once, phrases run with RE2 over at most PHRASE_SCAN_CHARS of each field.
 */

/** A description past this is longer than any ordinary tool's (the corpus's longest is about 13 000). */
const LONG_DESCRIPTION = 16_000;
/** A schema text (a property's description, a default) past this is long. */
const LONG_SCHEMA_TEXT = 8_000;
/** Past this, the phrases cannot read a field whole: too long to review is itself a reason to hide. */
const UNREVIEWABLE = PHRASE_SCAN_CHARS;
/** Encoded runs: base64 this long, hex this long (a SHA-256 is 64 hex digits, a short example value far less). */
const BASE64_RUN = 160;
/** A shorter run is decoded too: one that reads as prose is an instruction the user cannot read. */
const DECODED_RUN = 48;
const HEX_RUN = 128;
/** Zero-width characters in a row past this hide something (emoji and scripts use one at a time). */
const ZERO_WIDTH_RUN = 3;
const MAX_EVIDENCE = 80;

const shortText = (s: string) => escapeControls(s.length > MAX_EVIDENCE ? `${s.slice(0, MAX_EVIDENCE)}…` : s);
const where = (field: string) => (field === 'name' || field === 'title' || field === 'description' ? `the ${field}` : field);
const cap = (s: string) => s.charAt(0).toUpperCase() + s.slice(1);

function isZeroWidth(cp: number): boolean {
  return cp === 0x200b || cp === 0x200c || cp === 0x200d || cp === 0x2060 || cp === 0xfeff || cp === 0x180e || (cp >= 0x2061 && cp <= 0x2064);
}
function isBidiControl(cp: number): boolean {
  return (cp >= 0x202a && cp <= 0x202e) || (cp >= 0x2066 && cp <= 0x2069);
}

/** Tag characters, bidi controls and zero-width runs in one field, and what tag characters spell. */
function hiddenCharacters(f: Field, out: Finding[]): void {
  let tags = 0; let spelt = ''; let bidi = 0; let zw = 0; let run = 0; let longest = 0;
  const text = f.text;
  let prev = 0;
  for (let i = 0; i < text.length; i++) {
    const cp = text.codePointAt(i)!;
    if (cp > 0xffff) i++;
    if (cp >= 0xe0000 && cp <= 0xe007f) {
      tags++;
      if (cp >= 0xe0020 && cp <= 0xe007e && spelt.length < PHRASE_SCAN_CHARS) spelt += String.fromCharCode(cp - 0xe0000);
    } else if (isBidiControl(cp)) bidi++;
    if (isZeroWidth(cp)) {
      // A joiner between two letters of a script or emoji is how they are written, not a disguise.
      const next = text.codePointAt(i + 1) ?? 0;
      const joins = (cp === 0x200c || cp === 0x200d) && prev > 0x7f && next > 0x7f && !isZeroWidth(prev) && !isZeroWidth(next);
      if (!joins) { zw++; run++; longest = Math.max(longest, run); }
    } else { run = 0; prev = cp; }
  }
  if (tags > 0) {
    out.push({ kind: 'tag_characters', level: 'hide', field: f.field, count: tags,
      evidence: `${tags} tag characters (U+E0000–E007F)${spelt.trim() ? ` spelling "${shortText(spelt.trim())}"` : ''}`,
      says: cap(`${where(f.field)} carries ${tags} invisible tag characters: text the model reads and the user cannot see.`) });
    for (const h of phraseHits(spelt)) out.push({ kind: h.kind, level: 'hide', field: `${f.field} (in tag characters)`, evidence: `"${shortText(h.phrase)}"`, says: `Hidden in tag characters, ${where(f.field)} ${h.says}: "${shortText(h.phrase)}".` });
  }
  if (bidi > 0) {
    out.push({ kind: 'bidi_controls', level: 'hide', field: f.field, count: bidi,
      evidence: `${bidi} bidi override or isolate characters (U+202A–202E, U+2066–2069)`,
      says: cap(`${where(f.field)} carries ${bidi} bidi controls, which make text read differently from what is shown.`) });
  }
  if (zw > 0) {
    const hide = f.identifier || longest >= ZERO_WIDTH_RUN;
    out.push({ kind: 'zero_width', level: hide ? 'hide' : 'warn', field: f.field, count: zw,
      evidence: `${zw} zero-width characters${longest > 1 ? `, ${longest} in a row` : ''}`,
      says: cap(f.identifier ? `${where(f.field)} has ${zw} zero-width characters: an identifier disguised as another.` : `${where(f.field)} has ${zw} zero-width characters${longest > 1 ? ` (${longest} in a row)` : ''}.`) });
  }
}

const B64 = new Uint8Array(128);
for (const c of 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=-_') B64[c.charCodeAt(0)] = 1;
const isHex = (c: number) => (c >= 48 && c <= 57) || (c >= 97 && c <= 102) || (c >= 65 && c <= 70);

/** Whether bytes read as prose: printable, with spaces between words (a JWT's JSON or an image does not). */
function readsAsText(decoded: string): boolean {
  if (decoded.length < 24) return false;
  let printable = 0; let spaces = 0;
  for (let i = 0; i < decoded.length; i++) {
    const c = decoded.charCodeAt(i);
    if ((c >= 32 && c < 127) || c === 10) printable++;
    if (c === 32) spaces++;
  }
  return printable / decoded.length > 0.95 && spaces >= 5;
}

/** The longest base64 or hex run of a field, and whether it decodes to prose (an instruction hidden from the reader). */
function encodedBlobs(f: Field, out: Finding[]): void {
  const text = f.text;
  let start = -1; let best: { start: number; end: number; hex: boolean } | undefined;
  let hex = true; let digit = false; let upper = false; let lower = false;
  const close = (end: number) => {
    const len = end - start;
    const isB64 = len >= DECODED_RUN && digit && upper && lower;
    const isHexRun = hex && len >= HEX_RUN;
    if ((isB64 || isHexRun) && (!best || len > best.end - best.start)) best = { start, end, hex: isHexRun };
    start = -1;
  };
  for (let i = 0; i <= text.length; i++) {
    const c = i < text.length ? text.charCodeAt(i) : 32;
    if (c < 128 && B64[c]) {
      if (start < 0) { start = i; hex = true; digit = false; upper = false; lower = false; }
      if (!isHex(c)) hex = false;
      if (c >= 48 && c <= 57) digit = true; else if (c >= 65 && c <= 90) upper = true; else if (c >= 97 && c <= 122) lower = true;
    } else if (start >= 0) close(i);
  }
  if (!best) return;
  const blob = text.slice(best.start, Math.min(best.end, best.start + 8192));
  const decoded = best.hex ? Buffer.from(blob.length % 2 ? blob.slice(1) : blob, 'hex').toString('latin1') : Buffer.from(blob.replace(/-/g, '+').replace(/_/g, '/'), 'base64').toString('latin1');
  const prose = readsAsText(decoded);
  const len = best.end - best.start;
  if (!prose && !best.hex && len < BASE64_RUN) return;
  const kind = best.hex ? 'hex' : 'base64';
  out.push({ kind: 'encoded_blob', level: prose ? 'hide' : 'warn', field: f.field, count: len,
    evidence: `${len} characters of ${kind}${prose ? ` that decode to text: "${shortText(decoded)}"` : ''}`,
    says: cap(prose ? `${where(f.field)} hides text in ${kind} the user cannot read.` : `${where(f.field)} carries a ${len}-character ${kind} run.`) });
  for (const h of prose ? phraseHits(decoded) : []) out.push({ kind: h.kind, level: 'hide', field: `${f.field} (decoded ${kind})`, evidence: `"${shortText(h.phrase)}"`, says: `Encoded in ${kind}, ${where(f.field)} ${h.says}: "${shortText(h.phrase)}".` });
}

function length(f: Field, out: Finding[]): void {
  const n = f.text.length;
  const long = f.field === 'description' ? LONG_DESCRIPTION : LONG_SCHEMA_TEXT;
  if (n > UNREVIEWABLE) {
    out.push({ kind: 'overlong', level: 'hide', field: f.field, count: n, evidence: `${n} characters`,
      says: cap(`${where(f.field)} is ${n} characters long, far more than any tool needs; only the first ${UNREVIEWABLE} were read for instructions.`) });
  } else if (n > long) {
    out.push({ kind: 'overlong', level: 'warn', field: f.field, count: n, evidence: `${n} characters`, says: cap(`${where(f.field)} is ${n} characters long, longer than tools ordinarily need.`) });
  }
}

/** Every finding of one tool definition, hide-level first. */
export function scanTool(tool: ToolDefinition): Finding[] {
  const out: Finding[] = [];
  for (const f of toolFields(tool)) {
    hiddenCharacters(f, out);
    if (!f.identifier) encodedBlobs(f, out);
    length(f, out);
    for (const h of phraseHits(f.text)) {
      out.push({ kind: h.kind, level: h.level, field: f.field, evidence: `"${shortText(h.phrase)}"`, says: cap(`${where(f.field)} ${h.says}: "${shortText(h.phrase)}".`) });
    }
  }
  return out.sort((a, b) => (a.level === b.level ? 0 : a.level === 'hide' ? -1 : 1));
}

/** The findings that call for hiding the tool. */
export function hideLevel(findings: readonly Finding[]): Finding[] {
  return findings.filter((f) => f.level === 'hide');
}

/** One line naming a tool's findings, for logs, denials and audit rows (escaped evidence). */
export function summarize(findings: readonly Finding[], max = 3): string {
  const shown = findings.slice(0, max).map((f) => `${f.kind} in ${f.field}: ${f.evidence}`);
  return shown.join('; ') + (findings.length > max ? `; and ${findings.length - max} more` : '');
}
