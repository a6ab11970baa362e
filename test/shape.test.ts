import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Json } from '../src/proxy/messages.js';
import { foldedPair } from '../src/proxy/shape.js';
import { initialized } from './helpers/session.js';

/**
 * SPEC section 9, "Unbypassable": what reaches the server is exactly what was judged. A session
 * rebuilds every client message from its known members, refuses members a lenient server could
 * read as another (other casing, look-alike letters, `__proto__`), and passes a client's answer
 * only to a server request still open. The transports all hand messages to the session, so this
 * holds on each (test/case-folded-members.e2e.test.ts runs it over stdio, Streamable HTTP, SSE).
 */
const call = (id: unknown, params: Json, extra: Json = {}) => ({ jsonrpc: '2.0', id, method: 'tools/call', params, ...extra });

describe('a client message is forwarded as exactly what was judged', () => {
  it('a tools/call keeps jsonrpc, id, method and params{name, arguments, _meta, task}; other members are dropped', () => {
    const { s, toServer } = initialized();
    const meta = { progressToken: 't1', 'example.com/Trace': { A: 1, a: 2 }, Foo: 1, foo: 2 };
    s.fromClient(call(1, { name: 'echo', arguments: { message: 'hi', nested: { k: [1, { x: 2 }] } }, _meta: meta, task: { ttl: 60_000 }, extra: 'x' }, { extra: { y: 1 } }));
    assert.equal(toServer.length, 1);
    assert.deepEqual(toServer[0], { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'echo', arguments: { message: 'hi', nested: { k: [1, { x: 2 }] } }, _meta: meta, task: { ttl: 60_000 } } });
    assert.equal((toServer[0].params as Json)._meta, meta, '_meta passes unchanged, as the same object');
  });

  it('other methods keep their params as they came (unknown members and _meta included), without unknown top-level members', () => {
    const { s, toServer } = initialized();
    const params = { uri: 'file:///a', vendorOption: true, _meta: { X: 1, x: 2 } };
    s.fromClient({ jsonrpc: '2.0', id: 2, method: 'resources/read', params, other: 1 });
    s.fromClient({ jsonrpc: '2.0', method: 'notifications/roots/list_changed', note: 'dropped' });
    assert.deepEqual(toServer, [{ jsonrpc: '2.0', id: 2, method: 'resources/read', params }, { jsonrpc: '2.0', method: 'notifications/roots/list_changed' }]);
  });

  const refused: [string, Json, number][] = [
    ['"Method" beside a result', { jsonrpc: '2.0', id: 'a1', Method: 'tools/call', params: { name: 'delete_all' }, result: null }, -32600],
    ['"METHOD" beside an error', { jsonrpc: '2.0', id: 'a2', METHOD: 'tools/call', params: { name: 'delete_all' }, error: null }, -32600],
    ['method and Method', { jsonrpc: '2.0', id: 'a3', method: 'ping', Method: 'tools/call', params: { name: 'delete_all' } }, -32600],
    ['params and Params', call('a4', { name: 'echo' }, { Params: { name: 'delete_all' } }), -32600],
    ['"ID"', { jsonrpc: '2.0', id: 'a5', ID: 7, method: 'ping' }, -32600],
    ['params.name and params.Name', call('a6', { name: 'echo', Name: 'delete_all', arguments: {} }), -32602],
    ['params.Arguments alone', call('a7', { name: 'echo', Arguments: { path: '/etc/shadow' } }), -32602],
    ['arguments and Arguments', call('a8', { name: 'echo', arguments: { path: '/tmp' }, Arguments: { path: '/etc/shadow' } }), -32602],
    ['args path and Path', call('a9', { name: 'echo', arguments: { path: '/tmp', Path: '/etc/shadow' } }), -32602],
    ['keys folding alike deep in an array', call('a10', { name: 'echo', arguments: { list: [{ ok: 1 }, { deep: { Key: 1, KEY: 2 } }] } }), -32602],
    ['the Kelvin sign, which Go folds to k', call('a11', { name: 'echo', arguments: { kind: 'safe', '\u212Aind': 'rm' } }), -32602],
    ['the long s, which Go folds to s', call('a12', { name: 'echo', arguments: { host: 'a', 'ho\u017Ft': 'b' } }), -32602],
    ['a Cyrillic look-alike (the tool-name skeleton)', call('a13', { name: 'echo', arguments: { path: '/tmp', 'р\u0430th': '/etc/shadow' } }), -32602],
    ['an own __proto__ deep in arguments', call('a14', { name: 'echo', arguments: JSON.parse('{"a":{"__proto__":{"path":"/etc/shadow"}}}') as Json }), -32602],
    ['constructor holding prototype', call('a15', { name: 'echo', arguments: { constructor: { prototype: { path: '/etc' } } } }), -32602],
    ['resources/read params uri and URI', { jsonrpc: '2.0', id: 'a16', method: 'resources/read', params: { uri: 'file:///a', URI: 'file:///etc/shadow' } }, -32602],
  ];
  for (const [what, message, code] of refused) {
    it(`${what}: refused (${code}), nothing forwarded`, () => {
      const { s, toServer, answer } = initialized();
      s.fromClient(message);
      assert.deepEqual(toServer, []);
      assert.equal(answer(message.id)?.error?.code, code, JSON.stringify(answer(message.id)));
    });
  }

  it('ordinary keys do not collide: snake_case, camelCase, spaces, digits, and non-Latin names', () => {
    assert.equal(foldedPair({ file_path: 1, filePath: 2, 'first name': 3, firstname: 4, l: 5, '1': 6, 名前: 7, 名: 8, path: 9 }), undefined);
    assert.deepEqual(foldedPair({ path: 1, Path: 2 }), ['path', 'Path']);
    assert.deepEqual(foldedPair({ a: 1, 'p\u200Bath': 2, path: 3 }), ['p\u200Bath', 'path']);
  });
});

describe("a client's answer reaches the server only for an open server request", () => {
  it('is rebuilt as {jsonrpc, id, result}, passes once, and not for an id the server never asked', () => {
    const { s, toServer, toClient } = initialized();
    s.fromServer({ jsonrpc: '2.0', id: 'srv-1', method: 'roots/list' });
    assert.equal(toClient.at(-1)?.id, 'srv-1');
    s.fromClient({ jsonrpc: '2.0', id: 'srv-1', result: { roots: [] }, method_: 'tools/call', params: { name: 'delete_all' } });
    s.fromClient({ jsonrpc: '2.0', id: 'srv-1', result: { roots: [] } });
    s.fromClient({ jsonrpc: '2.0', id: 'never-asked', result: { roots: [] } });
    assert.deepEqual(toServer, [{ jsonrpc: '2.0', id: 'srv-1', result: { roots: [] } }]);
  });

  it('an error answer passes as {jsonrpc, id, error}; result and error together, or a null result, do not pass', () => {
    const { s, toServer } = initialized();
    for (const id of [1, 2, 3]) s.fromServer({ jsonrpc: '2.0', id, method: 'sampling/createMessage', params: {} });
    s.fromClient({ jsonrpc: '2.0', id: 1, error: { code: -1, message: 'no' }, extra: true });
    s.fromClient({ jsonrpc: '2.0', id: 2, result: {}, error: { code: -1, message: 'no' } });
    s.fromClient({ jsonrpc: '2.0', id: 3, result: null });
    assert.deepEqual(toServer, [{ jsonrpc: '2.0', id: 1, error: { code: -1, message: 'no' } }]);
  });
});
