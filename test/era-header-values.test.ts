import assert from 'node:assert/strict';
import type { IncomingMessage } from 'node:http';
import { describe, it } from 'node:test';
import { checkModernPost, headerValue } from '../src/era/headers.js';
import { paramDeclarations, paramHeaderRefusal } from '../src/era/param-headers.js';
import { httpStatusForError } from '../src/era/versions.js';

/** A request with just the headers the checks read (Node lower-cases names and trims values). */
const request = (headers: Record<string, string>) => ({ headersDistinct: Object.fromEntries(Object.entries(headers).map(([k, v]) => [k, [v]])) }) as unknown as IncomingMessage;
const b64 = (s: string) => `=?base64?${Buffer.from(s, 'utf8').toString('base64')}?=`;
const schema = { type: 'object', properties: { region: { type: 'string', 'x-mcp-header': 'Region' } } };
const envelope = { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {} };
const call = (name: string) => ({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name, arguments: {}, _meta: envelope } });

describe('header values in the Base64 sentinel form (SEP-2243) are compared by what they decode to', () => {
  it('decodes canonical Base64 of UTF-8 and refuses anything else in the sentinel form', () => {
    assert.equal(headerValue('=?base64?SGVsbG8=?='), 'Hello');
    assert.equal(headerValue('Hello'), 'Hello');
    assert.equal(headerValue(b64('héllo\n')), 'héllo\n');
    assert.equal(headerValue('=?base64?SGVsbG8?='), undefined, 'padding missing: not canonical');
    assert.equal(headerValue('=?base64?SGV*bG8=?='), undefined, 'a character outside the alphabet');
    assert.equal(headerValue('=?base64?/w==?='), undefined, 'not UTF-8');
  });

  it('an Mcp-Param header may carry a plain value in the sentinel form (the conformance ServerAcceptsValidBase64 check)', () => {
    const decl = paramDeclarations(schema);
    assert.equal(paramHeaderRefusal(request({ 'mcp-param-region': '=?base64?SGVsbG8=?=' }), decl, { region: 'Hello' }), undefined);
    assert.equal(paramHeaderRefusal(request({ 'mcp-param-region': 'Hello' }), decl, { region: 'Hello' }), undefined);
    assert.equal(paramHeaderRefusal(request({ 'mcp-param-region': b64(' padded ') }), decl, { region: ' padded ' }), undefined);
  });

  it('a sentinel value that decodes to another value, or does not decode, is still refused with -32020', () => {
    const decl = paramDeclarations(schema);
    assert.equal(paramHeaderRefusal(request({ 'mcp-param-region': b64('World') }), decl, { region: 'Hello' })?.code, -32020);
    assert.equal(paramHeaderRefusal(request({ 'mcp-param-region': '=?base64?SGVsbG8?=' }), decl, { region: 'Hello' })?.code, -32020);
    assert.equal(paramHeaderRefusal(request({ 'mcp-param-region': ' Hello ' }), decl, { region: 'Hello' })?.code, -32020);
  });

  it('Mcp-Name is read the same way: the sentinel form of the body\'s name passes, of another name is refused', () => {
    const headers = (name: string) => ({ 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/call', 'mcp-name': name });
    assert.ok(!('refusal' in checkModernPost(request(headers(b64('echo'))), call('echo'))));
    const refused = checkModernPost(request(headers(b64('delete_all'))), call('echo'));
    assert.ok('refusal' in refused && refused.refusal.code === -32020 && refused.status === 400);
  });
});

describe('the HTTP status of a plain JSON-RPC error answer to a 2026-07-28 POST', () => {
  it('is 404 for method not found, 400 for a missing client capability, 200 for anything else', () => {
    assert.equal(httpStatusForError(-32601), 404);
    assert.equal(httpStatusForError(-32021), 400);
    for (const code of [-32602, -32603, -32002, -32020, 1]) assert.equal(httpStatusForError(code), 200);
  });
});
