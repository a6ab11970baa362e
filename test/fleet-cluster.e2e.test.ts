import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { until } from './helpers/approvals.js';
import { RecordingUpstream } from './helpers/recording-http.js';
import { TestRedisCluster } from './helpers/redis-cluster.js';
import { serveListening, type Listening } from './helpers/serve.js';
import { BIN, denialText, tempDir, testEnv, writePolicy } from './helpers/toolgate.js';

const ADMIN = 'cluster-admin-token-0123456789';
const PREFIX = 'fleet';
const run = promisify(execFile);

type Instance = Listening;

/** One `toolgate serve` process on the shared config, in its own home; resolves once it listens. */
const serve = (config: string): Promise<Instance> => serveListening(config, tempDir());

async function connect(at: Instance, server: string): Promise<Client> {
  const client = new Client({ name: 'cluster-fleet-test', version: '1' });
  await client.connect(new StreamableHTTPClientTransport(new URL(`${at.base}/mcp/${server}`)));
  return client;
}

// About 30-40 s on a busy 2-core machine: the cluster (5 s), three gateways, 192 calls, a failover during 150 more, the follower.
describe('three toolgate serve processes on a Redis Cluster', () => {
  let cluster: TestRedisCluster;
  let upstream: RecordingUpstream;
  let fleet: Instance[];
  let dsn: string;

  before(async () => {
    cluster = await TestRedisCluster.start();
    upstream = await RecordingUpstream.start();
    const dir = tempDir();
    const policy = writePolicy(dir, {
      version: '1', default: 'deny',
      tools: { limited: { limits: [{ counter: 'limited', window: 'hour', max: 100, scope: 'server' }] }, free: {} },
    });
    const config = join(dir, 'toolgate.json');
    dsn = cluster.dsn(`prefix=${PREFIX}&timeout=2s`);
    writeFileSync(config, JSON.stringify({
      listen: '127.0.0.1:0', state: dsn, admin: { token: ADMIN }, sessions: { max_per_grant: 64 },
      servers: { busy: { url: upstream.url, policy, auth: 'none' }, ops: { url: upstream.url, policy, auth: 'none' } },
    }));
    fleet = await Promise.all([serve(config), serve(config), serve(config)]);
  });

  after(async () => {
    await Promise.all((fleet ?? []).map((i) => i.stop()));
    await upstream?.stop();
    await cluster?.stop();
  });

  it('64 sessions spread over three instances, a server limit of 100 per hour: exactly 100 calls reach the upstream', async () => {
    const clients = await Promise.all(Array.from({ length: 64 }, (_, i) => connect(fleet[i % 3], 'busy')));
    const results = await Promise.all(clients.flatMap((c) => [1, 2, 3].map(() => c.callTool({ name: 'limited', arguments: {} }))));
    const denied = results.map(denialText).filter((t): t is string => t !== undefined);
    assert.equal(results.length - denied.length, 100, [...new Set(denied)].join(' | '));
    assert.equal(upstream.count('limited'), 100);
    assert.ok(denied.every((t) => /Limit reached: 100 calls per hour/.test(t)), denied[0]);
    await Promise.all(clients.map((c) => c.close()));
  });

  it('the primary holding the slot fails over (CLUSTER FAILOVER on its replica) during calls: still exactly 100, every denial by the limit', async () => {
    const clients = await Promise.all(fleet.map((i) => connect(i, 'ops')));
    const before = upstream.count('limited');
    const denials: string[] = [];
    let calls = 0;
    let stop = false;
    const callers = clients.map(async (c) => {
      while (!stop) {
        const text = denialText(await c.callTool({ name: 'limited', arguments: {} }));
        calls++;
        if (text !== undefined) denials.push(text);
      }
    });
    await until(() => upstream.count('limited') - before >= 30, '30 calls through before the failover');
    const { primary } = await cluster.failover(`{${PREFIX}}`, 'manual');
    const at = calls;
    await until(() => calls >= at + 150 || denials.some((d) => !/Limit reached/.test(d)), '150 calls after the failover', 30_000);
    stop = true;
    await Promise.all(callers);
    assert.ok(upstream.count('limited') - before >= 30);
    assert.deepEqual([...new Set(denials.filter((d) => !/Limit reached: 100 calls per hour/.test(d)))], [], 'no call was refused for want of the store');
    assert.equal(upstream.count('limited') - before, 100, 'exactly the limit across the failover');
    assert.match(await primary.admin.info('replication'), /role:master/);
    for (const i of fleet) assert.equal(((await (await fetch(`${i.base}/healthz`)).json()) as { state: { status: string } }).state.status, 'ok');
    await Promise.all(clients.map((c) => c.close()));
  });

  it('toolgate audit --follow --state redis+cluster://… tails every instance\'s calls', async () => {
    const tail = spawn(process.execPath, [BIN, 'audit', '--follow', '--tool', 'free', '--state', dsn], { env: testEnv(tempDir()) });
    after(() => { tail.kill('SIGINT'); });
    let out = '';
    tail.stdout!.on('data', (d) => { out += d; });
    const clients = await Promise.all(fleet.map((i) => connect(i, 'ops')));
    const lines = () => out.split('\n').filter(Boolean).map((l) => JSON.parse(l) as Record<string, unknown>).filter((l) => l.kind === 'call');
    // The follower reads from the end of the stream once it has started: call until its first line shows.
    await until(async () => {
      await clients[0].callTool({ name: 'free', arguments: {} });
      return lines().length > 0;
    }, `the follower's first line (it printed: ${out})`);
    const seen = lines().length;
    for (const c of clients) await c.callTool({ name: 'free', arguments: {} });
    await until(() => new Set(lines().slice(seen).map((l) => l.instance)).size >= 3, 'a line from each instance');
    await Promise.all(clients.map((c) => c.close()));
  });

  it('toolgate status --state redis+cluster://… lists the three instances', async () => {
    const status = await run(process.execPath, [BIN, 'status', '--json', '--state', dsn, '--audit', join(fleet[0].home, 'audit.db')], { env: testEnv(tempDir()) });
    const listed = (JSON.parse(status.stdout) as { fleet: { listen: string }[] }).fleet.map((i) => i.listen).sort();
    assert.deepEqual(listed, fleet.map((i) => i.base).sort());
  });
});
