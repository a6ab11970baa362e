import type { Category } from './types.js';
import { baseForms } from './words.js';

/**
 * The words the classifier knows. Verbs say what a call does; nouns say to what, which can move
 * the category (create + payment is Financial, run + report only reads, remove + reaction is a
 * small reversible change, remove + repository destroys).
 */

const verbs = (category: Category, list: string): [string, Category][] => list.split(/\s+/).filter(Boolean).map((w) => [w, category]);

export const VERBS = new Map<string, Category>([
  ...verbs('Read', `get list read search find fetch show describe view lookup look retrieve inspect check count browse
    explain analyze analyse summarize summarise compare validate verify preview export screenshot snapshot navigate
    go return returns query whoami ping status health info detail details log logs history diff blame tree geocode direction
    directions distance elevation scrape crawl map extract parse research ask reason think echo sum calculate compute
    wait expect assert discover query_docs resolve_library identify estimate measure test_connection lint audit
    trace capture_screenshot observe watch poll download render convert translate format recommend suggest
    diagnose troubleshoot debug_info grep cat head tail stat stats metric metrics scan open capture version schema
    thinking think`),
  ...verbs('Write', `create add update edit set put post send write move rename copy upload insert append modify patch assign
    unassign comment reply merge push commit fork star unstar label tag connect disconnect pause resume schedule
    invite subscribe unsubscribe enable disable toggle save store upsert publish unpublish close reopen approve unapprove
    mark resolve protect mute unmute cancel release allocate login logout register provision emulate resize select
    link unlink detach stop end clear generate replay feedback configure init initialize sync import rate vote react
    pin unpin archive unarchive lock unlock restore revert reset rollback submit notify remind share unshare
    complete finish accept reject dismiss follow unfollow new make draft snooze transition
    duplicate clone scale record note reconnect compress finalize prepare manage confirm authorize void issue`),
  ...verbs('Execute', `run execute exec eval evaluate invoke trigger launch spawn attach step continue deploy build compile
    install apply click tap press type fill hover drag drop swipe scroll interact rerun retry restart call perform
    automate simulate sql start handle rollout upgrade downgrade cordon drain`),
  ...verbs('Destructive', `delete remove destroy purge truncate wipe erase uninstall cleanup clean unprotect revoke kill
    terminate flush prune deprovision decommission overwrite nuke`),
  ...verbs('Financial', `pay refund charge payout withdraw purchase buy sell trade swap tip donate bill checkout
    capture_payment transfer_funds`),
]);

/** HTTP methods as tool verbs: with no object they are raw API calls. */
export const HTTP_METHODS = new Set(['get', 'post', 'put', 'patch', 'delete']);

/** Things whose creation or change moves money or creates an obligation to pay. */
export const MONEY_NOUNS = new Set([
  'payment', 'payments', 'refund', 'refunds', 'payout', 'payouts', 'transfer', 'transfers', 'withdrawal', 'invoice',
  'invoices', 'subscription', 'subscriptions', 'charge', 'charges', 'order', 'orders', 'transaction', 'transactions',
  'adjustment', 'adjustments', 'checkout', 'purchase', 'purchases', 'trade', 'trades', 'swap', 'swaps', 'bill',
  'billing', 'money', 'funds', 'fund', 'wire', 'disbursement', 'remittance', 'credit', 'debit', 'paymentlink', 'intent',
]);

/** Money nouns that only imply money moves together with a mutating verb on that very object. */
export const MONEY_VERBS_ON_OBJECT: Record<string, Category> = {
  create: 'Financial', send: 'Financial', cancel: 'Financial', update: 'Financial', finalize: 'Financial',
  pay: 'Financial', capture: 'Financial', accept: 'Financial', issue: 'Financial', confirm: 'Financial',
  authorize: 'Financial', void: 'Financial', execute: 'Financial', submit: 'Financial', approve: 'Financial',
  place: 'Financial', transfer: 'Financial', process: 'Financial', upgrade: 'Financial', downgrade: 'Financial',
};

/** Words that are as often nouns as verbs: in a name, a plainer verb beside them is the action. */
export const AMBIGUOUS = new Set([
  'comment', 'note', 'draft', 'record', 'tag', 'label', 'link', 'map', 'order', 'trace', 'log', 'logs', 'history',
  'status', 'run', 'build', 'test', 'sum', 'capture', 'export', 'import', 'report', 'schedule', 'snapshot',
  'screenshot', 'star', 'pin', 'lock', 'release', 'reply', 'scale', 'tree', 'diff', 'commit', 'merge', 'push',
  'feedback', 'view', 'check', 'count', 'type', 'drop', 'clone', 'archive', 'filter', 'watch', 'swap', 'trade',
  'charge', 'bill', 'refund', 'payout', 'metric', 'metrics', 'stat', 'stats', 'detail', 'details', 'info', 'version',
  'schema', 'audit', 'preview', 'issue', 'return', 'returns', 'go', 'call', 'step', 'end', 'set', 'record',
  'rollback', 'drain', 'book', 'query',
]);

/** Word pairs that name one action. */
export const PHRASES: [RegExp, Category][] = [
  [/\bport forward/, 'Execute'],
  [/\bgo (back|forward)\b/, 'Read'],
  [/\b(ai|autonomous|research) agent\b/, 'Execute'],
];

/** Money words in a description that mean the call itself moves money. */
export const MONEY_MOVES = /\b(refunds? (?:money|the (?:customer|buyer|payment))|moves? money|charges? the (?:customer|card)|bills? (?:the )?(?:customer|someone)|sends? (?:money|funds|payment)|(?:make|makes|process|processes|capture|captures) (?:a |the )?payment|transfer(?:s)? (?:money|funds)|one-time charge|refund or credit|withdraw(?:s|al)?)\b/;

/** Objects that run code or processes: creating, starting, opening or connecting one executes. */
export const EXEC_NOUNS = new Set([
  'code', 'script', 'command', 'shell', 'bash', 'terminal', 'sql', 'javascript', 'python', 'process', 'kernel',
  'debugger', 'debugpy', 'dap', 'sandbox', 'repl', 'interpreter', 'gdb', 'lldb', 'pdb', 'migration',
]);

/** The same, as the description says it. */
export const EXEC_PROSE = /\b(debug(?:ger|ging)? session|debugger|debugpy|(?:python|shell|bash|node) (?:script|process|code)|running (?:python )?process(?:es)?|attach(?:es)? (?:a debugger|debugpy|to (?:a |the )?(?:running )?process)|kernel|execut(?:e|es|ing) (?:code|commands?|scripts?|sql)|runs? (?:code|commands?|scripts?|sql)|shell commands?)\b/;

/** Read-only products: creating or running one only reads. */
export const REPORT_NOUNS = new Set(['report', 'reports', 'export', 'summary', 'analysis', 'insight', 'insights', 'snapshot', 'preview', 'qr', 'estimate', 'quote']);

/** Small, re-creatable attachments: deleting one is a Write, not a destruction. */
export const LIGHT_NOUNS = new Set([
  'reaction', 'emoji', 'breakpoint', 'link', 'watcher', 'star', 'favorite', 'bookmark', 'highlight', 'filter',
  'subscriber', 'follower', 'listener', 'pin', 'session', 'forward', 'port', 'draft_reply', 'cache',
]);

/** Also light when *removed* from something (remove_label detaches; delete_label destroys the label). */
export const DETACHABLE_NOUNS = new Set([
  ...LIGHT_NOUNS, 'label', 'tag', 'assignee', 'member', 'reviewer', 'role', 'permission', 'subtask', 'relation',
  'dependency', 'blocker', 'attachment', 'participant', 'collaborator', 'item',
]);

/** Objects whose removal is the removal of a process, not of data. */
export const PROCESS_NOUNS = new Set(['app', 'application', 'process', 'session', 'task', 'job', 'tab', 'page', 'browser', 'recording', 'trace', 'port', 'forward', 'connection', 'screencast', 'codegen']);

/** Words that mark reading credentials. */
export const CREDENTIAL_WORDS = /\b(secret|secrets|password|passwords|credential|credentials|api[ _-]?key|token|tokens|env|environment variables?|connection string|private key|dsn)\b/;

/** Words that mark many items at once. */
export const BULK_WORDS = /\b(bulk|batch|mass|all|many|multiple|every)\b/;

/** Plural-looking words that are not plurals. */
const NOT_PLURAL = new Set(['news', 'status', 'series', 'analysis', 'canvas', 'alias', 'bus', 'gas', 'process', 'access', 'address', 'class', 'progress']);

export function lookupVerb(word: string): { base: string; category: Category } | undefined {
  if (NOT_PLURAL.has(word)) { const c = VERBS.get(word); return c ? { base: word, category: c } : undefined; }
  for (const form of baseForms(word)) {
    const category = VERBS.get(form);
    if (category) return { base: form, category };
  }
  return undefined;
}

export function isNoun(set: Set<string>, word: string): boolean {
  return baseForms(word).some((f) => set.has(f));
}
