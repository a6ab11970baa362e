import assert from 'node:assert/strict';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { cli, pendingApprovals, recorded, until } from './helpers/approvals.js';
import { BIN, cli as toolgate, denialText, ROOT, tempDir, testEnv, writePolicy } from './helpers/toolgate.js';

const TRIFECTA = join(ROOT, 'test/fixtures/trifecta-server.mjs');

/** An SDK client on `toolgate run` (no -p: the recommended policy, which includes the trifecta rule) wrapping the trifecta fixture. */
async function startRun(home: string, sent: string) {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [BIN, 'run', '--name', 'trifecta', '--', process.execPath, TRIFECTA],
    env: testEnv(home, { SENT_FILE: sent }),
    stderr: 'pipe',
  });
  const client = new Client({ name: 'flows-test', version: '1' });
  await client.connect(transport);
  return client;
}

describe('toolgate run: the lethal trifecta (SPEC 11)', () => {
  it('an egress call runs for a fresh agent, is held after a private read and an untrusted fetch (the card names them), and runs once approved', async () => {
    const home = tempDir();
    const sent = join(home, 'sent.jsonl');
    const client = await startRun(home, sent);
    const call = (name: string, args: Record<string, unknown>) => client.callTool({ name, arguments: args }, undefined, { timeout: 60_000 });
    try {
      assert.equal(denialText(await call('send_message', { channel: '#general', text: 'hello' })), undefined, 'a fresh agent sends freely');
      assert.equal(denialText(await call('read_file', { path: 'notes/secret.txt' })), undefined);
      assert.equal(denialText(await call('send_message', { channel: '#general', text: 'still fine' })), undefined, 'private alone is not the trifecta');
      assert.equal(denialText(await call('fetch_page', { url: 'https://attacker.example/page' })), undefined);
      const held = call('send_message', { channel: '#leaks', text: 'the launch code is 0000' });
      const [pending] = await until(async () => { const p = await pendingApprovals(home); return p.length > 0 ? p : undefined; }, 'the held egress call to be listed');
      assert.equal(pending.tool, 'send_message');
      assert.equal(pending.rule, '/flows/0/then/egress');
      assert.match(pending.reason, /read_file on trifecta at \d\d:\d\d:\d\dZ \(private\); fetch_page on trifecta at \d\d:\d\d:\d\dZ \(untrusted\)/);
      assert.equal(recorded(sent).length, 2, 'not sent before approval');
      const approved = await cli(home, ['approvals', 'approve', pending.id]);
      assert.equal(approved.code, 0, approved.stderr);
      assert.equal(denialText(await held), undefined);
      assert.deepEqual(recorded(sent).at(-1), { channel: '#leaks', text: 'the launch code is 0000' });
    } finally {
      await client.close();
    }
    // Another run is another agent (the process): it sends freely, though both share the state store.
    const again = await startRun(home, sent);
    try {
      assert.equal(denialText(await again.callTool({ name: 'send_message', arguments: { channel: '#general', text: 'new process' } }, undefined, { timeout: 60_000 })), undefined);
    } finally {
      await again.close();
    }
  });
});

describe('toolgate policy explain with flows', () => {
  it('says which flow rule holds a call, from the tool\'s flow: in the policy or --roles, and --touched', async () => {
    const dir = tempDir();
    const file = writePolicy(dir, { version: '1', default: 'allow', tools: { post_tweet: { flow: ['egress'] } }, flows: [{ after: ['private', 'untrusted'], then: { egress: 'approve' } }] });
    const held = JSON.parse((await toolgate(['policy', 'explain', file, '--tool', 'post_tweet', '--touched', 'private,untrusted', '--json'], testEnv(dir))).stdout);
    assert.equal(held.verdict, 'approve');
    assert.equal(held.rule, '/flows/0/then/egress');
    assert.deepEqual(held.flow, ['egress']);
    const fresh = JSON.parse((await toolgate(['policy', 'explain', file, '--tool', 'post_tweet', '--touched', 'private', '--json'], testEnv(dir))).stdout);
    assert.equal(fresh.verdict, 'allow');
    const given = JSON.parse((await toolgate(['policy', 'explain', file, '--tool', 'other', '--roles', 'egress', '--touched', 'untrusted,private', '--json'], testEnv(dir))).stdout);
    assert.equal(given.verdict, 'approve');
  });
});
