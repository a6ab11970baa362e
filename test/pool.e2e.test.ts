// Issue 26 items 1, 2, 3, 5: `toolgate serve` pools upstream sessions. A request leases one for
// its whole life, so what the server sends during it reaches that caller alone; an exhausted pool
// queues for a bounded time, then answers with a retryable error; idle sessions shrink to `size`;
// a crashed session fails its call (never replayed) and is replaced. Real SDK clients, a real
// gateway, a fixture server that tells its pid (test/fixtures/pool-server.mjs).
import assert from 'node:assert/strict';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { pino } from 'pino';
import { Client as LegacyClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as LegacyTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ElicitRequestSchema, LoggingMessageNotificationSchema, ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import type { Client } from '@modelcontextprotocol/client';
import { z } from 'zod';
import { AuditLog } from '../src/audit/index.js';
import { GatewayConfigSchema } from '../src/config/gateway.js';
import { Gateway } from '../src/gateway/server.js';
import { Grants } from '../src/grants/grants.js';
import { openSqliteState } from '../src/state/sqlite.js';
import type { StateStore } from '../src/state/types.js';
import { until } from './helpers/approvals.js';
import { modernHttp } from './helpers/modern.js';
import { FIXTURES, tempDir, writePolicy } from './helpers/toolgate.js';

const SERVER = join(FIXTURES, 'pool-server.mjs');
// concurrency 1: these pools lease each session exclusively, as before pool.concurrency (its
// default, 4, is tested in pool-multiplex.e2e.test.ts).
const POOLS: Record<string, object> = {
  pa: { max: 2, concurrency: 1 },
  pc: { max: 1, concurrency: 1 },
  pq: { max: 1, queue_timeout: '1s', concurrency: 1 },
  pw: { max: 1, queue_timeout: '60s', concurrency: 1 },
  ps: { size: 1, max: 3, idle_timeout: '1s', concurrency: 1 },
  sg: {},
  ss: { share: 'server', max: 1, concurrency: 1 },
  sl: { share: 'server', max: 2, clients: 'all' },
  lg: {},
};

interface Event { pid: number; event: string; tool?: string; tag?: string | null; answer?: any; error?: any }

describe('toolgate serve: pooled upstream sessions', () => {
  let dir: string;
  let gateway: Gateway;
  let state: StateStore;
  let audit: AuditLog;
  let base: string;
  const tokens: Record<string, string> = {};
  const clients: { close(): Promise<void> }[] = [];

  before(async () => {
    dir = tempDir();
    const policy = writePolicy(dir, { version: '1', default: 'allow' });
    // On pq, whoami may run twice per grant and hour: a request refused for want of a session is not charged.
    const limited = writePolicy(dir, { version: '1', default: 'allow', tools: { whoami: { limits: [{ counter: 'who', window: 'hour', max: 2, scope: 'grant' }] } } }, 'limited.json');
    const servers: Record<string, object> = Object.fromEntries(Object.entries(POOLS).map(([name, pool]) => [name, {
      command: process.execPath, args: [SERVER], protocol: 'legacy', policy: name === 'pq' || name === 'pw' ? limited : policy, pool,
      env: { RECORD_FILE: join(dir, `${name}.jsonl`), RELEASE_DIR: dir },
    }]));
    servers.missing = { command: join(dir, 'no-such-command'), protocol: 'legacy', policy };
    const config = GatewayConfigSchema.parse({ listen: '127.0.0.1:0', servers });
    state = openSqliteState(join(dir, 'state.db'));
    audit = new AuditLog(join(dir, 'audit.db'));
    gateway = new Gateway({ config, state, audit, log: pino({ level: 'silent' }) });
    base = `http://127.0.0.1:${(await gateway.start()).port}`;
    const grants = new Grants(state.grants);
    for (const server of [...Object.keys(POOLS), 'missing']) for (const label of ['one', 'two']) tokens[`${server}-${label}`] = (await grants.create({ server, label: `${server}-${label}` })).token;
  });

  after(async () => {
    for (const c of clients) await c.close().catch(() => undefined);
    await gateway.stop();
    audit.close();
    await state.close();
  });

  const events = (server: string): Event[] => {
    const file = join(dir, `${server}.jsonl`);
    return existsSync(file) ? readFileSync(file, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l)) : [];
  };
  const callOf = (server: string, tag: string) => events(server).find((e) => e.event === 'call' && e.tag === tag);
  const release = (tag: string) => writeFileSync(join(dir, tag), '');
  const modern = async (server: string, grant = 'one'): Promise<Client> => {
    const c = await modernHttp('pinned', `${base}/mcp/${server}`, tokens[`${server}-${grant}`]);
    clients.push(c);
    return c;
  };
  const legacy = async (server: string, grant = 'one', onAsk?: (message: string) => void, logs?: string[]): Promise<LegacyClient> => {
    const c = new LegacyClient({ name: 'legacy-pool-test', version: '1' }, { capabilities: { elicitation: {} } });
    c.setRequestHandler(ElicitRequestSchema, async (req) => {
      onAsk?.(String(req.params.message));
      return { action: 'accept', content: { ok: true } };
    });
    c.setNotificationHandler(LoggingMessageNotificationSchema, (n) => { logs?.push(String(n.params.data)); });
    await c.connect(new LegacyTransport(new URL(`${base}/mcp/${server}`), { requestInit: { headers: { authorization: `Bearer ${tokens[`${server}-${grant}`]}` } } }));
    clients.push(c);
    return c;
  };
  const text = (r: any): string => r.content[0].text;
  const whoami = async (c: { callTool(p: any): Promise<any> }): Promise<{ pid: number; calls: number }> => JSON.parse(text(await c.callTool({ name: 'whoami', arguments: {} })));
  const gauge = async (name: string, server: string): Promise<number> => {
    const metric = await gateway.metrics.registry.getSingleMetric(name)!.get();
    return metric.values.find((v) => v.labels.server === server)?.value ?? 0;
  };
  const alive = (pid: number) => { try { process.kill(pid, 0); return true; } catch { return false; } };

  it('two concurrent calls of one grant lease two upstream sessions: progress, server requests and cancellation stay with their own call', async () => {
    const [a, b] = [await modern('pa'), await modern('pa')];
    const progress: Record<string, string[]> = { a: [], b: [] };
    const callA = a.callTool({ name: 'hold', arguments: { tag: 'pa-a', ask: true } }, { onprogress: (p: any) => progress.a.push(p.message) });
    const callB = b.callTool({ name: 'hold', arguments: { tag: 'pa-b' } }, { onprogress: (p: any) => progress.b.push(p.message) });
    const [inA, inB] = await until(() => { const x = callOf('pa', 'pa-a'); const y = callOf('pa', 'pa-b'); return x && y ? [x, y] : undefined; }, 'both calls upstream');
    assert.notEqual(inA.pid, inB.pid, 'each call has its own upstream session');
    // The elicitation sent during A: a 2026-07-28 client cannot be asked, so A's upstream (and only it) hears so.
    const answered = await until(() => events('pa').find((e) => e.event === 'answered'), 'the answer to the elicitation');
    assert.deepEqual([answered.pid, answered.tag, answered.error?.code], [inA.pid, 'pa-a', -32601]);
    release('pa-a');
    release('pa-b');
    assert.equal(text(await callA), 'released pa-a');
    assert.equal(text(await callB), 'released pa-b');
    assert.deepEqual(progress, { a: ['pa-a'], b: ['pa-b'] }, 'each client got the progress of its own call only');
    assert.equal(events('pa').filter((e) => e.event === 'answered').length, 1);

    // Cancellation: A closes its stream; only A's upstream request is cancelled.
    const abort = new AbortController();
    const callC = a.callTool({ name: 'hold', arguments: { tag: 'pa-c' } }, { signal: abort.signal }).catch((err: Error) => err);
    const callD = b.callTool({ name: 'hold', arguments: { tag: 'pa-d' } });
    const [inC, inD] = await until(() => { const x = callOf('pa', 'pa-c'); const y = callOf('pa', 'pa-d'); return x && y ? [x, y] : undefined; }, 'both calls upstream');
    abort.abort();
    const cancelled = await until(() => events('pa').find((e) => e.event === 'cancelled'), 'the cancellation upstream');
    assert.deepEqual([cancelled.pid, cancelled.tag], [inC.pid, 'pa-c']);
    assert.ok(await callC instanceof Error);
    release('pa-d');
    assert.equal(text(await callD), 'released pa-d');
    assert.notEqual(inC.pid, inD.pid);
    assert.deepEqual(events('pa').filter((e) => e.event === 'cancelled').map((e) => e.tag), ['pa-c'], 'B was never cancelled');
  });

  it('all sessions busy: a request waits in the queue and is served when one frees; past queue_timeout it gets the retryable error, never forwarded', async () => {
    const [c, d] = [await modern('pq'), await modern('pq')];
    const first = c.callTool({ name: 'hold', arguments: { tag: 'pq-1' } });
    const holder = await until(() => callOf('pq', 'pq-1'), 'the first call upstream');
    const waiting = whoami(d);
    await until(async () => (await gauge('toolgate_pool_queued', 'pq')) === 1, 'the second request to queue');
    assert.equal(events('pq').filter((e) => e.tool === 'whoami').length, 0, 'nothing forwarded while the only session is leased');
    release('pq-1');
    assert.equal(text(await first), 'released pq-1');
    assert.equal((await waiting).pid, holder.pid, 'served by the session the first call gave back');

    const second = c.callTool({ name: 'hold', arguments: { tag: 'pq-2' } });
    await until(() => callOf('pq', 'pq-2'), 'the call upstream');
    const refused = await whoami(d).then(() => undefined, (err: any) => err);
    assert.ok(refused, 'refused');
    assert.equal(refused.code, -32051);
    assert.match(refused.message, /The pool of upstream sessions of "pq" is exhausted: its only upstream session stayed busy for pool\.queue_timeout \(1s\)\. This request was not forwarded; retry in a moment\./);
    assert.deepEqual(refused.data, { retryable: true, reason: 'pool_exhausted', retryAfterSeconds: 1 });
    assert.equal(events('pq').filter((e) => e.tool === 'whoami').length, 1, 'the refused request never reached the server');
    assert.equal(await gauge('toolgate_pool_exhausted_total', 'pq'), 1);
    release('pq-2');
    assert.equal(text(await second), 'released pq-2');
    // Its limit was given back: the second whoami of the hour (the refused one did not count) runs.
    assert.equal((await whoami(d)).pid, holder.pid);
  });

  it('a call its client gives up while it waits for a session was never forwarded: its limit is given back', async () => {
    const [c, d] = [await modern('pw'), await modern('pw')];
    const first = c.callTool({ name: 'hold', arguments: { tag: 'pw-1' } });
    await until(() => callOf('pw', 'pw-1'), 'the first call upstream');
    const abort = new AbortController();
    const gaveUp = d.callTool({ name: 'whoami', arguments: {} }, { signal: abort.signal }).then(() => 'answered', () => 'aborted');
    await until(async () => (await gauge('toolgate_pool_queued', 'pw')) === 1, 'the call to queue');
    abort.abort();
    assert.equal(await gaveUp, 'aborted');
    await until(async () => (await gauge('toolgate_pool_queued', 'pw')) === 0, 'the call to leave the queue');
    release('pw-1');
    assert.equal(text(await first), 'released pw-1');
    // whoami may run twice per hour: the call given up in the queue did not count.
    await whoami(d);
    const second = await d.callTool({ name: 'whoami', arguments: {} });
    assert.ok(!(second as any).isError, `the second whoami of the hour runs: ${text(second)}`);
    assert.equal(events('pw').filter((e) => e.tool === 'whoami').length, 2, 'the call given up never reached the server');
    const outcomes = await until(() => {
      audit.flush();
      const rows = audit.query({ kind: 'call', server: 'pw', tool: 'whoami', limit: 10 });
      return rows.length === 3 && rows.every((r) => r.outcome !== null) ? rows.map((r) => r.outcome!.split(' ')[0]).sort() : undefined;
    }, 'the three audit rows ended');
    assert.deepEqual(outcomes, ['result', 'result', 'unreachable'], 'the call given up in the queue is unreachable, not cancelled after it ran');
  });

  it('idle sessions beyond size close after idle_timeout; the pool keeps size warm', async () => {
    const cs = [await modern('ps'), await modern('ps'), await modern('ps')];
    const calls = cs.map((c, i) => c.callTool({ name: 'hold', arguments: { tag: `ps-${i}` } }));
    const pids = await until(() => { const x = [0, 1, 2].map((i) => callOf('ps', `ps-${i}`)); return x.every(Boolean) ? x.map((e) => e!.pid) : undefined; }, 'three calls upstream');
    assert.equal(new Set(pids).size, 3);
    assert.equal(await gauge('toolgate_pool_sessions', 'ps'), 3);
    assert.equal(await gauge('toolgate_pool_busy', 'ps'), 3);
    for (let i = 0; i < 3; i++) release(`ps-${i}`);
    await Promise.all(calls);
    await until(async () => (await gauge('toolgate_pool_sessions', 'ps')) === 1, 'the pool to shrink to its size');
    await until(() => pids.filter(alive).length === 1, 'two upstream processes to exit');
    assert.equal(await gauge('toolgate_pool_busy', 'ps'), 0);
    const kept = pids.find(alive);
    assert.equal((await whoami(cs[0])).pid, kept, 'the warm one serves the next call');
  });

  it('a pooled upstream that exits mid-call: that call gets a clear error, nothing is replayed, the next call gets a fresh session', async () => {
    const c = await modern('pc');
    const before = await whoami(c);
    const err = await c.callTool({ name: 'crash', arguments: {} }).then(() => undefined, (e: Error) => e);
    assert.ok(err);
    assert.match(err.message, /The upstream MCP server exited during this request \(.*\)\. toolgate does not send it again, since it may have run; the next request gets a new upstream session\./);
    const next = await whoami(c);
    assert.notEqual(next.pid, before.pid);
    assert.equal(next.calls, 1, 'a fresh upstream session');
    assert.equal(events('pc').filter((e) => e.tool === 'crash').length, 1, 'the crashed call was not sent again');
  });

  it('share: grant never shares an upstream session between grants; share: server does, one lease at a time', async () => {
    const [g1, g2] = [await modern('sg', 'one'), await modern('sg', 'two')];
    const [p1, p2] = [await whoami(g1), await whoami(g2)];
    assert.notEqual(p1.pid, p2.pid, 'each grant has its own pool');
    assert.equal((await whoami(g1)).pid, p1.pid, 'the grant\'s session is kept warm');

    const [s1, s2] = [await modern('ss', 'one'), await modern('ss', 'two')];
    const held = s1.callTool({ name: 'hold', arguments: { tag: 'ss-1' } });
    const holder = await until(() => callOf('ss', 'ss-1'), 'grant one\'s call upstream');
    const other = whoami(s2);
    await until(async () => (await gauge('toolgate_pool_queued', 'ss')) === 1, 'grant two to wait for the session');
    assert.equal(events('ss').filter((e) => e.tool === 'whoami').length, 0, 'never two leases at once');
    release('ss-1');
    await held;
    assert.equal((await other).pid, holder.pid, 'the two grants shared one upstream session');
    assert.equal(events('ss').filter((e) => e.event === 'initialize').length, 1, 'initialized once');
  });

  it('legacy clients keep their own upstream session by default', async () => {
    const [l1, l2] = [await legacy('lg'), await legacy('lg')];
    const m = await modern('lg');
    const pids = [(await whoami(l1)).pid, (await whoami(l2)).pid, (await whoami(m)).pid];
    assert.equal(new Set(pids).size, 3);
    assert.equal(await gauge('toolgate_pool_sessions', 'lg'), 1, 'only the modern client\'s requests are pooled');
  });

  it('clients: all pools legacy sessions too: initialize answered from the pool, a server request during a call reaches that caller alone, subscriptions refused', async () => {
    const asked: Record<string, string[]> = { one: [], two: [] };
    const logs: Record<string, string[]> = { one: [], two: [] };
    const l1 = await legacy('sl', 'one', (m) => asked.one.push(m), logs.one);
    const l2 = await legacy('sl', 'two', (m) => asked.two.push(m), logs.two);
    assert.equal(l1.getServerVersion()?.name, 'pool-fixture', 'the pooled session\'s initialize answer');
    const progress: string[] = [];
    const c1 = l1.callTool({ name: 'hold', arguments: { tag: 'sl-1', ask: true, late: true } }, undefined, { onprogress: (p) => progress.push(String(p.message)) });
    const c2 = l2.callTool({ name: 'hold', arguments: { tag: 'sl-2' } });
    const [in1, in2] = await until(() => { const x = callOf('sl', 'sl-1'); const y = callOf('sl', 'sl-2'); return x && y ? [x, y] : undefined; }, 'both calls upstream');
    assert.notEqual(in1.pid, in2.pid);
    const answered = await until(() => events('sl').find((e) => e.event === 'answered'), 'the elicitation answered');
    assert.deepEqual([answered.pid, answered.tag, answered.answer], [in1.pid, 'sl-1', { action: 'accept', content: { ok: true } }]);
    release('sl-1');
    release('sl-2');
    await Promise.all([c1, c2]);
    assert.deepEqual(asked, { one: ['question for sl-1'], two: [] });
    assert.deepEqual(progress, ['sl-1']);
    assert.ok(logs.one.includes('log of sl-1') && !logs.two.includes('log of sl-1') && !logs.one.includes('log of sl-2'), 'log lines only to their own call\'s client');
    // The log line the server sent after answering sl-1 came between leases: nobody hears it.
    await whoami(l1);
    await whoami(l2);
    assert.ok(![...logs.one, ...logs.two].includes('late log of sl-1'), 'dropped between leases');
    // A list change is no one call's: every client of the pool hears it, the other grant's too.
    let changed = 0;
    l2.setNotificationHandler(ToolListChangedNotificationSchema, () => { changed++; });
    assert.equal(text(await l1.callTool({ name: 'announce', arguments: {} })), 'announced');
    await until(() => changed > 0, 'the other client to hear the list change');
    assert.ok(events('sl').filter((e) => e.event === 'initialize').length <= 2, 'initialized once per pooled session, not per client');
    const sub = await l1.subscribeResource({ uri: 'file:///x' }).then(() => undefined, (e: any) => e);
    assert.equal(sub?.code, -32601);
    assert.match(sub.message, /resources\/subscribe is not available on "sl", whose upstream sessions toolgate pools/);
  });

  it('a server that cannot start: each request hears why, and the next one tries again', async () => {
    const envelope = { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {} };
    for (const id of [1, 2]) {
      const r = await fetch(`${base}/mcp/missing`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', authorization: `Bearer ${tokens['missing-one']}`, 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'server/discover' },
        body: JSON.stringify({ jsonrpc: '2.0', id, method: 'server/discover', params: { _meta: envelope } }),
      });
      const body = await r.json() as any;
      assert.equal(body.error?.code, -32603, JSON.stringify(body));
      assert.match(body.error.message, /^The upstream MCP server "missing" could not be started: command not found: /);
    }
  });

  it('a task\'s requests go to the upstream session that runs it, whichever session is free first', async () => {
    const [l1, l2] = [await legacy('sl', 'one'), await legacy('sl', 'two')];
    const any = z.object({}).loose();
    // l1 holds one pooled session while l2's call creates a task on the other.
    const held = l1.callTool({ name: 'hold', arguments: { tag: 'task-hold' } });
    const holder = await until(() => callOf('sl', 'task-hold'), 'the hold upstream');
    const created = await l2.request({ method: 'tools/call', params: { name: 'whoami', arguments: {}, task: { ttl: 60_000 } } }, any) as any;
    const taskId = created.task?.taskId as string;
    assert.ok(taskId && !taskId.startsWith(`task-${holder.pid}-`), JSON.stringify(created));
    release('task-hold');
    await held;
    // The session l1 just gave back is the one leased next for any request; tasks/get still goes where the task is.
    const got = await l2.request({ method: 'tasks/get', params: { taskId } }, any) as any;
    assert.equal(got.taskId, taskId, JSON.stringify(got));
  });
});
