/**
 * Small English helpers for rationales: a rationale is quoted to operators on the record pages,
 * so it must read as a person wrote it ("Deleting a repository destroys data", not "to delete
 * repository destroys").
 */

const DOUBLE_FINAL = new Set([
  'run', 'rerun', 'stop', 'drop', 'set', 'reset', 'get', 'put', 'cut', 'ship', 'tap', 'drag', 'swap', 'step', 'pin', 'unpin',
  'tag', 'plan', 'chat', 'scan', 'skip', 'star', 'unstar', 'log', 'map', 'plot', 'submit', 'commit', 'begin', 'forget',
  'zip', 'unzip', 'wrap', 'trim', 'grab', 'snap', 'sum', 'tip', 'trip', 'clip', 'flip', 'pop', 'shop', 'slip', 'split',
  'bid', 'bet', 'let', 'dig', 'admit', 'emit', 'omit', 'permit', 'rob', 'nod', 'shut', 'spin', 'hug', 'rig', 'pat', 'dim',
]);

/** "delete" → "deleting", "run" → "running", "die" → "dying". */
const PARTICLE_VERBS: Record<string, string> = {
  login: 'logging in', logout: 'logging out', setup: 'setting up', signup: 'signing up', signin: 'signing in', checkout: 'checking out',
  lookup: 'looking up', cleanup: 'cleaning up', backup: 'backing up', rollback: 'rolling back', rollout: 'rolling out', whoami: 'asking who is signed in',
};

export function gerund(verb: string): string {
  if (PARTICLE_VERBS[verb]) return PARTICLE_VERBS[verb];
  if (DOUBLE_FINAL.has(verb)) return `${verb}${verb.at(-1)}ing`;
  if (verb.endsWith('ie')) return `${verb.slice(0, -2)}ying`;
  if (verb.endsWith('e') && !/(ee|ye|oe)$/.test(verb) && verb.length > 2) return `${verb.slice(0, -1)}ing`;
  return `${verb}ing`;
}

/** "delete" → "deletes", "push" → "pushes", "apply" → "applies". */
export function thirdPerson(verb: string): string {
  if (/(s|sh|ch|x|z|o)$/.test(verb)) return `${verb}es`;
  if (/[^aeiou]y$/.test(verb)) return `${verb.slice(0, -1)}ies`;
  return `${verb}s`;
}

const UNCOUNTABLE = new Set([
  'data', 'code', 'money', 'information', 'content', 'text', 'state', 'history', 'feedback', 'metadata', 'access', 'usage',
  'analytics', 'documentation', 'software', 'traffic', 'status', 'progress', 'health', 'info', 'help', 'news', 'memory',
  'storage', 'billing', 'privacy', 'research', 'sql', 'javascript', 'python', 'markdown', 'html', 'json', 'yaml', 'media',
  'env', 'knowledge', 'evidence', 'guidance', 'advice', 'equipment', 'weather', 'music', 'time', 'work', 'output', 'input',
  'everything', 'something', 'anything', 'nothing', 'it', 'them', 'this', 'that', 'all', 'each', 'every',
]);
const NOT_PLURAL = /(ss|us|is|news|status|series|canvas|alias|gas|process|access|address|progress)$/;
const PREPOSITIONS = new Set(['on', 'to', 'from', 'for', 'with', 'in', 'of', 'by', 'into', 'at', 'as', 'via']);
const ARTICLES = new Set(['a', 'an', 'the']);

/** Whether a noun phrase needs "a"/"an" before it (singular and countable). */
export function needsArticle(head: string): boolean {
  if (UNCOUNTABLE.has(head) || /\d/.test(head)) return false;
  return !(head.endsWith('s') && !NOT_PLURAL.test(head));
}

/** "a" or "an" by how the word sounds, not only how it is spelled. */
export function article(word: string): 'a' | 'an' {
  const w = word.toLowerCase();
  if (/^(u[bcfhjklmnpqrstvwxz][aeiou]|uni|use|usu|ur[il]|uuid|eu|one|once)/.test(w)) return 'a';
  if (/^(hour|honest|heir|[fhlmnrsx]\d|[fhlmnrsx]$|mcp|llm|nft|rsa|sdk|ssh|smtp|sms|url|html|xml|api|s3|ec2|mfa|fx)/.test(w)) return w.startsWith('url') ? 'a' : 'an';
  return /^[aeiou]/.test(w) ? 'an' : 'a';
}

/** The name's object words as a noun phrase: ["pull", "request"] → "a pull request", ["pages"] → "pages". */
export function nounPhrase(words: readonly string[]): string {
  const clean = words.filter((w, i) => w !== words[i - 1] && !ARTICLES.has(w)).map((w) => w.replace(/_/g, ' '));
  if (clean.length === 0) return '';
  if (PREPOSITIONS.has(clean[0])) return clean.length > 1 ? `${clean[0]} ${nounPhrase(clean.slice(1))}` : '';
  // The head is the last word before a preposition: "elements on screen" → elements.
  const cut = clean.findIndex((w, i) => i > 0 && PREPOSITIONS.has(w));
  const head = (cut > 0 ? clean[cut - 1] : clean[clean.length - 1]).split(' ').pop()!;
  const text = clean.join(' ');
  return needsArticle(head) ? `${article(text)} ${text}` : text;
}

/** Upper-cases the first letter of a sentence. */
export function capitalise(s: string): string {
  return s.charAt(0).toUpperCase() + s.slice(1);
}
