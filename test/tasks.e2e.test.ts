/**
 * MCP tasks (2025-11-25 task-augmented tools/call) through `toolgate run` and `toolgate serve`,
 * with SDK v1 clients of two grants and an upstream whose tasks every session can reach (so only
 * toolgate keeps one grant from another's tasks): the creating call is decided and charged once
 * and runs once, tasks/get, tasks/result, tasks/list and tasks/cancel answer only the grant that
 * created the task, and the call's audit row gets the task's end.
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { execFile } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { after, before, describe, it } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResultSchema, CreateTaskResultSchema, ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { auditRows, until } from './helpers/approvals.js';
import { Serve } from './helpers/serve.js';
import { BIN, denialText, EVERYTHING, FIXTURES, tempDir, testEnv, writePolicy } from './helpers/toolgate.js';

const exec = promisify(execFile);

const POLICY = {
  version: '1', default: 'deny',
  tools: {
    research: { limits: [{ counter: 'research', window: 'day', max: 2, scope: 'grant' }] },
    runs: {},
    'simulate-research-query': {},
  },
};

/** The tasks fixture on a free port; its URL. */
async function startFixture(): Promise<{ url: string; child: ChildProcess }> {
  const child = spawn(process.execPath, [join(FIXTURES, 'tasks-server.mjs'), '0'], { stdio: ['ignore', 'pipe', 'inherit'] });
  const port = await new Promise<number>((resolve, reject) => {
    child.stdout!.on('data', (d: Buffer) => { const m = /listening (\d+)/.exec(d.toString()); if (m) resolve(Number(m[1])); });
    child.on('exit', () => reject(new Error('the tasks fixture exited')));
  });
  return { url: `http://127.0.0.1:${port}/mcp`, child };
}

/** Starts a task-augmented research call; the task's id. */
async function startTask(client: Client, topic: string, hold = false): Promise<string> {
  const created = await client.request({ method: 'tools/call', params: { name: 'research', arguments: { topic, hold }, task: { ttl: 60_000 } } }, CreateTaskResultSchema);
  return created.task.taskId;
}

/** The task's status once it is terminal. */
async function settled(client: Client, taskId: string): Promise<string> {
  return until(async () => {
    const { status } = await client.experimental.tasks.getTask(taskId);
    return ['completed', 'failed', 'cancelled'].includes(status) ? status : undefined;
  }, `task ${taskId} to end`);
}

const NOT_FOUND = /Failed to retrieve task: Task not found/;

async function runsSoFar(client: Client): Promise<number> {
  const r = await client.callTool({ name: 'runs', arguments: {} });
  return Number((r.content as { text: string }[])[0].text);
}

/** The two grants' clients against one upstream, however they reach it; asserts what must hold for tasks. */
async function grantsKeepTheirTasks(alpha: Client, beta: Client, rows: () => Promise<any[]>): Promise<void> {
  const taskId = await startTask(alpha, 'tides');
  assert.equal(await settled(alpha, taskId), 'completed');
  const result = await alpha.experimental.tasks.getTaskResult(taskId, CallToolResultSchema);
  assert.deepEqual(result.content, [{ type: 'text', text: 'report on tides' }]);
  assert.deepEqual((await alpha.experimental.tasks.listTasks()).tasks.map((t) => t.taskId), [taskId]);

  // The other grant knows the id: every way of reaching the task reads as an unknown id.
  await assert.rejects(beta.experimental.tasks.getTask(taskId), NOT_FOUND);
  await assert.rejects(beta.experimental.tasks.getTaskResult(taskId, CallToolResultSchema), NOT_FOUND);
  await assert.rejects(beta.experimental.tasks.cancelTask(taskId), NOT_FOUND);
  await assert.rejects(beta.experimental.tasks.getTask('0123456789abcdef0123456789abcdef'), NOT_FOUND);
  assert.deepEqual((await beta.experimental.tasks.listTasks()).tasks, [], "the other grant's list shows none of alpha's tasks");

  // A held task cancelled by its own grant: its row ends as cancelled.
  const held = await startTask(alpha, 'the sea', true);
  await alpha.experimental.tasks.cancelTask(held);
  assert.equal(await settled(alpha, held), 'cancelled');

  // Decided and charged once each: the limit (2 a day) is used up by the two tasks, not by polling.
  assert.match(denialText(await alpha.callTool({ name: 'research', arguments: { topic: 'a third' } }))!, /Limit reached/);
  assert.equal(await runsSoFar(alpha), 2, 'each task-creating call ran once upstream');

  const outcomes = await until(async () => {
    const found = (await rows()).filter((r) => r.tool === 'research');
    return found.length === 2 && found.every((r) => r.outcome !== 'task_created') ? found : undefined;
  }, 'both task rows to end');
  assert.deepEqual(outcomes.map((r) => r.outcome).sort(), ['task_cancelled', 'task_completed']);
}

describe('tasks through toolgate run (2025-11-25, two grants, one upstream)', () => {
  let fixture: { url: string; child: ChildProcess };
  before(async () => { fixture = await startFixture(); });
  after(() => { fixture.child.kill(); });

  it('the upstream itself hands any session any task (what toolgate has to stop)', async () => {
    const a = new Client({ name: 'direct-a', version: '1' });
    const b = new Client({ name: 'direct-b', version: '1' });
    await a.connect(new StreamableHTTPClientTransport(new URL(fixture.url)));
    await b.connect(new StreamableHTTPClientTransport(new URL(fixture.url)));
    const taskId = await startTask(a, 'direct', true);
    assert.equal((await b.experimental.tasks.getTask(taskId)).taskId, taskId);
    await b.experimental.tasks.cancelTask(taskId);
    await a.close();
    await b.close();
  });

  it('only the creating grant reaches a task; the call is charged and run once; its audit row gets the end', async () => {
    const home = tempDir();
    const policy = writePolicy(home, POLICY);
    // A fresh upstream: `runs` counts from zero.
    const own = await startFixture();
    const open = async (grant: string) => {
      const client = new Client({ name: `run-${grant}`, version: '1' });
      await client.connect(new StdioClientTransport({
        command: process.execPath,
        args: [BIN, 'run', '-p', policy, '--grant', grant, '--upstream', own.url],
        env: testEnv(home),
        stderr: 'pipe',
      }));
      return client;
    };
    try {
      const alpha = await open('alpha');
      const beta = await open('beta');
      await grantsKeepTheirTasks(alpha, beta, () => auditRows(home, 'allow'));
      await alpha.close();
      await beta.close();
    } finally {
      own.child.kill();
    }
  });

  it('server-everything: its task tool runs through toolgate and the row ends completed', async () => {
    const home = tempDir();
    const policy = writePolicy(home, POLICY);
    const client = new Client({ name: 'run-everything', version: '1' });
    await client.connect(new StdioClientTransport({ command: process.execPath, args: [BIN, 'run', '-p', policy, '--', process.execPath, EVERYTHING], env: testEnv(home), stderr: 'pipe' }));
    try {
      const created = await client.request({ method: 'tools/call', params: { name: 'simulate-research-query', arguments: { topic: 'tides' }, task: { ttl: 60_000 } } }, CreateTaskResultSchema);
      const taskId = created.task.taskId;
      assert.equal(await settled(client, taskId), 'completed');
      const result = await client.experimental.tasks.getTaskResult(taskId, CallToolResultSchema);
      assert.match((result.content as { text: string }[])[0].text, /Research Report: tides/);
      const rows = await until(async () => {
        const found = (await auditRows(home, 'allow')).filter((r) => r.tool === 'simulate-research-query');
        return found.length === 1 && found[0].outcome === 'task_completed' ? found : undefined;
      }, 'the row to end');
      assert.equal(rows.length, 1);
    } finally {
      await client.close();
    }
  });
});

describe("input sent to a running task of server-everything (its elicitation through tasks/result)", () => {
  for (const [choice, denied] of [['snake', true], ['programming', false]] as const) {
    it(`an answer the policy ${denied ? 'denies never reaches the task' : 'allows reaches the task'} (${choice})`, async () => {
      const home = tempDir();
      const policy = writePolicy(home, {
        version: '1', default: 'deny',
        tools: { 'simulate-research-query': { deny_if: [{ conditions: [{ path: 'args.interpretation', op: 'eq', value: 'snake' }], on_deny: 'No snakes.' }] } },
      });
      const client = new Client({ name: 'run-everything', version: '1' }, { capabilities: { elicitation: { form: {} } } });
      client.setRequestHandler(ElicitRequestSchema, async () => ({ action: 'accept', content: { interpretation: choice } }));
      await client.connect(new StdioClientTransport({ command: process.execPath, args: [BIN, 'run', '-p', policy, '--', process.execPath, EVERYTHING], env: testEnv(home), stderr: 'pipe' }));
      try {
        const created = await client.request({ method: 'tools/call', params: { name: 'simulate-research-query', arguments: { topic: 'python', ambiguous: true }, task: { ttl: 60_000 } } }, CreateTaskResultSchema);
        const result = await client.experimental.tasks.getTaskResult(created.task.taskId, CallToolResultSchema);
        const report = (result.content as { text: string }[])[0].text;
        if (denied) assert.match(report, /elicitation unavailable/);
        else assert.match(report, /Research Report: python \(programming\)/);
        const denials = async () => (await auditRows(home, 'deny')).filter((r) => r.tool === 'simulate-research-query');
        if (denied) assert.match((await until(async () => (await denials())[0], 'the denial\'s row')).message, /input for a running task: No snakes/);
        else assert.deepEqual(await denials(), []);
      } finally {
        await client.close();
      }
    });
  }
});

describe('tasks through toolgate serve (2025-11-25, two grants, one upstream)', () => {
  let fixture: { url: string; child: ChildProcess };
  let serve: Serve;
  let home: string;
  let config: string;
  const tokens: Record<string, string> = {};

  before(async () => {
    fixture = await startFixture();
    home = tempDir();
    const policy = writePolicy(home, POLICY);
    config = join(home, 'toolgate.json');
    writeFileSync(config, JSON.stringify({ listen: '127.0.0.1:0', state: 'sqlite:./state.db', audit: './audit.db', servers: { research: { url: fixture.url, policy } } }));
    for (const label of ['alpha', 'beta']) {
      const { stdout } = await exec(process.execPath, [BIN, 'grants', 'create', '-c', config, '--server', 'research', '--label', label, '--json'], { env: testEnv(home) });
      tokens[label] = (JSON.parse(stdout) as { token: string }).token;
    }
    serve = new Serve(['-c', config, '--json'], testEnv(home));
  });
  after(async () => {
    await serve.stop();
    fixture.child.kill();
  });

  it('only the creating grant reaches a task; the call is charged and run once; its audit row gets the end', async () => {
    const { listen } = await serve.started();
    const open = async (grant: string) => {
      const client = new Client({ name: `serve-${grant}`, version: '1' });
      await client.connect(new StreamableHTTPClientTransport(new URL(`${listen}/mcp/research`), { requestInit: { headers: { Authorization: `Bearer ${tokens[grant]}` } } }));
      return client;
    };
    const alpha = await open('alpha');
    const beta = await open('beta');
    await grantsKeepTheirTasks(alpha, beta, () => auditRows(home, 'allow', ['-c', config]));
    // Another client of the same grant reaches the task (it is the grant's, not the session's).
    const taskId = await startTask(beta, 'rivers');
    const beta2 = await open('beta');
    assert.equal(await settled(beta2, taskId), 'completed');
    await assert.rejects(alpha.experimental.tasks.getTask(taskId), NOT_FOUND);
    for (const c of [alpha, beta, beta2]) await c.close();
  });
});
