/**
 * The scanning machinery under the secret detector: ASCII character classes and a scanner that
 * finds the run of a class around a position, remembering the last run of each class so that
 * candidates packed into one long run (`sk-sk-sk-…`, `_KEY_KEY_KEY…`) cost one scan between them.
 * Every rule is built from these bounded steps, so a whole text costs time linear in its length
 * whatever it holds.
 */

/** A set of ASCII characters; nothing at or above U+0080 is in any class. */
export type CharClass = Uint8Array;

export function charClass(ranges: string): CharClass {
  const cls = new Uint8Array(128);
  for (let i = 0; i < ranges.length; i++) {
    if (ranges[i + 1] === '-' && i + 2 < ranges.length) {
      for (let c = ranges.charCodeAt(i); c <= ranges.charCodeAt(i + 2); c++) cls[c] = 1;
      i += 2;
    } else {
      cls[ranges.charCodeAt(i)] = 1;
    }
  }
  return cls;
}

export const WORD = charClass('A-Za-z0-9_');
export const UPPER_DIGIT = charClass('A-Z0-9');
export const ALNUM = charClass('A-Za-z0-9');
export const LETTER = charClass('A-Za-z');
const HEX = charClass('0-9A-Fa-f');
/** RE2's `\s`: ASCII whitespace. */
export const SPACE = charClass(' \t\n\f\r');

export const inClass = (cls: CharClass, code: number): boolean => code < 128 && cls[code] === 1;

/** How many long runs of each class a scanner remembers, each way: more than any one candidate reads. */
const RUNS_KEPT = 8;
/** A run up to this long is read again rather than looked up. */
const SHORT = 16;

interface Ring {
  pairs: Int32Array;
  next: number;
}

function ringOf(rings: Map<CharClass, Ring>, cls: CharClass): Ring {
  let ring = rings.get(cls);
  if (!ring) rings.set(cls, (ring = { pairs: new Int32Array(RUNS_KEPT * 2).fill(-1), next: 0 }));
  return ring;
}

function remember(ring: Ring, from: number, to: number): void {
  ring.pairs[ring.next] = from;
  ring.pairs[ring.next + 1] = to;
  ring.next = (ring.next + 2) % ring.pairs.length;
}

/** A scanner over one text; its run caches are valid for that text only. */
export class Scanner {
  /** Per class and direction, the last long runs found: pairs (from, to) in a ring of RUNS_KEPT. */
  private readonly ahead = new Map<CharClass, Ring>();
  private readonly behind = new Map<CharClass, Ring>();

  constructor(readonly text: string) {}

  is(cls: CharClass, i: number): boolean {
    return i >= 0 && i < this.text.length && inClass(cls, this.text.charCodeAt(i));
  }

  /**
   * Whether a word boundary (`\b`) lies before `i`, given that text[i] is a word character; a
   * percent-escape (`%3D`, `%3A`, `%22`, `%20`, …) right before counts as one too, so a key in a
   * URL-encoded text (`q=key%3DAKIA…`) is found. Three characters read: constant time.
   */
  boundaryBefore(i: number): boolean {
    return !this.is(WORD, i - 1) || (i >= 3 && this.at(i - 3, '%') && this.is(HEX, i - 2) && this.is(HEX, i - 1));
  }

  /**
   * The end of the run of `cls` that starts at `i` (i itself when text[i] is not in it). A short
   * run is read; a long one is read once and remembered, so candidates packed into one long run
   * (even when a rule reads a few runs for each) scan it once.
   */
  runEnd(cls: CharClass, i: number): number {
    const { text } = this;
    const near = Math.min(text.length, i + SHORT);
    let e = i;
    while (e < near && inClass(cls, text.charCodeAt(e))) e++;
    if (e < near || e === text.length) return e;
    const ring = ringOf(this.ahead, cls);
    for (let k = 0; k < ring.pairs.length; k += 2) if (i >= ring.pairs[k] && i < ring.pairs[k + 1]) return ring.pairs[k + 1];
    while (e < text.length && inClass(cls, text.charCodeAt(e))) e++;
    remember(ring, i, e);
    return e;
  }

  /** The start of the run of `cls` that ends just before `i` (i itself when text[i-1] is not in it). */
  runStart(cls: CharClass, i: number): number {
    const { text } = this;
    const near = Math.max(0, i - SHORT);
    let s = i;
    while (s > near && inClass(cls, text.charCodeAt(s - 1))) s--;
    if (s > near || s === 0) return s;
    const ring = ringOf(this.behind, cls);
    for (let k = 0; k < ring.pairs.length; k += 2) if (i > ring.pairs[k] && i <= ring.pairs[k + 1]) return ring.pairs[k];
    // Remember the whole run, forward too: later questions come from further on in it.
    let e = i;
    while (s > 0 && inClass(cls, text.charCodeAt(s - 1))) s--;
    while (e < text.length && inClass(cls, text.charCodeAt(e))) e++;
    remember(ring, s, e);
    return s;
  }

  /** Whether `lower` (lower case) occurs at `i`, ignoring the case of ASCII letters. */
  atLower(i: number, lower: string): boolean {
    const { text } = this;
    if (i + lower.length > text.length) return false;
    for (let j = 0; j < lower.length; j++) {
      let c = text.charCodeAt(i + j);
      if (c >= 65 && c <= 90) c += 32;
      if (c !== lower.charCodeAt(j)) return false;
    }
    return true;
  }

  /** Like runEnd for the complement of `cls`: any character (non-ASCII too) that is not in it. */
  runEndNot(cls: CharClass, i: number): number {
    let e = i;
    const { text } = this;
    while (e < text.length && !inClass(cls, text.charCodeAt(e))) e++;
    return e;
  }

  /** Whether `literal` occurs at `i`, exactly (case-sensitive). */
  at(i: number, literal: string): boolean {
    return this.text.startsWith(literal, i);
  }
}

/**
 * Whether a value shown as a secret would hide what a command does: a path, a URL, a host, or
 * a list of them. Such a value is shown, not masked (SPEC section 4: a payload cannot hide behind
 * a secret-shaped prefix). A path: starts with `/`, `~` or `.`; contains `://`; a `/` right after
 * punctuation (`x,/etc/shadow`, `a:/b`); or a `/` next to a segment that reads as a file or
 * directory name (lower-case letters, digits, `._-`, starting with a letter: `etc`, `install.sh`).
 * A host: a dotted name whose last label is letters (`evil.example`), or `@` followed by one.
 */
export function hidesSomething(value: string): boolean {
  if (!/[/~.@]/.test(value)) return false;
  const first = value[0];
  if (first === '/' || first === '~' || first === '.') return true;
  if (value.includes('://')) return true;
  if (value.includes('/')) {
    if (/[,:;=@!#^*%+]\//.test(value)) return true;
    const segments = value.split('/');
    if (segments.some((s) => /^[a-z][a-z0-9_.-]{2,}$/.test(s) && (s.includes('.') || /^[a-z_-]+$/.test(s)))) return true;
    if (segments.slice(0, -1).some((s) => HOST.test(s))) return true;
  }
  if (HOST.test(value)) return true;
  const at = value.lastIndexOf('@');
  if (at >= 0 && HOST.test(value.slice(at + 1).split(/[:/]/)[0])) return true;
  return false;
}

const HOST = /^[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}$/;

/** Shannon entropy of the value in bits, over its characters (the sum over the value, not per character). */
export function entropyBits(value: string): number {
  const counts = new Map<string, number>();
  for (const c of value) counts.set(c, (counts.get(c) ?? 0) + 1);
  let bits = 0;
  for (const n of counts.values()) bits -= n * Math.log2(n / value.length);
  return bits;
}
