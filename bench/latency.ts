import { spawn, type ChildProcessByStdio } from 'node:child_process';
import type { Readable, Writable } from 'node:stream';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
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

async function start(command: string[], env: NodeJS.ProcessEnv): Promise<LineClient> {
  const client = new LineClient(spawn(command[0], command.slice(1), { env, stdio: ['pipe', 'pipe', 'ignore'] }));
  await client.call(0, 'initialize', { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'bench', version: '1' } });
  client.child.stdin.write('{"jsonrpc":"2.0","method":"notifications/initialized"}\n');
  return client;
}

/**
 * Round trip times of sequential echo calls, interleaved across the setups (one call to each in
 * turn), so that the machine's drift touches every setup alike.
 */
async function measureInterleaved(setups: Record<string, string[]>, calls: number, env: NodeJS.ProcessEnv): Promise<Record<string, number[]>> {
  const clients = Object.fromEntries(await Promise.all(Object.entries(setups).map(async ([name, cmd]) => [name, await start(cmd, env)] as const)));
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

export async function benchLatency(calls = 2000, rounds = Number(process.env.BENCH_ROUNDS ?? 5)): Promise<Record<string, { p50: number; p99: number }>> {
  const dir = mkdtempSync(join(tmpdir(), 'tg-latency-'));
  const policy = join(dir, 'policy.json');
  writeFileSync(policy, JSON.stringify({
    version: '1', default: 'deny',
    all_tools: { limits: [{ counter: 'calls', window: 'minute', max: 1e9 }] },
    tools: {
      echo: { deny_if: [{ conditions: [{ path: 'args.message', op: 'regex', value: '^rm -rf' }] }], limits: [{ counter: 'echo', window: 'second', max: 1e6, scope: 'session' }] },
      'get-*': {},
    },
  }));
  const env = { ...process.env, TOOLGATE_HOME: dir, TOOLGATE_LOG_LEVEL: 'error' } as NodeJS.ProcessEnv;
  const setups: Record<string, string[]> = {
    direct: [process.execPath, EVERYTHING],
    'bare proxy': [process.execPath, join(ROOT, 'bench/bare-proxy.mjs'), process.execPath, EVERYTHING],
    'toolgate (memory counters)': [process.execPath, join(ROOT, 'bin/toolgate.js'), 'run', '-p', policy, '--state', 'memory:', '--audit', join(dir, 'audit-m.db'), '--', process.execPath, EVERYTHING],
    'toolgate (sqlite counters)': [process.execPath, join(ROOT, 'bin/toolgate.js'), 'run', '-p', policy, '--state', `sqlite:${join(dir, 'state.db')}`, '--audit', join(dir, 'audit-s.db'), '--', process.execPath, EVERYTHING],
  };
  const p50s: Record<string, number[]> = {};
  const p99s: Record<string, number[]> = {};
  for (let r = 0; r < rounds; r++) {
    const times = await measureInterleaved(setups, calls, env);
    for (const [name, t] of Object.entries(times)) {
      (p50s[name] ??= []).push(percentile(t, 50));
      (p99s[name] ??= []).push(percentile(t, 99));
    }
  }
  const out: Record<string, { p50: number; p99: number }> = {};
  console.log(`\n${fmt(calls)} sequential tools/call echo over stdio to server-everything, calls interleaved across setups`);
  console.log(`(policy: default deny, regex deny_if + 2 limits on echo, audit on; median of ${rounds} rounds, ms):`);
  for (const name of Object.keys(setups)) {
    out[name] = { p50: median(p50s[name]), p99: median(p99s[name]) };
    console.log(`  ${name.padEnd(27)} p50 ${fmt(out[name].p50, 3)}  p99 ${fmt(out[name].p99, 3)}`);
  }
  const bare = out['bare proxy'].p50 - out.direct.p50;
  console.log(`  added p50 over direct: bare proxy ${fmt(bare * 1000)} µs (the floor)`);
  for (const name of Object.keys(setups).filter((n) => n.startsWith('toolgate'))) {
    const ours = out[name].p50 - out.direct.p50;
    console.log(`  added p50 over direct: ${name} ${fmt(ours * 1000)} µs → ${fmt(ours / bare, 2)}x the bare proxy's (target <= 1.5x)`);
  }
  return out;
}

if (import.meta.url === `file://${process.argv[1]}`) await benchLatency();
