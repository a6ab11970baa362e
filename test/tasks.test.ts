import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { pino } from 'pino';
import { Approvals } from '../src/approvals/index.js';
import type { Json } from '../src/proxy/messages.js';
import { MemoryApprovalStore } from '../src/state/memory-approvals.js';
import { MemoryOAuthStore } from '../src/state/memory.js';
import { TaskBook } from '../src/tasks/records.js';
import { Rows, TASK, ticks, world } from './helpers/tasks.js';


describe('a task-augmented tools/call (2025-11-25)', () => {
  it('is decided and charged once, and its audit row gets the task\'s end', async () => {
    const { open, counters, rows } = world();
    const a = open('alpha');
    a.s.fromClient({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'research', arguments: { topic: 'x' }, task: { ttl: 60_000 } } });
    assert.equal(a.toServer.length, 1);
    assert.deepEqual((a.toServer[0].params as Json).task, { ttl: 60_000 });
    a.s.fromServer({ jsonrpc: '2.0', id: 1, result: { task: TASK } });
    assert.deepEqual((await a.answer(1)).result, { task: TASK });
    assert.equal(counters.reservations, 1);
    assert.deepEqual(rows.rows.map((r) => [r.tool, r.decision, r.outcomes]), [['research', 'allow', ['task_created']]]);

    a.s.fromClient({ jsonrpc: '2.0', id: 2, method: 'tasks/get', params: { taskId: 'task-1' } });
    await new Promise((res) => setImmediate(res));
    assert.equal(a.toServer.at(-1)!.method, 'tasks/get');
    a.s.fromServer({ jsonrpc: '2.0', id: 2, result: { ...TASK, status: 'working' } });
    await a.answer(2);
    a.s.fromClient({ jsonrpc: '2.0', id: 3, method: 'tasks/result', params: { taskId: 'task-1' } });
    await new Promise((res) => setImmediate(res));
    assert.equal(a.toServer.at(-1)!.method, 'tasks/result');
    a.s.fromServer({ jsonrpc: '2.0', id: 3, result: { content: [{ type: 'text', text: 'report' }] } });
    await a.answer(3);
    // A later status notification that the task completed changes nothing: its end is recorded once.
    a.s.fromServer({ jsonrpc: '2.0', method: 'notifications/tasks/status', params: { ...TASK, status: 'completed' } });
    await new Promise((res) => setImmediate(res));
    assert.equal(counters.reservations, 1, 'tasks/get and tasks/result are not calls: nothing more is charged');
    assert.equal(rows.rows.length, 1, 'one row for the call');
    assert.deepEqual(rows.rows[0].outcomes, ['task_created', 'task_completed']);
  });

  it("a tasks/result error that only says the server no longer knows the task does not end the row; the task's own error does", async () => {
    const { open, rows } = world();
    const a = open('alpha');
    a.s.fromClient({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'research', arguments: {}, task: {} } });
    a.s.fromServer({ jsonrpc: '2.0', id: 1, result: { task: TASK } });
    await a.answer(1);
    a.s.fromClient({ jsonrpc: '2.0', id: 2, method: 'tasks/result', params: { taskId: 'task-1' } });
    await ticks();
    a.s.fromServer({ jsonrpc: '2.0', id: 2, error: { code: -32602, message: 'Task not found: task-1' } });
    await a.answer(2);
    await ticks();
    assert.deepEqual(rows.rows[0].outcomes, ['task_created']);
    a.s.fromClient({ jsonrpc: '2.0', id: 3, method: 'tasks/result', params: { taskId: 'task-1' } });
    await ticks();
    a.s.fromServer({ jsonrpc: '2.0', id: 3, error: { code: -32603, message: 'the research crashed' } });
    await a.answer(3);
    await ticks();
    assert.deepEqual(rows.rows[0].outcomes, ['task_created', 'task_failed']);
  });

  it('a denied call creates no task: nothing is forwarded', async () => {
    const { open } = world();
    const a = open('alpha');
    a.s.fromClient({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'research', arguments: { depth: 9 }, task: {} } });
    const answer = await a.answer(1);
    assert.match(JSON.stringify(answer.result), /Too deep/);
    assert.equal(a.toServer.length, 0);
  });
});

describe("input sent to a running task (2025-11-25: an answer to the server's request made for the task)", () => {
  it('is judged like the call: an accepted elicitation the policy denies reaches the server as an error, one it allows as it came', async () => {
    const { open, rows, counters } = world();
    const a = open('alpha');
    a.s.fromClient({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'research', arguments: { depth: 1 }, task: {} } });
    a.s.fromServer({ jsonrpc: '2.0', id: 1, result: { task: TASK } });
    await a.answer(1);
    const ask = (id: number, taskId: string) => ({ jsonrpc: '2.0', id, method: 'elicitation/create', params: { message: 'How deep?', requestedSchema: { type: 'object', properties: { depth: { type: 'number' } } }, _meta: { 'io.modelcontextprotocol/related-task': { taskId } } } });
    a.s.fromServer(ask(50, 'task-1'));
    a.s.fromClient({ jsonrpc: '2.0', id: 50, result: { action: 'accept', content: { depth: 8 } } });
    a.s.fromServer(ask(51, 'task-1'));
    a.s.fromClient({ jsonrpc: '2.0', id: 51, result: { action: 'accept', content: { depth: 2 } } });
    a.s.fromServer(ask(52, 'task-of-another-grant'));
    a.s.fromClient({ jsonrpc: '2.0', id: 52, result: { action: 'accept', content: { depth: 2 } } });
    await ticks();
    // Answers to different server requests may pass each other; each is sent once.
    const toServer = a.toServer.filter((m) => typeof m.id === 'number' && m.id >= 50).sort((x, y) => (x.id as number) - (y.id as number));
    assert.deepEqual(toServer.map((m) => m.id), [50, 51, 52]);
    assert.match(((toServer[0].error as Json).message as string), /\[POLICY DENIED\] Too deep/);
    assert.deepEqual(toServer[1].result, { action: 'accept', content: { depth: 2 } });
    assert.equal((toServer[2].error as Json).message, 'Failed to retrieve task: Task not found');
    assert.equal(rows.rows.filter((r) => r.decision === 'deny').length, 1);
    assert.equal(counters.reservations, 1);
  });
});

describe('tasks belong to the grant that created them', () => {
  async function created() {
    const w = world();
    const a = w.open('alpha');
    const b = w.open('beta');
    a.s.fromClient({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'research', arguments: {}, task: {} } });
    a.s.fromServer({ jsonrpc: '2.0', id: 1, result: { task: TASK } });
    await a.answer(1);
    return { ...w, a, b };
  }

  for (const method of ['tasks/get', 'tasks/result', 'tasks/cancel']) {
    it(`another grant's ${method} for it is "not found", as for an id that never existed, and never reaches the upstream`, async () => {
      const { b } = await created();
      b.s.fromClient({ jsonrpc: '2.0', id: 'seen', method, params: { taskId: 'task-1' } });
      b.s.fromClient({ jsonrpc: '2.0', id: 'guessed', method, params: { taskId: 'task-404' } });
      const seen = await b.answer('seen');
      const guessed = await b.answer('guessed');
      assert.deepEqual(seen.error, { code: -32602, message: 'Failed to retrieve task: Task not found' });
      assert.deepEqual(seen.error, guessed.error);
      assert.equal(b.toServer.length, 0);
    });
  }

  it("a server request made for another grant's task never reaches the client: the server hears the task is not found", async () => {
    const { a, b } = await created();
    const ask = { jsonrpc: '2.0', id: 70, method: 'elicitation/create', params: { message: 'secret question', requestedSchema: { type: 'object', properties: {} }, _meta: { 'io.modelcontextprotocol/related-task': { taskId: 'task-1' } } } };
    b.s.fromServer(ask);
    a.s.fromServer(ask);
    await ticks();
    assert.equal(b.toClient.some((m) => m.method === 'elicitation/create'), false);
    assert.deepEqual(b.toServer, [{ jsonrpc: '2.0', id: 70, error: { code: -32602, message: 'Failed to retrieve task: Task not found' } }]);
    assert.equal(a.toClient.filter((m) => m.method === 'elicitation/create').length, 1, 'the owner gets it');
    // A late answer from b's client to the request it never saw is dropped.
    b.s.fromClient({ jsonrpc: '2.0', id: 70, result: { action: 'accept', content: {} } });
    await ticks();
    assert.equal(b.toServer.length, 1);
  });

  it("tasks/list shows a grant only its own tasks", async () => {
    const { a, b } = await created();
    const listing = { tasks: [TASK, { ...TASK, taskId: 'task-of-nobody' }, { junk: true }], nextCursor: 'c2' };
    for (const [who, id] of [[a, 'la'], [b, 'lb']] as const) {
      who.s.fromClient({ jsonrpc: '2.0', id, method: 'tasks/list', params: {} });
      who.s.fromServer({ jsonrpc: '2.0', id, result: listing });
    }
    assert.deepEqual((await a.answer('la')).result, { tasks: [TASK], nextCursor: 'c2' });
    assert.deepEqual((await b.answer('lb')).result, { tasks: [], nextCursor: 'c2' });
  });

  it("a status notification reaches only the grant that owns the task (the extension's carries its result)", async () => {
    const { a, b } = await created();
    const note = (taskId: string) => ({ jsonrpc: '2.0', method: 'notifications/tasks', params: { ...TASK, taskId, status: 'completed', result: { content: [{ type: 'text', text: 'secret' }] } } });
    b.s.fromServer(note('task-1'));
    b.s.fromServer(note('task-unknown'));
    b.s.fromServer({ jsonrpc: '2.0', method: 'notifications/tasks/status', params: { status: 'working' } });
    a.s.fromServer(note('task-1'));
    b.s.fromServer({ jsonrpc: '2.0', method: 'notifications/message', params: { level: 'info', data: 'after' } });
    await ticks();
    assert.deepEqual(b.toClient.map((m) => m.method), ['notifications/message']);
    assert.deepEqual(a.toClient.filter((m) => m.method === 'notifications/tasks').length, 1);
  });

  it('a cancelled task ends its row as cancelled, once, whoever of the grant sees it', async () => {
    const { a, rows, open } = await created();
    const a2 = open('alpha'); // another client of the same grant
    a2.s.fromClient({ jsonrpc: '2.0', id: 5, method: 'tasks/cancel', params: { taskId: 'task-1' } });
    await new Promise((res) => setImmediate(res));
    assert.equal(a2.toServer.at(-1)!.method, 'tasks/cancel');
    a2.s.fromServer({ jsonrpc: '2.0', id: 5, result: { ...TASK, status: 'cancelled' } });
    await a2.answer(5);
    a.s.fromClient({ jsonrpc: '2.0', id: 6, method: 'tasks/get', params: { taskId: 'task-1' } });
    await new Promise((res) => setImmediate(res));
    a.s.fromServer({ jsonrpc: '2.0', id: 6, result: { ...TASK, status: 'cancelled' } });
    await a.answer(6);
    await new Promise((res) => setImmediate(res));
    assert.deepEqual(rows.rows[0].outcomes, ['task_created', 'task_cancelled']);
  });
});

describe('a fleet whose instances keep an audit database each', () => {
  it('the instance holding the row ends it; another that sees the end first leaves it to that one', async () => {
    const { open, rows } = world();
    const a = open('alpha');
    const elsewhere = new Rows('/other/instance/audit.db');
    const a2 = open('alpha', { audit: elsewhere });
    a.s.fromClient({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'research', arguments: {}, task: {} } });
    a.s.fromServer({ jsonrpc: '2.0', id: 1, result: { task: TASK } });
    await a.answer(1);
    a2.s.fromServer({ jsonrpc: '2.0', method: 'notifications/tasks/status', params: { ...TASK, status: 'completed' } });
    await ticks();
    assert.deepEqual(rows.rows[0].outcomes, ['task_created']);
    a.s.fromServer({ jsonrpc: '2.0', method: 'notifications/tasks/status', params: { ...TASK, status: 'completed' } });
    await ticks();
    assert.deepEqual(rows.rows[0].outcomes, ['task_created', 'task_completed']);
    assert.equal(elsewhere.rows.length, 0);
  });
});

describe('the tasks extension (2026-07-28, io.modelcontextprotocol/tasks)', () => {
  const CREATED = { resultType: 'task', taskId: 't-9', status: 'working', ttlMs: 60_000, createdAt: '2026-12-02T00:00:00Z', lastUpdatedAt: '2026-12-02T00:00:00Z' };

  async function running() {
    const w = world();
    const a = w.open('alpha', { era: 'modern' });
    a.s.fromClient({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'research', arguments: { depth: 1 } } });
    a.s.fromServer({ jsonrpc: '2.0', id: 1, result: CREATED });
    assert.deepEqual((await a.answer(1)).result, CREATED);
    return { ...w, a };
  }

  it('a task the server chose to create is charged once; tasks/get with its inlined result ends the row', async () => {
    const { a, counters, rows } = await running();
    a.s.fromClient({ jsonrpc: '2.0', id: 2, method: 'tasks/get', params: { taskId: 't-9' } });
    await new Promise((res) => setImmediate(res));
    a.s.fromServer({ jsonrpc: '2.0', id: 2, result: { ...CREATED, resultType: 'complete', status: 'failed', error: { code: -32603, message: 'boom' } } });
    await a.answer(2);
    await new Promise((res) => setImmediate(res));
    assert.equal(counters.reservations, 1);
    assert.deepEqual(rows.rows[0].outcomes, ['task_created', 'task_failed']);
  });

  it('tasks/update is judged like the call: input the policy denies is refused and never forwarded; allowed input is', async () => {
    const { a, rows, counters } = await running();
    a.s.fromClient({ jsonrpc: '2.0', id: 3, method: 'tasks/update', params: { taskId: 't-9', inputResponses: { q: { action: 'accept', content: { depth: 7 } } } } });
    const refused = await a.answer(3);
    assert.match((refused.error as Json).message as string, /\[POLICY DENIED\] Too deep/);
    assert.equal(a.toServer.some((m) => m.method === 'tasks/update'), false);
    assert.equal(rows.rows.at(-1)!.decision, 'deny');
    assert.equal(rows.rows.at(-1)!.rule, '/tools/research/deny_if/0');

    a.s.fromClient({ jsonrpc: '2.0', id: 4, method: 'tasks/update', params: { taskId: 't-9', inputResponses: { q: { action: 'accept', content: { depth: 2 } } } } });
    await new Promise((res) => setImmediate(res));
    await new Promise((res) => setImmediate(res));
    assert.equal(a.toServer.at(-1)!.method, 'tasks/update');
    assert.equal(counters.reservations, 1, 'input to a running task is not charged again');
  });

  it('tasks/update from another grant is "not found"; input that could poison a merging server is refused', async () => {
    const { a, open } = await running();
    const b = open('beta', { era: 'modern' });
    b.s.fromClient({ jsonrpc: '2.0', id: 3, method: 'tasks/update', params: { taskId: 't-9', inputResponses: {} } });
    assert.equal(((await b.answer(3)).error as Json).message, 'Failed to retrieve task: Task not found');
    a.s.fromClientLine('{"jsonrpc":"2.0","id":4,"method":"tasks/update","params":{"taskId":"t-9","inputResponses":{"q":{"action":"accept","content":{"__proto__":{"depth":9}}}}}}');
    assert.match(((await a.answer(4)).error as Json).message as string, /__proto__/);
    assert.equal(b.toServer.length + a.toServer.filter((m) => m.method === 'tasks/update').length, 0);
  });

  it('tasks/update is refused to a legacy client (a 2025 revision has no such method)', async () => {
    const { open } = world();
    const a = open('alpha');
    a.s.fromClient({ jsonrpc: '2.0', id: 3, method: 'tasks/update', params: { taskId: 't-9', inputResponses: {} } });
    assert.equal(((await a.answer(3)).error as Json).code, -32601);
  });

  it('notifications/tasks saying the task completed ends its row', async () => {
    const { a, rows } = await running();
    a.s.fromServer({ jsonrpc: '2.0', method: 'notifications/tasks', params: { ...CREATED, status: 'completed', result: { content: [] } } });
    await new Promise((res) => setImmediate(res));
    await new Promise((res) => setImmediate(res));
    assert.deepEqual(rows.rows[0].outcomes, ['task_created', 'task_completed']);
    assert.equal(a.toClient.at(-1)!.method, 'notifications/tasks');
  });
});

describe('input to a task whose call a person approved', () => {
  const policy = {
    version: '1',
    tools: {
      deploy: { action: 'approve', deny_if: [{ conditions: [{ path: 'args.env', op: 'eq', value: 'prod' }], on_deny: 'Not prod.' }] },
      refund: { approve_if: [{ conditions: [{ path: 'args.amount', op: 'gt', value: 100 }] }] },
    },
  };

  /** A modern session whose call `name` was held, approved from the CLI, forwarded, and answered with a task. */
  async function approvedTask(name: string, args: Json) {
    const approvals = new Approvals({ store: new MemoryApprovalStore(), log: pino({ level: 'silent' }) });
    const w = world(policy, approvals);
    const a = w.open('alpha', { era: 'modern' });
    a.s.fromClient({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name, arguments: args } });
    let pending;
    for (let i = 0; i < 50 && !pending; i++) {
      await ticks();
      pending = (await approvals.store.list({ status: 'pending' }))[0];
    }
    await approvals.decide(pending!.id, true, 'cli:ops', 'cli');
    for (let i = 0; i < 50 && a.toServer.length === 0; i++) await ticks();
    assert.equal(a.toServer[0].method, 'tools/call');
    a.s.fromServer({ jsonrpc: '2.0', id: 1, result: { resultType: 'task', taskId: 't-1', status: 'working', ttlMs: null, createdAt: 'x', lastUpdatedAt: 'x' } });
    await a.answer(1);
    const update = async (id: number, content: Json) => {
      a.s.fromClient({ jsonrpc: '2.0', id, method: 'tasks/update', params: { taskId: 't-1', inputResponses: { q: { action: 'accept', content } } } });
      await ticks();
      return a.toServer.find((m) => m.id === id) ? 'forwarded' : ((await a.answer(id)).error as Json).message as string;
    };
    return { update, close: () => approvals.close() };
  }

  it('the approval covers input that keeps the approved arguments; a deny_if the input meets refuses it, and so does input changing what was approved', async () => {
    const t = await approvedTask('deploy', { env: 'staging' });
    assert.equal(await t.update(2, { note: 'go', env: 'staging' }), 'forwarded');
    assert.match(await t.update(3, { env: 'prod' }), /\[POLICY DENIED\] Not prod/);
    assert.match(await t.update(4, { env: 'qa' }), /needs human approval.*cannot be held for approval/);
    t.close();
  });

  it('input that meets an approve_if is refused: the person approved the call\'s own arguments, not these', async () => {
    const t = await approvedTask('refund', { amount: 150 });
    assert.equal(await t.update(2, { note: 'thanks' }), 'forwarded', 'the approved arguments themselves');
    assert.match(await t.update(3, { amount: 9000 }), /cannot be held for approval/);
    t.close();
  });
});

describe('task records', () => {
  const HOUR = 3_600_000;
  it('last the TTL and an hour more, and as long again from each use past half of that; the foreign grant never finds them', async () => {
    let now = 1_000_000;
    const book = new TaskBook(new MemoryOAuthStore(), () => now);
    const record = { tool: 'research', args: {}, started: now };
    await book.created('srv', 'g1', 't1', record, 60_000);
    await book.created('srv', 'g1', 't2', record, 60_000);
    const keep = 60_000 + HOUR;
    now += Math.ceil(keep * 0.6);
    assert.equal((await book.owned('srv', 'g1', 't1'))?.tool, 'research', 'used past half its life: renewed');
    assert.equal(await book.owned('srv', 'g2', 't1'), null);
    await ticks();
    now += Math.ceil(keep * 0.6);
    assert.notEqual(await book.owned('srv', 'g1', 't1'), null, 'still there past its first life');
    assert.equal(await book.owned('srv', 'g1', 't2'), null, 'never used: gone after its life');
  });
});
