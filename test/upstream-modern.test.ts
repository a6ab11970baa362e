import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { pino } from 'pino';
import { parseGatewayConfig } from '../src/config/gateway.js';
import type { Json } from '../src/proxy/messages.js';
import { declarationsOf, encodeHeaderValue, standardHeaders, ToolHeaders } from '../src/proxy/upstream-modern-headers.js';
import { EraUpstream } from '../src/proxy/upstream-modern.js';
import type { UpstreamProtocol } from '../src/proxy/upstream-modern-wire.js';
import type { Upstream } from '../src/proxy/upstream.js';

const log = pino({ level: 'silent' });
const INIT = { jsonrpc: '2.0', id: 'i', method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: { roots: {} }, clientInfo: { name: 'c', version: '1' } } };

/** A transport that keeps what it was sent; the test plays the server. */
class Fake implements Upstream {
  sent: Json[] = [];
  onmessage?: (m: unknown, raw?: string) => void;
  onclose?: (reason: string) => void;
  closed = false;
  send(m: Json) { this.sent.push(m); return Promise.resolve(); }
  async close() { this.closed = true; }
  answer(m: Json) { this.onmessage?.(m); }
}

function adapter(protocol: UpstreamProtocol, opts: { probeTimeoutMs?: number; legacy?: Fake } = {}) {
  const t = new Fake();
  const up = new EraUpstream({ protocol, transport: t, log, probeTimeoutMs: opts.probeTimeoutMs, legacy: opts.legacy ? () => opts.legacy! : undefined });
  const got: any[] = [];
  up.onmessage = (m) => got.push(m);
  return { t, up, got };
}
const DISCOVER_OK = (id: unknown) => ({ jsonrpc: '2.0', id, result: { supportedVersions: ['2026-07-28'], capabilities: { tools: {} }, _meta: { 'io.modelcontextprotocol/serverInfo': { name: 's', version: '2' } } } });

describe('EraUpstream: the probe', () => {
  it('answers initialize from discover and holds what the session sends meanwhile, then envelopes it', async () => {
    const { t, up, got } = adapter('auto');
    void up.send(INIT);
    void up.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
    void up.send({ jsonrpc: '2.0', id: 1, method: 'tools/list' });
    assert.equal(t.sent.length, 1, 'only the probe went out');
    assert.equal(t.sent[0].method, 'server/discover');
    t.answer(DISCOVER_OK(t.sent[0].id));
    assert.deepEqual(got[0], { jsonrpc: '2.0', id: 'i', result: { protocolVersion: '2025-06-18', capabilities: { tools: {} }, serverInfo: { name: 's', version: '2' } } });
    await new Promise((r) => setImmediate(r));
    assert.deepEqual(t.sent.slice(1).map((m) => m.method), ['tools/list'], 'notifications/initialized is not sent');
    assert.deepEqual((t.sent[1].params as any)._meta, {
      'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': { roots: {} }, 'io.modelcontextprotocol/clientInfo': { name: 'c', version: '1' },
    });
  });

  it('a client\'s claim of another version is overwritten: toolgate speaks 2026-07-28 to this server', async () => {
    const { t, up } = adapter('2026-07-28');
    void up.send(INIT);
    t.answer(DISCOVER_OK(t.sent[0].id));
    await up.send({ jsonrpc: '2.0', id: 2, method: 'tools/list', params: { _meta: { 'io.modelcontextprotocol/protocolVersion': '2099-01-01' } } });
    assert.equal((t.sent[1].params as any)._meta['io.modelcontextprotocol/protocolVersion'], '2026-07-28');
  });

  it('falls back to initialize on an error, on another transport when given one', () => {
    const legacy = new Fake();
    const { t, up, got } = adapter('auto', { legacy });
    void up.send(INIT);
    t.answer({ jsonrpc: '2.0', id: t.sent[0].id, error: { code: -32601, message: 'Method not found' } });
    assert.equal(up.era, 'legacy');
    assert.ok(t.closed);
    assert.deepEqual(legacy.sent, [INIT]);
    legacy.answer({ jsonrpc: '2.0', id: 'i', result: { protocolVersion: '2025-06-18' } });
    assert.equal(got[0].result.protocolVersion, '2025-06-18');
  });

  it('a result that does not list 2026-07-28 (a lenient server answering anything with {}) is legacy', () => {
    const { t, up } = adapter('auto');
    void up.send(INIT);
    t.answer({ jsonrpc: '2.0', id: t.sent[0].id, result: {} });
    assert.equal(up.era, 'legacy');
    assert.deepEqual(t.sent[1], INIT);
  });

  it('no answer within the timeout: legacy; a late or repeated answer to the probe is dropped, not passed on', async () => {
    const { t, up, got } = adapter('auto', { probeTimeoutMs: 20 });
    void up.send(INIT);
    await new Promise((r) => setTimeout(r, 60));
    assert.equal(up.era, 'legacy');
    assert.deepEqual(t.sent[1], INIT);
    t.answer(DISCOVER_OK(t.sent[0].id));
    t.answer(DISCOVER_OK(t.sent[0].id));
    assert.deepEqual(got, []);
  });

  it('a server that dies on the probe is started again once and gets initialize; a second death is the session\'s', () => {
    const t = new Fake();
    const fresh = new Fake();
    const told: Upstream[] = [];
    const up = new EraUpstream({ protocol: 'auto', transport: t, log, respawn: () => fresh, onRespawn: (x) => told.push(x) });
    const closed: string[] = [];
    up.onclose = (r) => closed.push(r);
    void up.send(INIT);
    t.onclose!('the server process exited with code 1');
    assert.equal(up.era, 'legacy');
    assert.deepEqual(fresh.sent, [INIT]);
    assert.deepEqual(told, [fresh]);
    assert.deepEqual(closed, [], 'the session was not told the upstream is gone');
    fresh.onclose!('the server process exited with code 1');
    assert.deepEqual(closed, ['the server process exited with code 1']);
  });

  it('pinned to 2026-07-28, a legacy server gets no initialize: the session is told why', () => {
    const { t, up, got } = adapter('2026-07-28');
    void up.send(INIT);
    t.answer({ jsonrpc: '2.0', id: t.sent[0].id, error: { code: -32601, message: 'Method not found' } });
    assert.equal(t.sent.length, 1);
    assert.match(got[0].error.message, /does not speak 2026-07-28.*-32601/);
  });
});

describe('EraUpstream: answers', () => {
  const opened = () => {
    const a = adapter('auto');
    void a.up.send(INIT);
    a.t.answer(DISCOVER_OK(a.t.sent[0].id));
    a.got.length = 0;
    return a;
  };
  const INPUT = { resultType: 'input_required', inputRequests: { c: { method: 'elicitation/create', params: { message: '\u001b[2Jrm -rf?' } } }, requestState: 's' };

  it('input_required to a request without a modern claim becomes an error naming only the method', async () => {
    const { t, up, got } = opened();
    await up.send({ jsonrpc: '2.0', id: 5, method: 'tools/call', params: { name: 'x', arguments: {} } });
    t.answer({ jsonrpc: '2.0', id: 5, result: INPUT });
    assert.equal(got[0].id, 5);
    assert.match(got[0].error.message, /input_required: "elicitation\/create"/);
    assert.doesNotMatch(got[0].error.message, /rm -rf/);
  });

  it('input_required to a request that claims 2026-07-28 passes untouched', async () => {
    const { t, up, got } = opened();
    await up.send({ jsonrpc: '2.0', id: 6, method: 'tools/call', params: { name: 'x', arguments: {}, _meta: { 'io.modelcontextprotocol/protocolVersion': '2026-07-28' } } });
    t.answer({ jsonrpc: '2.0', id: 6, result: INPUT });
    assert.deepEqual(got[0], { jsonrpc: '2.0', id: 6, result: INPUT });
  });
});

describe('EraUpstream: input rounds for a 2025 client', () => {
  const opened = () => {
    const a = adapter('auto');
    void a.up.send(INIT); // the client declared roots only
    a.t.answer(DISCOVER_OK(a.t.sent[0].id));
    a.got.length = 0;
    return a;
  };
  const CALL = { jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name: 'x', arguments: { a: 1 } } };
  const ROOTS = { resultType: 'input_required', inputRequests: { r: { method: 'roots/list' } }, requestState: 'st' };

  it('asks the client the 2025 way and retries the same call with its answer and the requestState', async () => {
    const { t, up, got } = opened();
    await up.send(CALL);
    t.answer({ jsonrpc: '2.0', id: 7, result: ROOTS });
    assert.equal(got.length, 1);
    assert.equal(got[0].method, 'roots/list');
    assert.match(got[0].id, /^toolgate-input-/);
    await up.send({ jsonrpc: '2.0', id: got[0].id, result: { roots: [{ uri: 'file:///w' }] } });
    const retry = t.sent.at(-1)! as any;
    assert.equal(retry.id, 7);
    assert.deepEqual([retry.params.name, retry.params.arguments], ['x', { a: 1 }]);
    assert.deepEqual(retry.params.inputResponses, { r: { roots: [{ uri: 'file:///w' }] } });
    assert.equal(retry.params.requestState, 'st');
    assert.equal(retry.params._meta['io.modelcontextprotocol/protocolVersion'], '2026-07-28');
    t.answer({ jsonrpc: '2.0', id: 7, result: { content: [], resultType: 'complete' } });
    assert.deepEqual(got.at(-1), { jsonrpc: '2.0', id: 7, result: { content: [], resultType: 'complete' } });
  });

  it('an error from the client ends the request with an error; its late answers are not forwarded', async () => {
    const { t, up, got } = opened();
    await up.send(CALL);
    t.answer({ jsonrpc: '2.0', id: 7, result: ROOTS });
    const before = t.sent.length;
    await up.send({ jsonrpc: '2.0', id: got[0].id, error: { code: -32601, message: 'no roots' } });
    assert.match(got.at(-1).error.message, /did not answer the upstream server's input request: no roots/);
    assert.equal(t.sent.length, before, 'nothing retried');
  });

  it('a server that keeps asking is stopped after a bounded number of rounds', async () => {
    const { t, up, got } = opened();
    await up.send(CALL);
    for (let i = 0; i < 20 && !got.some((m) => m.error); i++) {
      t.answer({ jsonrpc: '2.0', id: 7, result: ROOTS });
      const ask = got.at(-1);
      if (ask.method) await up.send({ jsonrpc: '2.0', id: ask.id, result: { roots: [] } });
    }
    assert.equal(got.filter((m) => m.method === 'roots/list').length, 8);
    assert.match(got.at(-1).error.message, /input_required/);
  });
});

describe('modern HTTP headers come from the body', () => {
  const tools = new ToolHeaders();
  tools.learn({ tools: [
    { name: 'lookup', inputSchema: { type: 'object', properties: { region: { type: 'string', 'x-mcp-header': 'Region' }, n: { type: 'integer', 'x-mcp-header': 'N' } } } },
    { name: 'bad', inputSchema: { type: 'object', properties: { a: { type: 'object', 'x-mcp-header': 'A' } } } },
  ] });
  const call = (name: string, args: Json) => ({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name, arguments: args, _meta: { 'io.modelcontextprotocol/protocolVersion': '2026-07-28' } } });

  it('standard and parameter headers mirror the body', () => {
    assert.deepEqual(standardHeaders(call('lookup', { region: 'eu', n: 3 }), tools), {
      'MCP-Protocol-Version': '2026-07-28', 'Mcp-Method': 'tools/call', 'Mcp-Name': 'lookup', 'Mcp-Param-Region': 'eu', 'Mcp-Param-N': '3',
    });
  });

  it('a name or value that could split or add a header is base64-encoded', () => {
    const h = standardHeaders(call('look\r\nMcp-Name: other', { region: 'é\nX: y' }), tools);
    assert.equal(h['Mcp-Name'], `=?base64?${Buffer.from('look\r\nMcp-Name: other').toString('base64')}?=`);
    assert.equal(encodeHeaderValue(' padded'), `=?base64?${Buffer.from(' padded').toString('base64')}?=`);
    assert.equal(encodeHeaderValue('=?base64?abc?='), `=?base64?${Buffer.from('=?base64?abc?=').toString('base64')}?=`);
    for (const v of Object.values(h)) assert.match(v, /^[\x20-\x7e]*$/);
  });

  it('no headers for a message without the envelope; none for a schema whose declarations are invalid', () => {
    assert.deepEqual(standardHeaders({ jsonrpc: '2.0', id: 1, method: 'initialize', params: {} }, tools), {});
    assert.deepEqual(declarationsOf({ properties: { a: { type: 'object', 'x-mcp-header': 'A' } } }), []);
    assert.deepEqual(declarationsOf({ properties: { a: { type: 'string', 'x-mcp-header': 'A' }, b: { type: 'string', 'x-mcp-header': 'a' } } }), []);
    assert.equal(standardHeaders(call('bad', { a: 'x' }), tools)['Mcp-Param-A'], undefined);
  });
});

describe('configuration: protocol per server', () => {
  it('defaults to auto, takes legacy and 2026-07-28, and refuses anything else with its place', () => {
    const parse = (extra: Json) => parseGatewayConfig(JSON.stringify({ servers: { s: { command: 'x', auth: 'none', ...extra } } }), '/tmp', { json: true });
    const ok = parse({});
    assert.ok(ok.ok && ok.value.servers.s.protocol === 'auto');
    for (const p of ['legacy', '2026-07-28']) {
      const r = parse({ protocol: p });
      assert.ok(r.ok && r.value.servers.s.protocol === p);
    }
    const bad = parse({ protocol: '2025-06-18' });
    assert.ok(!bad.ok);
  });
});

describe('EraUpstream: a 2025 server', () => {
  it('is not sent a modern client\'s envelope keys; other _meta keys stay', async () => {
    const { t, up } = adapter('legacy');
    await up.send(INIT);
    const meta = { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {}, 'io.modelcontextprotocol/clientInfo': { name: 'm' }, progressToken: 4 };
    await up.send({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'x', _meta: meta } });
    await up.send({ jsonrpc: '2.0', id: 2, method: 'tools/list', params: { _meta: { 'io.modelcontextprotocol/protocolVersion': '2026-07-28' } } });
    assert.deepEqual(t.sent.map((m) => m.method), ['initialize', 'tools/call', 'tools/list']);
    assert.deepEqual(t.sent[1].params, { name: 'x', _meta: { progressToken: 4 } });
    assert.deepEqual(t.sent[2].params, {});
  });
});

describe('EraUpstream: 2025 methods a modern server no longer has', () => {
  const opened = () => {
    const a = adapter('auto');
    void a.up.send(INIT);
    a.t.answer(DISCOVER_OK(a.t.sent[0].id));
    a.got.length = 0;
    return a;
  };

  it('ping is answered by toolgate; logging/setLevel is kept and sent in every later envelope', async () => {
    const { t, up, got } = opened();
    await up.send({ jsonrpc: '2.0', id: 'p', method: 'ping' });
    await up.send({ jsonrpc: '2.0', id: 'l', method: 'logging/setLevel', params: { level: 'debug' } });
    await up.send({ jsonrpc: '2.0', id: 3, method: 'tools/list' });
    await new Promise((r) => setImmediate(r));
    assert.deepEqual(got, [{ jsonrpc: '2.0', id: 'p', result: {} }, { jsonrpc: '2.0', id: 'l', result: {} }]);
    assert.deepEqual(t.sent.slice(1).map((m) => m.method), ['tools/list'], 'neither went to the server');
    assert.equal((t.sent[1].params as any)._meta['io.modelcontextprotocol/logLevel'], 'debug');
  });
});

describe('EraUpstream: pinned to 2026-07-28, a slow server', () => {
  it('is waited for past the probe timeout, not refused', async () => {
    const { t, up, got } = adapter('2026-07-28', { probeTimeoutMs: 10 });
    void up.send(INIT);
    await new Promise((r) => setTimeout(r, 40));
    assert.equal(got.length, 0, 'not refused while waiting');
    t.answer(DISCOVER_OK(t.sent[0].id));
    assert.equal(got[0].result.serverInfo.name, 's');
    assert.equal(up.era, 'modern');
  });
});
