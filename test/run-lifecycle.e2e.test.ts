import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { promisify } from 'node:util';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { AuditLog } from '../src/audit/index.js';
import { BIN, denialText, FIXTURES, LENIENT, RawSession, tempDir, testEnv, writePolicy } from './helpers/toolgate.js';

const exec = promisify(execFile);
const ALLOW_ALL = { version: '1', default: 'allow' };
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function until(check: () => boolean, what: string, ms = 10_000): Promise<void> {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(25);
  }
}

function toolgate(args: string[], home: string, extra: Record<string, string> = {}) {
  return exec(process.execPath, [BIN, ...args], { env: testEnv(home, extra) }).then(
    (r) => ({ code: 0, stdout: r.stdout, stderr: r.stderr }),
    (e) => ({ code: e.code as number, stdout: e.stdout as string, stderr: e.stderr as string }),
  );
}

describe('toolgate run: process lifecycle', () => {
  it('passes the child\'s exit code back', async () => {
    const dir = tempDir();
    const r = await toolgate(['run', '-p', writePolicy(dir, ALLOW_ALL), '--', process.execPath, join(FIXTURES, 'exit-server.mjs'), '7', 'now'], dir);
    assert.equal(r.code, 7);
  });

  it('forwards SIGTERM to the child and exits with its code', async () => {
    const dir = tempDir();
    const child = spawn(process.execPath, [BIN, 'run', '-p', writePolicy(dir, ALLOW_ALL), '--', process.execPath, join(FIXTURES, 'exit-server.mjs'), '0'], { env: testEnv(dir) });
    let err = '';
    child.stderr.on('data', (d) => { err += d; });
    await until(() => err.includes('exit-server ready'), 'the child to start');
    child.kill('SIGTERM');
    const code = await new Promise((r) => child.on('exit', r));
    assert.equal(code, 42);
  });

  it('closing stdin shuts the child down cleanly', async () => {
    const dir = tempDir();
    const raw = new RawSession(['-p', writePolicy(dir, ALLOW_ALL), '--', process.execPath, join(FIXTURES, 'exit-server.mjs'), '5'], testEnv(dir));
    assert.equal(await raw.close(), 5);
  });

  it('refuses to start on an invalid policy or without a command, in one line, exit 2', async () => {
    const dir = tempDir();
    const bad = writePolicy(dir, { version: '1', tools: { x: { action: 'maybe' } } });
    const r = await toolgate(['run', '-p', bad, '--', 'true'], dir);
    assert.equal(r.code, 2);
    assert.match(r.stderr, /^toolgate: invalid policy .*policy\.json:\d+:\d+: \/tools\/x\/action: must be one of/);
    assert.equal(r.stderr.trim().split('\n').length, 1);
    const nothing = await toolgate(['run', '-p', writePolicy(dir, ALLOW_ALL)], dir);
    assert.equal(nothing.code, 2);
    assert.match(nothing.stderr, /nothing to run/);
    const missing = await toolgate(['run', '-p', writePolicy(dir, ALLOW_ALL), '--', 'no-such-command-xyz'], dir);
    assert.equal(missing.code, 127);
    assert.match(missing.stderr, /command not found: no-such-command-xyz/);
    assert.ok(!missing.stderr.includes('    at '), 'no stack trace');
  });

  it('a crashed upstream fails the call in flight with a clear error and exits with its code', async () => {
    const dir = tempDir();
    const raw = new RawSession(['-p', writePolicy(dir, ALLOW_ALL), '--', process.execPath, LENIENT], testEnv(dir));
    await raw.initialize();
    raw.send({ jsonrpc: '2.0', id: 'x', method: 'tools/call', params: { name: 'exit', arguments: {} } });
    const r = await raw.response('x');
    assert.match(r.error.message, /upstream MCP server is unavailable: the server process exited with code 3/);
    assert.equal(await raw.exited, 3);
  });
});

describe('toolgate run: policy and state at run time', () => {
  it('reloads the policy when the file changes, keeps the old one when the new one is invalid, keeps counters', async () => {
    const dir = tempDir();
    const limit = { limits: [{ counter: 'echo', window: 'day', max: 3 }] };
    const file = writePolicy(dir, { version: '1', default: 'allow', tools: { echo: limit } });
    const raw = new RawSession(['-p', file, '--', process.execPath, LENIENT], testEnv(dir, { TOOLGATE_LOG_LEVEL: 'info' }));
    await raw.initialize();
    const call = async (id: string, name = 'echo') => (await raw.request(id, 'tools/call', { name, arguments: {} })).result.content[0].text as string;
    assert.match(await call('1'), /^echo ran/);
    assert.match(await call('2'), /^echo ran/);
    writePolicy(dir, { version: '1', default: 'allow', tools: { echo: limit, fail: { action: 'deny' } } });
    await until(() => raw.stderr.includes('policy reloaded'), 'the reload');
    assert.match(await call('3', 'fail'), /POLICY DENIED/);
    assert.match(await call('4'), /^echo ran/, 'two of three used before the reload');
    assert.match(await call('5'), /Limit reached/, 'the counter survived the reload');
    writeFileSync(file, '{"version": "1", "tools": ');
    await until(() => raw.stderr.includes('policy reload rejected'), 'the rejection');
    assert.match(await call('6', 'fail'), /POLICY DENIED/, 'the old policy is still in force');
    await raw.close();
    const audit = new AuditLog(join(dir, 'audit.db'));
    assert.equal(audit.query({ kind: 'policy_reload' }).length, 1);
    audit.close();
  });

  it('the kill switch takes effect on the next call', async () => {
    const dir = tempDir();
    const state = `sqlite:${join(dir, 'state.db')}`;
    const raw = new RawSession(['-p', writePolicy(dir, ALLOW_ALL), '--state', state, '--name', 'lenient', '--', process.execPath, LENIENT], testEnv(dir));
    await raw.initialize();
    assert.ok((await raw.request('a', 'tools/call', { name: 'echo', arguments: {} })).result.content[0].text.startsWith('echo ran'));
    const on = await toolgate(['kill-switch', 'on', '--server', 'lenient', '--reason', 'incident 42', '--state', state], dir);
    assert.equal(on.code, 0, on.stderr);
    const r = await raw.request('b', 'tools/call', { name: 'echo', arguments: {} });
    assert.equal(r.result._meta['dev.toolgate/decision'].rule, '(kill-switch)');
    await toolgate(['kill-switch', 'off', '--server', 'lenient', '--state', state], dir);
    assert.ok((await raw.request('c', 'tools/call', { name: 'echo', arguments: {} })).result.content[0].text.startsWith('echo ran'));
    await raw.close();
  });

  it('shadow mode forwards what it would deny and audits it as shadow_deny', async () => {
    const dir = tempDir();
    const raw = new RawSession(['-p', writePolicy(dir, { version: '1', default: 'deny' }), '--shadow', '--', process.execPath, LENIENT], testEnv(dir));
    await raw.initialize();
    const r = await raw.request('s', 'tools/call', { name: 'delete_all', arguments: {} });
    assert.match(r.result.content[0].text, /^delete_all ran/);
    await raw.close();
    const audit = new AuditLog(join(dir, 'audit.db'));
    assert.deepEqual(audit.query({ kind: 'call' }).map((row) => [row.tool, row.decision, row.rule]), [['delete_all', 'shadow_deny', '(default)']]);
    audit.close();
  });

  it('a forwarded call is in the audit log even when toolgate is killed with SIGKILL', async () => {
    const dir = tempDir();
    const serverLog = join(dir, 'server.log');
    const raw = new RawSession(['-p', writePolicy(dir, ALLOW_ALL), '--', process.execPath, LENIENT], testEnv(dir, { LENIENT_LOG: serverLog }));
    await raw.initialize();
    raw.send({ jsonrpc: '2.0', id: 'h', method: 'tools/call', params: { name: 'hang', arguments: { order: 66 } } });
    await until(() => { try { return readFileSync(serverLog, 'utf8').includes('"hang"'); } catch { return false; } }, 'the server to receive the call');
    raw.child.kill('SIGKILL');
    await raw.exited;
    const audit = new AuditLog(join(dir, 'audit.db'));
    const rows = audit.query({ tool: 'hang' });
    assert.equal(rows.length, 1);
    assert.equal(rows[0].decision, 'allow');
    assert.equal(rows[0].outcome, null, 'no answer came before the kill');
    assert.ok(audit.verify().ok);
    audit.close();
  });

  it('the outcome and latency of every answered call survive a SIGKILL once the turn that answered is over', async () => {
    const dir = tempDir();
    const raw = new RawSession(['-p', writePolicy(dir, ALLOW_ALL), '--', process.execPath, LENIENT], testEnv(dir));
    await raw.initialize();
    for (let i = 0; i < 50; i++) raw.send({ jsonrpc: '2.0', id: `k${i}`, method: 'tools/call', params: { name: 'echo', arguments: { i } } });
    await raw.waitFor(() => raw.lines.filter((m: any) => typeof m?.id === 'string' && m.id.startsWith('k') && m.result).length === 50);
    // An outcome's journal line follows its answer within the same turn of toolgate's event loop:
    // a ping answered after the answers shows that turn is over.
    raw.send({ jsonrpc: '2.0', id: 'after', method: 'ping' });
    await raw.waitFor(() => raw.lines.some((m: any) => m?.id === 'after'));
    raw.child.kill('SIGKILL');
    await raw.exited;
    const audit = new AuditLog(join(dir, 'audit.db'));
    const rows = audit.query({ tool: 'echo' });
    assert.equal(rows.length, 50);
    assert.deepEqual(rows.filter((r) => r.outcome !== 'result' || r.latency_ms === null).map((r) => r.id), [], 'every answered call keeps its outcome');
    assert.ok(audit.verify().ok);
    audit.close();
  });
});

describe('toolgate run --upstream (Streamable HTTP)', () => {
  it('proxies a remote server with configured headers, and enforces the policy', async () => {
    const dir = tempDir();
    const server = spawn(process.execPath, [join(FIXTURES, 'http-server.mjs'), '0'], { env: { ...process.env, REQUIRE_KEY: '1' } });
    try {
      const port = await new Promise<number>((resolve, reject) => {
        server.stdout.on('data', (d: Buffer) => { const m = /listening (\d+)/.exec(d.toString()); if (m) resolve(Number(m[1])); });
        server.on('exit', () => reject(new Error('fixture server exited')));
      });
      const policy = writePolicy(dir, { version: '1', default: 'allow', hide: ['delete_*'] });
      const transport = new StdioClientTransport({
        command: process.execPath,
        args: [BIN, 'run', '-p', policy, '--upstream', `http://127.0.0.1:${port}/mcp`, '--header', 'x-api-key: secret-123'],
        env: testEnv(dir, { TOOLGATE_LOG_LEVEL: 'debug' }),
        stderr: 'pipe',
      });
      let stderr = '';
      transport.stderr!.on('data', (d) => { stderr += d; });
      const client = new Client({ name: 'http-test', version: '1' });
      await client.connect(transport);
      assert.deepEqual((await client.listTools()).tools.map((t) => t.name), ['echo']);
      const r = await client.callTool({ name: 'echo', arguments: { message: 'over http' } });
      assert.equal((r.content as any)[0].text, 'Echo: over http');
      assert.match(denialText(await client.callTool({ name: 'delete_everything', arguments: {} }))!, /not available/);
      await client.close();
      assert.ok(!stderr.includes('secret-123'), 'the upstream credential never reaches the logs');
    } finally {
      server.kill();
    }
  });
});
