// pool.concurrency (issue 26 follow-up): one pooled upstream session carries several requests at
// once. Answers route by the id toolgate gave each request, progress by the token it gave each;
// what names no request (a log line, a server request outside any task) is dropped and counted,
// or refused, never delivered to a guess. The Pool's counting, the member's routing, and views
// over fake upstreams (test/helpers/pool.ts); the same with real clients: pool-multiplex.e2e.test.ts.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { pino } from 'pino';
import { GatewayConfigSchema, parseGatewayConfig, poolConcurrency } from '../src/config/gateway.js';
import type { Json } from '../src/proxy/messages.js';
import { PooledUpstream, type LeaseHolder } from '../src/pool/member.js';
import { Pool } from '../src/pool/pool.js';
import { CountingUpstream, grant, request, setup } from './helpers/pool.js';
import type { PoolView } from '../src/pool/view.js';

/** Sends a call through a view; the session that has it and the id it has there (found by its tag: the token is rewritten). */
async function sent(view: PoolView, ups: CountingUpstream[], message: Json & { params: { arguments: { tag: string } } }) {
  await view.send(message);
  for (const up of ups) {
    const m = up.sent.find((s) => s.method === 'tools/call' && ((s.params as Json).arguments as Json).tag === message.params.arguments.tag);
    if (m) return { up, inner: m.id as string };
  }
  throw new Error('not sent');
}

function pool(concurrency: number, max = 1) {
  let n = 0;
  const p = new Pool<string>({
    size: 0, max, idleMs: 60_000, queueTimeoutMs: 60_000, queueMax: 10, concurrency,
    create: async () => `r${++n}`,
    destroy: () => undefined,
    exhausted: (why) => new Error(why),
    gone: () => new Error('gone'),
  });
  return p;
}

class Holder implements LeaseHolder {
  got: Json[] = [];
  answered(_m: PooledUpstream, message: Json) { this.got.push(message); }
  asked(_m: PooledUpstream, message: Json) { this.got.push(message); }
  notified(message: Json) { this.got.push(message); }
  failed(_m: PooledUpstream, reason: string) { this.got.push({ failed: reason }); }
}

const call = (id: string | number, tag: string, token?: string | number) => ({
  jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'hold', arguments: { tag }, ...(token === undefined ? {} : { _meta: { progressToken: token } }) },
});

describe('pool.concurrency: the Pool', () => {
  it('N leases share one resource; the (N+1)th waits (max reached) and gets the first lease given back', async () => {
    const p = pool(3);
    const leases = await Promise.all([p.acquire(), p.acquire(), p.acquire()]);
    assert.deepEqual(leases.map((l) => l.resource), ['r1', 'r1', 'r1']);
    assert.deepEqual([p.size, p.busy, p.leased, p.queued], [1, 1, 3, 0]);
    let fourth: string | undefined;
    const waiting = p.acquire().then((l) => { fourth = l.resource; return l; });
    await new Promise((r) => setImmediate(r));
    assert.equal(fourth, undefined, 'the 4th waits');
    assert.equal(p.queued, 1);
    leases[1].release();
    assert.equal((await waiting).resource, 'r1');
    assert.deepEqual([p.leased, p.queued], [3, 0]);
  });

  it('waiters start one resource per N of them, and a new resource is spread to before an old one is filled', async () => {
    const p = pool(2, 4);
    const five = await Promise.all([1, 2, 3, 4, 5].map(() => p.acquire()));
    assert.equal(p.size, 3, '5 requests at 2 each: 3 resources, not 5');
    const by = (r: string) => five.filter((l) => l.resource === r).length;
    assert.deepEqual([by('r1'), by('r2'), by('r3')], [2, 2, 1]);
    five[0].release();
    five[1].release();
    // r1 is now empty, r3 half full: the least leased one is leased first.
    assert.equal((await p.acquire()).resource, 'r1');
  });

  it('a spent resource takes no new lease and is closed once its last lease ends', async () => {
    const spent = new Set<string>();
    const destroyed: string[] = [];
    let n = 0;
    const p = new Pool<string>({
      size: 0, max: 2, idleMs: 60_000, queueTimeoutMs: 60_000, queueMax: 10, concurrency: 2,
      create: async () => `r${++n}`, destroy: (r) => { destroyed.push(r); }, exhausted: (why) => new Error(why), gone: () => new Error('gone'), spent: (r) => spent.has(r),
    });
    const [a, b] = [await p.acquire(), await p.acquire()];
    assert.equal(a.resource, b.resource);
    spent.add('r1');
    a.release();
    assert.deepEqual(destroyed, [], 'its other lease still runs');
    assert.equal((await p.acquire()).resource, 'r2', 'not the spent one');
    b.release();
    assert.deepEqual(destroyed, ['r1'], 'closed with its last lease');
  });
});

describe('pool.concurrency: configuration', () => {
  it('defaults to 4 with clients: modern and 1 with clients: all; bounds and clients: all are refused at the exact path', () => {
    const parse = (pool: object) => GatewayConfigSchema.parse({ servers: { s: { command: 'x', pool } } }).servers.s.pool;
    assert.equal(poolConcurrency(parse({})), 4);
    assert.equal(poolConcurrency(parse({ share: 'server', clients: 'all' })), 1);
    assert.equal(poolConcurrency(parse({ concurrency: 1 })), 1);
    const issues = (pool: object) => {
      const r = parseGatewayConfig(JSON.stringify({ servers: { s: { command: 'x', pool } } }), 'toolgate.json');
      assert.ok(!r.ok, JSON.stringify(pool));
      return r.issues.map((i) => `${i.pointer}: ${i.message}`);
    };
    assert.deepEqual(issues({ concurrency: 0 }), ['/servers/s/pool/concurrency: Too small: expected number to be >=1']);
    assert.deepEqual(issues({ concurrency: 65 }), ['/servers/s/pool/concurrency: Too big: expected number to be <=64']);
    assert.deepEqual(issues({ concurrency: 1.5 }).length, 1);
    assert.match(issues({ concurrency: 1.5 })[0], /^\/servers\/s\/pool\/concurrency: /);
    assert.deepEqual(issues({ share: 'server', clients: 'all', concurrency: 2 }), [
      "/servers/s/pool/concurrency: concurrency (2) needs clients: modern: a pooled 2025 client may be asked the server's questions (sampling, elicitation, roots) during its call, and on a session carrying several requests at once nothing says whose call a question belongs to",
    ]);
    assert.equal(poolConcurrency(parse({ share: 'server', clients: 'all', concurrency: 1 })), 1, 'clients: all with concurrency 1 is fine');
  });
});

describe('pool.concurrency: a routed member', () => {
  it('answers by id and progress by token to their own request; a log line and a server request name none: dropped, refused, counted', async () => {
    const up = new CountingUpstream('u');
    const dropped: string[] = [];
    const member = await PooledUpstream.start(up, {}, { log: pino({ level: 'silent' }), server: 'x', routed: true, dropped: (k) => dropped.push(k), broadcast: () => undefined, taskOwner: () => undefined, died: () => {} });
    const [a, b] = [new Holder(), new Holder()];
    await member.send(a, { jsonrpc: '2.0', id: 'ia', method: 'tools/call' }, 'ta');
    await member.send(b, { jsonrpc: '2.0', id: 'ib', method: 'tools/call' }, 'tb');
    up.reply({ jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: 'tb', progress: 1 } });
    up.reply({ jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: 'ta', progress: 1 } });
    up.reply({ jsonrpc: '2.0', method: 'notifications/message', params: { level: 'info', data: 'whose?' } });
    up.reply({ jsonrpc: '2.0', id: 5, method: 'elicitation/create', params: {} });
    up.reply({ jsonrpc: '2.0', id: 'ib', result: { b: true } });
    // One request left: a log line still goes to nobody (it may be the answered request's).
    up.reply({ jsonrpc: '2.0', method: 'notifications/message', params: { level: 'info', data: 'late of b?' } });
    up.reply({ jsonrpc: '2.0', id: 'ia', result: { a: true } });
    assert.deepEqual(a.got.map((m) => m.method ?? JSON.stringify(m.result)), ['notifications/progress', '{"a":true}']);
    assert.deepEqual(a.got[0].params, { progressToken: 'ta', progress: 1 });
    assert.deepEqual(b.got.map((m) => m.method ?? JSON.stringify(m.result)), ['notifications/progress', '{"b":true}']);
    const refusal = up.sent.find((m) => m.id === 5)!;
    assert.equal((refusal.error as Json).code, -32601);
    assert.match(String((refusal.error as Json).message), /carries several clients' requests at once \(pool\.concurrency\), so nothing says which client could answer elicitation\/create/);
    assert.deepEqual(dropped, ['notification', 'request', 'notification']);
  });
});

describe('pool.concurrency: views over one shared session', () => {
  it('overlapping ids and progress tokens of two clients: each gets its own answer and progress; a cancellation cancels only its own', async () => {
    const { ups, open } = setup('grant', { max: 1, concurrency: 2 });
    const a = open(grant('g'));
    const b = open(grant('g'));
    const ca = await sent(a.view, ups, call(1, 'A', 1));
    const cb = await sent(b.view, ups, call(1, 'B', 1));
    assert.equal(ups.length, 1, 'one upstream session carries both');
    assert.notEqual(ca.inner, cb.inner);
    const tokens = ups[0].sent.filter((m) => m.method === 'tools/call').map((m) => ((m.params as Json)._meta as Json).progressToken);
    assert.notEqual(tokens[0], tokens[1], 'each request has its own token upstream');
    ups[0].reply({ jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: tokens[1], progress: 1, message: 'B' } });
    ups[0].reply({ jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: tokens[0], progress: 1, message: 'A' } });
    await b.view.send({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 1 } });
    const cancels = ups[0].sent.filter((m) => m.method === 'notifications/cancelled');
    assert.deepEqual(cancels.map((m) => (m.params as Json).requestId), [cb.inner], "only B's request is cancelled upstream");
    ups[0].reply({ jsonrpc: '2.0', id: cb.inner, result: { content: [{ type: 'text', text: 'B late' }] } });
    ups[0].reply({ jsonrpc: '2.0', id: ca.inner, result: { content: [{ type: 'text', text: 'A' }] } });
    assert.deepEqual(a.got, [
      { jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: 1, progress: 1, message: 'A' } },
      { jsonrpc: '2.0', id: 1, result: { content: [{ type: 'text', text: 'A' }] } },
    ]);
    assert.deepEqual(b.got, [{ jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: 1, progress: 1, message: 'B' } }], 'B: its progress, not its answer after it cancelled');
    await a.view.close();
    await b.view.close();
  });

  it('share: server — two grants on one session: nothing of one reaches the other; a log line and a question during shared use reach neither; a cancel does not close the session', async () => {
    const { ups, open } = setup('server', { max: 1, concurrency: 2, clients: 'modern' });
    const a = open(grant('grant-a'));
    const b = open(grant('grant-b'));
    const ca = await sent(a.view, ups, call('x', 'A', 't'));
    const cb = await sent(b.view, ups, call('x', 'B', 't'));
    const up = ups[0];
    assert.equal(ups.length, 1);
    up.reply({ jsonrpc: '2.0', method: 'notifications/message', params: { level: 'info', data: "A's log line" } });
    up.reply({ jsonrpc: '2.0', id: 'ask-1', method: 'sampling/createMessage', params: { messages: [] } });
    assert.equal((up.sent.find((m) => m.id === 'ask-1')?.error as Json | undefined)?.code, -32601, 'the question is refused');
    await a.view.send({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 'x' } });
    assert.equal(up.closed, false, 'a routed session is not retired for a cancellation: nothing unroutable leaves it');
    // A's cancelled request keeps its place until the server answers it (the answer is dropped);
    // then a third request (grant A again) takes that place.
    let third = false;
    const sentC = request(a.view, ups, call('y', 'A2')).then((r) => { third = true; return r; });
    await new Promise((r) => setImmediate(r));
    assert.equal(third, false, 'the cancelled request still holds its place');
    up.reply({ jsonrpc: '2.0', id: ca.inner, result: { content: [{ type: 'text', text: 'A late' }] } });
    const cc = await sentC;
    assert.equal(cc.up, up);
    up.reply({ jsonrpc: '2.0', id: cb.inner, result: { content: [{ type: 'text', text: 'B' }] } });
    up.reply({ jsonrpc: '2.0', id: cc.inner, result: { content: [{ type: 'text', text: 'A2' }] } });
    assert.deepEqual(a.got.map((m) => [m.id, JSON.stringify(m.result)]), [['y', '{"content":[{"type":"text","text":"A2"}]}']]);
    assert.deepEqual(b.got.map((m) => [m.id, JSON.stringify(m.result)]), [['x', '{"content":[{"type":"text","text":"B"}]}']]);
    await a.view.close();
    await b.view.close();
  });

  it('concurrency 1 keeps the exclusive lease: a log line during the lease reaches its one holder', async () => {
    const { ups, open } = setup('grant', { max: 1, concurrency: 1 });
    const a = open(grant('g'));
    const b = open(grant('g'));
    const ca = await request(a.view, ups, call(1, 'A'));
    let bSent = false;
    const sentB = b.view.send(call(1, 'B')).then(() => { bSent = true; });
    await new Promise((r) => setImmediate(r));
    assert.equal(bSent, false, 'B waits for the one session');
    ups[0].reply({ jsonrpc: '2.0', method: 'notifications/message', params: { level: 'info', data: 'of A' } });
    assert.deepEqual(a.got.map((m) => m.method), ['notifications/message']);
    ups[0].reply({ jsonrpc: '2.0', id: ca.inner, result: {} });
    await sentB;
    await a.view.close();
    await b.view.close();
  });
});
