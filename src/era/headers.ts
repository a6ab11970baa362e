/**
 * The standard request headers of MCP 2026-07-28 on Streamable HTTP: `MCP-Protocol-Version`,
 * `Mcp-Method` and (for the methods that name something) `Mcp-Name` mirror the body so that
 * intermediaries can route and judge without parsing it. A gateway that judged one and forwarded
 * the other could be walked past, so toolgate refuses, before anything is decided or forwarded,
 * any request whose headers are missing, repeated or not exactly what the body says
 * (HeaderMismatch, -32020, HTTP 400). The body is what is judged and what is sent.
 */
import type { IncomingMessage } from 'node:http';
import { INVALID_PARAMS, isObject, type Json } from '../proxy/messages.js';
import { claimedVersion, hasEnvelopeClaim, isRefusal, readEnvelope, type Envelope, type Refusal } from './envelope.js';
import { HEADER_MISMATCH, isModernVersion, PROTOCOL_VERSION_KEY } from './versions.js';

/** Which body field `Mcp-Name` mirrors, by method (SEP-2243, and SEP-2663 for tasks). */
export const MCP_NAME_SOURCE: Record<string, string> = {
  'tools/call': 'name',
  'prompts/get': 'name',
  'resources/read': 'uri',
  'tasks/get': 'taskId',
  'tasks/update': 'taskId',
  'tasks/cancel': 'taskId',
};

const SENTINEL_PREFIX = '=?base64?';
const SENTINEL_SUFFIX = '?=';

/** A value's only header form (what the SDK sends): itself when plain visible ASCII, else its Base64 sentinel. */
export function headerForm(value: string): string {
  let plain = value.length > 0 && value === value.trim() && !(value.startsWith(SENTINEL_PREFIX) && value.endsWith(SENTINEL_SUFFIX));
  for (let i = 0; plain && i < value.length; i++) {
    const c = value.charCodeAt(i);
    plain = c === 9 || (c >= 32 && c <= 126);
  }
  return plain ? value : `${SENTINEL_PREFIX}${Buffer.from(value, 'utf8').toString('base64')}${SENTINEL_SUFFIX}`;
}

const BASE64_CANONICAL = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/u;

/**
 * What a header value says: a `=?base64?…?=` sentinel value decoded (canonical Base64 of valid
 * UTF-8, else undefined: refused as an invalid encoding), any other value as it is. A client may
 * send any value in the sentinel form (SEP-2243), not only those headerForm must encode, so a
 * header is compared by what it decodes to, never by its spelling.
 */
export function headerValue(value: string): string | undefined {
  if (!(value.length >= SENTINEL_PREFIX.length + SENTINEL_SUFFIX.length && value.startsWith(SENTINEL_PREFIX) && value.endsWith(SENTINEL_SUFFIX))) return value;
  const b64 = value.slice(SENTINEL_PREFIX.length, value.length - SENTINEL_SUFFIX.length);
  if (!BASE64_CANONICAL.test(b64)) return undefined;
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(Buffer.from(b64, 'base64'));
  } catch {
    return undefined;
  }
}

function mismatch(header: string, body: string): Refusal {
  return { code: HEADER_MISMATCH, message: `Bad Request: the request headers and body disagree: ${body}`, data: { mismatch: { header, body } } };
}

/** A header's single value; `repeated` when it came more than once (never joined and read leniently). */
function single(req: IncomingMessage, name: string): string | undefined | { repeated: true } {
  const values = req.headersDistinct[name];
  if (values === undefined || values.length === 0) return undefined;
  return values.length > 1 ? { repeated: true } : values[0];
}

function show(v: string): string {
  return JSON.stringify(v.length > 120 ? `${v.slice(0, 120)}…` : v);
}

/** Whether a POST body is a 2026-07-28 message: it carries the envelope, is server/discover, or its header names a modern version. */
export function isModernPost(req: IncomingMessage, body: unknown): boolean {
  if (!isObject(body) || typeof body.method !== 'string') return false;
  if (body.method === 'initialize' && !hasEnvelopeClaim(body.params)) return false;
  const header = single(req, 'mcp-protocol-version');
  return hasEnvelopeClaim(body.params) || body.method === 'server/discover' || (typeof header === 'string' && isModernVersion(header)) || typeof header === 'object';
}

/**
 * The envelope of a modern request or notification, or why it is refused (with the HTTP status to
 * refuse it with): -32602 for a missing or malformed envelope, -32020 for any header that is
 * missing, repeated or differs from the body, -32022 for a version toolgate does not speak.
 */
export function checkModernPost(req: IncomingMessage, body: Json): { envelope?: Envelope } | { refusal: Refusal; status: number } {
  const method = body.method as string;
  const isRequest = Object.hasOwn(body, 'id');
  const versionHeader = single(req, 'mcp-protocol-version');
  const methodHeader = single(req, 'mcp-method');
  const nameHeader = single(req, 'mcp-name');
  for (const [name, v] of [['MCP-Protocol-Version', versionHeader], ['Mcp-Method', methodHeader], ['Mcp-Name', nameHeader]] as const) {
    if (typeof v === 'object') return { refusal: mismatch(name, `the ${name} header was sent more than once`), status: 400 };
  }
  const refuse = (refusal: Refusal) => ({ refusal, status: 400 });
  const claimed = hasEnvelopeClaim(body.params);
  if (!isRequest && !claimed) {
    // A notification carries no envelope: the headers it has must still agree with it.
    if (methodHeader !== undefined && methodHeader !== method) return refuse(mismatch(methodHeader as string, `the body names method ${show(method)} but the Mcp-Method header names ${show(methodHeader as string)}`));
    return {};
  }
  const envelope = readEnvelope(body.params);
  if (isRefusal(envelope) && envelope.code === INVALID_PARAMS) return refuse(envelope);
  const version = claimedVersion(body.params);
  if (versionHeader !== undefined && versionHeader !== version) {
    return refuse(mismatch(versionHeader as string, `the body's _meta["${PROTOCOL_VERSION_KEY}"] is ${show(String(version))} but the MCP-Protocol-Version header names ${show(versionHeader as string)}`));
  }
  if (methodHeader !== undefined && methodHeader !== method) return refuse(mismatch(methodHeader as string, `the body names method ${show(method)} but the Mcp-Method header names ${show(methodHeader as string)}`));
  if (isRefusal(envelope)) return refuse(envelope);
  if (!isRequest) return { envelope };
  if (versionHeader === undefined) return refuse(mismatch('(missing)', `the body names protocol version ${show(envelope.version)} but the required MCP-Protocol-Version header is absent`));
  if (methodHeader === undefined) return refuse(mismatch('(missing)', `the body names method ${show(method)} but the required Mcp-Method header is absent`));
  const field = Object.hasOwn(MCP_NAME_SOURCE, method) ? MCP_NAME_SOURCE[method] : undefined;
  if (field !== undefined) {
    const value = isObject(body.params) ? body.params[field] : undefined;
    if (typeof value === 'string') {
      if (nameHeader === undefined) return refuse(mismatch('(missing)', `the body carries params.${field} ${show(value)} but the required Mcp-Name header is absent`));
      if (headerValue(nameHeader as string) !== value) return refuse(mismatch(nameHeader as string, `the body carries params.${field} ${show(value)} but the Mcp-Name header is ${show(nameHeader as string)}`));
    } else if (nameHeader !== undefined) {
      return refuse(mismatch(nameHeader as string, `the Mcp-Name header is ${show(nameHeader as string)} but the body carries no params.${field} string`));
    }
  } else if (nameHeader !== undefined) {
    return refuse(mismatch(nameHeader as string, `${show(method)} names nothing, but an Mcp-Name header was sent`));
  }
  return { envelope };
}
