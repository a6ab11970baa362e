import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { cli, until } from './helpers/approvals.js';
import { CountingUpstream } from './helpers/counting-upstream.js';
import { freePort, TestRedis } from './helpers/redis.js';
import { Serve } from './helpers/serve.js';
import { tempDir, testEnv, writePolicy } from './helpers/toolgate.js';

const INSTANCES = 3;
const CLIENTS_PER_INSTANCE = 3;
/** A client starts a new session this often, so sessions come and go on every instance during the restarts. */
const CALLS_PER_SESSION = 20;

interface Instance { port: number; home: string; serve?: Serve }

/** How a call ended, as its client saw it. */
type Seen = 'answered' | 'refused-503' | 'refused-connection' | 'refused-session';

/**
 * What a client saw for one call. A refusal before forwarding is: 503 with JSON-RPC -32050 (the
 * gateway is stopping), a connection that could not be made or was closed before an answer
 * (nothing listens, or the listener closed it), or 404 (a session of an instance that restarted).
 * Whether any of these was really not forwarded is checked against the upstream's records.
 */
function classify(err: Error): Seen | undefined {
  const text = `${err.message} ${String((err as { cause?: unknown }).cause ?? '')}`;
  // The SDK's message holds the body: JSON-RPC -32050 with data.retryable (the status, 503, it does not always show).
  if (/"code":-32050/.test(text) && /"retryable":true/.test(text)) return 'refused-503';
  if (/fetch failed|ECONNREFUSED|ECONNRESET|other side closed|socket hang up/.test(text)) return 'refused-connection';
  // The SDK words a 404 two ways: "HTTP 404 …" for a request, "Error POSTing to endpoint: {…-32001…}" (code 404) for one it sends while the session is set up.
  if (/Session not found/.test(text) && (/HTTP 404/.test(text) || (err as { code?: unknown }).code === 404 || /"code":-32001/.test(text))) return 'refused-session';
  return undefined;
}

describe('a rolling restart of three toolgate serve instances on one Redis, under load', () => {
  let redis: TestRedis;
  let upstream: CountingUpstream;
  const fleet: Instance[] = [];
  let config: string;

  before(async () => {
    redis = await TestRedis.start();
    upstream = await CountingUpstream.start();
    const dir = tempDir();
    const policy = writePolicy(dir, {
      version: '1', default: 'deny',
      // A limit, so that every forwarded call takes a reservation in Redis, committed once.
      tools: { work: { limits: [{ counter: 'work', window: 'hour', max: 1_000_000, scope: 'server' }] } },
    });
    config = join(dir, 'toolgate.json');
    writeFileSync(config, JSON.stringify({
      listen: '127.0.0.1:0',
      state: `${redis.url}/0?prefix=roll&timeout=5s`,
      sessions: { max_per_grant: 64 },
      shutdown: { grace: '30s' },
      servers: { up: { url: upstream.url, policy, auth: 'none', audit_args: true } },
    }));
    for (let i = 0; i < INSTANCES; i++) fleet.push({ port: await freePort(), home: tempDir() });
    await Promise.all(fleet.map((i) => start(i)));
  });

  after(async () => {
    await Promise.all(fleet.map((i) => i.serve?.stop()));
    await upstream.stop();
    await redis.stop();
  });

  async function start(instance: Instance): Promise<void> {
    instance.serve = new Serve(['-c', config, '--listen', `127.0.0.1:${instance.port}`, '--json'], testEnv(instance.home, { TOOLGATE_LOG_LEVEL: 'info' }));
    await instance.serve.started();
    await until(async () => (await fetch(`http://127.0.0.1:${instance.port}/readyz`).catch(() => undefined))?.status === 200, 'the instance to be ready');
  }

  it('every call is answered or refused before it was forwarded, none runs twice, every forwarded call is audited, every instance exits 0', async () => {
    const seen = new Map<number, Seen>();
    const unexpected: string[] = [];
    let stopping = false;

    /** One client: calls `work` again and again; on a refusal it starts a new session, on its own instance when that is back, else on the next. */
    const worker = async (w: number) => {
      const home = w % INSTANCES;
      let client: Client | undefined;
      let calls = 0;
      let seq = 0;
      while (!stopping) {
        if (!client) {
          for (let k = 0; k < INSTANCES && !client; k++) {
            const at = fleet[(home + k) % INSTANCES];
            const c = new Client({ name: `worker-${w}`, version: '1' });
            const transport = new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${at.port}/mcp/up`));
            transport.onerror = () => {}; // the session's GET stream ends with its instance
            try {
              await c.connect(transport);
              client = c;
            } catch {
              await c.close().catch(() => {});
            }
          }
          if (!client) { await new Promise((r) => setTimeout(r, 50)); continue; }
          calls = 0;
        }
        const n = w * 1_000_000 + ++seq;
        try {
          const result = await client.callTool({ name: 'work', arguments: { n, ms: 20 } });
          const text = (result.content as { text: string }[])[0]?.text;
          if (text === `work ${n} done`) seen.set(n, 'answered');
          else unexpected.push(`${n}: ${JSON.stringify(result)}`);
        } catch (err) {
          const kind = classify(err as Error);
          if (kind) seen.set(n, kind);
          else unexpected.push(`${n}: ${(err as Error).message}`);
          await client.close().catch(() => {});
          client = undefined;
          continue;
        }
        if (++calls >= CALLS_PER_SESSION) {
          await client.close().catch(() => {});
          client = undefined;
        }
      }
      await client?.close().catch(() => {});
    };

    const answered = () => [...seen.values()].filter((s) => s === 'answered').length;
    const load = async (more: number) => { const target = answered() + more; await until(() => answered() >= target, `${more} more answered calls`, 60_000); };
    const workers = Array.from({ length: INSTANCES * CLIENTS_PER_INSTANCE }, (_, w) => worker(w));
    const exits: (number | null)[] = [];
    await load(50);
    const held: string[] = [];
    for (const [i, instance] of fleet.entries()) {
      // A call surely in flight on this instance when its SIGTERM comes: held at the upstream until the stop has begun.
      const probe = new Client({ name: 'probe', version: '1' });
      await probe.connect(new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${instance.port}/mcp/up`)));
      const inFlight = probe.callTool({ name: 'work', arguments: { n: 9_000_000 + i, gate: true } });
      await until(() => upstream.atGate === 1, 'the probe call to run upstream');
      const stopped = instance.serve!.stop();
      await until(() => /"msg":"stopping: no new connections/.test(instance.serve!.stderr), 'the stop to begin');
      upstream.openGate();
      held.push(((await inFlight).content as { text: string }[])[0].text);
      seen.set(9_000_000 + i, 'answered');
      await probe.close().catch(() => {});
      exits.push(await stopped);
      await start(instance);
      await load(50);
    }
    stopping = true;
    await Promise.all(workers);

    assert.deepEqual(unexpected, [], 'every call is answered or refused with a retryable error');
    assert.deepEqual(exits, [0, 0, 0], 'each instance exits 0 on SIGTERM');
    assert.deepEqual(held, [0, 1, 2].map((i) => `work ${9_000_000 + i} done`), 'a call in flight at SIGTERM is answered');
    const counts = new Map<number, number>();
    for (const r of upstream.runs) counts.set(r.n, (counts.get(r.n) ?? 0) + 1);
    const twice = [...counts].filter(([, c]) => c > 1);
    assert.deepEqual(twice, [], 'no call is forwarded twice');
    for (const [n, s] of seen) {
      if (s === 'answered') assert.equal(counts.get(n), 1, `answered call ${n} ran once`);
      else assert.equal(counts.get(n), undefined, `call ${n} (${s}) was refused before it was forwarded`);
    }
    assert.deepEqual([...counts.keys()].filter((n) => seen.get(n) !== 'answered'), [], 'every call that ran was answered');

    // Every forwarded call has its audit row (allow, with its outcome) in the log of the instance that forwarded it; every log verifies.
    const audited = new Map<number, number>();
    for (const instance of fleet) {
      const env = { TOOLGATE_LOG_LEVEL: 'warn' };
      const exported = await cli(instance.home, ['audit', 'export', '--format', 'jsonl'], env);
      assert.equal(exported.code, 0, exported.stderr);
      for (const line of exported.stdout.split('\n').filter(Boolean)) {
        const row = JSON.parse(line) as { kind?: string; tool?: string; decision?: string; outcome?: string | null; args?: string | null };
        if (row.kind !== 'call' || row.tool !== 'work') continue;
        assert.equal(row.decision, 'allow', line);
        assert.equal(row.outcome, 'result', line);
        const n = (JSON.parse(row.args ?? '{}') as { n: number }).n;
        audited.set(n, (audited.get(n) ?? 0) + 1);
      }
      const verified = await cli(instance.home, ['audit', 'verify'], env);
      assert.equal(verified.code, 0, verified.stdout + verified.stderr);
      assert.match(verified.stdout, /^audit log intact/);
    }
    assert.deepEqual([...counts.keys()].filter((n) => audited.get(n) !== 1).slice(0, 10), [], 'each forwarded call has exactly one audit row');
    assert.equal(audited.size, counts.size, 'and no row is for a call that was not forwarded');

    const tally = new Map<Seen, number>();
    for (const s of seen.values()) tally.set(s, (tally.get(s) ?? 0) + 1);
    // What the clients saw (how many of each refusal depends on timing, so it is reported, not asserted).
    console.log(`# rolling restart: ${JSON.stringify(Object.fromEntries(tally))}, ${upstream.runs.length} forwarded`);
  });
});
