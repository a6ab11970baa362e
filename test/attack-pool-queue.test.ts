/**
 * attack7: one grant floods a shared pool's queue. With share: server a grant leases at most
 * max_per_grant sessions' worth (docs/gateway.md: "it can only wait on itself"), but its further
 * requests still took places in the queue, which all grants share (queue_max): a grant at its
 * share could fill it with requests that cannot be served until its own end, and every other
 * grant's request that had to wait was refused at once (-32051 queue full) instead of waiting for
 * its turn. When the queue is full, a newcomer now takes the place of the newest request of the
 * grant with the most waiting (that one is refused, retryable, never forwarded), so no one grant
 * holds the queue either.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Pool } from '../src/pool/pool.js';
import { grant, request, setup } from './helpers/pool.js';

const call = (id: string, tag: string) => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'hold', arguments: { tag } } });
const settled = () => new Promise((r) => setTimeout(r, 10));

describe('attack: one grant fills the shared queue', () => {
  it('share: server — grant A at its share fills the queue; grant B\'s request still waits for its turn and runs', async () => {
    const { ups, open } = setup('server', { max: 2, max_per_grant: 1, queue_max: 3, queue_timeout: '5s', clients: 'modern', concurrency: 1 });
    const a = open(grant('grant-a'));
    const b = open(grant('grant-b'));
    await request(a.view, ups, call('a0', 'A0'));
    const bFirst = await request(b.view, ups, call('b0', 'B0'));
    // A holds its share; its flood waits (it can only be served by its own calls' end).
    const flood = [1, 2, 3].map((i) => a.view.send(call(`a${i}`, `A${i}`)).then(() => 'sent', (err: Error & { code?: number }) => err.code));
    await settled();
    // B's second request must wait for B's first, not be refused because A filled the queue.
    let bSecond: unknown;
    const second = b.view.send(call('b1', 'B1')).then(() => { bSecond = 'sent'; }, (err: Error & { code?: number }) => { bSecond = err.code; });
    await settled();
    assert.equal(bSecond, undefined, `B's request waits (got ${String(bSecond)})`);
    bFirst.up.reply({ jsonrpc: '2.0', id: bFirst.inner, result: { content: [] } });
    await second;
    assert.equal(bSecond, 'sent');
    assert.ok(bFirst.up.sent.some((m) => String(JSON.stringify(m.params)).includes('"B1"')), "B's request runs on the session B freed");
    // The place B took was A's newest waiter's: refused, retryable, never forwarded.
    assert.equal(await flood[2], -32051);
    assert.ok(!ups.some((u) => u.sent.some((m) => String(JSON.stringify(m.params)).includes('"A3"'))));
    await a.view.close();
    await b.view.close();
    await Promise.allSettled(flood);
  });

  it('the Pool: a full queue refuses a newcomer whose owner already waits as much as any other (no eviction among equals)', async () => {
    let n = 0;
    const p = new Pool<string>({
      size: 0, max: 1, idleMs: 60_000, queueTimeoutMs: 60_000, queueMax: 2, maxPerOwner: 1,
      create: async () => `r${++n}`, destroy: () => undefined, exhausted: (why) => new Error(why), gone: () => new Error('gone'),
    });
    const held = await p.acquire(undefined, undefined, 'a');
    const w = [p.acquire(undefined, undefined, 'b'), p.acquire(undefined, undefined, 'c')];
    await assert.rejects(p.acquire(undefined, undefined, 'd'), /queue_full/, 'one each: d takes no one\'s place')
    await assert.rejects(p.acquire(undefined, undefined, 'b'), /queue_full/, 'b already waits as much as anyone');
    assert.equal(p.queued, 2);
    held.release();
    assert.equal((await w[0]).resource, 'r1');
    p.close('done');
    await Promise.allSettled(w);
  });
});
