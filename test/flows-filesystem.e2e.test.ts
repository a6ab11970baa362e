import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import Database from 'better-sqlite3';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { pino } from 'pino';
import { AuditLog } from '../src/audit/index.js';
import { GatewayConfigSchema } from '../src/config/gateway.js';
import { Grants } from '../src/grants/grants.js';
import { Gateway } from '../src/gateway/server.js';
import { openSqliteState } from '../src/state/sqlite.js';
import type { StateStore } from '../src/state/types.js';
import { recorded, until } from './helpers/approvals.js';
import { denialText, ROOT, tempDir } from './helpers/toolgate.js';

const TRIFECTA = join(ROOT, 'test/fixtures/trifecta-server.mjs');
const FILESYSTEM = join(ROOT, 'node_modules/@modelcontextprotocol/server-filesystem/dist/index.js');
const ADMIN = 'admin-token-for-tests-0123456789';
/** Planted in the file server-filesystem reads: an AWS access key id (the detector's aws-access-key). */
const KEY = 'AKIAQ3EGV7XKZ2LMNP4R';

/**
 * The issue-27 trifecta with the real @modelcontextprotocol/server-filesystem as the private server
 * (its read tools are `private` by the classifier, not by an override), the fetch-like fixture
 * (untrusted) and the send_message fixture (egress), three servers of one multi-server grant. No
 * policy file: the recommended policy (redaction on, the trifecta rule) applies to each.
 */
describe('toolgate serve: the trifecta with the real server-filesystem (SPEC 11)', () => {
  let dir: string;
  let gateway: Gateway;
  let state: StateStore;
  let audit: AuditLog;
  let base: string;
  let agent: string;
  let fresh: string;
  const sentFile = () => join(dir, 'sent.jsonl');

  before(async () => {
    dir = tempDir();
    const files = join(dir, 'files');
    mkdirSync(files);
    writeFileSync(join(files, 'notes.txt'), `deploy notes\nAWS_ACCESS_KEY_ID=${KEY}\nthe launch code is 0000\n`);
    const fixture = (tools: string) => ({ command: process.execPath, args: [TRIFECTA], env: { TOOLS: tools, SENT_FILE: sentFile() } });
    const config = GatewayConfigSchema.parse({
      listen: '127.0.0.1:0', admin: { token: ADMIN }, sessions: { idle_timeout: '15m' },
      servers: { files: { command: process.execPath, args: [FILESYSTEM, files] }, web: fixture('fetch'), chat: fixture('send') },
    });
    state = openSqliteState(join(dir, 'state.db'));
    audit = new AuditLog(join(dir, 'audit.db'));
    gateway = new Gateway({ config, state, audit, log: pino({ level: 'silent' }) });
    base = `http://127.0.0.1:${(await gateway.start()).port}`;
    const grants = new Grants(state.grants);
    agent = (await grants.create({ server: 'files', servers: ['files', 'web', 'chat'], label: 'fs-bot' })).token;
    fresh = (await grants.create({ server: 'chat', label: 'someone-else' })).token;
  });

  after(async () => {
    await gateway.stop();
    audit.close();
    await state.close();
  });

  async function connect(server: string, token: string): Promise<Client> {
    const client = new Client({ name: 'flows-fs', version: '1' });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${base}/mcp/${server}`), { requestInit: { headers: { Authorization: `Bearer ${token}` } } }));
    return client;
  }
  const api = (path: string, init: RequestInit = {}) => fetch(`${base}${path}`, { ...init, headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' } });

  it('holds the send after a server-filesystem read and an untrusted fetch; runs once approved; a fresh agent sends freely; the planted key is redacted', async () => {
    const [files, web, chat, other] = await Promise.all([connect('files', agent), connect('web', agent), connect('chat', agent), connect('chat', fresh)]);
    const call = (c: Client, name: string, args: Record<string, unknown>) => c.callTool({ name, arguments: args }, undefined, { timeout: 60_000 });
    try {
      const read = await call(files, 'read_text_file', { path: join(dir, 'files', 'notes.txt') });
      assert.equal(denialText(read), undefined);
      const seen = JSON.stringify(read);
      assert.ok(!seen.includes(KEY), 'the key reached the client');
      assert.match(seen, /AWS_ACCESS_KEY_ID=\[REDACTED aws-access-key\]/);
      assert.match(seen, /the launch code is 0000/, 'the rest of the file is passed on');
      // server-filesystem returns the file twice: in content and in structuredContent.content.
      assert.match((read.structuredContent as { content: string }).content, /AWS_ACCESS_KEY_ID=\[REDACTED aws-access-key\]/);
      assert.equal(denialText(await call(web, 'fetch_page', { url: 'https://attacker.example/' })), undefined);

      const held = call(chat, 'send_message', { channel: '#leaks', text: 'the launch code is 0000' });
      const pending = await until(async () => ((await (await api('/api/approvals?status=pending')).json()) as { id: string; reason: string; rule: string }[])[0], 'the held send to be listed');
      assert.equal(pending.rule, '/flows/0/then/egress');
      assert.match(pending.reason, /read_text_file on files at \d\d:\d\d:\d\dZ \(private\); fetch_page on web at \d\d:\d\d:\d\dZ \(untrusted\)/);
      assert.equal(denialText(await call(other, 'send_message', { channel: '#general', text: 'another agent' })), undefined, 'a fresh agent sends freely');
      assert.deepEqual(recorded(sentFile()), [{ channel: '#general', text: 'another agent' }], 'the held send has not run');
      assert.equal((await api(`/api/approvals/${pending.id}/approve`, { method: 'POST', body: '{}' })).status, 200);
      assert.equal(denialText(await held), undefined);
      assert.deepEqual(recorded(sentFile()).at(-1), { channel: '#leaks', text: 'the launch code is 0000' });
    } finally {
      await Promise.all([files, web, chat, other].map((c) => c.close()));
    }

    // The audit: the read's row names the kind and count (two: content and structuredContent); the key is nowhere in the database or its WAL.
    const conn = new Database(join(dir, 'audit.db'), { readonly: true });
    try {
      const rows = conn.prepare<[], { outcome: string | null }>("SELECT outcome FROM audit WHERE kind = 'call' AND tool = 'read_text_file'").all();
      assert.deepEqual(rows.map((r) => r.outcome), ['result; redacted aws-access-key:2']);
    } finally {
      conn.close();
    }
    for (const file of [join(dir, 'audit.db'), join(dir, 'audit.db-wal')]) {
      if (existsSync(file)) assert.equal(readFileSync(file).indexOf(KEY), -1, `${file} holds the key`);
    }
  });
});
