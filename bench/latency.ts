import { spawn, type ChildProcessByStdio } from 'node:child_process';
import type { Readable, Writable } from 'node:stream';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fmt, median, percentile } from './stats.js';

const ROOT = resolve(import.meta.dirname, '..');
const EVERYTHING = join(ROOT, 'node_modules/@modelcontextprotocol/server-everything/dist/index.js');

/** A minimal JSON-lines client: one request at a time, round-trip time per call. */
class LineClient {
  private buf = '';
  private waiting?: (line: string) => void;
  constructor(readonly child: ChildProcessByStdio<Writable, Readable, null>) {
    child.stdout.on('data', (d: Buffer) => {
      this.buf += d.toString();
      let nl;
      while ((nl = this.buf.indexOf('\n')) >= 0) {
        const line = this.buf.slice(0, nl);
        this.buf = this.buf.slice(nl + 1);
        this.waiting?.(line);
      }
    });
  }

  call(id: number, method: string, params: unknown): Promise<string> {
    return new Promise((resolve) => {
      this.waiting = (line) => { if (line.includes(`"id":${id},`) || line.includes(`"id":${id}}`)) resolve(line); };
      this.child.stdin.write(JSON.stringify({ jsonrpc: '2.0', id, method, params }) + '\n');
    });
  }

  async close(): Promise<void> {
    this.child.stdin.end();
    await new Promise((r) => this.child.on('exit', r));
  }
}

export async function start(command: string[], env: NodeJS.ProcessEnv): Promise<LineClient> {
  const client = new LineClient(spawn(command[0], command.slice(1), { env, stdio: ['pipe', 'pipe', 'ignore'] }));
  await client.call(0, 'initialize', { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'bench', version: '1' } });
  client.child.stdin.write('{"jsonrpc":"2.0","method":"notifications/initialized"}\n');
  return client;
}

/**
 * Round trip times of sequential echo calls, interleaved across the setups (one call to each in
 * turn), so that the machine's drift touches every setup alike.
 */
export async function measureInterleaved(setups: Record<string, string[]>, calls: number, env: NodeJS.ProcessEnv | ((setup: string) => NodeJS.ProcessEnv)): Promise<Record<string, number[]>> {
  const envOf = typeof env === 'function' ? env : () => env;
  const clients = Object.fromEntries(await Promise.all(Object.entries(setups).map(async ([name, cmd]) => [name, await start(cmd, envOf(name))] as const)));
  const times: Record<string, number[]> = Object.fromEntries(Object.keys(setups).map((n) => [n, []]));
  for (let i = 1; i <= calls + 200; i++) {
    for (const [name, client] of Object.entries(clients)) {
      const t0 = process.hrtime.bigint();
      const line = await client.call(i, 'tools/call', { name: 'echo', arguments: { message: `hello ${i}` } });
      if (i > 200) times[name].push(Number(process.hrtime.bigint() - t0) / 1e6);
      if (!line.includes('Echo: hello')) throw new Error(`${name}: unexpected answer: ${line}`);
    }
  }
  await Promise.all(Object.values(clients).map((c) => c.close()));
  return times;
}

/** Added p50 (over direct) of toolgate, at most this many times the bare proxy's (issue 15). */
const TARGETS: Record<string, number> = { 'toolgate (memory counters)': 1.3, 'toolgate (sqlite counters)': 1.8 };

/**
 * The stdio setups every stdio bench compares, on one policy (default deny, a regex deny_if and
 * two limits on echo) under `dir`: direct, the bare proxy, toolgate run with memory and with SQLite
 * counters. The databases live apart from the policy, as in a real install (~/.toolgate beside a
 * project's policy): their WAL writes must not count as policy-file events.
 */
export function stdioSetups(dir: string): { env: NodeJS.ProcessEnv; setups: Record<string, string[]> } {
  const policyDir = join(dir, 'policy');
  const dataDir = process.env.BENCH_DATA_BESIDE_POLICY ? policyDir : join(dir, 'data');
  mkdirSync(policyDir);
  mkdirSync(dataDir, { recursive: true });
  const policy = join(policyDir, 'policy.json');
  writeFileSync(policy, JSON.stringify({
    version: '1', default: 'deny',
    all_tools: { limits: [{ counter: 'calls', window: 'minute', max: 1e9 }] },
    tools: {
      echo: { deny_if: [{ conditions: [{ path: 'args.message', op: 'regex', value: '^rm -rf' }] }], limits: [{ counter: 'echo', window: 'second', max: 1e6, scope: 'session' }] },
      'get-*': {},
    },
  }));
  const env = { ...process.env, TOOLGATE_HOME: dataDir, TOOLGATE_LOG_LEVEL: 'error' } as NodeJS.ProcessEnv;
  const toolgate = (state: string, audit: string) =>
    [process.execPath, ...(process.env.BENCH_NODE_ARGS?.split(' ').filter(Boolean) ?? []), join(ROOT, 'bin/toolgate.js'), 'run', '-p', policy, '--state', state, '--audit', join(dataDir, audit), '--', process.execPath, EVERYTHING];
  return {
    env,
    setups: {
      direct: [process.execPath, EVERYTHING],
      'bare proxy': [process.execPath, join(ROOT, 'bench/bare-proxy.mjs'), process.execPath, EVERYTHING],
      'toolgate (memory counters)': toolgate('memory:', 'audit-m.db'),
      'toolgate (sqlite counters)': toolgate(`sqlite:${join(dataDir, 'state.db')}`, 'audit-s.db'),
    },
  };
}

export async function benchLatency(calls = 2000, rounds = Number(process.env.BENCH_ROUNDS ?? 5)): Promise<Record<string, { p50: number; p99: number }>> {
  const dir = mkdtempSync(join(tmpdir(), 'tg-latency-'));
  const { env, setups } = stdioSetups(dir);
  const ours = Object.keys(setups).filter((n) => n.startsWith('toolgate'));
  const p50s: Record<string, number[]> = {};
  const p99s: Record<string, number[]> = {};
  /** Per round: toolgate's added p50 over the bare proxy's, both over direct in that same round. */
  const ratios: Record<string, number[]> = Object.fromEntries(ours.map((n) => [n, []]));
  for (let r = 0; r < rounds; r++) {
    const times = await measureInterleaved(setups, calls, env);
    for (const [name, t] of Object.entries(times)) {
      (p50s[name] ??= []).push(percentile(t, 50));
      (p99s[name] ??= []).push(percentile(t, 99));
    }
    const direct = p50s.direct[r];
    for (const name of ours) ratios[name].push((p50s[name][r] - direct) / (p50s['bare proxy'][r] - direct));
  }
  const out: Record<string, { p50: number; p99: number }> = {};
  console.log(`\n${fmt(calls)} sequential tools/call echo over stdio to server-everything, calls interleaved across setups`);
  console.log(`(policy: default deny, regex deny_if + 2 limits on echo, audit on; databases outside the policy's folder; median of ${rounds} rounds, ms; load ${loadavg().map((l) => l.toFixed(2)).join(' ')}):`);
  for (const name of Object.keys(setups)) {
    out[name] = { p50: median(p50s[name]), p99: median(p99s[name]) };
    console.log(`  ${name.padEnd(27)} p50 ${fmt(out[name].p50, 3)}  p99 ${fmt(out[name].p99, 3)}`);
  }
  const added = (name: string) => p50s[name].map((p, r) => (p - p50s.direct[r]) * 1000);
  console.log(`  added p50 over direct, per round (µs): bare proxy ${added('bare proxy').map((a) => fmt(a)).join(' ')} (the floor)`);
  for (const name of ours) {
    const rs = ratios[name];
    const spread = `min ${fmt(Math.min(...rs), 2)} median ${fmt(median(rs), 2)} max ${fmt(Math.max(...rs), 2)}`;
    const met = median(rs) <= TARGETS[name] ? 'met' : 'NOT met';
    console.log(`  ${name}: added p50 per round ${added(name).map((a) => fmt(a)).join(' ')} µs; ÷ bare per round ${rs.map((x) => fmt(x, 2)).join(' ')}`);
    console.log(`    paired ratio ${spread}; target <= ${TARGETS[name]}x (${met} on the median)`);
  }
  rmSync(dir, { recursive: true, force: true });
  return out;
}

if (import.meta.url === `file://${process.argv[1]}`) await benchLatency();
