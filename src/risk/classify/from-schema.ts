import { HTTP_METHODS, LANGUAGE_PARAM, lookupVerb, QUERY_LANGUAGE } from '../lexicon.js';
import { nounPhrase } from '../prose.js';
import { SEVERITY, type Category, type ToolDefinition } from '../types.js';
import { nameWords } from '../words.js';
import { type Action, type Context, HANDS_BACK, GENERIC_VERBS } from './context.js';
import { refine } from './refine.js';

const ACTION_PARAM = /^(?:action|actions|operation|operations|op|mode|command|subcommand|cmd|method_name|\w+_(?:action|operation|mode)|[a-z]+(?:Action|Operation|Mode)|(?:action|operation|op)_?(?:type|name|kind)|(?:action|operation)(?:Type|Name|Kind))$/;
const FORCE_PARAM = /^(force|hard|permanent|permanently|purge|force_delete|hard_delete|forced)$/i;
/** Verbs a force option turns into a destruction (a force push rewrites history; a forced checkout discards changes). */
const FORCEABLE = new Set(['push', 'reset', 'checkout', 'restore', 'revert', 'clean', 'switch', 'rebase', 'overwrite', 'sync', 'pull']);
export const QUERY_PARAM = /(?:^q$|query|sql|statement|stmt|cypher|expression|expr)/i;
const OUTPUT_FILE_PARAM = /^(output_?path|output_?file|save_?path|save_?to|out_?file|output_?dir(ectory)?|output_?filename)$/i;

/** Whether a tool's input schema has any top-level property (cheap: no entries are built). */
export function hasProperties(tool: ToolDefinition): boolean {
  const props = (tool.inputSchema as { properties?: unknown } | undefined)?.properties;
  if (!props || typeof props !== 'object') return false;
  for (const _ in props) return true;
  return false;
}

/** Top-level input properties of a tool. */
export function topProperties(tool: ToolDefinition): [string, Record<string, unknown>][] {
  const props = (tool.inputSchema as { properties?: unknown } | undefined)?.properties;
  if (!props || typeof props !== 'object') return [];
  // Several stages ask for the same tool's properties: they are listed once per schema object.
  let out = listed.get(props);
  if (!out) {
    out = Object.entries(props as Record<string, unknown>).filter((e): e is [string, Record<string, unknown>] => !!e[1] && typeof e[1] === 'object');
    listed.set(props, out);
  }
  return out;
}
const listed = new WeakMap<object, [string, Record<string, unknown>][]>();

function enumOf(schema: Record<string, unknown>): string[] {
  const values = Array.isArray(schema.enum) ? schema.enum : Array.isArray((schema.items as { enum?: unknown } | undefined)?.enum) ? (schema.items as { enum: unknown[] }).enum : [];
  return values.filter((v): v is string => typeof v === 'string').slice(0, 40);
}

/** A run of two or more words joined by commas, bars, slashes or "or" ("list, create, update or delete"; "get | set | del"). */
const WORD_LIST = /\b[a-z][\w-]*(?:\s*(?:,|\||\/)\s*(?:or\s+|and\s+)?[a-z][\w-]*|\s+or\s+[a-z][\w-]*)+/gi;

/**
 * The values an action argument offers: its enum, the consts of its oneOf/anyOf, or — where it has
 * neither — the list its own description gives ("One of: list, create, update, delete"). A value
 * the text names is only ever a candidate: the recommended rule holds any value not known to be safe.
 */
function choicesOf(name: string, schema: Record<string, unknown>): string[] {
  const listed = enumOf(schema);
  if (listed.length) return listed;
  const alternatives = Array.isArray(schema.oneOf) ? schema.oneOf : Array.isArray(schema.anyOf) ? schema.anyOf : undefined;
  if (alternatives) return alternatives.flatMap((a) => (a && typeof a === 'object' && typeof (a as { const?: unknown }).const === 'string' ? [(a as { const: string }).const] : [])).slice(0, 40);
  if (!ACTION_PARAM.test(name) || typeof schema.description !== 'string') return [];
  let best: string[] = [];
  for (const m of schema.description.slice(0, 400).matchAll(WORD_LIST)) {
    const words = m[0].split(/\s*(?:,|\||\/)\s*(?:or\s+|and\s+)?|\s+or\s+/).filter(Boolean);
    if (words.length > best.length) best = words;
  }
  return best.slice(0, 40);
}

/** Action values that move money, and the amount argument they move (a multi-action wallet's `send`). */
export const MOVES_MONEY_VALUE = /^(?:send|transfer|withdraw|pay|payout|deposit|buy|sell|swap|trade|stake|tip|donate|spend)(?:[_-]|$)/i;
export const AMOUNT_ARGUMENT = /^(?:amount|amount_?\w+|\w+_?amount|value|quantity|qty|sum|total)$/i;

/** The arguments that choose what a call does, with the values each offers. */
export function actionChoices(tool: ToolDefinition): [string, string[]][] {
  return topProperties(tool).filter(([name]) => ACTION_PARAM.test(name)).map(([name, schema]): [string, string[]] => [name, choicesOf(name, schema)]).filter(([, v]) => v.length > 0);
}

/** An enum argument that chooses what the call does (`action: create|update|delete`), not a filter. */
function isActionEnum(name: string, schema: Record<string, unknown>, values: string[], verbs: string[]): boolean {
  return ACTION_PARAM.test(name) && verbs.length >= 2 && verbs.length * 2 >= values.length && !/\bfilter/.test(String(schema.description ?? '').toLowerCase());
}

/** What each value of an action enum does, where its first word is a verb the lexicon knows. */
const EMPTYING = new Set(['clear', 'empty', 'flush', 'wipe', 'purge']);

function valueActions(values: string[], objects: string[], ctx: Context): [string, Action | undefined][] {
  return values.map((value) => {
    const [first, ...rest] = nameWords(value);
    const v = first ? lookupVerb(first) : undefined;
    if (!v || v.base === 'run' || HTTP_METHODS.has(v.base) && v.base !== 'delete' && v.base !== 'get') return [value, undefined];
    // "modifyPlan" acts on the plan, "deleteCollection" on a collection; a bare "delete" on what the tool names.
    const own = rest.filter((w) => !ctx.serverWords.has(w));
    // A bare "clear", "empty" or "flush" among a tool's actions empties what the tool holds (a stash, a queue, a log).
    if (!own.length && EMPTYING.has(v.base)) return [value, { verb: v.base, category: 'Destructive', objects, phrase: '', effect: 'empties what the tool holds' }];
    return [value, refine(v.base, v.category, own.length ? own : ctx.nameNouns().length ? ctx.nameNouns() : objects, ctx)];
  });
}

const METHOD_PARAM = /^(?:method|http_?method|httpMethod|request_?method|verb)$/;
const ENDPOINT_PARAM = /^(?:url|uri|path|endpoint|route|api_?path|resource_?path|href)$/i;
/** What an HTTP method does to an arbitrary endpoint: GET reads, DELETE destroys, the others call the API (Execute). */
const METHOD_CATEGORY: Record<string, Category> = { get: 'Read', head: 'Read', options: 'Read', post: 'Execute', put: 'Execute', patch: 'Execute', delete: 'Destructive' };

/**
 * A tool that sends a request to an endpoint the caller names, with an HTTP method enum that
 * offers DELETE: a multi-action tool whose action argument is the method.
 */
export function methodValues(tool: ToolDefinition): { param: string; values: Record<string, Category> } | undefined {
  const props = topProperties(tool);
  if (!props.some(([name]) => ENDPOINT_PARAM.test(name))) return undefined;
  for (const [name, schema] of props) {
    if (!METHOD_PARAM.test(name)) continue;
    const values = enumOf(schema);
    if (!values.length || !values.every((v) => Object.hasOwn(METHOD_CATEGORY, v.toLowerCase())) || !values.some((v) => v.toLowerCase() === 'delete')) continue;
    return { param: name, values: Object.fromEntries(values.map((v) => [v, METHOD_CATEGORY[v.toLowerCase()]])) };
  }
  return undefined;
}

/**
 * A multi-action tool: its action argument and what each value does. Values the lexicon cannot
 * read are left out, so a policy built on the known safe values holds them.
 */
export function actionValues(tool: ToolDefinition, objects: string[], ctx: Context): { param: string; values: Record<string, Category> } | undefined {
  for (const [name, schema] of topProperties(tool)) {
    const values = choicesOf(name, schema);
    const verbs = values.filter((v) => { const w = nameWords(v)[0] ?? ''; return lookupVerb(w)?.base === w; });
    if (!isActionEnum(name, schema, values, verbs) || !/^[A-Za-z_][\w]*$/.test(name)) continue;
    const out: Record<string, Category> = {};
    // Where money is the business and the tool takes an amount, a value that sends or pays moves it.
    const amount = ctx.money && topProperties(tool).some(([n]) => AMOUNT_ARGUMENT.test(n));
    for (const [value, action] of valueActions(values, objects, ctx)) if (action) out[value] = amount && MOVES_MONEY_VALUE.test(value) ? 'Financial' : action.category;
    return { param: name, values: out };
  }
  return methodValues(tool);
}

/** `action` with its reason if it is stricter than the best so far (or `base`): a module function, not a closure per tool (tsx's `__name` costs ~1.6 µs a closure). */
function considered(best: { action: Action; why: string } | undefined, base: Action | undefined, action: Action, why: string): { action: Action; why: string } | undefined {
  return SEVERITY[action.category] > SEVERITY[best?.action.category ?? base?.category ?? 'Read'] ? { action, why } : best;
}

/**
 * What the schema lets one call do beyond the name's verb: an `operation` enum that can also
 * delete, or a `force` flag on a push. The most dangerous plausible effect decides (SPEC 5).
 */
export function schemaAction(tool: ToolDefinition, base: Action | undefined, objects: string[], ctx: Context): { action: Action; why: string } | undefined {
  let best: { action: Action; why: string } | undefined;
  let lower: { action: Action; why: string } | undefined;
  for (const [name, schema] of topProperties(tool)) {
    const values = choicesOf(name, schema);
    const verbs = values.filter((v) => { const w = nameWords(v)[0] ?? ''; return lookupVerb(w)?.base === w; });
    if (ACTION_PARAM.test(name) && base && FORCEABLE.has(base.verb) && values.includes('hard')) {
      best = considered(best, base, { ...base, category: 'Destructive', effect: 'discards work that cannot be recovered' }, `its \`${name}\` argument accepts "hard", which discards work`);
    }
    if (isActionEnum(name, schema, values, verbs)) {
      let most: Action | undefined;
      for (const [value, action] of valueActions(values, objects, ctx)) {
        if (!action) continue;
        if (!most || SEVERITY[action.category] > SEVERITY[most.category]) most = action;
        best = considered(best, base, action, `its \`${name}\` argument can also ${value.replace(/[_-]+/g, ' ')}`);
      }
      // A generic name ("manage_data_model") does no more than its actions: if they only read, so does it.
      if (most?.category === 'Read' && base?.category === 'Write' && GENERIC_VERBS.has(base.verb)) {
        lower = { action: most, why: `its \`${name}\` argument only offers ${values.join(', ')}` };
      }
    }
    if (schema.type === 'boolean' && /^(?:delete|purge|wipe|erase)_?[a-z]/i.test(name)) {
      best = considered(best, base, { ...(base ?? { verb: 'delete', objects, phrase: nounPhrase(objects) }), category: 'Destructive', effect: 'can delete data as it goes' }, `its \`${name}\` option deletes data`);
    }
    if (LANGUAGE_PARAM.test(name) && base && base.effect !== HANDS_BACK) best = considered(best, base, { ...base, category: 'Execute', effect: 'runs a query language, which is Execute even when it only reads' }, `its \`${name}\` argument takes a query language`);
    if (FORCE_PARAM.test(name) && schema.type === 'boolean' && base && (FORCEABLE.has(base.verb) || SEVERITY[base.category] >= SEVERITY.Write && /overwrit|discard|los[et]|destroy|history/.test(String(schema.description ?? '').toLowerCase()))) {
      best = considered(best, base, { ...base, category: 'Destructive', effect: 'can discard work that cannot be recovered' }, `its \`${name}\` option forces the change through, discarding what it replaces`);
    }
  }
  const method = methodValues(tool);
  if (method) {
    const del = Object.keys(method.values).find((v) => method.values[v] === 'Destructive')!;
    best = considered(best, base, { ...(base ?? { verb: 'call', objects, phrase: 'an API' }), category: 'Destructive', effect: 'can delete whatever the endpoint names' }, `its \`${method.param}\` argument can also be ${del}, which deletes whatever the endpoint names`);
  }
  return best ?? lower;
}

/** Whether the schema lets the result be written to a file. */
export function writesFile(tool: ToolDefinition): boolean {
  return topProperties(tool).some(([name, schema]) => OUTPUT_FILE_PARAM.test(name) || enumOf(schema).includes('file'));
}

/** Arguments that carry something the server runs: code, a script, an expression, a shell command or a statement in a query language. */
const CODE_PARAM = /^(?:code|source_?code|script|snippet|program|expression|expr|eval|js|javascript|typescript|python|py|lua|ruby|shell|bash|sh|cmd|command|commands|command_?line|shell_?command|statement|statements|stmt|sql|sql_?query|query_?sql|cypher|gremlin|sparql|promql|logql|metricsql|kql|esql|hogql|traceql|graphql|gql|jql|wiql|soql|sosl|query_?dsl|(?:python|js|javascript|ts|typescript|shell|bash|lua|ruby|sql|custom|user|test)_?(?:code|script|snippet|expression|expr|statement|command)|(?:sql|graphql|cypher|promql|logql|kql|gremlin|sparql|esql|log|lucene)_?query)$/i;
/** Bare query arguments: code only where a query language is named. */
const QUERY_ARG = /^(?:q|query|queries|search_?query)$/i;
/** Filter arguments: a statement in a query language where their own description says it is written in one ("Cloud Logging query syntax"). */
const FILTER_ARG = /^(?:filter|filters|filter_?expression|condition)$/i;
const QUERY_SYNTAX = /\bquery (?:syntax|language)\b|\bfilter (?:syntax|language)\b/;
/** What a `code` or `expression` argument is when it is not code. */
const NOT_CODE = /\b(?:country|currency|language|locale|postal|zip|status|promo|coupon|discount|otp|verification|authori[sz]ation|auth|access|invite|invitation|referral|error|http|iso|area|region|product|item|sku|airport|station|reference|tracking|voucher|gift|redeem|bank|swift|tax|naics|icd|cpt|qr|barcode|2fa|mfa|totp|one-time|pairing|device|cron|regex|regular expression|glob|jsonpath|xpath|css|selector|math\w*|arithmetic|calculat\w*|unit|color|colour|emoji|shortcode|keyboard|key code|keycode)\b/;
/** Evidence that a bare `code` argument is a program. */
const CODE_PROSE = /\b(?:execut\w*|evaluat\w*|runs?|running|interpret\w*|python|javascript|typescript|script|snippet|program|source code|repl|sandbox|notebook|cell|kernel)\b/;

/**
 * The argument that carries something the server will run, if any, and what it carries. Its
 * name and type say so, not the description: a description can only add to it (a `query` counts
 * where the tool or the argument names a query language; a bare `code` or `expression` where the
 * tool, the argument or the server's kind — a debugger, a REPL, a kernel — says it runs).
 */
export function codeArgument(tool: ToolDefinition, description: string, dataVerb?: string, serverText = ''): { name: string; what: string } | undefined {
  for (const [name, schema] of topProperties(tool)) {
    const type = schema.type;
    if (enumOf(schema).length || (type !== undefined && type !== 'string' && !(Array.isArray(type) && type.includes('string')) && !(type === 'array' && (schema.items as { type?: unknown } | undefined)?.type === 'string'))) continue;
    const own = String(schema.description ?? '').slice(0, 300).toLowerCase();
    if (FILTER_ARG.test(name) && (QUERY_SYNTAX.test(own) || QUERY_LANGUAGE.test(own))) return { name, what: 'a statement in a query language' };
    if (QUERY_ARG.test(name) && !(dataVerb && !['search', 'find'].includes(dataVerb))) {
      if (QUERY_LANGUAGE.test(own) || QUERY_LANGUAGE.test(description.slice(0, 400))) return { name, what: 'a statement in a query language' };
      continue;
    }
    if (!CODE_PARAM.test(name) || dataVerb) continue;
    const bare = /^(?:code|expression|expr|eval|program|snippet)$/i.test(name);
    if (bare && (NOT_CODE.test(own) || NOT_CODE.test(description.slice(0, 300)) || !(CODE_PROSE.test(own) || CODE_PROSE.test(description.slice(0, 400)) || /\b(?:debug\w*|repl|interpreter|kernel|jupyter|notebook)\b/.test(serverText)))) continue;
    const lower = name.toLowerCase();
    const what = /sql|query|ql$|cypher|gremlin|sparql|statement|stmt|dsl/.test(lower) ? 'a statement in a query language'
      : /cmd|command|shell|bash|^sh$/.test(lower) ? 'a command'
        : /expr|eval/.test(lower) ? 'an expression' : /script/.test(lower) ? 'a script' : 'code';
    return { name, what };
  }
  return undefined;
}
