import { SEVERITY, type ToolDefinition } from '../types.js';
import { nameWords } from '../words.js';
import { type Action } from './context.js';
import { type Escalation, stricterEscalation } from './strict.js';
import { topProperties } from './from-schema.js';
import { type ServerProfile } from './from-server.js';

/**
 * Round six (issue 24): destruction said in the words of a domain, and overwrite semantics. Each is
 * a *kind* of call, not a tool; each only makes a tool stricter (SPEC 5 "Safe by default"), and a
 * reading that is plausible rather than stated is marked `leaned` (item 3).
 *
 * - resetting something to its defaults or to an empty state (configuration, a system, an agent, a
 *   slot): what was there is gone, whatever the tool calls it; a password, a counter or a view reset is not this;
 * - rebasing a branch: its commits are rewritten, and the old ones leave the branch;
 * - clearing or merging cells, values or ranges of a sheet: the values are gone (a merge keeps only one);
 * - restoring an earlier version or revision into what is there now: the current one is overwritten;
 * - moving something to the trash ("the same as clicking Delete"): deleting, as the user sees it;
 * - the description says "this is a destructive operation", or that the call executes DDL (a migration can drop);
 * - an update that can widen who sees or changes an existing thing (a sharing policy, an access
 *   level, link discovery, granted privileges, a switch that turns a required approval off): it
 *   removes a protection, and what was seen cannot be unseen;
 * - an import or export whose strategy, conflict rule or merge switch can replace what is there;
 * - "replaces … (full update)": a whole-resource PUT, where what the call leaves out is deleted;
 * - an empty replacement that deletes every match ("use an empty replaceText to delete");
 * - an action argument that reviews or approves a pull request: an approval removes the review gate;
 * - the text says a call spends money when asked to ("pass run=true to actually spend", "per-run cost capped by …");
 * - a batch or queue of the server's own operations or tool calls, where those delete or manage things.
 */
const RESET_KEEPS = new Set(['password', 'passwords', 'passwd', 'pin', 'passcode', 'counter', 'counters', 'count', 'timer', 'location', 'zoom', 'view', 'viewport', 'filter', 'filters', 'unread', 'notification', 'notifications', 'badge', 'mfa', 'otp', 'cursor', 'pagination', 'page', 'selection', 'form', 'input', 'search', 'highlight', 'camera']);
/** "Reset the autopilot iteration counter", "reset password": what is reset is a count, a timer or a credential, not content. */
const RESET_KEEPS_TEXT = /\bresets? (?:the |a |an |its |your )?(?:[\w-]+ ){0,2}?(?:counters?|count|timers?|password|zoom|viewport|camera|unread)\b/;
const CELL_NOUNS = new Set(['cell', 'cells', 'value', 'values', 'range', 'ranges', 'column', 'columns', 'row', 'rows', 'sheet', 'sheets']);
const SHEET_TEXT = /\b(?:spreadsheets?|sheets?|workbooks?|cells?|table)\b/;
const VERSION_NOUNS = new Set(['version', 'versions', 'revision', 'revisions', 'history', 'checkpoint']);
const EARLIER_VERSION = /\brestores? (?:a |an |the |its )?(?:historical|previous|earlier|older|old|past|prior) (?:version|revision|state)\b/;
const TO_TRASH = /\b(?:moves?|sends?|puts?) (?:a |an |the |one |each |every |selected )?(?:[\w-]+ ){0,3}?(?:to|into) (?:the )?(?:trash|bin|recycle bin)\b/;
const RUNS_DDL = /\b(?:execut|appl|run)(?:es|ies|s)? (?:the |its |all )?(?:staged )?ddl\b/;
const SAYS_DESTRUCTIVE = /(?<![\w-])(?:this is|is) a destructive (?:operation|action|change|call)\b|\bwarning: (?:this is )?destructive\b/;
/** Arguments that set who can see or change a thing: on an existing one, a call can open it to everyone. */
const SHARING_PARAM = /^(?:sharing_?policy|sharingPolicy|access_?level|accessLevel|link_?sharing|linkSharing|allow_?file_?discovery|allowFileDiscovery|share_?with_?anyone|anyone_?with_?link)$/;
/** An enum value that opens a thing to everyone with its link. */
const ANYONE_VALUE = /^(?:anyone|anyone_?with_?link|public|everyone|all)$/i;
/** A switch that makes a person approve what the thing does: turning it off removes the gate. */
const APPROVAL_SWITCH = /^(?:require_?approval|requires_?approval|approval_?required|require_?review|requireApproval|requiresApproval|approvalRequired)$/;
const GRANT_VERBS = new Set(['add', 'grant', 'append', 'assign', 'give']);
const PRIVILEGE_NOUNS = new Set(['privilege', 'privileges', 'permission', 'permissions']);
const CREATING = new Set(['create', 'new', 'add', 'make', 'register', 'init', 'initialize']);
const STRATEGY_PARAM = /^(?:strategy|mode|on_?conflict|onConflict|conflict|conflict_?strategy|conflictStrategy|conflict_?resolution|conflictResolution|write_?mode|writeMode|import_?mode|importMode)$/;
const REPLACING_VALUE = /^(?:replace|overwrite|replace_?all|overwrite_?all|clobber|force)$/i;
const MOVING_VERBS = new Set(['import', 'export', 'sync', 'push', 'load', 'restore', 'apply', 'upload', 'pull']);
const FULL_UPDATE = /^replaces? [^.\n]{0,60}\(full update\)|\breplaces? (?:the )?(?:whole|entire) (?:resource|object|record)\b/;
const EMPTY_DELETES = /\b(?:an? )?(?:empty|blank) (?:[\w-]+ ){0,2}(?:to delete|deletes|removes|to remove)\b/;
const ACTION_PARAM = /^(?:action|operation|op|mode|command|subcommand)$/;
const REVIEW_VALUE = /^(?:create_?|submit_?|add_?)?reviews?$|^approve(?:_[a-z]+)?$/i;
/** "pass run=true to actually spend", "the per-run cost capped by max_cost_usd": the call pays for what it runs. */
const SPENDS = /\b(?:actually|really) spends?\b|\bcost (?:is )?capped by\b|\bmax_cost_usd\b|\bspends? real money\b/i;
const TOOL_FIELD = /^(?:tool|tool_?name|toolName)$/;
const ARGS_FIELD = /^(?:args|arguments|params|parameters|input)$/;
const DESTROYING = new Set(['delete', 'remove', 'drop', 'destroy', 'purge', 'wipe', 'erase']);
const BATCH_OF_OPERATIONS = /\b(?:execute|run|perform|apply)s? (?:multiple|several|many|a batch of|a list of) (?:[\w-]+ ){0,2}operations\b/;

function enumOf(schema: Record<string, unknown>): string[] {
  const e = Array.isArray(schema.enum) ? schema.enum : [];
  return e.filter((v): v is string => typeof v === 'string');
}

/** The strictest round-six class above `action`'s category, if any; `description` is lower-cased. */
export function domainReading(tool: ToolDefinition, words: string[], action: Action | undefined, description: string, profile: ServerProfile, browser: boolean): Escalation | undefined {
  const current = SEVERITY[action?.category ?? 'Read'];
  if (current >= SEVERITY.Destructive) return undefined;
  const opening = description.slice(0, 400);
  let best: Escalation | undefined;
  const first = words[0] ?? '';

  if (words.includes('reset') && !browser && !words.some((w) => RESET_KEEPS.has(w)) && !RESET_KEEPS_TEXT.test(opening.slice(0, 160))) {
    best = stricterEscalation(best, current, { category: 'Destructive', effect: 'resets it, and what was there is lost', leaned: true, evidence: { from: 'name', text: 'reset' }, note: 'It resets something to its defaults or an empty state: what it held before (settings, learned state, messages) is gone, so the most dangerous plausible effect is Destructive (the stricter reading, as confidence is low).' });
  }
  if (words.includes('rebase')) {
    best = stricterEscalation(best, current, { category: 'Destructive', effect: 'rewrites a branch\'s commits', leaned: true, evidence: { from: 'name', text: 'rebase' }, note: 'Rebasing rewrites a branch\'s commits onto another base: the old commits leave the branch, so what came before is lost from it (Destructive, the stricter reading as confidence is low).' });
  }
  if ((first === 'clear' || first === 'merge' || words[1] === 'clear' || words[1] === 'merge') && words.some((w) => CELL_NOUNS.has(w)) && SHEET_TEXT.test(`${words.join(' ')} ${opening}`)) {
    const verb = words.includes('merge') ? 'merge' : 'clear';
    best = stricterEscalation(best, current, { category: 'Destructive', effect: verb === 'merge' ? 'merges cells, keeping only one value' : 'clears the values it names', leaned: false, evidence: { from: 'name', text: tool.name }, note: verb === 'merge' ? 'Merging cells keeps only the first cell\'s value and discards the others, which unmerging does not bring back: Destructive.' : 'It clears the values of cells or a range: the data is gone, even where the cells stay, so it is Destructive.' });
  }
  const restores = words.includes('restore') && (words.some((w) => VERSION_NOUNS.has(w)) || EARLIER_VERSION.test(opening)) && !words.includes('trash');
  if (restores) best = stricterEscalation(best, current, { category: 'Destructive', effect: 'overwrites what is there now with an earlier version', leaned: true, evidence: { from: 'name', text: tool.name }, note: 'It restores an earlier version over the current one: what is there now is overwritten, so the most dangerous plausible effect is Destructive (the stricter reading, as confidence is low).' });
  const trash = current >= SEVERITY.Write && opening.includes('trash') ? TO_TRASH.exec(opening) : null;
  if (trash && !words.includes('restore') && !words.includes('list')) best = stricterEscalation(best, current, { category: 'Destructive', effect: 'moves it to the trash, which is deleting', leaned: true, evidence: { from: 'description', text: trash[0] }, note: `It ${trash[0]}: that is deleting as the user sees it, and the trash empties itself, so it is Destructive (the stricter reading, as confidence is low).` });
  // Applying staged changes by running their DDL: a migration's statements can DROP, and nothing brings a dropped table back.
  const ddl = opening.includes('ddl') ? RUNS_DDL.exec(opening) : null;
  if (ddl) best = stricterEscalation(best, current, { category: 'Destructive', effect: 'runs DDL on the database, which can drop what is there', leaned: true, evidence: { from: 'description', text: ddl[0] }, note: `The description says it ${ddl[0]}: schema statements can drop tables and columns, so the most dangerous plausible effect is Destructive (the stricter reading, as confidence is low).` });
  const says = opening.includes('destructive') ? SAYS_DESTRUCTIVE.exec(opening) : null;
  if (says) best = stricterEscalation(best, current, { category: 'Destructive', effect: 'is destructive, as its description says', leaned: false, evidence: { from: 'description', text: says[0] }, note: `The description says “${says[0]}”: text the server writes can make a tool stricter, so it is Destructive.` });

  const props = topProperties(tool);
  if (current >= SEVERITY.Write) {
    // Creating a new thing with a sharing policy opens nothing that existed; granting privileges "adds" them.
    const creates = words.some((w) => CREATING.has(w));
    const sharing = creates ? undefined : props.find(([name, schema]) => SHARING_PARAM.test(name) || ((name === 'type' || name === 'audience' || name === 'scope') && enumOf(schema).some((v) => ANYONE_VALUE.test(v)) && props.some(([n]) => n === 'role')));
    const approval = creates ? undefined : props.find(([name, schema]) => APPROVAL_SWITCH.test(name) && schema.type === 'boolean');
    const grants = GRANT_VERBS.has(first) && words.some((w) => PRIVILEGE_NOUNS.has(w)) && props.some(([name, schema]) => PRIVILEGE_NOUNS.has(name) && schema.type === 'array');
    const opens = sharing ?? approval ?? (grants ? props.find(([name]) => PRIVILEGE_NOUNS.has(name)) : undefined);
    if (opens) best = stricterEscalation(best, current, { category: 'Destructive', effect: 'can widen who sees or changes it, which removes a protection', leaned: true, evidence: { from: 'schema', text: opens[0] }, note: `Its \`${opens[0]}\` argument ${opens === approval ? 'can turn a required approval off' : 'can widen who sees or changes something that exists'}: opening private content or removing a gate removes a protection, and what was seen cannot be unseen (SPEC 5: Destructive; the stricter reading, as confidence is low).` });
  }
  if (current >= SEVERITY.Write && (MOVING_VERBS.has(first) || MOVING_VERBS.has(words[1] ?? '') || MOVING_VERBS.has(words.at(-1) ?? ''))) {
    const strategy = props.find(([name, schema]) => STRATEGY_PARAM.test(name) && enumOf(schema).some((v) => REPLACING_VALUE.test(v)));
    const merge = props.find(([name, schema]) => name === 'merge' && schema.type === 'boolean' && /\b(?:replace[sd]?|overwrites?|overwritten)\b/i.test(String(schema.description ?? '')));
    const replaces = strategy ? `${strategy[0]}: ${enumOf(strategy[1]).find((v) => REPLACING_VALUE.test(v))}` : merge ? 'merge: false' : undefined;
    if (replaces) best = stricterEscalation(best, current, { category: 'Destructive', effect: 'can replace what is there', leaned: true, evidence: { from: 'schema', text: replaces }, note: `It can replace what is there rather than add to it (“${replaces}”): what the incoming copy does not hold is lost, so the most dangerous plausible effect is Destructive (the stricter reading, as confidence is low).` });
  }
  const full = current === SEVERITY.Write && opening.includes('replac') ? FULL_UPDATE.exec(opening) : null;
  if (full) best = stricterEscalation(best, current, { category: 'Destructive', effect: 'replaces a whole resource, dropping what the call leaves out', leaned: true, evidence: { from: 'description', text: full[0] }, note: `It replaces whole resources (“${full[0]}”): what the call leaves out is deleted, so the most dangerous plausible effect is Destructive (the stricter reading, as confidence is low).` });
  const empty = current >= SEVERITY.Write && description.includes('empty') ? EMPTY_DELETES.exec(description) : null;
  if (empty && words.includes('replace')) best = stricterEscalation(best, current, { category: 'Destructive', effect: 'deletes every match when the replacement is empty', leaned: false, evidence: { from: 'description', text: empty[0] }, note: `The description says an empty replacement deletes (“${empty[0]}”): a call can delete every match at once, so it is Destructive.` });
  // A pull-request tool whose action argument reviews or approves: an approval on the agent's word removes the review gate.
  const review = props.some(([name]) => ACTION_PARAM.test(name)) && /\bpull requests?\b|\bmerge requests?\b|\bprs?\b/.test(`${words.join(' ')} ${opening.slice(0, 200)}`) ? props.flatMap(([name, schema]) => (ACTION_PARAM.test(name) ? enumOf(schema).filter((v) => REVIEW_VALUE.test(v)) : [])).at(0) : undefined;
  if (review) best = stricterEscalation(best, current, { category: 'Destructive', effect: 'can approve a pull request, which removes the review gate', leaned: true, evidence: { from: 'schema', text: review }, note: `Its action argument offers “${review}” on a pull request: an approval on the agent's word removes the protection a review exists for (SPEC 5: Destructive), and the schema does not say which review is posted, so the stricter reading is recommended.` });
  // A queue of the server's own tool calls, each naming a tool from a list and passing it free arguments: it can do what those tools do.
  const queued = current < SEVERITY.Execute || !props.some(([, schema]) => schema.type === 'array') ? [] : props.flatMap(([, schema]) => (schema.type === 'array' ? topProperties({ name: '', inputSchema: (schema.items ?? {}) as Record<string, unknown> } as ToolDefinition) : []));
  const toolList = queued.find(([name, schema]) => TOOL_FIELD.test(name) && enumOf(schema).length > 1);
  const destroyer = toolList && queued.some(([name, schema]) => ARGS_FIELD.test(name) && schema.type === 'object') ? enumOf(toolList[1]).find((t) => nameWords(t).some((w) => w === 'manage' || DESTROYING.has(w))) : undefined;
  if (destroyer) best = stricterEscalation(best, current, { category: 'Destructive', effect: 'runs other tools of the server, which include deleting ones', leaned: true, evidence: { from: 'schema', text: destroyer }, note: `It runs a queue of the server's own tool calls with free arguments, and one it can call (\`${destroyer}\`) manages or deletes things: a queue can do whatever they do, so it takes the most dangerous of them (the stricter reading, as confidence is low).` });
  if (profile.destroys && current === SEVERITY.Execute && opening.includes('operations')) {
    const batch = BATCH_OF_OPERATIONS.exec(opening);
    if (batch) best = stricterEscalation(best, current, { category: 'Destructive', effect: 'runs a batch of the server\'s operations, which include deleting ones', leaned: true, evidence: { from: 'description', text: batch[0] }, note: `It ${batch[0]} of the server, and some of its sibling tools delete: a batch can do whatever they do, so it takes the most dangerous of them (the stricter reading, as confidence is low).` });
  }
  // The text says a call spends money (model calls, sandboxes) when asked to, or caps what a run costs: each such call pays.
  const raw = tool.description ?? '';
  // Cheap guards first (this runs for every tool): the words each reading needs, before any regex over a long text.
  const spends = current < SEVERITY.Financial && (raw.includes('spend') || raw.includes('capped') || raw.includes('max_cost')) ? SPENDS.exec(raw.length > 4000 ? raw.slice(0, 4000) : raw) : null;
  if (spends) best = stricterEscalation(best, current, { category: 'Financial', effect: 'spends money when it runs', leaned: true, evidence: { from: 'description', text: spends[0] }, note: `The description says a call spends money (“${spends[0]}”): whatever else it does, such a call pays, so it is Financial (the stricter reading, as a dry run may be the default).` });
  return best;
}
