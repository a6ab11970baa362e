/** UTF-8 sizes of text, as max_bytes counts them. */

export function textBytes(text: string): number {
  return Buffer.byteLength(text, 'utf8');
}

/** The longest start of `text` that is at most `max` bytes in UTF-8, never splitting a character. */
export function cutText(text: string, max: number): string {
  let bytes = 0;
  let i = 0;
  while (i < text.length) {
    const c = text.codePointAt(i)!;
    const size = c < 0x80 ? 1 : c < 0x800 ? 2 : c < 0x10000 ? 3 : 4;
    if (bytes + size > max) break;
    bytes += size;
    i += c >= 0x10000 ? 2 : 1;
  }
  return text.slice(0, i);
}
