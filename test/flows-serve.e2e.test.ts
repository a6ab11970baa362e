import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
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
import { cli, denialText, ROOT, tempDir, testEnv } from './helpers/toolgate.js';

const TRIFECTA = join(ROOT, 'test/fixtures/trifecta-server.mjs');
const ADMIN = 'admin-token-for-tests-0123456789';

/**
 * Under serve, three servers (a private read, an attacker page, a send_message that logs) and one
 * agent: three grants, one per server, sharing the operator-set tag agent:bot. No policy file: each
 * server gets the recommended policy, which includes the trifecta rule. Then the same with one
 * multi-server grant (grants create --server a --server b, and the API's "servers").
 */
describe('toolgate serve: the trifecta across servers of one agent (SPEC 11)', () => {
  let dir: string;
  let gateway: Gateway;
  let state: StateStore;
  let audit: AuditLog;
  let base: string;
  const tokens: Record<string, string> = {};

  before(async () => {
    dir = tempDir();
    const server = (tools: string) => ({ command: process.execPath, args: [TRIFECTA], env: { TOOLS: tools, SENT_FILE: join(dir, 'sent.jsonl') } });
    const config = GatewayConfigSchema.parse({
      listen: '127.0.0.1:0', admin: { token: ADMIN }, sessions: { idle_timeout: '15m' },
      servers: { files: server('read'), web: server('fetch'), chat: server('send') },
    });
    state = openSqliteState(join(dir, 'state.db'));
    audit = new AuditLog(join(dir, 'audit.db'));
    gateway = new Gateway({ config, state, audit, log: pino({ level: 'silent' }) });
    base = `http://127.0.0.1:${(await gateway.start()).port}`;
    const grants = new Grants(state.grants);
    for (const s of ['files', 'web', 'chat']) tokens[s] = (await grants.create({ server: s, label: `bot-${s}`, tags: ['agent:bot'] })).token;
    tokens.fresh = (await grants.create({ server: 'chat', label: 'someone-else' })).token;
  });

  after(async () => {
    await gateway.stop();
    audit.close();
    await state.close();
  });

  /** The trifecta by one agent whose sessions on files, web and chat use these tokens; `fresh` a token of another agent on chat. */
  async function trifecta(agent: { files: string; web: string; chat: string }, fresh: string): Promise<void> {
    const [files, web, chat, other] = await Promise.all([connect('files', agent.files), connect('web', agent.web), connect('chat', agent.chat), connect('chat', fresh)]);
    const call = (c: Client, name: string, args: Record<string, unknown>) => c.callTool({ name, arguments: args }, undefined, { timeout: 60_000 });
    const sent = () => recorded(join(dir, 'sent.jsonl')).length;
    try {
      const before = sent();
      assert.equal(denialText(await call(files, 'read_file', { path: 'notes/secret.txt' })), undefined);
      assert.equal(denialText(await call(web, 'fetch_page', { url: 'https://attacker.example/' })), undefined);
      const held = call(chat, 'send_message', { channel: '#leaks', text: 'again' });
      const pending = await until(async () => ((await (await api('/api/approvals?status=pending')).json()) as { id: string; reason: string }[])[0], 'the held send to be listed');
      assert.match(pending.reason, /read_file on files at .*\(private\); fetch_page on web at .*\(untrusted\)/);
      assert.equal(denialText(await call(other, 'send_message', { channel: '#general', text: 'another agent' })), undefined);
      assert.equal(sent(), before + 1, 'only the other agent\'s send ran');
      assert.equal((await api(`/api/approvals/${pending.id}/approve`, { method: 'POST', body: '{}' })).status, 200);
      assert.equal(denialText(await held), undefined);
      assert.equal(sent(), before + 2);
    } finally {
      await Promise.all([files, web, chat, other].map((c) => c.close()));
    }
  }

  it('one multi-server grant made by the API is one agent across its servers; it opens only those', async () => {
    const res = await api('/api/grants', { method: 'POST', body: JSON.stringify({ servers: ['files', 'web', 'chat'], label: 'multi-api' }) });
    assert.equal(res.status, 201);
    const made = (await res.json()) as { token: string; server: string; servers: string[] };
    assert.deepEqual([made.server, made.servers], ['files', ['files', 'web', 'chat']]);
    await trifecta({ files: made.token, web: made.token, chat: made.token }, tokens.fresh);
    const only = (await (await api('/api/grants', { method: 'POST', body: JSON.stringify({ servers: ['files'], label: 'files-only' }) })).json()) as { token: string };
    await assert.rejects(connect('chat', only.token), /403|not this one|Forbidden/i);
    assert.equal((await api('/api/grants', { method: 'POST', body: JSON.stringify({ servers: ['files', 'nope'], label: 'x' }) })).status, 400);
  });

  it('grants create --server a --server b makes one grant on both', async () => {
    const r = await cli(['grants', 'create', '--state', `sqlite:${join(dir, 'state.db')}`, '--audit', join(dir, 'audit.db'), '--server', 'files', '--server', 'web', '--server', 'chat', '--label', 'multi-cli', '--json'], testEnv(dir));
    assert.equal(r.code, 0, r.stderr);
    const made = JSON.parse(r.stdout) as { token: string; servers: string[] };
    assert.deepEqual(made.servers, ['files', 'web', 'chat']);
    await trifecta({ files: made.token, web: made.token, chat: made.token }, tokens.fresh);
  });

  async function connect(server: string, token: string): Promise<Client> {
    const client = new Client({ name: 'flows', version: '1' });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${base}/mcp/${server}`), { requestInit: { headers: { Authorization: `Bearer ${token}` } } }));
    return client;
  }
  const api = (path: string, init: RequestInit = {}) => fetch(`${base}${path}`, { ...init, headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' } });

  it('holds the agent\'s send after its read and fetch on other servers, names them, sends once approved; another agent sends freely', async () => {
    const [files, web, chat, fresh] = await Promise.all([connect('files', tokens.files), connect('web', tokens.web), connect('chat', tokens.chat), connect('chat', tokens.fresh)]);
    const call = (c: Client, name: string, args: Record<string, unknown>) => c.callTool({ name, arguments: args }, undefined, { timeout: 60_000 });
    const before = recorded(join(dir, 'sent.jsonl')).length;
    try {
      assert.equal(denialText(await call(chat, 'send_message', { channel: '#general', text: 'hi' })), undefined);
      assert.equal(denialText(await call(files, 'read_file', { path: 'notes/secret.txt' })), undefined);
      assert.equal(denialText(await call(web, 'fetch_page', { url: 'https://attacker.example/' })), undefined);
      const held = call(chat, 'send_message', { channel: '#leaks', text: 'the launch code is 0000' });
      const pending = await until(async () => ((await (await api('/api/approvals?status=pending')).json()) as { id: string; reason: string; rule: string }[])[0], 'the held send to be listed');
      assert.equal(pending.rule, '/flows/0/then/egress');
      assert.match(pending.reason, /read_file on files at \d\d:\d\d:\d\dZ \(private\); fetch_page on web at \d\d:\d\d:\d\dZ \(untrusted\)/);
      assert.equal(denialText(await call(fresh, 'send_message', { channel: '#general', text: 'another agent' })), undefined, 'another grant without the tag is another agent');
      assert.equal(recorded(join(dir, 'sent.jsonl')).length, before + 2, 'the held send has not run');
      assert.equal((await api(`/api/approvals/${pending.id}/approve`, { method: 'POST', body: '{}' })).status, 200);
      assert.equal(denialText(await held), undefined);
      assert.deepEqual(recorded(join(dir, 'sent.jsonl')).at(-1), { channel: '#leaks', text: 'the launch code is 0000' });
    } finally {
      await Promise.all([files, web, chat, fresh].map((c) => c.close()));
    }
  });
});
