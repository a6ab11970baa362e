/**
 * Look-alike defence. A lenient server may match "Delete_File", "delete\u200B_file" or a name with
 * Cyrillic letters to its `delete_file` tool, so a call is also judged under the name's skeleton:
 * NFKC-normalised, without invisible characters or whitespace, confusable letters folded to
 * Latin, lower-cased.
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
const INVISIBLE = /[\p{Default_Ignorable_Code_Point}\p{Cf}\p{White_Space}]/gu;
const PLAIN = /^[\x21-\x7e]*$/;

export function skeleton(name: string): string {
  const folded = name.normalize('NFKC').replace(INVISIBLE, '');
  let out = '';
  for (const ch of folded) out += CONFUSABLES[ch] ?? ch;
  return out.toLowerCase();
}

/** True when the name is plain printable ASCII, the only case where the skeleton is just a lower-casing. */
export function isPlainAscii(name: string): boolean {
  return PLAIN.test(name);
}
