import { AMBIGUOUS, ARTEFACT_NOUNS, CJK_VERBS, ENGLISH_TEXT, FOREIGN_TEXT, FOREIGN_VERBS, HTTP_METHODS, lookupVerb, PICTURE_NOUNS, QUERY_LANGUAGE, REPORT_NOUNS } from '../lexicon.js';
import { article, needsArticle, nounPhrase } from '../prose.js';
import { SEVERITY, type Category } from '../types.js';
import { type Action, type Context, COMPOUND_NOUNS, FLUFF, SAVES_TO_DISK, COMPOUND_HEADS, firstSentence, HANDS_BACK } from './context.js';
import { phraseAction } from './from-name.js';
import { refine } from './refine.js';

/** Prose that makes a change permanent: removed "permanently", work discarded. */
export const IRREVERSIBLE = /\b(permanently|irreversibl[ey]|cannot be undone|can ?not be (?:undone|recovered|reversed)|can't be undone|unrecoverable|no way to undo|hard reset|discard(?:s|ing)? (?:all |any |local |your )?(?:uncommitted |unsaved |local )?(?:changes|work|modifications|commits)|(?:changes|work) (?:will be|are) lost|wipes?|erases?|purges?|clear(?:s|ing)? all|clear(?:s|ing)? (?:(?:the|its|app|application|user|local|all) )*data|replac(?:es|ing) (?:the |all )?(?:current|existing) (?:data|contents?|state)|delet(?:es|ing) all)\b/;
/** Prose that says the call replaces a whole document, whatever its verb: the old one is gone. */
export const REPLACES_WHOLE = /(?<![\w-])(?:destructive\s*[:!]|(?:bulk-)?replac(?:e|es|ing) (?:all (?:of )?)?(?:the |its )?(?:(?:entire|whole) (?:document|diagram|workspace|project|canvas|board|database|model|graph|sheet|workbook|notebook|collection|environment|table|dataset|layout|card layout)\b|contents? of\b)|(?:bulk-)?replac(?:e|es|ing) all (?!occurrences|instances|matches|mentions|references|uses)(?:of )?(?:the |its )?(?!(?:[a-z]+ )?(?:settings|options|preferences|headers|links|tags|labels)\b)[a-z]+\b)/;
/** Words that turn what follows into what the call does *not* do ("without touching", "instead of X, which wipes"). */
const NEGATED = /\b(?:without|instead of|unlike|rather than|not|never|no|doesn't|won't|don't|blocked|refuses?|disallowed|forbidden|denied)\b/i;

/** Each pattern's global twin, compiled once (not per call). */
const globals = new WeakMap<RegExp, RegExp>();

/** The first mention of `re` in `text` that the sentence does not negate or contrast away. */
export function affirmed(re: RegExp, text: string): string | undefined {
  if (!re.test(text)) return undefined;
  let global = globals.get(re);
  if (!global) globals.set(re, (global = new RegExp(re.source, 'g')));
  global.lastIndex = 0;
  for (let m = global.exec(text); m; m = global.exec(text)) {
    const start = Math.max(0, m.index - 60);
    const before = text.slice(start, m.index);
    const clause = before.slice(Math.max(before.lastIndexOf('. '), before.lastIndexOf('; '), before.lastIndexOf('\n')) + 1);
    if (!NEGATED.test(clause)) return m[0];
  }
  return undefined;
}

export const READ_ONLY = /\b((?:read-only|readonly|read only)(?![ -](?:commands?|quer(?:y|ies)|operations?|statements?|sql|tools?|actions?|mode))|does not (?:modify|change|write)|doesn't (?:modify|change)|without (?:modifying|changing) anything|lecture seule|solo lectura)\b|只读|不产生任何变更|不会产生任何副作用/;

const STOP = new Set(['a', 'an', 'the', 'new', 'to', 'of', 'for', 'from', 'in', 'on', 'all', 'any', 'one', 'or', 'and', 'with', 'by', 'using', 'your', 'its', 'their', 'this', 'that', 'specific', 'single', 'existing', 'given']);
/** The description says the call's input is written in a query language ("get tasks using filter language"). */
export const LANGUAGE_INPUT = new RegExp(`\\b(?:using|with|in|via) (?:a |an |the )?(?:\\w+ )?(?:filter language|query syntax|${QUERY_LANGUAGE.source.slice(3)}(?! (?:definitions?|source|text|code|files?|schemas?)\\b)`);

/** Read-only views a description can open with. */
const VIEW_NOUNS = new Set(['overview', 'kpi', 'dashboard']);
/** Words after which a participle is the action ("by deleting", "and then starting"). */
const ACTING = /^(?:by|and|or|then|while|when|after|before|for|is|are|be|being|been|gets?|will|to)$/;
const DETERMINER = /^(?:a|an|the|all|any|its|their|your|this|these|those|each|every|first|next|last|final)$/;
/** Words a cut-off phrase must not end on ("a heartbeat to prove this agent is"). */
const DANGLING = /^(?:only|is|are|was|were|be|been|the|a|an|this|that|these|those|its|their|of|you|not|NOT)$/;
const PARTICLE = /^(?:into|over|out|through|up|down|back|off|on)$/;
const PREPOSITION = /^(?:against|into|at|about|over|between|under|across|per|through|onto|inside|across|of)$/;
const PHRASE_END = /^(?:and|or|but|with|using|via|by|if|when|which|that|so|then|including|based|for|in|from|within|without|as|to)$/;

/** The words after the verb as the author wrote them, up to a clause break ("USDC to an address"). */
function objectPhrase(raw: string[], from: number): string {
  const out: string[] = [];
  for (let i = from; i < raw.length && out.length < 7; i++) {
    const w = raw[i];
    if (w.startsWith('(') || w.startsWith('[') || /^[—–-]+$/.test(w)) break;
    const bare = w.toLowerCase().replace(/[^a-z0-9-]/g, '');
    if (out.length >= 1 && /^(?:that|which|who|when|if|so|whose)$/.test(bare)) break;
    if (out.length >= 2 && PHRASE_END.test(bare) && !(bare === 'to' && out.length < 3)) break;
    out.push(w.replace(/[,.;:()"]+$/g, ''));
    if (/[;:()]$/.test(w) || (w.endsWith(',') && out.length >= 2)) break;
  }
  while (out.length && (PHRASE_END.test(out[out.length - 1].toLowerCase()) || DANGLING.test(out[out.length - 1]))) out.pop();
  const text = out.join(' ').replace(/,$/, '');
  // A lone singular noun ("Get page (view) metrics") still needs its article.
  return out.length === 1 && /^[a-z]+$/.test(text) && needsArticle(text) ? `${article(text)} ${text}` : text;
}

/**
 * The description's action: the first verb of its first sentence, and the verbs listed with it
 * ("List, create, close, or select a tab" can close); the most dangerous of those wins.
 */
export function descriptionAction(description: string, ctx: Context): Action | undefined {
  const first = firstSentence(description);
  const fluff = FLUFF.exec(first.text)?.[0].length ?? 0;
  const sentence = first.lower.slice(fluff);
  const tongue = languageOf(sentence);
  // Chinese says its verb first and without spaces; the English words in it are identifiers.
  if (tongue === 'cjk') {
    const head = first.text.slice(fluff, fluff + 8);
    const found = CJK_VERBS.map(([zh, en]) => ({ at: head.indexOf(zh), en })).filter((x) => x.at >= 0).sort((a, b) => a.at - b.at)[0];
    const v = found ? lookupVerb(found.en) : undefined;
    return v ? { ...refine(v.base, v.category, ctx.nameNouns(), ctx), verb: v.base, lead: true } : undefined;
  }
  const foreign = tongue === 'foreign';
  const sentenceWords = sentence.split(/\s+/);
  const firstVerb = sentenceWords.findIndex((w) => lookupVerb(w.replace(/[^a-z0-9-]/g, '')));
  const phrase = phraseAction(sentence);
  const phraseAt = phrase ? sentenceWords.indexOf(phrase.verb.split(' ')[0]) : -1;
  // An agent named as the thing acted on ("注册新的 AI Agent", "register an AI agent") is not work handed to it.
  if (phrase && !foreign && (firstVerb < 0 ? phraseAt === 0 || phrase.category !== 'Execute' || !/agent|assistant/.test(phrase.verb) : phraseAt <= firstVerb + 1)) return { ...phrase, phrase: objectPhrase(first.text.slice(fluff).split(/\s+/), sentenceWords.indexOf(phrase.verb.split(' ').pop()!) + 1) };
  // "switch/suspend/resume" lists verbs as a slashed list does: one token each.
  const raw: string[] = [];
  /** Verbs of a parenthesised list ("record operations (create/update/delete)"): each acts on the sentence's object. */
  const listed: string[] = [];
  for (const w of first.text.slice(fluff).split(/\s+/, 24)) {
    const parts = w.includes('/') && /^\(?[a-z]+(?:\/[a-z]+)+\)?,?$/i.test(w) ? w.replace(/^\(|\)?,?$/g, '').split('/') : undefined;
    if (parts && w.startsWith('(') && /\),?$/.test(w)) { listed.push(...parts.map((p) => p.toLowerCase())); raw.push(w); } else if (parts && !w.startsWith('(') && parts.some((p) => lookupVerb(p.toLowerCase())?.base === p.toLowerCase())) parts.forEach((p, i) => raw.push(i < parts.length - 1 ? `${p},` : p));
    else raw.push(w);
  }
  // In French, Spanish or German only the translated verbs are verbs ("pays" is countries, not pay).
  const words = raw.map((w) => {
    if (!foreign) return w.toLowerCase().replace(/[^a-z0-9-]/g, '');
    const plain = w.normalize('NFD').replace(/[\u0300-\u036f]/g, '').toLowerCase().replace(/[^a-z0-9-]/g, '');
    return FOREIGN_VERBS.get(plain) ?? (lookupVerb(plain) ? `_${plain}` : plain);
  });
  const p: Parsed = { words, raw, sentence };
  let at = words.findIndex((w, i) => { const v = lookupVerb(w); return v && (!HTTP_METHODS.has(v.base) || v.base === 'get' || v.base === 'delete') && !compound(p, i) && !adjective(p, i) && !numbered(p, i) && !plural(p, i, v.base) && !participle(p, i, v.base) && !keyword(p, i); });
  // "Scatter chart: price vs quantity ordered", "Gross profit analysis — composed chart showing…": a
  // description that opens by naming a picture or an overview describes what it hands back.
  const view = words.slice(0, Math.min(at < 0 ? words.length : at, 6)).find((w) => PICTURE_NOUNS.has(w) || VIEW_NOUNS.has(w));
  if (view && !SAVES_TO_DISK.test(ctx.description)) return { verb: 'show', category: 'Read', objects: [view], phrase: `${article(view)} ${view}`, effect: HANDS_BACK };
  if (at < 0) return undefined;
  // "link extraction": a noun before the action noun is its object, and the action noun the verb.
  const nominal = AMBIGUOUS.has(lookupVerb(words[at])!.base) ? actionNoun(words[at + 1] ?? '') : undefined;
  if (nominal) at += 1;
  const verbsAt = [at];
  for (let j = at; j < words.length - 1; j++) {
    const listed = raw[j].endsWith(',') || words[j + 1] === 'or' || words[j + 1] === 'and';
    if (!listed) break;
    const k = words[j + 1] === 'or' || words[j + 1] === 'and' ? j + 2 : j + 1;
    if (!lookupVerb(words[k] ?? '')) break;
    verbsAt.push(k);
    j = k - 1;
  }
  const tail = verbsAt[verbsAt.length - 1];
  const objects = foreign ? ctx.nameNouns() : objectsAfter(words, tail + 1, ctx);
  const phraseText = foreign ? nounPhrase(objects) : objectPhrase(raw, tail + 1);
  // The head of the first noun phrase is what the verb acts on ("the default payment method" → method).
  let direct: string | undefined;
  for (const w of foreign ? [] : words.slice(tail + 1, tail + 8)) {
    if (STOP.has(w) && !direct) continue;
    if (!w || STOP.has(w) || PHRASE_END.test(w) || PREPOSITION.test(w)) break;
    if (!lookupVerb(w) || AMBIGUOUS.has(w) || direct) direct = w;
  }
  let best: Action | undefined;
  for (const i of verbsAt) {
    const v = (i === at && nominal) || lookupVerb(words[i])!;
    best = stricter(best, { ...refine(v.base, v.category, objects, ctx, phraseText, direct ?? (foreign ? objects[objects.length - 1] : objects[0])), lead: at === 0 });
  }
  for (const w of listed) {
    const v = lookupVerb(w);
    if (v && v.base === w) best = stricter(best, { ...refine(v.base, v.category, objects, ctx, phraseText, direct ?? objects[0]), verb: v.base });
  }
  // Later clauses of the same sentence that open with a plain verb ("list handles, get a name, or close a handle").
  for (let j = tail + 2; j < words.length; j++) {
    const afterOr = words[j - 1] === 'or';
    if (!(afterOr || /[,):]$/.test(raw[j - 1]))) continue;
    const v = lookupVerb(words[j]);
    if (!v || v.base !== words[j] || (HTTP_METHODS.has(v.base) && v.base !== 'delete') || compound(p, j) || keyword(p, j)) continue;
    // A word that is as often a noun is a verb here only after "or", alone in its list item, or before a particle ("step into").
    if (AMBIGUOUS.has(v.base) && !afterOr && !/[,)]$/.test(raw[j]) && !PARTICLE.test(words[j + 1] ?? '')) continue;
    let from = j + 1;
    while (from < words.length && raw[from - 1].endsWith(',') && lookupVerb(words[from])) from++;
    const own = foreign ? objects : objectsAfter(words, from, ctx);
    best = stricter(best, { ...refine(v.base, v.category, own, ctx, foreign ? phraseText : objectPhrase(raw, from), own[0]), verb: v.base });
  }
  return best;
}


/**
 * The tests `descriptionAction` puts to a word of its sentence, at module level rather than as
 * closures built on every call (a hot path; under tsx, which `npm run bench` uses, every named
 * closure also costs a `__name` call).
 */
interface Parsed { words: string[]; raw: string[]; sentence: string }
function compound({ words }: Parsed, i: number): boolean {
  return COMPOUND_HEADS.has(words[i]) && COMPOUND_NOUNS.some(([a, b]) => words[i] === a && words[i + 1] === b);
}
// "for a completed story": a participle after a determiner describes a noun; it is not the action.
function adjective({ words }: Parsed, i: number): boolean {
  return i > 0 && DETERMINER.test(words[i - 1]) && (words[i].endsWith('ed') || AMBIGUOUS.has(lookupVerb(words[i])!.base));
}
// "Step 1": a word that is as often a noun, before a number, is the noun.
function numbered({ words }: Parsed, i: number): boolean {
  return /^\d/.test(words[i + 1] ?? '') && AMBIGUOUS.has(lookupVerb(words[i])!.base);
}
// "shrink notes": past the first word, the plural of a word that is as often a noun is the noun.
function plural({ words }: Parsed, i: number, base: string): boolean {
  return i > 0 && words[i] !== base && words[i].endsWith('s') && AMBIGUOUS.has(base);
}
// "Execute an INSERT, UPDATE, or DELETE query": capitalised SQL keywords name kinds of statement.
function keyword({ words, raw, sentence }: Parsed, i: number): boolean {
  return SQL_KEYWORDS.has(words[i]) && /^\(?[A-Z]{3,}\W*$/.test(raw[i]) && /\b(?:quer(?:y|ies)|statements?|sql)\b/.test(sentence);
}
// "Reporting des projets", "Billing overview": an opening -ing noun with no article after it is a heading.
function heading({ words }: Parsed, i: number, base: string): boolean {
  return i === 0 && words[0].endsWith('ing') && AMBIGUOUS.has(base) && !DETERMINER.test(words[1] ?? '');
}
// "from submitted invoices", "item selling price", "qty ordered": past the first word, a participle
// describes a noun, unless an adverb, "by" or a conjunction makes it the action ("permanently deleting").
function participle(p: Parsed, i: number, base: string): boolean {
  const { words, raw } = p;
  return heading(p, i, base) || i > 0 && words[i] !== base && /(?:ed|ing)$/.test(words[i]) && !/ly$/.test(words[i - 1]) && !ACTING.test(words[i - 1]) && !raw[i - 1].endsWith(',');
}
function objectsAfter(words: string[], from: number, ctx: Context): string[] {
  const found = words.slice(from, from + 5).filter((w) => w && !STOP.has(w) && (!lookupVerb(w) || AMBIGUOUS.has(w) || REPORT_NOUNS.has(w) || ARTEFACT_NOUNS.has(w) || (w.endsWith('s') && lookupVerb(w)!.base !== w))).slice(0, 3);
  // A bare list of verbs ("breakpoint operations (set, get, remove)") acts on what the tool names.
  return found.length || from < words.length ? found : ctx.nameNouns();
}
/** The more dangerous of two readings (the first found wins a tie). */
function stricter(best: Action | undefined, action: Action): Action {
  return !best || SEVERITY[action.category] > SEVERITY[best.category] ? action : best;
}

const SQL_KEYWORDS = new Set(['insert', 'update', 'delete', 'drop', 'select', 'create', 'alter', 'truncate', 'merge', 'grant', 'revoke', 'upsert', 'replace']);

/** Whether a text is English, another language written in the Latin alphabet, or Chinese, Japanese or Korean. */
function languageOf(text: string): 'en' | 'foreign' | 'cjk' {
  // Without accented letters or CJK characters it is English here: French, Spanish and German descriptions carry accents.
  if (!/[\u00c0-\u024f\u3040-\u30ff\u4e00-\u9fff\uac00-\ud7af]/.test(text)) return 'en';
  const cjk = text.match(/[\u3040-\u30ff\u4e00-\u9fff\uac00-\ud7af]/g)?.length ?? 0;
  if (cjk >= 4 && cjk >= (text.match(/[a-z]+/g)?.length ?? 0)) return 'cjk';
  // Stop words of French, Spanish or German, and words with their accents ("sociétés", "über").
  const foreign = (text.match(FOREIGN_TEXT)?.length ?? 0) + (text.match(/[a-z]*[àâçéèêëîïôûùüÿñäöß][a-z]*/g)?.length ?? 0);
  return foreign >= 2 && foreign > (text.match(ENGLISH_TEXT)?.length ?? 0) ? 'foreign' : 'en';
}

/** The verb an action noun names ("extraction" → extract, "deletion" → delete), if the lexicon knows it. */
function actionNoun(word: string): { base: string; category: Category } | undefined {
  if (!/(?:t|s)ion$/.test(word)) return undefined;
  return lookupVerb(word.slice(0, -3)) ?? lookupVerb(`${word.slice(0, -3)}e`);
}
