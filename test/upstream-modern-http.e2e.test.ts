import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { ModernHttpFixture, httpReceived, ran, type Entry } from './helpers/modern-upstream.js';
import { ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { until } from './helpers/approvals.js';
import { RecordingUpstream } from './helpers/recording-http.js';
import { connectThroughToolgate, denialText, tempDir, writePolicy, type Connected } from './helpers/toolgate.js';

/**
 * A legacy client (SDK v1) through `toolgate run --upstream` to a Streamable HTTP server that
 * speaks ONLY 2026-07-28 (SDK v2 createMcpHandler, legacy: 'reject'): every POST carries the
 * standard headers made from its own body, the server's own header checks pass (it refuses a
 * disagreeing header with -32020), and a value crafted to forge a header is encoded, not split.
 */
const POLICY = { version: '1', default: 'deny', tools: { read_note: {}, regional_lookup: {}, delete_file: { action: 'deny', on_deny: 'no deleting' } } };

/** Every header that mirrors the body says what the body says. */
function agrees(e: Entry): void {
  const h = e.headers!;
  const body = e.body;
  assert.equal(h['mcp-protocol-version'], '2026-07-28');
  assert.equal(body.params._meta['io.modelcontextprotocol/protocolVersion'], '2026-07-28');
  assert.equal(h['mcp-method'], body.method);
  if (body.method === 'tools/call') assert.equal(h['mcp-name'], body.params.name);
  assert.equal(h['mcp-session-id'], undefined);
}

describe('toolgate run --upstream: a modern-only Streamable HTTP server', () => {
  let home: string;
  let record: string;
  let fixture: ModernHttpFixture;
  let conn: Connected;

  before(async () => {
    home = tempDir();
    record = join(home, 'received.jsonl');
    fixture = new ModernHttpFixture({ RECORD_FILE: record, MODERN_ONLY: '1' });
    const url = await fixture.url;
    conn = await connectThroughToolgate({ policy: writePolicy(home, POLICY), server: [], runArgs: ['--upstream', url, '--header', 'Mcp-Name: forged-by-config'], home });
  });
  after(async () => {
    await conn.close();
    await fixture.stop();
  });

  it('opens with server/discover over POST: no initialize, no session, no GET stream', () => {
    const seen = httpReceived(record);
    assert.equal(seen[0].body.method, 'server/discover');
    assert.ok(seen.every((e) => e.method === 'POST'), seen.map((e) => e.method).join(','));
    assert.ok(!seen.some((e) => e.body?.method === 'initialize' || e.body?.method === 'notifications/initialized'));
    assert.deepEqual(conn.client.getServerVersion(), { name: 'modern-fixture', version: '2.0.0' });
  });

  it('lists and calls; each request\'s headers are made from its body', async () => {
    const names = (await conn.client.listTools()).tools.map((t) => t.name).sort();
    assert.deepEqual(names, ['read_note', 'regional_lookup']);
    const result = await conn.client.callTool({ name: 'read_note', arguments: { name: 'todo' } });
    assert.deepEqual(result.content, [{ type: 'text', text: 'read_note done' }]);
    const call = httpReceived(record).find((e) => e.body?.method === 'tools/call')!;
    agrees(call);
    assert.equal(call.headers!['mcp-name'], 'read_note', 'the configured Mcp-Name header is not sent: the body names the tool');
    for (const e of httpReceived(record)) if (e.body?.id !== undefined) agrees(e);
  });

  it('an x-mcp-header argument goes out as its Mcp-Param header, from the body; a value made to forge headers is base64-encoded', async () => {
    const plain = await conn.client.callTool({ name: 'regional_lookup', arguments: { region: 'eu-west', query: 'q' } });
    assert.equal(denialText(plain), undefined, JSON.stringify(plain));
    const forged = 'eu\r\nMcp-Name: delete_file';
    const tricky = await conn.client.callTool({ name: 'regional_lookup', arguments: { region: forged, query: 'q' } });
    // The server checks Mcp-Param-Region against the body and refuses a mismatch (-32020): it ran both.
    assert.equal(denialText(tricky), undefined, JSON.stringify(tricky));
    assert.deepEqual(ran(record).filter((e) => e.tool === 'regional_lookup').map((e) => e.args.region), ['eu-west', forged]);
    const calls = httpReceived(record).filter((e) => e.body?.params?.name === 'regional_lookup');
    assert.equal(calls[0].headers!['mcp-param-region'], 'eu-west');
    assert.equal(calls[1].headers!['mcp-param-region'], `=?base64?${Buffer.from(forged).toString('base64')}?=`);
    for (const c of calls) {
      agrees(c);
      assert.equal(c.headers!['mcp-name'], 'regional_lookup');
    }
  });

  it('a denied call is never POSTed', async () => {
    const result = await conn.client.callTool({ name: 'delete_file', arguments: { path: '/x' } });
    assert.match(denialText(result) ?? '', /no deleting/);
    assert.ok(!httpReceived(record).some((e) => e.body?.params?.name === 'delete_file' || e.headers?.['mcp-name'] === 'delete_file'));
  });
});

describe('toolgate run --upstream: era detection over HTTP', () => {
  it('auto falls back to the 2025 Streamable HTTP client for a legacy server (SDK v1, sessions)', async () => {
    const home = tempDir();
    const upstream = await RecordingUpstream.start();
    try {
      const conn = await connectThroughToolgate({ policy: writePolicy(home, { version: '1', default: 'allow' }), server: [], runArgs: ['--upstream', upstream.url], home });
      const result = await conn.client.callTool({ name: 'free', arguments: {} });
      assert.deepEqual(result.content, [{ type: 'text', text: 'free done' }]);
      assert.equal(upstream.count('free'), 1);
      await conn.close();
    } finally {
      await upstream.stop();
    }
  });

  it('--protocol legacy speaks 2025 to a server that offers both: initialize first, no 2026 headers, no envelope', async () => {
    const home = tempDir();
    const record = join(home, 'received.jsonl');
    const fixture = new ModernHttpFixture({ RECORD_FILE: record });
    const url = await fixture.url;
    try {
      const legacy = await connectThroughToolgate({ policy: writePolicy(home, { version: '1', default: 'allow' }), server: [], runArgs: ['--upstream', url, '--protocol', 'legacy'], home });
      await legacy.client.callTool({ name: 'read_note', arguments: { name: 'a' } });
      await legacy.close();
      const first = httpReceived(record);
      assert.equal(first[0].body.method, 'initialize');
      assert.ok(!first.some((e) => e.headers?.['mcp-method']), 'no 2026 header on a legacy exchange');
      assert.equal(ran(record)[0].envelope, null);
    } finally {
      await fixture.stop();
    }
  });
});

describe('toolgate run --upstream: list changes from a modern HTTP server', () => {
  it('arrive on toolgate\'s subscriptions/listen stream: toolgate re-lists and the legacy client hears of them', async () => {
    const home = tempDir();
    const record = join(home, 'received.jsonl');
    const fixture = new ModernHttpFixture({ RECORD_FILE: record, MODERN_ONLY: '1' });
    try {
      const conn = await connectThroughToolgate({ policy: writePolicy(home, { version: '1', default: 'allow' }), server: [], runArgs: ['--upstream', await fixture.url], home });
      try {
        const heard = new Promise<void>((resolve) => conn.client.setNotificationHandler(ToolListChangedNotificationSchema, async () => resolve()));
        const listen = await until(() => httpReceived(record).find((e) => e.body?.method === 'subscriptions/listen'), 'the subscription');
        assert.equal(listen.headers!['mcp-method'], 'subscriptions/listen');
        await conn.client.callTool({ name: 'add_tool', arguments: {} });
        await heard;
        assert.ok((await conn.client.listTools()).tools.some((t) => t.name === 'purge_notes'));
      } finally {
        await conn.close();
      }
    } finally {
      await fixture.stop();
    }
  });
});
