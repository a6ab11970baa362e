import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { writeFileSync } from 'node:fs';
import { promisify } from 'node:util';
import { until } from './helpers/approvals.js';
import { TestRedis } from './helpers/redis.js';
import { RecordingUpstream } from './helpers/recording-http.js';
import { serveListening, type Listening } from './helpers/serve.js';
import { BIN, denialText, tempDir, testEnv, writePolicy } from './helpers/toolgate.js';

const ADMIN = 'fleet-admin-token-0123456789';
const run = promisify(execFile);

type Instance = Listening;

/** One `toolgate serve` process on the shared config, in its own home; resolves once it listens. */
const serve = (config: string): Promise<Instance> => serveListening(config, tempDir());

/**
 * fetch, tried once more when the socket failed: Node's HTTP server closes keep-alive sockets idle
 * for 5 s, and on a busy machine the client can pick one at that very moment (a known race). A
 * retried call that did arrive twice would only be counted twice: the limit still holds.
 */
const retrying: typeof fetch = async (url, init) => {
  try {
    return await fetch(url, init);
  } catch (err) {
    if ((err as Error).message !== 'fetch failed') throw err;
    return fetch(url, init);
  }
};

async function connect(at: Instance, server: string, token?: string): Promise<Client> {
  const client = new Client({ name: 'fleet-test', version: '1' });
  const headers: Record<string, string> = token ? { Authorization: `Bearer ${token}` } : {};
  await client.connect(new StreamableHTTPClientTransport(new URL(`${at.base}/mcp/${server}`), { requestInit: { headers }, fetch: retrying }));
  return client;
}

async function admin(at: Instance, method: string, path: string, body?: unknown): Promise<{ status: number; json: Record<string, unknown> }> {
  const res = await fetch(`${at.base}${path}`, {
    method, headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, json: (await res.json()) as Record<string, unknown> };
}

async function health(at: Instance): Promise<{ status: string; state: { status: string; detail?: string } }> {
  return (await fetch(`${at.base}/healthz`)).json() as Promise<{ status: string; state: { status: string; detail?: string } }>;
}

describe('a fleet of three toolgate serve processes on one Redis', () => {
  let redis: TestRedis;
  let upstream: RecordingUpstream;
  let fleet: Instance[];

  before(async () => {
    redis = await TestRedis.start();
    upstream = await RecordingUpstream.start();
    const dir = tempDir();
    const policy = writePolicy(dir, {
      version: '1', default: 'deny',
      tools: {
        limited: { limits: [{ counter: 'limited', window: 'hour', max: 100, scope: 'server' }] },
        free: {},
        guarded: { action: 'approve', approval: { timeout: '5m' } },
      },
    });
    // A generous command timeout: 192 calls at once on a busy 2-core machine must not time out (a
    // reservation whose answer comes too late is denied but stays counted, the safe side).
    // Three servers on the one upstream, so each test has counters of its own (limits are per server name).
    const server = (auth: string) => ({ url: upstream.url, policy, auth });
    const config = join(dir, 'toolgate.json');
    writeFileSync(config, JSON.stringify({
      listen: '127.0.0.1:0',
      state: `${redis.url}/0?prefix=fleet&timeout=2s`,
      admin: { token: ADMIN },
      // The 64 sessions share one (anonymous) grant; the per-instance cap of 20 would refuse some.
      sessions: { max_per_grant: 64 },
      servers: { busy: server('none'), ops: server('none'), granted: server('grants') },
    }));
    fleet = await Promise.all([serve(config), serve(config), serve(config)]);
  });

  after(async () => {
    await Promise.all(fleet.map((i) => i.stop()));
    await upstream.stop();
    await redis.stop();
  });

  it('64 sessions spread over three instances, a server limit of 100 per hour: exactly 100 calls reach the upstream', async () => {
    const clients = await Promise.all(Array.from({ length: 64 }, (_, i) => connect(fleet[i % 3], 'busy')));
    const results = await Promise.all(clients.flatMap((c) => [1, 2, 3].map(() => c.callTool({ name: 'limited', arguments: {} }))));
    const denied = results.map(denialText).filter((t): t is string => t !== undefined);
    assert.equal(results.length - denied.length, 100, [...new Set(denied)].join(" | "));
    assert.equal(upstream.count('limited'), 100, 'counted at the upstream');
    assert.ok(denied.every((t) => /Limit reached: 100 calls per hour \("limited", per server\)/.test(t)), denied[0]);
    await Promise.all(clients.map((c) => c.close()));
  });

  // The product's contract: a revocation applies at once in the process that made it and reaches the
  // others over pub/sub, which may take up to a second; the other instance is polled, not raced.
  it('a grant revoked on one instance is refused at once there and, after the change message, at another', async () => {
    const created = await admin(fleet[0], 'POST', '/api/grants', { server: 'granted', label: 'agent' });
    assert.equal(created.status, 201);
    const token = created.json.token as string;
    const here = await connect(fleet[0], 'granted', token);
    const there = await connect(fleet[1], 'granted', token);
    assert.equal(denialText(await there.callTool({ name: 'free', arguments: {} })), undefined);
    assert.equal((await admin(fleet[0], 'DELETE', `/api/grants/${created.json.id as string}`)).status, 200);
    await assert.rejects(here.callTool({ name: 'free', arguments: {} }), /401|revoked/);
    const refused = await until(async () => {
      try { await there.callTool({ name: 'free', arguments: {} }); return undefined; } catch (err) { return String(err); }
    }, 'the other instance to refuse the revoked grant', 5000);
    assert.match(refused, /401|revoked/);
    await Promise.all([here.close().catch(() => {}), there.close().catch(() => {})]);
  });

  it('the kill switch turned on at one instance stops calls at another once the change message arrives', async () => {
    const client = await connect(fleet[0], 'ops');
    const free = async () => denialText(await client.callTool({ name: 'free', arguments: {} }));
    assert.equal(await free(), undefined);
    await admin(fleet[2], 'POST', '/api/kill-switch', { on: true, server: 'ops', reason: 'drill' });
    assert.match(await until(free, 'the kill switch to reach the other instance', 5000), /kill switch is on/);
    await admin(fleet[1], 'POST', '/api/kill-switch', { on: false, server: 'ops' });
    await until(async () => (await free()) === undefined, 'the kill switch to be off again from a third', 5000);
    await client.close();
  });

  it('a call held on one instance is released by an approval made through another', async () => {
    const client = await connect(fleet[0], 'ops');
    const held = client.callTool({ name: 'guarded', arguments: { n: 1 } });
    let pending: Record<string, unknown> | undefined;
    while (!pending) {
      const list = (await admin(fleet[2], 'GET', '/api/approvals?status=pending')).json as unknown as Record<string, unknown>[];
      pending = list.find((a) => a.tool === 'guarded');
      if (!pending) await new Promise((r) => setTimeout(r, 100));
    }
    assert.equal(upstream.count('guarded'), 0, 'held, not forwarded');
    assert.equal((await admin(fleet[1], 'POST', `/api/approvals/${pending.id as string}/approve`, {})).status, 200);
    assert.equal(denialText(await held), undefined);
    assert.equal(upstream.count('guarded'), 1);
    assert.equal((await admin(fleet[2], 'POST', `/api/approvals/${pending.id as string}/approve`, {})).status, 409, 'decided once, fleet-wide');
    await client.close();
  });

  it('toolgate status lists every live instance; audit --follow tails the whole fleet as JSON lines', async () => {
    const args = ['--state', `${redis.url}/0?prefix=fleet`];
    const home = tempDir();
    const status = await run(process.execPath, [BIN, 'status', '--json', ...args, '--audit', join(fleet[0].home, 'audit.db')], { env: testEnv(home) });
    const listed = (JSON.parse(status.stdout) as { fleet: { listen: string }[] }).fleet.map((i) => i.listen).sort();
    assert.deepEqual(listed, fleet.map((i) => i.base).sort());
    const tail = spawn(process.execPath, [BIN, 'audit', '--follow', '--tool', 'free', ...args], { env: testEnv(home) });
    let out = '';
    tail.stdout!.on('data', (d) => { out += d; });
    const clients = await Promise.all(fleet.map((i) => connect(i, 'ops')));
    after(() => { tail.kill('SIGINT'); });
    // The follower reads from the end of the stream once it has started: call until its first line
    // shows, then once on each instance (outcome lines pass the filter too: they carry no tool).
    const lines = () => out.split('\n').filter(Boolean).map((l) => JSON.parse(l) as Record<string, unknown>).filter((l) => l.kind === 'call');
    await until(async () => {
      await clients[0].callTool({ name: 'free', arguments: {} });
      return lines().length > 0;
    }, `the follower's first line (it printed: ${out})`);
    const seen = lines().length;
    for (const c of clients) await c.callTool({ name: 'free', arguments: {} });
    // Events of the warm-up calls may still arrive after `seen` (audit events are published in batches).
    const instances = () => new Set(lines().slice(seen).map((l) => l.instance));
    await until(() => instances().size >= 3, `a line from each instance (got ${JSON.stringify(lines().slice(seen))})`);
    const last = lines().slice(seen);
    assert.ok(last.every((l) => l.tool === 'free' && l.decision === 'allow' && l.server === 'ops'), JSON.stringify(last));
    assert.equal(instances().size, 3, 'one event from each instance');
    await Promise.all(clients.map((c) => c.close()));
  });

  it('Redis killed mid-run: limited calls denied clearly, unlimited ones carry on; back (empty), the fleet refuses limited calls until state reset-ack, then recovers without a restart', async () => {
    const clients = await Promise.all(fleet.map((i) => connect(i, 'ops')));
    for (const c of clients) assert.equal(denialText(await c.callTool({ name: 'limited', arguments: {} })), undefined);
    const before = upstream.count('limited');
    await redis.stop();
    for (const c of clients) {
      assert.match(denialText(await c.callTool({ name: 'limited', arguments: {} }))!, /Limits cannot be checked right now \(state store error: Redis at redis:\/\/127\.0\.0\.1:\d+\/0.*\); the call was not forwarded \(fail closed\)/);
      assert.equal(denialText(await c.callTool({ name: 'free', arguments: {} })), undefined, 'a call without limits carries on');
    }
    assert.equal(upstream.count('limited'), before, 'nothing limited was forwarded');
    const down = await health(fleet[0]);
    assert.equal(down.status, 'degraded');
    assert.equal(down.state.status, 'unavailable');
    // The test's Redis comes back empty, as one without persistence does: every counter is gone.
    await redis.start();
    for (const i of fleet) await until(async () => /state lost/.test((await health(i)).state.detail ?? ''), 'each instance notices the lost state');
    for (const c of clients) {
      assert.match(denialText(await c.callTool({ name: 'limited', arguments: {} }))!, /lost its counters .*toolgate state reset-ack\. The call was not forwarded/);
      assert.equal(denialText(await c.callTool({ name: 'free', arguments: {} })), undefined, 'a call without limits carries on');
    }
    assert.equal(upstream.count('limited'), before, 'nothing limited was forwarded on empty counters');
    const ack = await run(process.execPath, [BIN, 'state', 'reset-ack', '--state', `${redis.url}/0?prefix=fleet`], { env: testEnv(tempDir()) });
    assert.match(ack.stdout, /^state reset acknowledged \(generation [0-9a-f]+\)/);
    for (const c of clients) assert.equal(denialText(await c.callTool({ name: 'limited', arguments: {} })), undefined, 'counting again');
    assert.equal(upstream.count('limited'), before + 3);
    for (const i of fleet) assert.equal((await health(i)).state.status, 'ok');
    await Promise.all(clients.map((c) => c.close()));
  });
});
