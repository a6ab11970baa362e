/**
 * Look-alike defence. A lenient server may match "Delete_File", "delete\u200B_file", a name with
 * Cyrillic letters or with a separator character its runtime's trim drops (Python's strip() drops
 * 0x1C–0x1F, Java's trim() every C0 control) to its `delete_file` tool, so a call is also judged
 * under the name's skeleton: without anything any common trim or NFKC normalisation drops,
 * NFKC-normalised, confusable letters folded to Latin, lower-cased.
 */
const CONFUSABLES: Record<string, string> = {
  'а': 'a', 'в': 'b', 'е': 'e', 'ё': 'e', 'к': 'k', 'м': 'm', 'н': 'h', 'о': 'o', 'р': 'p',
  'с': 'c', 'т': 't', 'у': 'y', 'х': 'x', 'ѕ': 's', 'і': 'i', 'ї': 'i', 'ј': 'j', 'ԁ': 'd',
  'ԛ': 'q', 'ԝ': 'w', 'һ': 'h', 'ӏ': 'l', 'ɡ': 'g', 'ı': 'i', 'ℓ': 'l',
  'α': 'a', 'β': 'b', 'ε': 'e', 'ι': 'i', 'κ': 'k', 'ν': 'v', 'ο': 'o', 'ρ': 'p', 'τ': 't',
  'υ': 'u', 'χ': 'x', 'γ': 'y', 'ω': 'w',
  'А': 'a', 'В': 'b', 'Е': 'e', 'К': 'k', 'М': 'm', 'Н': 'h', 'О': 'o', 'Р': 'p', 'С': 'c',
  'Т': 't', 'Х': 'x', 'Ѕ': 's', 'І': 'i', 'Ј': 'j', 'Α': 'a', 'Β': 'b', 'Ε': 'e', 'Ζ': 'z',
  'Η': 'h', 'Ι': 'i', 'Κ': 'k', 'Μ': 'm', 'Ν': 'n', 'Ο': 'o', 'Ρ': 'p', 'Τ': 't', 'Υ': 'y', 'Χ': 'x',
};
/** Controls (C0 incl. 0x1C–0x1F, DEL, C1), format characters, every space and separator, default-ignorables. */
const INVISIBLE = /[\p{Cc}\p{Cf}\p{Z}\p{White_Space}\p{Default_Ignorable_Code_Point}]/gu;
/** What no tool name may contain anywhere: controls, format characters, surrogates, line and paragraph separators, default-ignorables. */
const FORBIDDEN = /[\p{Cc}\p{Cf}\p{Cs}\p{Zl}\p{Zp}\p{Default_Ignorable_Code_Point}]/u;
/** ...nor at either end: any space (a trim would drop it, and so the server would not see it). */
const EDGE_SPACE = /^[\p{Z}\p{White_Space}]|[\p{Z}\p{White_Space}]$/u;
const PLAIN = /^[\x21-\x7e]*$/;

export function skeleton(name: string): string {
  // Dropped before NFKC (so what it composes is what a server that strips first sees) and after.
  const folded = name.replace(INVISIBLE, '').normalize('NFKC').replace(INVISIBLE, '');
  let out = '';
  for (const ch of folded) out += CONFUSABLES[ch] ?? ch;
  return out.toLowerCase();
}

/** True when the name is plain printable ASCII, the only case where the skeleton is just a lower-casing. */
export function isPlainAscii(name: string): boolean {
  return PLAIN.test(name);
}

/**
 * Why a tool name is refused outright, or null. No legitimate tool name has a control or format
 * character or spaces at its ends, and a lenient server may drop them, so such a name is never
 * judged, only refused.
 */
export function malformedName(name: string): string | null {
  if (PLAIN.test(name)) return null;
  const bad = FORBIDDEN.exec(name)?.[0] ?? EDGE_SPACE.exec(name)?.[0];
  if (bad === undefined) return null;
  const code = bad.codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0');
  return `tool names may not contain control, format or invisible characters, nor spaces at either end (found U+${code})`;
}
