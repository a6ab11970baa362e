import type { Category, Evidence, ToolDefinition } from '../risk/types.js';
import { lookupVerb } from '../risk/lexicon.js';
import { nameWords } from '../risk/words.js';

/**
 * Flow roles (SPEC 5 and 11): what part a tool can play in the "lethal trifecta". Found from the
 * tool's name, description and schema, deterministically, each with the words that made it so.
 *
 * - `private`: reads data the user would not publish (files, environment, mail, databases, repositories);
 * - `untrusted`: takes in content someone else wrote (web pages, search results, inbound mail, comments);
 * - `egress`: can send data out (HTTP requests to chosen URLs, mail or messages, public posts).
 *
 * Safe by default, like categories: a tool that runs code or shell commands can read anything and
 * send it anywhere, so it is private and egress.
 */
export const FLOW_ROLES = ['private', 'untrusted', 'egress'] as const;
export type FlowRole = (typeof FLOW_ROLES)[number];

export interface FlowEvidence { role: FlowRole; from: Evidence['from']; text: string }
export interface FlowRoles { roles: FlowRole[]; evidence: FlowEvidence[] }

/** Verbs that take something in (reads, fetches, lists). */
const READS = new Set(['read', 'get', 'list', 'search', 'find', 'query', 'show', 'view', 'cat', 'fetch', 'load', 'open', 'download', 'export', 'lookup', 'retrieve', 'browse', 'tail', 'head', 'grep', 'dump', 'print', 'describe', 'inspect', 'check', 'scan', 'receive', 'pull', 'watch', 'summarize', 'summarise', 'peek', 'obtain', 'extract']);
/** Things a user would not publish. */
const PRIVATE_NOUNS = new Set(['file', 'files', 'dir', 'dirs', 'directory', 'directories', 'folder', 'folders', 'env', 'environment', 'secret', 'secrets', 'credential', 'credentials', 'password', 'passwords', 'token', 'tokens', 'keychain', 'vault', 'email', 'emails', 'mail', 'mails', 'inbox', 'mailbox', 'gmail', 'outlook', 'database', 'databases', 'db', 'table', 'tables', 'row', 'rows', 'record', 'records', 'sql', 'repo', 'repos', 'repository', 'repositories', 'note', 'notes', 'calendar', 'contact', 'contacts', 'document', 'documents', 'doc', 'docs', 'drive', 'dm', 'dms', 'conversation', 'conversations', 'chat', 'chats', 'message', 'messages', 'customer', 'customers', 'invoice', 'invoices', 'transaction', 'transactions', 'log', 'logs', 'history', 'clipboard', 'screenshot', 'account', 'accounts', 'memory', 'memories', 'bucket', 'blob', 'spreadsheet', 'sheet', 'cell', 'cells', 'patient', 'employee', 'employees', 'payroll', 'ticket', 'tickets']);
/** Content someone else wrote. */
const UNTRUSTED_NOUNS = new Set(['web', 'webpage', 'webpages', 'url', 'urls', 'website', 'site', 'html', 'internet', 'news', 'feed', 'rss', 'comment', 'comments', 'review', 'reviews', 'issue', 'issues', 'discussion', 'discussions', 'post', 'posts', 'tweet', 'tweets', 'thread', 'threads', 'reply', 'replies', 'email', 'emails', 'mail', 'mails', 'inbox', 'message', 'messages', 'chat', 'chats', 'channel', 'channels', 'forum', 'reddit', 'hackernews', 'wikipedia', 'youtube', 'transcript', 'ticket', 'tickets', 'pr', 'pull']);
/** Verbs that take content in from outside, whatever the object. */
const UNTRUSTED_VERBS = new Set(['fetch', 'scrape', 'crawl', 'browse', 'navigate', 'visit', 'google', 'bing', 'brave', 'tavily', 'exa', 'serp', 'perplexity']);
/** Verbs that send something out of the user's hands. */
const EGRESS_VERBS = new Set(['send', 'post', 'publish', 'share', 'tweet', 'notify', 'broadcast', 'reply', 'forward', 'upload', 'webhook', 'email', 'mail', 'dm', 'message', 'sms', 'comment', 'invite', 'announce', 'respond', 'navigate', 'http', 'curl', 'request', 'ping', 'call']);
/** Objects whose creation sends them to someone: a message, mail, a comment or public post. */
const OUTBOUND_NOUNS = new Set(['message', 'messages', 'email', 'emails', 'mail', 'comment', 'comments', 'post', 'posts', 'tweet', 'tweets', 'reply', 'replies', 'dm', 'notification', 'notifications', 'sms', 'webhook', 'gist', 'review', 'issue', 'invitation', 'invite', 'status', 'toot']);
const CREATES = new Set(['create', 'add', 'write', 'new', 'make', 'submit', 'put', 'leave']);
/** A verb of one of these sets reads (so an egress word after it is its object: `get_post`). */
const RUNS_CODE = /\b(execut\w*|evaluat\w*|runs? (?:a |the |an |arbitrary |any )?(?:shell|command|code|script|python|javascript|sql|query))/;
const DESC_PRIVATE = /\b(?:reads?|returns?|lists?|gets?|retrieves?|shows?|searches?|queries|query|fetch(?:es)?|opens?) (?:the |a |an |your |all |any |user'?s? |their |one or more |multiple |specific |recent )?(?:contents? of (?:a |the |one or more )?)?(?:local |private |complete |full )?(files?|directory|directories|folders?|environment variables?|secrets?|credentials?|emails?|e-mails?|inbox|mailbox|database|tables?|rows?|records?|private repositor(?:y|ies)|repository files?|documents?|notes?|messages?|contacts?|calendar)/;
const DESC_UNTRUSTED = /\b(web ?pages?|websites?|search results|(?:search(?:es)?|from) the (?:web|internet)|any url|given url|a url|the url|(?:fetch(?:es)?|retrieves?|downloads?|scrapes?|crawls?) [\w\s]{0,30}(?:url|page|site|web)|comments?|inbound|incoming|received|inbox|issue (?:body|bodies|comments)|user[- ]generated|third[- ]party content|untrusted)/;
const DESC_EGRESS = /\b(sends? (?:a |an |the )?(?:message|email|e-mail|mail|sms|text|notification|dm|direct message|request|http|data|webhook|slack)|posts? (?:a |an |the )?(?:message|comment|tweet|reply|update|status|to)|publish(?:es)? |http (?:get|post|put|patch|delete|request)|makes? (?:an? )?(?:http|api|web) requests?|to (?:any|an arbitrary|a given|the given) (?:url|endpoint)|(?:calls?|triggers?|sends? to) (?:a |the )?webhook)/;
/** Words DESC_EGRESS cannot match without: a cheap guard before it scans the description. */
function mayEgress(desc: string): boolean {
  return desc.includes('send') || desc.includes('post') || desc.includes('publish') || desc.includes('http ') || desc.includes('make') || desc.includes('webhook')
    || desc.includes('to any') || desc.includes('to an arbitrary') || desc.includes('to a given') || desc.includes('to the given');
}
const URL_PARAM = /^(?:url|uri|urls|href|link|endpoint|website|webhook|webhook_?url|target_?url|page_?url|targetUrl|pageUrl|webhookUrl)$/;
/** Verbs that neither read, fetch nor send: a name led by one plays no role by its name. */
const OTHER_VERBS = new Set(['update', 'edit', 'delete', 'remove', 'resolve', 'stop', 'start', 'cancel', 'set', 'move', 'rename', 'close', 'merge', 'archive', 'unpublish', 'replay', 'reopen', 'assign', 'link', 'react', 'verify', 'validate', 'generate', 'wait', 'mark', 'toggle', 'enable', 'disable', 'count', 'like', 'flag', 'star', 'pin', 'label', 'tag', 'approve', 'type', 'press']);
const PATH_PARAM = /^(?:path|paths|file|files|filename|file_?path|filepath|dir|directory|folder)$/i;
const RECIPIENT_PARAM = /^(?:to|recipient|recipients|cc|bcc|channel|channel_?id|chat_?id|phone|phone_?number|email_?address|user_?id|webhook|webhook_?url|destination)$/i;
const METHOD_PARAM = /^(?:method|http_?method)$/i;
const BODY_PARAM = /^(?:body|data|payload|json|content|text|message)$/i;

function topProps(tool: ToolDefinition): [string, Record<string, unknown>][] {
  const s = tool.inputSchema as { properties?: Record<string, unknown> } | undefined;
  if (!s || typeof s !== 'object' || !s.properties || typeof s.properties !== 'object') return [];
  return Object.entries(s.properties).filter(([, v]) => v && typeof v === 'object') as [string, Record<string, unknown>][];
}

/** Records a role's first evidence (a module function, not a closure per tool: tsx's `__name` costs ~1.6 µs a closure). */
function add(evidence: FlowEvidence[], role: FlowRole, from: Evidence['from'], text: string): void {
  if (!evidence.some((e) => e.role === role)) evidence.push({ role, from, text });
}

/** The flow roles of one tool, with evidence. `category` is the classifier's (a code runner is private and egress). */
export function flowRolesOf(tool: ToolDefinition, category?: Category): FlowRoles {
  const evidence: FlowEvidence[] = [];
  const words = nameWords(tool.name);
  const desc = (tool.description ?? '').slice(0, 600).toLowerCase();
  const props = topProps(tool);
  // The first word that is a verb: ours, or any the classifier's lexicon knows (then it is none of ours: `stop_port_forward`).
  const verbIndex = words.findIndex((w, i) => READS.has(w) || CREATES.has(w) || EGRESS_VERBS.has(w) || UNTRUSTED_VERBS.has(w) || (i < words.length - 1 && OTHER_VERBS.has(w)) || (!!lookupVerb(w) && !PRIVATE_NOUNS.has(w) && !UNTRUSTED_NOUNS.has(w)));
  const verb = verbIndex >= 0 ? words[verbIndex] : undefined;
  const objects = verbIndex >= 0 ? words.slice(verbIndex + 1) : words;
  const ours = verb !== undefined && !OTHER_VERBS.has(verb) && (READS.has(verb) || CREATES.has(verb) || EGRESS_VERBS.has(verb) || UNTRUSTED_VERBS.has(verb));
  const reads = ours && verb !== undefined && (READS.has(verb) || UNTRUSTED_VERBS.has(verb));
  const urlArg = props.find(([n, s]) => URL_PARAM.test(n) || s.format === 'uri')?.[0];

  // egress
  if (ours && verb && EGRESS_VERBS.has(verb) && !(verb === 'message' && objects.length === 0 && words.length > 1) && !(verb === 'call' && !urlArg) && !(verb === 'request' && !urlArg)) add(evidence, 'egress', 'name', verb);
  // What is created is the last word: create_issue posts, create_issue_link does not.
  const outbound = objects.length && OUTBOUND_NOUNS.has(objects[objects.length - 1]) ? objects[objects.length - 1] : undefined;
  if (ours && verb && CREATES.has(verb) && outbound) add(evidence, 'egress', 'name', `${verb} ${outbound}`);
  if (mayEgress(desc) && DESC_EGRESS.test(desc) && !(reads && category === 'Read')) add(evidence, 'egress', 'description', DESC_EGRESS.exec(desc)![0].trim());
  const recipient = props.find(([n]) => RECIPIENT_PARAM.test(n))?.[0];
  if (recipient && props.some(([n]) => BODY_PARAM.test(n)) && category !== 'Read') add(evidence, 'egress', 'schema', `${recipient} and a body`);
  if (urlArg && (props.some(([n]) => METHOD_PARAM.test(n) || BODY_PARAM.test(n) || /headers?/.test(n)) || category === 'Execute' || (verb && UNTRUSTED_VERBS.has(verb)) || /\b(?:fetch|request|download|scrape|crawl|navigat|visit|open)\w*/.test(desc.slice(0, 200)) || reads)) {
    add(evidence, 'egress', 'schema', `${urlArg} (a request to a URL the caller chooses carries data out)`);
  }
  // untrusted
  if (verb && UNTRUSTED_VERBS.has(verb)) add(evidence, 'untrusted', 'name', verb);
  const foreign = objects.find((w) => UNTRUSTED_NOUNS.has(w));
  if (reads && foreign) add(evidence, 'untrusted', 'name', `${verb} ${foreign}`);
  if (!verb && words.some((w) => ['search', 'web'].includes(w)) && words.includes('web')) add(evidence, 'untrusted', 'name', 'web');
  if (words.includes('search') && words.some((w) => ['web', 'news', 'internet', 'google', 'brave', 'bing'].includes(w))) add(evidence, 'untrusted', 'name', 'web search');
  if ((reads || (!verb && category === 'Read')) && DESC_UNTRUSTED.test(desc.slice(0, 300))) add(evidence, 'untrusted', 'description', DESC_UNTRUSTED.exec(desc)![0].trim());
  if (urlArg && (reads || category === 'Read' || category === 'Execute')) add(evidence, 'untrusted', 'schema', urlArg);
  // private
  const mine = objects.find((w) => PRIVATE_NOUNS.has(w));
  if (reads && mine && !(foreign && !PRIVATE_NOUNS.has(foreign) && foreign === mine)) add(evidence, 'private', 'name', `${verb} ${mine}`);
  if ((reads || (!verb && category === 'Read')) && DESC_PRIVATE.test(desc.slice(0, 300))) add(evidence, 'private', 'description', DESC_PRIVATE.exec(desc)![0].trim());
  const pathArg = props.find(([n]) => PATH_PARAM.test(n))?.[0];
  if (pathArg && (reads || category === 'Read')) add(evidence, 'private', 'schema', pathArg);
  if (category === 'Execute' && RUNS_CODE.test(desc.slice(0, 300))) {
    add(evidence, 'private', 'description', `${RUNS_CODE.exec(desc)![0]} (code can read whatever the server can)`);
    add(evidence, 'egress', 'description', `${RUNS_CODE.exec(desc)![0]} (code can send data anywhere)`);
  }
  const roles = FLOW_ROLES.filter((r) => evidence.some((e) => e.role === r));
  return { roles, evidence: roles.map((r) => evidence.find((e) => e.role === r)!) };
}

/** One sentence for a rationale: "Flow roles: private (name: read file), egress (schema: url)." */
export function flowSentence(f: FlowRoles): string {
  if (f.roles.length === 0) return 'Flow roles: none (it neither reads private data, takes in others\' content, nor sends data out).';
  return `Flow roles: ${f.evidence.map((e) => `${e.role} (${e.from}: “${e.text}”)`).join(', ')}.`;
}
