import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import Database from 'better-sqlite3';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { LoggingMessageNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { Serve } from './helpers/serve.js';
import { BIN, FIXTURES, connectThroughToolgate, tempDir, testEnv, writePolicy } from './helpers/toolgate.js';
import { PLANTED } from './fixtures/secrets-values.mjs';

/**
 * The result policy end to end (SPEC section 11): a real SDK server (test/fixtures/secrets-server.mjs)
 * returns planted secrets in text, structuredContent, an embedded resource, a resource, a prompt
 * and a log message; through `toolgate run` and `toolgate serve` the client sees markers only,
 * max_bytes cuts, deny_if withholds, and the audit database holds kinds and counts, never a value.
 */

const SERVER = join(FIXTURES, 'secrets-server.mjs');
const POLICY = {
  version: '1', default: 'allow',
  results: { redact: ['secrets'] },
  tools: {
    big_page: { results: { max_bytes: 1000 } },
    fetch_page: { results: { deny_if: [{ conditions: [{ path: 'result.text', op: 'regex', value: '(?i)ignore (all )?previous instructions' }], on_deny: 'The page carries instructions for the agent.' }] } },
  },
};
/** A distinctive part of every planted value (the private key's body, not its armour). */
const VALUES = [PLANTED.aws, PLANTED.github, 'MIIEpAIBAAKCAQEAx4Yz', PLANTED.jwt, PLANTED.dbPassword];

type Text = { type: string; text: string; resource?: { text: string } };

function assertNoPlanted(what: string, text: string): void {
  for (const v of VALUES) assert.ok(!text.includes(v), `${what} holds ${v.slice(0, 10)}…`);
}

/** Every planted value absent from the audit database and its WAL, byte for byte. */
function assertAuditClean(db: string): void {
  for (const file of [db, `${db}-wal`]) {
    if (!existsSync(file)) continue;
    const bytes = readFileSync(file);
    for (const v of VALUES) assert.equal(bytes.indexOf(v), -1, `${file} holds ${v.slice(0, 10)}…`);
  }
}

function outcomes(db: string): Record<string, string[]> {
  const conn = new Database(db, { readonly: true });
  try {
    const rows = conn.prepare<[], { tool: string; outcome: string | null }>("SELECT tool, outcome FROM audit WHERE kind = 'call' ORDER BY id").all();
    const out: Record<string, string[]> = {};
    for (const r of rows) (out[r.tool] ??= []).push(r.outcome ?? '');
    return out;
  } finally {
    conn.close();
  }
}

/** What every transport must show the client. */
async function exercise(client: Client): Promise<void> {
  const logs: unknown[] = [];
  client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => { logs.push(n.params); });

  const config = await client.callTool({ name: 'read_config', arguments: {} });
  const seen = JSON.stringify(config);
  assertNoPlanted('the read_config result', seen);
  const content = config.content as Text[];
  for (const kind of ['aws-access-key', 'github-token', 'private-key', 'jwt', 'connection-password']) assert.ok(content[0].text.includes(`[REDACTED ${kind}]`), kind);
  assert.equal(content[1].resource!.text, 'GITHUB_TOKEN=[REDACTED github-token]');
  assert.deepEqual(config.structuredContent, { aws: '[REDACTED aws-access-key]', database_url: 'postgres://u:[REDACTED connection-password]@h/db', nested: { jwt: '[REDACTED jwt]' } });
  assert.match(content.at(-1)!.text, /^\[toolgate\] Secrets were redacted from this result \(.*, in structuredContent too\) by the policy \(\/results\/redact\)/);

  const resource = await client.readResource({ uri: 'config://env' });
  assert.equal((resource.contents[0] as { text: string }).text, 'AWS key: [REDACTED aws-access-key]');
  const prompt = await client.getPrompt({ name: 'deploy' });
  assert.equal((prompt.messages[0].content as { text: string }).text, 'Deploy using [REDACTED github-token]');
  assert.ok(logs.length > 0, 'the log notification arrived');
  assertNoPlanted('the log notifications', JSON.stringify(logs));
  assert.match(JSON.stringify(logs), /\[REDACTED aws-access-key\]/);

  const big = await client.callTool({ name: 'big_page', arguments: { size: 5000 } });
  const bigContent = big.content as Text[];
  assert.equal(bigContent[0].text, `${'p'.repeat(1000)}\n[TRUNCATED by toolgate: 4000 of 5000 bytes cut, max_bytes 1000]`);
  assert.match(bigContent[1].text, /cut to max_bytes 1000 \(\/tools\/big_page\/results\/max_bytes\): 4000 of 5000 bytes were cut/);

  const evil = await client.callTool({ name: 'fetch_page', arguments: { url: 'https://evil.example/' } });
  assert.equal(evil.isError, true);
  assert.deepEqual(evil.content, [{ type: 'text', text: '[RESULT WITHHELD] The page carries instructions for the agent. The tool ran; its result is not shown.' }]);
  const plain = await client.callTool({ name: 'fetch_page', arguments: { url: 'https://example.com/' } });
  assert.deepEqual(plain.content, [{ type: 'text', text: 'A plain page.' }]);
}

function assertAuditFacts(db: string): void {
  assertAuditClean(db);
  const o = outcomes(db);
  assert.deepEqual(o.read_config, ['result; redacted aws-access-key:2 github-token:2 private-key:1 jwt:2 connection-password:2']);
  assert.deepEqual(o.big_page, ['result; cut 4000 of 5000 bytes']);
  assert.deepEqual(o.fetch_page, ['result; withheld by /tools/fetch_page/results/deny_if/0 (the tool ran)', 'result']);
}

describe('result policy through toolgate run', () => {
  it('the client sees markers, cuts and a withheld result; the audit holds kinds and counts only', async () => {
    const home = tempDir();
    const policy = writePolicy(home, POLICY);
    const c = await connectThroughToolgate({ policy, server: [process.execPath, SERVER], home });
    try {
      await exercise(c.client);
    } finally {
      await c.close();
    }
    assertAuditFacts(join(home, 'audit.db'));
  });

  it('with no policy, the recommended one redacts secrets', async () => {
    const home = tempDir();
    const client = new Client({ name: 'zero-config', version: '1' });
    await client.connect(new StdioClientTransport({ command: process.execPath, args: [BIN, 'run', '--', process.execPath, SERVER], env: testEnv(home), stderr: 'pipe' }));
    try {
      const result = await client.callTool({ name: 'read_config', arguments: {} });
      assertNoPlanted('the zero-config result', JSON.stringify(result));
      assert.ok((result.content as Text[])[0].text.includes('[REDACTED aws-access-key]'));
    } finally {
      await client.close();
    }
    assertAuditClean(join(home, 'audit.db'));
  });
});

describe('result policy through toolgate serve', () => {
  let dir: string;
  let serve: Serve;
  let mcp: string;

  before(async () => {
    dir = tempDir();
    const policy = writePolicy(dir, POLICY);
    const config = writePolicy(dir, {
      listen: '127.0.0.1:0', state: 'sqlite:./state.db', audit: './audit.db',
      servers: { secrets: { command: process.execPath, args: [SERVER], auth: 'none', policy } },
    }, 'toolgate.json');
    serve = new Serve(['-c', config, '--json'], testEnv(dir));
    const info = await serve.started();
    mcp = info.servers[0].mcp[0];
  });

  after(async () => { await serve.stop(); });

  it('the client sees markers, cuts and a withheld result; the audit holds kinds and counts only', async () => {
    const client = new Client({ name: 'results-serve', version: '1' });
    await client.connect(new StreamableHTTPClientTransport(new URL(mcp)));
    try {
      await exercise(client);
    } finally {
      await client.close();
    }
    await serve.stop();
    assertAuditFacts(join(dir, 'audit.db'));
  });
});
