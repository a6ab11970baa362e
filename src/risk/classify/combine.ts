import { AGENT_NAMES, EXEC_PROSE, movesMoney, PAYMENT_PARAM, QUERY_LANGUAGE } from '../lexicon.js';
import { capitalise } from '../prose.js';
import { signalsOf } from '../signals.js';
import { CONFIDENT_READ, DEFAULT_RISK, LOW_CONFIDENCE, RISKS, SEVERITY, type Category, type Classification, type Evidence, type Risk, type ServerContext, type Signal, type ToolDefinition } from '../types.js';
import { nameWords } from '../words.js';
import { type Action, type Context, joinCompounds, firstSentence, quote, LIGHT_EFFECTS, GENERIC_VERBS } from './context.js';
import { IRREVERSIBLE, REPLACES_WHOLE, affirmed, READ_ONLY, descriptionAction } from './from-description.js';
import { nameAction } from './from-name.js';
import { liftsFromText, type Lift } from './action-text.js';
import { actionValues, codeArgument, hasProperties, topProperties, schemaAction } from './from-schema.js';
import { type ServerProfile, serverProfile } from './from-server.js';
import { dangerCue } from './cues.js';
import { strictReading, type Escalation } from './strict.js';
import { broadReading } from './strict-broad.js';
import { domainReading } from './strict-domain.js';
import { shapeReading } from './strict-shape.js';
import { rationaleOf, type Source } from './rationale.js';
import { ToolContext } from './tool-context.js';
import { flowRolesOf } from '../../flows/roles.js';

const AGENT_MESSAGE = /\b(?:send|sends|sending|post|posts|dispatch|dispatches|assign|assigns) (?:a |the |this |new )?(?:message|task|prompt|instruction|job)s? to (?:one or more |an? |the |another |other |each |all )?(?:[\w-]+ )?agents?\b/;
const AGENT_PROSE = /^(?:an? )?(?:autonomous|ai|coding|code)?[\w -]{0,24}(?<!\buser|\bhttp) (?:agent|assistant)\b/;
/** Verbs that take code as data, to keep, compare or hand back: their code argument is not run unless the description says so. */
const CODE_AS_DATA = new Set(['create', 'update', 'edit', 'save', 'write', 'set', 'add', 'insert', 'upload', 'store', 'put', 'patch', 'format', 'lint', 'parse', 'convert', 'transform', 'validate', 'analyze', 'analyse', 'explain', 'review', 'translate', 'generate', 'diff', 'compare', 'tokenize', 'highlight', 'summarize', 'summarise', 'share', 'publish', 'comment', 'suggest', 'complete', 'commit', 'push', 'new', 'make', 'draft', 'append', 'replace', 'rename', 'copy', 'move']);
const RUNS_IT = /\b(?:execut(?:e|es|ing)|evaluat(?:e|es|ing)|runs?|running)\b/;
/** Verbs that take something out of a group, which stays: a description's "remove" does not make them destroy. */
const DETACHING = new Set(['unassign', 'unlink', 'detach', 'unfollow', 'unsubscribe', 'unstar', 'unpin', 'unshare']);

function bump(risk: Risk, steps = 1): Risk {
  return RISKS[Math.min(RISKS.length - 1, RISKS.indexOf(risk) + steps)];
}

/** Verbs that say nothing on their own ("send", "run", "ship"): with no object, the description decides. */
const OPAQUE_VERBS = new Set(['send', 'run', 'process', 'submit', 'execute', 'call', 'handle', 'perform', 'do', 'go', 'start', 'trigger', 'make', 'apply', 'use', 'invoke', 'ship', 'push', 'request', 'manage', 'transfer', 'create', 'new', 'buy', 'order', 'get', 'set', 'update', 'action', 'tool', 'launch']);

export function classifyTool(tool: ToolDefinition, server: ServerContext = {}, profile: ServerProfile = serverProfile(server)): Classification {
  const description = (tool.description ?? '').trim();
  const title = (tool.title ?? tool.annotations?.title ?? '').trim();
  const words = joinCompounds(nameWords(tool.name));
  // Bounded: the reasoning lives in a description's opening, and regexes stay cheap on huge ones.
  const lowerDescription = description.slice(0, 1500).toLowerCase();
  const ctx = new ToolContext(tool, words, description, lowerDescription, title, profile);
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
  let leanedStrict = false;
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
      } else if (!agreement && SEVERITY[other.category] > SEVERITY[fromName.category] && SEVERITY[other.category] >= SEVERITY.Destructive && other.lead && !LIGHT_EFFECTS.has(fromName.effect) && !DETACHING.has(fromName.verb)) {
        // Two readings compete and neither is clear enough to overrule the other: the stricter one is recommended.
        action = other;
        source = otherFrom;
        leanedStrict = true;
        verdict = `the name's “${fromName.verb}” reads as ${fromName.category}; with two readings and neither clear enough to overrule the other, the stricter is recommended (a stricter label costs a click, a laxer one is a hole)`;
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
    ? (lowerDescription.includes('destructive') || lowerDescription.includes('replac') ? affirmed(REPLACES_WHOLE, lowerDescription.slice(0, 400)) : undefined) ?? (action.category !== 'Read' ? affirmed(IRREVERSIBLE, lowerDescription.slice(0, 400)) : undefined)
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
  // Untrusted text can make a tool stricter, never laxer (SPEC 5, "Safe by default"): an argument that carries code keeps it Execute.
  const code = hasProperties(tool) ? codeArgument(tool, lowerDescription, fromName && CODE_AS_DATA.has(fromName.verb) && !affirmed(RUNS_IT, lowerDescription.slice(0, 400)) ? fromName.verb : undefined, profile.text) : undefined;
  const claimsReadOnly = !!code && (READ_ONLY.test(lowerDescription.slice(0, 300)) || (action?.category !== 'Read' && tool.annotations?.readOnlyHint === true));
  if (action && (action.category === 'Write' || action.category === 'Execute') && READ_ONLY.test(lowerDescription.slice(0, 300))
    && !QUERY_LANGUAGE.test(lowerDescription) && !EXEC_PROSE.test(lowerDescription) && !ctx.sql && !notes.length && !code) {
    action = { ...action, category: 'Read', effect: 'only reads' };
    notes.push('The description says it is read-only, and nothing else it says contradicts that.');
  }
  if (!action && !description && profile.text.trim()) {
    const fromServer = descriptionAction(profile.text, ctx);
    if (fromServer) { action = fromServer; source = 'server'; }
  }
  if (code && SEVERITY[action?.category ?? 'Read'] < SEVERITY.Execute) {
    if (!action) source = 'schema';
    action = { ...(action ?? { verb: 'run', objects: [], phrase: '' }), category: 'Execute', effect: `runs the ${code.what.replace(/^an? /, '')} its \`${code.name}\` argument carries` };
    notes.push(claimsReadOnly
      ? `The ${READ_ONLY.test(lowerDescription.slice(0, 300)) ? 'description' : 'server'} calls it read-only, but it evaluates ${code.what} (its \`${code.name}\` argument); words the server writes can make a tool stricter, never laxer, so it is Execute.`
      : `Its \`${code.name}\` argument takes ${code.what}, which the server runs, so it is at least Execute.`);
    evidence.push({ from: 'schema', text: code.name });
  } else if (code && claimsReadOnly && action?.category === 'Execute') {
    notes.push(`The ${READ_ONLY.test(lowerDescription.slice(0, 300)) ? 'description' : 'server'} calls it read-only, but it evaluates ${code.what} (its \`${code.name}\` argument), so that claim does not lower it.`);
    evidence.push({ from: 'schema', text: code.name });
  }
  // The stricter readings, each only ever raising what the ones before it found, in rounds' order.
  const escalate = (r: Escalation | undefined): void => {
    if (!r) return;
    if (!action) source = 'schema';
    action = { ...(action ?? { verb: tool.name, objects: [], phrase: '' }), category: r.category, effect: r.effect };
    notes.push(r.note);
    evidence.push(r.evidence);
    if (r.leaned) leanedStrict = true;
  };
  // Classes that read laxer than they are (what a call costs, the arguments it takes, what it routes to or runs).
  escalate(strictReading(tool, action, lowerDescription, code, profile, ctx.money));
  // Broad structural classes (round five): what a URL, a query, a prompt or a flag argument does, whatever the tool is called.
  escalate(broadReading(tool, words, action, lowerDescription, profile, ctx.browser));
  // Destruction in a domain's words and overwrite semantics (round six): a reset, a rebase, a restore, a sharing change.
  escalate(domainReading(tool, words, action, lowerDescription, profile, ctx.browser));
  // What a call's shape says (round seven): billed calls, widened access, passed gates, replaced content.
  escalate(shapeReading(tool, words, action, lowerDescription, profile));
  // Destructive outranks Execute when the tool is named for destroying ("drop_and_recreate_index" runs SQL, and drops).
  if (fromName?.category === 'Destructive' && action?.category === 'Execute') {
    notes.push(`It is named for destroying (“${fromName.verb}”), and Destructive outranks Execute.`);
    action = { ...fromName };
  }
  // A server's own destructiveHint: true makes a tool at least Destructive (issue 24: "MCP annotations escalate";
  // SPEC 5: text the server writes can make a tool stricter, never laxer). Only an explicit true counts, not the
  // MCP default. Servers that mark every click destructive get every click held: a stricter label costs a click.
  if (tool.annotations?.destructiveHint === true && SEVERITY[action?.category ?? 'Read'] < SEVERITY.Destructive) {
    const was = action ? `it reads as ${action.category} (it ${action.effect}), but ` : '';
    if (!action) source = 'annotations';
    action = { ...(action ?? { verb: tool.name, objects: [], phrase: '' }), category: 'Destructive', effect: 'can destroy data, as its server says' };
    notes.push(`The server marks it destructive (destructiveHint: true); ${was}a hint can make a tool stricter, never laxer, so it is at least Destructive.`);
    evidence.push({ from: 'annotations', text: 'destructiveHint: true' });
  }
  if (action && !description && (source === 'server' || (fromName && action.category === 'Execute' && EXEC_PROSE.test(profile.text)))) {
    evidence.push({ from: 'server', text: quote(firstSentence(server.instructions || server.name || '').text) });
  }

  const signals = signalsOf(tool, words, `${lowerDescription} ${title.toLowerCase()}`);
  const category: Category = action?.category ?? (tool.annotations?.readOnlyHint ? 'Read' : 'Write');
  const actions = SEVERITY[category] >= SEVERITY.Destructive && !(fromName && SEVERITY[fromName.category] >= SEVERITY.Destructive) ? multiAction(tool, action?.objects.length ? action.objects : words, ctx, category) : undefined;
  if (actions) notes.push(multiActionNote(actions, category));
  let confidence = !action ? 0.3
    : source === 'server' ? 0.5
      : source === 'schema' || source === 'annotations' ? 0.6
        : fromName && other ? (agreement ? 0.9 : 0.75) : fromName ? 0.8 : 0.7;
  if (!description) signals.push('no_description');
  if (leanedStrict) signals.push('leaned_strict');
  if (!description) confidence -= 0.1;

  const hints = tool.annotations ?? {};
  let risk = DEFAULT_RISK[category];
  if (hints.readOnlyHint === true && category !== 'Read') {
    signals.push('annotation_conflict');
    confidence -= 0.15;
    evidence.push({ from: 'annotations', text: 'readOnlyHint: true' });
  }
  if (hints.destructiveHint === false && category === 'Destructive') {
    signals.push('annotation_conflict');
    confidence -= 0.1;
    evidence.push({ from: 'annotations', text: 'destructiveHint: false' });
  }
  if (hints.openWorldHint === true && !signals.includes('open_world')) signals.push('open_world');
  if (category === 'Read' && signals.includes('credentials')) risk = 'medium';
  if (signals.includes('bulk') && category !== 'Read') risk = bump(risk);

  // Recall before agreement (issue 24): a destruction or payment cue the category did not take still holds the tool,
  // unless it is confidently Read (a confident read of an invoice does not pay it).
  const roundedConfidence = Math.round(Math.max(0.2, Math.min(0.95, confidence)) * 100) / 100;
  // A removal the lexicon judged light (a label, a member, a favourite taken off something: added back in one call) is not
  // held for its name's "remove"; a "delete" still is, even of a light thing (a mail filter, a public link), as labellers split there.
  const light = !!action && LIGHT_EFFECTS.has(action.effect) && source === 'name' && action.verb !== 'delete';
  const cue = SEVERITY[category] < SEVERITY.Destructive && (category !== 'Read' || roundedConfidence < LOW_CONFIDENCE) ? dangerCue(tool, description) : undefined;
  const hold = cue && !(light && cue.kind === 'destroys' && (cue.from === 'name' || cue.from === 'description')) ? cue : undefined;
  if (hold) {
    signals.push('danger_cue');
    notes.push(`Its ${hold.from === 'schema' ? (hold.kind === 'opens' ? 'schema takes' : 'action argument offers') : `${hold.from} says`} “${hold.word}”, which can ${hold.kind === 'pays' ? 'move money' : hold.kind === 'opens' ? 'open something private to everyone, removing a protection' : 'destroy'}: though it reads as ${category}, the recommended rule holds every call for a person (a stricter rule costs a click, a laxer one is a hole).`);
    evidence.push({ from: hold.from, text: hold.word });
  }
  // Uncertainty leans strict: a Read that is not confidently one is limited like a Write (src/risk/recommend.ts).
  const unsureRead = category === 'Read' && roundedConfidence < CONFIDENT_READ && !hold;
  if (unsureRead) signals.push('leaned_strict');
  const unique = [...new Set(signals)] as Signal[];
  const rationale = rationaleOf({
    tool, action, source, fromName, other, otherFrom, agreement, verdict, notes, firstLine, category, signals: unique, evidence, description, hints,
  });
  return {
    ...(actions ? { actions: { param: actions.param, values: actions.values, safe: actions.safe } } : {}),
    ...(hold ? { hold } : {}),
    name: tool.name,
    category,
    risk,
    confidence: roundedConfidence,
    signals: unique,
    rationale,
    evidence,
    flows: flowRolesOf(tool, category),
  };
}

/**
 * A tool whose most dangerous action is one value of its action argument, beside values that are
 * safe: the recommended rule can hold only the calls that are not known to be safe.
 */
function multiAction(tool: ToolDefinition, objects: string[], ctx: Context, category: Category): (NonNullable<Classification['actions']> & { lifts: Map<string, Lift> }) | undefined {
  const found = actionValues(tool, objects, ctx);
  if (!found) return undefined;
  // The actions the lexicon reads must account for the tool's category by themselves; the text then only takes values out of the allowlist.
  if (Object.values(found.values).reduce((m, c) => Math.max(m, SEVERITY[c]), 0) !== SEVERITY[category]) return undefined;
  const lifts = liftsFromText(tool, found.param, found.values, category);
  // A lift holds the value; past the tool's own category it is held as that (the allowlist is what matters to the rule).
  for (const [v, l] of lifts) found.values[v] = SEVERITY[l.category] > SEVERITY[category] ? category : l.category;
  const entries = Object.entries(found.values);
  const safe = entries.filter(([, c]) => SEVERITY[c] < SEVERITY.Destructive).map(([v]) => v);
  const top = entries.reduce((m, [, c]) => Math.max(m, SEVERITY[c]), 0);
  if (!safe.length || top !== SEVERITY[category]) return undefined;
  return { ...found, safe, lifts };
}

function multiActionNote(a: NonNullable<ReturnType<typeof multiAction>>, category: Category): string {
  const byCategory = new Map<Category, string[]>();
  for (const [v, c] of Object.entries(a.values)) byCategory.set(c, [...(byCategory.get(c) ?? []), v]);
  const said = [...byCategory].sort((x, y) => SEVERITY[y[0]] - SEVERITY[x[0]]).map(([c, vs]) => `${vs.join(', ')} ${vs.length > 1 ? 'are' : 'is'} ${c}`).join('; ');
  const why = new Map<string, string[]>();
  for (const [v, l] of a.lifts) why.set(l.why, [...(why.get(l.why) ?? []), v]);
  const lifted = [...why].map(([w, vs]) => `${vs.join(', ')} ${vs.length > 1 ? 'are' : 'is'} held because ${w}`).join('; ');
  return `It is a multi-action tool whose \`${a.param}\` argument decides what a call does: ${said}.${lifted ? ` The server's text is only allowed to make a call stricter: ${lifted}.` : ''} It takes its most dangerous action's category (${category}), and the recommended rule holds every call unless \`${a.param}\` is exactly one of ${a.safe.join(', ')}; a missing, new or differently written value is held.`;
}

/** Classifies every tool of one server, each with the others as its siblings. */
export function classifyTools(tools: readonly ToolDefinition[], server: Omit<ServerContext, 'siblings'> = {}): Classification[] {
  const siblings = tools.map((t) => t.name);
  const context = { ...server, siblings };
  const profile = serverProfile(context);
  return tools.map((t) => classifyTool(t, context, profile));
}
