import { type Category } from '../types.js';

export interface Action {
  verb: string;
  /** The verb is also a common noun and nothing clearer was found ("my_issues"): the description may overrule it. */
  weak?: boolean;
  category: Category;
  /** The words the verb acts on. */
  objects: string[];
  /** The object as a person would write it ("a pull request", "USDC to an address"). */
  phrase: string;
  /** What doing it does, as a predicate ("destroys data or removes a protection"). */
  effect: string;
  /** The verb opens its sentence, so verb and phrase read as the author wrote them. */
  lead?: boolean;
}


export interface Context {
  browser: boolean;
  kept: Set<string>;
  money: boolean;
  deploy: boolean;
  description: string;
  sql: boolean;
  serverWords: Set<string>;
  /** The nouns of the tool's name: what a description's bare verb list ("set, get, remove") acts on. */
  nameNouns: () => string[];
  /** An argument carries a query (a `query`, `sql`, `statement`, `cypher`… parameter). */
  queryInput: () => boolean;
  /** An argument is a URL (computed on first use). */
  urlInput: () => boolean;
  /** The server keeps logs, events or analytics: a query there is written in its query language. */
  analytics: boolean;
  /** The description says the input is written in a query language (computed on first use). */
  languageInput: () => boolean;
  /** The verb the description opens with, if it opens with one (computed on first use). */
  leadVerb: () => { base: string; category: Category } | undefined;
}

export const COMPOUND_NOUNS: [string, string][] = [['call', 'stack'], ['user', 'agent'], ['merge', 'request'], ['pull', 'request'], ['merge', 'requests'], ['pull', 'requests'], ['sign', 'in'], ['payment', 'method'], ['auto', 'renewal'], ['commit', 'message']];
export const FLUFF = /^(?:this (?:tool|function|endpoint) (?:will |can |is used to |lets you |allows you to )?|use this (?:tool )?to |tool (?:to|for) |allows? (?:you |the agent |users )?to |helps? (?:you )?(?:to )?|lets you |used to |a tool (?:to|that|for) |you can |(?:an? )?(?:simple |powerful )?(?:tool|utility|function) (?:to|that|for) )/i;
export const BROWSER_SERVER = /playwright|puppeteer|browser|chrome|devtools|selenium|webdriver/;
export const SAVES_TO_DISK = /\b((?:exports?|saves?|writes?|dumps?) (?:[\w.-]+ ){0,5}?to (?:a |an |the )?(?:[\w.-]+ )?(?:file|disk|folder|directory|path)\b|will be saved|are saved|is saved|output ?dir(?:ectory)?|saves (?:it |them |the \w+ )?(?:to|as|in) (?:a |the )?(?:file|disk|folder|directory|path)|writes (?:it |them |the \w+ )?to (?:a |the )?(?:file|disk))\b/;

export const COMPOUND_HEADS = new Set(COMPOUND_NOUNS.map(([a]) => a));

export function joinCompounds(words: readonly string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < words.length; i++) {
    const pair = COMPOUND_NOUNS.find(([a, b]) => words[i] === a && words[i + 1] === b);
    if (pair) { out.push(`${pair[0]}_${pair[1]}`); i++; } else if (!/^v\d+$/.test(words[i])) out.push(words[i]);
  }
  return out;
}

export interface Sentence { text: string; lower: string }
const HEADING = /^[\w -]{0,40}\b(?:operations|actions|commands|functions|tools|utilities|management|helpers):\s/i;
const sentences = new Map<string, Sentence>();

/** The first sentence, without markdown, as written and lower-cased (memoised: rationale and evidence quote it too). */
export function firstSentence(text: string): Sentence {
  let out = sentences.get(text);
  if (out === undefined) {
    const clean = text.slice(0, 600).replace(/[*`#>_]+/g, ' ').replace(/\s+/g, ' ').trim();
    // "Stack operations: call stack, read raw" — a heading's colon opens the sentence that says what it does.
    const heading = HEADING.exec(clean)?.[0].length ?? 0;
    const found = clean.slice(heading).search(/[.!?:;\n](\s|$)/);
    const end = found < 0 ? found : found + heading;
    const first = (end > 0 ? clean.slice(0, end) : clean).slice(0, 240);
    const rest = end > 0 ? clean.slice(end + 1).trim() : '';
    out = { text: first, lower: first.toLowerCase() };
    if (!/[a-z]{3}/i.test(first) && rest) out = firstSentence(rest);
    if (sentences.size > 50_000) sentences.clear();
    sentences.set(text, out);
  }
  return out;
}

/** A quotation of at most about 100 characters, cut at a word. */
export function quote(text: string): string {
  if (text.length <= 100) return text;
  return `${text.slice(0, 100).replace(/\s+\S*$/, '')}…`;
}

export const HANDS_BACK = 'hands the result back and changes nothing';
export const LIGHT_EFFECTS = new Set(['stops a process and destroys no data', 'is a small change that can be undone by adding it back']);

/** Verbs a name can hide more behind: the description's wider list of actions decides. */
export const GENERIC_VERBS = new Set(['manage', 'handle', 'process', 'perform', 'configure', 'modify', 'operate', 'control', 'do', 'use', 'edit', 'update', 'change', 'sync']);
