import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { userInfo } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { ElicitRequestSchema, type ElicitResult } from '@modelcontextprotocol/sdk/types.js';
import { auditRows, cli, pendingApprovals, RECORDING, recorded, until } from './helpers/approvals.js';
import { BIN, denialText, tempDir, testEnv, writePolicy } from './helpers/toolgate.js';

const ME = `cli:${userInfo().username}`;

interface Run { client: Client; home: string; record: string; stderr: () => string; close(): Promise<void> }

/** An SDK client on `toolgate run` (with -p POLICY, or none: the recommended policy) wrapping the recording server. */
async function startRun(opts: { policy?: unknown; elicit?: (req: unknown) => ElicitResult; env?: Record<string, string> } = {}): Promise<Run> {
  const home = tempDir();
  const record = join(home, 'calls.jsonl');
  const policyArgs = opts.policy ? ['-p', writePolicy(home, opts.policy)] : [];
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [BIN, 'run', ...policyArgs, '--name', 'rec', '--', process.execPath, RECORDING],
    env: testEnv(home, { RECORD_FILE: record, ...opts.env }),
    stderr: 'pipe',
  });
  let stderr = '';
  transport.stderr?.on('data', (d: Buffer) => { stderr += d.toString(); });
  const client = new Client({ name: 'approvals-test', version: '1' }, opts.elicit ? { capabilities: { elicitation: {} } } : {});
  if (opts.elicit) client.setRequestHandler(ElicitRequestSchema, async (req) => opts.elicit!(req));
  await client.connect(transport);
  return { client, home, record, stderr: () => stderr, close: () => client.close() };
}

const call = (run: Run, name: string, args: Record<string, unknown>, extra: object = {}) => run.client.callTool({ name, arguments: args }, undefined, { timeout: 60_000, ...extra });

describe('toolgate run: human approval', () => {
  it('with no -p and a first request that is tools/call: reads allowed, Write and Execute limited, Destructive held until approved from the CLI', async () => {
    // One tool per tools/list page: toolgate must follow every page.
    const run = await startRun({ env: { TOOLS_PAGE_SIZE: '1' } });
    const watch = spawn(process.execPath, [BIN, 'approvals', 'list', '--watch', '--json'], { env: testEnv(run.home) });
    let watched = '';
    watch.stdout.on('data', (d: Buffer) => { watched += d.toString(); });
    try {
      // No tools/list from the client: toolgate listed the tools itself before deciding.
      assert.equal(denialText(await call(run, 'read_note', { name: 'a' })), undefined);
      for (let i = 0; i < 10; i++) assert.equal(denialText(await call(run, 'run_command', { command: `echo ${i}` })), undefined);
      assert.match(denialText(await call(run, 'run_command', { command: 'echo 11' })) ?? '', /Limit reached: 10 calls per minute/);
      for (let i = 0; i < 30; i++) assert.equal(denialText(await call(run, 'write_note', { name: `n${i}`, text: 'x' })), undefined);
      assert.match(denialText(await call(run, 'write_note', { name: 'n31', text: 'x' })) ?? '', /Limit reached: 30 calls per minute/);

      const held = call(run, 'delete_file', { path: '/tmp/x', api_token: 'sk-live-123' });
      const [pending] = await until(async () => { const p = await pendingApprovals(run.home); return p.length > 0 ? p : undefined; }, 'the held call to be listed');
      assert.equal(pending.tool, 'delete_file');
      assert.deepEqual(pending.args, { path: '/tmp/x', api_token: '***' }, 'secret-looking values are masked');
      assert.equal(pending.server, 'rec');
      assert.equal(pending.grant, 'local');
      assert.match(pending.id, /^[2-9a-z]{10}$/);
      const line = await until(() => watched.split('\n').find((l) => l.includes(pending.id)), 'the watcher to print it');
      assert.deepEqual(JSON.parse(line).args, { path: '/tmp/x', api_token: '***' });
      assert.ok(!recorded(run.record).some((c) => c.tool === 'delete_file'), 'not forwarded before approval');
      // While it waits, other calls of the same session go through.
      assert.equal(denialText(await call(run, 'read_note', { name: 'b' })), undefined);

      const approved = await cli(run.home, ['approvals', 'approve', pending.id]);
      assert.equal(approved.code, 0, approved.stderr);
      assert.equal(denialText(await held), undefined);
      assert.deepEqual(recorded(run.record).filter((c) => c.tool === 'delete_file'), [{ tool: 'delete_file', args: { path: '/tmp/x', api_token: 'sk-live-123' } }]);
      assert.equal(run.stderr().split(`toolgate approvals approve ${pending.id}`).length - 1, 1, 'stderr says how to approve, once');

      const again = await cli(run.home, ['approvals', 'approve', pending.id]);
      assert.equal(again.code, 1);
      assert.match(again.stderr, /already approved by .* and used/);
      assert.equal((await auditRows(run.home, 'approval_requested')).length, 1);

      // A tool added later (list_changed): toolgate lists again and the new Destructive tool is held, not unknown.
      assert.equal(denialText(await call(run, 'add_tool', {})), undefined);
      await assert.rejects(call(run, 'purge_notes', {}, { timeout: 500 }), /timed out/i);
      assert.ok((await pendingApprovals(run.home)).some((a) => a.tool === 'purge_notes'));
      assert.ok(!recorded(run.record).some((c) => c.tool === 'purge_notes'));
      const [row] = await auditRows(run.home, 'approved');
      assert.match(row.message, new RegExp(`approved by ${ME}`));
    } finally {
      watch.kill();
      await run.close();
    }
  });

  it('progress while waiting; denied with a reason; timed out; other calls are not held up', async () => {
    const run = await startRun({ policy: {
      version: '1', default: 'deny',
      tools: { read_note: {}, delete_file: { action: 'approve' }, write_note: { action: 'approve', approval: { timeout: '2s' } } },
    } });
    try {
      const progress: { message?: string }[] = [];
      const held = call(run, 'delete_file', { path: 'a' }, { onprogress: (p: { message?: string }) => progress.push(p) });
      const first = await until(() => progress[0], 'a progress notification');
      const id = /Waiting for approval ([2-9a-z]{10}) \(expires in [\dms]+\): toolgate approvals approve \1/.exec(first.message ?? '')?.[1];
      assert.ok(id, first.message);
      assert.equal(denialText(await call(run, 'read_note', { name: 'x' })), undefined);
      const denied = await cli(run.home, ['approvals', 'deny', id, '--reason', 'not today']);
      assert.equal(denied.code, 0, denied.stderr);
      const result = await held;
      assert.equal(denialText(result), `[POLICY DENIED] Denied by ${ME}: not today`);
      assert.deepEqual((result._meta as any)['dev.toolgate/decision'], { rule: '/tools/delete_file/action', retryAfterSeconds: null, approval: { id, status: 'denied' } });

      const timedOut = await call(run, 'write_note', { name: 'b', text: 'x' });
      assert.equal(denialText(timedOut), '[POLICY DENIED] Approval timed out after 2s');
      assert.equal((timedOut._meta as any)['dev.toolgate/decision'].approval.status, 'timeout');
      assert.deepEqual(recorded(run.record).map((c) => c.tool), ['read_note'], 'nothing held reached the server');
      assert.equal((await auditRows(run.home, 'rejected')).length, 1);
      assert.equal((await auditRows(run.home, 'timeout')).length, 1);
    } finally {
      await run.close();
    }
  });

  it('MCP elicitation: the zero-config policy asks the client for Destructive tools; accept forwards, decline denies', async () => {
    const answers: ElicitResult[] = [{ action: 'accept', content: { decision: 'approve' } }, { action: 'decline' }];
    const asked: string[] = [];
    const run = await startRun({ elicit: (req) => { asked.push((req as { params: { message: string } }).params.message); return answers.shift()!; } });
    try {
      assert.equal(denialText(await call(run, 'delete_file', { path: '/a', api_token: 'sk-9' })), undefined);
      assert.match(asked[0], /"delete_file"/);
      assert.match(asked[0], /"api_token": "\*\*\*"/);
      assert.ok(!asked[0].includes('sk-9'));
      assert.equal(denialText(await call(run, 'delete_file', { path: '/b' })), '[POLICY DENIED] Denied by client:approvals-test: decline in the client');
      assert.deepEqual(recorded(run.record), [{ tool: 'delete_file', args: { path: '/a', api_token: 'sk-9' } }]);
    } finally {
      await run.close();
    }
  });
});
