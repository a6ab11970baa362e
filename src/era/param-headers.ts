/**
 * `Mcp-Param-*` headers (SEP-2243): a tool may mark primitive properties of its inputSchema with
 * `x-mcp-header: Name`, and a 2026-07-28 client then mirrors those argument values in
 * `Mcp-Param-Name` headers on its tools/call. Toolgate never uses nor forwards them (the body is
 * what is judged and sent; a modern upstream gets them rebuilt from the body), but an
 * intermediary in front of it may route on them, so a call whose parameter headers are not
 * exactly what its arguments say is refused (-32020, HTTP 400) before it is decided.
 */
import type { IncomingMessage } from 'node:http';
import { isObject } from '../proxy/messages.js';
import type { Refusal } from './envelope.js';
import { headerValue } from './headers.js';
import { HEADER_MISMATCH } from './versions.js';

const PREFIX = 'mcp-param-';
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;

export interface ParamDeclaration { header: string; path: string[] }

/** The `x-mcp-header` declarations reachable through `properties` chains of a tool's inputSchema. */
export function paramDeclarations(inputSchema: unknown): ParamDeclaration[] {
  const out: ParamDeclaration[] = [];
  const visit = (node: unknown, path: string[], depth: number) => {
    if (!isObject(node) || depth > 32) return;
    const name = node['x-mcp-header'];
    if (path.length > 0 && typeof name === 'string' && TOKEN.test(name)) out.push({ header: name.toLowerCase(), path });
    if (isObject(node.properties)) for (const [key, child] of Object.entries(node.properties)) visit(child, [...path, key], depth + 1);
  };
  visit(inputSchema, [], 0);
  return out;
}

function valueAt(root: unknown, path: string[]): unknown {
  let node = root;
  for (const key of path) {
    if (!isObject(node) || !Object.hasOwn(node, key)) return undefined;
    node = node[key];
  }
  return node;
}

/** An argument value's header text, or undefined when it is not a primitive a client mirrors. */
function primitiveText(v: unknown): string | undefined {
  if (typeof v === 'string') return v;
  if (typeof v === 'boolean') return v ? 'true' : 'false';
  if (typeof v === 'number' && Number.isFinite(v) && (!Number.isInteger(v) || Number.isSafeInteger(v))) return String(v);
  return undefined;
}

function mismatch(header: string, body: string): Refusal {
  return { code: HEADER_MISMATCH, message: `Bad Request: the request headers and body disagree: ${body}`, data: { mismatch: { header, body } } };
}

/**
 * Why a tools/call's `Mcp-Param-*` headers are refused, or undefined: each declared parameter
 * with a primitive argument needs its header once, saying exactly the value (plain, or in the
 * Base64 sentinel form, which is decoded before comparing); a parameter
 * header for anything else (undeclared, or with no such argument) is refused too.
 */
export function paramHeaderRefusal(req: IncomingMessage, declarations: ParamDeclaration[], args: unknown): Refusal | undefined {
  const sent = Object.entries(req.headersDistinct).filter(([k]) => k.startsWith(PREFIX));
  const expected = new Map<string, string>();
  for (const d of declarations) {
    const text = primitiveText(valueAt(args, d.path));
    if (text !== undefined) expected.set(`${PREFIX}${d.header}`, text);
  }
  for (const [name, values] of sent) {
    const want = expected.get(name);
    if (want === undefined) return mismatch(name, `the ${name} header mirrors no argument of this call`);
    if (values === undefined || values.length !== 1) return mismatch(name, `the ${name} header was sent more than once`);
    const said = headerValue(values[0]);
    if (said === undefined) return mismatch(name, `the ${name} header carries an invalid Base64 sentinel value`);
    if (said !== want) return mismatch(name, `the ${name} header is ${JSON.stringify(values[0].slice(0, 120))} but the argument's value is ${JSON.stringify(want.slice(0, 120))}`);
  }
  for (const name of expected.keys()) if (!Object.hasOwn(req.headersDistinct, name)) return mismatch('(missing)', `the call's arguments carry a value for ${name}, but the header is absent`);
  return undefined;
}

