/**
 * The 2026-07-28 wire as toolgate writes it to a modern upstream: the per-request `_meta`
 * envelope, the `server/discover` answer read as the initialize answer the session expects, and
 * what becomes of an `input_required` result that a legacy client could not answer.
 *
 * Its constants are the 2026-07-28 wire's names for both sides: src/era (the client side) re-exports them.
 */
import { LATEST_VERSION } from './methods.js';
import { INTERNAL_ERROR, isObject, type Id, type Json } from './messages.js';

export const MODERN_VERSION = '2026-07-28';
/** A header (Mcp-Method, Mcp-Name, MCP-Protocol-Version) disagrees with the body, or is missing. */
export const HEADER_MISMATCH = -32020;
/** The request names a protocol version toolgate does not speak; `data.supported` lists those it does. */
export const UNSUPPORTED_PROTOCOL_VERSION = -32022;
export const META_PROTOCOL_VERSION = 'io.modelcontextprotocol/protocolVersion';
export const META_CLIENT_CAPABILITIES = 'io.modelcontextprotocol/clientCapabilities';
export const META_CLIENT_INFO = 'io.modelcontextprotocol/clientInfo';
export const META_SERVER_INFO = 'io.modelcontextprotocol/serverInfo';

/** How toolgate speaks to one upstream: probe for 2026-07-28 and fall back, or one era only. */
export type UpstreamProtocol = 'auto' | 'legacy' | typeof MODERN_VERSION;

/** The 2025 revisions toolgate can answer a legacy initialize with. */
const LEGACY_VERSIONS = new Set(['2024-11-05', '2025-03-26', '2025-06-18', '2025-11-25']);

/** Who the client is, as the session's initialize told it: the envelope's defaults. */
export interface ClientIdentity {
  capabilities: Json;
  clientInfo?: Json;
  /** The level a 2025 client set with logging/setLevel: 2026-07-28 carries it in each request's `_meta`. */
  logLevel?: string;
}

export const META_LOG_LEVEL = 'io.modelcontextprotocol/logLevel';

export function identityFrom(initializeParams: unknown): ClientIdentity {
  const p = isObject(initializeParams) ? initializeParams : {};
  return {
    capabilities: isObject(p.capabilities) ? p.capabilities : {},
    clientInfo: isObject(p.clientInfo) ? p.clientInfo : undefined,
  };
}

/** True when a request's own `_meta` claims the modern revision: its client speaks 2026-07-28. */
export function claimsModern(params: unknown): boolean {
  return isObject(params) && isObject(params._meta) && params._meta[META_PROTOCOL_VERSION] === MODERN_VERSION;
}

/**
 * The params with the modern envelope: the protocol version is always 2026-07-28 (the version
 * toolgate speaks to this server, whatever the client claimed); the client's capabilities and
 * info are the request's own when it carries them (a modern client), else the session's.
 */
export function withEnvelope(params: unknown, client: ClientIdentity): Json {
  const p = isObject(params) ? params : {};
  const meta = isObject(p._meta) ? p._meta : {};
  const capabilities = isObject(meta[META_CLIENT_CAPABILITIES]) ? meta[META_CLIENT_CAPABILITIES] : client.capabilities;
  const info = isObject(meta[META_CLIENT_INFO]) ? meta[META_CLIENT_INFO] : client.clientInfo;
  const level = client.logLevel !== undefined && meta[META_LOG_LEVEL] === undefined ? { [META_LOG_LEVEL]: client.logLevel } : {};
  return {
    ...p,
    _meta: { ...meta, ...level, [META_PROTOCOL_VERSION]: MODERN_VERSION, [META_CLIENT_CAPABILITIES]: capabilities, ...(info ? { [META_CLIENT_INFO]: info } : {}) },
  };
}

/** The `_meta` keys only 2026-07-28 defines: a 2025 server is not sent them. */
const MODERN_ONLY_META = [META_PROTOCOL_VERSION, META_CLIENT_CAPABILITIES, META_CLIENT_INFO, META_LOG_LEVEL];

/**
 * The message for a 2025 server: a modern client's envelope keys taken out of `_meta` (the
 * message itself when it has none, the usual case: no copy).
 */
export function withoutEnvelope(message: Json): Json {
  const params = message.params;
  if (!isObject(params) || !isObject(params._meta) || !MODERN_ONLY_META.some((k) => Object.hasOwn(params._meta as Json, k))) return message;
  const meta = { ...params._meta };
  for (const k of MODERN_ONLY_META) delete meta[k];
  const { _meta: _, ...rest } = params;
  return { ...message, params: Object.keys(meta).length > 0 ? { ...rest, _meta: meta } : rest };
}

/** The `server/discover` request that opens a modern upstream (and probes for one). */
export function discoverRequest(id: Id, client: ClientIdentity): Json {
  return { jsonrpc: '2.0', id, method: 'server/discover', params: withEnvelope({}, client) };
}

/** A discover answer that says the server speaks 2026-07-28 (a legacy server's error, or a list without it, does not). */
export function speaksModern(answer: Json): boolean {
  const r = answer.result;
  return isObject(r) && Array.isArray(r.supportedVersions) && r.supportedVersions.includes(MODERN_VERSION);
}

/**
 * The initialize answer the session expects, made from the server's discover answer: its
 * capabilities, serverInfo (from `_meta`) and instructions, at the version the client asked for
 * when it is a 2025 revision toolgate speaks (else the newest one).
 */
export function initializeAnswer(id: Id, asked: unknown, discover: Json): Json {
  const r = isObject(discover.result) ? discover.result : {};
  const meta = isObject(r._meta) ? r._meta : {};
  const info = isObject(meta[META_SERVER_INFO]) ? meta[META_SERVER_INFO] : isObject(r.serverInfo) ? r.serverInfo : { name: 'unknown', version: '0' };
  const requested = isObject(asked) ? asked.protocolVersion : undefined;
  const version = typeof requested === 'string' && LEGACY_VERSIONS.has(requested) ? requested : LATEST_VERSION;
  return {
    jsonrpc: '2.0',
    id,
    result: {
      protocolVersion: version,
      capabilities: isObject(r.capabilities) ? r.capabilities : {},
      serverInfo: info,
      ...(typeof r.instructions === 'string' ? { instructions: r.instructions } : {}),
    },
  };
}

/** Bounded text of an upstream error, for messages toolgate writes. */
export function errorText(answer: Json): string {
  const e = isObject(answer.error) ? answer.error : {};
  const message = typeof e.message === 'string' ? e.message.slice(0, 200) : 'no message';
  return `${typeof e.code === 'number' ? e.code : '?'} ${JSON.stringify(message)}`;
}

/**
 * What a legacy client gets for an `input_required` result: it cannot retry with
 * `inputResponses`, and passing the result on would look like a complete (empty) answer. So it
 * is a JSON-RPC error that says what the server asked for (the method names only: the requests'
 * text is the server's and untrusted) and how to get it answered.
 */
export function inputRequiredRefusal(id: Id, result: Json): Json {
  const requests = isObject(result.inputRequests) ? Object.values(result.inputRequests) : [];
  const kinds = [...new Set(requests.map((r) => (isObject(r) && typeof r.method === 'string' ? r.method : 'an input request')))]
    .map((m) => JSON.stringify(m.slice(0, 60))).join(', ');
  return {
    jsonrpc: '2.0',
    id,
    error: {
      code: INTERNAL_ERROR,
      message: `The upstream MCP server needs more input before it can answer (input_required${kinds ? `: ${kinds}` : ''}), and this client's MCP revision cannot provide it; the request did not complete. Use a client that speaks MCP ${MODERN_VERSION}.`,
      data: { resultType: 'input_required' },
    },
  };
}

export function isInputRequired(message: Json): boolean {
  return isObject(message.result) && message.result.resultType === 'input_required';
}
