import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { auditRows } from './helpers/approvals.js';
import { httpReceived, MODERN, ModernHttpFixture, ran, stdioReceived } from './helpers/modern-upstream.js';
import { Serve } from './helpers/serve.js';
import { denialText, FIXTURES, tempDir, testEnv, writePolicy } from './helpers/toolgate.js';

/**
 * A legacy client (SDK v1, Streamable HTTP) through `toolgate serve` to modern upstreams that
 * speak ONLY 2026-07-28, one over stdio and one over HTTP (protocol: auto and pinned). The client
 * also sends 2026 headers of its own that disagree with its bodies: they never reach an upstream,
 * whose every header is made from the body toolgate sends.
 */
const POLICY = {
  version: '1', default: 'deny',
  tools: { read_note: {}, regional_lookup: {}, confirm_delete: {}, write_note: { limits: [{ counter: 'w', window: 'hour', max: 1, scope: 'grant' }] } },
};
const HOSTILE = { 'Mcp-Name': 'delete_file', 'Mcp-Param-Region': 'us-evil', 'X-Forwarded-Tool': 'delete_file' };

describe('toolgate serve: a legacy client to modern-only upstreams', () => {
  let home: string;
  let stdioRecord: string;
  let httpRecord: string;
  let fixture: ModernHttpFixture;
  let serve: Serve;
  let mcp: Record<string, string>;

  before(async () => {
    home = tempDir();
    stdioRecord = join(home, 'stdio.jsonl');
    httpRecord = join(home, 'http.jsonl');
    fixture = new ModernHttpFixture({ RECORD_FILE: httpRecord, MODERN_ONLY: '1' });
    const policy = writePolicy(home, POLICY);
    const config = join(home, 'toolgate.json');
    writeFileSync(config, JSON.stringify({
      listen: '127.0.0.1:0', state: 'sqlite:./state.db', audit: './audit.db',
      servers: {
        local: { command: process.execPath, args: [MODERN], env: { RECORD_FILE: stdioRecord, MODERN_ONLY: '1' }, auth: 'none', policy },
        remote: { url: await fixture.url, auth: 'none', policy, protocol: '2026-07-28' },
        strict: { command: process.execPath, args: [join(FIXTURES, 'strict-legacy-server.mjs')], auth: 'none', policy: writePolicy(home, { version: '1', default: 'allow' }, 'allow.json') },
      },
    }));
    serve = new Serve(['-c', config, '--json'], testEnv(home));
    const info = await serve.started();
    mcp = Object.fromEntries(info.servers.map((s) => [s.name, s.mcp[0]]));
  });
  after(async () => {
    await serve.stop();
    await fixture.stop();
  });

  const connect = async (server: string) => {
    const client = new Client({ name: 'legacy-http-client', version: '1' });
    await client.connect(new StreamableHTTPClientTransport(new URL(mcp[server]), { requestInit: { headers: HOSTILE } }));
    return client;
  };

  for (const server of ['local', 'remote']) {
    it(`${server}: list, allowed call, denied call and limit; the server got the 2026-07-28 envelope`, async () => {
      const record = server === 'local' ? stdioRecord : httpRecord;
      const client = await connect(server);
      try {
        assert.deepEqual((await client.listTools()).tools.map((t) => t.name).sort(), ['confirm_delete', 'read_note', 'regional_lookup', 'write_note']);
        assert.deepEqual((await client.callTool({ name: 'read_note', arguments: { name: 'n' } })).content, [{ type: 'text', text: 'read_note done' }]);
        assert.match(denialText(await client.callTool({ name: 'delete_file', arguments: { path: '/x' } })) ?? '', /./);
        assert.equal(denialText(await client.callTool({ name: 'write_note', arguments: { name: 'a', text: 't' } })), undefined);
        assert.match(denialText(await client.callTool({ name: 'write_note', arguments: { name: 'b', text: 't' } })) ?? '', /limit/i);
        const runs = ran(record);
        assert.deepEqual(runs.map((r) => r.tool), ['read_note', 'write_note']);
        for (const r of runs) {
          assert.equal(r.envelope['io.modelcontextprotocol/protocolVersion'], '2026-07-28');
          assert.equal(r.envelope['io.modelcontextprotocol/clientInfo'].name, 'legacy-http-client');
        }
        const methods = server === 'local' ? stdioReceived(record).map((m) => m.method) : httpReceived(record).map((e) => e.body?.method);
        assert.equal(methods[0], 'server/discover');
        assert.ok(!methods.includes('initialize') && !methods.includes('delete_file'));
      } finally {
        await client.close();
      }
    });
  }

  it('remote: the client\'s own Mcp-* headers never reach the upstream; each header there says what its body says', async () => {
    const client = await connect('remote');
    try {
      await client.callTool({ name: 'regional_lookup', arguments: { region: 'eu', query: 'q' } });
    } finally {
      await client.close();
    }
    const posts = httpReceived(httpRecord);
    assert.ok(posts.length > 0);
    for (const p of posts) {
      assert.equal(p.headers!['x-forwarded-tool'], undefined);
      assert.equal(p.headers!['mcp-method'], p.body.method);
      if (p.body.method === 'tools/call') assert.equal(p.headers!['mcp-name'], p.body.params.name);
      assert.notEqual(p.headers!['mcp-param-region'], 'us-evil');
    }
    const lookup = posts.find((p) => p.body.params?.name === 'regional_lookup')!;
    assert.equal(lookup.headers!['mcp-param-region'], 'eu');
  });

  for (const server of ['local', 'remote']) {
    it(`${server}: the server's input_required reaches the legacy client as an elicitation, and its answer completes the call`, async () => {
      const record = server === 'local' ? stdioRecord : httpRecord;
      const client = new Client({ name: 'legacy-http-client', version: '1' }, { capabilities: { elicitation: {} } });
      client.setRequestHandler(ElicitRequestSchema, async () => ({ action: 'accept', content: { confirm: true } }));
      await client.connect(new StreamableHTTPClientTransport(new URL(mcp[server])));
      try {
        const result = await client.callTool({ name: 'confirm_delete', arguments: { path: `/srv/${server}` } });
        assert.deepEqual(result.content, [{ type: 'text', text: 'confirm_delete done' }]);
        assert.deepEqual(ran(record).filter((r) => r.tool === 'confirm_delete').map((r) => r.args.path), [`/srv/${server}`]);
      } finally {
        await client.close();
      }
    });
  }

  it('strict: a 2025 server that dies on the probe is started again and serves the session', async () => {
    const client = new Client({ name: 'legacy-http-client', version: '1' });
    await client.connect(new StreamableHTTPClientTransport(new URL(mcp.strict)));
    try {
      assert.deepEqual((await client.callTool({ name: 'echo', arguments: { message: 'ok' } })).content, [{ type: 'text', text: 'ok' }]);
    } finally {
      await client.close();
    }
  });

  it('the audit log has the calls to both servers', async () => {
    const allowed = await auditRows(home, 'allow', ['-c', join(home, 'toolgate.json')]);
    for (const server of ['local', 'remote']) assert.ok(allowed.some((r) => r.server === server && r.tool === 'read_note'), server);
  });
});
