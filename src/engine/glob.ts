/**
 * Tool-name globs: `*` (any run of characters) and `?` (one character); every other character is
 * literal. General-purpose glob libraries treat `/`, `[`, `{` and `!` specially, which tool names
 * may contain, so this grammar is deliberately this small.
 */
export function isGlob(pattern: string): boolean {
  return pattern.includes('*') || pattern.includes('?');
}

export function globToRegExp(pattern: string): RegExp {
  let src = '';
  for (const ch of pattern) {
    if (ch === '*') src += '.*';
    else if (ch === '?') src += '.';
    else src += ch.replace(/[\\^$.|+()[\]{}]/g, '\\$&');
  }
  return new RegExp(`^${src}$`, 'su');
}
