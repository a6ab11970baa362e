import { RULES, type Rule, type SecretKind } from './rules.js';
import { Scanner } from './scan.js';

/**
 * Secret detection by shape: where in a text something looks like a credential. Used to mask
 * what an approver sees and to redact tool results, so it must be fast on a megabyte and stay
 * fast on a megabyte built to slow it down:
 *
 * - one pass over the text finds candidate positions: the pair of characters at each position
 *   indexes the rules' trigger words that start with it (case-insensitively), so a position
 *   costs a table read, and a candidate a comparison of one short word;
 * - each candidate is read by its rule with bounded steps over ASCII character classes (a prefix,
 *   a run of token characters, a name before `=`), where the scanner remembers the last run of
 *   each class, so candidates packed into one long run cost one scan between them;
 * - values found only by a name or a `Bearer`/`Basic` word are bounded (`MAX_GENERIC`).
 *
 * The whole is linear in the length of the text whatever it holds: no regular expression runs on
 * the text (a few small ones read a bounded value, at most `MAX_GENERIC` long). A span never covers whitespace, quotes or shell syntax (`$ ; | & < > ( ) { } \``),
 * and a value found only by its name or a `Bearer`/`Basic` word is not masked when it is a path,
 * a URL or a host (see `hidesSomething`): only the secret-shaped part is masked, and nothing that
 * says what a command does hides behind a secret-shaped prefix.
 */

export type { SecretKind } from './rules.js';
export { MAX_GENERIC } from './rules.js';

export interface SecretSpan {
  kind: SecretKind;
  /** UTF-16 offsets into the text: the secret is text.slice(start, end). */
  start: number;
  end: number;
}

interface Dispatch {
  rule: Rule;
  index: number;
  /** The rule's trigger, and its lower case (what the text is compared with). */
  trigger: string;
  lower: string;
}

/** A trigger (lower case) and the rules it sets off; triggers that start with another are checked under the shorter one. */
interface Head {
  lower: string;
  dispatch: Dispatch[];
}

/** Where a pair of ASCII characters (letters folded to lower case) is indexed: 128 × first + second. */
const pairOf = (a: number, b: number): number => (a << 7) | b;

/**
 * The literal search: every trigger's first two characters index the triggers that start with
 * them, so each position of the text costs two character reads and one array read, and only a
 * position where a trigger's first two characters stand compares the rest (a bounded amount).
 */
function buildSearch(rules: readonly Rule[]): (Head[] | undefined)[] {
  const all: Dispatch[] = rules.flatMap((rule, index) => rule.triggers.map((trigger) => ({ rule, index, trigger, lower: trigger.toLowerCase() })));
  const lowers = [...new Set(all.map((d) => d.lower))];
  const heads = lowers.filter((l) => !lowers.some((o) => o !== l && l.startsWith(o)));
  const pairs = new Array<Head[] | undefined>(128 * 128);
  for (const lower of heads) {
    if (lower.length < 2 || [...lower].some((c) => c.charCodeAt(0) >= 128)) throw new Error(`secret trigger "${lower}" must be ASCII, two characters or more`);
    const key = pairOf(lower.charCodeAt(0), lower.charCodeAt(1));
    (pairs[key] ??= []).push({ lower, dispatch: all.filter((d) => d.lower.startsWith(lower)) });
  }
  return pairs;
}

const PAIRS = buildSearch(RULES);

/** Kinds found by a name or a word before the value rather than by the value's own shape. */
const GENERIC: ReadonlySet<SecretKind> = new Set(['env_secret', 'quoted_secret', 'bearer_token', 'basic_credentials']);

/** An ASCII character code with letters in lower case; 0 for anything else. */
function fold(c: number): number {
  if (c >= 128) return 0;
  return c >= 65 && c <= 90 ? c + 32 : c;
}

/**
 * Every span of `text` that looks like a secret, in order, without overlaps (the earlier one,
 * then the longer one, wins). Linear time in the length of the text.
 */
export function findSecrets(text: string): SecretSpan[] {
  if (text.length < 8) return [];
  const scanner = new Scanner(text);
  const found: SecretSpan[] = [];
  // Per rule, where its last find ended: a rule's finds never overlap (as a regex's would not).
  const next = new Array<number>(RULES.length).fill(0);
  let b = fold(text.charCodeAt(0));
  for (let at = 0; at < text.length - 1; at++) {
    const a = b;
    b = fold(text.charCodeAt(at + 1));
    const heads = PAIRS[pairOf(a, b)];
    if (heads === undefined || a === 0) continue;
    for (const head of heads) {
      if (!scanner.atLower(at, head.lower)) continue;
      for (const d of head.dispatch) {
        if (at < next[d.index]) continue;
        if (d.lower.length > head.lower.length && !scanner.atLower(at, d.lower)) continue;
        const hit = d.rule.match(scanner, at, d.trigger);
        if (hit && hit.end > hit.start) {
          found.push({ kind: d.rule.kind, start: hit.start, end: hit.end });
          next[d.index] = hit.end;
        }
      }
    }
  }
  if (found.length < 2) return found;
  // At one span, a kind known by its shape (github_token) names it better than one known by its name (env_secret).
  found.sort((a, b) => a.start - b.start || b.end - a.end || +GENERIC.has(a.kind) - +GENERIC.has(b.kind));
  const out: SecretSpan[] = [];
  for (const s of found) {
    const last = out[out.length - 1];
    if (last && s.start < last.end) {
      if (s.end > last.end) last.end = s.end;
      continue;
    }
    out.push({ ...s });
  }
  return out;
}

/** What a masked span reads as. */
export const maskText = (kind: SecretKind): string => `[masked ${kind}]`;

/** `text` with every secret-looking span replaced (see `maskText`), and the kinds that were. */
export function maskSecretSpans(text: string): { text: string; kinds: SecretKind[] } {
  const spans = findSecrets(text);
  if (spans.length === 0) return { text, kinds: [] };
  let out = '';
  let at = 0;
  for (const s of spans) {
    out += text.slice(at, s.start) + maskText(s.kind);
    at = s.end;
  }
  return { text: out + text.slice(at), kinds: [...new Set(spans.map((s) => s.kind))] };
}

export { isSecretField } from './fields.js';
