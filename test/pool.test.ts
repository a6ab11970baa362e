// Issue 26: the pool itself (src/pool/pool.ts: leases, the bounded FIFO queue, dropping, closing)
// and the per-server `pool` configuration (bounds, and clients: all only with share: server).
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { parseGatewayConfig } from '../src/config/gateway.js';
import { pino } from 'pino';
import type { Json } from '../src/proxy/messages.js';
import type { Upstream } from '../src/proxy/upstream.js';
import { PooledUpstream, type LeaseHolder } from '../src/pool/member.js';
import { Pool } from '../src/pool/pool.js';
import { cli, tempDir, testEnv } from './helpers/toolgate.js';

class Exhausted extends Error {}

function pool(opts: { size?: number; max?: number; queueMax?: number; queueTimeoutMs?: number; idleMs?: number } = {}) {
  let n = 0;
  const destroyed: string[] = [];
  const p = new Pool<string>({
    size: opts.size ?? 0, max: opts.max ?? 1, idleMs: opts.idleMs ?? 60_000, queueTimeoutMs: opts.queueTimeoutMs ?? 60_000, queueMax: opts.queueMax ?? 10,
    create: async () => `r${++n}`,
    destroy: (r, why) => { destroyed.push(`${r}: ${why}`); },
    exhausted: (why) => new Exhausted(why),
    gone: () => new Error('gone'),
  });
  return { p, destroyed };
}

describe('Pool', () => {
  it('one lease per resource; the queue is served first come, first served', async () => {
    const { p } = pool({ max: 1 });
    const first = await p.acquire();
    const order: string[] = [];
    const second = p.acquire().then((l) => { order.push('second'); return l; });
    const third = p.acquire().then((l) => { order.push('third'); return l; });
    assert.deepEqual([p.size, p.busy, p.queued], [1, 1, 2]);
    first.release();
    const l2 = await second;
    assert.equal(l2.resource, first.resource, 'the freed resource, not a new one');
    l2.release();
    (await third).release();
    assert.deepEqual(order, ['second', 'third']);
    assert.deepEqual([p.size, p.busy, p.queued], [1, 0, 0]);
  });

  it('a full queue refuses at once; a wait past the queue timeout is refused', async () => {
    const { p } = pool({ max: 1, queueMax: 1, queueTimeoutMs: 50 });
    const held = await p.acquire();
    const waiting = p.acquire().then(() => 'served', (err: Error) => err);
    const refused = await p.acquire().then(() => 'served', (err: Error) => err);
    assert.ok(refused instanceof Exhausted && refused.message === 'queue_full');
    const timedOut = await waiting;
    assert.ok(timedOut instanceof Exhausted && timedOut.message === 'queue_timeout');
    assert.equal(p.queued, 0);
    held.release();
  });

  it('a dropped resource is closed and replaced for the next request; one asked for by name fails when it is gone', async () => {
    const { p, destroyed } = pool({ max: 1 });
    const lease = await p.acquire();
    const wanting = p.acquire(lease.resource).then(() => 'served', (err: Error) => err.message);
    const any = p.acquire();
    lease.drop('it crashed');
    assert.equal(await wanting, 'gone');
    assert.equal((await any).resource, 'r2');
    assert.deepEqual(destroyed, ['r1: it crashed']);
  });

  it('a cancelled wait leaves the queue; closing fails the waiters and closes every resource', async () => {
    const { p, destroyed } = pool({ max: 1 });
    const held = await p.acquire();
    const abort = new AbortController();
    const cancelled = p.acquire(undefined, abort.signal).then(() => 'served', (err: Error) => err.message);
    abort.abort();
    assert.match(await cancelled, /cancelled/);
    const waiting = p.acquire().then(() => 'served', (err: Error) => err.message);
    p.close('stopping');
    assert.equal(await waiting, 'gone');
    assert.deepEqual(destroyed, ['r1: stopping']);
    held.release();
    await assert.rejects(p.acquire(), /gone/);
  });

  it('a brief lease (the initialize answer) and a request queued beside it share the one resource starting, not two', async () => {
    // A new user's first request of a grant started two server-everything processes (the second idle for 5 minutes).
    const { p } = pool({ size: 1, max: 8 });
    const init = p.acquire(undefined, undefined, undefined, true);
    const list = p.acquire();
    assert.equal(p.size, 1, 'one resource starting for both');
    const first = await init;
    first.release();
    const second = await list;
    assert.equal(second.resource, first.resource);
    assert.equal(p.size, 1);
    // Requests that hold their lease still get one each.
    const a = p.acquire();
    const b = p.acquire();
    assert.equal(p.size, 3, 'while the first is leased, each of two waiting requests starts one, as before');
    second.release();
    (await a).release();
    (await b).release();
  });

  it('when the start both waited on fails, the brief one hears why and the other gets its own attempt', async () => {
    let n = 0;
    const p = new Pool<string>({
      size: 0, max: 2, idleMs: 60_000, queueTimeoutMs: 60_000, queueMax: 10,
      create: async () => { if (++n === 1) throw new Error('spawn failed'); return `r${n}`; },
      destroy: () => {}, exhausted: (why) => new Exhausted(why), gone: () => new Error('gone'),
    });
    const init = p.acquire(undefined, undefined, undefined, true).then(() => 'served', (err: Error) => err.message);
    const list = p.acquire();
    assert.equal(await init, 'spawn failed');
    assert.equal((await list).resource, 'r2');
  });

  it('idle resources beyond size are closed; size of them stay', async () => {
    const { p, destroyed } = pool({ size: 1, max: 3, idleMs: 10 });
    const leases = await Promise.all([p.acquire(), p.acquire(), p.acquire()]);
    assert.equal(p.size, 3);
    for (const l of leases) l.release();
    for (let i = 0; i < 100 && p.size > 1; i++) await new Promise((r) => setTimeout(r, 20));
    assert.equal(p.size, 1);
    assert.equal(destroyed.length, 2);
    assert.ok(destroyed.every((d) => d.endsWith('idle beyond the pool size')));
  });
});

describe('pool configuration', () => {
  const parse = (pool: string) => parseGatewayConfig(`servers:\n  x:\n    command: node\n    pool: ${pool}\n`, '/srv');
  const issues = (pool: string) => {
    const r = parse(pool);
    assert.ok(!r.ok, pool);
    return r.issues.map((i) => `${i.pointer}: ${i.message}`);
  };

  it('defaults without a pool block: size 1, max 8, 5m idle, 10s queue, per grant, modern clients', () => {
    const r = parseGatewayConfig('servers:\n  x:\n    url: http://127.0.0.1:1/mcp\n', '/srv');
    assert.ok(r.ok);
    assert.deepEqual(r.value.servers.x.pool, { size: 1, max: 8, idle_timeout: '5m', queue_timeout: '10s', queue_max: 1000, share: 'grant', clients: 'modern' });
    const shared = parse('{share: server, clients: all, size: 0, max: 2}');
    assert.ok(shared.ok);
  });

  it('refuses bad bounds and clients: all without share: server, naming the path', () => {
    assert.deepEqual(issues('{size: 5, max: 2}'), ['/servers/x/pool/size: size (5) may not exceed max (2)']);
    assert.deepEqual(issues('{max: 0, size: 0}'), ['/servers/x/pool/max: Too small: expected number to be >=1']);
    assert.deepEqual(issues('{queue_timeout: 0s}'), ['/servers/x/pool/queue_timeout: a duration must be more than 0']);
    assert.deepEqual(issues('{share: everyone}'), ['/servers/x/pool/share: must be one of "grant", "server"']);
    assert.deepEqual(issues('{share: server, max: 2, max_per_grant: 3}'), ['/servers/x/pool/max_per_grant: max_per_grant (3) may not exceed max (2)']);
    assert.deepEqual(issues('{clients: all}'), [
      "/servers/x/pool/clients: clients: all needs share: server: a legacy session relies on its upstream session's state, which only a server declared stateless (share: server) can do without",
    ]);
  });

  it('a mistake inside a server names its own field, not "a server needs either command … or url …"', () => {
    // A new user wrote queue_timeout: 2 (no unit): the whole server was reported as neither kind.
    assert.deepEqual(issues('{queue_timeout: 2}'), ['/servers/x/pool/queue_timeout: a duration such as 90s, 15m or 1h']);
    assert.deepEqual(issues('{max: 0}'), ['/servers/x/pool/max: Too small: expected number to be >=1']);
    const url = parseGatewayConfig('servers:\n  x:\n    url: http://127.0.0.1:1/mcp\n    call_timeout: 2\n    pool: {max: "8"}\n', '/srv');
    assert.ok(!url.ok);
    assert.deepEqual(url.issues.map((i) => `${i.pointer}: ${i.message} (${i.line}:${i.column})`), [
      '/servers/x/pool/max: Invalid input: expected number, received string (5:17)',
      '/servers/x/call_timeout: a positive duration such as 30s, 5m or 1h (4:19)',
    ]);
    // Neither kind, or both: the server-level message still says what a server is.
    for (const server of ['{}', '{command: node, url: "http://127.0.0.1:1/mcp"}']) {
      const r = parseGatewayConfig(`servers:\n  x: ${server}\n`, '/srv');
      assert.ok(!r.ok);
      assert.deepEqual(r.issues.map((i) => `${i.pointer}: ${i.message}`), ['/servers/x: a server needs either command (with args, env, env_inherit, cwd) or url (with headers), and only known fields']);
    }
  });

  it('serve refuses such a file at start (exit 2) with the path and line', async () => {
    const dir = tempDir();
    const file = join(dir, 'toolgate.yaml');
    writeFileSync(file, 'listen: 127.0.0.1:0\nservers:\n  x:\n    command: node\n    pool: {clients: all}\n');
    const r = await cli(['serve', '-c', file], testEnv(dir));
    assert.equal(r.code, 2);
    assert.match(r.stderr, /\/servers\/x\/pool\/clients.*clients: all needs share: server/);
  });
});

/** An upstream that answers initialize and records everything else sent to it. */
class FakeUpstream implements Upstream {
  onmessage?: (message: unknown) => void;
  onclose?: (reason: string) => void;
  readonly started = Promise.resolve();
  readonly sent: Json[] = [];
  async send(message: Json): Promise<void> {
    if (message.method === 'initialize') queueMicrotask(() => this.onmessage?.({ jsonrpc: '2.0', id: message.id, result: { protocolVersion: '2025-11-25', capabilities: {}, serverInfo: { name: 'fake', version: '1' } } }));
    else this.sent.push(message);
  }
  async close(): Promise<void> {}
}

class Holder implements LeaseHolder {
  readonly got: Json[] = [];
  answered(_m: PooledUpstream, message: Json) { this.got.push(message); }
  asked(_m: PooledUpstream, message: Json) { this.got.push(message); }
  notified(message: Json) { this.got.push(message); }
  failed(_m: PooledUpstream, reason: string) { this.got.push({ failed: reason }); }
}

describe('a pooled upstream session between leases', () => {
  it('refuses server requests (ping answered), drops notifications and late answers, broadcasts list changes; during a lease all reach its holder', async () => {
    const up = new FakeUpstream();
    const broadcast: Json[] = [];
    const member = await PooledUpstream.start(up, {}, { log: pino({ level: 'silent' }), server: 'x', broadcast: (m) => broadcast.push(m), taskOwner: () => undefined, died: () => {} });
    assert.deepEqual([...up.sent], [{ jsonrpc: '2.0', method: 'notifications/initialized' }], 'initialized once, at start');
    const holder = new Holder();
    await member.send(holder, { jsonrpc: '2.0', id: 'tg-pool-r-test', method: 'tools/call', params: {} }, 'tok');
    up.onmessage!({ jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: 'tok', progress: 1 } });
    up.onmessage!({ jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: 'other', progress: 1 } });
    up.onmessage!({ jsonrpc: '2.0', id: 7, method: 'sampling/createMessage', params: {} });
    up.onmessage!({ jsonrpc: '2.0', id: 'tg-pool-r-test', result: {} });
    assert.deepEqual(holder.got.map((m) => m.method ?? `answer ${String(m.id)}`), ['notifications/progress', 'sampling/createMessage', 'answer tg-pool-r-test']);
    // The lease is over: nothing reaches the holder any more.
    up.onmessage!({ jsonrpc: '2.0', method: 'notifications/message', params: { data: 'late' } });
    up.onmessage!({ jsonrpc: '2.0', id: 'tg-pool-r-test', result: {} });
    up.onmessage!({ jsonrpc: '2.0', id: 8, method: 'elicitation/create', params: {} });
    up.onmessage!({ jsonrpc: '2.0', id: 9, method: 'ping' });
    up.onmessage!({ jsonrpc: '2.0', method: 'notifications/tools/list_changed' });
    assert.equal(holder.got.length, 3);
    const answers = up.sent.filter((m) => !Object.hasOwn(m, 'method'));
    assert.deepEqual(answers.map((m) => [m.id, (m.error as Json | undefined)?.code ?? 'ok']), [[8, -32601], [9, 'ok']]);
    assert.match(String((answers[0].error as Json).message), /no client request is in progress on this one, so no client can answer elicitation\/create/);
    assert.deepEqual(broadcast.map((m) => m.method), ['notifications/tools/list_changed']);
  });
});
