import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { pino } from 'pino';
import { AuditLog } from '../src/audit/index.js';
import { GatewayConfigSchema } from '../src/config/gateway.js';
import { Gateway } from '../src/gateway/server.js';
import { openMemoryState } from '../src/state/memory.js';
import type { StateStore } from '../src/state/types.js';
import { FIXTURES, RawSession, tempDir, testEnv, writePolicy } from './helpers/toolgate.js';

/**
 * SPEC section 9 (odd casing, duplicate keys) and issue 23 item 13. A server written in Go reads
 * JSON with encoding/json: member names match case-insensitively, the last of several wins, and a
 * null `result` counts as absent (mcp-go: `if baseMessage.Result != nil` → a response). Fixture
 * test/fixtures/golike-server.mjs (copy from /tmp/attack2-tests/fixtures) reads messages that way
 * and logs every tool it runs. Toolgate judges `method`, `params.name`, `params.arguments` as
 * spelt; it must not forward a message whose other-cased members a server reads instead.
 */
const GOLIKE = join(FIXTURES, 'golike-server.mjs');
const POLICY = {
  version: '1', default: 'allow',
  tools: {
    delete_all: { action: 'deny' },
    echo: { deny_if: [{ conditions: [{ path: 'args.path', op: 'starts_with', value: '/etc' }], on_deny: 'no /etc' }] },
  },
};

function ran(file: string): { ran: string; id?: unknown; args?: { path?: string } }[] {
  try {
    return readFileSync(file, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l));
  } catch {
    return [];
  }
}

describe('case-folded JSON-RPC members (a Go server reads Method, Params, Name as method, params, name)', () => {
  let dir: string;
  let raw: RawSession;
  const log = () => ran(join(dir, 'ran.log'));

  before(async () => {
    dir = tempDir();
    raw = new RawSession(['-p', writePolicy(dir, POLICY), '--state', 'memory:', '--', process.execPath, GOLIKE], testEnv(dir, { LENIENT_RAN: join(dir, 'ran.log'), GOLIKE_SEEN: join(dir, 'seen.log') }));
    await raw.initialize();
  });
  after(() => raw.close());

  const attacks: [string, Record<string, unknown>][] = [
    ['"Method" with a null result (forwarded as a client response today)', { jsonrpc: '2.0', id: 'a1', Method: 'tools/call', params: { name: 'delete_all', arguments: {} }, result: null }],
    ['"METHOD" with a null error', { jsonrpc: '2.0', id: 'a2', METHOD: 'tools/call', params: { name: 'delete_all', arguments: {} }, error: null }],
    ['method ping, then Method tools/call', { jsonrpc: '2.0', id: 'a3', method: 'ping', Method: 'tools/call', params: { name: 'delete_all', arguments: {} } }],
    ['params judged, Params run', { jsonrpc: '2.0', id: 'a4', method: 'tools/call', params: { name: 'echo', arguments: {} }, Params: { name: 'delete_all', arguments: {} } }],
    ['params.name judged, params.Name run', { jsonrpc: '2.0', id: 'a5', method: 'tools/call', params: { name: 'echo', Name: 'delete_all', arguments: {} } }],
    ['arguments judged, Arguments run', { jsonrpc: '2.0', id: 'a6', method: 'tools/call', params: { name: 'echo', arguments: { path: '/tmp' }, Arguments: { path: '/etc/shadow' } } }],
    ['args.path judged, args.Path bound to the struct field', { jsonrpc: '2.0', id: 'a7', method: 'tools/call', params: { name: 'echo', arguments: { path: '/tmp', Path: '/etc/shadow' } } }],
  ];

  for (const [what, message] of attacks) {
    it(`${what}: refused, nothing the policy denies runs`, async () => {
      raw.send(message);
      const answer = await raw.response(message.id);
      assert.ok(answer.error?.code === -32600 || answer.error?.code === -32602, JSON.stringify(answer));
      await raw.request(`${String(message.id)}-ping`, 'ping');
      const bad = log().filter((r) => r.id === message.id).filter((r) => r.ran === 'delete_all' || r.args?.path?.startsWith('/etc'));
      assert.deepEqual(bad, [], `the server ran a denied call: ${JSON.stringify(bad)}`);
    });
  }

  it('what the server receives is exactly what was judged: unknown members dropped, _meta and task unchanged', async () => {
    const meta = { progressToken: 'p', 'example.com/x': { Y: 1, y: 2 } };
    raw.send({ jsonrpc: '2.0', id: 'x1', method: 'tools/call', params: { name: 'echo', arguments: { path: '/tmp' }, _meta: meta, task: { ttl: 1000 }, Extra: 1 }, extra: { Method: 'tools/call' } });
    assert.ok((await raw.response('x1')).result);
    const seen = readFileSync(join(dir, 'seen.log'), 'utf8').split('\n').filter((l) => l.includes('"x1"')).map((l) => JSON.parse(l));
    assert.deepEqual(seen, [{ jsonrpc: '2.0', id: 'x1', method: 'tools/call', params: { name: 'echo', arguments: { path: '/tmp' }, _meta: meta, task: { ttl: 1000 } } }]);
  });

  it('a client answer to no open request of the server is not forwarded', async () => {
    raw.send({ jsonrpc: '2.0', id: 'x2', result: { content: [] }, method_: 'tools/call', params: { name: 'delete_all' } });
    await raw.request('x2-ping', 'ping');
    assert.deepEqual(readFileSync(join(dir, 'seen.log'), 'utf8').split('\n').filter((l) => l.includes('"x2"')), []);
  });
});

describe('case-folded JSON-RPC members over Streamable HTTP (toolgate serve)', () => {
  let dir: string;
  let gateway: Gateway;
  let state: StateStore;
  let audit: AuditLog;
  let base: string;
  let session: Record<string, string>;
  const log = () => ran(join(dir, 'ran.log'));

  async function post(body: unknown, headers: Record<string, string> = {}): Promise<{ status: number; text: string; headers: Headers }> {
    const res = await fetch(`${base}/mcp/golike`, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers }, body: JSON.stringify(body) });
    return { status: res.status, text: await res.text(), headers: res.headers };
  }

  before(async () => {
    dir = tempDir();
    const config = GatewayConfigSchema.parse({
      listen: '127.0.0.1:0',
      servers: { golike: { command: process.execPath, args: [GOLIKE], auth: 'none', env: { LENIENT_RAN: join(dir, 'ran.log'), GOLIKE_SEEN: join(dir, 'seen.log') }, policy: writePolicy(dir, POLICY) } },
    });
    state = openMemoryState();
    audit = new AuditLog(join(dir, 'audit.db'));
    gateway = new Gateway({ config, state, audit, log: pino({ level: 'silent' }) });
    base = `http://127.0.0.1:${(await gateway.start()).port}`;
    const opened = await post({ jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } } });
    assert.equal(opened.status, 200, opened.text);
    session = { 'mcp-session-id': opened.headers.get('mcp-session-id')!, 'mcp-protocol-version': '2025-06-18' };
    await post({ jsonrpc: '2.0', method: 'notifications/initialized' }, session);
  });
  after(async () => {
    await gateway.stop();
    audit.close();
    await state.close();
  });

  it('"Method": "tools/call" with a null result is not forwarded as a client response', async () => {
    await post({ jsonrpc: '2.0', id: 'h1', Method: 'tools/call', params: { name: 'delete_all', arguments: {} }, result: null }, session);
    await post({ jsonrpc: '2.0', id: 'h1-ping', method: 'ping' }, session);
    assert.deepEqual(log().filter((r) => r.id === 'h1' && r.ran === 'delete_all'), []);
  });

  it('params.Name beside the judged params.name is refused (-32602), not forwarded', async () => {
    const answer = await post({ jsonrpc: '2.0', id: 'h3', method: 'tools/call', params: { name: 'echo', Name: 'delete_all', arguments: {} } }, session);
    assert.equal(JSON.parse(answer.text).error?.code, -32602, answer.text);
    assert.deepEqual(log().filter((r) => r.id === 'h3' && r.ran === 'delete_all'), []);
  });

  it('what the server receives is exactly what was judged: unknown members dropped, _meta unchanged', async () => {
    const meta = { progressToken: 'p', 'example.com/x': { Y: 1, y: 2 } };
    const answer = await post({ jsonrpc: '2.0', id: 'h4', method: 'tools/call', params: { name: 'echo', arguments: { path: '/tmp' }, _meta: meta, Extra: 1 }, extra: true }, session);
    assert.equal(answer.status, 200, answer.text);
    const seen = readFileSync(join(dir, 'seen.log'), 'utf8').split('\n').filter((l) => l.includes('"h4"')).map((l) => JSON.parse(l));
    assert.deepEqual(seen, [{ jsonrpc: '2.0', id: 'h4', method: 'tools/call', params: { name: 'echo', arguments: { path: '/tmp' }, _meta: meta } }]);
  });

  it('a client answer to no open request of the server is not forwarded', async () => {
    const answer = await post({ jsonrpc: '2.0', id: 'h5', result: { content: [] }, params: { name: 'delete_all' } }, session);
    assert.equal(answer.status, 202, answer.text);
    await post({ jsonrpc: '2.0', id: 'h5-ping', method: 'ping' }, session);
    assert.deepEqual(readFileSync(join(dir, 'seen.log'), 'utf8').split('\n').filter((l) => l.includes('"h5"')), []);
  });

  it('legacy SSE: params.Name and args.Path are not forwarded either (the SDK refuses unknown top-level keys, not nested ones)', async () => {
    const ac = new AbortController();
    const res = await fetch(`${base}/sse/golike`, { headers: { accept: 'text/event-stream' }, signal: ac.signal });
    const reader = res.body!.getReader();
    const decoder = new TextDecoder();
    let buf = '';
    let endpoint = '';
    const events: { id?: unknown }[] = [];
    let wake = () => {};
    void (async () => {
      for (;;) {
        const { done, value } = await reader.read().catch(() => ({ done: true, value: undefined }));
        if (done) return;
        buf += decoder.decode(value, { stream: true });
        let end;
        while ((end = buf.indexOf('\n\n')) >= 0) {
          const event = buf.slice(0, end);
          buf = buf.slice(end + 2);
          const data = event.split('\n').filter((l) => l.startsWith('data: ')).map((l) => l.slice(6)).join('\n');
          if (/^event: endpoint$/m.test(event)) endpoint = data;
          else if (data) events.push(JSON.parse(data));
          wake();
        }
      }
    })();
    const answered = async (id: string) => { while (!events.some((e) => e.id === id)) await new Promise<void>((r) => { wake = r; }); };
    while (!endpoint) await new Promise<void>((r) => { wake = r; });
    const send = (m: unknown) => fetch(new URL(endpoint, base), { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(m) }).then((r) => r.arrayBuffer());
    try {
      await send({ jsonrpc: '2.0', id: 's0', method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } } });
      await answered('s0');
      await send({ jsonrpc: '2.0', method: 'notifications/initialized' });
      await send({ jsonrpc: '2.0', id: 's1', method: 'tools/call', params: { name: 'echo', Name: 'delete_all', arguments: {} } });
      await send({ jsonrpc: '2.0', id: 's2', method: 'tools/call', params: { name: 'echo', arguments: { path: '/tmp', Path: '/etc/shadow' } } });
      await send({ jsonrpc: '2.0', id: 's3', method: 'tools/call', params: { name: 'echo', arguments: { path: '/tmp' }, Extra: 1 } });
      await answered('s1');
      await answered('s2');
      await answered('s3');
      const seen = readFileSync(join(dir, 'seen.log'), 'utf8').split('\n').filter((l) => l.includes('"s3"')).map((l) => JSON.parse(l));
      assert.deepEqual(seen, [{ jsonrpc: '2.0', id: 's3', method: 'tools/call', params: { name: 'echo', arguments: { path: '/tmp' } } }]);
      const bad = log().filter((r) => (r.id === 's1' || r.id === 's2') && (r.ran === 'delete_all' || r.args?.path?.startsWith('/etc')));
      assert.deepEqual(bad, [], 'the server ran a denied call');
    } finally {
      ac.abort();
    }
  });

  it('"Params" beside the judged params is not forwarded', async () => {
    await post({ jsonrpc: '2.0', id: 'h2', method: 'tools/call', params: { name: 'echo', arguments: {} }, Params: { name: 'delete_all', arguments: {} } }, session);
    assert.deepEqual(log().filter((r) => r.id === 'h2' && r.ran === 'delete_all'), []);
  });
});
