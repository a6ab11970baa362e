import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { ElicitRequestSchema, ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { auditRows, until } from './helpers/approvals.js';
import { entries, MODERN, ran, stdioReceived as received } from './helpers/modern-upstream.js';
import { cli, connectThroughToolgate, denialText, EVERYTHING, FIXTURES, RawSession, tempDir, testEnv, writePolicy, type Connected } from './helpers/toolgate.js';

/**
 * A legacy client (SDK v1) through `toolgate run` to a modern upstream (SDK v2, 2026-07-28):
 * toolgate opens the server with server/discover, never sends it initialize, and gives every
 * request the `_meta` envelope; the policy, limits, pins and audit hold as for a legacy server.
 * The fixture records every message it receives, so the assertions are on what really arrived.
 */

const POLICY = {
  version: '1', default: 'deny',
  tools: {
    read_note: {},
    regional_lookup: {},
    confirm_delete: {},
    write_note: { limits: [{ counter: 'writes', window: 'hour', max: 1, scope: 'server' }] },
    delete_file: { action: 'deny', on_deny: 'no deleting here' },
  },
};

describe('toolgate run: a legacy client to a modern (2026-07-28) upstream', () => {
  let home: string;
  let record: string;
  let conn: Connected;

  before(async () => {
    home = tempDir();
    record = join(home, 'received.jsonl');
    conn = await connectThroughToolgate({
      policy: writePolicy(home, POLICY), server: [process.execPath, MODERN], home,
      env: { RECORD_FILE: record, MODERN_ONLY: '1' },
      capabilities: { capabilities: { elicitation: {} } },
    });
  });
  after(() => conn.close());

  it('opens the server with server/discover (no initialize, no notifications/initialized) and answers the client from it', () => {
    const methods = received(record).map((m) => m.method);
    assert.equal(methods[0], 'server/discover');
    assert.ok(!methods.includes('initialize') && !methods.includes('notifications/initialized'), methods.join(','));
    assert.deepEqual(conn.client.getServerVersion(), { name: 'modern-fixture', version: '2.0.0' });
    assert.equal(conn.client.getInstructions(), 'A modern test fixture.');
    assert.ok(conn.client.getServerCapabilities()?.tools);
  });

  it('lists the tools the policy lets the client see', async () => {
    const names = (await conn.client.listTools()).tools.map((t) => t.name).sort();
    assert.deepEqual(names, ['confirm_delete', 'read_note', 'regional_lookup', 'write_note']);
  });

  it('an allowed call reaches the server with the 2026-07-28 envelope built from the client\'s initialize', async () => {
    const result = await conn.client.callTool({ name: 'read_note', arguments: { name: 'todo' } });
    assert.equal(denialText(result), undefined);
    assert.deepEqual(result.content, [{ type: 'text', text: 'read_note done' }]);
    const run = ran(record).find((e) => e.tool === 'read_note')!;
    assert.deepEqual(run.args, { name: 'todo' });
    assert.equal(run.envelope['io.modelcontextprotocol/protocolVersion'], '2026-07-28');
    assert.deepEqual(run.envelope['io.modelcontextprotocol/clientInfo'], { name: 'toolgate-test', version: '1.0.0' });
    assert.deepEqual(run.envelope['io.modelcontextprotocol/clientCapabilities'], { elicitation: {} });
    // Every request toolgate sent (its own tools/list included) carried the envelope.
    for (const m of received(record).filter((m) => m.id !== undefined)) {
      assert.equal(m.params?._meta?.['io.modelcontextprotocol/protocolVersion'], '2026-07-28', JSON.stringify(m));
    }
  });

  it('a denied call never reaches the server, and the agent reads why', async () => {
    const result = await conn.client.callTool({ name: 'delete_file', arguments: { path: '/etc/passwd' } });
    assert.match(denialText(result) ?? '', /no deleting here/);
    assert.ok(!received(record).some((m) => m.method === 'tools/call' && m.params?.name === 'delete_file'));
  });

  it('a limit counts calls to the modern server as to any other', async () => {
    const first = await conn.client.callTool({ name: 'write_note', arguments: { name: 'a', text: 'x' } });
    assert.equal(denialText(first), undefined);
    const second = await conn.client.callTool({ name: 'write_note', arguments: { name: 'b', text: 'y' } });
    assert.match(denialText(second) ?? '', /limit/i);
    assert.deepEqual(ran(record).filter((e) => e.tool === 'write_note').map((e) => e.args.name), ['a']);
  });

  it('an input_required answer is asked of a legacy client as an elicitation; its answer goes back in inputResponses, and the call runs once', async () => {
    const asked: string[] = [];
    conn.client.setRequestHandler(ElicitRequestSchema, async (req) => {
      asked.push(req.params.message);
      return { action: 'accept', content: { confirm: true } };
    });
    const result = await conn.client.callTool({ name: 'confirm_delete', arguments: { path: '/tmp/x' } });
    assert.deepEqual(result.content, [{ type: 'text', text: 'confirm_delete done' }]);
    assert.deepEqual(asked, ['Delete /tmp/x?']);
    const confirmed = entries(record).find((e) => e.round === 'confirmed') as any;
    assert.deepEqual(confirmed.responses, { confirm: { action: 'accept', content: { confirm: true } } });
    assert.equal(confirmed.state, 'round-1', 'the server\'s requestState came back with the retry');
    assert.deepEqual(ran(record).filter((e) => e.tool === 'confirm_delete').map((e) => e.args), [{ path: '/tmp/x' }], 'the same arguments, run once');
    const rows = (await auditRows(home, 'allow')).filter((r) => r.tool === 'confirm_delete');
    assert.equal(rows.length, 1, 'one call, one audit row');
  });

  it('a declined elicitation goes back as declined: the server ends the call without running it', async () => {
    conn.client.setRequestHandler(ElicitRequestSchema, async () => ({ action: 'decline' }));
    const result = await conn.client.callTool({ name: 'confirm_delete', arguments: { path: '/tmp/y' } });
    assert.equal(result.isError, true);
    assert.deepEqual(result.content, [{ type: 'text', text: 'not confirmed: nothing deleted' }]);
    assert.ok(!ran(record).some((e) => e.tool === 'confirm_delete' && e.args.path === '/tmp/y'));
  });

  it('ping and logging/setLevel, which 2026-07-28 dropped, still work: the level rides in each later envelope', async () => {
    await conn.client.ping();
    await conn.client.setLoggingLevel('warning');
    await conn.client.callTool({ name: 'read_note', arguments: { name: 'after-level' } });
    const run = ran(record).find((e) => e.args?.name === 'after-level')!;
    assert.equal(run.envelope['io.modelcontextprotocol/logLevel'], 'warning');
    assert.ok(!received(record).some((m) => m.method === 'ping' || m.method === 'logging/setLevel'));
  });

  it('the audit log has each decision', async () => {
    const allowed = await auditRows(home, 'allow');
    assert.ok(allowed.some((r) => r.tool === 'read_note'), JSON.stringify(allowed));
    const denied = await auditRows(home, 'deny');
    assert.ok(denied.some((r) => r.tool === 'delete_file'));
    assert.ok(denied.some((r) => r.tool === 'write_note'));
  });
});

describe('toolgate run: pins hold across eras', () => {
  it('tools pinned over 2025 are checked when the same server is reached over 2026-07-28: a changed tool is hidden', async () => {
    const home = tempDir();
    const env = testEnv(home);
    const pinned = await cli(['pin', '--json', '--', process.execPath, MODERN], env);
    assert.equal(pinned.code, 0, pinned.stderr);
    const conn = await connectThroughToolgate({
      policy: writePolicy(home, { version: '1', default: 'allow', pins: { on_change: 'block' } }), server: [process.execPath, MODERN], home,
      env: { MODERN_ONLY: '1', FIXTURE_VARIANT: 'rugpull' },
    });
    try {
      const names = (await conn.client.listTools()).tools.map((t) => t.name);
      assert.ok(!names.includes('read_note') && names.includes('write_note'), names.join(','));
      const call = await conn.client.callTool({ name: 'read_note', arguments: { name: 'n' } });
      assert.ok(denialText(call), 'a call to the changed tool is refused');
    } finally {
      await conn.close();
    }
  });
});

describe('toolgate record and pin: a modern-only server', () => {
  it('is listed over 2026-07-28 (record says so), pinned, and a later change is caught through run', async () => {
    const home = tempDir();
    const env = testEnv(home, { MODERN_ONLY: '1' });
    const record = await cli(['record', '--no-catalog', '--json', '--', process.execPath, MODERN], env);
    assert.equal(record.code, 0, record.stderr);
    const identity = JSON.parse(record.stdout).identity;
    assert.equal(identity.protocolVersion, '2026-07-28');
    assert.deepEqual(identity.serverInfo, { name: 'modern-fixture', version: '2.0.0' });
    const pinned = await cli(['pin', '--json', '--', process.execPath, MODERN], env);
    assert.equal(pinned.code, 0, pinned.stderr);
    const changed = await cli(['pin', '--json', '--', process.execPath, MODERN], { ...env, FIXTURE_VARIANT: 'rugpull' });
    assert.deepEqual(JSON.parse(changed.stdout).changed, ['read_note']);
  });
});

describe('toolgate run: choosing the upstream era', () => {
  const open = (home: string, record: string, server: string[], runArgs: string[], env: Record<string, string> = {}) =>
    connectThroughToolgate({ policy: writePolicy(home, { version: '1', default: 'allow' }), server, home, runArgs, env: { RECORD_FILE: record, ...env } });

  it('--protocol legacy speaks 2025 to a server that offers both: initialize, no discover, no envelope', async () => {
    const home = tempDir();
    const record = join(home, 'received.jsonl');
    const conn = await open(home, record, [process.execPath, MODERN], ['--protocol', 'legacy']);
    try {
      assert.equal(denialText(await conn.client.callTool({ name: 'read_note', arguments: { name: 'n' } })), undefined);
      const messages = received(record);
      assert.equal(messages[0].method, 'initialize');
      assert.ok(!messages.some((m) => m.method === 'server/discover'));
      assert.equal(ran(record)[0].envelope, null);
    } finally {
      await conn.close();
    }
  });

  it('auto falls back to initialize for a legacy server (server-everything answers server/discover with an error)', async () => {
    const home = tempDir();
    const conn = await open(home, join(home, 'r.jsonl'), [process.execPath, EVERYTHING], []);
    try {
      const result = await conn.client.callTool({ name: 'echo', arguments: { message: 'hi' } });
      assert.match(JSON.stringify(result.content), /hi/);
    } finally {
      await conn.close();
    }
  });

  it('auto survives a 2025 server that dies on any request before initialize: it is started again and gets initialize', async () => {
    const home = tempDir();
    const starts = join(home, 'starts');
    const conn = await connectThroughToolgate({
      policy: writePolicy(home, { version: '1', default: 'allow' }), server: [process.execPath, join(FIXTURES, 'strict-legacy-server.mjs')], home,
      env: { STARTS_FILE: starts },
    });
    try {
      const result = await conn.client.callTool({ name: 'echo', arguments: { message: 'still here' } });
      assert.deepEqual(result.content, [{ type: 'text', text: 'still here' }]);
      assert.equal(readFileSync(starts, 'utf8').trim().split('\n').length, 2, 'started twice: the probe, then 2025');
    } finally {
      await conn.close();
    }
  });

  it('--protocol 2026-07-28 refuses a legacy server with a clear error instead of speaking 2025 to it', async () => {
    const home = tempDir();
    const session = new RawSession(['-p', writePolicy(home, { version: '1', default: 'allow' }), '--state', 'memory:', '--protocol', '2026-07-28', '--', process.execPath, EVERYTHING], testEnv(home));
    try {
      const answer = await session.request(1, 'initialize', { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } });
      assert.match(answer.error?.message ?? '', /does not speak 2026-07-28.*server\/discover answered -32601/);
    } finally {
      await session.close();
    }
  });

  it('a bad --protocol is refused before anything starts', async () => {
    const r = await cli(['run', '--protocol', '2027-01-01', '--', process.execPath, MODERN], testEnv(tempDir()));
    assert.notEqual(r.code, 0);
    assert.match(r.stderr, /--protocol takes auto, legacy, 2026-07-28/);
  });
});

describe('toolgate run: what a modern client sends rides through to a modern upstream', () => {
  it('its own _meta envelope is kept; input_required comes back under toolgate\'s signed state and the retry gives the server its own', async () => {
    const home = tempDir();
    const record = join(home, 'received.jsonl');
    const policy = writePolicy(home, { version: '1', default: 'allow' });
    const session = new RawSession(['-p', policy, '--state', 'memory:', '--', process.execPath, MODERN], testEnv(home, { RECORD_FILE: record, MODERN_ONLY: '1' }));
    const envelope = {
      'io.modelcontextprotocol/protocolVersion': '2026-07-28',
      'io.modelcontextprotocol/clientCapabilities': { elicitation: { form: {} } },
      'io.modelcontextprotocol/clientInfo': { name: 'modern-raw', version: '9' },
    };
    try {
      await session.initialize();
      const asked = await session.request(2, 'tools/call', { name: 'confirm_delete', arguments: { path: '/tmp/x' }, _meta: envelope });
      assert.equal(asked.result?.resultType, 'input_required', JSON.stringify(asked));
      assert.equal(asked.result.inputRequests.confirm.method, 'elicitation/create');
      // The client holds toolgate's signed state, which carries the server's own inside it (docs/input-required.md).
      const state = asked.result.requestState as string;
      assert.match(state, /^tg1\./, 'toolgate binds the round to this call with its own signed state');
      const round = entries(record).find((e) => e.round === 'input_required')!;
      assert.deepEqual(round.envelope['io.modelcontextprotocol/clientInfo'], { name: 'modern-raw', version: '9' }, 'the request\'s own client info, not the initialize\'s');
      assert.deepEqual(round.envelope['io.modelcontextprotocol/clientCapabilities'], { elicitation: { form: {} } });
      const retried = await session.request(4, 'tools/call', {
        name: 'confirm_delete', arguments: { path: '/tmp/x' }, _meta: envelope,
        inputResponses: { confirm: { action: 'accept', content: { confirm: true } } }, requestState: state,
      });
      assert.equal(retried.result?.resultType, 'complete', JSON.stringify(retried));
      const confirmed = entries(record).find((e) => e.round === 'confirmed')!;
      assert.equal(confirmed.state, 'round-1', 'the server gets its own state back, not toolgate\'s');
      const read = await session.request(3, 'tools/call', { name: 'read_note', arguments: { name: 'n' }, _meta: envelope });
      assert.equal(read.result?.resultType, 'complete', 'resultType passes to a modern client');
    } finally {
      await session.close();
    }
  });
});

describe('toolgate run: list changes from a modern upstream', () => {
  it('toolgate subscribes to them (subscriptions/listen), re-lists the tools and tells the legacy client', async () => {
    const home = tempDir();
    const record = join(home, 'received.jsonl');
    const conn = await connectThroughToolgate({ policy: writePolicy(home, { version: '1', default: 'allow' }), server: [process.execPath, MODERN], home, env: { RECORD_FILE: record, MODERN_ONLY: '1' } });
    try {
      const heard = new Promise<void>((resolve) => conn.client.setNotificationHandler(ToolListChangedNotificationSchema, async () => resolve()));
      const listen = await until(() => received(record).find((m) => m.method === 'subscriptions/listen'), 'the subscription');
      assert.deepEqual(listen?.params?.notifications, { toolsListChanged: true });
      const listsBefore = received(record).filter((m) => m.method === 'tools/list').length;
      await conn.client.callTool({ name: 'add_tool', arguments: {} });
      await heard;
      assert.ok((await conn.client.listTools()).tools.some((t) => t.name === 'purge_notes'));
      assert.ok(received(record).filter((m) => m.method === 'tools/list').length >= listsBefore + 2, 'toolgate re-listed on its own, and the client listed');
    } finally {
      await conn.close();
    }
  });
});
