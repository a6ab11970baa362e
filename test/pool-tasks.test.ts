// Attack on the pool's task routing (issue 26): tasks run on the pooled upstream session that
// created them, and their ids are the server's. A server that numbers its tasks per process (the
// SDK's in-memory task store numbers them per session; many servers count from 1) gives the same
// id to tasks of different upstream sessions. With `share: server`, grant A's task "task-1" on one
// session and grant B's "task-1" on another must stay apart: A's tasks/get reaches A's session,
// and A's task's status notifications (the extension's carry the result) reach A, never B.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { grant, request, setup } from './helpers/pool.js';

describe('pooled upstream sessions: tasks with the same id on two sessions', () => {
  it('share: server — a grant polls its own task and hears its own task notifications, never another grant\'s task of the same id', async () => {
    const { ups, open } = setup('server');
    const a = open(grant('grant-a'));
    const b = open(grant('grant-b'));
    await a.view.send({ jsonrpc: '2.0', id: 0, method: 'initialize', params: {} });
    // A's call is in progress on one session, so B's goes to a second one; each creates "task-1".
    const call = (id: string) => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'work', arguments: {}, task: {} } });
    const callA = await request(a.view, ups, call('a1'));
    const callB = await request(b.view, ups, call('b1'));
    assert.notEqual(callA.up, callB.up, 'two upstream sessions');
    const task = { taskId: 'task-1', status: 'working', ttl: 60_000, createdAt: 'now', lastUpdatedAt: 'now' };
    callA.up.reply({ jsonrpc: '2.0', id: callA.inner, result: { task } });
    callB.up.reply({ jsonrpc: '2.0', id: callB.inner, result: { task } });

    // A polls its task: the session that runs A's task is asked, not B's.
    const pollA = await request(a.view, ups, { jsonrpc: '2.0', id: 'a2', method: 'tasks/get', params: { taskId: 'task-1' } });
    assert.equal(pollA.up.name, callA.up.name, "grant A's tasks/get goes to the upstream session that runs A's task");
    pollA.up.reply({ jsonrpc: '2.0', id: pollA.inner, result: { ...task, status: 'working' } });

    // A's task reports its end (with its result) on A's session: A hears it, B does not.
    callA.up.reply({ jsonrpc: '2.0', method: 'notifications/tasks/status', params: { ...task, status: 'completed', result: 'secret of A' } });
    assert.ok(a.got.some((m) => m.method === 'notifications/tasks/status'), "A hears its own task's notification");
    assert.ok(!b.got.some((m) => m.method === 'notifications/tasks/status'), "B never hears A's task's notification");

    // B's tasks/result of its own "task-1" (which ends B's task) leaves A's routing alone.
    const resultB = await request(b.view, ups, { jsonrpc: '2.0', id: 'b2', method: 'tasks/result', params: { taskId: 'task-1' } });
    assert.equal(resultB.up.name, callB.up.name, "grant B's tasks/result goes to B's session");
    resultB.up.reply({ jsonrpc: '2.0', id: resultB.inner, result: { content: [], _meta: { 'io.modelcontextprotocol/related-task': { taskId: 'task-1' } } } });
    const again = await request(a.view, ups, { jsonrpc: '2.0', id: 'a3', method: 'tasks/get', params: { taskId: 'task-1' } });
    assert.equal(again.up.name, callA.up.name, "B ending its own task-1 does not lose A's");

    // A server request about A's task (its input) goes to A.
    const ask = { jsonrpc: '2.0', id: 'q1', method: 'elicitation/create', params: { message: 'for A', _meta: { 'io.modelcontextprotocol/related-task': { taskId: 'task-1' } } } };
    callA.up.reply(ask);
    assert.ok(a.got.some((m) => m.method === 'elicitation/create'), "A is asked about A's task");
    assert.ok(!b.got.some((m) => m.method === 'elicitation/create'), "B is never asked about A's task");
    await a.view.close();
    await b.view.close();
  });
});
