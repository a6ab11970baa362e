/**
 * Splits tool names and prose into lower-case words: snake_case, camelCase, kebab-case, dotted,
 * slashed and digits all separate ("d1-database-delete" → d1 database delete,
 * "createPullRequest" → create pull request, "API-post-page" → api post page).
 */
export function nameWords(name: string): readonly string[] {
  let words = split.get(name);
  if (!words) {
    if (split.size >= SPLIT_MAX) split.clear();
    words = Object.freeze(name
      .replace(/([a-z0-9])([A-Z])/g, '$1 $2')
      .replace(/([A-Z]+)([A-Z][a-z])/g, '$1 $2')
      .toLowerCase()
      .split(/[^a-z0-9]+/)
      .filter(Boolean));
    split.set(name, words);
  }
  return words;
}
/** Names and values recur across stages and tools: each is split once (frozen, shared; bounded for servers that never repeat one). */
const split = new Map<string, readonly string[]>();
const SPLIT_MAX = 50_000;

/**
 * Candidate base forms of a word, most literal first: "deletes" → deletes, delete; "created" →
 * created, create, creat; "running" → running, runn, run. A lexicon lookup takes the first that
 * it knows, so no stem has to be right on its own.
 */
export function baseForms(word: string): string[] {
  const out = [word];
  if (word.endsWith('ies')) addForm(out, word.slice(0, -3) + 'y');
  if (word.endsWith('es')) addForm(out, word.slice(0, -2));
  if (word.endsWith('s') && !word.endsWith('ss')) addForm(out, word.slice(0, -1));
  if (word.endsWith('ed')) { addForm(out, word.slice(0, -1)); addForm(out, word.slice(0, -2)); if (word.at(-3) === word.at(-4)) addForm(out, word.slice(0, -3)); }
  if (word.endsWith('ing')) { addForm(out, word.slice(0, -3) + 'e'); addForm(out, word.slice(0, -3)); if (word.at(-4) === word.at(-5)) addForm(out, word.slice(0, -4)); }
  return out;
}

/** Module-level, not a closure: a hot path should not build (and, under tsx, name) a function per call. */
function addForm(out: string[], w: string): void {
  if (w.length >= 2 && !out.includes(w)) out.push(w);
}
