import { SEVERITY, type Category, type Evidence, type ToolDefinition } from '../types.js';
import { type Action } from './context.js';
import { actionChoices, AMOUNT_ARGUMENT, MOVES_MONEY_VALUE, topProperties } from './from-schema.js';
import { type ServerProfile } from './from-server.js';

/**
 * Classes of tools that read laxer than they are (issue 24 item 2, SPEC 5 "Safe by default"),
 * found by structure rather than by name: what the call costs, the arguments it takes, what its
 * command argument routes to, what the sibling tools it runs can do. Each only makes a tool
 * stricter. Where the reading is a plausible one rather than a stated one, it is marked `leaned`:
 * two readings competed with low confidence, and the stricter was recommended (item 3).
 */
export interface Escalation {
  category: Category;
  effect: string;
  /** The sentence of the rationale that says why. */
  note: string;
  evidence: Evidence;
  /** The stricter of two readings, taken because confidence between them is low (SPEC 5: uncertainty leans strict). */
  leaned: boolean;
}

/** The call itself costs money: a per-call fee paid from a wallet ("costs $0.01 USDC via x402"), "paid automatically". */
const PER_CALL_COST = /\bcosts? (?:\$ ?\d[\d.,]*|\d[\d.,]* ?(?:usdc|usdt|usd|eur|eth|sol|sats|dollars?|cents?)\b)|(?:^|[.!]\s+)requires? (?:an? )?x402 (?:\w+ )?payment|\b(?:paid|pays?|charged) automatically\b|\bpaid (?:for )?from (?:the |your )?wallet\b/;
/** Arguments that commit money to someone: a budget, a prize, a bounty, a tip, a bonus, a wage (not a min/max filter on a search). */
const MONEY_ARGUMENT = /^(?!min|max)(?:[a-z]+_)?(?:budget|prize|bounty|reward|tip|bonus|wage|pay)(?:_[a-z0-9]+)*$/i;
const CURRENCY_SUFFIX = /_(?:usd|eur|gbp|usdc|usdt|cents|amount)$/i;
/** A wallet's signing key among the arguments: whatever the call does, it signs with it. */
const WALLET_KEY = /^(?:private_?key|wallet_?private_?key|mnemonic|seed_?phrase|secret_?phrase)$/i;
/** What a signed call does that can move funds: a state-changing contract call, a signed or broadcast transaction. */
const SIGNS_TRANSACTION = /\bstate-changing\b|\bsign(?:s|ing)? (?:and \w+ )?(?:a |the )?transactions?\b|\bbroadcasts? (?:a |the )?(?:signed )?transactions?\b/;
/** The description lists deleting beside creating and updating among what an open-ended call is for ("useful for creating, updating, or deleting data", "CRUD operations"). */
const NAMES_DELETION = /\bcrud\b|\b(?:useful for|used (?:for|to)|includes?|including|supports?|allows?(?: you)? to|lets you|can)\b[^.;]{0,40}?\b(?:creat|updat|list|insert)(?:e|es|ed|ing)?\b[^.;]{0,60}\b(?:delet(?:e|es|ing)|drop(?:s|ping)?|destroy(?:s|ing)?)\b/;
const NEGATION_BEFORE = /\b(?:not|never|no|without|cannot|can't|won't|doesn't|does not|do not|don't)\s+(?:\w+\s+){0,2}$/;
/** Protections a command router manages (locks, access control, firewall rules, policy assignments): what manages them can remove them. */
const PROTECTIONS_MANAGED = /\b(?:(?:un)?lock(?:s|ing)?(?:\/unlocking)?|rbac|role-based access(?: control)?|permissions|access control|firewall rules?|policy assignments?)\b/;
/** A call that also connects or attaches to a running app, process, kernel or debugger (SPEC 5: attaching to processes and debuggers is Execute). */
const ATTACHES = /\b(?:automatically )?(?:connect(?:s|ing)?|attach(?:es|ing)?) (?:it |itself )?to (?:any |all |every |each |the |a |an |its )?(?:found |running |live |discovered |available )?(?:[\w-]+ ){0,3}?(?:apps?|applications?|process(?:es)?|debuggers?|kernels?|runtimes?|debug targets?)\b/;
/** A call that runs a list of the server's own tool calls or commands as one. */
const RUNS_A_BATCH = /\b(?:list|sequence|batch|array|series) of (?:[\w-]+ ){0,2}(?:tool calls|calls|commands|operations|steps)\b/;
/** Arguments that list what to delete in a batch, or flags that empty a table first. */
const DELETE_LIST = /^(?:delete|deletes|remove|removes|destroy|to_?delete|delete_?ids)$/i;
const TRUNCATE_FLAG = /^(?:truncate|drop)(?:_?[A-Za-z]+)?$/;

function unnegated(re: RegExp, text: string): string | undefined {
  const m = re.exec(text);
  if (!m || NEGATION_BEFORE.test(text.slice(Math.max(0, m.index - 40), m.index))) return undefined;
  return m[0];
}

/**
 * `e` if it is stricter than both the tool's current category and the best escalation so far. A
 * module-level function rather than a closure per call: under tsx, which `npm run bench` uses,
 * every named closure costs a `__name` call (about 1.6 µs each, measured).
 */
export function stricterEscalation(best: Escalation | undefined, current: number, e: Escalation): Escalation | undefined {
  return SEVERITY[e.category] > Math.max(current, SEVERITY[best?.category ?? 'Read']) ? e : best;
}

/**
 * The strictest class reading above `action`'s category, if any. `description` is the lower-cased
 * description; `code` is the argument that carries code or a command, if the schema has one.
 */
export function strictReading(tool: ToolDefinition, action: Action | undefined, description: string, code: { name: string; what: string } | undefined, profile: ServerProfile, moneyServer: boolean): Escalation | undefined {
  const current = SEVERITY[action?.category ?? 'Read'];
  const opening = description.slice(0, 400);
  const props = topProperties(tool);
  let best: Escalation | undefined;

  if (current < SEVERITY.Execute && (opening.includes('connect') || opening.includes('attach'))) {
    const attaches = unnegated(ATTACHES, opening);
    if (attaches) best = stricterEscalation(best, current, { category: 'Execute', effect: 'attaches to a running app or process', leaned: false, evidence: { from: 'description', text: attaches }, note: `The description says it also ${attaches.replace(/^automatically /, 'automatically ')}: attaching to a running process or debugger is Execute (SPEC 5), whatever else it does.` });
  }
  // Cheap guards first: this runs for every tool.
  const cost = opening.includes('cost') || opening.includes('paid') || opening.includes('pay') || opening.includes('charged') || opening.includes('x402') ? PER_CALL_COST.exec(opening) : null;
  if (cost) best = stricterEscalation(best, current, { category: 'Financial', effect: 'costs money on every call', leaned: false, evidence: { from: 'description', text: cost[0] }, note: `The description says the call costs money (“${cost[0]}”): whatever it reads or makes, each call pays, so it is Financial.` });
  const money = props.find(([name, schema]) => MONEY_ARGUMENT.test(name) && (CURRENCY_SUFFIX.test(name) || schema.type === 'number' || schema.type === 'integer'));
  if (money && (current >= SEVERITY.Write || CURRENCY_SUFFIX.test(money[0]))) {
    best = stricterEscalation(best, current, { category: 'Financial', effect: 'commits money to someone', leaned: false, evidence: { from: 'schema', text: money[0] }, note: `Its \`${money[0]}\` argument commits money (a budget, a prize, a tip or a payment) to someone, which creates an obligation to pay.` });
  }
  // A multi-action tool on a money server whose actions include sending or paying an amount it takes.
  const amount = moneyServer && current < SEVERITY.Financial ? props.find(([name, schema]) => AMOUNT_ARGUMENT.test(name) && (schema.type === 'number' || schema.type === 'integer' || schema.type === 'string')) : undefined;
  const moves = amount ? actionChoices(tool).flatMap(([name, values]) => values.filter((v) => MOVES_MONEY_VALUE.test(v)).map((v) => [name, v])).at(0) : undefined;
  if (amount && moves) best = stricterEscalation(best, current, { category: 'Financial', effect: 'can move the amount it takes', leaned: false, evidence: { from: 'schema', text: `${moves[0]}: ${moves[1]}` }, note: `Its \`${moves[0]}\` argument offers “${moves[1]}” and it takes an \`${amount[0]}\`: on a server whose business is money, that call moves money.` });
  const key = current >= SEVERITY.Write ? props.find(([name]) => WALLET_KEY.test(name)) : undefined;
  const signs = key ? SIGNS_TRANSACTION.exec(opening) : undefined;
  if (key && signs) {
    best = stricterEscalation(best, current, { category: 'Financial', effect: 'signs a transaction with a wallet key, which can move funds', leaned: true, evidence: { from: 'schema', text: key[0] }, note: `It signs what it sends (“${signs[0]}”) with the wallet key its \`${key[0]}\` argument carries, and a signed transaction can move funds. Between a bounded change and a payment confidence is low, so the stricter reading is recommended.` });
  }
  // An open-ended call (code, a command, a transaction) whose description lists deleting beside creating and updating:
  // SQL is Execute however it reads (SPEC 5), so a statement in a query language is left to the name.
  if ((action?.category === 'Execute' || code) && code?.what !== 'a statement in a query language') {
    const deletes = unnegated(NAMES_DELETION, opening);
    if (deletes) best = stricterEscalation(best, current, { category: 'Destructive', effect: 'can delete what it runs against', leaned: true, evidence: { from: 'description', text: deletes }, note: `It runs what the caller sends, and the description lists “${deletes}” among what that does: the most dangerous plausible effect is a deletion, and with low confidence between the readings the stricter is recommended.` });
  }
  if (code?.what === 'a command') {
    const guards = unnegated(PROTECTIONS_MANAGED, opening);
    if (guards) best = stricterEscalation(best, current, { category: 'Destructive', effect: 'routes commands that manage protections, which can remove them', leaned: true, evidence: { from: 'description', text: guards }, note: `Its \`${code.name}\` argument routes to commands that manage ${guards}: what manages a protection can remove it (SPEC 5: removing protections is Destructive), and with low confidence between the readings the stricter is recommended.` });
  }
  // An arbitrary API call where money is the business: the endpoint the caller picks can pay, refund or transfer.
  if (moneyServer && action?.effect === 'calls an arbitrary API') {
    best = stricterEscalation(best, current, { category: 'Financial', effect: 'calls any endpoint of an API that moves money', leaned: true, evidence: { from: 'description', text: 'an API whose business is money' }, note: 'It calls whatever endpoint the caller names on an API whose business is money, so a call can pay, refund or transfer; between an API call and a payment confidence is low, and the stricter reading is recommended.' });
  }
  if (profile.destroys && current === SEVERITY.Execute && RUNS_A_BATCH.test(opening)) {
    best = stricterEscalation(best, current, { category: 'Destructive', effect: 'runs other tools of the server, which include deleting ones', leaned: true, evidence: { from: 'siblings', text: 'tools that delete' }, note: 'It runs a batch of the server\'s own tool calls, and some of its sibling tools delete: a batch can do whatever they do, so it takes the most dangerous of them (the stricter reading, as confidence is low).' });
  }
  for (const [name, schema] of props) {
    if ((DELETE_LIST.test(name) && (schema.type === 'array' || schema.type === 'object')) || (TRUNCATE_FLAG.test(name) && schema.type === 'boolean')) {
      best = stricterEscalation(best, current, { category: 'Destructive', effect: 'can delete data as it goes', leaned: false, evidence: { from: 'schema', text: name }, note: `Its \`${name}\` argument ${schema.type === 'boolean' ? 'empties what it writes to first' : 'lists what to delete'}, so a call can destroy data.` });
    }
  }
  return best;
}
