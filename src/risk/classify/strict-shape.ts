import { SEVERITY, type ToolDefinition } from '../types.js';
import { type Action } from './context.js';
import { type Escalation, stricterEscalation } from './strict.js';
import { topProperties } from './from-schema.js';
import { type ServerProfile } from './from-server.js';

/**
 * Round seven (issue 24): classes judged by the *shape* of a call — what its parameters let it do and
 * what the description says the call means — rather than by a domain's words, because word lists
 * drawn from seen servers did not carry to unseen ones. Each only makes a tool stricter (SPEC 5
 * "Safe by default"); a reading that is plausible rather than stated is marked `leaned` (item 3).
 * Each has a neighbour that stays as it was (test/risk-shape.test.ts).
 *
 * - the text says a call costs money ("may incur costs", "billed from your credits"): paid
 *   generation and metered calls are Financial, whatever they produce (a neighbour that says it is
 *   free, or that never spends, is not);
 * - a call that widens who may access something: granting (privileges, scopes, a delegation),
 *   sharing with a named recipient, assigning a role, or updating permissions with a principal or
 *   a level among the arguments (revoking, removing or creating a new role narrows or opens nothing);
 * - a call that passes a gate on the agent's word: a decision or status argument that can say
 *   "approve"/"accept" on a review, a verification, a proposal or a pending request; or marking a
 *   finding a false positive or won't-fix, or resolving it as safe (the finding leaves the gate);
 * - a call that replaces what exists: a create with an `orReplace`/`overwrite` switch, a find-and-
 *   replace with a replace-all switch, a restore from a dump or backup;
 * - a removal "from" the application itself ("remove a task from OmniFocus") rather than from a
 *   group or list: the thing leaves the system;
 * - a query argument whose plan is taken by running it (EXPLAIN ANALYZE, an optimizer trace): the
 *   statement is executed, so it is Execute.
 */

/** The call itself is billed: "may incur costs", "billed from Conway credits", "consumes credits". */
const COSTS = /\b(?:incurs?|incurring) (?:\w+ ){0,2}(?:costs?|charges?|fees?)\b|\bbilled (?:from|to|against|per) (?:\w+ ){0,2}(?:credits?|balance|account|wallet|call|request|event|generation|image|second|minute|token)s?\b|\b(?:consumes?|deducts?) (?:\w+ ){0,2}credits?\b/;
const NEGATED = /\b(?:not|never|no|without|won't|doesn't|does not|free of)\s+(?:\w+\s+){0,2}$/;
/** Verbs that widen access by themselves, and those that narrow it (never escalated here). */
const NARROWING = new Set(['revoke', 'remove', 'delete', 'unshare', 'deny', 'drop', 'list', 'get', 'read', 'check', 'view', 'show', 'describe', 'search', 'find', 'create', 'new', 'clone']);
const ACCESS_NOUNS = new Set(['permission', 'permissions', 'privilege', 'privileges', 'acl', 'acls', 'access', 'sharing', 'visibility', 'scopes']);
const SETTING_VERBS = new Set(['update', 'set', 'change', 'modify', 'edit', 'put', 'patch', 'replace']);
/** Arguments that name who gets access. */
const PRINCIPAL = /^(?:users?|user_?ids?|userIds?|groups?|group_?ids?|groupIds?|members?|member_?ids?|memberIds?|emails?|email_?address(?:es)?|emailAddress(?:es)?|recipients?|grantees?|principals?|partner\w*|agent_?names?|agentNames?|agent_?ids?|agentIds?|roles?)$/;
/** Arguments that say how much access. */
const LEVEL = /(?:level|role|roles|permission|permissions|privileges?|scopes?|acl\w*|access|access_?mode|accessMode|visibility)$/i;
/** Credentials named for access (an access token, an access key): setting one is signing in, not widening who may see. */
const CREDENTIAL = new Set(['token', 'tokens', 'key', 'keys', 'secret', 'secrets', 'credential', 'credentials', 'password']);
/** The text says the call opens something private: "publish a private document", "make the board public". */
const OPENS_PRIVATE = /\b(?:publish(?:es)?|exposes?|moves?) (?:a |an |the |this |your )?private\b|\bmakes? (?:\w+ ){0,3}(?:public|visible to (?:everyone|anyone|all))\b|\bfrom private to public\b/;
const STATUS_PARAM = /^(?:decision|verdict|status|new_?status|newStatus|state|resolution|review_?status|reviewStatus|outcome|response|action_?type|actionType|transition)$/;
const APPROVE_VALUE = /^(?:approved?|accept(?:ed)?)$/i;
/** What an approval passes: a review, a verification, a proposal, a request a person was asked. */
const GATE_TEXT = /\bapprov|\breview|\belicitation|\bverification\b|\bcompliance\b/;
const SUPPRESS_VALUE = /^(?:false[_ -]?positive|won'?t[_ -]?fix|wontfix|safe|risk[_ -]?accepted|accepted[_ -]?risk)$/i;
/** A conversation's status (a review comment or thread marked won't-fix) is a reply, not a finding leaving a gate. */
const CONVERSATION = new Set(['comment', 'comments', 'thread', 'threads', 'discussion', 'discussions', 'conversation', 'reply', 'note']);
const SUPPRESS_TEXT = /\b(?:as )?(?:a )?false positives?\b|\bwon'?t fix\b|\bwontfix\b/;
const REPLACE_SWITCH = /^(?:or_?replace|orReplace|replace_?existing|replaceExisting|overwrite|overwrite_?existing|overwriteExisting|allow_?overwrite|allowOverwrite)$/;
const MAKING = new Set(['create', 'new', 'add', 'define', 'write', 'save', 'put', 'upload', 'register', 'make']);
const FIND_PARAM = /^(?:old_?(?:string|str|text)|oldString|oldText|find_?text|findText|search_?text|searchText|pattern|find)$/;
const REPLACE_ALL = /^(?:replace_?all|replaceAll|all|global|all_?occurrences|allOccurrences)$/;
const RESTORES_DUMP = /\brestores? (?:\w+ ){0,2}from (?:a |an |the |its )?(?:\w+ ){0,2}(?:dumps?|backups?|snapshots?)\b/;
const REMOVE_FROM = /^removes? (?:a |an |the |one |multiple |several |all )?(?:[\w-]+ ){1,4}?from ([\w-]+)/;
/** A merge where one side does not survive: "the entity with more records wins", "the duplicate is deleted". */
const MERGE_LOSES = /\b(?:wins|loser|absorbed|(?:is|are|will be|gets?) (?:deleted|removed|archived)|no longer exists?)\b/;
/** An update by filter that can unset fields on every match. */
const FILTER_PARAM = /^(?:filter|where|query|selector|match)$/;
const UNSET_PARAM = /^(?:unset|\$unset|remove_?fields|removeFields|delete_?fields|deleteFields)$/;
/** The call runs a command-line program here: "run quality analysis locally using the X CLI". */
const RUNS_CLI = /\b(?:runs?|executes?|invokes?) [^.]{0,40}?\b(?:using|via|with|through) (?:the |a )?[\w-]+ (?:cli|command line|command-line tool)\b/;
const QUERY_PARAM = /^(?:query|sql|statement|sql_?query|sqlQuery)$/;
const RUNS_PLAN = /\bexplain analy[sz]e\b|\boptimi[sz]er trace\b|\bwith actual (?:timing|rows|execution)\b/;

/** The string values an argument allows: its enum, its items' enum, or the enums of an anyOf/oneOf (a nullable enum). */
function enumOf(schema: Record<string, unknown>): string[] {
  const alternatives = (schema.anyOf ?? schema.oneOf) as Record<string, unknown>[] | undefined;
  if (Array.isArray(alternatives)) return alternatives.flatMap((a) => (a && typeof a === 'object' && !Array.isArray(a.anyOf ?? a.oneOf) ? enumOf(a) : []));
  const e = Array.isArray(schema.enum) ? schema.enum : Array.isArray((schema.items as { enum?: unknown } | undefined)?.enum) ? (schema.items as { enum: unknown[] }).enum : [];
  return e.filter((v): v is string => typeof v === 'string');
}

/** The strictest round-seven class above `action`'s category, if any; `description` is lower-cased. */
export function shapeReading(tool: ToolDefinition, words: string[], action: Action | undefined, description: string, profile: ServerProfile): Escalation | undefined {
  const current = SEVERITY[action?.category ?? 'Read'];
  if (current >= SEVERITY.Financial) return undefined;
  const opening = description.slice(0, 600);
  let best: Escalation | undefined;

  // A call that is billed (paid generation, metered calls, credits): whatever it makes, it costs money.
  const cost = opening.includes('incur') || opening.includes('billed') || opening.includes('credit') ? COSTS.exec(opening) : null;
  if (cost && !NEGATED.test(opening.slice(Math.max(0, cost.index - 30), cost.index))) {
    best = stricterEscalation(best, current, { category: 'Financial', effect: 'costs money each time it runs', leaned: false, evidence: { from: 'description', text: cost[0] }, note: `The description says a call ${cost[0].startsWith('incur') || cost[0].startsWith('may') ? 'can incur' : 'is billed'} (“${cost[0]}”): whatever it produces, each call spends money, so it is Financial (SPEC 5: moves money or creates an obligation to pay).` });
  }
  if (current >= SEVERITY.Destructive || current < SEVERITY.Write) return best ?? readShape(tool, words, current, opening);

  const props = topProperties(tool);
  const narrows = words.some((w) => NARROWING.has(w));
  // Widening who may access something: a grant, a share with a recipient, a role assigned, permissions set for someone.
  // Cheap guards first (this runs for every Write tool): the words a reading needs before any scan of the arguments.
  const widening = words.includes('grant') || words.includes('share') || words.includes('assign') || (words.some((w) => ACCESS_NOUNS.has(w)) && words.some((w) => SETTING_VERBS.has(w)));
  if (widening && !narrows && !words.some((w) => CREDENTIAL.has(w))) {
    const principal = props.find(([name]) => PRINCIPAL.test(name));
    const level = props.find(([name]) => LEVEL.test(name) && !PRINCIPAL.test(name));
    const grant = words.includes('grant') ? 'grant' : undefined;
    const share = words.includes('share') && principal && principal[0] !== 'role' && principal[0] !== 'roles' ? 'share' : undefined;
    const assign = words.includes('assign') && (words.includes('role') || words.includes('roles') || props.some(([name]) => /^roles?$/.test(name))) ? 'assign' : undefined;
    const setAccess = words.some((w) => ACCESS_NOUNS.has(w)) && words.some((w) => SETTING_VERBS.has(w)) && (principal ?? level) ? 'set' : undefined;
    const how = grant ?? share ?? assign ?? setAccess;
    if (how) {
      const arg = (how === 'set' ? principal ?? level : principal ?? level)?.[0];
      best = stricterEscalation(best, current, { category: 'Destructive', effect: 'widens who may access something, which removes a protection', leaned: true, evidence: { from: 'name', text: tool.name }, note: `It ${how === 'grant' ? 'grants access or privileges' : how === 'share' ? 'shares something with a recipient' : how === 'assign' ? 'assigns a role' : 'changes permissions'}${arg ? ` (its \`${arg}\` argument says to whom or how much)` : ''}: widening who may see or change something removes a protection, and what was seen cannot be unseen (SPEC 5: Destructive; revoking would stay Write; the stricter reading, as confidence is low).` });
    }
  }
  const opens = opening.includes('private') || opening.includes('public') ? OPENS_PRIVATE.exec(opening.slice(0, 300)) : null;
  if (opens) best = stricterEscalation(best, current, { category: 'Destructive', effect: 'opens something private, which removes a protection', leaned: true, evidence: { from: 'description', text: opens[0] }, note: `The description says it ${opens[0]}: what was private becomes visible to others, and what was seen cannot be unseen (SPEC 5: removes a protection, Destructive; the stricter reading, as confidence is low).` });
  // Passing a gate on the agent's word: approving a review, a verification, a proposal or a pending request.
  const status = props.some(([name]) => STATUS_PARAM.test(name));
  const approve = status && GATE_TEXT.test(`${words.join(' ')} ${opening.slice(0, 300)}`) ? props.flatMap(([name, schema]) => (STATUS_PARAM.test(name) ? enumOf(schema).filter((v) => APPROVE_VALUE.test(v)).map((v) => `${name}: ${v}`) : [])).at(0) : undefined;
  if (approve) best = stricterEscalation(best, current, { category: 'Destructive', effect: 'can approve what a person was meant to review, which removes the gate', leaned: true, evidence: { from: 'schema', text: approve }, note: `Its arguments can say “${approve}” on a review, a verification or a pending request: an approval on the agent's word passes the gate a person was meant to hold, which removes a protection (SPEC 5: Destructive; the stricter reading, as a call may only decline).` });
  // Suppressing a finding: a false positive, a won't-fix, a hotspot resolved as safe leaves the quality or security gate.
  const finding = !words.some((w) => CONVERSATION.has(w) || MAKING.has(w)) && !/^(?:creates?|adds?|replies|posts?) /.test(opening);
  const suppressValue = !finding || !status ? undefined : props.flatMap(([name, schema]) => (STATUS_PARAM.test(name) ? enumOf(schema).filter((v) => SUPPRESS_VALUE.test(v)) : [])).at(0);
  const suppressText = !finding ? undefined : suppressValue ?? (!opening.includes('fix') && !opening.includes('false') && !words.includes('false') && !words.includes('wont') ? undefined : SUPPRESS_TEXT.exec(`${words.join(' ')} ${opening.slice(0, 200)}`)?.[0]);
  if (suppressText) best = stricterEscalation(best, current, { category: 'Destructive', effect: 'silences a finding, which removes it from the gate', leaned: true, evidence: { from: suppressValue ? 'schema' : 'description', text: suppressText }, note: `It can mark a finding “${suppressText}”: a suppressed finding no longer holds back a quality or security gate, and nobody looks at it again, which removes a protection (SPEC 5: Destructive; the stricter reading, as it can be reopened).` });
  // Replacing what exists: a create that may replace an existing one, a replace-all, a restore from a dump.
  const making = words.some((w) => MAKING.has(w));
  const replaceSwitch = making ? props.find(([name, schema]) => REPLACE_SWITCH.test(name) && schema.type === 'boolean') : undefined;
  const replaceAll = props.some(([name]) => FIND_PARAM.test(name)) ? props.find(([name, schema]) => REPLACE_ALL.test(name) && schema.type === 'boolean') : undefined;
  const dump = opening.includes('restor') ? RESTORES_DUMP.exec(opening) : null;
  const replaces = replaceSwitch ? `${replaceSwitch[0]}: true` : replaceAll ? `${replaceAll[0]}: true` : dump?.[0];
  if (replaces) best = stricterEscalation(best, current, { category: 'Destructive', effect: 'can replace what exists, and what was there is lost', leaned: true, evidence: { from: dump && !replaceSwitch && !replaceAll ? 'description' : 'schema', text: replaces }, note: `It can replace what exists rather than add beside it (“${replaces}”): ${replaceAll ? 'every match is rewritten at once' : 'the existing one is overwritten'}, and what was there is lost, so the most dangerous plausible effect is Destructive (the stricter reading, as confidence is low).` });
  // A removal from the application itself ("remove a task from OmniFocus"), not from a group or a list.
  const from = words.includes('remove') && opening.startsWith('remove') ? REMOVE_FROM.exec(opening) : null;
  // The server's name, its words joined ("OmniFocus MCP" splits to omni, focus, mcp; the text says "omnifocus").
  if (from && from[1].length >= 4 && (profile.words.has(from[1]) || [...profile.words].join('').includes(from[1]))) best = stricterEscalation(best, current, { category: 'Destructive', effect: 'removes it from the application, which deletes it', leaned: true, evidence: { from: 'description', text: from[0] }, note: `It ${from[0]}: taken out of the application itself rather than out of a group or a list, the thing is gone, so it is Destructive (the stricter reading, as confidence is low).` });
  const merge = words.includes('merge') && opening.startsWith('merge') ? MERGE_LOSES.exec(opening) : null;
  if (merge) best = stricterEscalation(best, current, { category: 'Destructive', effect: 'merges two into one, and the other one is gone', leaned: true, evidence: { from: 'description', text: merge[0] }, note: `It merges two things into one and the description says one side ${merge[0]}: the other no longer exists as it was, and an unmerge rarely brings it back, so it is Destructive (the stricter reading, as confidence is low).` });
  const unset = props.some(([name]) => FILTER_PARAM.test(name)) ? props.find(([name]) => UNSET_PARAM.test(name)) : undefined;
  if (unset) best = stricterEscalation(best, current, { category: 'Destructive', effect: 'can remove fields from every record a filter matches', leaned: true, evidence: { from: 'schema', text: unset[0] }, note: `It updates every record its filter matches and its \`${unset[0]}\` argument removes fields from them: one call can erase a field across a whole collection, so it is Destructive (the stricter reading, as confidence is low).` });
  return best ?? readShape(tool, words, current, opening);
}

/** A Read that runs its query to produce a plan or a trace (EXPLAIN ANALYZE): the statement is executed. */
function readShape(tool: ToolDefinition, words: string[], current: number, opening: string): Escalation | undefined {
  if (current >= SEVERITY.Execute) return undefined;
  const cli = opening.includes(' cli') || opening.includes('command') ? RUNS_CLI.exec(opening.slice(0, 300)) : null;
  if (cli) return { category: 'Execute', effect: 'runs a command-line program', leaned: false, evidence: { from: 'description', text: cli[0] }, note: `The description says it ${cli[0]}: a program runs on this machine with what the call passes it, so it is Execute (SPEC 5: running commands).` };
  const props = topProperties(tool);
  const query = props.find(([name, schema]) => QUERY_PARAM.test(name) && schema.type === 'string');
  if (!query) return undefined;
  const analyze = words.includes('explain') ? props.find(([name, schema]) => name === 'analyze' && schema.type === 'boolean') : undefined;
  const plan = analyze ? 'analyze' : opening.includes('explain') || opening.includes('optimi') || opening.includes('actual') ? RUNS_PLAN.exec(opening)?.[0] : undefined;
  if (!plan) return undefined;
  return { category: 'Execute', effect: 'runs the statement its query argument carries', leaned: false, evidence: { from: analyze ? 'schema' : 'description', text: plan }, note: `It takes a statement in its \`${query[0]}\` argument and ${analyze ? 'can analyze it' : `says “${plan}”`}: a plan with actual timings or a trace is taken by executing the statement, so whatever the statement does is done (SPEC 5: running code or a query language is Execute).` };
}
