import {
  AGENT_NAMES, AMBIGUOUS, ARTEFACT_NOUNS, CJK_VERBS, CONTEXT_MONEY_NOUNS, ENGLISH_TEXT, FOREIGN_TEXT, FOREIGN_VERBS, DEPLOY_SERVER, METERED_NOUNS, DETACHABLE_NOUNS, EXEC_NOUNS, EXEC_PROSE,
  EDIT_NOUNS, GENERIC_DOCUMENTS, HTTP_METHODS, isNoun, NON_MONEY_QUALIFIERS, LANGUAGE_PARAM, LIGHT_NOUNS, lookupVerb, MAKING_VERBS, movesMoney, MONEY_NOUNS, MONEY_SERVER,
  MONEY_VERBS_ON_OBJECT, PAYMENT_PARAM, PHRASES, PICTURE_NOUNS, PROCESS_NOUNS, PROTECTION_NOUNS, QUERY_LANGUAGE, REPORT_NOUNS,
} from './lexicon.js';
import { article, capitalise, gerund, needsArticle, nounPhrase } from './prose.js';
import { signalsOf } from './signals.js';
import {
  DEFAULT_RISK, RISKS, SEVERITY, type Category, type Classification, type Evidence, type Risk, type ServerContext,
  type Signal, type ToolDefinition,
} from './types.js';
import { baseForms, nameWords } from './words.js';

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
  /** The object as a person would write it ("a pull request", "USDC to an address"). */
  phrase: string;
  /** What doing it does, as a predicate ("destroys data or removes a protection"). */
  effect: string;
  /** The verb opens its sentence, so verb and phrase read as the author wrote them. */
  lead?: boolean;
}

/** What the server as a whole says, computed once per server. */
export interface ServerProfile {
  browser: boolean;
  /** Nouns the sibling tools edit or delete: making one of those is a change to kept state, not a result handed back. */
  kept: Set<string>;
  /** Money is the server's business (payments, billing, an exchange, a wallet). */
  money: boolean;
  /** The server deploys applications (GitOps, CD): a sync there is a deployment. */
  deploy: boolean;
  /** The server's name, instructions or tool names speak of agents. */
  agents: boolean;
  text: string;
  words: Set<string>;
}

interface Context {
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
  /** The description says the input is written in a query language (computed on first use). */
  languageInput: () => boolean;
  /** The verb the description opens with, if it opens with one (computed on first use). */
  leadVerb: () => { base: string; category: Category } | undefined;
}

const COMPOUND_NOUNS: [string, string][] = [['call', 'stack'], ['user', 'agent'], ['merge', 'request'], ['pull', 'request'], ['merge', 'requests'], ['pull', 'requests'], ['sign', 'in'], ['payment', 'method'], ['auto', 'renewal'], ['commit', 'message']];
const FLUFF = /^(?:this (?:tool|function|endpoint) (?:will |can |is used to |lets you |allows you to )?|use this (?:tool )?to |tool (?:to|for) |allows? (?:you |the agent |users )?to |helps? (?:you )?(?:to )?|lets you |used to |a tool (?:to|that|for) |you can |(?:an? )?(?:simple |powerful )?(?:tool|utility|function) (?:to|that|for) )/i;
const BROWSER_SERVER = /playwright|puppeteer|browser|chrome|devtools|selenium|webdriver/;
const SAVES_TO_DISK = /\b((?:exports?|saves?|writes?|dumps?) (?:[\w.-]+ ){0,5}?to (?:a |an |the )?(?:[\w.-]+ )?(?:file|disk|folder|directory|path)\b|will be saved|are saved|is saved|output ?dir(?:ectory)?|saves (?:it |them |the \w+ )?(?:to|as|in) (?:a |the )?(?:file|disk|folder|directory|path)|writes (?:it |them |the \w+ )?to (?:a |the )?(?:file|disk))\b/;
const AGENT_MESSAGE = /\b(?:send|sends|sending|post|posts|dispatch|dispatches|assign|assigns) (?:a |the |this |new )?(?:message|task|prompt|instruction|job)s? to (?:one or more |an? |the |another |other |each |all )?(?:[\w-]+ )?agents?\b/;
const AGENT_PROSE = /^(?:an? )?(?:autonomous|ai|coding|code)?[\w -]{0,24}(?<!\buser|\bhttp) (?:agent|assistant)\b/;
const SQL_CONTEXT = /\b(sql|select [\w*]+ from|postgres\w*|mysql|sqlite|database query|read-only query)\b/;
/** Prose that makes a change permanent: removed "permanently", work discarded. */
const IRREVERSIBLE = /\b(permanently|irreversibl[ey]|cannot be undone|can ?not be (?:undone|recovered|reversed)|can't be undone|unrecoverable|no way to undo|hard reset|discard(?:s|ing)? (?:all |any |local |your )?(?:uncommitted |unsaved |local )?(?:changes|work|modifications|commits)|(?:changes|work) (?:will be|are) lost|wipes?|erases?|purges?|clear(?:s|ing)? all|delet(?:es|ing) all)\b/;
/** Prose that says the call replaces a whole document, whatever its verb: the old one is gone. */
const REPLACES_WHOLE = /(?<![\w-])(?:destructive\s*[:!]|replac(?:es|ing) (?:all (?:of )?)?(?:the |its )?(?:(?:entire|whole) (?:document|diagram|workspace|project|canvas|board|database|model|graph|sheet|workbook|notebook|collection|environment)\b|contents? of\b))/;
/** Words that turn what follows into what the call does *not* do ("without touching", "instead of X, which wipes"). */
const NEGATED = /\b(?:without|instead of|unlike|rather than|not|never|no|doesn't|won't|don't|blocked|refuses?|disallowed|forbidden|denied)\b/i;

/** The first mention of `re` in `text` that the sentence does not negate or contrast away. */
function affirmed(re: RegExp, text: string): string | undefined {
  if (!re.test(text)) return undefined;
  const global = new RegExp(re.source, 'g');
  for (let m = global.exec(text); m; m = global.exec(text)) {
    const start = Math.max(0, m.index - 60);
    const before = text.slice(start, m.index);
    const clause = before.slice(Math.max(before.lastIndexOf('. '), before.lastIndexOf('; '), before.lastIndexOf('\n')) + 1);
    if (!NEGATED.test(clause)) return m[0];
  }
  return undefined;
}

const ACTION_PARAM = /^(?:action|actions|operation|operations|op|mode|command|subcommand|cmd|method_name|\w+_(?:action|operation|mode)|[a-z]+(?:Action|Operation|Mode)|(?:action|operation|op)_?(?:type|name|kind)|(?:action|operation)(?:Type|Name|Kind))$/;
const FORCE_PARAM = /^(force|hard|permanent|permanently|purge|force_delete|hard_delete|forced)$/i;
/** Verbs a force option turns into a destruction (a force push rewrites history; a forced checkout discards changes). */
const FORCEABLE = new Set(['push', 'reset', 'checkout', 'restore', 'revert', 'clean', 'switch', 'rebase', 'overwrite', 'sync', 'pull']);
const QUERY_PARAM = /(?:^q$|query|sql|statement|stmt|cypher|expression|expr)/i;
const OUTPUT_FILE_PARAM = /^(output_?path|output_?file|save_?path|save_?to|out_?file|output_?dir(ectory)?|output_?filename)$/i;

const COMPOUND_HEADS = new Set(COMPOUND_NOUNS.map(([a]) => a));

function joinCompounds(words: string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < words.length; i++) {
    const pair = COMPOUND_NOUNS.find(([a, b]) => words[i] === a && words[i + 1] === b);
    if (pair) { out.push(`${pair[0]}_${pair[1]}`); i++; } else if (!/^v\d+$/.test(words[i])) out.push(words[i]);
  }
  return out;
}

interface Sentence { text: string; lower: string }
const HEADING = /^[\w -]{0,40}\b(?:operations|actions|commands|functions|tools|utilities|management|helpers):\s/i;
const sentences = new Map<string, Sentence>();

/** The first sentence, without markdown, as written and lower-cased (memoised: rationale and evidence quote it too). */
function firstSentence(text: string): Sentence {
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
function quote(text: string): string {
  if (text.length <= 100) return text;
  return `${text.slice(0, 100).replace(/\s+\S*$/, '')}…`;
}

function lightFor(verb: string, objects: string[]): boolean {
  const set = verb === 'delete' ? LIGHT_NOUNS : DETACHABLE_NOUNS;
  return objects.some((o) => isNoun(set, o));
}

const PAGES = new Set(['page', 'pages', 'tab', 'tabs']);
/** What a browser shows: opening, choosing or switching one is navigation. */
const VIEWS = new Set([...PAGES, 'window', 'windows']);
/** Verbs that open or choose what a browser shows. */
const VIEWING_VERBS = new Set(['new', 'open', 'create', 'add', 'select', 'switch', 'activate']);
/** Parts of a page a browser action works on. */
const ELEMENT_NOUNS = new Set(['element', 'elements', 'checkbox', 'checkboxes', 'input', 'inputs', 'field', 'fields', 'option', 'options', 'radio', 'button', 'buttons', 'dropdown', 'textbox', 'textarea', 'focus', 'selector']);
/** Verbs that, done to a page element, act as a user would (SPEC: actions in a browser are Execute). */
const ELEMENT_VERBS = new Set(['check', 'uncheck', 'clear', 'empty', 'move', 'set', 'remove', 'toggle', 'select', 'fill', 'enter', 'change']);
/** Who a question can be put to that answers by running a model: asking one is a call to another agent. */
const MODEL_NOUNS = new Set(['ai', 'assistant', 'agent', 'copilot', 'llm', 'gpt', 'chatbot', 'bot']);
/** Words that open a name which only asks a yes-or-no question ("is_enabled", "has_access"). */
const PREDICATES = new Set(['is', 'has', 'can', 'does', 'are']);
const METERED_VERBS = new Set(['create', 'record', 'report', 'ingest', 'track', 'send', 'add', 'grant', 'deduct', 'consume', 'use', 'spend', 'submit', 'log']);
/** Obligation verbs that, on a money server, make a generic document Financial. */
const MONEY_DOCUMENT_VERBS = new Set(['create', 'update', 'submit', 'cancel', 'amend', 'approve', 'void', 'modify', 'edit', 'issue', 'finalize']);
/** Heads that carry the money of the word before them ("payment link", "expense claim", "bounty application"). */
const MONEY_HEADS = new Set(['link', 'item', 'intent', 'session', 'charge', 'method', 'order', 'event', 'events', 'record', 'note', 'receipt', 'memo', 'claim', 'entry', 'application', 'request', 'voucher']);
/** Verbs that, done to a deployment, deploy. */
const DEPLOYING_VERBS = new Set(['create', 'new', 'promote', 'rollback', 'revert', 'redeploy', 'retry', 'rerun', 'trigger', 'restart']);
/** What a platform builds a service from. */
const BUILD_SOURCES = new Set(['repo', 'repository', 'image', 'dockerfile', 'git']);
/** What runs when it is submitted or started. */
const RUNNABLE = new Set(['job', 'jobs', 'build', 'builds', 'pipeline', 'pipelines', 'workflow', 'workflows', 'batch', 'jcl', 'server', 'container', 'containers', 'vm', 'instance', 'instances', 'agent', 'agents', 'crawl', 'scan', 'run', 'task', 'tasks', 'emulator', 'simulator', 'sandbox']);
/** Automations: activating one lets it run on its triggers. */
const AUTOMATIONS = new Set(['workflow', 'workflows', 'pipeline', 'pipelines', 'automation', 'automations', 'trigger', 'triggers', 'cron', 'schedule', 'schedules', 'job', 'jobs', 'zap', 'zaps', 'flow', 'flows']);
/** Containers an item is removed from, not destroyed ("remove a record from a list"). */
const CONTAINERS = new Set(['list', 'lists', 'group', 'groups', 'collection', 'collections', 'set', 'playlist', 'board', 'team', 'project', 'cart', 'channel', 'queue', 'role', 'organization', 'workspace', 'space', 'album', 'segment', 'audience', 'favorites', 'watchlist', 'sequence', 'campaign']);
/** Containers whose items live on elsewhere (a queue's jobs live only in it). */
const MEMBERSHIPS = new Set([...CONTAINERS].filter((c) => c !== 'queue'));
/** "… from an access group": the container something is taken out of. */
const FROM_CONTAINER = /\bfrom (?:an? |the |this |its |their )?(?:[\w-]+ )?(\w+)\b/;
/** A description that says what is removed from what ("removes a domain from a project"). */
const REMOVED_FROM = /\b(?:remov|unassign|detach)(?:e|es|ed|ing)? (?!all\b|every)(?:an? |the |this |one )?[\w -]{0,30}? from (?:an? |the |this |its |their )?(?:[\w-]+ )?(\w+)\b/;
/** Sign-in flows: starting one opens a session, it runs nothing. */
const SIGN_IN = new Set(['auth', 'authentication', 'login', 'signin', 'sign_in', 'oauth', 'authorization', 'onboarding']);
/** Conversations: starting one sends a message, it runs nothing. */
const TALK_NOUNS = new Set(['conversation', 'conversations', 'chat', 'chats', 'thread', 'threads', 'discussion', 'dm']);
const APPS = new Set(['app', 'apps', 'application', 'applications', 'service', 'services', 'release', 'releases', 'deployment', 'deployments', 'stack', 'stacks']);
const READ_ONLY = /\b((?:read-only|readonly|read only)(?![ -](?:commands?|quer(?:y|ies)|operations?|statements?|sql|tools?|actions?|mode))|does not (?:modify|change|write)|doesn't (?:modify|change)|without (?:modifying|changing) anything|lecture seule|solo lectura)\b|只读|不产生任何变更|不会产生任何副作用/;

function isMoney(o: string, verb: string, ctx: Context): boolean {
  return isNoun(MONEY_NOUNS, o) || (ctx.money && (baseForms(o).some((f) => CONTEXT_MONEY_NOUNS.get(f)?.has(verb)) || (METERED_NOUNS.has(o) && METERED_VERBS.has(verb))));
}

/** Refines a verb's category by what it acts on and where. */
function refine(verb: string, base: Category, objects: string[], ctx: Context, phrase = nounPhrase(objects), direct = objects[objects.length - 1]): Action {
  const has = (set: Set<string>) => objects.some((o) => isNoun(set, o));
  const act = (category: Category, effect: string): Action => ({ verb, category, objects, phrase, effect });
  if (HTTP_METHODS.has(verb) && objects.filter((o) => !ctx.serverWords.has(o) && o !== 'api' && o !== 'http' && o !== 'request').length === 0) {
    const raw = { ...act('Execute', 'calls an arbitrary API'), phrase: `a raw HTTP ${verb.toUpperCase()} request` };
    if (verb === 'get') return { ...raw, category: 'Read', effect: 'only reads' };
    if (verb === 'delete') return { ...raw, category: 'Destructive', effect: 'can destroy whatever the endpoint names' };
    return raw;
  }
  if ((MONEY_VERBS_ON_OBJECT[verb] || (ctx.money && METERED_VERBS.has(verb))) && objects.length > 0) {
    // "work order", "access token": a qualifier before a word picks its sense.
    const qualified = (i: number) => i > 0 && NON_MONEY_QUALIFIERS.has(objects[i - 1]) && !isNoun(MONEY_NOUNS, objects[i]);
    const moneyAt = (i: number) => isMoney(objects[i], verb, ctx) && !qualified(i);
    const directAt = objects.lastIndexOf(direct);
    const moneyHead = (directAt >= 0 ? moneyAt(directAt) : isMoney(direct, verb, ctx)) || (MONEY_HEADS.has(direct) && objects.some((_, i) => moneyAt(i)));
    if (moneyHead && !isNoun(REPORT_NOUNS, direct)) return act('Financial', 'moves money or creates an obligation to pay');
    // Where money is the business, a document of any type can be an invoice or an order.
    if (ctx.money && GENERIC_DOCUMENTS.has(direct) && MONEY_DOCUMENT_VERBS.has(verb) && objects.filter((o) => !ctx.serverWords.has(o)).length === 1) return act('Financial', 'can create or change a money document (an invoice, an order, a payment) on a server whose business is money');
  }
  if (['renew', 'register', 'purchase', 'buy', 'order'].includes(verb) && objects.some((o) => o === 'domain' || o === 'domains')) return act('Financial', 'buys something that is billed');
  if (['disable', 'remove', 'unset', 'turn', 'deactivate', 'delete', 'clear', 'unlock', 'drop', 'bypass'].includes(verb) && has(PROTECTION_NOUNS)) {
    return act('Destructive', 'removes a protection');
  }
  // "send JavaScript commands to the app": what receives code or commands runs them.
  if (['send', 'dispatch', 'inject', 'issue', 'pass'].includes(verb) && objects.some((o) => ['command', 'commands', 'script', 'scripts', 'code', 'javascript', 'js'].includes(o))) return act('Execute', 'sends code or commands that the other end runs');
  // "Make an HTTP request to any URL": whatever the endpoint does, with the method the caller picks.
  if (['make', 'send', 'perform', 'execute', 'issue', 'do'].includes(verb) && objects.includes('request') && objects.some((o) => o === 'http' || o === 'https' || o === 'api' || o === 'rest')) return { ...act('Execute', 'calls an arbitrary API'), phrase: phrase || 'an HTTP request' };
  if ((verb === 'ask' || verb === 'consult') && has(MODEL_NOUNS)) return act('Execute', 'hands the question to another agent, which runs a model');
  if (ctx.browser && ELEMENT_VERBS.has(verb) && has(ELEMENT_NOUNS)) return act('Execute', 'is a browser or device action that clicks, types or submits');
  if (ctx.browser && VIEWING_VERBS.has(verb) && VIEWS.has(direct ?? '')) return act('Read', 'only changes which page is shown');
  switch (base) {
    case 'Destructive':
      if (['remove', 'delete', 'clear', 'unlink', 'detach', 'revoke'].includes(verb) && lightFor(verb, objects)) return act('Write', 'is a small change that can be undone by adding it back');
      // "remove a record from a list": the record stays; only its membership goes.
      if (['remove', 'unassign', 'detach'].includes(verb) && (objects.some((o, i) => o === 'from' && CONTAINERS.has(objects[i + 1] ?? '')) || MEMBERSHIPS.has(FROM_CONTAINER.exec(phrase.toLowerCase())?.[1] ?? '') || MEMBERSHIPS.has(REMOVED_FROM.exec(ctx.description.slice(0, 200))?.[1] ?? ''))) return act('Write', 'is a small change that can be undone by adding it back');
      if (['terminate', 'kill', 'clean'].includes(verb) && has(PROCESS_NOUNS)) return act('Write', 'stops a process and destroys no data');
      return act('Destructive', 'destroys data or removes a protection');
    case 'Execute':
      if (verb === 'start' && has(PROCESS_NOUNS) && !has(EXEC_NOUNS)) return act('Write', 'is a bounded change');
      if (verb === 'start' && has(TALK_NOUNS)) return act('Write', 'opens a conversation, which sends a message');
      if (['run', 'perform', 'execute', 'start', 'trigger', 'begin'].includes(verb) && (has(REPORT_NOUNS) || ['search', 'crawl', 'lookup'].includes(objects[0] ?? '')) && !has(EXEC_NOUNS)) return act('Read', 'only reads: the report or audit is predefined');
      // "start_auth", "start a login flow": only a process, program or job is run by starting it.
      if (verb === 'start' && objects.some((o) => SIGN_IN.has(o))) return act('Write', 'is a bounded change');
      if (verb === 'drop' && !ctx.browser) return act('Destructive', 'destroys what it names');
      if (verb === 'apply' && has(EDIT_NOUNS)) return act('Write', 'changes state in a bounded way');
      if (verb === 'build' && objects.some((o) => ARTEFACT_NOUNS.has(o))) return act('Read', HANDS_BACK);
      if (['type', 'press', 'fill', 'click', 'tap', 'hover', 'drag', 'drop', 'swipe', 'scroll', 'handle'].includes(verb)) return act('Execute', 'is a browser or device action that clicks, types or submits');
      return act('Execute', 'runs open-ended computation');
    case 'Write':
      if (['clear', 'reset', 'empty'].includes(verb) && (objects.some((o) => o === 'all' || o === 'everything' || o === 'entire') || /^(?:all|everything|the entire|the whole|every)\b/i.test(phrase))) return act('Destructive', 'discards everything it holds');
      // "submit a job", "enqueue a build": the job runs.
      if (['submit', 'queue', 'enqueue'].includes(verb) && has(RUNNABLE)) return act('Execute', 'runs it');
      // "add a job to the queue": a worker picks it up and runs it.
      if (['add', 'push', 'create', 'new'].includes(verb) && objects.some((o) => o === 'job' || o === 'jobs') && /\bqueue/.test(`${objects.join(' ')} ${phrase.toLowerCase()} ${ctx.description.slice(0, 200)}`)) return act('Execute', 'queues it for a worker, which runs it');
      // "activate a workflow": it runs from now on, whenever its trigger fires.
      if (['activate', 'enable'].includes(verb) && objects.some((o) => AUTOMATIONS.has(o))) return act('Execute', 'lets it run whenever its trigger fires');
      // Deployments in other words: making, promoting or rolling back a deployment deploys.
      if (DEPLOYING_VERBS.has(verb) && objects.some((o) => o === 'deployment' || o === 'deployments')) return act('Execute', 'deploys it, running whatever the deployment runs');
      // "create a service from a GitHub repository": the platform builds and deploys it.
      if (['create', 'new', 'add'].includes(verb) && [...objects, ...ctx.nameNouns()].some((o) => APPS.has(o)) && [...objects, ...ctx.nameNouns()].some((o) => BUILD_SOURCES.has(o))) {
        return act('Execute', 'builds and deploys it, running whatever its build runs');
      }
      if (MAKING_VERBS.has(verb) && !objects.some((o) => isNoun(ctx.kept, o)) && (verb === 'create' || verb === 'make' ? has(PICTURE_NOUNS) : objects.some((o) => isNoun(ARTEFACT_NOUNS, o) || isNoun(REPORT_NOUNS, o))) && !SAVES_TO_DISK.test(ctx.description)) {
        return act('Read', HANDS_BACK);
      }
      if (['create', 'generate', 'make', 'new'].includes(verb) && has(REPORT_NOUNS) && !objects.some((o) => isNoun(ctx.kept, o))) return act('Read', 'only reads data');
      if (verb === 'resolve' && objects.some((o) => ['id', 'name', 'identifier', 'address', 'alias', 'reference'].includes(o))) return act('Read', 'only looks up an identifier');
      if (['connect', 'create', 'open', 'new', 'attach', 'complete', 'prepare', 'apply'].includes(verb) && (has(EXEC_NOUNS) || EXEC_PROSE.test(ctx.description))) {
        return act('Execute', 'starts or attaches to a running process, debugger or interpreter');
      }
      if (['import', 'load', 'source'].includes(verb) && (has(EXEC_NOUNS) || /\b(?:sql|script)\b/.test(phrase.toLowerCase()))) return act('Execute', 'runs the statements of the file it loads');
      if (ctx.deploy && ['sync', 'promote', 'rollout', 'release', 'redeploy'].includes(verb) && objects.some((o) => APPS.has(o))) return act('Execute', 'deploys it, running whatever the deployment runs');
      if (verb === 'switch' && ctx.browser && objects.some((o) => ['tab', 'tabs', 'page', 'pages', 'window', 'frame'].includes(o))) return act('Read', 'only changes which page is shown');
      if (verb === 'submit' && ctx.browser && objects.includes('form')) return act('Execute', 'submits input in a browser');
      if ((verb === 'upload' || verb === 'select') && ctx.browser && !PAGES.has(direct) && !(direct === 'browser' && PAGES.has(objects[1]))) return act('Execute', 'submits input in a browser');
      return act('Write', 'changes state in a bounded way');
    case 'Read':
      if (verb === 'download' && SAVES_TO_DISK.test(ctx.description)) return act('Write', 'writes the downloaded files to disk');
      if (['export', 'dump', 'render', 'convert', 'print'].includes(verb) && SAVES_TO_DISK.test(ctx.description)) return act('Write', 'writes the result to a file');
      if ((['query', 'search', 'run', 'execute', 'find', 'select', 'aggregate'].includes(verb) && (ctx.sql || (QUERY_LANGUAGE.test(ctx.description) && ctx.queryInput()))) || ctx.languageInput()) {
        return act('Execute', 'runs a query language, which is Execute even when it only reads');
      }
      return act('Read', 'only reads');
    case 'Financial':
      if ((verb === 'checkout' || verb === 'charge' || verb === 'swap' || verb === 'trade') && !ctx.money && !objects.some((o) => isMoney(o, 'create', ctx))) {
        return act('Write', 'changes state in a bounded way');
      }
      return act('Financial', 'moves money');
  }
}

/** A word pair that names one action ("port forward", "go back", "kick off", "research agent"). */
function phraseAction(text: string): Action | undefined {
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
function nameAction(words: string[], ctx: Context): Action | undefined {
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
  const clear = (f: (typeof real)[number]) => !AMBIGUOUS.has(f.v!.base) && !AMBIGUOUS.has(f.w);
  const last = real[real.length - 1];
  // Of several verbs, the one the description opens with is the action ("read_apex_trigger": "Read Apex triggers").
  const lead = real.length > 1 ? ctx.leadVerb() : undefined;
  const agreed = real.length > 1 && lead ? real.find((f) => f.v!.base === lead.base) ?? real.find((f) => f.v!.category === lead.category) : undefined;
  const pick = agreed ?? (real[0].i === 0 ? real[0]
    : last.i === words.length - 1 && clear(last) ? last
      : real.find(clear) ?? real[0]);
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
  return clear(pick) ? action : { ...action, weak: true };
}

const STOP = new Set(['a', 'an', 'the', 'new', 'to', 'of', 'for', 'from', 'in', 'on', 'all', 'any', 'one', 'or', 'and', 'with', 'by', 'using', 'your', 'its', 'their', 'this', 'that', 'specific', 'single', 'existing', 'given']);
/** The description says the call's input is written in a query language ("get tasks using filter language"). */
const LANGUAGE_INPUT = new RegExp(`\\b(?:using|with|in|via) (?:a |an |the )?(?:\\w+ )?(?:filter language|query syntax|${QUERY_LANGUAGE.source.slice(3)}(?! (?:definitions?|source|text|code|files?|schemas?)\\b)`);
/** Verbs that take another action as their object ("continue editing", "start tracking"). */
const ASPECT_VERBS = new Set(['continue', 'start', 'stop', 'keep', 'resume', 'begin', 'finish']);
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
function descriptionAction(description: string, ctx: Context): Action | undefined {
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
  const firstVerb = sentence.split(/\s+/).findIndex((w) => lookupVerb(w.replace(/[^a-z0-9-]/g, '')));
  const phrase = phraseAction(sentence);
  const phraseAt = phrase ? sentence.split(/\s+/).indexOf(phrase.verb.split(' ')[0]) : -1;
  // An agent named as the thing acted on ("注册新的 AI Agent", "register an AI agent") is not work handed to it.
  if (phrase && !foreign && (firstVerb < 0 ? phraseAt === 0 || phrase.category !== 'Execute' || !/agent|assistant/.test(phrase.verb) : phraseAt <= firstVerb + 1)) return { ...phrase, phrase: objectPhrase(first.text.slice(fluff).split(/\s+/), sentence.split(/\s+/).indexOf(phrase.verb.split(' ').pop()!) + 1) };
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
  const compound = (i: number) => COMPOUND_HEADS.has(words[i]) && COMPOUND_NOUNS.some(([a, b]) => words[i] === a && words[i + 1] === b);
  // "for a completed story": a participle after a determiner describes a noun; it is not the action.
  const adjective = (i: number) => i > 0 && DETERMINER.test(words[i - 1]) && (words[i].endsWith('ed') || AMBIGUOUS.has(lookupVerb(words[i])!.base));
  // "Step 1": a word that is as often a noun, before a number, is the noun.
  const numbered = (i: number) => /^\d/.test(words[i + 1] ?? '') && AMBIGUOUS.has(lookupVerb(words[i])!.base);
  // "shrink notes": past the first word, the plural of a word that is as often a noun is the noun.
  const plural = (i: number, base: string) => i > 0 && words[i] !== base && words[i].endsWith('s') && AMBIGUOUS.has(base);
  // "from submitted invoices", "item selling price", "qty ordered": past the first word, a participle
  // describes a noun, unless an adverb, "by" or a conjunction makes it the action ("permanently deleting").
  // "Execute an INSERT, UPDATE, or DELETE query": capitalised SQL keywords name kinds of statement.
  const keyword = (i: number) => SQL_KEYWORDS.has(words[i]) && /^\(?[A-Z]{3,}\W*$/.test(raw[i]) && /\b(?:quer(?:y|ies)|statements?|sql)\b/.test(sentence);
  // "Reporting des projets", "Billing overview": an opening -ing noun with no article after it is a heading.
  const heading = (i: number, base: string) => i === 0 && words[0].endsWith('ing') && AMBIGUOUS.has(base) && !DETERMINER.test(words[1] ?? '');
  const participle = (i: number, base: string) => heading(i, base) || i > 0 && words[i] !== base && /(?:ed|ing)$/.test(words[i]) && !/ly$/.test(words[i - 1]) && !ACTING.test(words[i - 1]) && !raw[i - 1].endsWith(',');
  let at = words.findIndex((w, i) => { const v = lookupVerb(w); return v && (!HTTP_METHODS.has(v.base) || v.base === 'get' || v.base === 'delete') && !compound(i) && !adjective(i) && !numbered(i) && !plural(i, v.base) && !participle(i, v.base) && !keyword(i); });
  // "Scatter chart: price vs quantity ordered", "Gross profit analysis — composed chart showing…": a
  // description that opens by naming a picture or an overview describes what it hands back.
  const view = words.slice(0, Math.min(at < 0 ? words.length : at, 6)).find((w) => PICTURE_NOUNS.has(w) || VIEW_NOUNS.has(w));
  if (view && !SAVES_TO_DISK.test(ctx.description)) return { verb: 'show', category: 'Read', objects: [view], phrase: `${article(view)} ${view}`, effect: HANDS_BACK };
  if (at < 0) return undefined;
  // "link extraction": a noun before the action noun is its object, and the action noun the verb.
  const nominal = AMBIGUOUS.has(lookupVerb(words[at])!.base) ? actionNoun(words[at + 1] ?? '') : undefined;
  if (nominal) at += 1;
  const verbOf = (i: number) => (i === at && nominal) || lookupVerb(words[i])!;
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
  const objectsAfter = (from: number) => {
    const found = words.slice(from, from + 5).filter((w) => w && !STOP.has(w) && (!lookupVerb(w) || AMBIGUOUS.has(w) || REPORT_NOUNS.has(w) || ARTEFACT_NOUNS.has(w) || (w.endsWith('s') && lookupVerb(w)!.base !== w))).slice(0, 3);
    // A bare list of verbs ("breakpoint operations (set, get, remove)") acts on what the tool names.
    return found.length || from < words.length ? found : ctx.nameNouns();
  };
  const objects = foreign ? ctx.nameNouns() : objectsAfter(tail + 1);
  const phraseText = foreign ? nounPhrase(objects) : objectPhrase(raw, tail + 1);
  // The head of the first noun phrase is what the verb acts on ("the default payment method" → method).
  let direct: string | undefined;
  for (const w of foreign ? [] : words.slice(tail + 1, tail + 8)) {
    if (STOP.has(w) && !direct) continue;
    if (!w || STOP.has(w) || PHRASE_END.test(w) || PREPOSITION.test(w)) break;
    if (!lookupVerb(w) || AMBIGUOUS.has(w) || direct) direct = w;
  }
  let best: Action | undefined;
  const consider = (action: Action) => { if (!best || SEVERITY[action.category] > SEVERITY[best.category]) best = action; };
  for (const i of verbsAt) {
    const v = verbOf(i);
    consider({ ...refine(v.base, v.category, objects, ctx, phraseText, direct ?? (foreign ? objects[objects.length - 1] : objects[0])), lead: at === 0 });
  }
  for (const w of listed) {
    const v = lookupVerb(w);
    if (v && v.base === w) consider({ ...refine(v.base, v.category, objects, ctx, phraseText, direct ?? objects[0]), verb: v.base });
  }
  // Later clauses of the same sentence that open with a plain verb ("list handles, get a name, or close a handle").
  for (let j = tail + 2; j < words.length; j++) {
    const afterOr = words[j - 1] === 'or';
    if (!(afterOr || /[,):]$/.test(raw[j - 1]))) continue;
    const v = lookupVerb(words[j]);
    if (!v || v.base !== words[j] || (HTTP_METHODS.has(v.base) && v.base !== 'delete') || compound(j) || keyword(j)) continue;
    // A word that is as often a noun is a verb here only after "or", alone in its list item, or before a particle ("step into").
    if (AMBIGUOUS.has(v.base) && !afterOr && !/[,)]$/.test(raw[j]) && !PARTICLE.test(words[j + 1] ?? '')) continue;
    let from = j + 1;
    while (from < words.length && raw[from - 1].endsWith(',') && lookupVerb(words[from])) from++;
    const own = foreign ? objects : objectsAfter(from);
    consider({ ...refine(v.base, v.category, own, ctx, foreign ? phraseText : objectPhrase(raw, from), own[0]), verb: v.base });
  }
  return best;
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

const HANDS_BACK = 'hands the result back and changes nothing';
const LIGHT_EFFECTS = new Set(['stops a process and destroys no data', 'is a small change that can be undone by adding it back']);

/** Top-level input properties of a tool. */
function topProperties(tool: ToolDefinition): [string, Record<string, unknown>][] {
  const props = (tool.inputSchema as { properties?: unknown } | undefined)?.properties;
  if (!props || typeof props !== 'object') return [];
  return Object.entries(props as Record<string, unknown>).filter((e): e is [string, Record<string, unknown>] => !!e[1] && typeof e[1] === 'object');
}

function enumOf(schema: Record<string, unknown>): string[] {
  const values = Array.isArray(schema.enum) ? schema.enum : Array.isArray((schema.items as { enum?: unknown } | undefined)?.enum) ? (schema.items as { enum: unknown[] }).enum : [];
  return values.filter((v): v is string => typeof v === 'string').slice(0, 40);
}

/**
 * What the schema lets one call do beyond the name's verb: an `operation` enum that can also
 * delete, or a `force` flag on a push. The most dangerous plausible effect decides (SPEC 5).
 */
function schemaAction(tool: ToolDefinition, base: Action | undefined, objects: string[], ctx: Context): { action: Action; why: string } | undefined {
  let best: { action: Action; why: string } | undefined;
  let lower: { action: Action; why: string } | undefined;
  const consider = (action: Action, why: string) => {
    if (SEVERITY[action.category] > SEVERITY[best?.action.category ?? base?.category ?? 'Read']) best = { action, why };
  };
  for (const [name, schema] of topProperties(tool)) {
    const values = enumOf(schema);
    const verbs = values.filter((v) => { const w = nameWords(v)[0] ?? ''; return lookupVerb(w)?.base === w; });
    if (ACTION_PARAM.test(name) && base && FORCEABLE.has(base.verb) && values.includes('hard')) {
      consider({ ...base, category: 'Destructive', effect: 'discards work that cannot be recovered' }, `its \`${name}\` argument accepts "hard", which discards work`);
    }
    if (ACTION_PARAM.test(name) && verbs.length >= 2 && verbs.length * 2 >= values.length && !/\bfilter/.test(String(schema.description ?? '').toLowerCase())) {
      let most: Action | undefined;
      for (const value of values) {
        const [first, ...rest] = nameWords(value);
        const v = first ? lookupVerb(first) : undefined;
        if (!v || v.base === 'run' || HTTP_METHODS.has(v.base) && v.base !== 'delete' && v.base !== 'get') continue;
        // "modifyPlan" acts on the plan, "deleteCollection" on a collection; a bare "delete" on what the tool names.
        const own = rest.filter((w) => !ctx.serverWords.has(w));
        const action = refine(v.base, v.category, own.length ? own : ctx.nameNouns().length ? ctx.nameNouns() : objects, ctx);
        if (!most || SEVERITY[action.category] > SEVERITY[most.category]) most = action;
        consider(action, `its \`${name}\` argument can also ${value.replace(/[_-]+/g, ' ')}`);
      }
      // A generic name ("manage_data_model") does no more than its actions: if they only read, so does it.
      if (most?.category === 'Read' && base?.category === 'Write' && GENERIC_VERBS.has(base.verb)) {
        lower = { action: most, why: `its \`${name}\` argument only offers ${values.join(', ')}` };
      }
    }
    if (schema.type === 'boolean' && /^(?:delete|purge|wipe|erase)_?[a-z]/i.test(name)) {
      consider({ ...(base ?? { verb: 'delete', objects, phrase: nounPhrase(objects) }), category: 'Destructive', effect: 'can delete data as it goes' }, `its \`${name}\` option deletes data`);
    }
    if (LANGUAGE_PARAM.test(name) && base && base.effect !== HANDS_BACK) consider({ ...base, category: 'Execute', effect: 'runs a query language, which is Execute even when it only reads' }, `its \`${name}\` argument takes a query language`);
    if (FORCE_PARAM.test(name) && schema.type === 'boolean' && base && (FORCEABLE.has(base.verb) || SEVERITY[base.category] >= SEVERITY.Write && /overwrit|discard|los[et]|destroy|history/.test(String(schema.description ?? '').toLowerCase()))) {
      consider({ ...base, category: 'Destructive', effect: 'can discard work that cannot be recovered' }, `its \`${name}\` option forces the change through, discarding what it replaces`);
    }
  }
  return best ?? lower;
}

/** Whether the schema lets the result be written to a file. */
function writesFile(tool: ToolDefinition): boolean {
  return topProperties(tool).some(([name, schema]) => OUTPUT_FILE_PARAM.test(name) || enumOf(schema).includes('file'));
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

const KEEPING_VERBS = new Set(['update', 'edit', 'delete', 'modify', 'rename', 'remove', 'patch']);

/** The nouns that sibling tools update, edit or delete ("update-quote" keeps quotes). */
function keptNouns(siblings: readonly string[], serverWords: Set<string>): Set<string> {
  const out = new Set<string>();
  for (const s of siblings) {
    const words = nameWords(s);
    if (!words.some((w) => KEEPING_VERBS.has(w))) continue;
    for (const w of words) if (!serverWords.has(w) && !KEEPING_VERBS.has(w)) for (const f of baseForms(w)) out.add(f);
  }
  return out;
}

const AGENTS = /\bagents?\b/;

/** What the sibling tools and the server's own words say, computed once per server. */
export function serverProfile(server: ServerContext): ServerProfile {
  const siblings = server.siblings ?? [];
  const text = `${server.name ?? ''} ${server.instructions ?? ''}`.toLowerCase();
  const siblingWords = siblings.map((s) => nameWords(s).join(' ')).join(' ');
  return {
    browser: (siblings.some((s) => /click/.test(s)) && siblings.some((s) => /navigate|screenshot/.test(s))) || BROWSER_SERVER.test((server.name ?? '').toLowerCase()),
    money: MONEY_SERVER.test(text) || MONEY_SERVER.test(siblingWords),
    deploy: DEPLOY_SERVER.test(text) || DEPLOY_SERVER.test(siblingWords),
    agents: AGENTS.test(text) || siblings.some((s) => AGENTS.test(s)),
    text,
    words: new Set(nameWords(server.name ?? '')),
    kept: keptNouns(siblings, new Set(nameWords(server.name ?? ''))),
  };
}

/** Verbs a name can hide more behind: the description's wider list of actions decides. */
const GENERIC_VERBS = new Set(['manage', 'handle', 'process', 'perform', 'configure', 'modify', 'operate', 'control', 'do', 'use', 'edit', 'update', 'change', 'sync']);

/** Verbs that say nothing on their own ("send", "run", "ship"): with no object, the description decides. */
const OPAQUE_VERBS = new Set(['send', 'run', 'process', 'submit', 'execute', 'call', 'handle', 'perform', 'do', 'go', 'start', 'trigger', 'make', 'apply', 'use', 'invoke', 'ship', 'push', 'request', 'manage', 'transfer', 'create', 'new', 'buy', 'order', 'get', 'set', 'update', 'action', 'tool', 'launch']);

type Source = 'name' | 'description' | 'title' | 'schema' | 'server';

export function classifyTool(tool: ToolDefinition, server: ServerContext = {}, profile: ServerProfile = serverProfile(server)): Classification {
  const description = (tool.description ?? '').trim();
  const title = (tool.title ?? tool.annotations?.title ?? '').trim();
  const words = joinCompounds(nameWords(tool.name));
  // Bounded: the reasoning lives in a description's opening, and regexes stay cheap on huge ones.
  const lowerDescription = description.slice(0, 1500).toLowerCase();
  let languageInput: boolean | undefined;
  let queryInput: boolean | undefined;
  let leadVerb: { base: string; category: Category } | null | undefined;
  let nameNouns: string[] | undefined;
  const ctx: Context = {
    browser: profile.browser || words.some((w) => BROWSER_SERVER.test(w)),
    money: profile.money || MONEY_SERVER.test(lowerDescription.slice(0, 300)),
    deploy: profile.deploy,
    description: `${lowerDescription} ${title.toLowerCase()}${writesFile(tool) ? ' will be saved' : ''}`,
    // Only a few verbs ask; the schema's text is costly to build for every tool.
    get sql() {
      const schemaText = JSON.stringify(tool.inputSchema ?? {}).slice(0, 4000).toLowerCase();
      // A query language runs only where an argument carries one ("search procedures by their SQL text" does not).
      const value = (SQL_CONTEXT.test(lowerDescription) || /"sql"/.test(schemaText) || QUERY_LANGUAGE.test(schemaText)) && this.queryInput();
      Object.defineProperty(this, 'sql', { value });
      return value;
    },
    queryInput: () => (queryInput ??= topProperties(tool).some(([name]) => QUERY_PARAM.test(name) || LANGUAGE_PARAM.test(name))),
    serverWords: profile.words,
    kept: profile.kept,
    languageInput: () => (languageInput ??= LANGUAGE_INPUT.test(lowerDescription.slice(0, 200))),
    leadVerb: () => {
      if (leadVerb === undefined) {
        const first = firstSentence(description);
        leadVerb = lookupVerb(first.lower.slice(FLUFF.exec(first.text)?.[0].length ?? 0).split(/\s+/, 1)[0].replace(/[^a-z0-9-]/g, '')) ?? null;
      }
      return leadVerb ?? undefined;
    },
    nameNouns: () => (nameNouns ??= words.filter((w) => !profile.words.has(w) && (!lookupVerb(w) || AMBIGUOUS.has(w)))),
  };
  // Context from the server only counts where the tool itself says nothing.
  const withServer: Context = description ? ctx : Object.create(ctx, { description: { value: `${ctx.description} ${profile.text}` } });
  const evidence: Evidence[] = [];
  const firstLine = firstSentence(description || title);
  const agentNamed = words.some((w) => AGENT_NAMES.has(w)) && /\b(agent|assistant|prompt|task)s?\b/.test(lowerDescription);
  const fromName = nameAction(words, withServer) ?? (AGENT_PROSE.test(firstLine.lower) || agentNamed ? { verb: 'agent', category: 'Execute' as Category, objects: [], phrase: 'the task', effect: 'hands work to another autonomous agent' } : undefined);
  const fromTitle = title ? descriptionAction(title, ctx) : undefined;
  const fromDescription = description ? descriptionAction(description, ctx) : undefined;
  const other = fromDescription ?? fromTitle;
  const otherFrom: Source = fromDescription ? 'description' : 'title';

  let action: Action | undefined;
  let source: Source = 'name';
  let agreement = false;
  /** Why the description won over the name, or the name over a disagreeing description. */
  let verdict = '';
  if (fromName) {
    action = fromName;
    evidence.push({ from: 'name', text: fromName.verb });
    if (other) {
      evidence.push({ from: otherFrom, text: quote(firstLine.lower) });
      agreement = other.category === fromName.category;
      const opaque = OPAQUE_VERBS.has(fromName.verb) && fromName.objects.filter((o) => !ctx.serverWords.has(o)).length === 0 && !fromName.phrase.startsWith('a raw');
      const escalates = SEVERITY[other.category] > SEVERITY[fromName.category] && (
        other.category === 'Financial' ? !!movesMoney(firstLine.lower)
          : other.category === 'Execute' ? EXEC_PROSE.test(lowerDescription) || QUERY_LANGUAGE.test(lowerDescription) || other.effect.includes('another agent')
            : other.category === 'Write' && other.effect.startsWith('writes the') ? true
            : other.category === 'Destructive' ? GENERIC_VERBS.has(fromName.verb) || !!affirmed(IRREVERSIBLE, lowerDescription.slice(0, 400))
              : GENERIC_VERBS.has(fromName.verb));
      if (!agreement && (fromName.weak || opaque || escalates)) {
        action = other;
        source = otherFrom;
        verdict = escalates
          ? `it reveals a more dangerous effect than the name “${fromName.verb}” suggests, and the most dangerous plausible effect decides`
          : `the name's “${fromName.verb}” ${opaque ? 'says nothing about what it acts on' : 'is as often a noun as a verb'}, so the ${otherFrom} decides`;
      } else if (!agreement) {
        verdict = SEVERITY[fromName.category] > SEVERITY[other.category]
          ? `the name's “${fromName.verb}” is the more dangerous plausible effect, so the name decides`
          : `it names no effect clear enough to overrule the name, so the name decides`;
      }
    }
  } else if (other) {
    action = other;
    source = otherFrom;
    evidence.push({ from: otherFrom, text: quote(firstLine.lower) });
  }
  // Later sentences of the description, then the server's own words, before giving up.
  if (!action && description) {
    const rest = description.slice(firstLine.text.length + 1);
    action = rest.trim() ? descriptionAction(rest, ctx) : undefined;
    if (action) { source = 'description'; evidence.push({ from: 'description', text: quote(firstSentence(rest).lower) }); }
  }
  const notes: string[] = [];
  const base = action;
  const widened = schemaAction(tool, action, action?.objects.length ? action.objects : words, ctx);
  if (widened) {
    action = widened.action;
    if (!base) source = 'schema';
    notes.push(`${capitalise(widened.why)}, ${widened.why.includes('only offers') ? 'so it does no more than they do' : 'and the most dangerous plausible effect decides'}.`);
    evidence.push({ from: 'schema', text: widened.why });
  }
  const irreversible = action && !LIGHT_EFFECTS.has(action.effect) && action.category !== 'Destructive' && action.category !== 'Financial'
    ? (/destructive|replac/.test(lowerDescription) ? affirmed(REPLACES_WHOLE, lowerDescription.slice(0, 400)) : undefined) ?? (action.category !== 'Read' ? affirmed(IRREVERSIBLE, lowerDescription.slice(0, 400)) : undefined)
    : undefined;
  if (action && irreversible) {
    action = { ...action, category: 'Destructive', effect: 'cannot be undone' };
    notes.push(`The description says “${irreversible.replace(/\s*[:!]$/, '')}”, so the change cannot be undone.`);
    evidence.push({ from: 'description', text: irreversible });
  }
  // On a server that runs agents, a message or task sent to one is work handed to it.
  if (action && SEVERITY[action.category] < SEVERITY.Execute && lowerDescription.includes('agent') && AGENT_MESSAGE.test(lowerDescription.slice(0, 300)) && profile.agents) {
    action = { ...action, category: 'Execute', effect: 'hands work to another agent' };
    notes.push('It sends work to another agent, which runs it (SPEC: calls to other agents are Execute).');
    evidence.push({ from: 'description', text: AGENT_MESSAGE.exec(lowerDescription)![0] });
  }
  const moneyText = lowerDescription.slice(0, 300);
  const said = action && action.category !== 'Financial' && SEVERITY[action.category] >= SEVERITY.Write ? movesMoney(moneyText) : undefined;
  if (action && said) {
    action = { ...action, category: 'Financial', effect: 'moves money' };
    notes.push(`The description says it ${said.trim()}, which moves money or creates an obligation to pay.`);
    evidence.push({ from: 'description', text: said });
  }
  const payment = action && action.category !== 'Financial' && SEVERITY[action.category] >= SEVERITY.Write ? topProperties(tool).find(([name]) => PAYMENT_PARAM.test(name)) : undefined;
  if (action && payment) {
    action = { ...action, category: 'Financial', effect: 'moves money' };
    notes.push(`It takes a payment in its \`${payment[0]}\` argument, so the call spends money.`);
    evidence.push({ from: 'schema', text: payment[0] });
  }
  if (action && (action.category === 'Write' || action.category === 'Execute') && READ_ONLY.test(lowerDescription.slice(0, 300))
    && !QUERY_LANGUAGE.test(lowerDescription) && !EXEC_PROSE.test(lowerDescription) && !ctx.sql && !notes.length) {
    action = { ...action, category: 'Read', effect: 'only reads' };
    notes.push('The description says it is read-only, and nothing else it says contradicts that.');
  }
  if (!action && !description && profile.text.trim()) {
    const fromServer = descriptionAction(profile.text, ctx);
    if (fromServer) { action = fromServer; source = 'server'; }
  }
  if (action && !description && (source === 'server' || (fromName && action.category === 'Execute' && EXEC_PROSE.test(profile.text)))) {
    evidence.push({ from: 'server', text: quote(firstSentence(server.instructions || server.name || '').text) });
  }

  const signals = signalsOf(tool, words, `${lowerDescription} ${title.toLowerCase()}`);
  const category: Category = action?.category ?? (tool.annotations?.readOnlyHint ? 'Read' : 'Write');
  let confidence = !action ? 0.3
    : source === 'server' ? 0.5
      : source === 'schema' ? 0.6
        : fromName && other ? (agreement ? 0.9 : 0.75) : fromName ? 0.8 : 0.7;
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

  const unique = [...new Set(signals)] as Signal[];
  const parts: string[] = [];
  if (action) {
    // Where the name and the description agree, the description's own words make the better sentence.
    const told = source === 'name' && agreement && other?.phrase && other.lead && other.category === action.category && action === fromName ? other : action;
    const [head, ...rest] = told.verb.split(' ');
    const subject = told.phrase.startsWith('a raw HTTP') ? capitalise(told.phrase)
      : told.phrase ? [capitalise(gerund(head)), ...rest, told.phrase].join(' ') : `A call to ${tool.name}`;
    parts.push(`${subject} ${told === action ? action.effect : told.effect}.`);
    const quoted = `“${quote(firstLine.text)}”`;
    if (source === 'name' && other) parts.push(agreement ? `The name (“${fromName!.verb}”) and the ${otherFrom} (${quoted}) agree.` : `The ${otherFrom} reads ${quoted}, but ${verdict}.`);
    else if (source === 'name') parts.push(`The name says “${fromName!.verb}”.`);
    else if ((source === 'description' || source === 'title') && fromName) parts.push(`The ${source} says ${quoted}; ${verdict}.`);
    else if (source === 'description' || source === 'title') parts.push(`The name says nothing about the action; the ${source} says ${quoted}.`);
    else if (source === 'schema') parts.push('Neither the name nor the description says what it does; its input schema does.');
    else parts.push('Neither the name nor the description says what it does; the server\'s own description supplies the context, so confidence is low.');
    parts.push(...notes);
    parts.push(`${category} tools ${MEANING[category]}.`);
  } else {
    parts.push(`Nothing in the name or description, the schema or the server says what ${tool.name} does, so it is treated as ${category} until someone looks; confidence is low.`);
  }
  if (!description && source !== 'server' && evidence.some((e) => e.from === 'server')) parts.push('The server\'s own description supplies the context.');
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
  const profile = serverProfile(context);
  return tools.map((t) => classifyTool(t, context, profile));
}
