import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { SSEClientTransport } from '@modelcontextprotocol/sdk/client/sse.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { pino } from 'pino';
import { z } from 'zod';
import { AuditLog } from '../src/audit/index.js';
import { GatewayConfigSchema, parseGatewayConfig } from '../src/config/gateway.js';
import { Gateway } from '../src/gateway/server.js';
import { openMemoryState } from '../src/state/memory.js';
import type { StateStore } from '../src/state/types.js';
import { cli, FIXTURES, RawSession, tempDir, testEnv, writePolicy } from './helpers/toolgate.js';

/**
 * Only the methods the MCP revision in use defines are forwarded, plus the operator's
 * passthrough_methods. The upstream is a lenient server (test/fixtures/lenient.py) that reads
 * `tools.call`, `tool/call`, `Tools/Call/` … as tools/call and logs every tool it runs: no
 * spelling may get a denied tool run.
 */
const LENIENT_PY = join(FIXTURES, 'lenient.py');
const POLICY = { version: '1', default: 'allow', tools: { delete_file: { action: 'deny' } } };

/** Spellings a lenient server may take for tools/call. */
const NEAR = [
  'tools/call/', 'tools.call', 'tool/call', 'Tools/Call', 'TOOLS/CALL', 'tools/call ', ' tools/call', 'tools//call',
  'tools_call', 'tools-call', 'tools:call', '/tools/call', 'tools/\u200bcall', 'tools/call\u00a0', 'tools/ｃａｌｌ',
  'tооls/call', 'tools\\call', 'Tool.Call/',
];

function ran(file: string): string[] {
  try {
    return readFileSync(file, 'utf8').split('\n').filter(Boolean).map((l) => (JSON.parse(l) as { ran?: string }).ran ?? '').filter(Boolean);
  } catch {
    return [];
  }
}

describe('methods over stdio (toolgate run)', () => {
  let dir: string;
  let raw: RawSession;
  const log = () => ran(join(dir, 'ran.log'));

  before(async () => {
    dir = tempDir();
    raw = new RawSession(['-p', writePolicy(dir, POLICY), '--state', 'memory:', '--passthrough-method', 'x-vendor/stats', '--', 'python3', LENIENT_PY], testEnv(dir, { LENIENT_LOG: join(dir, 'ran.log') }));
    await raw.initialize(); // MCP 2025-06-18
  });
  after(() => raw.close());

  it('without toolgate, the lenient server runs a near-spelling of tools/call (the attack is real)', () => {
    const spellings = ['tools/call/', 'tools.call', 'tool/call', 'Tools/Call', 'tools_call', 'tools/call\u00a0'];
    const lines = spellings.map((method, i) => JSON.stringify({ jsonrpc: '2.0', id: i, method, params: { name: 'delete_file', arguments: {} } })).join('\n');
    const file = join(dir, 'direct.log');
    execFileSync('python3', [LENIENT_PY], { input: `${lines}\n`, env: { ...process.env, LENIENT_LOG: file } });
    assert.equal(ran(file).filter((t) => t === 'delete_file').length, spellings.length);
  });

  for (const method of NEAR) {
    it(`${JSON.stringify(method)} is answered -32601 Method not found and never forwarded`, async () => {
      const id = `near-${method}`;
      const r = await raw.request(id, method, { name: 'delete_file', arguments: {} });
      assert.equal(r.error?.code, -32601, JSON.stringify(r));
      raw.send({ jsonrpc: '2.0', method, params: { name: 'delete_file', arguments: {} } });
      await raw.request(`${id}-ping`, 'ping');
      assert.deepEqual(log(), [], 'the server ran nothing');
    });
  }

  it('the real tools/call is judged: denied by policy, and an allowed one runs', async () => {
    const denied = await raw.request('real-1', 'tools/call', { name: 'delete_file', arguments: {} });
    assert.match(denied.result.content[0].text, /^\[POLICY DENIED\]/);
    const ok = await raw.request('real-2', 'tools/call', { name: 'echo', arguments: {} });
    assert.equal(ok.result.content[0].text, 'echo ran');
    assert.deepEqual(log(), ['echo']);
  });

  it('methods of another revision, or of none, are refused; --passthrough-method forwards the one it names', async () => {
    const tasks = await raw.request('t1', 'tasks/list', {});
    assert.equal(tasks.error?.code, -32601, 'tasks/list is MCP 2025-11-25, not 2025-06-18');
    assert.equal((await raw.request('t2', 'sampling/createMessage', {})).error?.code, -32601, 'a server→client request from the client');
    assert.equal((await raw.request('t3', 'x-vendor/other', {})).error?.code, -32601);
    assert.deepEqual((await raw.request('t4', 'x-vendor/stats', {})).result, {}, 'the operator passed it through');
    assert.deepEqual((await raw.request('t5', 'resources/list', {})).result, {});
  });

  it('a passthrough method that imitates tools/call is refused at start (exit 2)', async () => {
    for (const method of ['tools.call', 'tools/call', 'call_tool', 'Tools/List']) {
      const r = await cli(['run', '--passthrough-method', method, '--', 'python3', LENIENT_PY], testEnv(dir));
      assert.equal(r.code, 2, `${method}: ${r.stderr}`);
      assert.match(r.stderr, /--passthrough-method .*(tools\/call|tools\/list)/);
    }
  });
});

describe('methods over HTTP (toolgate serve): Streamable HTTP and SSE', () => {
  let dir: string;
  let gateway: Gateway;
  let state: StateStore;
  let audit: AuditLog;
  let base: string;
  const log = () => ran(join(dir, 'ran.log'));

  before(async () => {
    dir = tempDir();
    const config = GatewayConfigSchema.parse({
      listen: '127.0.0.1:0',
      servers: {
        lenient: { command: 'python3', args: [LENIENT_PY], auth: 'none', env: { LENIENT_LOG: join(dir, 'ran.log') }, policy: writePolicy(dir, POLICY), passthrough_methods: ['x-vendor/stats'] },
      },
    });
    state = openMemoryState();
    audit = new AuditLog(join(dir, 'audit.db'));
    gateway = new Gateway({ config, state, audit, log: pino({ level: 'silent' }) });
    base = `http://127.0.0.1:${(await gateway.start()).port}`;
  });
  after(async () => {
    await gateway.stop();
    audit.close();
    await state.close();
  });

  const transports: [string, () => Transport][] = [
    ['Streamable HTTP', () => new StreamableHTTPClientTransport(new URL(`${base}/mcp/lenient`))],
    ['SSE', () => new SSEClientTransport(new URL(`${base}/sse/lenient`))],
  ];
  for (const [label, transport] of transports) {
    it(`${label}: every near-spelling of tools/call is -32601 and never runs; passthrough_methods forwards only its own`, async () => {
      const client = new Client({ name: 'methods-test', version: '1' });
      await client.connect(transport());
      try {
        for (const method of NEAR) {
          await assert.rejects(client.request({ method, params: { name: 'delete_file', arguments: {} } }, z.any()), (err: { code?: number }) => err.code === -32601, JSON.stringify(method));
          await client.notification({ method, params: { name: 'delete_file', arguments: {} } });
        }
        assert.deepEqual(await client.request({ method: 'x-vendor/stats', params: {} }, z.any()), {});
        await assert.rejects(client.request({ method: 'x-vendor/other', params: {} }, z.any()), (err: { code?: number }) => err.code === -32601);
        // The SDK negotiates 2025-11-25, whose tasks methods are forwarded.
        assert.deepEqual(await client.request({ method: 'tasks/list', params: {} }, z.any()), {});
        assert.match(JSON.stringify(await client.callTool({ name: 'delete_file', arguments: {} })), /POLICY DENIED/);
        await client.ping();
        assert.deepEqual(log(), [], 'the server ran nothing');
      } finally {
        await client.close();
      }
    });
  }

  it('a configuration whose passthrough_methods imitate a policed method is refused', () => {
    for (const method of ['tools/call/', 'tool.call', 'TOOLS/LIST', 'tools/call']) {
      const result = parseGatewayConfig(`servers:\n  s:\n    command: x\n    passthrough_methods: [${JSON.stringify(method)}]\n`, dir);
      assert.equal(result.ok, false, method);
      assert.match(JSON.stringify(result), /lenient server/, method);
    }
    assert.equal(parseGatewayConfig('servers:\n  s:\n    command: x\n    passthrough_methods: [x-vendor/stats]\n', dir).ok, true);
  });
});
