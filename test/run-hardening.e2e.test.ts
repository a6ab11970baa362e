import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { pino } from 'pino';
import { AuditLog } from '../src/audit/index.js';
import { GatewayConfigSchema } from '../src/config/gateway.js';
import { Gateway } from '../src/gateway/server.js';
import { openSqliteState } from '../src/state/sqlite.js';
import { FIXTURES, LENIENT, RawSession, tempDir, testEnv, writePolicy } from './helpers/toolgate.js';

/**
 * Issue 9's attacks through the real CLI, against a lenient Python server (NFKC + strip() +
 * lower() on tool names, int() on numbers) that logs every tool it runs: nothing the policy
 * denies may appear in that log.
 */
const LENIENT_PY = join(FIXTURES, 'lenient.py');

interface Ran { ran: string; args: Record<string, unknown>; charged?: number }

function ranLog(file: string): Ran[] {
  try {
    return readFileSync(file, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l) as Ran);
  } catch {
    return [];
  }
}

function startRun(dir: string, policy: unknown, extra: string[] = []): RawSession {
  const file = writePolicy(dir, policy);
  return new RawSession(['-p', file, '--state', `sqlite:${join(dir, 'state.db')}`, ...extra, '--', 'python3', LENIENT_PY], testEnv(dir, { LENIENT_LOG: join(dir, 'ran.log') }));
}

const denial = (r: any) => r.result?._meta?.['dev.toolgate/decision'];

describe('hardening: names, case and numbers against a lenient Python server', () => {
  let dir: string;
  let raw: RawSession;
  const ran = () => ranLog(join(dir, 'ran.log'));
  let n = 0;
  const call = (name: string, args: Record<string, unknown> = {}) => raw.request(`c${n++}`, 'tools/call', { name, arguments: args });

  before(async () => {
    dir = tempDir();
    raw = startRun(dir, {
      version: '1',
      default: 'allow',
      hide: ['Danger*'],
      tools: {
        'Delete*': { action: 'deny' },
        delete_file: { action: 'deny' },
        charge: {
          deny_if: [{ conditions: [{ path: 'args.amount', op: 'gt', value: 10000 }] }],
          limits: [{ counter: 'spend', window: 'day', max: 20000, scope: 'server', increment_from: 'args.amount' }],
        },
      },
    });
    await raw.initialize();
  });
  after(() => raw.close());

  it('1. a tool name with a control or format character is refused with a denial the agent reads', async () => {
    const chars = ['\u001f', '\u001c', '\u001d', '\u001e', '\u0000', '\u0085', '\u0007', '\u009c', '\u200b', '\u200d', '\u2060', '\ufeff', '\u00ad', '\u2028', '\u2029', '\u180e', '\u061c', '\u3164'];
    for (const c of chars) {
      for (const name of [`delete_file${c}`, `${c}delete_file`, `echo${c}`]) {
        const r = await call(name);
        assert.equal(denial(r)?.rule, '(tool-name)', JSON.stringify(name));
        assert.match(r.result.content[0].text, /^\[POLICY DENIED\] .*control, format or invisible characters.*U\+/);
      }
    }
    // Spaces a trim drops, at either end (NBSP and friends included).
    for (const name of ['delete_file\u00a0', '\u3000delete_file', 'delete_file\u2007', 'delete_file ', '\tdelete_file', 'delete_file\u202f']) {
      assert.equal(denial(await call(name))?.rule, '(tool-name)', JSON.stringify(name));
    }
    assert.deepEqual(ran(), []);
    const ok = await call('echo');
    assert.equal(ok.result.content[0].text, 'echo ran');
  });

  it('1. a method with a control or format character is refused', async () => {
    for (const [i, method] of ['tools/call\u001f', '\u001ctools/call', 'tools/call\u00a0', 'tools/\u200bcall', 'tools/call\ufeff'].entries()) {
      const r = await raw.request(`m${i}`, method, { name: 'delete_file', arguments: {} });
      assert.equal(r.error?.code, -32601, JSON.stringify(method));
    }
    assert.ok(!ran().some((r) => r.ran === 'delete_file'));
  });

  it('2. globs and hide patterns hold whatever the case, before and after tools/list', async () => {
    for (const name of ['DELETEFILE', 'deletefile', 'dangerzone', 'DANGERZONE', 'Dangerzone']) {
      assert.ok(denial(await call(name)), name);
    }
    const list = await raw.request('list', 'tools/list', {});
    const names = list.result.tools.map((t: any) => t.name);
    assert.ok(!names.includes('DangerZone'));
    for (const name of ['dangerzone', 'dangerZONE', 'deletefile']) {
      const r = await call(name);
      assert.ok(denial(r), name);
      assert.doesNotMatch(r.result.content[0].text, /DangerZone/, 'a hidden tool is not confirmed');
    }
    assert.deepEqual(ran().filter((r) => r.ran !== 'echo'), []);
  });

  it('3. a number the server reads differently fails closed (deny_if matches)', async () => {
    for (const amount of ['99_999', '９９９９９', '٩٩٩٩٩', ' 99999', '+99999', '099999', '1e5', 99999]) {
      const r = await call('charge', { amount });
      assert.equal(denial(r)?.rule, '/tools/charge/deny_if/0', JSON.stringify(amount));
    }
    const ok = await call('charge', { amount: '500' });
    assert.equal(ok.result.content[0].text, 'charge ran');
    assert.deepEqual(ran().filter((r) => r.ran === 'charge').map((r) => r.charged), [500]);
  });
});

describe('hardening: a call written upstream keeps its reservation', () => {
  const LIMITED = { version: '1', default: 'allow', tools: { crash: { limits: [{ counter: 'crash', window: 'day', max: 3, scope: 'server' }] } } };

  it('4. an upstream that crashes after receiving the call does not hand the limit back (stdio)', async () => {
    const dir = tempDir();
    const answers: string[] = [];
    for (let i = 0; i < 6; i++) {
      const raw = startRun(dir, LIMITED);
      await raw.initialize();
      const r = await raw.request('x', 'tools/call', { name: 'crash', arguments: {} });
      answers.push(denial(r) ? 'denied' : r.error?.message ?? 'result');
      await raw.close();
    }
    assert.equal(ranLog(join(dir, 'ran.log')).filter((r) => r.ran === 'crash').length, 3);
    assert.deepEqual(answers.slice(3), ['denied', 'denied', 'denied']);
    for (const a of answers.slice(0, 3)) assert.match(a, /unavailable.*may have run/);
    const audit = new AuditLog(join(dir, 'audit.db'));
    assert.deepEqual(audit.query({ tool: 'crash', decision: 'allow' }).map((r) => r.outcome), ['unanswered', 'unanswered', 'unanswered']);
    audit.close();
  });


  /** A Streamable HTTP server that drops the connection of every tools/call it receives (a crash after receipt). */
  async function droppingServer(received: string[]): Promise<Server> {
    const server = createServer((req, res) => {
      if (req.method !== 'POST') { res.writeHead(req.method === 'DELETE' ? 200 : 405).end(); return; }
      let body = '';
      req.on('data', (d) => { body += d; });
      req.on('end', () => {
        const m = JSON.parse(body);
        if (m.id === undefined) { res.writeHead(202).end(); return; }
        if (m.method === 'tools/call') { received.push(m.params.name); req.socket.destroy(); return; }
        const result = m.method === 'initialize' ? { protocolVersion: m.params.protocolVersion, capabilities: { tools: {} }, serverInfo: { name: 'dropper', version: '1' } } : {};
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', id: m.id, result }));
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    return server;
  }

  it('4. an HTTP upstream that drops the connection after receiving the call does not hand the limit back', async () => {
    const received: string[] = [];
    const server = await droppingServer(received);
    const dir = tempDir();
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`;
    const raw = new RawSession(['-p', writePolicy(dir, { ...LIMITED, tools: { crash: { limits: [{ counter: 'crash', window: 'day', max: 1 }] } } }), '--upstream', url], testEnv(dir));
    try {
      await raw.initialize();
      const first = await raw.request('d1', 'tools/call', { name: 'crash', arguments: {} });
      assert.match(first.error?.message, /may have run/);
      const second = await raw.request('d2', 'tools/call', { name: 'crash', arguments: {} });
      assert.match(second.result?.content[0].text, /Limit reached/);
      assert.deepEqual(received, ['crash']);
    } finally {
      await raw.close();
      server.close();
    }
  });

  it('4. a call that never reached the upstream (connection refused) gives its reservation back', async () => {
    const server = await droppingServer([]);
    const port = (server.address() as AddressInfo).port;
    await new Promise((r) => server.close(r));
    const dir = tempDir();
    const raw = new RawSession(['-p', writePolicy(dir, { ...LIMITED, tools: { crash: { limits: [{ counter: 'crash', window: 'day', max: 1 }] } } }), '--upstream', `http://127.0.0.1:${port}/mcp`], testEnv(dir));
    for (const id of ['r1', 'r2', 'r3']) {
      const r = await raw.request(id, 'tools/call', { name: 'crash', arguments: {} });
      assert.match(r.error?.message, /could not be reached/, `${id}: the earlier calls were given back, so no limit denial`);
      assert.doesNotMatch(r.error.message, /may have run/);
    }
    await raw.close();
  });
});

describe('hardening: an upstream that writes lines that are not JSON-RPC messages', () => {
  it('drops them (null, numbers, strings, arrays, broken JSON) and still answers the call', async () => {
    const dir = tempDir();
    const raw = new RawSession(['-p', writePolicy(dir, { version: '1', default: 'allow' }), '--', process.execPath, LENIENT], testEnv(dir));
    try {
      raw.send({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } } });
      await raw.waitFor((m) => m?.id === 1);
      raw.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
      raw.send({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'junk', arguments: {} } });
      const answer = await raw.waitFor((m) => m?.id === 2);
      assert.equal(answer.result.content[0].text, 'junk done');
      assert.deepEqual((raw.lines as unknown[]).filter((m) => m === null || typeof m !== 'object' || Array.isArray(m)), [], 'nothing but messages reaches the client');
      assert.match(raw.stderr, /not a JSON-RPC message/);
    } finally {
      await raw.close();
    }
  });
});

describe('hardening: call_timeout', () => {
  it('8. a call the upstream never answers is cancelled upstream and answered with a timeout error; it counts', async () => {
    const dir = tempDir();
    const raw = startRun(dir, { version: '1', default: 'allow', tools: { hang: { limits: [{ counter: 'hang', window: 'day', max: 1 }] } } }, ['--call-timeout', '1s']);
    await raw.initialize();
    const r = await raw.request('h1', 'tools/call', { name: 'hang', arguments: {} });
    assert.equal(r.error?.code, -32001);
    assert.match(r.error.message, /timed out/);
    await until(() => ranLog(join(dir, 'ran.log')).some((e: any) => e.cancelled === 'h1'));
    assert.equal(ranLog(join(dir, 'ran.log')).filter((e) => e.ran === 'hang').length, 1);
    const again = await raw.request('h2', 'tools/call', { name: 'hang', arguments: {} });
    assert.match(again.result.content[0].text, /Limit reached/, 'a timed-out call was written upstream, so it counts');
    assert.deepEqual((await raw.request('alive', 'ping')).result, {});
    await raw.close();
    const audit = new AuditLog(join(dir, 'audit.db'));
    assert.deepEqual(audit.query({ tool: 'hang', decision: 'allow' }).map((row) => row.outcome), ['timeout']);
    audit.close();
  });

  it('8. progress from the server for the call starts the wait again', async () => {
    const dir = tempDir();
    const raw = startRun(dir, { version: '1', default: 'allow' }, ['--call-timeout', '2s']);
    await raw.initialize();
    // 10 progress notifications 300 ms apart: 3 s in all, longer than the timeout, never 2 s of silence.
    const r = await raw.request('t1', 'tools/call', { name: 'ticker', arguments: { count: 10, every_ms: 300 }, _meta: { progressToken: 'p1' } });
    assert.equal(r.result?.content[0].text, 'ticker done', JSON.stringify(r));
    assert.equal(raw.lines.filter((m: any) => m.method === 'notifications/progress').length, 10);
    await raw.close();
  });

  it('8. --call-timeout refuses what is not a positive duration', async () => {
    for (const bad of ['0s', '-1s', 'soon', '5']) {
      const raw = new RawSession(['--call-timeout', bad, '--', 'python3', LENIENT_PY], testEnv(tempDir()));
      assert.equal(await raw.exited, 2);
      assert.match(raw.stderr, /--call-timeout takes a positive duration/);
    }
  });
});

describe('hardening: call_timeout in the gateway', () => {
  it('8. a server\'s call_timeout (default 5m) applies to its sessions', async () => {
    assert.equal(GatewayConfigSchema.parse({ servers: { a: { command: 'x' } } }).servers.a.call_timeout, '5m');
    for (const bad of ['0s', '0m', '-1s', '5', 'soon']) {
      assert.equal(GatewayConfigSchema.safeParse({ servers: { a: { command: 'x', call_timeout: bad } } }).success, false, bad);
    }
    const dir = tempDir();
    const config = GatewayConfigSchema.parse({
      listen: '127.0.0.1:0',
      servers: { py: { command: 'python3', args: [LENIENT_PY], auth: 'none', call_timeout: '1s', env: { LENIENT_LOG: join(dir, 'ran.log') }, policy: writePolicy(dir, { version: '1', default: 'allow' }) } },
    });
    const state = openSqliteState(join(dir, 'state.db'));
    const audit = new AuditLog(join(dir, 'audit.db'));
    const gateway = new Gateway({ config, state, audit, log: pino({ level: 'silent' }) });
    const { port } = await gateway.start();
    const client = new Client({ name: 'timeout-test', version: '1' });
    try {
      await client.connect(new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${port}/mcp/py`)));
      await assert.rejects(client.callTool({ name: 'hang', arguments: {} }), (err: Error & { code?: number }) => err.code === -32001 && /timed out/.test(err.message));
      await until(() => ranLog(join(dir, 'ran.log')).some((e: any) => e.cancelled !== undefined));
      assert.equal(((await client.callTool({ name: 'echo', arguments: {} })).content as any)[0].text, 'echo ran', 'the session carries on');
    } finally {
      await client.close();
      await gateway.stop();
      audit.close();
      await state.close();
    }
  });
});

async function until(pred: () => boolean): Promise<void> {
  for (let i = 0; i < 200 && !pred(); i++) await new Promise((r) => setTimeout(r, 50));
  assert.ok(pred(), 'condition never held');
}
