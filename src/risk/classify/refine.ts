import { ARTEFACT_NOUNS, CONTEXT_MONEY_NOUNS, METERED_NOUNS, DETACHABLE_NOUNS, EXEC_NOUNS, EXEC_PROSE, EDIT_NOUNS, GENERIC_DOCUMENTS, HTTP_METHODS, isNoun, NON_MONEY_QUALIFIERS, LIGHT_NOUNS, MAKING_VERBS, MONEY_NOUNS, MONEY_VERBS_ON_OBJECT, PICTURE_NOUNS, PROCESS_NOUNS, PROTECTION_NOUNS, QUERY_LANGUAGE, REPORT_NOUNS } from '../lexicon.js';
import { nounPhrase } from '../prose.js';
import { type Category } from '../types.js';
import { baseForms } from '../words.js';
import { type Action, type Context, SAVES_TO_DISK, HANDS_BACK } from './context.js';

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

const METERED_VERBS = new Set(['create', 'record', 'report', 'ingest', 'track', 'send', 'add', 'grant', 'award', 'deduct', 'consume', 'use', 'spend', 'submit', 'log']);
/** Obligation verbs that, on a money server, make a generic document Financial. */
const MONEY_DOCUMENT_VERBS = new Set(['create', 'update', 'submit', 'cancel', 'amend', 'approve', 'void', 'modify', 'edit', 'issue', 'finalize']);
/** Heads that carry the money of the word before them ("payment link", "expense claim", "bounty application"). */
const MONEY_HEADS = new Set(['split', 'splits', 'link', 'item', 'intent', 'session', 'charge', 'method', 'order', 'event', 'events', 'record', 'note', 'receipt', 'memo', 'claim', 'entry', 'application', 'request', 'voucher', 'limit', 'limits', 'cap', 'caps']);
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

/** Words and their plurals in -s, as one set: plain lookups on a path every tool takes. */
function plurals(words: string): Set<string> {
  return new Set(words.split(' ').flatMap((w) => [w, `${w}s`]));
}

const RECONFIGURING_VERBS = new Set(['update', 'put', 'replace', 'modify', 'change', 'configure', 'set', 'patch', 'overwrite']);
/** Protections whose configuration is their rules: a new one can let everything through. */
const GUARD_NOUNS = new Set(['firewall', 'waf', 'ruleset', 'rulesets', 'challenge']);

/** Verbs that buy or rent. */
const BILLING_VERBS = new Set(['purchase', 'buy', 'order', 'acquire', 'rent', 'lease', 'provision', 'reserve']);
/** What is billed once bought or rented. */
const BILLED_NOUNS = plurals('domain phone number line licence license seat plan subscription certificate did sim esim');
const PLAN_VERBS = new Set(['upgrade', 'downgrade', 'bump', 'change', 'switch', 'update', 'modify']);
const PLAN_NOUNS = plurals('plan tier subscription seat licence license pricing');
const POSITION_VERBS = new Set(['open', 'close', 'increase', 'reduce', 'flatten', 'liquidate', 'exit', 'enter', 'add', 'redeem', 'claim']);
const POSITION_NOUNS = plurals('position trade');
const REWINDING_VERBS = new Set(['reset', 'rollback', 'rewind', 'revert']);
const REWOUND_NOUNS = new Set(['branch', 'branches', 'head', 'ref', 'refs', 'database', 'databases', 'db', 'factory', 'device', 'devices', 'simulator', 'emulator', 'storage']);
/** "to a previous revision", "to an earlier version": what came after it is lost. */
const EARLIER_STATE = /\bto (?:a |an |the |its )?(?:previous|earlier|prior|older) (?:revision|version|state|commit|snapshot|point)\b/;
/** A search on a log or analytics service that is not written in its query language: keywords, free or natural-language text, or its documentation. */
const PLAIN_SEARCH = /\bnatural[- ]language\b|\bdocumentation\b|\bdocs\b|\bkeywords?\b|\b(?:full|free)[- ]text\b|\bby (?:name|title)\b/;
/** Verbs that take a browser somewhere. */
const NAVIGATING_VERBS = new Set(['navigate', 'goto', 'go', 'visit', 'open', 'load', 'browse']);
const URL_NOUNS = new Set(['url', 'urls', 'link', 'site', 'website', 'webpage', 'address']);
/** What a tool captures as it watches (logs, console output, network requests, recordings) or a store holds (storage, data): clearing it loses them for good. */
const CAPTURED = plurals('log console message network request recording trace history buffer cookie event storage data indexeddb localstorage');
/** Verbs that discard what a store holds. */
const DISCARDING_VERBS = new Set(['clear', 'empty', 'flush']);
/** What an account holds and can give up for others to take: a phone number, an IP address, a domain. */
const RELEASABLE = plurals('number phone ip address domain line did sim');
/** Applications a call can start: opening one starts a process. */
const LAUNCHABLE = plurals('simulator sim emulator app application');
/** Databases as a service names them: rebuilding one recreates it from nothing. */
const DATABASES = plurals('database db mysql postgres postgresql mariadb mongo mongodb redis');
const REBUILDING_VERBS = new Set(['rebuild', 'recreate', 'reinitialize', 'reinit', 'reprovision']);
/** Verbs that commit an order: placing, confirming or cancelling one changes what someone pays. */
const ORDER_VERBS = new Set(['place', 'confirm', 'submit', 'cancel']);

function isMoney(o: string, verb: string, ctx: Context): boolean {
  return isNoun(MONEY_NOUNS, o) || (ctx.money && (baseForms(o).some((f) => CONTEXT_MONEY_NOUNS.get(f)?.has(verb)) || (METERED_NOUNS.has(o) && METERED_VERBS.has(verb))));
}

/** Refines a verb's category by what it acts on and where. */
/** Module-level helpers of `refine`, not closures: it runs for every verb of every tool. */
function actOf(verb: string, objects: string[], phrase: string, category: Category, effect: string): Action {
  return { verb, category, objects, phrase, effect };
}
function hasNoun(objects: string[], set: Set<string>): boolean {
  return objects.some((o) => isNoun(set, o));
}

export function refine(verb: string, base: Category, objects: string[], ctx: Context, phrase = nounPhrase(objects), direct = objects[objects.length - 1]): Action {
  if (HTTP_METHODS.has(verb) && objects.filter((o) => !ctx.serverWords.has(o) && o !== 'api' && o !== 'http' && o !== 'request').length === 0) {
    const raw = { ...actOf(verb, objects, phrase, 'Execute', 'calls an arbitrary API'), phrase: `a raw HTTP ${verb.toUpperCase()} request` };
    if (verb === 'get') return { ...raw, category: 'Read', effect: 'only reads' };
    if (verb === 'delete') return { ...raw, category: 'Destructive', effect: 'can destroy whatever the endpoint names' };
    return raw;
  }
  if ((MONEY_VERBS_ON_OBJECT[verb] || (ctx.money && METERED_VERBS.has(verb))) && objects.length > 0) {
    // "work order", "access token": a qualifier before a word picks its sense.
    const directAt = objects.lastIndexOf(direct);
    const moneyHead = (directAt >= 0 ? moneyAt(objects, directAt, verb, ctx) : isMoney(direct, verb, ctx)) || (MONEY_HEADS.has(direct) && objects.some((_, i) => moneyAt(objects, i, verb, ctx)));
    if (moneyHead && !isNoun(REPORT_NOUNS, direct)) return actOf(verb, objects, phrase, 'Financial', 'moves money or creates an obligation to pay');
    // Where money is the business, a document of any type can be an invoice or an order.
    if (ctx.money && GENERIC_DOCUMENTS.has(direct) && MONEY_DOCUMENT_VERBS.has(verb) && objects.filter((o) => !ctx.serverWords.has(o)).length === 1) return actOf(verb, objects, phrase, 'Financial', 'can create or change a money document (an invoice, an order, a payment) on a server whose business is money');
  }
  if (['renew', 'register', 'purchase', 'buy', 'order'].includes(verb) && objects.some((o) => o === 'domain' || o === 'domains')) return actOf(verb, objects, phrase, 'Financial', 'buys something that is billed');
  // Buying or renting what bills: a domain, a phone line, licences, seats.
  if (BILLING_VERBS.has(verb) && (verb === 'rent' || objects.some((o) => BILLED_NOUNS.has(o))) && !objects.some((o) => o === 'lock' || o === 'mutex')) return actOf(verb, objects, phrase, 'Financial', 'buys or rents something that is billed');
  // Moving to another plan or tier changes what the account is billed.
  if (PLAN_VERBS.has(verb) && objects.some((o) => PLAN_NOUNS.has(o))) return actOf(verb, objects, phrase, 'Financial', 'changes a plan, and with it what the account is billed');
  // Trading in other words: opening or closing a position or a trade.
  if (POSITION_VERBS.has(verb) && objects.some((o) => POSITION_NOUNS.has(o)) && (ctx.money || objects.some((o) => isNoun(MONEY_NOUNS, o)) || /\b(?:long|short|leverage|margin)\b/.test(ctx.description))) return actOf(verb, objects, phrase, 'Financial', 'opens or closes a trade, which moves money');
  // A branch reset or rolled back to an earlier state loses what came after it; so does a file or a machine restored to an earlier revision.
  if ((REWINDING_VERBS.has(verb) && objects.some((o) => REWOUND_NOUNS.has(o))) || ((REWINDING_VERBS.has(verb) || verb === 'restore') && EARLIER_STATE.test(ctx.description.slice(0, 300)))) return actOf(verb, objects, phrase, 'Destructive', 'moves it back to an earlier state, and what came after is lost');
  // Driving a real browser to a URL (SPEC 5): the browser carries the user's sessions, and the URL can carry data out.
  // Back and forward in a real browser load a URL from its history, with the same sessions: navigation too.
  if ((NAVIGATING_VERBS.has(verb) || (ctx.browser && VIEWING_VERBS.has(verb) && VIEWS.has(direct ?? '') && ctx.urlInput())) && (ctx.browser || !objects.some((o) => o === 'back' || o === 'forward' || o === 'history'))
    && (ctx.browser ? ['navigate', 'goto', 'visit'].includes(verb) || objects.some((o) => URL_NOUNS.has(o) || o === 'back' || o === 'forward') || ctx.urlInput() : ctx.urlInput() && /\b(?:browser|web page|webpage|tab)\b/.test(ctx.description))) {
    return actOf(verb, objects, phrase, 'Execute', "drives a real browser to a URL: the browser carries the user's sessions, and the URL can carry data out");
  }
  // Orders in other words: placing, confirming or cancelling an order changes what someone pays (a work or sort order is not one).
  if (ORDER_VERBS.has(verb) && objects.some((o, i) => (o === 'order' || o === 'orders') && !(i > 0 && NON_MONEY_QUALIFIERS.has(objects[i - 1])))) return actOf(verb, objects, phrase, 'Financial', 'commits or cancels an order, which changes what someone pays');
  // Clearing what a tool captured (logs, console messages, network requests, recordings) loses it: nothing can bring it back.
  if (DISCARDING_VERBS.has(verb) && objects.some((o) => CAPTURED.has(o)) && !objects.some((o) => ['filter', 'filters', 'input', 'inputs', 'selection', 'form', 'forms', 'field', 'fields', 'search', 'highlight', 'highlights'].includes(o))) return actOf(verb, objects, phrase, 'Destructive', 'discards what was captured, which nothing can bring back');
  // Rebuilding a database recreates it from nothing: its data is the most dangerous plausible loss.
  if (REBUILDING_VERBS.has(verb) && objects.some((o) => DATABASES.has(o))) return actOf(verb, objects, phrase, 'Destructive', 'recreates it from nothing, and its data can be lost');
  // Releasing a number, an address or a domain gives it up: someone else can take it, and it cannot be had back.
  if (verb === 'release' && objects.some((o) => RELEASABLE.has(o)) && !objects.some((o) => o === 'lock' || o === 'locks' || o === 'hold')) return actOf(verb, objects, phrase, 'Destructive', 'gives it up for good: another account can take it');
  // Restoring from a backup or a snapshot overwrites what is there now with the older copy.
  if (verb === 'restore' && (objects.some((o) => o === 'backup' || o === 'backups' || o === 'snapshot' || o === 'snapshots') || /\bfrom (?:a |an |the |its )?(?:[\w-]+ )?(?:backup|snapshot)\b/.test(ctx.description.slice(0, 300)))) return actOf(verb, objects, phrase, 'Destructive', 'overwrites what is there now with an older copy');
  // Opening or launching an application (a simulator, an emulator, an app) starts a process.
  if ((verb === 'open' || verb === 'launch') && !ctx.browser && objects.some((o) => LAUNCHABLE.has(o))) return actOf(verb, objects, phrase, 'Execute', 'starts an application, a process on the machine');
  // ALTER TABLE can drop columns and constraints: altering a table or a schema is as dangerous as its most dangerous clause.
  if (verb === 'alter' && objects.some((o) => ['table', 'tables', 'column', 'columns', 'schema', 'schemas'].includes(o))) return actOf(verb, objects, phrase, 'Destructive', 'can drop columns and constraints (ALTER … DROP)');
  // Replacing or reconfiguring a firewall or a ruleset can take its protection away.
  if (RECONFIGURING_VERBS.has(verb) && objects.some((o) => GUARD_NOUNS.has(o)) && !objects.some((o) => o === 'rule' || o === 'rules')) return actOf(verb, objects, phrase, 'Destructive', 'can remove a protection by replacing its rules');
  if (['disable', 'remove', 'unset', 'turn', 'deactivate', 'delete', 'clear', 'unlock', 'drop', 'bypass', 'toggle'].includes(verb) && hasNoun(objects, PROTECTION_NOUNS)) {
    return actOf(verb, objects, phrase, 'Destructive', 'removes a protection');
  }
  // "send JavaScript commands to the app": what receives code or commands runs them.
  if (['send', 'dispatch', 'inject', 'issue', 'pass'].includes(verb) && objects.some((o) => ['command', 'commands', 'script', 'scripts', 'code', 'javascript', 'js'].includes(o))) return actOf(verb, objects, phrase, 'Execute', 'sends code or commands that the other end runs');
  // "Make an HTTP request to any URL": whatever the endpoint does, with the method the caller picks.
  if (['make', 'send', 'perform', 'execute', 'issue', 'do'].includes(verb) && objects.includes('request') && objects.some((o) => o === 'http' || o === 'https' || o === 'api' || o === 'rest')) return { ...actOf(verb, objects, phrase, 'Execute', 'calls an arbitrary API'), phrase: phrase || 'an HTTP request' };
  if ((verb === 'ask' || verb === 'consult') && hasNoun(objects, MODEL_NOUNS)) return actOf(verb, objects, phrase, 'Execute', 'hands the question to another agent, which runs a model');
  if (ctx.browser && ELEMENT_VERBS.has(verb) && hasNoun(objects, ELEMENT_NOUNS)) return actOf(verb, objects, phrase, 'Execute', 'is a browser or device action that clicks, types or submits');
  if (ctx.browser && VIEWING_VERBS.has(verb) && VIEWS.has(direct ?? '')) return actOf(verb, objects, phrase, 'Read', 'only changes which page is shown');
  switch (base) {
    case 'Destructive':
      if (['remove', 'delete', 'clear', 'unlink', 'detach', 'revoke'].includes(verb) && lightFor(verb, objects)) return actOf(verb, objects, phrase, 'Write', 'is a small change that can be undone by adding it back');
      // "remove a record from a list": the record stays; only its membership goes.
      if (['remove', 'unassign', 'detach'].includes(verb) && (objects.some((o, i) => o === 'from' && CONTAINERS.has(objects[i + 1] ?? '')) || MEMBERSHIPS.has(FROM_CONTAINER.exec(phrase.toLowerCase())?.[1] ?? '') || MEMBERSHIPS.has(REMOVED_FROM.exec(ctx.description.slice(0, 200))?.[1] ?? ''))) return actOf(verb, objects, phrase, 'Write', 'is a small change that can be undone by adding it back');
      if (['terminate', 'kill', 'clean'].includes(verb) && hasNoun(objects, PROCESS_NOUNS)) return actOf(verb, objects, phrase, 'Write', 'stops a process and destroys no data');
      return actOf(verb, objects, phrase, 'Destructive', 'destroys data or removes a protection');
    case 'Execute':
      if (verb === 'start' && hasNoun(objects, PROCESS_NOUNS) && !hasNoun(objects, EXEC_NOUNS)) return actOf(verb, objects, phrase, 'Write', 'is a bounded change');
      if (verb === 'start' && hasNoun(objects, TALK_NOUNS)) return actOf(verb, objects, phrase, 'Write', 'opens a conversation, which sends a message');
      if (['run', 'perform', 'execute', 'start', 'trigger', 'begin'].includes(verb) && (hasNoun(objects, REPORT_NOUNS) || ['search', 'crawl', 'lookup'].includes(objects[0] ?? '')) && !hasNoun(objects, EXEC_NOUNS)) return actOf(verb, objects, phrase, 'Read', 'only reads: the report or audit is predefined');
      // "start_auth", "start a login flow": only a process, program or job is run by starting it.
      if (verb === 'start' && objects.some((o) => SIGN_IN.has(o))) return actOf(verb, objects, phrase, 'Write', 'is a bounded change');
      if (verb === 'drop' && !ctx.browser) return actOf(verb, objects, phrase, 'Destructive', 'destroys what it names');
      if (verb === 'apply' && hasNoun(objects, EDIT_NOUNS)) return actOf(verb, objects, phrase, 'Write', 'changes state in a bounded way');
      if (verb === 'build' && objects.some((o) => ARTEFACT_NOUNS.has(o))) return actOf(verb, objects, phrase, 'Read', HANDS_BACK);
      if (['type', 'press', 'fill', 'click', 'tap', 'hover', 'drag', 'drop', 'swipe', 'scroll', 'handle'].includes(verb)) return actOf(verb, objects, phrase, 'Execute', 'is a browser or device action that clicks, types or submits');
      return actOf(verb, objects, phrase, 'Execute', 'runs open-ended computation');
    case 'Write':
      if (['clear', 'reset', 'empty'].includes(verb) && (objects.some((o) => o === 'all' || o === 'everything' || o === 'entire') || /^(?:all|everything|the entire|the whole|every)\b/i.test(phrase))) return actOf(verb, objects, phrase, 'Destructive', 'discards everything it holds');
      // "submit a job", "enqueue a build": the job runs.
      if (['submit', 'queue', 'enqueue'].includes(verb) && hasNoun(objects, RUNNABLE)) return actOf(verb, objects, phrase, 'Execute', 'runs it');
      // "add a job to the queue": a worker picks it up and runs it.
      if (['add', 'push', 'create', 'new'].includes(verb) && objects.some((o) => o === 'job' || o === 'jobs') && /\bqueue/.test(`${objects.join(' ')} ${phrase.toLowerCase()} ${ctx.description.slice(0, 200)}`)) return actOf(verb, objects, phrase, 'Execute', 'queues it for a worker, which runs it');
      // "activate a workflow": it runs from now on, whenever its trigger fires.
      if (['activate', 'enable'].includes(verb) && objects.some((o) => AUTOMATIONS.has(o))) return actOf(verb, objects, phrase, 'Execute', 'lets it run whenever its trigger fires');
      // Deployments in other words: making, promoting or rolling back a deployment deploys.
      if (DEPLOYING_VERBS.has(verb) && objects.some((o) => o === 'deployment' || o === 'deployments')) return actOf(verb, objects, phrase, 'Execute', 'deploys it, running whatever the deployment runs');
      // "create a service from a GitHub repository": the platform builds and deploys it.
      if (['create', 'new', 'add'].includes(verb) && [...objects, ...ctx.nameNouns()].some((o) => APPS.has(o)) && [...objects, ...ctx.nameNouns()].some((o) => BUILD_SOURCES.has(o))) {
        return actOf(verb, objects, phrase, 'Execute', 'builds and deploys it, running whatever its build runs');
      }
      if (MAKING_VERBS.has(verb) && !objects.some((o) => isNoun(ctx.kept, o)) && (verb === 'create' || verb === 'make' ? hasNoun(objects, PICTURE_NOUNS) : objects.some((o) => isNoun(ARTEFACT_NOUNS, o) || isNoun(REPORT_NOUNS, o))) && !SAVES_TO_DISK.test(ctx.description)) {
        return actOf(verb, objects, phrase, 'Read', HANDS_BACK);
      }
      if (['create', 'generate', 'make', 'new'].includes(verb) && hasNoun(objects, REPORT_NOUNS) && !objects.some((o) => isNoun(ctx.kept, o))) return actOf(verb, objects, phrase, 'Read', 'only reads data');
      if (verb === 'resolve' && objects.some((o) => ['id', 'name', 'identifier', 'address', 'alias', 'reference'].includes(o))) return actOf(verb, objects, phrase, 'Read', 'only looks up an identifier');
      if (['connect', 'create', 'open', 'new', 'attach', 'complete', 'prepare', 'apply'].includes(verb) && (hasNoun(objects, EXEC_NOUNS) || EXEC_PROSE.test(ctx.description))) {
        return actOf(verb, objects, phrase, 'Execute', 'starts or attaches to a running process, debugger or interpreter');
      }
      if (['import', 'load', 'source'].includes(verb) && (hasNoun(objects, EXEC_NOUNS) || /\b(?:sql|script)\b/.test(phrase.toLowerCase()))) return actOf(verb, objects, phrase, 'Execute', 'runs the statements of the file it loads');
      if (ctx.deploy && ['sync', 'promote', 'rollout', 'release', 'redeploy'].includes(verb) && objects.some((o) => APPS.has(o))) return actOf(verb, objects, phrase, 'Execute', 'deploys it, running whatever the deployment runs');
      if (verb === 'switch' && ctx.browser && objects.some((o) => ['tab', 'tabs', 'page', 'pages', 'window', 'frame'].includes(o))) return actOf(verb, objects, phrase, 'Read', 'only changes which page is shown');
      if (verb === 'submit' && ctx.browser && objects.includes('form')) return actOf(verb, objects, phrase, 'Execute', 'submits input in a browser');
      if ((verb === 'upload' || verb === 'select') && ctx.browser && !PAGES.has(direct) && !(direct === 'browser' && PAGES.has(objects[1]))) return actOf(verb, objects, phrase, 'Execute', 'submits input in a browser');
      return actOf(verb, objects, phrase, 'Write', 'changes state in a bounded way');
    case 'Read':
      if (verb === 'download' && SAVES_TO_DISK.test(ctx.description)) return actOf(verb, objects, phrase, 'Write', 'writes the downloaded files to disk');
      if (['export', 'dump', 'render', 'convert', 'print'].includes(verb) && SAVES_TO_DISK.test(ctx.description)) return actOf(verb, objects, phrase, 'Write', 'writes the result to a file');
      // A log or analytics service's queries are written in its own query language, named or not.
      if ((['query', 'search', 'run', 'execute', 'find', 'select', 'aggregate'].includes(verb) && (ctx.sql || (QUERY_LANGUAGE.test(ctx.description) && ctx.queryInput())))
        || ctx.languageInput() || (ctx.analytics && (['query', 'run', 'execute', 'aggregate'].includes(verb) || (verb === 'search' && !PLAIN_SEARCH.test(ctx.description))) && ctx.queryInput())) {
        return actOf(verb, objects, phrase, 'Execute', 'runs a query language, which is Execute even when it only reads');
      }
      return actOf(verb, objects, phrase, 'Read', 'only reads');
    case 'Financial':
      if ((verb === 'checkout' || verb === 'charge' || verb === 'swap' || verb === 'trade') && !ctx.money && !objects.some((o) => isMoney(o, 'create', ctx))) {
        return actOf(verb, objects, phrase, 'Write', 'changes state in a bounded way');
      }
      return actOf(verb, objects, phrase, 'Financial', 'moves money');
  }
}

/** The object at `i` is money, and no qualifier before it picks another sense ("work order", "access token"); module level, not closures per call (tsx's `__name`). */
function moneyAt(objects: string[], i: number, verb: string, ctx: Context): boolean {
  return isMoney(objects[i], verb, ctx) && !(i > 0 && NON_MONEY_QUALIFIERS.has(objects[i - 1]) && !isNoun(MONEY_NOUNS, objects[i]));
}
