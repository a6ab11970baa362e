/**
 * The HTTP headers of a 2026-07-28 request, made from the JSON-RPC body toolgate sends and from
 * nothing else: `MCP-Protocol-Version` (the envelope's version), `Mcp-Method`, `Mcp-Name` (the
 * body field the method names) and the `Mcp-Param-*` headers a tool's `inputSchema` declares with
 * `x-mcp-header`, valued from the call's own arguments. A client's headers never reach an
 * upstream, so a header can only ever say what the body says. Rules as in SDK v2 (SEP-2243).
 */
import { isObject, type Json } from './messages.js';
import { META_PROTOCOL_VERSION } from './upstream-modern-wire.js';

/** The body field each method's `Mcp-Name` mirrors. */
const NAME_SOURCE: Record<string, string> = {
  'tools/call': 'name', 'prompts/get': 'name', 'resources/read': 'uri',
  'tasks/get': 'taskId', 'tasks/update': 'taskId', 'tasks/cancel': 'taskId',
};

/** RFC 9110 token: what an `x-mcp-header` name must be. */
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
const HEADER_TYPES = new Set(['string', 'integer', 'boolean']);
const SENTINEL_PREFIX = '=?base64?';
const SENTINEL_SUFFIX = '?=';

/**
 * A value as an HTTP field value: plain printable ASCII as it is; anything else (non-ASCII,
 * controls, CR or LF, edge whitespace, empty, or what looks like the sentinel) as
 * `=?base64?…?=` of its UTF-8 — so no value can split a header or add one.
 */
export function encodeHeaderValue(value: string): string {
  let plain = value.length > 0 && value === value.trim() && !(value.startsWith(SENTINEL_PREFIX) && value.endsWith(SENTINEL_SUFFIX));
  for (let i = 0; plain && i < value.length; i++) {
    const c = value.charCodeAt(i);
    plain = c === 9 || (c >= 32 && c <= 126);
  }
  return plain ? value : `${SENTINEL_PREFIX}${Buffer.from(value, 'utf8').toString('base64')}${SENTINEL_SUFFIX}`;
}

interface Declaration { path: string[]; header: string }

/**
 * The `x-mcp-header` declarations of one input schema: on primitive properties reached through
 * `properties` only. A schema with a malformed declaration gets none (the server refuses such a
 * tool; toolgate sends no header it could not justify).
 */
export function declarationsOf(schema: unknown): Declaration[] {
  const found: Declaration[] = [];
  const seen = new Set<string>();
  let valid = true;
  const visit = (node: unknown, path: string[], depth: number) => {
    if (!isObject(node) || depth > 32 || !valid) return;
    if (Object.hasOwn(node, 'x-mcp-header')) {
      const name = node['x-mcp-header'];
      if (path.length === 0 || typeof name !== 'string' || !TOKEN.test(name) || typeof node.type !== 'string' || !HEADER_TYPES.has(node.type) || seen.has(name.toLowerCase())) {
        valid = false;
        return;
      }
      seen.add(name.toLowerCase());
      found.push({ path, header: name });
    }
    if (isObject(node.properties)) for (const [key, child] of Object.entries(node.properties)) visit(child, [...path, key], depth + 1);
  };
  visit(schema, [], 0);
  return valid ? found : [];
}

function primitiveText(value: unknown): string | undefined {
  if (typeof value === 'string') return value;
  if (typeof value === 'boolean') return value ? 'true' : 'false';
  if (typeof value === 'number' && Number.isFinite(value) && (!Number.isInteger(value) || Number.isSafeInteger(value))) return String(value);
  return undefined;
}

/** The tools' header declarations, learned from the server's own tools/list answers. */
export class ToolHeaders {
  private readonly byTool = new Map<string, Declaration[]>();

  /** A tools/list result from the server: remembers what each listed tool declares. */
  learn(result: unknown): void {
    if (!isObject(result) || !Array.isArray(result.tools)) return;
    for (const tool of result.tools) {
      if (!isObject(tool) || typeof tool.name !== 'string') continue;
      const declared = declarationsOf(tool.inputSchema);
      if (declared.length > 0) this.byTool.set(tool.name, declared);
      else this.byTool.delete(tool.name);
    }
  }

  /** `Mcp-Param-*` headers for a tools/call, each valued from the call's own arguments. */
  paramHeaders(params: Json): Record<string, string> {
    const declared = typeof params.name === 'string' ? this.byTool.get(params.name) : undefined;
    const out: Record<string, string> = {};
    for (const d of declared ?? []) {
      let node: unknown = params.arguments;
      for (const key of d.path) node = isObject(node) && Object.hasOwn(node, key) ? node[key] : undefined;
      const text = primitiveText(node);
      if (text !== undefined) out[`Mcp-Param-${d.header}`] = encodeHeaderValue(text);
    }
    return out;
  }
}

/**
 * The standard headers of one outgoing message, from its body. Empty for a message without the
 * modern envelope (a response, or anything sent before the era is known).
 */
export function standardHeaders(message: Json, tools: ToolHeaders): Record<string, string> {
  const method = message.method;
  const params = isObject(message.params) ? message.params : {};
  const version = isObject(params._meta) ? params._meta[META_PROTOCOL_VERSION] : undefined;
  if (typeof method !== 'string' || typeof version !== 'string') return {};
  const headers: Record<string, string> = { 'MCP-Protocol-Version': version, 'Mcp-Method': encodeHeaderValue(method) };
  const field = Object.hasOwn(NAME_SOURCE, method) ? NAME_SOURCE[method] : undefined;
  if (field !== undefined && typeof params[field] === 'string') headers['Mcp-Name'] = encodeHeaderValue(params[field]);
  return method === 'tools/call' ? { ...headers, ...tools.paramHeaders(params) } : headers;
}

/** True for a header name toolgate derives from the body: a configured header of that name is not sent. */
export function isDerivedHeader(name: string): boolean {
  const n = name.toLowerCase();
  return n === 'mcp-protocol-version' || n === 'mcp-method' || n === 'mcp-name' || n.startsWith('mcp-param-') || n === 'mcp-session-id' || n === 'content-type' || n === 'accept';
}
