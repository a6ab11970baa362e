/**
 * Task owners in a fleet: two toolgate instances, each with its own connection to one Redis (the
 * state store), sessions of two grants spread over them. What one instance records, the other
 * reads: the grant's clients reach its task anywhere, the other grant nowhere, and the task's end
 * is claimed once.
 */
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { openRedisState } from '../src/state/redis.js';
import type { Json } from '../src/proxy/messages.js';
import { TaskBook } from '../src/tasks/records.js';
import { TASK, world } from './helpers/tasks.js';
import { TestRedis } from './helpers/redis.js';

const redis = await TestRedis.start();
const instances = [openRedisState(`${redis.url}/0?prefix=tasks${process.pid}`), openRedisState(`${redis.url}/0?prefix=tasks${process.pid}`)];
after(async () => {
  for (const s of instances) await s.close();
  await redis.stop();
});

/** Waits (bounded) for the answer to `id` in `toClient`, while Redis answers. */
async function answer(toClient: Json[], id: unknown): Promise<Json> {
  for (let i = 0; i < 200; i++) {
    const found = toClient.find((m) => m.id === id);
    if (found) return found;
    await new Promise((r) => setTimeout(r, 10));
  }
  throw new Error(`no answer to ${String(id)}`);
}

describe('tasks on a Redis state store shared by two instances', () => {
  it('the grant reaches its task from either instance, the other grant from neither; the end is claimed once', async () => {
    const { open, rows } = world();
    const a1 = open('alpha', { store: instances[0].oauth });
    const a2 = open('alpha', { store: instances[1].oauth });
    const b2 = open('beta', { store: instances[1].oauth });
    a1.s.fromClient({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'research', arguments: {}, task: {} } });
    a1.s.fromServer({ jsonrpc: '2.0', id: 1, result: { task: TASK } });
    assert.deepEqual((await answer(a1.toClient, 1)).result, { task: TASK });

    a2.s.fromClient({ jsonrpc: '2.0', id: 2, method: 'tasks/get', params: { taskId: TASK.taskId } });
    b2.s.fromClient({ jsonrpc: '2.0', id: 2, method: 'tasks/get', params: { taskId: TASK.taskId } });
    assert.equal(((await answer(b2.toClient, 2)).error as Json).message, 'Failed to retrieve task: Task not found');
    for (let i = 0; i < 200 && a2.toServer.length === 0; i++) await new Promise((r) => setTimeout(r, 10));
    assert.equal(a2.toServer[0]?.method, 'tasks/get', "the grant's other client, on the other instance, reaches it");
    assert.equal(b2.toServer.length, 0);

    // Both instances see it complete, at once.
    const done = { ...TASK, status: 'completed' };
    a2.s.fromServer({ jsonrpc: '2.0', id: 2, result: done });
    a1.s.fromServer({ jsonrpc: '2.0', method: 'notifications/tasks/status', params: done });
    for (let i = 0; i < 200 && rows.rows[0].outcomes.length < 2; i++) await new Promise((r) => setTimeout(r, 10));
    for (let i = 0; i < 200 && !a1.toClient.some((m) => m.method === 'notifications/tasks/status'); i++) await new Promise((r) => setTimeout(r, 10));
    assert.deepEqual(rows.rows[0].outcomes, ['task_created', 'task_completed']);
    // The end was claimed in Redis: no instance can claim it again, so the row gets no second end.
    assert.equal(await new TaskBook(instances[0].oauth).claimEnd('everything', 'id-alpha', TASK.taskId), false);
  });
});
