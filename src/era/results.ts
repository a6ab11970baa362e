/**
 * What a 2026-07-28 client needs on every result: `resultType` (a v2 client throws "missing
 * required resultType" without it, so an agent would never read a denial's reason), and on
 * cacheable results `ttlMs` and `cacheScope`. Every cacheable result through toolgate is
 * `private`: lists are filtered per grant, and what comes back is shaped by the grant's result
 * policy (a grant's own policy file can redact differently), so a shared cache must not hand one
 * grant's answer to another — even one the server marked `public`.
 */
import { isObject, type Json } from '../proxy/messages.js';

/** The results MCP 2026-07-28 makes cacheable (CacheableResult). */
const CACHEABLE = new Set(['tools/list', 'prompts/list', 'resources/list', 'resources/templates/list', 'resources/read', 'server/discover']);
/** Methods whose results may be `input_required` (multi round-trip requests): their resultType passes as it came. */
const EXTENDED = new Set(['tools/call', 'prompts/get', 'resources/read']);
function validTtl(v: unknown): v is number {
  return typeof v === 'number' && Number.isSafeInteger(v) && v >= 0;
}

/**
 * The result as a modern client must see it. `resultType` is stamped `complete` when absent (and
 * when a non-`complete` value comes on a method that cannot have one); cache fields are filled
 * (ttlMs 0 unless the server gave a valid one; always `private`).
 */
export function modernResult(method: string | undefined, result: Json): Json {
  const out: Json = { ...result };
  if (out.resultType === undefined || (out.resultType !== 'complete' && !(method !== undefined && EXTENDED.has(method)))) out.resultType = 'complete';
  if (method !== undefined && CACHEABLE.has(method) && out.resultType === 'complete') {
    if (!validTtl(out.ttlMs)) out.ttlMs = 0;
    out.cacheScope = 'private';
  }
  return out;
}

/** A JSON-RPC answer for a modern client: results stamped, errors as they are. */
export function modernAnswer(method: string | undefined, message: Json): Json {
  return isObject(message.result) ? { ...message, result: modernResult(method, message.result) } : message;
}
