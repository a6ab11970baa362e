/**
 * The tasks extension (2026-07-28, `io.modelcontextprotocol/tasks`) against a real SDK v2 server
 * (test/fixtures/modern-tasks-server.mjs): two grants' sessions share one upstream process, as a
 * pooled stateless server would serve them, and their clients send modern requests (the `_meta`
 * envelope on each) straight into the session, where the modern front door will hand them. The
 * upstream gives any task to anyone who names it; toolgate keeps each grant to its own, judges
 * the input tasks/update sends, charges the call once and ends its audit row.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { pino } from 'pino';
import type { Json } from '../src/proxy/messages.js';
import { StdioUpstream } from '../src/proxy/upstream-stdio.js';
import { world } from './helpers/tasks.js';
import { FIXTURES } from './helpers/toolgate.js';

const upstream = new StdioUpstream({ command: process.execPath, args: [join(FIXTURES, 'modern-tasks-server.mjs')], env: process.env, log: pino({ level: 'silent' }) });
after(() => upstream.close());

const POLICY = {
  version: '1', default: 'deny',
  tools: {
    research: { limits: [{ counter: 'research', window: 'day', max: 5, scope: 'grant' }], deny_if: [{ conditions: [{ path: 'args.depth', op: 'gt', value: 3 }], on_deny: 'Too deep.' }] },
    runs: {},
  },
};

const envelope = {
  'io.modelcontextprotocol/protocolVersion': '2026-07-28',
  'io.modelcontextprotocol/clientCapabilities': { extensions: { 'io.modelcontextprotocol/tasks': {} } },
  'io.modelcontextprotocol/clientInfo': { name: 'modern-test', version: '1' },
};

/** Sessions on the one upstream: what they send goes to it; its answers go to the session whose id prefix they carry. */
function pool() {
  const w = world(POLICY);
  const sessions = new Map<string, ReturnType<typeof w.open>>();
  const direct = new Map<string, (m: Json) => void>();
  upstream.onmessage = (m) => {
    const id = String((m as Json).id);
    if (direct.has(id)) return direct.get(id)!(m as Json);
    sessions.get(id.split(':')[0])?.s.fromServer(m);
  };
  const open = (grant: string) => {
    const t = w.open(grant, { era: 'modern' });
    sessions.set(grant, t);
    return t;
  };
  let n = 0;
  /** A modern request from `grant`'s client; its answer once it came, and whether the upstream saw it. */
  const request = async (t: ReturnType<typeof w.open>, grant: string, method: string, params: Json, meta: Json = envelope) => {
    const id = `${grant}:${++n}`;
    const sent = t.toServer.length;
    t.s.fromClient({ jsonrpc: '2.0', id, method, params: { ...params, _meta: meta } });
    for (let i = 0; i < 50 && t.toServer.length === sent; i++) await new Promise((r) => setImmediate(r));
    const forwarded = t.toServer.length > sent;
    if (forwarded) await upstream.send(t.toServer.at(-1)!);
    for (let i = 0; i < 500; i++) {
      const answer = t.toClient.find((m) => m.id === id);
      if (answer) return { answer, forwarded };
      await new Promise((r) => setTimeout(r, 5));
    }
    throw new Error(`no answer to ${method}`);
  };
  /** A request straight to the upstream, past toolgate. */
  const bypass = (method: string, params: Json) => new Promise<Json>((resolve) => {
    const id = `direct-${++n}`;
    direct.set(id, resolve);
    void upstream.send({ jsonrpc: '2.0', id, method, params: { ...params, _meta: envelope } });
  });
  return { ...w, open, request, bypass };
}

describe('the tasks extension through a policy session, on a real SDK v2 server', () => {
  it('only the creating grant reaches the task; input is judged; the call is charged and run once; the row gets the end', async () => {
    await upstream.started;
    const { open, request, bypass, rows, counters } = pool();
    const alpha = open('alpha');
    const beta = open('beta');

    const created = await request(alpha, 'alpha', 'tools/call', { name: 'research', arguments: { topic: 'tides' } });
    const task = created.answer.result as Json;
    assert.equal(task.resultType, 'task');
    const taskId = task.taskId as string;

    // Past toolgate, the server hands the task to anyone: the other grant's answers below are toolgate's.
    assert.equal(((await bypass('tasks/get', { taskId })).result as Json).taskId, taskId);
    for (const [method, params] of [['tasks/get', { taskId }], ['tasks/cancel', { taskId }], ['tasks/update', { taskId, inputResponses: { depth: { action: 'accept', content: { depth: 1 } } } }]] as const) {
      const { answer, forwarded } = await request(beta, 'beta', method, params);
      assert.deepEqual(answer.error, { code: -32602, message: 'Failed to retrieve task: Task not found' }, method);
      assert.equal(forwarded, false, `${method} for another grant's task never reaches the server`);
    }

    const waiting = await request(alpha, 'alpha', 'tasks/get', { taskId });
    assert.equal((waiting.answer.result as Json).status, 'input_required');
    const tooDeep = await request(alpha, 'alpha', 'tasks/update', { taskId, inputResponses: { depth: { action: 'accept', content: { depth: 9 } } } });
    assert.match((tooDeep.answer.error as Json).message as string, /\[POLICY DENIED\] Too deep/);
    assert.equal(tooDeep.forwarded, false);
    assert.equal(((await bypass('tasks/get', { taskId })).result as Json).status, 'input_required', 'the refused input never reached the task');

    const ok = await request(alpha, 'alpha', 'tasks/update', { taskId, inputResponses: { depth: { action: 'accept', content: { depth: 2 } } } });
    assert.equal(ok.forwarded, true);
    assert.equal((ok.answer.result as Json).resultType, 'complete');
    const done = await request(alpha, 'alpha', 'tasks/get', { taskId });
    assert.equal((done.answer.result as Json).status, 'completed');
    assert.deepEqual((done.answer.result as Json).result, { content: [{ type: 'text', text: 'report on tides, depth 2' }] });

    const runs = await request(alpha, 'alpha', 'tools/call', { name: 'runs', arguments: {} });
    assert.deepEqual((runs.answer.result as Json).content, [{ type: 'text', text: '1' }], 'the task-creating call ran once');
    assert.equal(counters.reservations, 1, 'the research call was charged once (runs has no limits); no task request was');
    const research = rows.rows.filter((r) => r.tool === 'research');
    assert.deepEqual(research.map((r) => [r.decision, r.outcomes]), [['allow', ['task_created', 'task_completed']], ['deny', []]]);
    assert.match(research[1].message!, /input for a running task: Too deep/);
  });

  it('a request that does not declare the extension gets -32021 (MissingRequiredClientCapability) for tasks/*, even for its own task, and reaches nothing', async () => {
    await upstream.started;
    const { open, request } = pool();
    const alpha = open('alpha');
    const created = await request(alpha, 'alpha', 'tools/call', { name: 'research', arguments: { topic: 'reefs' } });
    const taskId = (created.answer.result as Json).taskId as string;
    assert.equal(typeof taskId, 'string');
    const undeclared = { ...envelope, 'io.modelcontextprotocol/clientCapabilities': {} };
    for (const [method, params] of [['tasks/get', { taskId }], ['tasks/cancel', { taskId }], ['tasks/update', { taskId, inputResponses: {} }], ['tasks/get', { taskId: 'never-made' }]] as const) {
      const { answer, forwarded } = await request(alpha, 'alpha', method, params, undeclared);
      const error = answer.error as Json;
      assert.equal(error.code, -32021, method);
      assert.deepEqual(error.data, { requiredCapabilities: { extensions: { 'io.modelcontextprotocol/tasks': {} } } });
      assert.equal(forwarded, false, `${method} without the extension never reaches the server`);
    }
    const declared = await request(alpha, 'alpha', 'tasks/get', { taskId });
    assert.equal((declared.answer.result as Json).taskId, taskId, 'the same request declaring the extension reaches the task');
  });
});
