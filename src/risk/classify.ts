import {
  AMBIGUOUS, DETACHABLE_NOUNS, EXEC_NOUNS, EXEC_PROSE, HTTP_METHODS, isNoun, LIGHT_NOUNS,
  lookupVerb, MONEY_MOVES, MONEY_NOUNS, MONEY_VERBS_ON_OBJECT, PHRASES, PROCESS_NOUNS, REPORT_NOUNS,
} from './lexicon.js';
import { signalsOf } from './signals.js';
import {
  DEFAULT_RISK, RISKS, SEVERITY, type Category, type Classification, type Evidence, type Risk, type ServerContext,
  type Signal, type ToolDefinition,
} from './types.js';
import { nameWords } from './words.js';

/**
 * Deterministic, explainable classification of what a tool can do (SPEC section 5). No model and
 * no network: the tool's words are matched against a lexicon of actions and objects, the way an
 * operator reads a tool list, and every step leaves evidence.
 */

interface Action {
  verb: string;
  /** The verb is also a common noun and nothing clearer was found ("my_issues"): the description may overrule it. */
  weak?: boolean;
  category: Category;
  /** The words the verb acts on. */
  objects: string[];
  why: string;
}

const COMPOUND_NOUNS: [string, string][] = [['merge', 'request'], ['pull', 'request'], ['merge', 'requests'], ['pull', 'requests'], ['sign', 'in']];
const FLUFF = /^(?:this (?:tool|function|endpoint) (?:will |can |is used to |lets you |allows you to )?|use this (?:tool )?to |tool (?:to|for) |allows? (?:you |the agent |users )?to |helps? (?:you )?(?:to )?|lets you |used to |a tool (?:to|that|for) |you can )/;
const BROWSER_SERVER = /playwright|puppeteer|browser|chrome|devtools|selenium|webdriver/;
const SAVES_TO_DISK = /\b(will be saved|are saved|is saved|output ?dir(?:ectory)?)\b/;
const AGENT_PROSE = /^(?:an? )?(?:autonomous|ai)[\w -]{0,24} agent\b/;
const SQL_CONTEXT = /\b(sql|select|postgres|mysql|sqlite|database query|read-only query)\b/;

function joinCompounds(words: string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < words.length; i++) {
    const pair = COMPOUND_NOUNS.find(([a, b]) => words[i] === a && words[i + 1] === b);
    if (pair) { out.push(`${pair[0]}_${pair[1]}`); i++; } else out.push(words[i]);
  }
  return out;
}

const sentences = new Map<string, string>();

/** The first sentence, lower-cased and without markdown (memoised: rationale and evidence quote it too). */
function firstSentence(text: string): string {
  let out = sentences.get(text);
  if (out === undefined) {
    out = computeFirstSentence(text);
    if (sentences.size > 50_000) sentences.clear();
    sentences.set(text, out);
  }
  return out;
}

function computeFirstSentence(text: string): string {
  const clean = text.slice(0, 600).replace(/[*`#>_]+/g, ' ').replace(/\s+/g, ' ').trim().toLowerCase();
  const end = clean.search(/[.!?:;\n](\s|$)/);
  return (end > 0 ? clean.slice(0, end) : clean).slice(0, 240);
}

function lightFor(verb: string, objects: string[]): boolean {
  const set = verb === 'delete' ? LIGHT_NOUNS : DETACHABLE_NOUNS;
  return objects.some((o) => isNoun(set, o));
}

/** Refines a verb's category by what it acts on and where. */
function refine(verb: string, base: Category, objects: string[], ctx: { browser: boolean; description: string; sql: boolean; serverWords: Set<string> }): Action {
  const has = (set: Set<string>) => objects.some((o) => isNoun(set, o));
  const act = (category: Category, why: string): Action => ({ verb, category, objects, why });
  if (HTTP_METHODS.has(verb) && objects.filter((o) => !ctx.serverWords.has(o) && o !== 'api' && o !== 'http' && o !== 'request').length === 0) {
    if (verb === 'get') return act('Read', 'an HTTP GET to any endpoint only reads');
    if (verb === 'delete') return act('Destructive', 'an HTTP DELETE to any endpoint can destroy whatever it names');
    return act('Execute', `a raw HTTP ${verb.toUpperCase()} calls an arbitrary API`);
  }
  if (MONEY_VERBS_ON_OBJECT[verb] && objects.length > 0) {
    const head = objects[objects.length - 1];
    const moneyHead = isNoun(MONEY_NOUNS, head) || (['link', 'item', 'intent', 'session', 'charge'].includes(head) && objects.some((o) => isNoun(MONEY_NOUNS, o)));
    if (moneyHead && !isNoun(REPORT_NOUNS, head)) return act('Financial', `to ${verb} a ${objects.join(' ')} moves money or creates an obligation to pay`);
  }
  switch (base) {
    case 'Destructive':
      if (['remove', 'delete', 'clear', 'unlink', 'detach', 'revoke'].includes(verb) && lightFor(verb, objects)) return act('Write', `${verb} of a ${objects.join(' ')} is a small, reversible change`);
      if (['terminate', 'kill', 'clean'].includes(verb) && has(PROCESS_NOUNS)) return act('Write', `to ${verb} a ${objects.join(' ')} stops a process; it destroys no data`);
      return act('Destructive', `to ${verb} ${objects.join(' ') || 'it'} destroys data or removes protections`);
    case 'Execute':
      if (verb === 'start' && has(PROCESS_NOUNS) && !has(EXEC_NOUNS)) return act('Write', `starting a ${objects.join(' ')} is a bounded change`);
      if (verb === 'run' && has(REPORT_NOUNS)) return act('Read', 'running a predefined report only reads');
      if (verb === 'drop' && !ctx.browser) return act('Destructive', `to drop ${objects.join(' ') || 'it'} destroys it`);
      if (['type', 'press', 'fill', 'click', 'tap', 'hover', 'drag', 'drop', 'swipe', 'scroll', 'handle'].includes(verb)) return act('Execute', 'a browser or device action that clicks, types or submits');
      return act('Execute', `to ${verb} ${objects.join(' ') || 'it'} runs open-ended computation`);
    case 'Write':
      if (verb === 'generate' && has(REPORT_NOUNS)) return act('Read', 'generating a read-only artefact changes nothing');
      if (['create', 'generate', 'make', 'new'].includes(verb) && has(REPORT_NOUNS)) return act('Read', `creating a ${objects.join(' ')} only reads data`);
      if (verb === 'resolve' && objects.some((o) => ['id', 'name', 'identifier', 'address', 'alias', 'reference'].includes(o))) return act('Read', 'resolving a name to an identifier only reads');
      if (['connect', 'create', 'open', 'new', 'attach', 'complete', 'prepare', 'apply'].includes(verb) && (has(EXEC_NOUNS) || EXEC_PROSE.test(ctx.description))) {
        return act('Execute', `to ${verb} ${objects.join(' ') || 'this'} starts or attaches to a running process or debugger`);
      }
      if ((verb === 'upload' || verb === 'select') && ctx.browser && !objects.includes('page') && !objects.includes('tab')) return act('Execute', 'a browser action that submits input');
      return act('Write', `to ${verb} ${objects.join(' ') || 'it'} changes state in a bounded way`);
    case 'Read':
      if (verb === 'download' && SAVES_TO_DISK.test(ctx.description)) return act('Write', 'it downloads and writes files to disk');
      if (verb === 'query' && ctx.sql) return act('Execute', 'it runs a query language (SQL is Execute even when read-only)');
      return act('Read', `to ${verb} ${objects.join(' ') || 'it'} only reads`);
    case 'Financial':
      return act('Financial', `to ${verb} moves money`);
  }
}

/** A word pair that names one action ("port forward", "go back", "research agent"). */
function phraseAction(text: string): Action | undefined {
  for (const [re, category] of PHRASES) {
    const m = re.exec(text);
    if (m) return { verb: m[0], category, objects: [], why: `"${m[0]}" ${category === 'Read' ? 'only reads' : 'starts a process or another agent'}` };
  }
  return undefined;
}

/**
 * The action a tool name states. Verb-first names (get_x, preview_x_create) act with their first
 * word; otherwise a trailing verb (x_delete, stories-create) is the action; otherwise the first
 * verb that is not also a common noun (API-retrieve-a-comment retrieves).
 */
function nameAction(words: string[], ctx: Parameters<typeof refine>[3]): Action | undefined {
  const joined = words.join(' ');
  if (!lookupVerb(words[0] ?? '')) {
    const phrase = phraseAction(joined);
    if (phrase) return { ...phrase, objects: words };
  }
  const found = words.map((w, i) => ({ w, i, v: lookupVerb(w) })).filter((x) => x.v);
  if (found.length === 0) {
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
  const clear = (f: (typeof real)[number]) => !AMBIGUOUS.has(f.v!.base) && !AMBIGUOUS.has(f.w);
  const last = real[real.length - 1];
  const pick = real[0].i === 0 ? real[0]
    : last.i === words.length - 1 && clear(last) ? last
      : real.find(clear) ?? real[0];
  // "create_or_update_file": verbs joined by or/and all count; the most dangerous wins.
  const joinedVerbs = real.filter((f) => f !== pick && f.i === pick.i + 2 && (words[pick.i + 1] === 'or' || words[pick.i + 1] === 'and'));
  const skip = new Set([pick.i, ...joinedVerbs.map((f) => f.i), ...joinedVerbs.map((f) => f.i - 1)]);
  const objects = pick.i === words.length - 1 ? words.slice(0, pick.i) : words.slice(pick.i + 1).filter((_, k) => !skip.has(pick.i + 1 + k));
  let action = refine(pick.v!.base, pick.v!.category, objects, ctx);
  for (const other of joinedVerbs) {
    const alt = refine(other.v!.base, other.v!.category, objects, ctx);
    if (SEVERITY[alt.category] > SEVERITY[action.category]) action = alt;
  }
  return clear(pick) ? action : { ...action, weak: true };
}

const STOP = new Set(['a', 'an', 'the', 'new', 'to', 'of', 'for', 'from', 'in', 'on', 'all', 'any', 'one', 'or', 'and', 'with', 'by', 'using', 'your', 'its', 'their', 'this', 'that', 'specific', 'single', 'existing', 'given']);

/**
 * The description's action: the first verb of its first sentence, and the verbs listed with it
 * ("List, create, close, or select a tab" can close); the most dangerous of those wins.
 */
function descriptionAction(description: string, ctx: Parameters<typeof refine>[3]): Action | undefined {
  const sentence = firstSentence(description).replace(FLUFF, '');
  const phrase = phraseAction(sentence);
  if (phrase) return phrase;
  const raw = sentence.split(/\s+/).slice(0, 20);
  const words = raw.map((w) => w.replace(/[^a-z0-9-]/g, ''));
  const at = words.findIndex((w) => { const v = lookupVerb(w); return v && (!HTTP_METHODS.has(v.base) || v.base === 'get' || v.base === 'delete'); });
  if (at < 0) return undefined;
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
  const objects = words.slice(tail + 1, tail + 6).filter((w) => w && !STOP.has(w) && !lookupVerb(w)).slice(0, 3);
  let best: Action | undefined;
  for (const i of verbsAt) {
    const v = lookupVerb(words[i])!;
    const action = refine(v.base, v.category, objects, ctx);
    if (!best || SEVERITY[action.category] > SEVERITY[best.category]) best = action;
  }
  return best;
}

function bump(risk: Risk, steps = 1): Risk {
  return RISKS[Math.min(RISKS.length - 1, RISKS.indexOf(risk) + steps)];
}

const MEANING: Record<Category, string> = {
  Read: 'retrieve information and change nothing',
  Write: 'create or change state in a bounded, usually reversible way',
  Execute: 'run open-ended computation: code, queries, processes, or actions in a browser or on a device',
  Destructive: 'delete or irreversibly destroy data or resources, or remove protections',
  Financial: 'move money or create or change a financial obligation',
};


/** What the sibling tools say about the server, computed once per server. */
function browserLike(siblings: readonly string[]): boolean {
  return siblings.some((s) => /click/.test(s)) && siblings.some((s) => /navigate|screenshot/.test(s));
}

export function classifyTool(tool: ToolDefinition, server: ServerContext = {}, siblingsBrowse = browserLike(server.siblings ?? [])): Classification {
  const description = (tool.description ?? '').trim();
  const title = (tool.title ?? tool.annotations?.title ?? '').trim();
  const serverText = `${server.name ?? ''} ${server.instructions ?? ''}`.toLowerCase();
  const words = joinCompounds(nameWords(tool.name));
  const browser = siblingsBrowse || BROWSER_SERVER.test((server.name ?? '').toLowerCase()) || words.some((w) => BROWSER_SERVER.test(w));
  const lowerDescription = description.toLowerCase();
  const schemaText = JSON.stringify(tool.inputSchema ?? {}).toLowerCase();
  const ctx = {
    browser,
    description: `${lowerDescription} ${title.toLowerCase()}`,
    sql: SQL_CONTEXT.test(lowerDescription) || /"sql"/.test(schemaText),
    serverWords: new Set(nameWords(server.name ?? '')),
  };
  // Context from the server only counts where the tool itself says nothing.
  const withServer = { ...ctx, description: description ? ctx.description : `${ctx.description} ${serverText}` };
  const evidence: Evidence[] = [];
  const fromName = nameAction(words, withServer) ?? (AGENT_PROSE.test(firstSentence(description)) ? { verb: 'agent', category: 'Execute' as Category, objects: [], why: 'it hands the task to another autonomous agent' } : undefined);
  const fromTitle = title ? descriptionAction(title, ctx) : undefined;
  const fromDescription = description ? descriptionAction(description, ctx) : undefined;

  let action: Action | undefined;
  let agreement = false;
  if (fromName) {
    action = fromName;
    evidence.push({ from: 'name', text: fromName.verb });
    const other = fromDescription ?? fromTitle;
    if (other && fromName.weak) action = other;
    if (other) {
      agreement = other.category === fromName.category;
      // The description decides when the name only names a thing ("refund_guide") or when it
      // reveals a more dangerous effect of the same verb (a "session" that launches a script).
      if (other.category !== fromName.category) {
        const escalates = SEVERITY[other.category] > SEVERITY[fromName.category]
          && (other.category === 'Financial' ? MONEY_MOVES.test(lowerDescription) : other.category === 'Execute' && EXEC_PROSE.test(lowerDescription));
        if (escalates) action = other;
      }
      evidence.push({ from: description ? 'description' : 'title', text: firstSentence(description || title).slice(0, 120) });
    }
  } else if (fromDescription ?? fromTitle) {
    action = (fromDescription ?? fromTitle)!;
    evidence.push({ from: fromDescription ? 'description' : 'title', text: firstSentence(description || title).slice(0, 120) });
  }
  if (action && action.category !== 'Financial' && MONEY_MOVES.test(lowerDescription) && SEVERITY[action.category] >= SEVERITY.Write) {
    action = { ...action, category: 'Financial', why: 'the description says the call moves money' };
    evidence.push({ from: 'description', text: MONEY_MOVES.exec(lowerDescription)![0] });
  }
  if (action && !description && fromName && action.category === 'Execute' && EXEC_PROSE.test(serverText)) {
    evidence.push({ from: 'server', text: firstSentence(server.instructions ?? server.name ?? '').slice(0, 120) });
  }

  const signals = signalsOf(tool, words, `${lowerDescription} ${title.toLowerCase()}`);
  let category: Category = action?.category ?? (tool.annotations?.readOnlyHint ? 'Read' : 'Write');
  let confidence = action ? (fromName && (fromDescription || fromTitle) ? (agreement ? 0.9 : 0.8) : fromName ? 0.8 : 0.7) : 0.35;
  if (!description) signals.push('no_description');
  if (!description) confidence -= 0.1;

  const hints = tool.annotations ?? {};
  let risk = DEFAULT_RISK[category];
  if (hints.readOnlyHint === true && category !== 'Read') {
    signals.push('annotation_conflict');
    confidence -= 0.15;
    evidence.push({ from: 'annotations', text: 'readOnlyHint: true' });
  }
  if (hints.destructiveHint === true && SEVERITY[category] < SEVERITY.Destructive && category !== 'Read') {
    risk = bump(risk);
    evidence.push({ from: 'annotations', text: 'destructiveHint: true' });
  }
  if (hints.destructiveHint === false && category === 'Destructive') {
    signals.push('annotation_conflict');
    confidence -= 0.1;
    evidence.push({ from: 'annotations', text: 'destructiveHint: false' });
  }
  if (hints.openWorldHint === true && !signals.includes('open_world')) signals.push('open_world');
  if (category === 'Read' && signals.includes('credentials')) risk = 'medium';
  if (signals.includes('bulk') && category !== 'Read') risk = bump(risk);
  if (!action) category = tool.annotations?.readOnlyHint ? 'Read' : 'Write';

  const unique = [...new Set(signals)] as Signal[];
  const parts: string[] = [];
  if (action) {
    const source = action === fromName ? `The name says “${action.verb}”` : action === fromDescription || action === fromTitle ? `The ${action === fromTitle ? 'title' : 'description'} says “${firstSentence(description || title).slice(0, 100)}”` : 'The description says so';
    parts.push(`${source}: ${action.why}.`);
    if (action === fromName && (fromDescription || fromTitle)) parts.push(`${agreement ? 'The description agrees' : 'The description reads'}: “${firstSentence(description || title).slice(0, 100)}”.`);
    parts.push(`${category} tools ${MEANING[category]}.`);
  } else {
    parts.push(`Nothing in the name or description says what ${tool.name} does; it is treated as ${category} until someone looks.`);
  }
  if (!description && evidence.some((e) => e.from === 'server')) parts.push('The server\'s own description supplies the context.');
  if (category === 'Read' && unique.includes('credentials')) parts.push('It can return credentials, so the risk is raised to medium.');
  if (unique.includes('bulk') && category !== 'Read') parts.push('It acts on many items at once, so the risk is one step higher.');
  if (!description) parts.push('The description is empty, so confidence is lowered.');
  if (hints.destructiveHint === true && category !== 'Read' && SEVERITY[category] < SEVERITY.Destructive) parts.push('The server marks it destructive, so the risk is one step higher.');
  if (unique.includes('annotation_conflict')) parts.push('The server\'s own hints disagree; hints are self-reported, so the name decides and confidence is lowered.');
  return {
    name: tool.name,
    category,
    risk,
    confidence: Math.round(Math.max(0.2, Math.min(0.95, confidence)) * 100) / 100,
    signals: unique,
    rationale: parts.join(' '),
    evidence,
  };
}

/** Classifies every tool of one server, each with the others as its siblings. */
export function classifyTools(tools: readonly ToolDefinition[], server: Omit<ServerContext, 'siblings'> = {}): Classification[] {
  const siblings = tools.map((t) => t.name);
  const context = { ...server, siblings };
  const browse = browserLike(siblings);
  return tools.map((t) => classifyTool(t, context, browse));
}

