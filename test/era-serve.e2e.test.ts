// Issue 25 items 1-2: `toolgate serve` for SDK v2 clients (MCP 2026-07-28, auto and pinned):
// stateless POSTs on the same URL as legacy sessions, the grant checked on every request, the
// standard headers checked against the body before anything is decided or forwarded.
import assert from 'node:assert/strict';
import { request as httpRequest } from 'node:http';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { pino } from 'pino';
import { AuditLog } from '../src/audit/index.js';
import { GatewayConfigSchema } from '../src/config/gateway.js';
import { Gateway } from '../src/gateway/server.js';
import { Grants } from '../src/grants/grants.js';
import { openSqliteState } from '../src/state/sqlite.js';
import type { StateStore } from '../src/state/types.js';
import { cli, RECORDING, recorded, until } from './helpers/approvals.js';
import { MODES, modernHttp } from './helpers/modern.js';
import { denialText, EVERYTHING, FIXTURES, tempDir, writePolicy } from './helpers/toolgate.js';
import { Client as LegacyClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as LegacyTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

const POLICY = {
  version: '1', default: 'deny',
  tools: {
    read_note: {},
    write_note: { limits: [{ counter: 'writes', window: 'hour', max: 1, scope: 'grant' }] },
    delete_file: { action: 'deny', on_deny: 'Deleting is not allowed here.' },
    run_command: { action: 'approve' },
  },
};
const ENVELOPE = {
  'io.modelcontextprotocol/protocolVersion': '2026-07-28',
  'io.modelcontextprotocol/clientCapabilities': {},
  'io.modelcontextprotocol/clientInfo': { name: 'raw-modern', version: '1' },
};

describe('toolgate serve: SDK v2 clients (2026-07-28) against legacy servers', () => {
  let dir: string;
  let gateway: Gateway;
  let state: StateStore;
  let audit: AuditLog;
  let base: string;
  let record: string;
  let paramRecord: string;
  const tokens: Record<string, string> = {};
  let grants: Grants;

  before(async () => {
    dir = tempDir();
    record = join(dir, 'calls.jsonl');
    paramRecord = join(dir, 'param-calls.jsonl');
    const config = GatewayConfigSchema.parse({
      listen: '127.0.0.1:0',
      sessions: { idle_timeout: '15m' },
      servers: {
        rec: { command: process.execPath, args: [RECORDING], env: { RECORD_FILE: record }, policy: writePolicy(dir, POLICY) },
        params: { command: process.execPath, args: [join(FIXTURES, 'param-header-server.mjs')], env: { RECORD_FILE: paramRecord }, policy: writePolicy(dir, { version: '1', default: 'allow' }, 'params.json') },
        everything: { command: process.execPath, args: [EVERYTHING], policy: writePolicy(dir, { version: '1', default: 'allow', tools: { 'get-sum': { action: 'deny' } } }, 'all.json') },
      },
    });
    state = openSqliteState(join(dir, 'state.db'));
    audit = new AuditLog(join(dir, 'audit.db'));
    gateway = new Gateway({ config, state, audit, log: pino({ level: 'silent' }) });
    base = `http://127.0.0.1:${(await gateway.start()).port}`;
    grants = new Grants(state.grants);
    for (const label of ['auto', 'pinned', 'legacy', 'raw', 'other']) tokens[label] = (await grants.create({ server: 'rec', label })).token;
    tokens.everything = (await grants.create({ server: 'everything', label: 'e' })).token;
    tokens.params = (await grants.create({ server: 'params', label: 'p' })).token;
  });

  after(async () => {
    await gateway.stop();
    audit.close();
    await state.close();
  });

  const stateArgs = () => ['--state', `sqlite:${join(dir, 'state.db')}`, '--audit', join(dir, 'audit.db')];
  const calls = () => recorded(record).map((c) => c.tool);

  for (const mode of MODES) {
    it(`${mode}: discover, allowed, denied (reason readable), limited, approved from the CLI; audit rows`, async () => {
      const client = await modernHttp(mode, `${base}/mcp/rec`, tokens[mode]);
      try {
        assert.equal(client.getNegotiatedProtocolVersion(), '2026-07-28');
        assert.equal(client.getServerVersion()?.name, 'toolgate');
        assert.deepEqual((await client.listTools()).tools.map((t) => t.name).sort(), ['read_note', 'run_command', 'write_note']);
        const before = calls().length;
        assert.deepEqual((await client.callTool({ name: 'read_note', arguments: { name: 'a' } })).content, [{ type: 'text', text: 'read_note done' }]);
        const denied = await client.callTool({ name: 'delete_file', arguments: { path: '/x' } });
        assert.equal(denialText(denied), '[POLICY DENIED] Deleting is not allowed here.');
        assert.equal(denialText(await client.callTool({ name: 'write_note', arguments: { name: 'n', text: 't' } })), undefined);
        assert.match(denialText(await client.callTool({ name: 'write_note', arguments: { name: 'n', text: 't' } })) ?? '', /Limit reached/);

        const held = client.callTool({ name: 'run_command', arguments: { command: mode } }, { timeout: 60_000 });
        const pending = await until(async () => {
          const r = await cli(dir, ['approvals', 'list', '--json', '--state', `sqlite:${join(dir, 'state.db')}`]);
          return (JSON.parse(r.stdout || '[]') as any[]).find((a) => a.grant === mode);
        }, 'the held call to be listed');
        assert.equal((await cli(dir, ['approvals', 'approve', pending.id, '--state', `sqlite:${join(dir, 'state.db')}`])).code, 0);
        assert.deepEqual((await held).content, [{ type: 'text', text: 'run_command done' }]);
        assert.deepEqual(calls().slice(before), ['read_note', 'write_note', 'run_command']);

        const r = await cli(dir, ['audit', '--json', '--grant', mode, ...stateArgs()]);
        const rows = JSON.parse(r.stdout) as any[];
        const deny = rows.find((x) => x.tool === 'delete_file');
        assert.equal(deny.decision, 'deny');
        assert.equal(deny.client, 'modern-test');
        assert.match(deny.session, /^modern-/, 'the internal session of the grant');
      } finally {
        await client.close();
      }
    });

    it(`${mode}: server-everything`, async () => {
      const client = await modernHttp(mode, `${base}/mcp/everything`, tokens.everything);
      try {
        assert.match(JSON.stringify((await client.callTool({ name: 'echo', arguments: { message: 'hi' } })).content), /hi/);
        assert.match(denialText(await client.callTool({ name: 'get-sum', arguments: { a: 1, b: 2 } })) ?? '', /POLICY DENIED/);
        // Progress comes back to the request it is about, with the client's own token.
        const progress: number[] = [];
        const long = await client.callTool({ name: 'trigger-long-running-operation', arguments: { duration: 1, steps: 2 } }, { onprogress: (p: { progress: number }) => progress.push(p.progress) });
        assert.equal(long.isError, undefined);
        // (the server may send its last progress after its result: at least the first one comes back)
        assert.equal(progress[0], 1);
      } finally {
        await client.close();
      }
    });
  }

  it('the SDK v2 client in legacy mode gets a 2025 session as before', async () => {
    const client = await modernHttp('legacy', `${base}/mcp/rec`, tokens.legacy);
    try {
      assert.equal(client.getNegotiatedProtocolVersion(), '2025-11-25');
      assert.equal(denialText(await client.callTool({ name: 'delete_file', arguments: { path: '/x' } })), '[POLICY DENIED] Deleting is not allowed here.');
    } finally {
      await client.close();
    }
  });

  /** A raw POST (node:http, so headers can be repeated); its status and parsed body. */
  function post(body: unknown, headers: Record<string, string | string[]>, token = tokens.raw, server = 'rec'): Promise<{ status: number; body: any }> {
    return new Promise((resolve, reject) => {
      const req = httpRequest(`${base}/mcp/${server}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', authorization: `Bearer ${token}`, ...headers },
      }, (res) => {
        let text = '';
        res.on('data', (d: Buffer) => { text += d.toString(); });
        res.on('end', () => {
          const data = /^data: (.*)$/m.exec(text)?.[1];
          resolve({ status: res.statusCode!, body: text ? JSON.parse(res.headers['content-type']?.startsWith('text/event-stream') ? data! : text) : undefined });
        });
      });
      req.on('error', reject);
      req.end(JSON.stringify(body));
    });
  }
  const callBody = (name: string, id = 1) => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: { name: 'x', text: 'y' }, _meta: ENVELOPE } });
  const std = (method: string, name?: string) => ({ 'mcp-protocol-version': '2026-07-28', 'mcp-method': method, ...(name === undefined ? {} : { 'mcp-name': name }) });

  it('a header naming one tool and a body calling another never reaches the upstream (nor does any lenient reading)', async () => {
    const before = calls().length;
    const cases: [string, Record<string, string | string[]>, unknown][] = [
      ['another tool', std('tools/call', 'read_note'), callBody('write_note')],
      ['case', std('tools/call', 'Write_note'), callBody('write_note')],
      ['comma-joined', std('tools/call', 'write_note, read_note'), callBody('write_note')],
      ['repeated Mcp-Name', { ...std('tools/call'), 'mcp-name': ['write_note', 'write_note'] }, callBody('write_note')],
      ['repeated Mcp-Method', { ...std('tools/call', 'write_note'), 'mcp-method': ['tools/call', 'tools/call'] }, callBody('write_note')],
      ['missing Mcp-Name', std('tools/call'), callBody('write_note')],
      ['missing Mcp-Method', { 'mcp-protocol-version': '2026-07-28', 'mcp-name': 'write_note' }, callBody('write_note')],
      ['missing MCP-Protocol-Version', { 'mcp-method': 'tools/call', 'mcp-name': 'write_note' }, callBody('write_note')],
      ['another method', std('tools/list', 'write_note'), callBody('write_note')],
      ['another version', { ...std('tools/call', 'write_note'), 'mcp-protocol-version': '2025-11-25' }, callBody('write_note')],
      // A sentinel value is read by what it decodes to (as SDK v2 servers read it): another tool's name, or no canonical Base64, is refused.
      ['Base64 of another tool', std('tools/call', `=?base64?${Buffer.from('read_note').toString('base64')}?=`), callBody('write_note')],
      ['Base64 that is not canonical', std('tools/call', `=?base64?${Buffer.from('write_note').toString('base64').replace(/=+$/u, '')}?=`), callBody('write_note')],
      ['Mcp-Name on a method that names nothing', std('tools/list', 'write_note'), { jsonrpc: '2.0', id: 1, method: 'tools/list', params: { _meta: ENVELOPE } }],
    ];
    for (const [what, headers, body] of cases) {
      const r = await post(body, headers);
      assert.equal(r.status, 400, what);
      assert.equal(r.body.error.code, -32020, `${what}: ${JSON.stringify(r.body)}`);
      assert.equal(r.body.id, 1, what);
    }
    assert.deepEqual(calls().slice(before), [], 'nothing reached the upstream');
    // The same request with exact headers runs.
    const ok = await post(callBody('write_note'), std('tools/call', 'write_note'));
    assert.equal(ok.status, 200);
    assert.equal(ok.body.result.resultType, 'complete');
    // So does the exact name in the Base64 sentinel form, which a client may use for any value (SEP-2243).
    const encoded = await post(callBody('read_note'), std('tools/call', `=?base64?${Buffer.from('read_note').toString('base64')}?=`));
    assert.equal(encoded.status, 200, JSON.stringify(encoded.body));
    assert.deepEqual(calls().slice(before), ['write_note', 'read_note']);
  });

  it('a batch holding a 2026-07-28 request is refused whole; notifications get 202, or -32020 when their Mcp-Method differs', async () => {
    const batch = await post([callBody('write_note'), { jsonrpc: '2.0', id: 2, method: 'ping' }], std('tools/call', 'write_note'));
    assert.deepEqual([batch.status, batch.body.error.code], [400, -32600]);
    const cancel = { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 99, _meta: ENVELOPE } };
    assert.equal((await post(cancel, { 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'notifications/cancelled' })).status, 202);
    const wrong = await post(cancel, { 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'notifications/progress' });
    assert.deepEqual([wrong.status, wrong.body.error.code], [400, -32020]);
  });

  it('a legacy client and a modern one on the same URL at once, each judged', async () => {
    const legacy = new LegacyClient({ name: 'legacy-test', version: '1' });
    await legacy.connect(new LegacyTransport(new URL(`${base}/mcp/rec`), { requestInit: { headers: { authorization: `Bearer ${tokens.raw}` } } }));
    const modern = await modernHttp('auto', `${base}/mcp/rec`, tokens.raw);
    try {
      const [l, m] = await Promise.all([
        legacy.callTool({ name: 'delete_file', arguments: { path: 'l' } }),
        modern.callTool({ name: 'delete_file', arguments: { path: 'm' } }),
      ]);
      assert.equal(denialText(l), '[POLICY DENIED] Deleting is not allowed here.');
      assert.equal(denialText(m), '[POLICY DENIED] Deleting is not allowed here.');
      assert.equal((l as any).resultType, undefined, 'nothing modern on the legacy session');
      const rows = (JSON.parse((await cli(dir, ['audit', '--json', '--grant', 'raw', '--tool', 'delete_file', ...stateArgs()])).stdout) as any[]);
      const sessions = new Map(rows.map((r) => [r.client, r.session]));
      assert.ok(sessions.get('legacy-test') && !String(sessions.get('legacy-test')).startsWith('modern-'), 'the legacy client has its own session');
      assert.match(String(sessions.get('modern-test')), /^modern-/);
    } finally {
      await legacy.close();
      await modern.close();
    }
  });

  it('Mcp-Param-* headers must be exactly what the arguments say (x-mcp-header), or the call never reaches the upstream', async () => {
    const ran = () => recorded(paramRecord).map((c) => c.args);
    // The SDK v2 client sends them itself, from the tool's schema.
    const client = await modernHttp('pinned', `${base}/mcp/params`, tokens.params);
    try {
      await client.listTools();
      assert.deepEqual((await client.callTool({ name: 'locate', arguments: { region: 'eu west', count: 3, query: 'q' } })).content, [{ type: 'text', text: 'locate done' }]);
    } finally {
      await client.close();
    }
    assert.deepEqual(ran(), [{ region: 'eu west', count: 3, query: 'q' }]);
    const body = { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'locate', arguments: { region: 'eu', count: 3 }, _meta: ENVELOPE } };
    const headers = { ...std('tools/call', 'locate'), 'mcp-param-region': 'eu', 'mcp-param-count': '3' };
    const cases: [string, Record<string, string | string[]>][] = [
      ['another value', { ...headers, 'mcp-param-region': 'us' }],
      ['case', { ...headers, 'mcp-param-region': 'EU' }],
      ['missing', { ...std('tools/call', 'locate'), 'mcp-param-count': '3' }],
      ['repeated', { ...headers, 'mcp-param-region': ['eu', 'eu'] }],
      ['a number spelt otherwise', { ...headers, 'mcp-param-count': '3.0' }],
      ['undeclared', { ...headers, 'mcp-param-query': 'x' }],
    ];
    for (const [what, h] of cases) {
      const r = await post(body, h, tokens.params, 'params');
      assert.deepEqual([r.status, r.body.error?.code], [400, -32020], `${what}: ${JSON.stringify(r.body)}`);
    }
    assert.equal(ran().length, 1, 'none of them reached the upstream');
    const ok = await post(body, headers, tokens.params, 'params');
    assert.equal(ok.body.result.content[0].text, 'locate done');
    assert.equal(ran().length, 2);
  });

  it('a client that hangs up on a held call: nothing runs; the approval waits for the same call made again', async () => {
    const body = { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'run_command', arguments: { command: 'hang-up' }, _meta: ENVELOPE } };
    const req = httpRequest(`${base}/mcp/rec`, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', authorization: `Bearer ${tokens.raw}`, ...std('tools/call', 'run_command') } });
    req.on('error', () => {});
    req.end(JSON.stringify(body));
    const state = ['--state', `sqlite:${join(dir, 'state.db')}`];
    const pending = await until(async () => (JSON.parse((await cli(dir, ['approvals', 'list', '--json', ...state])).stdout || '[]') as any[]).find((a) => a.args?.command === 'hang-up'), 'the held call');
    const internal = () => [...(gateway as any).sessions.values()].find((l: any) => l.id.startsWith('modern-') && l.grant.label === 'raw');
    assert.equal(internal().session.inFlight, 1);
    req.destroy();
    await until(() => internal().session.inFlight === 0, 'toolgate to stop waiting for the call');
    assert.equal((await cli(dir, ['approvals', 'approve', pending.id, ...state])).code, 0);
    const again = await post(body, std('tools/call', 'run_command'));
    assert.equal(again.body.result.content[0].text, 'run_command done');
    assert.deepEqual(recorded(record).filter((c) => c.args.command === 'hang-up').length, 1, 'it ran once: when made again');
  });

  it('envelope refusals: -32602 without one, -32022 with a version toolgate does not speak; discover without a session', async () => {
    const noEnvelope = await post({ jsonrpc: '2.0', id: 2, method: 'tools/list', params: {} }, std('tools/list'));
    assert.deepEqual([noEnvelope.status, noEnvelope.body.error.code], [400, -32602]);
    const future = { ...ENVELOPE, 'io.modelcontextprotocol/protocolVersion': '2099-01-01' };
    const r = await post({ jsonrpc: '2.0', id: 3, method: 'tools/list', params: { _meta: future } }, { ...std('tools/list'), 'mcp-protocol-version': '2099-01-01' });
    assert.deepEqual([r.status, r.body.error.code], [400, -32022]);
    assert.ok(r.body.error.data.supported.includes('2026-07-28'));
    const discover = await post({ jsonrpc: '2.0', id: 4, method: 'server/discover', params: { _meta: ENVELOPE } }, std('server/discover'));
    assert.equal(discover.status, 200);
    assert.equal(discover.body.result.resultType, 'complete');
    assert.ok(discover.body.result.supportedVersions.includes('2026-07-28'));
    const list = await post({ jsonrpc: '2.0', id: 5, method: 'tools/list', params: { _meta: ENVELOPE } }, std('tools/list'));
    assert.equal(list.body.result.cacheScope, 'private');
  });

  it('the grant is checked on every request: two clients of one grant share ids safely; a revoked grant is refused at once', async () => {
    const as = (name: string) => ({ ...ENVELOPE, 'io.modelcontextprotocol/clientInfo': { name, version: '1' } });
    const [a, b] = await Promise.all([
      post({ jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name: 'read_note', arguments: { name: 'a' }, _meta: as('agent-a') } }, std('tools/call', 'read_note'), tokens.other),
      post({ jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name: 'delete_file', arguments: { path: 'b' }, _meta: as('agent-b') } }, std('tools/call', 'delete_file'), tokens.other),
    ]);
    assert.equal(a.body.result.content[0].text, 'read_note done');
    assert.match(b.body.result.content[0].text, /POLICY DENIED/);
    // One internal session for the grant; each row names the client that sent the call.
    const rows = JSON.parse((await cli(dir, ['audit', '--json', '--grant', 'other', ...stateArgs()])).stdout) as any[];
    const byTool = Object.fromEntries(rows.map((r) => [r.tool, r]));
    assert.deepEqual([byTool.read_note.client, byTool.read_note.decision, byTool.delete_file.client, byTool.delete_file.decision], ['agent-a', 'allow', 'agent-b', 'deny']);
    assert.equal(byTool.read_note.session, byTool.delete_file.session);
    const other = (await grants.list()).find((g) => g.label === 'other')!;
    await grants.revoke(other.id);
    const refused = await post({ jsonrpc: '2.0', id: 8, method: 'tools/call', params: { name: 'read_note', arguments: { name: 'a' }, _meta: ENVELOPE } }, std('tools/call', 'read_note'), tokens.other);
    assert.equal(refused.status, 403, 'revoked: refused before anything is forwarded');
    assert.match(refused.body.error.message, /revoked/);
    const anonymous = await post({ jsonrpc: '2.0', id: 9, method: 'server/discover', params: { _meta: ENVELOPE } }, std('server/discover'), 'not-a-token');
    assert.equal(anonymous.status, 403);
    assert.match(anonymous.body.error.message, /unknown token/);
  });
});
