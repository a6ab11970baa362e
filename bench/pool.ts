// Issue 26's numbers: a thousand MCP 2026-07-28 clients of one grant through one `toolgate serve`
// (memory of the gateway and its upstream processes; p50 under an open-loop load against ten
// clients sending the same calls per second), beside today's legacy sessions (one upstream process
// each, and the sessions.max refusal). server-everything over stdio is the upstream throughout.
// Alone: `node --expose-gc --import tsx bench/pool.ts` (after `npm run build`). Environment:
// BENCH_POOL_CLIENTS (1000), BENCH_POOL_FEW (10), BENCH_POOL_RATE (calls/s in all, 100),
// BENCH_POOL_SECONDS (seconds per latency case and round, 15), BENCH_POOL_ROUNDS (1),
// BENCH_POOL_MEMORY_SECONDS (15), BENCH_POOL_LEGACY (20 legacy sessions), BENCH_NODE_ARGS (Node
// flags for toolgate serve), TOOLGATE_BENCH_POOL='{"max":8}' to give server-everything a
// `pool:` block, and BENCH_POOL_ONLY=closed to run the closed loop alone.
import { Client as ModernClient, StreamableHTTPClientTransport as ModernTransport } from '@modelcontextprotocol/client';
import { Client as LegacyClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as LegacyTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { readFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { performance } from 'node:perf_hooks';
import { poolBlock, startServe, type Serve } from './pool-serve.js';
import { TreeSampler, sampleTree, type TreeSample } from './proc-tree.js';
import { fmt, median, percentile } from './stats.js';
import { PoolSchema, poolConcurrency } from '../src/config/gateway.js';

const env = (name: string, fallback: number) => Number(process.env[name] ?? fallback);
const MB = 1024 * 1024;
const mb = (bytes: number) => `${fmt(bytes / MB)} MB`;
const load = () => loadavg().map((x) => x.toFixed(2)).join(' ');
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/**
 * An error's gist on one line, control characters escaped (it can carry a server's words): the
 * HTTP status and the JSON-RPC error's message when the SDK's error text holds the body.
 */
function say(err: unknown): string {
  // fetch's own failures ("fetch failed") say what happened in their cause (ECONNRESET, …).
  const cause = (err as { cause?: { code?: string; message?: string } })?.cause;
  const text = String(err instanceof Error ? err.message : err) + (cause ? `: ${cause.code ?? ''} ${cause.message ?? ''}` : '');
  const status = typeof (err as { code?: unknown })?.code === 'number' ? `HTTP ${(err as { code: number }).code}: ` : '';
  let gist = text;
  const at = text.indexOf('{"jsonrpc"');
  if (at >= 0) {
    try {
      const body = JSON.parse(text.slice(at)) as { error?: { code?: number; message?: string } };
      if (body.error?.message) gist = `${body.error.message} (${body.error.code})`;
    } catch { /* not all of it */ }
  }
  return JSON.stringify(`${status}${gist}`.slice(0, 200));
}

type Call = () => Promise<unknown>;

async function modernClients(n: number, serve: Serve): Promise<ModernClient[]> {
  const clients: ModernClient[] = [];
  // Connected 50 at a time: each connect is a server/discover round trip.
  for (let i = 0; i < n; i += 50) {
    clients.push(...await Promise.all(Array.from({ length: Math.min(50, n - i) }, async (_, j) => {
      const transport = new ModernTransport(new URL(`${serve.base}/mcp/everything`), { requestInit: { headers: { authorization: `Bearer ${serve.tokens.everything}` } } });
      const client = new ModernClient({ name: `bench-${i + j}`, version: '1' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } });
      await client.connect(transport);
      return client;
    })));
  }
  return clients;
}

async function legacyClients(n: number, serve: Serve, server: string): Promise<LegacyClient[]> {
  const clients: LegacyClient[] = [];
  for (let i = 0; i < n; i++) clients.push(await legacyClient(serve, server, i));
  return clients;
}

async function legacyClient(serve: Serve, server: string, i: number): Promise<LegacyClient> {
  const transport = new LegacyTransport(new URL(`${serve.base}/mcp/${server}`), { requestInit: { headers: { authorization: `Bearer ${serve.tokens[server]}` } } });
  const client = new LegacyClient({ name: `legacy-${i}`, version: '1' });
  await client.connect(transport);
  return client;
}

/**
 * What sessions.max does today: with 100 idle sessions open, the 101st closes the least recently
 * used one; with each of the 100 holding a call in flight (an elicitation the client has not
 * answered yet), the 101st is refused.
 */
async function sessionCap(serve: Serve): Promise<Row[]> {
  const max = 100;
  const holds: (() => void)[] = [];
  let asked = 0;
  const open = async (i: number) => {
    const transport = new LegacyTransport(new URL(`${serve.base}/mcp/fixture`), { requestInit: { headers: { authorization: `Bearer ${serve.tokens.fixture}` } } });
    const client = new LegacyClient({ name: `capped-${i}`, version: '1' }, { capabilities: { elicitation: {} } });
    client.setRequestHandler(ElicitRequestSchema, () => new Promise((r) => { asked++; holds.push(() => r({ action: 'decline' })); }));
    await client.connect(transport);
    return client;
  };
  const clients: LegacyClient[] = [];
  const row = (setup: string, note: string): Row => ({ setup, memory: '', children: '', p50: NaN, p90: NaN, p99: NaN, note });
  try {
    for (let i = 0; i < max; i++) clients.push(await open(i));
    let idle: string;
    try {
      clients.push(await open(max));
      const first = await clients[0].listTools().then(() => 'still open', (err: unknown) => `closed (${say(err)})`);
      idle = `accepted; the least recently used idle session: ${first}`;
    } catch (err) { idle = `refused: ${say(err)}`; }
    const live = clients.slice(-max);
    const calls = live.map((c) => c.callTool({ name: 'test_elicitation', arguments: { message: 'hold' } }, undefined, { timeout: 120_000 }).catch(() => undefined));
    for (let t = 0; asked < live.length && t < 300; t++) await sleep(100);
    let busy: string;
    try { clients.push(await open(max + 1)); busy = `accepted (${asked} of ${live.length} calls were in flight)`; } catch (err) { busy = `refused: ${say(err)}`; }
    for (const release of holds) release();
    await Promise.all(calls);
    return [row(`legacy: ${max} idle sessions open, the ${max + 1}st`, idle), row(`legacy: ${max} sessions each in a call, the ${max + 1}st`, busy)];
  } finally {
    for (const release of holds) release();
    await Promise.all(clients.map((c) => c.close().catch(() => undefined)));
  }
}

const echo = (c: ModernClient | LegacyClient, i: number): Call => () => c.callTool({ name: 'echo', arguments: { message: `bench ${i}` } });
const slow = (c: ModernClient): Call => () => c.callTool({ name: 'trigger-long-running-operation', arguments: { duration: 1, steps: 2 } });

/**
 * Open loop: `callers` take turns, one call every period/n ms in all, so each caller sends once per
 * period and their start times are spread evenly over the first period. Calls go out on schedule
 * whether or not earlier ones were answered. Latency is measured from each call's actual send; how
 * far this process fell behind the schedule (its own event loop, shared with the clients) is reported.
 */
export async function openLoop(callers: Call[], rate: number, seconds: number, warmup = 2): Promise<{ latencies: number[]; errors: number; firstError?: string; lagP99: number }> {
  const latencies: number[] = [];
  const lags: number[] = [];
  let errors = 0;
  let firstError: string | undefined;
  const interval = 1000 / rate;
  const total = Math.round((seconds + warmup) * rate);
  const t0 = performance.now() + 50;
  const pending: Promise<void>[] = [];
  for (let k = 0; k < total; k++) {
    const due = t0 + k * interval;
    const wait = due - performance.now();
    if (wait > 1) await sleep(wait);
    const sent = performance.now();
    const measured = k >= warmup * rate;
    if (measured) lags.push(Math.max(0, sent - due));
    pending.push(callers[k % callers.length]().then(
      () => { if (measured) latencies.push(performance.now() - sent); },
      (err: unknown) => { if (measured) { errors++; firstError ??= say(err); } },
    ));
  }
  await Promise.all(pending);
  return { latencies, errors, firstError, lagP99: lags.length ? percentile(lags, 99) : 0 };
}

/** Every client in a closed loop (the next call as soon as the last is answered) for `seconds`, the tree sampled meanwhile. */
async function closedLoop(calls: Call[], pid: number, seconds: number): Promise<{ peak: TreeSample; steady: TreeSample; done: number; errors: number; refused: number; latencies: number[]; firstError?: string }> {
  const sampler = new TreeSampler(pid).start();
  const end = Date.now() + seconds * 1000;
  let done = 0;
  let errors = 0;
  let refused = 0;
  const latencies: number[] = [];
  let firstError: string | undefined;
  await Promise.all(calls.map(async (call) => {
    while (Date.now() < end) {
      const sent = performance.now();
      try {
        await call();
        done++;
        latencies.push(performance.now() - sent);
      } catch (err) {
        errors++;
        // -32051: the pool was exhausted (queue_timeout or queue_max), the request never forwarded.
        if ((err as { code?: unknown })?.code === -32051) refused++;
        firstError ??= say(err);
      }
    }
  }));
  return { ...sampler.stop(), done, errors, refused, latencies, firstError };
}

/** The median of a few samples of the tree, a quarter-second apart. */
async function settled(pid: number): Promise<TreeSample> {
  const xs: TreeSample[] = [];
  for (let i = 0; i < 5; i++) { xs.push(sampleTree(pid)); await sleep(250); }
  return { at: Date.now(), gateway: median(xs.map((s) => s.gateway)), children: median(xs.map((s) => s.children)), total: median(xs.map((s) => s.total)), count: median(xs.map((s) => s.count)) };
}

/**
 * Waits (at most 20 s) until pid's CPU time grows by less than 10% of the wall time over half a
 * second: the gateway has finished what the last phase left it (audit rows, closing streams).
 */
async function quiet(pid: number): Promise<void> {
  const cpu = () => { try { const stat = readFileSync(`/proc/${pid}/stat`, 'utf8'); const f = stat.slice(stat.lastIndexOf(') ') + 2).split(' '); return (Number(f[11]) + Number(f[12])) / 100; } catch { return 0; } };
  for (let i = 0, last = cpu(); i < 40; i++) {
    await sleep(500);
    const now = cpu();
    if (now - last < 0.05) return;
    last = now;
  }
}

interface Row { setup: string; memory: string; children: string; p50: number; p90: number; p99: number; note: string }
const latencyRow = (setup: string, r: Awaited<ReturnType<typeof openLoop>>, memory = '', children = ''): Row => ({
  setup, memory, children, p50: median(r.latencies), p90: percentile(r.latencies, 90), p99: percentile(r.latencies, 99),
  note: `${r.latencies.length} calls${r.errors ? `, ${r.errors} errors (${r.firstError})` : ''}, sender lag p99 ${fmt(r.lagP99, 1)} ms`,
});

export async function benchPool(): Promise<void> {
  const N = env('BENCH_POOL_CLIENTS', 1000);
  const FEW = env('BENCH_POOL_FEW', 10);
  const RATE = env('BENCH_POOL_RATE', 100);
  const SECONDS = env('BENCH_POOL_SECONDS', 15);
  // BENCH_POOL_ONLY=closed: the closed loop alone (no open-loop rounds, no legacy part).
  const ONLY_CLOSED = process.env.BENCH_POOL_ONLY === 'closed';
  const ROUNDS = ONLY_CLOSED ? 0 : env('BENCH_POOL_ROUNDS', 1);
  const MEMORY_SECONDS = env('BENCH_POOL_MEMORY_SECONDS', 15);
  const LEGACY = env('BENCH_POOL_LEGACY', 20);
  const pool = poolBlock();
  const loads = [load()];
  const rows: Row[] = [];
  let leaked = 0;
  let peakTotal = NaN;
  let ratio = NaN;
  let errors = 0;

  // 1 and 2: modern clients of one grant.
  let serve = await startServe();
  try {
    const idle = await settled(serve.pid);
    const clients = await modernClients(N, serve);
    // One client in ten calls the slow tool (1 s, two progress steps), the rest echo.
    const calls = clients.map((c, i) => (i % 10 === 9 ? slow(c) : echo(c, i)));
    const mem = await closedLoop(calls, serve.pid, MEMORY_SECONDS);
    peakTotal = mem.peak.total;
    loads.push(load());
    rows.push({
      setup: `modern: ${N} clients, 1 grant, closed loop ${MEMORY_SECONDS} s`,
      memory: `peak ${mb(mem.peak.total)} (gw ${mb(mem.peak.gateway)}), steady ${mb(mem.steady.total)}`,
      children: `${mem.peak.count} at peak`,
      p50: mem.latencies.length ? median(mem.latencies) : NaN, p90: mem.latencies.length ? percentile(mem.latencies, 90) : NaN, p99: mem.latencies.length ? percentile(mem.latencies, 99) : NaN,
      note: `${mem.done + mem.errors} calls, ${mem.done} answered (${fmt(mem.done / MEMORY_SECONDS)}/s)${mem.errors ? `, ${mem.errors} errors of which ${mem.refused} refused -32051 (${mem.firstError})` : ''}; idle before: ${mb(idle.total)}, ${idle.count} children`,
    });
    const many: Call[] = clients.map((c, i) => echo(c, i));
    const few: Call[] = clients.slice(0, FEW).map((c, i) => echo(c, i));
    type Loop = Awaited<ReturnType<typeof openLoop>>;
    const results: Record<'many' | 'few', Loop[]> = { many: [], few: [] };
    const upstreams = { many: 0, few: 0 };
    const memory = { many: 0, few: 0 };
    for (let r = 0; r < ROUNDS; r++) {
      for (const which of r % 2 === 0 ? (['few', 'many'] as const) : (['many', 'few'] as const)) {
        await quiet(serve.pid);
        const sampler = new TreeSampler(serve.pid, 1000).start();
        results[which].push(await openLoop(which === 'many' ? many : few, RATE, SECONDS));
        const { peak } = sampler.stop();
        upstreams[which] = Math.max(upstreams[which], ...sampler.samples.map((x) => x.count));
        memory[which] = Math.max(memory[which], peak.total);
        loads.push(load());
      }
    }
    const merge = (xs: Loop[]): Loop => ({
      latencies: xs.flatMap((x) => x.latencies), errors: xs.reduce((n, x) => n + x.errors, 0),
      firstError: xs.find((x) => x.firstError)?.firstError, lagP99: Math.max(...xs.map((x) => x.lagP99)),
    });
    const fewRow = latencyRow(`modern: ${FEW} clients, open loop ${RATE}/s`, merge(results.few), `peak ${mb(memory.few)}`, `${upstreams.few} at most`);
    const manyRow = latencyRow(`modern: ${N} clients, open loop ${RATE}/s`, merge(results.many), `peak ${mb(memory.many)}`, `${upstreams.many} at most`);
    ratio = manyRow.p50 / fewRow.p50;
    const paired = results.many.map((x, i) => fmt(median(x.latencies) / median(results.few[i].latencies), 2));
    manyRow.note = `p50 ${fmt(ratio, 2)}x of ${FEW} clients'${ROUNDS > 1 ? ` (per round ${paired.join(', ')})` : ''}; ${manyRow.note}`;
    errors += merge(results.few).errors + merge(results.many).errors + mem.errors;
    if (!ONLY_CLOSED) rows.push(fewRow, manyRow);
    await Promise.all(clients.map((c) => c.close().catch(() => undefined)));
  } finally {
    leaked += await serve.stop();
  }

  // 3: today's legacy sessions, one upstream process each.
  if (!ONLY_CLOSED) {
    serve = await startServe({ fixture: true });
    try {
      const idle = await settled(serve.pid);
      const clients = await legacyClients(LEGACY, serve, 'everything');
      for (const [i, c] of clients.entries()) await echo(c, i)();
      await sleep(1000);
      const open = await settled(serve.pid);
      const per = (open.total - idle.total) / LEGACY;
      await quiet(serve.pid);
      const res = await openLoop(clients.map((c, i) => echo(c, i)), RATE, SECONDS);
      loads.push(load());
      rows.push({ ...latencyRow(`legacy: ${LEGACY} sessions, open loop ${RATE}/s`, res, `${mb(open.total)} (gw ${mb(open.gateway)})`, `${open.count}`), note: `${mb(per)} per session: ≈ ${mb(idle.total + per * 100)} at sessions.max (100), ≈ ${mb(idle.total + per * N)} for ${N}; ${latencyRow('', res).note}` });
      errors += res.errors;
      await Promise.all(clients.map((c) => c.close().catch(() => undefined)));
      // sessions.max (100), per server: filled on the HTTP fixture, which starts no process per
      // session, so that 100 sessions do not cost 100 server-everything processes.
      rows.push(...await sessionCap(serve));
    } finally {
      leaked += await serve.stop();
    }
  }

  const cell = (x: number) => (Number.isNaN(x) ? '' : fmt(x, 1));
  console.log(`\npool bench (issue 26): server-everything over stdio behind toolgate serve, SQLite state; pool: ${JSON.stringify({ ...PoolSchema.parse(pool ?? {}), concurrency: poolConcurrency(PoolSchema.parse(pool ?? {})) })}${pool ? '' : ' (the defaults: 2026-07-28 clients lease pooled upstream sessions per grant; each legacy session has its own process)'}; ${cpus().length} cores, load average (1 5 15 min) ${loads.join(' → ')}`);
  console.log(`  ${'setup'.padEnd(52)} ${'memory (gateway + upstreams)'.padEnd(40)} ${'children'.padEnd(12)} ${'p50 ms'.padStart(7)} ${'p90 ms'.padStart(7)} ${'p99 ms'.padStart(7)}  notes`);
  for (const r of rows) console.log(`  ${r.setup.padEnd(52)} ${r.memory.padEnd(40)} ${r.children.padEnd(12)} ${cell(r.p50).padStart(7)} ${cell(r.p90).padStart(7)} ${cell(r.p99).padStart(7)}  ${r.note}`);
  const memOk = peakTotal <= 1024 * MB;
  const latOk = ratio <= 2;
  console.log(`  verdict: memory ${memOk ? 'MET' : 'MISSED'} (peak ${mb(peakTotal)} for ${N} clients, target <= 1,024 MB); latency ${ONLY_CLOSED ? 'not measured' : latOk ? 'MET' : 'MISSED'} (p50 ratio ${fmt(ratio, 2)}x, target <= 2x); ${leaked ? `${leaked} processes outlived their gateway (killed)` : 'no process outlived its gateway'}${errors ? `; ${errors} calls failed (see notes)` : ''}`);
}

if (import.meta.url === `file://${process.argv[1]}`) await benchPool();
