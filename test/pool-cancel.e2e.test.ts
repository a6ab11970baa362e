// A call cancelled on a routed pooled session (pool.concurrency above 1) keeps its place, and its
// grant's, until the server answers it (the answer is dropped) or pool.queue_timeout passes: a
// server may ignore a cancellation and go on working, and a grant sending and cancelling calls in
// a loop must not pile work on a shared process beyond its places. Real SDK v2 clients, a real
// gateway, and the pool fixture server's `hold` with `stubborn` (it ignores cancellations).
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Client } from '@modelcontextprotocol/client';
import { until } from './helpers/approvals.js';
import { startPoolServe, type PoolEvent, type PoolServe } from './helpers/pool-serve.js';

const POOLS: Record<string, object> = {
  // A grant holds at most 1 session's worth of places: 2 requests.
  cs: { share: 'server', max: 2, concurrency: 2, max_per_grant: 1, queue_timeout: '60s' },
  // A short grace (the queue timeout): then the shared session is retired.
  cq: { share: 'server', max: 1, concurrency: 2, queue_timeout: '3s' },
  // The same with share: grant: then the place is free and the session serves on.
  cg: { max: 1, concurrency: 2, queue_timeout: '3s' },
};

describe('toolgate serve: a call cancelled on a routed pooled session keeps its place until the server lets go', () => {
  let h: PoolServe;
  before(async () => { h = await startPoolServe(POOLS); });
  after(() => h.close());

  const events = (server: string) => h.events(server);
  const callOf = (server: string, tag: string) => h.callOf(server, tag);
  const release = (tag: string) => h.release(tag);
  const modern = (server: string, grant?: 'one' | 'two') => h.modern(server, grant);
  const metric = (name: string, labels: Record<string, string>) => h.metric(name, labels);
  const text = (r: any): string => r.content[0].text;
  /** A stubborn hold (the server ignores its cancellation), cancelled once it reached the server. */
  const cancelledHold = async (c: Client, server: string, tag: string): Promise<PoolEvent> => {
    const abort = new AbortController();
    const call = c.callTool({ name: 'hold', arguments: { tag, stubborn: true } }, { signal: abort.signal }).then(() => 'answered', (err: Error) => err);
    const sent = await until(() => callOf(server, tag), `${tag} upstream`);
    abort.abort();
    await until(() => events(server).find((e) => e.event === 'cancelled' && e.tag === tag), `${tag} cancelled upstream`);
    assert.ok(await call instanceof Error, `${tag}: the client hears its call ended, not an answer`);
    return sent;
  };
  const whoami = async (c: Client): Promise<{ pid: number }> => JSON.parse(text(await c.callTool({ name: 'whoami', arguments: {} })));

  it('a grant that sends and cancels calls cannot exceed its places; another grant is served; the late answer frees the place and is dropped', async () => {
    const one = await modern('cs', 'one');
    const s1 = await cancelledHold(one, 'cs', 'cs-1');
    const s2 = await cancelledHold(one, 'cs', 'cs-2');
    assert.equal(s1.pid, s2.pid, 'both on one session');
    assert.equal(await metric('toolgate_pool_requests', { server: 'cs' }), 2, 'the cancelled calls still count: the server works on them');
    // The grant's third call waits: its 2 places (max_per_grant 1 × concurrency 2) are held by the cancelled ones.
    const third = await modern('cs', 'one');
    const waiting = whoami(third);
    await until(async () => (await metric('toolgate_pool_queued', { server: 'cs' })) === 1, 'the third call to queue');
    assert.equal(events('cs').filter((e) => e.tool === 'whoami').length, 0, 'not forwarded');
    // Another grant is not starved: it gets a session of its own (the first is full).
    const two = await modern('cs', 'two');
    const other = await whoami(two);
    assert.notEqual(other.pid, s1.pid);
    assert.equal(await metric('toolgate_pool_queued', { server: 'cs' }), 1, 'grant one still waits');
    // The server answers a cancelled call at last: its answer goes to no one, and its place to the waiting call.
    release('cs-1');
    const got = await waiting;
    assert.equal(typeof got.pid, 'number');
    assert.equal(await metric('toolgate_pool_dropped_total', { server: 'cs', kind: 'answer' }), 1, 'the late answer, dropped');
    release('cs-2');
    await until(async () => (await metric('toolgate_pool_requests', { server: 'cs' })) === 0, 'every place free once both were answered');
    assert.equal(await metric('toolgate_pool_dropped_total', { server: 'cs', kind: 'answer' }), 2);
  });

  it('share: server — unanswered past the grace (pool.queue_timeout), the place is free and the session retired', async () => {
    const one = await modern('cq', 'one');
    const held = await cancelledHold(one, 'cq', 'cq-1');
    await until(async () => (await metric('toolgate_pool_requests', { server: 'cq' })) === 0, 'the place freed after the grace');
    await until(async () => (await metric('toolgate_pool_sessions', { server: 'cq' })) === 0, 'the session closed (it carried nothing else)');
    const next = await whoami(one);
    assert.notEqual(next.pid, held.pid, 'a new upstream session: the old process, still working on the cancelled call, is gone');
    assert.equal(events('cq').filter((e) => e.event === 'initialize').length, 2);
  });

  it('share: grant — unanswered past the grace, the place is free and the session serves on', async () => {
    const one = await modern('cg', 'one');
    const a = await cancelledHold(one, 'cg', 'cg-1');
    const b = await cancelledHold(one, 'cg', 'cg-2');
    assert.equal(a.pid, b.pid);
    assert.equal(await metric('toolgate_pool_requests', { server: 'cg' }), 2);
    await until(async () => (await metric('toolgate_pool_requests', { server: 'cg' })) === 0, 'both places freed after the grace');
    assert.equal((await whoami(one)).pid, a.pid, 'the same upstream session');
    release('cg-1');
    release('cg-2');
  });
});
