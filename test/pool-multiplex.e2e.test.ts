// pool.concurrency (issue 26 follow-up) through `toolgate serve`: one pooled upstream session
// carries several 2026-07-28 clients' calls at once. Real SDK v2 clients (each numbering its
// requests, and so its progress tokens, from the same start), a real gateway, and the fixture
// server of pool.e2e.test.ts, which tells its pid and records what it saw.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Client } from '@modelcontextprotocol/client';
import { until } from './helpers/approvals.js';
import { startPoolServe, type PoolServe } from './helpers/pool-serve.js';

const POOLS: Record<string, object> = {
  mc: { max: 1, concurrency: 2, queue_timeout: '60s' },
  ms: { share: 'server', max: 1, concurrency: 2, queue_timeout: '60s' },
  ml: { max: 1, concurrency: 4 },
};

describe('toolgate serve: pool.concurrency, several calls on one upstream session', () => {
  let h: PoolServe;
  before(async () => { h = await startPoolServe(POOLS, { ml: { version: '1', default: 'allow', tools: { whoami: { limits: [{ counter: 'who', window: 'hour', max: 2, scope: 'grant' }] } } } }); });
  after(() => h.close());

  const events = (server: string) => h.events(server);
  const callOf = (server: string, tag: string) => h.callOf(server, tag);
  const release = (tag: string) => h.release(tag);
  const modern = (server: string, grant?: 'one' | 'two') => h.modern(server, grant);
  const metric = (name: string, labels: Record<string, string>) => h.metric(name, labels);
  const text = (r: any): string => r.content[0].text;
  const hold = (c: Client, tag: string, progress: string[], extra: object = {}, signal?: AbortSignal) =>
    c.callTool({ name: 'hold', arguments: { tag, ...extra } }, { onprogress: (p: any) => progress.push(p.message), signal });

  it('concurrency 2: two calls run on one upstream session at once and the third waits; answers, progress and a cancellation reach their own caller', async () => {
    const [a, b, c] = [await modern('mc'), await modern('mc'), await modern('mc')];
    const progress: Record<string, string[]> = { a: [], b: [], c: [] };
    const abort = new AbortController();
    const callA = hold(a, 'mc-a', progress.a, {}, abort.signal).catch((err: Error) => err);
    const callB = hold(b, 'mc-b', progress.b);
    const [inA, inB] = await until(() => { const x = callOf('mc', 'mc-a'); const y = callOf('mc', 'mc-b'); return x && y ? [x, y] : undefined; }, 'both calls upstream');
    assert.equal(inA.pid, inB.pid, 'one upstream session carries both calls');
    assert.equal(await metric('toolgate_pool_sessions', { server: 'mc' }), 1);
    assert.equal(await metric('toolgate_pool_busy', { server: 'mc' }), 1);
    assert.equal(await metric('toolgate_pool_requests', { server: 'mc' }), 2);
    const callC = hold(c, 'mc-c', progress.c);
    await until(async () => (await metric('toolgate_pool_queued', { server: 'mc' })) === 1, 'the third call to queue');
    assert.equal(callOf('mc', 'mc-c'), undefined, 'the third call is not forwarded while the session carries two');
    // A gives up: only its request is cancelled upstream. The server never answers it, so its
    // place stays taken (until pool.queue_timeout): C gets B's place once B is answered.
    abort.abort();
    const cancelled = await until(() => events('mc').find((e) => e.event === 'cancelled'), 'the cancellation upstream');
    assert.equal(cancelled.tag, 'mc-a');
    assert.ok(await callA instanceof Error);
    assert.equal(await metric('toolgate_pool_requests', { server: 'mc' }), 2, 'the cancelled call still counts');
    assert.equal(callOf('mc', 'mc-c'), undefined);
    release('mc-b');
    const inC = await until(() => callOf('mc', 'mc-c'), 'the third call upstream once a place is free');
    assert.equal(inC.pid, inA.pid);
    release('mc-c');
    assert.equal(text(await callB), 'released mc-b');
    assert.equal(text(await callC), 'released mc-c');
    assert.deepEqual(progress, { a: ['mc-a'], b: ['mc-b'], c: ['mc-c'] }, 'each client got the progress of its own call only (the SDK numbers every client\'s tokens alike)');
    assert.deepEqual(events('mc').filter((e) => e.event === 'cancelled').map((e) => e.tag), ['mc-a'], 'B and C were never cancelled');
    // Each of the three holds sent one log line that names no request, during shared use: each dropped and counted.
    assert.equal(await metric('toolgate_pool_dropped_total', { server: 'mc', kind: 'notification' }), 3);
  });

  it('share: server: two grants\' calls on one session — nothing of one reaches the other; the server\'s questions are refused; a cancellation keeps the session', async () => {
    const [one, two] = [await modern('ms', 'one'), await modern('ms', 'two')];
    const progress: Record<string, string[]> = { one: [], two: [] };
    const abort = new AbortController();
    const call1 = hold(one, 'ms-1', progress.one, { ask: true }, abort.signal).catch((err: Error) => err);
    const call2 = hold(two, 'ms-2', progress.two, { ask: true });
    const [in1, in2] = await until(() => { const x = callOf('ms', 'ms-1'); const y = callOf('ms', 'ms-2'); return x && y ? [x, y] : undefined; }, 'both calls upstream');
    assert.equal(in1.pid, in2.pid, 'the two grants share one upstream session at once');
    const answered = await until(() => { const x = events('ms').filter((e) => e.event === 'answered'); return x.length === 2 ? x : undefined; }, 'both questions answered');
    assert.deepEqual(answered.map((e) => [e.tag, e.error?.code]).sort(), [['ms-1', -32601], ['ms-2', -32601]], 'refused: nothing says whose call a question is');
    assert.match(String(answered[0].error?.message), /carries several clients' requests at once \(pool\.concurrency\)/);
    abort.abort();
    await until(() => events('ms').find((e) => e.event === 'cancelled'), 'the cancellation upstream');
    assert.ok(await call1 instanceof Error);
    release('ms-2');
    assert.equal(text(await call2), 'released ms-2');
    assert.deepEqual(progress, { one: ['ms-1'], two: ['ms-2'] });
    const who = JSON.parse(text(await two.callTool({ name: 'whoami', arguments: {} })));
    assert.equal(who.pid, in1.pid, 'the session where a call was cancelled serves on (only what names a request leaves it)');
    assert.equal(events('ms').filter((e) => e.event === 'initialize').length, 1, 'one upstream session throughout');
    assert.equal(await metric('toolgate_pool_dropped_total', { server: 'ms', kind: 'request' }), 2, 'the two questions, refused');
    assert.equal(await metric('toolgate_pool_dropped_total', { server: 'ms', kind: 'notification' }), 2, 'the two log lines');
  });

  it('limits and audit are as without concurrency: three concurrent calls of a tool limited to 2 — two run, one is denied, one audit row each', async () => {
    const cs = [await modern('ml'), await modern('ml'), await modern('ml')];
    const results = await Promise.all(cs.map((c) => c.callTool({ name: 'whoami', arguments: {} }).then((r: any) => r.isError ? 'denied' : JSON.parse(text(r)).pid, () => 'denied')));
    const ran = results.filter((r) => r !== 'denied');
    assert.equal(ran.length, 2, JSON.stringify(results));
    assert.equal(new Set(ran).size, 1, 'both on the one session');
    assert.equal(events('ml').filter((e) => e.tool === 'whoami').length, 2, 'the denied call never reached the server');
    const rows = await until(() => {
      h.audit.flush();
      const r = h.audit.query({ kind: 'call', server: 'ml', tool: 'whoami', limit: 10 });
      return r.length === 3 && r.every((x) => x.outcome !== null || x.decision === 'deny') ? r : undefined;
    }, 'three audit rows');
    assert.deepEqual(rows.map((r) => r.decision).sort(), ['allow', 'allow', 'deny']);
    assert.deepEqual(rows.filter((r) => r.decision === 'allow').map((r) => r.outcome!.split(' ')[0]), ['result', 'result']);
  });
});
