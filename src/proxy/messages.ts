/**
 * JSON-RPC message shapes as toolgate sees them on the wire. Everything arrives as parsed JSON of
 * unknown shape; these helpers classify it without trusting it.
 */

export type Id = string | number;
export type Json = Record<string, unknown>;

export const PARSE_ERROR = -32700;
export const INVALID_REQUEST = -32600;
export const INVALID_PARAMS = -32602;
export const INTERNAL_ERROR = -32603;

export function isObject(v: unknown): v is Json {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

export function isValidId(id: unknown): id is Id {
  return (typeof id === 'string' && id.length <= 1024) || (typeof id === 'number' && Number.isFinite(id));
}

/** Map key for an id: 1 and "1" are different ids. */
export function idKey(id: Id): string {
  return typeof id === 'number' ? `n${id}` : `s${id}`;
}

export function errorResponse(id: Id | null, code: number, message: string): Json {
  return { jsonrpc: '2.0', id, error: { code, message } };
}

export const DECISION_META_KEY = 'dev.toolgate/decision';

/** A denial is a normal tool result, so the agent can read the reason and act on it. */
export function denialResult(id: Id, message: string, rule: string, retryAfterSeconds: number | null, extra?: Json): Json {
  return {
    jsonrpc: '2.0',
    id,
    result: {
      isError: true,
      content: [{ type: 'text', text: `[POLICY DENIED] ${message}` }],
      _meta: { [DECISION_META_KEY]: { rule, retryAfterSeconds, ...extra } },
    },
  };
}

/** Depth of a JSON value, walked iteratively so a hostile payload cannot overflow the stack. */
export function depthExceeds(value: unknown, max: number): boolean {
  const stack: [unknown, number][] = [[value, 1]];
  while (stack.length > 0) {
    const [v, d] = stack.pop()!;
    if (v === null || typeof v !== 'object') continue;
    if (d > max) return true;
    for (const child of Array.isArray(v) ? v : Object.values(v)) if (child !== null && typeof child === 'object') stack.push([child, d + 1]);
  }
  return false;
}

const PLAIN_METHOD = /^[\x21-\x7e]+$/;
/** Methods whose answer or effect toolgate polices; a look-alike spelling must never reach a lenient server. */
const POLICED = new Set(['tools/call', 'tools/list']);

/** Why a method name is refused, or null. MCP method names are plain ASCII. */
export function badMethod(method: string): string | null {
  if (!PLAIN_METHOD.test(method)) return 'method names must be printable ASCII without spaces';
  if (!POLICED.has(method) && POLICED.has(method.toLowerCase())) return `method must be spelt exactly "${method.toLowerCase()}"`;
  return null;
}
