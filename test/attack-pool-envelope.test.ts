/**
 * attack7: a message whose envelope says one thing and whose method says another. A lenient
 * server (test/fixtures/lenient-server.mjs reads the method and ignores whether an id is there)
 * acts on the method; toolgate must not let the envelope decide which of its checks apply.
 * - a request method sent as a notification (no id): tasks/cancel, tasks/get… skipped the task
 *   guard (the grant's own tasks only) and reached the server unchecked; only tools/call was dropped.
 * - a notification method sent as a request (with an id): notifications/cancelled went upstream
 *   with the requestId the client wrote, unrewritten. On a pooled session shared by grants
 *   (pool.share: server, pool.concurrency) that names another grant's request by its pool id
 *   (tg-pool-r<n>, a counter), which a lenient server cancels.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Json } from '../src/proxy/messages.js';
import { initialized } from './helpers/session.js';

describe('attack: request methods as notifications, notification methods as requests', () => {
  for (const method of ['tasks/cancel', 'tasks/get', 'tasks/result', 'tasks/list', 'prompts/get', 'resources/read', 'ping']) {
    it(`${method} without an id is dropped, never forwarded (it would skip the checks its request gets)`, () => {
      const t = initialized('2025-11-25');
      t.s.fromClient({ jsonrpc: '2.0', method, params: { taskId: 'task-of-another-grant', name: 'p', uri: 'file:///etc/passwd' } });
      assert.deepEqual(t.toServer, []);
    });
  }

  it('a tasks/cancel with an id for a task the grant does not own is still refused (the guarded path)', async () => {
    const t = initialized('2025-11-25');
    t.s.fromClient({ jsonrpc: '2.0', id: 'c1', method: 'tasks/cancel', params: { taskId: 'task-of-another-grant' } });
    for (let i = 0; i < 100 && !t.answer('c1'); i++) await new Promise((r) => setTimeout(r, 5));
    assert.ok(t.answer('c1')?.error, JSON.stringify(t.toClient));
    assert.deepEqual(t.toServer, []);
  });

  for (const method of ['notifications/cancelled', 'notifications/progress', 'notifications/initialized', 'notifications/roots/list_changed']) {
    it(`${method} with an id is refused, never forwarded as a request`, () => {
      const t = initialized('2025-11-25');
      t.s.fromClient({ jsonrpc: '2.0', id: 9, method, params: { requestId: 'tg-pool-r1', progressToken: 'tg-pool-p2', progress: 1 } });
      assert.deepEqual(t.toServer, []);
      const answer = t.answer(9);
      assert.equal(answer?.error?.code, -32600, JSON.stringify(t.toClient));
      assert.match(answer!.error!.message, /notification/);
    });
  }

  it('the real notifications still pass: a cancellation of its own request, progress, initialized', () => {
    const t = initialized('2025-11-25');
    t.s.fromClient({ jsonrpc: '2.0', id: 5, method: 'resources/list' });
    t.s.fromClient({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 5 } });
    t.s.fromClient({ jsonrpc: '2.0', method: 'notifications/roots/list_changed' });
    assert.deepEqual(t.toServer.map((m: Json) => [m.method, m.id]), [['resources/list', 5], ['notifications/cancelled', undefined], ['notifications/roots/list_changed', undefined]]);
  });
});
