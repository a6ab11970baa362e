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
/**
 * Toolgate's own server error (JSON-RPC reserves -32000..-32099 for these): the gateway is
 * stopping, so the request was refused before anything was forwarded; sending it again is safe.
 */
export const GATEWAY_RESTARTING = -32050;
export const RESTARTING_DATA = { retryable: true, reason: 'restarting', retryAfterSeconds: 1 } as const;

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

export function errorResponse(id: Id | null, code: number, message: string, data?: Json): Json {
  return { jsonrpc: '2.0', id, error: { code, message, ...(data ? { data } : {}) } };
}

export const DECISION_META_KEY = 'dev.toolgate/decision';

/** A denial is a normal tool result, so the agent can read the reason and act on it. */
export function denialResult(id: Id, message: string, rule: string, retryAfterSeconds: number | null, extra?: Json, prefix = '[POLICY DENIED]'): Json {
  return {
    jsonrpc: '2.0',
    id,
    result: {
      isError: true,
      content: [{ type: 'text', text: `${prefix} ${message}` }],
      _meta: { [DECISION_META_KEY]: { rule, retryAfterSeconds, ...extra } },
    },
  };
}
