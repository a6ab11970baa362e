/**
 * Attacks on the MCP 2026-07-28 front door and what came with it (tasks, result redaction): each
 * test names what an outside attacker tried and what must hold.
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { CallToolResultSchema, CreateTaskResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { SignJWT } from 'jose';
import { pino } from 'pino';
import { AuditLog } from '../src/audit/index.js';
import { GatewayConfigSchema } from '../src/config/gateway.js';
import { Gateway } from '../src/gateway/server.js';
import { openMemoryState } from '../src/state/memory.js';
import { until } from './helpers/approvals.js';
import { newSigningKey, TestIdentityProvider, type SigningKey } from './helpers/oidc.js';
import { BIN, EVERYTHING, FIXTURES, tempDir, testEnv, writePolicy } from './helpers/toolgate.js';

const AWS = 'AKIAIOSFODNN7EXAMPLE';

async function startTasksFixture(): Promise<{ url: string; child: ChildProcess }> {
  const child = spawn(process.execPath, [join(FIXTURES, 'tasks-server.mjs'), '0'], { stdio: ['ignore', 'pipe', 'inherit'] });
  const port = await new Promise<number>((resolve, reject) => {
    child.stdout!.on('data', (d: Buffer) => { const m = /listening (\d+)/.exec(d.toString()); if (m) resolve(Number(m[1])); });
    child.on('exit', () => reject(new Error('the tasks fixture exited')));
  });
  return { url: `http://127.0.0.1:${port}/mcp`, child };
}

describe('result redaction holds for a tool call run as a task (2025-11-25 tasks/result)', () => {
  let fixture: { url: string; child: ChildProcess };
  before(async () => { fixture = await startTasksFixture(); });
  after(() => { fixture.child.kill(); });

  it('a secret in a task-run result is redacted in tasks/result as in a plain tools/call answer', async () => {
    const home = tempDir();
    const policy = writePolicy(home, { version: '1', default: 'deny', tools: { research: { results: { redact: ['secrets'] } } } });
    const client = new Client({ name: 'attacker', version: '1' });
    await client.connect(new StdioClientTransport({ command: process.execPath, args: [BIN, 'run', '-p', policy, '--upstream', fixture.url], env: testEnv(home), stderr: 'pipe' }));
    try {
      // Control: the same tool answered directly is redacted.
      const direct = await client.callTool({ name: 'research', arguments: { topic: AWS } });
      assert.doesNotMatch(JSON.stringify(direct), new RegExp(AWS));
      const created = await client.request({ method: 'tools/call', params: { name: 'research', arguments: { topic: AWS }, task: { ttl: 60_000 } } }, CreateTaskResultSchema);
      const taskId = created.task.taskId;
      await until(async () => {
        const { status } = await client.experimental.tasks.getTask(taskId);
        return status === 'completed' ? status : undefined;
      }, 'the task to end');
      const result = await client.experimental.tasks.getTaskResult(taskId, CallToolResultSchema);
      assert.doesNotMatch(JSON.stringify(result), new RegExp(AWS), 'the task result carries the planted secret');
      assert.match(JSON.stringify(result), /REDACTED aws-access-key/);
    } finally {
      await client.close();
    }
  });
});

describe('a 2026-07-28 client is judged as the token it presents, not as an earlier token of the same subject', () => {
  const idp = new TestIdentityProvider();
  let k1: SigningKey;
  let gateway: Gateway;
  let audit: AuditLog;
  let base: string;

  before(async () => {
    const dir = tempDir();
    k1 = await newSigningKey('k1');
    await idp.start([k1]);
    const policy = writePolicy(dir, {
      version: '1', default: 'allow',
      tools: { 'get-sum': { require: [{ conditions: [{ path: 'grant.tags', op: 'contains', value: 'ops' }], on_deny: 'get-sum is for the ops group' }] } },
    });
    const servers = { everything: { command: process.execPath, args: [EVERYTHING], policy } };
    audit = new AuditLog(join(dir, 'audit.db'));
    gateway = new Gateway({ config: GatewayConfigSchema.parse({ listen: '127.0.0.1:0', servers }), state: openMemoryState(), audit, log: pino({ level: process.env.TEST_LOG ?? 'silent' }) });
    base = `http://127.0.0.1:${(await gateway.start()).port}`;
    gateway.setConfig(GatewayConfigSchema.parse({ listen: '127.0.0.1:0', servers, oauth: { issuer: idp.issuer, audience: `${base}/mcp/{server}`, jwks_cooldown: '0s' } }));
  });

  after(async () => {
    await gateway.stop();
    audit.close();
    await idp.stop();
  });

  it('a token of the same sub without the ops group is denied get-sum although an ops token of that sub opened the internal session', async () => {
    const resource = `${base}/mcp/everything`;
    const ENVELOPE = { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {} };
    const call = async (bearer: string, id: number) => {
      const res = await fetch(resource, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', authorization: `Bearer ${bearer}`, 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/call', 'mcp-name': 'get-sum' },
        body: JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'get-sum', arguments: { a: 1, b: 2 }, _meta: ENVELOPE } }),
      });
      return JSON.stringify(await res.json());
    };
    const sign = (sub: string, groups: string[]) => new SignJWT({ sub, groups })
      .setProtectedHeader({ alg: 'RS256', kid: k1.jwk.kid, typ: 'at+jwt' }).setIssuer(idp.issuer).setAudience(resource).setExpirationTime('5m').sign(k1.privateKey);
    assert.match(await call(await sign('never-ops', []), 1), /ops group/, 'a subject without ops is denied');
    assert.doesNotMatch(await call(await sign('ops-first', ['ops']), 2), /ops group/, 'an ops token may call it');
    // The same subject's narrower token (a downscoped token handed to an agent, or the group since removed).
    assert.match(await call(await sign('ops-first', []), 3), /ops group/, 'a narrower token of the same sub was judged with the tags of the token that opened the session');
  });

  it('a legacy session opened with an ops token is not used with a narrower token of the same sub', async () => {
    const resource = `${base}/mcp/everything`;
    const sign = (groups: string[]) => new SignJWT({ sub: 'legacy-sub', groups })
      .setProtectedHeader({ alg: 'RS256', kid: k1.jwk.kid, typ: 'at+jwt' }).setIssuer(idp.issuer).setAudience(resource).setExpirationTime('5m').sign(k1.privateKey);
    const post = (bearer: string, body: unknown, sid?: string) => fetch(resource, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', authorization: `Bearer ${bearer}`, 'mcp-protocol-version': '2025-06-18', ...(sid ? { 'mcp-session-id': sid } : {}) },
      body: JSON.stringify(body),
    });
    const wide = await sign(['ops']);
    const init = await post(wide, { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'legacy', version: '1' } } });
    const sid = init.headers.get('mcp-session-id')!;
    await init.text();
    assert.equal((await post(wide, { jsonrpc: '2.0', method: 'notifications/initialized' }, sid)).status, 202);
    const res = await post(await sign([]), { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'get-sum', arguments: { a: 1, b: 2 } } }, sid);
    const text = await res.text();
    assert.ok(res.status === 404 || /ops group/.test(text), `the narrower token used the ops session: ${res.status} ${text.slice(0, 200)}`);
  });
});
