/**
 * attack7: a grant's task outlives the client session that created it (that is what tasks are
 * for: create, disconnect, come back for the result). On a share: server pool, the pool forgot
 * which upstream session ran it when that client session closed, so the grant's next tasks/get or
 * tasks/result went to whichever pooled session was free — chosen by the task id alone, which a
 * server that numbers its tasks per session gives another grant's task too ("task-1"): grant A
 * read grant B's task. Now the task stays with the grant's other client sessions, and a task the
 * pool cannot place is answered as gone, never asked of a session chosen by its id.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { grant, request, setup } from './helpers/pool.js';

const task = { taskId: 'task-1', status: 'working', ttl: 60_000, createdAt: 'now', lastUpdatedAt: 'now' };
const call = (id: string) => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'work', arguments: { id }, task: {} } });

/** Grant A's task-1 on one session, grant B's task-1 on another; A's creating view `a1`. */
async function twoTasks() {
  const { ups, open } = setup('server');
  const a1 = open(grant('grant-a'));
  const b = open(grant('grant-b'));
  const callA = await request(a1.view, ups, call('a1'));
  const callB = await request(b.view, ups, call('b1'));
  assert.notEqual(callA.up, callB.up);
  callA.up.reply({ jsonrpc: '2.0', id: callA.inner, result: { task } });
  callB.up.reply({ jsonrpc: '2.0', id: callB.inner, result: { task } });
  return { ups, open, a1, b, upA: callA.up, upB: callB.up };
}


describe('attack: a task polled from a new client session of its grant (share: server)', () => {
  it('another open session of the grant still reaches the session that runs it', async () => {
    const { ups, open, a1, b, upA } = await twoTasks();
    const a2 = open(grant('grant-a'));
    await a1.view.close();
    const poll = await request(a2.view, ups, { jsonrpc: '2.0', id: 'p1', method: 'tasks/result', params: { taskId: 'task-1' } });
    assert.equal(poll.up, upA, "grant A's tasks/result goes to the session running A's task, not B's");
    // And the task's news reaches the grant's open session.
    upA.reply({ jsonrpc: '2.0', method: 'notifications/tasks/status', params: { ...task, status: 'completed' } });
    assert.ok(a2.got.some((m) => m.method === 'notifications/tasks/status'));
    assert.ok(!b.got.some((m) => m.method === 'notifications/tasks/status'));
    await a2.view.close();
    await b.view.close();
  });

  it('with no session of the grant left open, a new one is told the task is gone; no pooled session is asked about it', async () => {
    const { ups, open, a1, b, upB } = await twoTasks();
    await a1.view.close();
    const a2 = open(grant('grant-a'));
    const before = ups.map((u) => u.sent.length);
    const refused = await a2.view.send({ jsonrpc: '2.0', id: 'p1', method: 'tasks/result', params: { taskId: 'task-1' } }).then(() => undefined, (err: Error & { code?: number }) => err);
    assert.equal(refused?.code, -32603, 'refused as gone');
    assert.deepEqual(ups.map((u) => u.sent.length), before, 'never sent to a session chosen by the task id');
    assert.ok(!upB.sent.some((m) => m.method === 'tasks/result'), "B's task-1 is not read for A");
    await a2.view.close();
    await b.view.close();
  });
});
