import { AMBIGUOUS, EXEC_NOUNS, HTTP_METHODS, isNoun, lookupVerb, PHRASES, QUERY_LANGUAGE, REPORT_NOUNS } from '../lexicon.js';
import { nounPhrase } from '../prose.js';
import { SEVERITY } from '../types.js';
import { type Action, type Context, HANDS_BACK } from './context.js';
import { refine } from './refine.js';

/** Words that open a name which only asks a yes-or-no question ("is_enabled", "has_access"). */
const PREDICATES = new Set(['is', 'has', 'can', 'does', 'are']);

/** Verbs that take another action as their object ("continue editing", "start tracking"). */
const ASPECT_VERBS = new Set(['continue', 'start', 'stop', 'keep', 'resume', 'begin', 'finish']);

/** A word pair that names one action ("port forward", "go back", "kick off", "research agent"). */
export function phraseAction(text: string): Action | undefined {
  for (const [re, category] of PHRASES) {
    const m = re.exec(text);
    if (m) return { verb: m[0], category, objects: [], phrase: '', effect: category === 'Read' ? 'only reads' : 'starts a process or hands work to another agent' };
  }
  return undefined;
}

/**
 * The action a tool name states. Verb-first names (get_x, preview_x_create) act with their first
 * word; otherwise a trailing verb (x_delete, stories-create) is the action; otherwise the first
 * verb that is not also a common noun (API-retrieve-a-comment retrieves).
 */
export function nameAction(words: string[], ctx: Context): Action | undefined {
  const joined = words.join(' ');
  // "browser_is_enabled": a yes-or-no question about state, whatever word follows.
  const asks = words.findIndex((w) => PREDICATES.has(w));
  if (asks >= 0 && asks <= 1 && asks < words.length - 1 && words.slice(0, asks).every((w) => !lookupVerb(w))) {
    return { verb: 'check', category: 'Read', objects: words.slice(asks + 1), phrase: `whether it is ${words.slice(asks + 1).join(' ')}`, effect: 'only asks about state' };
  }
  if (!lookupVerb(words[0] ?? '')) {
    const phrase = phraseAction(joined);
    if (phrase) return { ...phrase, objects: words };
  }
  // "sql_to_rest", "html_to_markdown": one format made from another, handed back.
  if (words.length === 3 && words[1] === 'to' && !words.some((w) => { const v = lookupVerb(w); return v && !QUERY_LANGUAGE.test(w); })) {
    return { verb: 'convert', category: 'Read', objects: [words[0]], phrase: `${words[0].toUpperCase()} to ${words[2]}`, effect: HANDS_BACK };
  }
  // A plural of a word that is as often a noun ("spider_links", "x64dbg_patches") names things, not the action.
  // So does the plural of a money verb ("companies_purchases", "list_deposits"): money verbs are money nouns too.
  // And "-ing" ("boond_reporting_projects"): past the first word it names an activity, not the action.
  const found = words.map((w, i) => ({ w, i, v: lookupVerb(w) })).filter((x) => x.v && !(x.i > 0 && x.w !== x.v.base && (/s$/.test(x.w) ? AMBIGUOUS.has(x.v.base) || HTTP_METHODS.has(x.v.base) || x.v.category === 'Financial' : /ing$/.test(x.w) && AMBIGUOUS.has(x.v.base))));
  if (found.length === 0) {
    // An agent noun names its action ("user-services-reader" reads, "site-updater" updates).
    for (const w of words) {
      const m = /^(\w{3,}?)(?:e?r|or)$/.exec(w);
      const v = m ? lookupVerb(m[1]) ?? lookupVerb(`${m[1]}e`) : undefined;
      if (v && !AMBIGUOUS.has(v.base)) return { ...refine(v.base, v.category, words.filter((x) => x !== w), ctx), weak: true };
    }
    // "boond_reporting_projects", "expenses_reports", "sales_dashboard": a predefined report or view, read.
    const report = words.find((w) => w === 'reporting' || isNoun(REPORT_NOUNS, w) || w === 'dashboard' || w === 'overview');
    if (report && !words.some((w) => isNoun(EXEC_NOUNS, w))) return { verb: 'report', category: 'Read', objects: words.filter((w) => w !== report), phrase: nounPhrase([report === 'reporting' ? 'report' : report.replace(/s$/, '')]), effect: 'only reads: the report or audit is predefined', weak: true };
    // One long token such as "sequentialthinking": look for a known verb inside it.
    for (const w of words) {
      if (w.length < 9) continue;
      for (const verb of ['thinking', 'search', 'delete', 'create', 'update', 'execute', 'list']) {
        if (w.includes(verb)) { const v = lookupVerb(verb)!; return refine(v.base, v.category, words.filter((x) => x !== w), ctx); }
      }
    }
    return undefined;
  }
  // An HTTP method beside another verb is transport, not the action ("post-search" searches).
  const real = found.length > 1 ? found.filter((f) => !['post', 'put', 'patch'].includes(f.v!.base)) : found;
  const last = real[real.length - 1];
  // Of several verbs, the one the description opens with is the action ("read_apex_trigger": "Read Apex triggers").
  const lead = real.length > 1 ? ctx.leadVerb() : undefined;
  const agreed = real.length > 1 && lead ? real.find((f) => f.v!.base === lead.base) ?? real.find((f) => f.v!.category === lead.category) : undefined;
  const pick = agreed ?? (real[0].i === 0 ? real[0]
    : last.i === words.length - 1 && clearVerb(last) ? last
      : real.find(clearVerb) ?? real[0]);
  // "create_or_update_file": verbs joined by or/and all count; the most dangerous wins.
  const joinedVerbs = real.filter((f) => f !== pick && f.i === pick.i + 2 && (words[pick.i + 1] === 'or' || words[pick.i + 1] === 'and'));
  const skip = new Set([pick.i, ...joinedVerbs.map((f) => f.i), ...joinedVerbs.map((f) => f.i - 1)]);
  const objects = pick.i === words.length - 1 ? words.slice(0, pick.i) : words.slice(pick.i + 1).filter((_, k) => !skip.has(pick.i + 1 + k));
  const named = objects.filter((o) => !ctx.serverWords.has(o));
  // "continue_editing": the action the aspect verb governs is the one that happens.
  const governed = ASPECT_VERBS.has(pick.v!.base) && words[pick.i + 1]?.endsWith('ing') ? lookupVerb(words[pick.i + 1]) : undefined;
  if (governed) return refine(governed.base, governed.category, objects.slice(1), ctx, nounPhrase(named.slice(1)));
  let action = refine(pick.v!.base, pick.v!.category, objects, ctx, nounPhrase(named));
  for (const other of joinedVerbs) {
    const alt = refine(other.v!.base, other.v!.category, objects, ctx, nounPhrase(named));
    if (SEVERITY[alt.category] > SEVERITY[action.category]) action = alt;
  }
  return clearVerb(pick) ? action : { ...action, weak: true };
}

/** A verb that is not as often a noun (module level, not a closure per call: tsx's `__name` costs ~1.6 µs a closure). */
function clearVerb(f: { w: string; v?: { base: string } }): boolean {
  return !AMBIGUOUS.has(f.v!.base) && !AMBIGUOUS.has(f.w);
}
