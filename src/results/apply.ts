import type { CallContext } from '../engine/conditions.js';
import type { ResultPolicy, ResultView } from './policy.js';
import { redactValue, tallyText, type Tally } from './redact.js';
import { cutText, textBytes } from './size.js';

/**
 * What the result policy does to one tools/call answer (SPEC section 11), in order: `deny_if`
 * on the result as it came (the agent then gets only why), `flag_if`, redaction of secrets in
 * every string of the result, then `max_bytes`. Whatever was withheld is said in a text block
 * the agent reads and in `_meta["dev.toolgate/result"]`; the facts (kinds and counts, never a
 * value) go to the call's audit row and metrics.
 */

export const RESULT_META_KEY = 'dev.toolgate/result';
const DECISION_META_KEY = 'dev.toolgate/decision';

type Json = Record<string, unknown>;
const isObject = (v: unknown): v is Json => v !== null && typeof v === 'object' && !Array.isArray(v);

export interface ResultFacts {
  redacted: Tally;
  /** Bytes of text cut past max_bytes, and the text's size before. */
  cut?: { bytes: number; total: number };
  /** structuredContent was dropped, over max_bytes. */
  structuredDropped?: boolean;
  /** The rule that withheld the whole result (a deny_if item, or max_bytes with on_oversize: deny). */
  withheld?: string;
  flagged: string[];
}

export function emptyFacts(): ResultFacts {
  return { redacted: new Map(), flagged: [] };
}

/** The facts as the audit row's outcome reads them: kinds and counts, sizes and rule pointers. */
export function factsText(f: ResultFacts): string {
  const parts: string[] = [];
  if (f.withheld) parts.push(`withheld by ${f.withheld} (the tool ran)`);
  if (f.redacted.size > 0) parts.push(`redacted ${[...f.redacted].map(([k, n]) => `${k}:${n}`).join(' ')}`);
  if (f.cut) parts.push(`cut ${f.cut.bytes} of ${f.cut.total} bytes`);
  if (f.structuredDropped) parts.push('structuredContent dropped');
  if (f.flagged.length > 0) parts.push(`flagged ${f.flagged.join(' ')}`);
  return parts.join('; ');
}

function contentItems(result: Json): Json[] {
  return Array.isArray(result.content) ? result.content.filter(isObject) : [];
}

/** The texts of a result's content in order: text blocks and embedded resources' text. */
function texts(result: Json): string[] {
  const out: string[] = [];
  for (const item of contentItems(result)) {
    if (typeof item.text === 'string') out.push(item.text);
    else if (isObject(item.resource) && typeof item.resource.text === 'string') out.push(item.resource.text);
  }
  return out;
}

function viewOf(result: Json): ResultView {
  let text: string | undefined;
  let bytes: number | undefined;
  return {
    text: () => (text ??= texts(result).join('\n')),
    structured: () => result.structuredContent,
    isError: result.isError === true,
    bytes: () => (bytes ??= texts(result).reduce((n, t) => n + textBytes(t), 0)),
  };
}

function withheldResult(id: unknown, rule: string, text: string, facts: ResultFacts): Json {
  return {
    jsonrpc: '2.0', id,
    result: {
      isError: true,
      content: [{ type: 'text', text: `[RESULT WITHHELD] ${text}` }],
      _meta: { [DECISION_META_KEY]: { rule, retryAfterSeconds: null }, [RESULT_META_KEY]: metaOf(facts) },
    },
  };
}

function metaOf(f: ResultFacts): Json {
  return {
    ...(f.withheld ? { withheld: f.withheld } : {}),
    ...(f.redacted.size > 0 ? { redacted: Object.fromEntries(f.redacted) } : {}),
    ...(f.cut ? { cut_bytes: f.cut.bytes, total_bytes: f.cut.total } : {}),
    ...(f.structuredDropped ? { structured_content_dropped: true } : {}),
    ...(f.flagged.length > 0 ? { flagged: f.flagged } : {}),
  };
}

/** The answer to send on, and what was done; null when nothing was. */
export function shapeToolAnswer(message: Json, policy: ResultPolicy, ctx: CallContext): { message: Json; facts: ResultFacts } | null {
  const facts = emptyFacts();
  if (!isObject(message.result)) {
    // A JSON-RPC error: its message and data are redacted like any text.
    if (!policy.redact || !isObject(message.error)) return null;
    const error = redactValue(message.error, facts.redacted);
    return error === message.error ? null : { message: { ...message, error }, facts };
  }
  let result: Json = message.result;
  const view = viewOf(result);
  for (const rule of policy.denyIf) {
    if (!rule.test(view, ctx)) continue;
    facts.withheld = rule.pointer;
    const why = rule.message ?? `The result of "${ctx.tool}" was withheld by the policy (${rule.pointer}).`;
    return { message: withheldResult(message.id, rule.pointer, `${why} The tool ran; its result is not shown.`, facts), facts };
  }
  for (const rule of policy.flagIf) if (rule.test(view, ctx)) facts.flagged.push(rule.pointer);
  const notes: string[] = [];
  if (policy.redact) {
    // _meta too: the client receives it with the rest (a server's debug or trace fields can carry a secret).
    const redacted = redactValue(result, facts.redacted) as Json;
    if (redacted !== result) {
      const inStructured = redacted.structuredContent !== result.structuredContent ? ', in structuredContent too' : '';
      result = redacted;
      notes.push(`Secrets were redacted from this result (${tallyText(facts.redacted)}${inStructured}) by the policy (${policy.redactPointer}): each is replaced by a [REDACTED <kind>] marker.`);
    }
  }
  if (policy.maxBytes !== undefined) {
    const oversize = sizeCheck(result, policy.maxBytes);
    if (oversize && policy.onOversize === 'deny') {
      facts.withheld = policy.maxBytesPointer;
      const what = oversize.text > policy.maxBytes ? `${oversize.text} bytes of text` : `${oversize.structured} bytes of structuredContent`;
      return { message: withheldResult(message.id, policy.maxBytesPointer, `The result of "${ctx.tool}" was ${what}, over max_bytes ${policy.maxBytes} (${policy.maxBytesPointer}). The tool ran; its result is not shown.`, facts), facts };
    }
    if (oversize) {
      result = cut(result, policy.maxBytes, facts);
      if (facts.cut) notes.push(`The text of this result was cut to max_bytes ${policy.maxBytes} (${policy.maxBytesPointer}): ${facts.cut.bytes} of ${facts.cut.total} bytes were cut.`);
      if (facts.structuredDropped) notes.push(`Its structuredContent (${oversize.structured} bytes, over max_bytes ${policy.maxBytes}) was dropped, not cut, so nothing invalid is passed on; the result is marked as an error.`);
    }
  }
  for (const pointer of facts.flagged) {
    const rule = policy.flagIf.find((r) => r.pointer === pointer);
    notes.push(`This result was flagged by the policy (${pointer})${rule?.message ? `: ${rule.message}` : ''}.`);
  }
  if (notes.length === 0) return null;
  const content = [...(Array.isArray(result.content) ? result.content : []), { type: 'text', text: `[toolgate] ${notes.join(' ')}` }];
  const meta = isObject(result._meta) ? result._meta : {};
  result = { ...result, content, _meta: { ...meta, [RESULT_META_KEY]: metaOf(facts) } };
  return { message: { ...message, result }, facts };
}

/** Sizes past the cap: the text's, and structuredContent's as JSON; null when within it. */
function sizeCheck(result: Json, max: number): { text: number; structured: number } | null {
  const text = texts(result).reduce((n, t) => n + textBytes(t), 0);
  const structured = result.structuredContent === undefined ? 0 : textBytes(JSON.stringify(result.structuredContent));
  return text > max || structured > max ? { text, structured } : null;
}

/** Text cut to `max` bytes over all items in order (a marker where it was cut); structuredContent over it dropped. */
function cut(result: Json, max: number, facts: ResultFacts): Json {
  let budget = max;
  let cutBytes = 0;
  let total = 0;
  const cutOne = (text: string): string => {
    const size = textBytes(text);
    total += size;
    if (size <= budget) { budget -= size; return text; }
    const kept = cutText(text, budget);
    const gone = size - textBytes(kept);
    cutBytes += gone;
    budget = 0;
    return `${kept}\n[TRUNCATED by toolgate: ${gone} of ${size} bytes cut, max_bytes ${max}]`;
  };
  const content = Array.isArray(result.content) ? result.content.map((item: unknown) => {
    if (!isObject(item)) return item;
    if (typeof item.text === 'string') return { ...item, text: cutOne(item.text) };
    if (isObject(item.resource) && typeof item.resource.text === 'string') return { ...item, resource: { ...item.resource, text: cutOne(item.resource.text) } };
    return item;
  }) : result.content;
  const out: Json = { ...result, content };
  if (cutBytes > 0) facts.cut = { bytes: cutBytes, total };
  if (result.structuredContent !== undefined && textBytes(JSON.stringify(result.structuredContent)) > max) {
    delete out.structuredContent;
    out.isError = true;
    facts.structuredDropped = true;
  }
  return out;
}
