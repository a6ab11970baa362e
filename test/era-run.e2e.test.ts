// Issue 25 items 1-2: `toolgate run` for SDK v2 clients (MCP 2026-07-28, auto and pinned) against
// legacy upstreams, with the policy holding: every result carries resultType, so the agent reads
// the denial's reason instead of the client throwing "missing required resultType".
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { auditRows, cli, pendingApprovals, RECORDING, recorded, until } from './helpers/approvals.js';
import { MODES, modernRun } from './helpers/modern.js';
import { denialText, EVERYTHING, LENIENT, RawSession, tempDir, testEnv, writePolicy } from './helpers/toolgate.js';

const POLICY = {
  version: '1', default: 'deny',
  tools: {
    read_note: {},
    write_note: { limits: [{ counter: 'writes', window: 'hour', max: 1 }] },
    delete_file: { action: 'deny', on_deny: 'Deleting is not allowed here.' },
    run_command: { action: 'approve' },
  },
};

for (const mode of MODES) {
  describe(`toolgate run: an SDK v2 client (${mode}) against a legacy server`, () => {
    it('negotiates 2026-07-28; allowed, denied (reason readable), limited and approved calls; audit rows', async () => {
      const home = tempDir();
      const record = join(home, 'calls.jsonl');
      const run = await modernRun(mode, ['-p', writePolicy(home, POLICY), '--name', 'rec', '--', process.execPath, RECORDING], home, { RECORD_FILE: record });
      try {
        const { client } = run;
        assert.equal(client.getNegotiatedProtocolVersion(), '2026-07-28');
        assert.equal(client.getServerVersion()?.name, 'toolgate');
        const discover = client.getDiscoverResult()!;
        assert.ok(discover.supportedVersions.includes('2026-07-28') && discover.supportedVersions.includes('2025-06-18'), discover.supportedVersions.join());
        assert.ok(discover.capabilities.tools, 'the upstream\'s capabilities');

        const names = (await client.listTools()).tools.map((t) => t.name).sort();
        assert.deepEqual(names, ['read_note', 'run_command', 'write_note'], 'denied and unlisted tools are hidden');

        const read = await client.callTool({ name: 'read_note', arguments: { name: 'a' } });
        assert.deepEqual(read.content, [{ type: 'text', text: 'read_note done' }]);

        const denied = await client.callTool({ name: 'delete_file', arguments: { path: '/x' } });
        assert.equal(denied.isError, true);
        assert.equal(denialText(denied), '[POLICY DENIED] Deleting is not allowed here.');
        assert.equal((denied._meta as any)['dev.toolgate/decision'].rule, '/tools/delete_file/action');

        assert.equal(denialText(await client.callTool({ name: 'write_note', arguments: { name: 'n', text: 't' } })), undefined);
        const limited = await client.callTool({ name: 'write_note', arguments: { name: 'n2', text: 't' } });
        assert.match(denialText(limited) ?? '', /Limit reached: 1 calls? per hour/);
        assert.equal(typeof (limited._meta as any)['dev.toolgate/decision'].retryAfterSeconds, 'number');

        const held = client.callTool({ name: 'run_command', arguments: { command: 'ls' } }, { timeout: 60_000 });
        const [pending] = await until(async () => { const p = await pendingApprovals(home); return p.length > 0 ? p : undefined; }, 'the held call to be listed');
        assert.equal(pending.tool, 'run_command');
        assert.equal((await cli(home, ['approvals', 'approve', pending.id])).code, 0);
        assert.deepEqual((await held).content, [{ type: 'text', text: 'run_command done' }]);

        assert.deepEqual(recorded(record).map((c) => c.tool), ['read_note', 'write_note', 'run_command'], 'only allowed and approved calls reached the server');
        const [deny] = await auditRows(home, 'deny', ['--tool', 'delete_file']);
        assert.equal(deny.client, 'modern-test', 'the client name comes from the _meta envelope');
        assert.equal(deny.grant_label, 'local');
        const allows = await auditRows(home, 'allow');
        assert.ok(allows.some((r: any) => r.tool === 'read_note' && r.session === deny.session), 'one session for the connection');
        assert.equal((await auditRows(home, 'approved')).length, 1);
      } finally {
        await run.close();
      }
    });

    it('works with server-everything', async () => {
      const home = tempDir();
      const run = await modernRun(mode, ['-p', writePolicy(home, { version: '1', default: 'allow', tools: { 'get-sum': { action: 'deny' } } }), '--', process.execPath, EVERYTHING], home);
      try {
        const echo = await run.client.callTool({ name: 'echo', arguments: { message: 'hi' } });
        assert.match(JSON.stringify(echo.content), /hi/);
        const sum = await run.client.callTool({ name: 'get-sum', arguments: { a: 1, b: 2 } });
        assert.match(denialText(sum) ?? '', /POLICY DENIED/);
        // Progress comes back to the request it is about, with the client's own token.
        const progress: number[] = [];
        const long = await run.client.callTool({ name: 'trigger-long-running-operation', arguments: { duration: 1, steps: 2 } }, { onprogress: (p: { progress: number }) => progress.push(p.progress) });
        assert.equal(long.isError, undefined);
        // (the server may send its last progress after its result: at least the first one comes back)
        assert.equal(progress[0], 1);
        assert.ok((await run.client.listPrompts()).prompts.length > 0);
      } finally {
        await run.close();
      }
    });

    it('a 2025 server\'s own request (sampling) gets -32601 for the 2026-07-28 client, which takes none; the call ends', async () => {
      const home = tempDir();
      const run = await modernRun(mode, ['-p', writePolicy(home, { version: '1', default: 'allow' }), '--', process.execPath, EVERYTHING], home, {}, { capabilities: { sampling: {} } });
      try {
        const r = await run.client.callTool({ name: 'trigger-sampling-request', arguments: { prompt: 'x' } });
        assert.equal(r.isError, true);
        assert.match(JSON.stringify(r.content), /-32601.*no sampling\/createMessage request from server to client/);
      } finally {
        await run.close();
      }
    });

    it('pins: a changed tool is hidden and refused', async () => {
      const home = tempDir();
      const env = testEnv(home);
      assert.equal((await cli(home, ['pin', '--json', '--', process.execPath, LENIENT])).code, 0);
      const policy = writePolicy(home, { version: '1', default: 'allow', pins: { on_change: 'block' } });
      const run = await modernRun(mode, ['-p', policy, '--', process.execPath, LENIENT], home, { ...env, LENIENT_VARIANT: 'rugpull' });
      try {
        const names = (await run.client.listTools()).tools.map((t) => t.name);
        assert.ok(!names.includes('echo') && names.includes('delete_all'), names.join());
        const blocked = await run.client.callTool({ name: 'echo', arguments: { text: 'x' } });
        assert.match(denialText(blocked) ?? '', /POLICY DENIED/);
      } finally {
        await run.close();
      }
    });
  });
}

describe('toolgate run: the SDK v2 client in legacy mode (the 2025 handshake) is unchanged', () => {
  it('initializes, and reads a denial', async () => {
    const home = tempDir();
    const run = await modernRun('legacy', ['-p', writePolicy(home, POLICY), '--', process.execPath, RECORDING], home, { RECORD_FILE: join(home, 'calls.jsonl') });
    try {
      assert.equal(run.client.getNegotiatedProtocolVersion(), '2025-11-25');
      assert.equal(denialText(await run.client.callTool({ name: 'delete_file', arguments: { path: '/x' } })), '[POLICY DENIED] Deleting is not allowed here.');
    } finally {
      await run.close();
    }
  });
});

const envelope = (version = '2026-07-28') => ({
  'io.modelcontextprotocol/protocolVersion': version,
  'io.modelcontextprotocol/clientCapabilities': {},
  'io.modelcontextprotocol/clientInfo': { name: 'raw-modern', version: '1' },
});

describe('toolgate run: the 2026-07-28 wire, message by message', () => {
  it('envelope refusals, resultType and cache fields on what toolgate makes and forwards, no initialize', async () => {
    const home = tempDir();
    const policy = writePolicy(home, { version: '1', default: 'allow', tools: { delete_file: { action: 'deny' } } });
    const s = new RawSession(['-p', policy, '--', process.execPath, RECORDING], testEnv(home));
    try {
      const discover = await s.request(1, 'server/discover', { _meta: envelope() });
      assert.equal(discover.result.resultType, 'complete');
      assert.equal(discover.result.cacheScope, 'private');
      assert.equal(discover.result.ttlMs, 0);

      const missing = await s.request(2, 'tools/list', {});
      assert.equal(missing.error.code, -32602, 'no _meta envelope');
      const noCaps = await s.request(3, 'tools/list', { _meta: { 'io.modelcontextprotocol/protocolVersion': '2026-07-28' } });
      assert.equal(noCaps.error.code, -32602, 'no client capabilities');
      const future = await s.request(4, 'tools/list', { _meta: envelope('2099-01-01') });
      assert.equal(future.error.code, -32022);
      assert.ok(future.error.data.supported.includes('2026-07-28'));
      assert.equal(future.error.data.requested, '2099-01-01');

      const list = await s.request(5, 'tools/list', { _meta: envelope() });
      assert.equal(list.result.resultType, 'complete');
      assert.equal(list.result.cacheScope, 'private', 'filtered per grant');
      assert.equal(typeof list.result.ttlMs, 'number');

      const denied = await s.request(6, 'tools/call', { name: 'delete_file', arguments: { path: 'x' }, _meta: envelope() });
      assert.equal(denied.result.resultType, 'complete', 'a denial toolgate makes');
      assert.equal(denied.result.isError, true);
      const allowed = await s.request(7, 'tools/call', { name: 'read_note', arguments: { name: 'x' }, _meta: envelope() });
      assert.equal(allowed.result.resultType, 'complete', 'a result toolgate forwards');

      const init = await s.request(8, 'initialize', { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'x', version: '1' }, _meta: envelope() });
      assert.equal(init.error.code, -32601, 'a modern connection has no initialize');
      // Only the methods 2026-07-28 defines: the 2025 ones it dropped are not forwarded.
      for (const [i, method] of ['ping', 'logging/setLevel', 'resources/subscribe', 'tools.call'].entries()) {
        const r = await s.request(9 + i, method, { level: 'debug', uri: 'x', _meta: envelope() });
        assert.equal(r.error?.code, -32601, method);
      }
      // Ids are the client's own, whatever toolgate uses inside.
      assert.deepEqual(s.lines.map((m: any) => m.id), [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]);
    } finally {
      await s.close();
    }
  });

  it('a legacy client on the same command still initializes as before', async () => {
    const home = tempDir();
    const s = new RawSession(['-p', writePolicy(home, { version: '1', default: 'allow' }), '--', process.execPath, RECORDING], testEnv(home));
    try {
      await s.initialize();
      const list = await s.request(2, 'tools/list', {});
      assert.equal(list.result.resultType, undefined, 'nothing modern on a legacy connection');
      assert.equal(list.result.cacheScope, undefined);
    } finally {
      await s.close();
    }
  });
});

describe('policy validate: scope "session" for clients without a session', () => {
  it('notes every session-scoped limit with its pointer, and only those', async () => {
    const home = tempDir();
    const limit = (scope: string) => ({ counter: 'c', window: 'minute', max: 1, scope });
    const file = writePolicy(home, { version: '1', all_tools: { limits: [limit('session')] }, tools: { 'a/b': { limits: [limit('grant'), limit('session')] } } });
    const json = await cli(home, ['policy', 'validate', '--json', file]);
    assert.equal(json.code, 0, json.stderr);
    const [report] = JSON.parse(json.stdout);
    assert.equal(report.valid, true);
    assert.deepEqual(report.notes.map((n: string) => n.split(':')[0]), ['/all_tools/limits/0', '/tools/a~1b/limits/1']);
    assert.match(report.notes[0], /2026-07-28 \(sessionless\) client .* internal session for the grant/);
    const text = await cli(home, ['policy', 'validate', file]);
    assert.match(text.stdout, /valid .*\n {2}note: \/all_tools\/limits\/0: scope "session"/);
    const plain = await cli(home, ['policy', 'validate', '--json', writePolicy(home, { version: '1', tools: { x: { limits: [limit('grant')] } } }, 'plain.json')]);
    assert.equal(JSON.parse(plain.stdout)[0].notes, undefined);
  });
});
