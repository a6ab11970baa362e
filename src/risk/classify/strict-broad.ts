import { SEVERITY, type ToolDefinition } from '../types.js';
import { nameWords } from '../words.js';
import { type Action } from './context.js';
import { type Escalation, stricterEscalation } from './strict.js';
import { topProperties } from './from-schema.js';
import { type ServerProfile } from './from-server.js';

/**
 * Round five (issue 24): broad structural classes, drawn as *kinds* of tool rather than from the
 * tools that showed them, so they hold on servers no one has seen. Each only makes a tool stricter
 * (SPEC 5 "Safe by default"); readings that are plausible rather than stated are marked `leaned`.
 *
 * - a URL parameter the tool loads in a real or headless browser (an audit, a score, a crawl):
 *   navigation is Execute (SPEC 5: the browser carries sessions, the URL can carry data out);
 * - a URL parameter beside a method or headers: a request to whatever the caller names (Execute);
 * - a filter, query or selector parameter of a tool that reads logs, metrics or traces: a query in
 *   the service's query language, Execute even when it only reads;
 * - a prompt handed to another model or agent (Execute); a template with logic (Execute);
 * - starting a local server or opening a page in the browser (Execute);
 * - silencing, muting or scheduling downtime for alerts, passing or bypassing a gate, offering a
 *   rollback: each removes a protection or loses what came after (Destructive);
 * - a flag that deletes as it goes, a list of operations that includes deleting (Destructive);
 * - billed per call, spending credits, buying a phone number, amending an order, a switch that
 *   cancels orders, running any tool of a server whose siblings pay (Financial).
 */
const URL_NAME = /^(?:url|uri|href|link|target_?url|page_?url|site_?url|website|[a-z]+_?url|url_?[a-z0-9]+|[a-z]+Url)$/;
/** The text says the URL is loaded in a browser: a real one, a headless one, or an audit tool that drives one. */
const LOADS_IN_BROWSER = /\b(?:lighthouse|headless (?:chrome|chromium|browser)|core web vitals|pagespeed|webpagetest|in (?:a |the )?(?:real |headless )?browser|launch(?:es)? (?:a |the )?(?:real |headless )?browser|navigates? (?:to )?(?:the |a |an |your )?(?:url|app|page|site|web ?app)|(?:ai-driven |automated )?browser (?:adversarial |automated )?testing)\b/;
/** The argument that names the page to load (not an API region or an issue's link). */
const PAGE_URL = /^(?:url|urls|uri|website|site|site_?url|page_?url|target_?url|website_?url|websiteUrl|pageUrl|targetUrl)$/;
const REQUEST_SHAPE = /^(?:method|http_?method)$/i;
/** What a log, metrics or tracing service keeps: a query over it is written in the service's language. */
const TELEMETRY = /\b(?:logs?|log entries|metrics?|metric data|traces?|spans?|time ?series|apm|telemetry)\b/;
const TELEMETRY_QUERY_PARAM = /^(?:q|query|filter|metric_?selector|metricSelector|expression|expr|[a-z]+_?query|[a-z]+Query)$/;
/** The text shows the query is written in a syntax ("Datadog syntax", `service:web status:error`, `metric.type = …`), not a plain word search. */
const QUERY_SYNTAX = /\bsyntax\b|\bquery language\b|[\s"'(`][@a-z_.]+:[\w*@.-]+|\bmetric\.type\b/;
/** Another model: its name, or what it is. */
const MODEL_TEXT = /\b(?:llms?|language models?|ai providers?|ai models?|local model|chat model|gemini|gpt-?\w*|openai|anthropic|claude|mistral|ollama|codex|copilot)\b/;
const PROMPT_PARAM = /^(?:prompt|prompts|instruction|instructions|system|system_?prompt|messages|task)$/i;
const TEMPLATE_PARAM = /^(?:template|tpl|[a-z]+_?template)$/i;
const TEMPLATE_LOGIC = /\{\{[#/]|\{%|\b(?:helpers?|conditionals?|loops?|handlebars|jinja2?|liquid|mustache|nunjucks|ejs)\b/;
/** Starting a local server, installing dependencies, opening a page in the user's browser. */
const STARTS_SERVER = /\b(?:starts?|launch(?:es)?|spins? up|boots?) (?:a |the |an )?(?:local |dev |development |preview )?(?:web |http |dev )?server\b|\bserves? (?:it |them )?on (?:a |port|localhost)|\binstalls? (?:its |the |any |missing )?dependencies\b|(?:^|\bit |\bthen )opens? (?:the |a |an |your )[^.\n]{0,60}\bin (?:the |your |a )?(?:default |system )?browser\b/;
/** Shells, REPLs and terminals: what is sent to one runs. */
const SHELL_NOUNS = new Set(['repl', 'shell', 'terminal', 'tty', 'pty']);
const INPUT_VERBS = new Set(['send', 'write', 'key', 'keys', 'type', 'press', 'input', 'exec', 'execute', 'run', 'eval']);
const SENDS_INPUT = /\b(?:write|send|type)s? [^.\n]{0,30}?\bto (?:a |the |an |its )?(?:[\w-]+ )?(?:repl|shell|terminal)\b/;
/** Things that run when a run of them is made. */
const RUNNABLE_NOUNS = new Set(['pipeline', 'pipelines', 'workflow', 'workflows', 'job', 'jobs', 'build', 'builds']);
const STARTING_VERBS = new Set(['create', 'new', 'trigger', 'start', 'queue', 'enqueue']);
/** Protocols whose call is a request to a service the caller names. */
const RPC_NOUNS = new Set(['jsonrpc', 'rpc', 'grpc', 'websocket', 'socket', 'ws', 'soap', 'graphql']);
const BROWSER_TEXT = /\b(?:browser|playwright|puppeteer|selenium|webdriver|chrom(?:e|ium))\b/;
/** Alerting switched off: a silence, a mute, a snooze, a downtime. */
/** Verbs that only destroy: one in a tool's name decides, wherever it stands (\"version_discard_document\"). */
const NAMED_DESTROYING = new Set(['destroy', 'purge', 'wipe', 'erase', 'truncate', 'discard', 'obliterate', 'shred', 'nuke']);
/** A free-text HTTP method beside a URL: DELETE is one value away. */
const ANY_REQUEST = /\bhttp requests?\b|\bany (?:endpoint|url|api)\b|\barbitrary (?:urls?|apis?|endpoints?)\b/;
const FREE_METHOD = /^(?:method|http_?method|verb)$/i;
export const SILENCING_WORDS = new Set(['silence', 'silences', 'mute', 'mutes', 'snooze', 'snoozes', 'downtime', 'downtimes']);
/** Alerting, not a chat's notifications: muting a channel is a preference, silencing an alert removes a protection. */
export const ALERTING = /\b(?:alerts?|alerting|alarms?|monitors?|monitoring|incidents?|on-?call|pager)\b/;
const GATE_VERBS = new Set(['pass', 'bypass', 'skip', 'override', 'force']);
const GATE_NOUNS = new Set(['validate', 'validation', 'gate', 'gates', 'checkpoint', 'checkpoints', 'check', 'checks', 'protection', 'policy']);
const PASSES_GATE = /\b(?:approv\w*|pass(?:es|ing)?|bypass\w*|skip\w*)\b[^.\n]{0,30}\b(?:manual (?:checkpoint|gate|approval|validation)|(?:human|validation|quality|approval|manual) gate|checkpoint)\b/;
/** A flag that deletes as the call goes ("removeSourceBranch", "deleteImages", "clear_pending"). */
export const DESTROY_FLAG = /^(?:should_?)?(?:remove|delete|drop|purge|wipe|clear)_?(?:source_?branch|branch(?:es)?|images?|photos?|media|assets?|attachments?|documents?|objects?|versions?|files?|pending|existing|data|logs?|messages?|history|all|old|previous|records?|rows?|items?|entries|queue|buffer)?$/i;
/** Verbs that set a preference a later call acts on (an update's `remove_source_branch` deletes nothing now). */
const SETTING_VERBS = new Set(['update', 'edit', 'create', 'set', 'modify', 'patch', 'new', 'add', 'configure']);
const CAPTURED_TEXT = /\b(?:logs?|buffer|queue|history|messages|data|pending|entries|records|cache)\b/;
/** "Folder ops: list/get/upload/delete_file": the operations a router tool offers. */
const OPS_LIST = /\b(?:ops|operations|actions|commands)\s*(?:\([^)]*\))?\s*:\s*([^.\n]{0,200})/;
const DELETING_OP = /(?:^|[\s,/|])(?:delete|remove|drop|destroy|purge|wipe)(?:_\w+)?(?=$|[\s,/|])/;
const ACTION_LIKE = /^(?:action|actions|operation|op|mode|command|cmd|\w+_(?:action|operation))$/;
const ROLLBACK = /^roll_?back$/i;
const ROLLBACK_TEXT = /\broll ?back\b|回滚/i;
/** The call itself is paid: billed per call, spends credits. */
const BILLED = /\bbilled (?:per|for each|by the) (?:call|event|request|use|run|prediction|classification|image|minute|second|token|query)s?\b|\b(?:spends?|consumes?|deducts?) (?:paid |your |account |api )*credits\b|\b(?:uses?|costs?) \d+ (?:paid |api )?credits?\b|\bspends? (?:real )?money\b|\bpaid (?:api )?(?:credits|calls)\b/;
const NEGATION_BEFORE = /\b(?:not|never|no|without|cannot|doesn't|does not|do not|don't|free of)\s+(?:\w+\s+){0,2}$/;
const PHONE_VERBS = new Set(['create', 'new', 'add', 'provision', 'obtain', 'get', 'claim', 'register']);
const PHONE_LOCALE = /^(?:area_?code|areaCode|country|country_?code|countryCode|region|locality|number_?type|numberType|prefix)$/;
const ORDER_CHANGE = new Set(['amend', 'modify', 'replace', 'edit', 'update', 'change']);
const CANCELS_ORDERS = /\bcancels? (?:all |every |any )?(?:of )?(?:your |the |its )?(?:resting |open |pending |live )?(?:orders|positions)\b/;
const RUNS_ANY_TOOL = /\b(?:execute|run|call|invoke)s? (?:a|any|another|one) tool\b[^.\n]{0,40}\bby (?:its )?name\b|\bany tool (?:of|from|in) (?:the |this )?(?:catalog|catalogue|server)\b/;

function unnegated(re: RegExp, text: string): string | undefined {
  const m = re.exec(text);
  if (!m || NEGATION_BEFORE.test(text.slice(Math.max(0, m.index - 40), m.index))) return undefined;
  return m[0];
}

function stringsOf(schema: Record<string, unknown>): string[] {
  const e = Array.isArray(schema.enum) ? schema.enum : Array.isArray((schema.items as { enum?: unknown } | undefined)?.enum) ? (schema.items as { enum: unknown[] }).enum : [];
  return e.filter((v): v is string => typeof v === 'string');
}

/** The strictest broad class above `action`'s category, if any; `description` is lower-cased. */
export function broadReading(tool: ToolDefinition, words: string[], action: Action | undefined, description: string, profile: ServerProfile, browser: boolean): Escalation | undefined {
  const current = SEVERITY[action?.category ?? 'Read'];
  const props = topProperties(tool);
  const opening = description.slice(0, 600);
  let best: Escalation | undefined;
  const urlParam = props.find(([name, schema]) => (URL_NAME.test(name) && schema.type !== 'boolean') || schema.format === 'uri');

  if (current < SEVERITY.Execute) {
    const pageParam = props.find(([name, schema]) => PAGE_URL.test(name) && schema.type !== 'boolean');
    const loads = pageParam ? unnegated(LOADS_IN_BROWSER, `${description} ${profile.text}`) : undefined;
    if (pageParam && loads) best = stricterEscalation(best, current, { category: 'Execute', effect: 'loads the URL it is given in a browser', leaned: false, evidence: { from: description.includes(loads) ? 'description' : 'server', text: loads }, note: `It loads the URL in its \`${pageParam[0]}\` argument in a browser (“${loads}”): driving a browser to a URL is Execute (SPEC 5), since the browser runs the page and the URL can carry data out, whatever the report it returns.` });
    const shape = urlParam && current === SEVERITY.Read ? props.find(([name]) => REQUEST_SHAPE.test(name)) : undefined;
    if (urlParam && shape) best = stricterEscalation(best, current, { category: 'Execute', effect: 'sends a request to whatever URL the caller names', leaned: false, evidence: { from: 'schema', text: `${urlParam[0]}, ${shape[0]}` }, note: `It takes a URL (\`${urlParam[0]}\`) and the request's \`${shape[0]}\`: a call to whatever API the caller names is Execute (SPEC 5), even where it reads.` });
    const queryParam = props.find(([name, schema]) => TELEMETRY_QUERY_PARAM.test(name) && (schema.type === 'string' || schema.type === 'object' || schema.type === undefined));
    const telemetry = queryParam && !/\bnatural[- ]language\b/.test(description) && QUERY_SYNTAX.test(`${description} ${JSON.stringify(queryParam[1]).toLowerCase()}`) ? TELEMETRY.exec(`${words.join(' ')} ${opening}`) : null;
    if (queryParam && telemetry) best = stricterEscalation(best, current, { category: 'Execute', effect: 'runs a query over logs, metrics or traces in the service\'s query language', leaned: true, evidence: { from: 'schema', text: queryParam[0] }, note: `Its \`${queryParam[0]}\` argument is a query or filter over ${telemetry[0]}, written in the service's own query language: a query language is Execute even when it only reads (SPEC 5). A plain search and a query compete here with low confidence, so the stricter reading is recommended.` });
    const prompt = props.find(([name]) => PROMPT_PARAM.test(name));
    const model = prompt && !urlParam ? unnegated(MODEL_TEXT, `${words.join(' ')} ${opening}`) : undefined;
    if (prompt && model) best = stricterEscalation(best, current, { category: 'Execute', effect: 'hands a prompt to another model or agent', leaned: false, evidence: { from: 'schema', text: prompt[0] }, note: `It hands its \`${prompt[0]}\` to another model (“${model}”): a call to another model or agent is Execute (SPEC 5), whatever it answers.` });
    const template = props.find(([name, schema]) => TEMPLATE_PARAM.test(name) && schema.type === 'string');
    const logic = template ? TEMPLATE_LOGIC.exec(`${description} ${String(template[1].description ?? '').toLowerCase()}`) : null;
    if (template && logic) best = stricterEscalation(best, current, { category: 'Execute', effect: 'evaluates a template language', leaned: false, evidence: { from: 'schema', text: template[0] }, note: `Its \`${template[0]}\` argument is a template with logic (“${logic[0]}”): evaluating conditionals, loops and helpers is running an expression language, which is Execute.` });
    const shell = (words.some((w) => SHELL_NOUNS.has(w)) && words.some((w) => INPUT_VERBS.has(w))) || ((opening.includes('shell') || opening.includes('repl') || opening.includes('terminal')) && SENDS_INPUT.test(opening));
    if (shell) best = stricterEscalation(best, current, { category: 'Execute', effect: 'sends input to a running shell or REPL', leaned: false, evidence: { from: 'name', text: tool.name }, note: 'It sends text or keys to a running shell, REPL or terminal, which runs them: that is running commands (Execute), whatever the text is.' });
    const runs = words.some((w) => RUNNABLE_NOUNS.has(w)) && words.some((w, i) => w === 'run' && i > 0 || w === 'runs') && words.some((w) => STARTING_VERBS.has(w));
    const resumes = words.some((w) => w === 'resume' || w === 'retry' || w === 'rerun') && words.some((w) => RUNNABLE_NOUNS.has(w) || w === 'deploy');
    if (runs || resumes) best = stricterEscalation(best, current, { category: 'Execute', effect: 'starts a run of a pipeline, a build or a deployment', leaned: false, evidence: { from: 'name', text: tool.name }, note: 'Making, retrying or resuming a run of a pipeline, a build, a job or a deployment runs whatever its steps run, so it is Execute.' });
    const rpc = urlParam && words.some((w) => RPC_NOUNS.has(w)) && words.some((w) => ['call', 'connect', 'send', 'batch', 'invoke', 'request'].includes(w));
    if (rpc) best = stricterEscalation(best, current, { category: 'Execute', effect: 'calls whatever service the caller names', leaned: false, evidence: { from: 'schema', text: urlParam![0] }, note: `It calls or connects to the service at the URL in its \`${urlParam![0]}\` argument: a call to an arbitrary API is Execute (SPEC 5).` });
    const session = words.includes('session') && words.some((w) => ['start', 'new', 'create', 'open', 'launch'].includes(w)) && (browser || BROWSER_TEXT.test(`${words.join(' ')} ${opening}`));
    if (session) best = stricterEscalation(best, current, { category: 'Execute', effect: 'starts a browser session', leaned: false, evidence: { from: 'name', text: tool.name }, note: 'It starts a session in a real browser, which then loads pages and runs them (SPEC 5: browser actions and starting processes are Execute).' });
    // Cheap guards first: these run for every tool.
    const starts = opening.includes('server') || opening.includes('depend') || opening.includes('browser') ? unnegated(STARTS_SERVER, opening) : undefined;
    if (starts) best = stricterEscalation(best, current, { category: 'Execute', effect: 'starts a process or opens a page in the browser', leaned: false, evidence: { from: 'description', text: starts }, note: `The description says it ${starts}: starting a process or driving the user's browser is Execute (SPEC 5), whatever it shows.` });
  }
  if (current < SEVERITY.Destructive) {
    const silencing = words.find((w) => SILENCING_WORDS.has(w));
    if (silencing && (current >= SEVERITY.Write || words.length === 1 || !action) && ALERTING.test(`${description} ${profile.text}`)) {
      best = stricterEscalation(best, current, { category: 'Destructive', effect: 'silences alerting, which removes a protection', leaned: false, evidence: { from: 'name', text: silencing }, note: `It makes or changes a ${silencing.replace(/s$/, '')}, which stops alerts from reaching anyone: switching off alerting removes a protection (SPEC 5: Destructive).` });
    }
    const destroyWord = words.find((w) => NAMED_DESTROYING.has(w));
    if (destroyWord && !(browser && destroyWord === 'drop')) best = stricterEscalation(best, current, { category: 'Destructive', effect: 'is named for destroying', leaned: false, evidence: { from: 'name', text: destroyWord }, note: `Its name says “${destroyWord}”: a tool named for destroying is Destructive whatever else its name or description reads as, since text cannot lower what the name implies.` });
    const muteValue = props.flatMap(([name, schema]) => (ACTION_LIKE.test(name) ? stringsOf(schema).filter((v) => nameWords(v).some((w) => SILENCING_WORDS.has(w) || w === 'silence')) : [])).at(0);
    if (muteValue && ALERTING.test(`${description} ${profile.text}`)) best = stricterEscalation(best, current, { category: 'Destructive', effect: 'can silence alerting, which removes a protection', leaned: false, evidence: { from: 'schema', text: muteValue }, note: `Its action argument offers “${muteValue}”, which silences alerts: switching off alerting removes a protection (SPEC 5: Destructive).` });
    const gate = (words.some((w) => GATE_VERBS.has(w)) && words.some((w) => GATE_NOUNS.has(w)) ? words.join(' ') : undefined) ?? (opening.includes('gate') || opening.includes('checkpoint') ? unnegated(PASSES_GATE, opening) : undefined);
    if (gate) best = stricterEscalation(best, current, { category: 'Destructive', effect: 'passes a gate meant for a person, which removes a protection', leaned: true, evidence: { from: description.includes(gate) ? 'description' : 'name', text: gate }, note: `It passes or bypasses a check meant for a person (“${gate}”): an agent passing a gate removes the protection it exists for (SPEC 5: Destructive). Between a bounded step and removing a protection confidence is low, so the stricter reading is recommended.` });
    const rollback = current >= SEVERITY.Write && props.length ? props.flatMap(([name, schema]) => [...stringsOf(schema).filter((v) => ROLLBACK.test(v)), ...(schema.type === 'object' ? topProperties({ name, inputSchema: schema } as ToolDefinition).flatMap(([n, s]) => [...stringsOf(s).filter((v) => ROLLBACK.test(v)), ...(/type|action|kind|op/i.test(n) && ROLLBACK_TEXT.test(String(s.description ?? '')) ? [`${n}: rollback`] : [])]) : []), ...(/type|action/i.test(name) && ROLLBACK_TEXT.test(String(schema.description ?? '')) ? [`${name}: rollback`] : [])]).at(0) : undefined;
    if (rollback) best = stricterEscalation(best, current, { category: 'Destructive', effect: 'can roll back to an earlier state, and what came after is lost', leaned: true, evidence: { from: 'schema', text: rollback }, note: `It offers a rollback (“${rollback}”): rolling back to an earlier state loses what came after, so the most dangerous plausible effect is Destructive (the stricter reading, as confidence is low).` });
    for (const [name, schema] of props) {
      if (schema.type !== 'boolean' || !DESTROY_FLAG.test(name) || browser || SETTING_VERBS.has(words[0])) continue;
      const plain = /^(?:should_?)?(?:remove|delete|drop|purge|wipe|clear)$/i.test(name);
      if (plain && !CAPTURED_TEXT.test(String(schema.description ?? '').toLowerCase())) continue;
      best = stricterEscalation(best, current, { category: 'Destructive', effect: 'can delete data as it goes', leaned: true, evidence: { from: 'schema', text: name }, note: `Its \`${name}\` flag deletes as the call goes, so a call can destroy data (the stricter reading, as confidence is low).` });
    }
    const method = urlParam && (action?.effect === 'calls an arbitrary API' || ANY_REQUEST.test(opening)) ? props.find(([name, schema]) => FREE_METHOD.test(name) && schema.type === 'string' && !Array.isArray(schema.enum)) : undefined;
    if (method) best = stricterEscalation(best, current, { category: 'Destructive', effect: 'can send any HTTP method, DELETE included', leaned: true, evidence: { from: 'schema', text: method[0] }, note: `Its \`${method[0]}\` argument is free text, so a call can send DELETE to whatever URL it names; the most dangerous plausible effect is a deletion, and with low confidence between the readings the stricter is recommended.` });
    // A change to how long data is kept can shorten it, after which the data is deleted for good.
    const retention = current === SEVERITY.Write && !words.some((w) => w === 'create' || w === 'new' || w === 'add') && opening.includes('retention') ? unnegated(/\bretention(?: period| policy| days)?\b/, opening) : undefined;
    if (retention) best = stricterEscalation(best, current, { category: 'Destructive', effect: 'can shorten a retention, after which data is deleted for good', leaned: true, evidence: { from: 'description', text: retention }, note: `It changes a ${retention}: a shorter one deletes what falls outside it, for good, so the most dangerous plausible effect is Destructive (the stricter reading, as confidence is low).` });
    const ops = props.some(([name, schema]) => ACTION_LIKE.test(name) && stringsOf(schema).length) || !opening.includes(':') ? null : OPS_LIST.exec(opening);
    const deleting = ops ? DELETING_OP.exec(ops[1]) : null;
    if (deleting) best = stricterEscalation(best, current, { category: 'Destructive', effect: 'offers deleting among its operations', leaned: true, evidence: { from: 'description', text: ops![0].slice(0, 80) }, note: `The description lists the operations it offers, and one deletes (“${deleting[0].trim()}”); with no action argument the rule cannot tell the calls apart, so the most dangerous plausible effect decides.` });
  }
  if (current < SEVERITY.Financial) {
    const billed = description.includes('bill') || description.includes('credit') || description.includes('money') || description.includes('paid') ? unnegated(BILLED, description) : undefined;
    if (billed) best = stricterEscalation(best, current, { category: 'Financial', effect: 'costs money on every call', leaned: false, evidence: { from: 'description', text: billed }, note: `The description says each call is paid for (“${billed}”): whatever it reads or makes, a call spends money, so it is Financial.` });
    if (words.includes('phone') && words.includes('number') && PHONE_VERBS.has(words[0]) && !words.some((w) => ['contact', 'contacts', 'user', 'customer', 'lookup', 'verify'].includes(w)) && props.some(([name]) => PHONE_LOCALE.test(name))) {
      best = stricterEscalation(best, current, { category: 'Financial', effect: 'gets a new phone number, which is billed', leaned: true, evidence: { from: 'name', text: tool.name }, note: 'It gets a new phone number in an area or country it is given: a phone line is rented and billed, so it is Financial (the stricter reading, as confidence is low).' });
    }
    if (profile.money && words.some((w) => ORDER_CHANGE.has(w)) && words.some((w) => w === 'order' || w === 'orders')) {
      best = stricterEscalation(best, current, { category: 'Financial', effect: 'changes a live order, and with it what is paid', leaned: false, evidence: { from: 'name', text: tool.name }, note: 'It changes an order on a server whose business is money: a new price or size changes what is paid, so it is Financial.' });
    }
    const cancels = profile.money && current >= SEVERITY.Write ? unnegated(CANCELS_ORDERS, opening) : undefined;
    if (cancels) best = stricterEscalation(best, current, { category: 'Financial', effect: 'can cancel orders', leaned: true, evidence: { from: 'description', text: cancels }, note: `The description says it ${cancels}: on a server whose business is money, cancelling orders changes what is traded (the stricter reading, as confidence is low).` });
    const runsAny = opening.includes(' tool') ? unnegated(RUNS_ANY_TOOL, opening) : undefined;
    if (runsAny) best = stricterEscalation(best, current, { category: profile.money ? 'Financial' : 'Destructive', effect: 'runs any tool of the server, which include ones that pay or delete', leaned: true, evidence: { from: 'description', text: runsAny }, note: `It runs any tool of the server by name (“${runsAny}”), and ${profile.money ? 'some of its sibling tools spend money' : 'its siblings can include ones that delete'}: it can do whatever they do, so it takes the most dangerous of them (the stricter reading, as confidence is low).` });
  }
  return best;
}
