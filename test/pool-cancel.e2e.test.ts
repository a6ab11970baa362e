// A call cancelled on a routed pooled session (pool.concurrency above 1) keeps its place, and its
// grant's, until the server answers it (the answer is dropped) or pool.queue_timeout passes: a
// server may ignore a cancellation and go on working, and a grant sending and cancelling calls in
// a loop must not pile work on a shared process beyond its places. Real SDK v2 clients, a real
// gateway, and the pool fixture server's `hold` with `stubborn` (it ignores cancellations).
import assert from 'node:assert/strict';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { pino } from 'pino';
import type { Client } from '@modelcontextprotocol/client';
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
const POOLS: Record<string, object> = {
  // A grant holds at most 1 session's worth of places: 2 requests.
  cs: { share: 'server', max: 2, concurrency: 2, max_per_grant: 1, queue_timeout: '60s' },
  // A short grace (the queue timeout): then the shared session is retired.
  cq: { share: 'server', max: 1, concurrency: 2, queue_timeout: '3s' },
  // The same with share: grant: then the place is free and the session serves on.
  cg: { max: 1, concurrency: 2, queue_timeout: '3s' },
};

interface Event { pid: number; event: string; tool?: string; tag?: string | null }

describe('toolgate serve: a call cancelled on a routed pooled session keeps its place until the server lets go', () => {
  let dir: string;
  let gateway: Gateway;
  let state: StateStore;
  let audit: AuditLog;
  let base: string;
  const tokens: Record<string, string> = {};
  const clients: Client[] = [];

  before(async () => {
    dir = tempDir();
    const policy = writePolicy(dir, { version: '1', default: 'allow' });
    const servers = Object.fromEntries(Object.entries(POOLS).map(([name, pool]) => [name, {
      command: process.execPath, args: [SERVER], protocol: 'legacy', policy, pool,
      env: { RECORD_FILE: join(dir, `${name}.jsonl`), RELEASE_DIR: dir },
    }]));
    const config = GatewayConfigSchema.parse({ listen: '127.0.0.1:0', servers });
    state = openSqliteState(join(dir, 'state.db'));
    audit = new AuditLog(join(dir, 'audit.db'));
    gateway = new Gateway({ config, state, audit, log: pino({ level: 'silent' }) });
    base = `http://127.0.0.1:${(await gateway.start()).port}`;
    const grants = new Grants(state.grants);
    for (const server of Object.keys(POOLS)) for (const label of ['one', 'two']) tokens[`${server}-${label}`] = (await grants.create({ server, label: `${server}-${label}` })).token;
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
  const text = (r: any): string => r.content[0].text;
  const metric = async (name: string, labels: Record<string, string>): Promise<number> => {
    const m = await gateway.metrics.registry.getSingleMetric(name)!.get();
    return m.values.find((v) => Object.entries(labels).every(([k, x]) => v.labels[k] === x))?.value ?? 0;
  };
  /** A stubborn hold (the server ignores its cancellation), cancelled once it reached the server. */
  const cancelledHold = async (c: Client, server: string, tag: string): Promise<Event> => {
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
