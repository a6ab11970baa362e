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
    go return query whoami ping status health info detail details log logs history diff blame tree geocode direction
    directions distance elevation scrape crawl map extract parse research ask reason think echo sum calculate compute
    wait expect assert discover query_docs resolve_library identify estimate measure test_connection lint audit
    trace capture_screenshot observe watch poll download render convert translate format recommend suggest
    diagnose troubleshoot debug_info grep cat head tail stat stats metric metrics scan open capture version schema
    thinking think score forecast predict autocomplete help examine tokenize rerank rank classify detect access transform
    goto visit`),
  ...verbs('Write', `create add update edit set put post send write move rename copy upload insert append modify patch assign
    unassign comment reply merge push commit fork star unstar label tag connect disconnect pause resume schedule
    invite subscribe unsubscribe enable disable toggle save store upsert publish unpublish close reopen approve unapprove
    mark resolve protect mute unmute cancel release allocate login logout register provision emulate resize select
    link unlink detach stop end clear generate replay feedback configure init initialize sync import rate vote react
    pin unpin archive unarchive lock unlock restore revert reset rollback submit notify remind share unshare
    complete finish accept reject dismiss follow unfollow new make draft snooze transition
    duplicate clone scale record note reconnect compress finalize prepare manage confirm authorize void issue
    transfer switch broadcast multicast give grant place hide unhide fix suspend decline report promote activate deactivate
    forward relay bump contest dispute acquire rent lease rebuild recreate reinitialize replace alter award ingest bridge wrap unwrap mint burn claim redeem`),
  ...verbs('Execute', `run execute exec eval evaluate invoke trigger launch spawn attach step continue deploy build compile
    install apply click tap press type fill hover drag drop swipe scroll interact rerun retry restart call perform
    automate simulate sql start handle rollout upgrade downgrade cordon drain ship delegate redeploy`),
  ...verbs('Destructive', `delete remove destroy purge truncate wipe erase uninstall cleanup clean unprotect revoke kill
    terminate flush prune deprovision decommission overwrite nuke empty shred obliterate evict`),
  ...verbs('Financial', `pay refund charge payout withdraw purchase buy sell trade swap tip donate bill checkout
    capture_payment transfer_funds deposit stake unstake borrow repay lend hire liquidate debit`),
]);

/** HTTP methods as tool verbs: with no object they are raw API calls. */
export const HTTP_METHODS = new Set(['get', 'post', 'put', 'patch', 'delete']);

/** Things whose creation or change moves money or creates an obligation to pay. */
export const MONEY_NOUNS = new Set([
  'payment', 'payments', 'refund', 'refunds', 'payout', 'payouts', 'transfer', 'transfers', 'withdrawal', 'invoice',
  'invoices', 'subscription', 'subscriptions', 'renewal', 'autorenewal',
  'adjustment', 'adjustments', 'checkout', 'purchase', 'purchases', 'trade', 'trades', 'swap', 'swaps', 'bill',
  'billing', 'money', 'funds', 'fund', 'cash', 'wire', 'disbursement', 'remittance', 'credit', 'debit', 'paymentlink', 'intent',
  'usdc', 'usdt', 'eth', 'bnb', 'btc', 'crypto', 'cryptocurrency', 'erc20', 'nft', 'erc721', 'erc1155', 'allowance',
  'stablecoin', 'lamports', 'sats', 'payment_method', 'auto_renewal', 'spending', 'expense', 'expenses', 'deposit', 'deposits', 'sale', 'sales',
  // Paying people: a bounty, escrow or payroll is money owed to someone.
  'bounty', 'bounties', 'escrow', 'payroll', 'salary', 'salaries',
  // Disputing a payment: contesting a chargeback is about money owed.
  'chargeback', 'chargebacks', 'dispute', 'disputes',
  // A share of revenue paid out to others.
  'revenue',
  // Wagers and pools of funds: placing a bet or adding liquidity commits money.
  'bet', 'bets', 'wager', 'wagers', 'liquidity', 'reward', 'rewards',
]);

/**
 * Words that are money only where money is the server's business: an `order` is a sort direction
 * to a database and a purchase to a shop or an exchange; a `charge` is a battery level or a card
 * payment; a `token` is a credential or a coin.
 */
const MOVE = ['send', 'transfer', 'approve', 'buy', 'sell', 'swap', 'withdraw', 'deposit', 'stake', 'bridge', 'wrap', 'unwrap', 'mint', 'burn', 'redeem', 'claim'];
const OBLIGE = ['create', 'place', 'cancel', 'update', 'modify', 'edit', 'close', 'submit', 'execute', 'send', 'approve', 'amend', 'replace', 'delete', 'confirm', 'broadcast', 'sign', 'post', 'capture', 'void', 'refund', 'redeem'];
const CHANGE = ['update', 'modify', 'edit', 'cancel', 'change', 'upgrade', 'downgrade'];
const senses = (verbs: string[], nouns: string) => nouns.split(' ').map((n): [string, Set<string>] => [n, new Set(verbs)]);

export const CONTEXT_MONEY_NOUNS = new Map<string, Set<string>>([
  ...senses(OBLIGE, 'order charge position transaction'),
  ...senses(MOVE, 'token coin native asset'),
  ...senses(CHANGE, 'plan'),
  ...senses([...CHANGE, 'set'], 'leverage margin'),
]);

/**
 * Nouns that, written before one of those words, pick its other sense: a work order is made in a
 * factory, a database transaction commits rows, an access token is a credential, a battery charge
 * is a level, a scroll position is on a screen.
 */
export const NON_MONEY_QUALIFIERS = new Set([
  'work', 'sort', 'display', 'job', 'production', 'manufacturing', 'maintenance', 'build', 'change', 'sequence',
  'database', 'db', 'sql', 'git', 'batch', 'access', 'api', 'auth', 'refresh', 'bearer', 'session', 'jwt', 'csrf',
  'personal', 'oauth', 'id', 'battery', 'scroll', 'cursor', 'window', 'mouse', 'camera', 'page',
]);

/** Generic objects: what they are is an argument, so on a money server any of them can be an invoice or an order. */
export const GENERIC_DOCUMENTS = new Set(['document', 'documents', 'doc', 'docs', 'doctype', 'record', 'records', 'entity', 'entities']);

/** A server (by name, instructions or siblings) whose business is money. */
export const MONEY_SERVER = /\b(pay(?:ments?)?|billing|invoic\w*|subscriptions?|wallets?|crypto\w*|blockchain|exchange|trading|trades?|ccxt|stripe|paypal|paddle|defi|swap|balances?|ledger|merchant|storefront|e-?commerce|shop(?:ify)?|erc20|web3|evm|bnb\w*|ethereum|solana|bitcoin|futures|forex|brokerage)\b/;

/** A server that deploys: syncing or promoting an application there is a deployment (Execute). */
export const DEPLOY_SERVER = /\b(argo\w*|gitops|deploy\w*|helm|flux|spinnaker|ci\/cd|release pipelines?)\b/;

/** Usage and credits bill someone on a server whose business is money (metered billing). */
export const METERED_NOUNS = new Set(['usage', 'credit', 'credits', 'meter', 'meters']);

/** Money nouns that only imply money moves together with a mutating verb on that very object. */
export const MONEY_VERBS_ON_OBJECT: Record<string, Category> = {
  create: 'Financial', send: 'Financial', cancel: 'Financial', update: 'Financial', finalize: 'Financial',
  pay: 'Financial', capture: 'Financial', accept: 'Financial', issue: 'Financial', confirm: 'Financial',
  authorize: 'Financial', void: 'Financial', execute: 'Financial', submit: 'Financial', approve: 'Financial',
  place: 'Financial', transfer: 'Financial', process: 'Financial', upgrade: 'Financial', downgrade: 'Financial',
  pause: 'Financial', resume: 'Financial', enable: 'Financial', disable: 'Financial', set: 'Financial', renew: 'Financial',
  change: 'Financial', buy: 'Financial', close: 'Financial', modify: 'Financial', edit: 'Financial', register: 'Financial',
  complete: 'Financial', release: 'Financial', delete: 'Financial', contest: 'Financial', dispute: 'Financial',
  broadcast: 'Financial', sign: 'Financial', post: 'Financial', claim: 'Financial', redeem: 'Financial', add: 'Financial',
  bridge: 'Financial', wrap: 'Financial', unwrap: 'Financial', mint: 'Financial', burn: 'Financial', rent: 'Financial',
};


/** Words that are as often nouns as verbs: in a name, a plainer verb beside them is the action. */
export const AMBIGUOUS = new Set([
  'comment', 'note', 'draft', 'record', 'tag', 'label', 'link', 'map', 'order', 'trace', 'log', 'logs', 'history',
  'status', 'run', 'build', 'test', 'sum', 'capture', 'export', 'import', 'report', 'schedule', 'snapshot',
  'screenshot', 'star', 'pin', 'lock', 'release', 'reply', 'scale', 'tree', 'diff', 'commit', 'merge', 'push',
  'feedback', 'view', 'check', 'count', 'type', 'drop', 'clone', 'archive', 'filter', 'watch', 'swap', 'trade',
  'charge', 'bill', 'refund', 'payout', 'metric', 'metrics', 'stat', 'stats', 'detail', 'details', 'info', 'version',
  'schema', 'audit', 'preview', 'issue', 'return', 'go', 'call', 'step', 'end', 'set', 'record',
  'rollback', 'drain', 'book', 'query',
]);

/** Names of other agents: a tool named after one hands it work (SPEC: "calls to … other agents"). */
export const AGENT_NAMES = new Set(['claude', 'codex', 'gemini', 'copilot', 'aider', 'devin', 'subagent', 'subagents']);

/** Word pairs that name one action. */
export const PHRASES: [RegExp, Category][] = [
  [/\bport forward/, 'Execute'],
  // Back and forward drive a real browser to a URL from its history (SPEC 5: navigation is Execute).
  [/\bgo (back|forward)\b/, 'Execute'],
  [/\b(ai|autonomous|research|coding) (agent|assistant)\b/, 'Execute'],
  [/\bkick(?:s|ing)? off\b/, 'Execute'],
  [/\b(?:hands?|delegates?|passes|forwards?|sends?) (?:a |the |this )?(?:task|prompt|work|job) (?:off )?to (?:an?|the|another) /, 'Execute'],
  [/\bbrowser automation\b|\bautomates? (?:the |a )?browser\b/, 'Execute'],
];

/** Money words in a description that mean the call itself moves money. */
const MONEY_MOVES = new RegExp([
  /refunds? (?:money|the (?:customer|buyer|payment))|moves? money|charges? the (?:customer|card)|bills? (?:the )?(?:customer|someone)/.source,
  /sends? (?:money|funds|payments?|\d[\d.,]* |(?:usdc|usdt|eth|bnb|btc|sol|crypto|native|erc-?20|tokens?|coins?)\b)/.source,
  /(?:make|makes|process|processes|capture|captures) (?:a |the )?payment|one-time charge|refund or credit|withdraw(?:s|al)?/.source,
  /transfer(?:s|ring)? (?:money|funds|(?:the |an? |some )?(?:native|erc-?\d+|nfts?|tokens?|coins?|crypto|usdc|usdt|eth|bnb|btc|sol)\b)/.source,
  /(?:buys?|purchases?|orders?) (?:a |an |the |new )?(?:domain|plan|subscription|licen[cs]e|service|product|item|hosting|credits?|tokens?)/.source,
  /places? (?:a |an )?(?:new )?(?:market |limit |stop |buy |sell )?order|(?:buy|sell) orders?|market orders?|limit orders?/.source,
  /approves? (?:a |the )?(?:spender|token spending|allowance)|token allowance|spending (?:allowance|approval)/.source,
  /(?:cancels?|pauses?|resumes?|upgrades?|downgrades?) (?:a |an |the )?(?:customer'?s? )?(?:active )?subscriptions?|auto-?renew(?:al)?|auto(?:matic)?[ -]?(?:credit )?(?:refill|top-?up|recharge|reload)s?/.source,
].map((s) => `(?:${s})`).join('|').replace(/^/, '\\b(?:').concat(')'));

/** A fee or payment the call itself spends ("one payment covers all children"). */
const FEE_MOVES = /\b(?:one payment covers|requires? (?:a )?payment|pays? (?:a |the )?fee|fees? (?:is|are) (?:charged|deducted|paid))/;

/** The words of `text` that say the call moves money, if any. */
export function movesMoney(text: string): string | undefined {
  return MONEY_MOVES.exec(text)?.[0] ?? (/pay|fee/.test(text) ? FEE_MOVES.exec(text)?.[0] : undefined);
}

/** Parameters that carry a payment: a call that takes one spends it. */
export const PAYMENT_PARAM = /^payment_?(?:tx|txn|transaction|hash|proof|signature|receipt)$/i;

/** What an applied change can be without running anything ("apply a patch" edits; "apply a manifest" deploys). */
export const EDIT_NOUNS = new Set(['patch', 'diff', 'edit', 'change', 'label', 'tag', 'style', 'filter', 'template', 'theme', 'format', 'fix', 'suggestion', 'correction']);

/** Objects that run code or processes: creating, starting, opening or connecting one executes. */
export const EXEC_NOUNS = new Set([
  'code', 'script', 'command', 'shell', 'bash', 'terminal', 'sql', 'javascript', 'python', 'process', 'kernel',
  'debugger', 'debugpy', 'dap', 'sandbox', 'repl', 'interpreter', 'gdb', 'lldb', 'pdb', 'migration',
]);

/** The same, as the description says it. */
export const EXEC_PROSE = /\b(debug(?:ger|ging)? session|debugger|debugpy|(?:python|shell|bash|node) (?:script|process|code)|running (?:python )?process(?:es)?|attach(?:es)? (?:a debugger|debugpy|to (?:a |the )?(?:running )?process)|kernel|execut(?:e|es|ing) (?:an? |the |any )?(?:[\w/-]+ )?(?:code|commands?|scripts?|sql)|runs? (?:an? |the |any )?(?:code|commands?|scripts?|sql)|shell commands?|tmux|(?:terminal|shell) (?:pane|window|session))\b/;

/** Read-only products: creating or running one only reads. */
export const REPORT_NOUNS = new Set(['audit', 'audits', 'scan', 'scans', 'score', 'scores', 'lighthouse', 'report', 'reports', 'export', 'summary', 'analysis', 'insight', 'insights', 'snapshot', 'preview', 'qr', 'estimate', 'quote']);

/** Small, re-creatable attachments: deleting one is a Write, not a destruction. */
export const LIGHT_NOUNS = new Set([
  'reaction', 'emoji', 'breakpoint', 'watchpoint', 'logpoint', 'link', 'watcher', 'star', 'favorite', 'bookmark', 'highlight', 'filter',
  'subscriber', 'follower', 'listener', 'pin', 'session', 'forward', 'port', 'draft_reply', 'cache',
  'redirect', 'forwarding', 'proxy', 'tunnel', 'alias', 'invite', 'bypass',
]);

/** Also light when *removed* from something (remove_label detaches; delete_label destroys the label). */
export const DETACHABLE_NOUNS = new Set([
  ...LIGHT_NOUNS, 'label', 'tag', 'assignee', 'member', 'reviewer', 'role', 'permission', 'subtask', 'relation',
  'dependency', 'blocker', 'attachment', 'participant', 'collaborator', 'item', 'remote', 'redirect', 'forwarding',
  'alias', 'entry', 'favourite', 'reminder', 'watch', 'assignment', 'follower', 'upvote', 'vote',
]);

/** Protections: removing or disabling one is Destructive (SPEC: "or removes protections"). */
export const PROTECTION_NOUNS = new Set([
  'lock', 'locks', 'protection', 'protections', 'privacy', 'firewall', 'mfa', '2fa', 'encryption', 'safeguard',
  'guardrail', 'guardrails', 'restriction', 'restrictions', 'blocklist', 'blocked', 'denylist', 'ruleset', 'rulesets',
  // Backups protect data against its loss: turning them off removes that protection.
  'backup', 'backups',
]);

/** Artefacts a call makes and hands back: generating one changes nothing unless it is saved somewhere. */
export const ARTEFACT_NOUNS = new Set([
  'chart', 'graph', 'diagram', 'plot', 'visualization', 'visualisation', 'qr', 'url', 'query', 'map', 'maps', 'reply', 'response',
  'summary', 'text', 'caption', 'title', 'slug', 'uuid', 'hash', 'palette', 'prompt', 'suggestion', 'recommendation',
  'markdown', 'svg', 'mermaid', 'snippet', 'sql', 'regex', 'cron', 'wordcloud', 'heatmap', 'histogram', 'flowchart',
  'mindmap', 'treemap', 'sankey', 'funnel', 'radar', 'scatter', 'boxplot', 'venn', 'gantt', 'infographic', 'explanation',
  'description', 'outline', 'example', 'examples', 'commit_message', 'spreadsheet', 'table',
]);

/** Of those, the pictures: even "create" only hands one back ("create_bar_chart"). */
export const PICTURE_NOUNS = new Set([
  'chart', 'graph', 'diagram', 'plot', 'visualization', 'visualisation', 'qr', 'svg', 'mermaid', 'wordcloud', 'heatmap', 'map',
  'histogram', 'flowchart', 'mindmap', 'treemap', 'sankey', 'boxplot', 'venn', 'gantt', 'infographic',
]);

/** Verbs that make something to hand back ("generate_area_chart", "render a diagram", "build a URL"). */
export const MAKING_VERBS = new Set(['generate', 'render', 'draw', 'create', 'make', 'build', 'compose', 'suggest', 'plot', 'visualize', 'visualise', 'format', 'convert', 'construct', 'draft']);

/** Query languages: running one is Execute even when it only reads (SPEC: "SQL (even read-only SQL)"). */
export const QUERY_LANGUAGE = /\b(sql|odata|promql|logql|metricsql|cypher|esql|es\|ql|instaql|graphql|sparql|kql|influxql|flux query|query dsl|query language|lucene|aggregation pipeline|datalog|n1ql|hogql|traceql|soql|sosl|wiql|jql)\b/;

/** Parameters whose value is a query language: a call that takes one runs it. */
export const LANGUAGE_PARAM = /^(?:sql|soql|sosl|wiql|jql|cypher|promql|logql|kql|hogql|esql|sparql|query_?dsl|where|where_?clause)$/i;

/** Objects whose removal is the removal of a process, not of data. */
export const PROCESS_NOUNS = new Set(['app', 'application', 'process', 'session', 'task', 'job', 'tab', 'page', 'browser', 'recording', 'trace', 'port', 'forward', 'connection', 'screencast', 'codegen']);

/** Words that mark reading credentials. */
export const CREDENTIAL_WORDS = /\b(secret|secrets|password|passwords|credential|credentials|api[ _-]?key|token|tokens|env|environment variables?|connection string|private key|dsn)\b/;

/** Words that mark many items at once. */
export const BULK_WORDS = /\b(bulk|batch|mass|all|many|multiple|every)\b/;

/** Plural-looking words that are not plurals. */
/** Words in -ing that name a thing ("billing_get_plans"), not an action. */
const ING_NOUNS = new Set([
  'billing', 'pricing', 'shipping', 'booking', 'listing', 'listings', 'setting', 'settings', 'mapping', 'mappings', 'logging',
  'routing', 'tracking', 'hosting', 'training', 'meeting', 'meetings', 'building', 'recording', 'recordings', 'funding',
  'messaging', 'marketing', 'rating', 'ratings', 'ranking', 'learning', 'caching', 'networking', 'staging', 'warning', 'warnings',
  'string', 'strings', 'thing', 'things', 'something', 'anything', 'everything', 'nothing', 'morning', 'evening',
]);

const NOT_PLURAL = new Set(['news', 'status', 'series', 'analysis', 'canvas', 'alias', 'bus', 'gas', 'process', 'access', 'address', 'class', 'progress']);

export interface Verb { readonly base: string; readonly category: Category }

/** Tools share their words: each word's answer is worked out once (bounded, for servers that never repeat one). */
const verbCache = new Map<string, Verb | null>();
const VERB_CACHE_MAX = 50_000;

export function lookupVerb(word: string): Verb | undefined {
  let verb = verbCache.get(word);
  if (verb === undefined) {
    if (verbCache.size >= VERB_CACHE_MAX) verbCache.clear();
    verb = findVerb(word) ?? null;
    verbCache.set(word, verb);
  }
  return verb ?? undefined;
}

function findVerb(word: string): Verb | undefined {
  if (ING_NOUNS.has(word)) return undefined;
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

/**
 * Descriptions written in another language: their opening verb, mapped to the lexicon's English
 * (accents stripped, lower-case). English words inside such text are identifiers ("pays" is
 * French for countries), so only these count.
 */
export const FOREIGN_VERBS = new Map<string, string>([
  // French
  ...pairs('get', 'recupere recuperer obtient obtenir retourne renvoie fournit'),
  ...pairs('list', 'liste lister'), ...pairs('search', 'recherche rechercher cherche'), ...pairs('show', 'affiche afficher'),
  ...pairs('read', 'lit lire consulte consulter'), ...pairs('analyze', 'analyse analyser identifie produit compile'),
  ...pairs('create', 'cree creer ajoute ajouter enregistre enregistrer attache attacher'), ...pairs('update', 'modifie modifier'),
  ...pairs('delete', 'supprime supprimer efface effacer detruit detruire'), ...pairs('execute', 'execute executer lance lancer'),
  ...pairs('deploy', 'deploie deployer'), ...pairs('pay', 'paie paye payer rembourse rembourser'), ...pairs('buy', 'achete acheter'),
  ...pairs('send', 'envoie envoyer'),
  // Spanish
  ...pairs('get', 'obtiene obtener devuelve'), ...pairs('list', 'lista listar'), ...pairs('search', 'busca buscar'),
  ...pairs('create', 'crea crear anade'), ...pairs('update', 'actualiza actualizar'), ...pairs('delete', 'elimina eliminar borra borrar'),
  ...pairs('execute', 'ejecuta ejecutar'), ...pairs('pay', 'paga pagar'), ...pairs('send', 'envia enviar'),
  // German
  ...pairs('get', 'liefert holt ruft'), ...pairs('list', 'listet'), ...pairs('search', 'sucht'), ...pairs('create', 'erstellt erzeugt'),
  ...pairs('update', 'aktualisiert andert'), ...pairs('delete', 'loscht entfernt'), ...pairs('execute', 'fuhrt'), ...pairs('pay', 'bezahlt zahlt'),
]);
function pairs(english: string, words: string): [string, string][] { return words.split(' ').map((w) => [w, english]); }

/** Chinese verbs a description opens with, and their English. */
export const CJK_VERBS: [string, string][] = [
  ['查询', 'query'], ['获取', 'get'], ['列出', 'list'], ['搜索', 'search'], ['检索', 'search'], ['读取', 'read'], ['查看', 'view'],
  ['浏览', 'browse'], ['分析', 'analyze'], ['创建', 'create'], ['新建', 'create'], ['添加', 'add'], ['注册', 'register'],
  ['发布', 'publish'], ['发送', 'send'], ['修改', 'update'], ['更新', 'update'], ['编辑', 'edit'], ['评论', 'comment'], ['点赞', 'like'],
  ['删除', 'delete'], ['销毁', 'destroy'], ['清空', 'wipe'], ['执行', 'execute'], ['运行', 'run'], ['部署', 'deploy'], ['调用', 'call'],
  ['支付', 'pay'], ['付款', 'pay'], ['购买', 'buy'], ['退款', 'refund'], ['转账', 'transfer_funds'], ['雇佣', 'hire'],
];

/** Stop words that say a text is French, Spanish or German rather than English. */
export const FOREIGN_TEXT = /(?:^|\s)(?:le|la|les|un|une|de|des|du|et|ou|par|sur|pour|avec|dans|est|sont|aux|d'un|d'une|el|los|las|una|del|para|con|por|der|die|das|eine|und|mit|für|von|ist)(?=\s|$)/g;
export const ENGLISH_TEXT = /(?:^|\s)(?:the|a|an|of|to|for|with|and|is|are|in|on|from|by|this|that|or)(?=\s|$)/g;
