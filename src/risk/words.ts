/**
 * Splits tool names and prose into lower-case words: snake_case, camelCase, kebab-case, dotted,
 * slashed and digits all separate ("d1-database-delete" → d1 database delete,
 * "createPullRequest" → create pull request, "API-post-page" → api post page).
 */
export function nameWords(name: string): string[] {
  return name
    .replace(/([a-z0-9])([A-Z])/g, '$1 $2')
    .replace(/([A-Z]+)([A-Z][a-z])/g, '$1 $2')
    .toLowerCase()
    .split(/[^a-z0-9]+/)
    .filter(Boolean);
}

/**
 * Candidate base forms of a word, most literal first: "deletes" → deletes, delete; "created" →
 * created, create, creat; "running" → running, runn, run. A lexicon lookup takes the first that
 * it knows, so no stem has to be right on its own.
 */
export function baseForms(word: string): string[] {
  const out = [word];
  const add = (w: string) => { if (w.length >= 2 && !out.includes(w)) out.push(w); };
  if (word.endsWith('ies')) add(word.slice(0, -3) + 'y');
  if (word.endsWith('es')) add(word.slice(0, -2));
  if (word.endsWith('s') && !word.endsWith('ss')) add(word.slice(0, -1));
  if (word.endsWith('ed')) { add(word.slice(0, -1)); add(word.slice(0, -2)); if (word.at(-3) === word.at(-4)) add(word.slice(0, -3)); }
  if (word.endsWith('ing')) { add(word.slice(0, -3) + 'e'); add(word.slice(0, -3)); if (word.at(-4) === word.at(-5)) add(word.slice(0, -4)); }
  return out;
}
