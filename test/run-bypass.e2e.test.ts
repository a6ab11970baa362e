import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { LENIENT, RawSession, tempDir, testEnv, writePolicy } from './helpers/toolgate.js';

/**
 * Hostile and malformed messages against a deliberately lenient server (case-insensitive,
 * invisible-character-blind tool and method matching). The server logs every line it receives;
 * no test here may leave a denied call in that log.
 */
describe('bad input never gets a denied call to the server', () => {
  let raw: RawSession;
  let serverLog: string;
  const received = () => readFileSync(serverLog, 'utf8').split('\n').filter(Boolean);
  const receivedCalls = () => received().filter((l) => /tools\/call/i.test(l));
  const neverReached = (needle: RegExp) => assert.ok(!receivedCalls().some((l) => needle.test(l)), `the server received ${JSON.stringify(receivedCalls().filter((l) => needle.test(l)))}`);

  before(async () => {
    const dir = tempDir();
    serverLog = join(dir, 'server.log');
    const policy = writePolicy(dir, {
      version: '1',
      default: 'allow',
      hide: ['read_*'],
      tools: {
        delete_all: { action: 'deny' },
        refund: { deny_if: [{ conditions: [{ path: 'args.amount', op: 'gt', value: 100 }] }], require: [{ conditions: [{ path: 'args.to', op: 'starts_with', value: 'acct_' }] }] },
        echo: { limits: [{ counter: 'echo', window: 'day', max: 2 }] },
        fail: { limits: [{ counter: 'fail', window: 'day', max: 1 }] },
      },
    });
    raw = new RawSession(['-p', policy, '--state', `sqlite:${join(dir, 'state.db')}`, '--', process.execPath, LENIENT], testEnv(dir, { LENIENT_LOG: serverLog }));
    await raw.initialize();
  });
  after(() => raw.close());

  it('answers a malformed line with a parse error and carries on', async () => {
    raw.send('{"jsonrpc": "2.0", "id": 1, "method": "tools/call", ');
    const err = await raw.waitFor((m) => m.error?.code === -32700);
    assert.equal(err.id, null);
    const ok = await raw.request(2, 'ping');
    assert.deepEqual(ok.result, {});
  });

  it('refuses batches whole under MCP 2025-06-18 (batches: test/batches.e2e.test.ts)', async () => {
    raw.send([{ jsonrpc: '2.0', id: 'b1', method: 'tools/call', params: { name: 'delete_all' } }, { jsonrpc: '2.0', id: 'b2', method: 'ping' }]);
    const err = await raw.waitFor((m) => m.error?.message?.includes('batches'));
    assert.equal(err.error.code, -32600);
    neverReached(/delete_all/);
    assert.ok(!received().some((l) => l.includes('"b2"')));
  });

  it('duplicate keys: the value toolgate checks is the value the server gets', async () => {
    raw.send('{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","name":"delete_all","arguments":{}}}');
    const r = await raw.response(3);
    assert.match(r.result.content[0].text, /POLICY DENIED/);
    raw.send('{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"delete_all","name":"echo","arguments":{"x":1}}}');
    const ok = await raw.response(4);
    assert.match(ok.result.content[0].text, /^echo ran/);
    neverReached(/delete_all/);
  });

  for (const [label, name] of [
    ['other case', 'DELETE_ALL'],
    ['a zero-width space', 'delete\u200b_all'],
    ['a Cyrillic look-alike', 'dеlete_all'],
    ['fullwidth letters', 'ｄｅｌｅｔｅ_ａｌｌ'],
    ['surrounding whitespace', ' delete_all\t'],
    ['a hidden tool in capitals', 'READ_FILE'],
  ]) {
    it(`a tool name with ${label} is judged as the tool it imitates`, async () => {
      const id = `n-${label}`;
      const r = await raw.request(id, 'tools/call', { name, arguments: {} });
      assert.match(r.result.content[0].text, /^\[POLICY DENIED\]/);
      neverReached(/delete|read_file|READ_FILE/);
    });
  }

  it('a tool name that is not a string is an invalid-params error', async () => {
    for (const [i, name] of [['x1', ['delete_all']], ['x2', { toString: 'delete_all' }], ['x3', 42], ['x4', null]] as const) {
      const r = await raw.request(i, 'tools/call', { name, arguments: {} });
      assert.equal(r.error.code, -32602);
    }
    const noParams = await raw.request('x5', 'tools/call');
    assert.equal(noParams.error.code, -32602);
    const badArgs = await raw.request('x6', 'tools/call', { name: 'echo', arguments: ['delete_all'] });
    assert.equal(badArgs.error.code, -32602);
    assert.ok(!received().some((l) => /"x[1-6]"/.test(l)));
  });

  it('a tools/call notification (no id) is dropped, never forwarded', async () => {
    raw.send({ jsonrpc: '2.0', method: 'tools/call', params: { name: 'delete_all', arguments: {} } });
    raw.send({ jsonrpc: '2.0', id: null, method: 'tools/call', params: { name: 'delete_all', arguments: {} } });
    await raw.waitFor((m) => m.id === null && m.error?.code === -32600);
    await raw.request('after-notification', 'ping');
    neverReached(/delete_all/);
  });

  it('a method spelt in other case or with odd characters is refused: Method not found', async () => {
    for (const [id, method] of [['m1', 'Tools/Call'], ['m2', 'TOOLS/LIST'], ['m3', 'tools/call\u200b'], ['m4', 'tools/ｃａｌｌ']]) {
      const r = await raw.request(id, method, { name: 'delete_all', arguments: {} });
      assert.equal(r.error.code, -32601, method);
    }
    neverReached(/delete_all/);
  });

  it('an id reused while the first call is in flight is refused', async () => {
    raw.send({ jsonrpc: '2.0', id: 77, method: 'tools/call', params: { name: 'slow', arguments: { ms: 300 } } });
    raw.send({ jsonrpc: '2.0', id: 77, method: 'tools/call', params: { name: 'delete_all', arguments: {} } });
    const refusal = await raw.waitFor((m) => m.id === 77 && m.error);
    assert.match(refusal.error.message, /already in use/);
    const done = await raw.waitFor((m) => m.id === 77 && m.result);
    assert.equal(done.result.content[0].text, 'slow done');
    neverReached(/delete_all/);
  });

  it('__proto__ in arguments cannot satisfy a condition for the real key: the call is refused, never forwarded', async () => {
    raw.send('{"jsonrpc":"2.0","id":"p1","method":"tools/call","params":{"name":"refund","arguments":{"__proto__":{"to":"acct_1"},"amount":5}}}');
    const r = await raw.response('p1');
    assert.equal(r.error?.code, -32602, JSON.stringify(r));
    assert.match(r.error.message, /__proto__/);
    neverReached(/__proto__/);
  });

  it('numbers sent as strings are compared as numbers', async () => {
    const r = await raw.request('s1', 'tools/call', { name: 'refund', arguments: { to: 'acct_1', amount: '99999' } });
    assert.match(r.result.content[0].text, /POLICY DENIED/);
    assert.equal(r.result._meta['dev.toolgate/decision'].rule, '/tools/refund/deny_if/0');
    const ok = await raw.request('s2', 'tools/call', { name: 'refund', arguments: { to: 'acct_1', amount: '50' } });
    assert.match(ok.result.content[0].text, /^refund ran/);
    neverReached(/99999/);
  });

  it('deeply nested arguments are refused, not crashed on', async () => {
    const deep = '['.repeat(100_000) + '"x"' + ']'.repeat(100_000);
    raw.send(`{"jsonrpc":"2.0","id":"deep","method":"tools/call","params":{"name":"echo","arguments":{"deep":${deep}}}}`);
    const r = await raw.response('deep');
    assert.ok(r.error.code === -32602 || r.error.code === -32700, JSON.stringify(r.error));
    const wide = await raw.request('deep2', 'tools/call', { name: 'echo', arguments: { deep: JSON.parse('['.repeat(100) + ']'.repeat(100)) } });
    assert.equal(wide.error.code, -32602);
    assert.deepEqual((await raw.request('alive', 'ping')).result, {});
  });

  it('a JSON-RPC error rolls the reservation back; a result commits it', async () => {
    for (const id of ['f1', 'f2']) {
      const r = await raw.request(id, 'tools/call', { name: 'fail', arguments: {} });
      assert.equal(r.error?.message, 'failed on purpose', 'the second call was forwarded: the first did not use up the limit');
    }
    const e1 = await raw.request('e1', 'tools/call', { name: 'echo', arguments: {} });
    assert.match(e1.result.content[0].text, /^echo ran/);
    const e3 = await raw.request('e3', 'tools/call', { name: 'echo', arguments: {} });
    assert.match(e3.result.content[0].text, /POLICY DENIED.*Limit reached/, 'echo: 4 → one earlier allowed call (id 4) plus e1 use the 2 allowed');
  });

  it('hidden and action: deny tools vanish from tools/list, pagination cursors are kept', async () => {
    const first = await raw.request('list', 'tools/list', {});
    assert.equal(first.result.nextCursor, 'page-2');
    const second = await raw.request('list2', 'tools/list', { cursor: 'page-2' });
    const names = [...first.result.tools, ...second.result.tools].map((t: any) => t.name);
    assert.ok(!names.includes('read_file'));
    assert.deepEqual(names, ['echo', 'fail', 'hang', 'slow', 'refund']);
  });

  it('forwards cancellation to the server', async () => {
    raw.send({ jsonrpc: '2.0', id: 'c1', method: 'tools/call', params: { name: 'hang', arguments: {} } });
    raw.send({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 'c1', reason: 'user pressed stop' } });
    await raw.request('after-cancel', 'ping');
    assert.ok(received().some((l) => l.includes('notifications/cancelled') && l.includes('"c1"')));
    const reuse = await raw.request('c1', 'ping');
    assert.deepEqual(reuse.result, {}, 'a cancelled id is free again');
  });
});
