import assert from 'node:assert/strict';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { FIXTURES } from './helpers/toolgate.js';

/**
 * The everything-v2 fixture over stdio (serveStdio), which the conformance suite cannot reach (it
 * speaks HTTP only) and toolgate runs as a stdio upstream: an SDK v2 client pinned to 2026-07-28 and
 * a legacy one both get the same surface; input_required rounds are answered by the client's own
 * elicitation handler. (The suite covers the same server over HTTP: conformance-2026.e2e.test.ts.)
 */
const FIXTURE = join(FIXTURES, 'everything-v2.mjs');
const text = (r: { content?: unknown }) => (r.content as { type: string; text?: string }[]).map((c) => c.text ?? '').join('');

async function connect(versionNegotiation?: { mode: 'legacy' | { pin: string } }): Promise<Client> {
  const client = new Client({ name: 'everything-v2-stdio-test', version: '1' }, { capabilities: { elicitation: { form: {} } }, ...(versionNegotiation ? { versionNegotiation } : {}) });
  client.setRequestHandler('elicitation/create', async () => ({ action: 'accept', content: { name: 'Ada' } }));
  await client.connect(new StdioClientTransport({ command: process.execPath, args: [FIXTURE] }));
  return client;
}

describe('everything-v2 over stdio', () => {
  it('a client pinned to 2026-07-28 discovers it (with the tasks extension) and completes an input_required round', async () => {
    const client = await connect({ mode: { pin: '2026-07-28' } });
    try {
      assert.equal(client.getNegotiatedProtocolVersion(), '2026-07-28');
      const discover = client.getDiscoverResult();
      assert.ok(discover?.capabilities.extensions?.['io.modelcontextprotocol/tasks'], 'server/discover advertises the tasks extension');
      assert.equal(text(await client.callTool({ name: 'test_simple_text', arguments: {} })), 'This is a simple text response for testing.');
      assert.equal(text(await client.callTool({ name: 'test_input_required_result_elicitation', arguments: {} })), 'Hello, Ada!');
      const names = (await client.listTools()).tools.map((t) => t.name);
      for (const n of ['greet', 'slow_compute', 'test_missing_capability', 'test_input_required_result_multi_round']) assert.ok(names.includes(n), n);
    } finally {
      await client.close();
    }
  });

  it('a legacy client gets the same tools through initialize, and plain results', async () => {
    const client = await connect({ mode: 'legacy' });
    try {
      assert.notEqual(client.getNegotiatedProtocolVersion(), '2026-07-28');
      assert.ok((await client.listTools()).tools.some((t) => t.name === 'slow_compute'));
      assert.equal(text(await client.callTool({ name: 'greet', arguments: { name: 'Bob' } })), 'Hello, Bob!');
    } finally {
      await client.close();
    }
  });
});
