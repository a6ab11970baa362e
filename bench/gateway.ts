// toolgate serve against the popular transport-only proxies (mcp-proxy, supergateway) and a bare
// HTTP-to-stdio forwarder (the floor for any Node proxy), each with
// the same stdio upstream (server-everything), driven by wrk (Debian) on one initialized session.
// Peers are installed into node_modules/.cache/toolgate-peers on first use.
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { fmt, median } from './stats.js';

const exec = promisify(execFile);
const ROOT = resolve(import.meta.dirname, '..');
const EVERYTHING = join(ROOT, 'node_modules/@modelcontextprotocol/server-everything/dist/index.js');
const LOOPBACK = join(ROOT, 'test/fixtures/loopback-only.mjs');
const PEERS = join(ROOT, 'node_modules/.cache/toolgate-peers');
const LUA = `
local counter = 0
local id_base = 0
function setup(thread) thread:set("base", math.random(1, 1000000) * 1000000) end
function init(args) id_base = base or 0 end
function request()
  counter = counter + 1
  local body = '{"jsonrpc":"2.0","id":' .. (id_base + counter) .. ',"method":"tools/call","params":{"name":"echo","arguments":{"message":"bench"}}}'
  return wrk.format("POST", nil, nil, body)
end
`;

async function freePort(): Promise<number> {
  return new Promise((r) => { const s = createServer().listen(0, '127.0.0.1', () => { const p = (s.address() as { port: number }).port; s.close(() => r(p)); }); });
}

async function until(url: string, ms = 30_000): Promise<void> {
  const end = Date.now() + ms;
  for (;;) {
    try { await fetch(url, { method: 'GET', signal: AbortSignal.timeout(1000) }); return; } catch { /* not yet */ }
    if (Date.now() > end) throw new Error(`${url} did not come up`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

interface Target { name: string; url: string; headers: Record<string, string>; proc: ChildProcess }

async function openSession(t: Target): Promise<Record<string, string>> {
  const headers = { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...t.headers };
  const res = await fetch(t.url, { method: 'POST', headers, body: JSON.stringify({ jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'bench', version: '1' } } }) });
  await res.text();
  const sid = res.headers.get('mcp-session-id');
  if (!sid) throw new Error(`${t.name}: no session id (HTTP ${res.status})`);
  const all = { ...headers, 'mcp-session-id': sid, 'mcp-protocol-version': '2025-06-18' };
  await (await fetch(t.url, { method: 'POST', headers: all, body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }) })).text();
  const check = await fetch(t.url, { method: 'POST', headers: all, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'echo', arguments: { message: 'warm' } } }) });
  const text = await check.text();
  if (!text.includes('Echo: warm')) throw new Error(`${t.name}: echo failed: ${text.slice(0, 200)}`);
  return all;
}

async function wrk(t: Target, headers: Record<string, string>, connections: number, seconds: number): Promise<{ p50: number; p99: number; rps: number }> {
  const dir = mkdtempSync(join(tmpdir(), 'tg-wrk-'));
  const script = join(dir, 'call.lua');
  writeFileSync(script, LUA);
  const args = ['-t', String(Math.min(connections, 2)), '-c', String(connections), '-d', `${seconds}s`, '--latency', '-s', script];
  for (const [k, v] of Object.entries(headers)) args.push('-H', `${k}: ${v}`);
  const { stdout } = await exec('wrk', [...args, t.url], { timeout: (seconds + 30) * 1000 });
  const ms = (label: string) => {
    const m = new RegExp(`^\\s*${label}%\\s+([\\d.]+)(us|ms|s)`, 'm').exec(stdout);
    if (!m) return NaN;
    return Number(m[1]) * ({ us: 0.001, ms: 1, s: 1000 } as Record<string, number>)[m[2]];
  };
  const rps = Number(/Requests\/sec:\s+([\d.]+)/.exec(stdout)?.[1] ?? NaN);
  const errors = /Non-2xx or 3xx responses: (\d+)/.exec(stdout);
  if (errors) throw new Error(`${t.name}: ${errors[1]} failed responses at ${connections} connections`);
  return { p50: ms('50'), p99: ms('99'), rps };
}

async function startTargets(): Promise<Target[]> {
  if (!existsSync(join(PEERS, 'node_modules/.bin/supergateway'))) {
    mkdirSync(PEERS, { recursive: true });
    writeFileSync(join(PEERS, 'package.json'), JSON.stringify({ name: 'toolgate-bench-peers', private: true }));
    await exec('npm', ['install', '--no-audit', '--no-fund', '--prefix', PEERS, 'mcp-proxy@6', 'supergateway@4'], { timeout: 600_000 });
  }
  const home = mkdtempSync(join(tmpdir(), 'tg-gw-bench-'));
  const env = { ...process.env, TOOLGATE_HOME: home, TOOLGATE_LOG_LEVEL: 'error' };
  // A 50-rule policy: 49 other tools with conditions and limits, and echo's own rules.
  const tools: Record<string, unknown> = {};
  for (let i = 0; i < 49; i++) tools[`tool_${i}`] = { deny_if: [{ conditions: [{ path: 'args.path', op: 'starts_with', value: '/etc' }] }], limits: [{ counter: `t${i}`, window: 'minute', max: 100 }] };
  tools.echo = { deny_if: [{ conditions: [{ path: 'args.message', op: 'regex', value: '(?i)password' }] }], limits: [{ counter: 'echo', window: 'second', max: 1e9 }] };
  writeFileSync(join(home, 'policy.json'), JSON.stringify({ version: '1', default: 'deny', all_tools: { limits: [{ counter: 'calls', window: 'minute', max: 1e9 }] }, tools }));
  const tgPort = await freePort();
  writeFileSync(join(home, 'toolgate.yaml'), `listen: 127.0.0.1:${tgPort}\nstate: sqlite:./state.db\naudit: ./audit.db\nservers:\n  everything:\n    command: ${JSON.stringify(process.execPath)}\n    args: [${JSON.stringify(EVERYTHING)}]\n    policy: ./policy.json\n`);
  const grant = JSON.parse((await exec(process.execPath, [join(ROOT, 'bin/toolgate.js'), 'grants', 'create', '--server', 'everything', '--label', 'bench', '--state', `sqlite:${join(home, 'state.db')}`, '--json'], { env })).stdout);
  const toolgate = spawn(process.execPath, [join(ROOT, 'bin/toolgate.js'), 'serve', '-c', join(home, 'toolgate.yaml')], { env, stdio: 'ignore' });
  const mpPort = await freePort();
  const mcpProxy = spawn(process.execPath, [join(PEERS, 'node_modules/mcp-proxy/dist/bin/mcp-proxy.mjs'), '--host', '127.0.0.1', '--port', String(mpPort), '--server', 'stream', '--', process.execPath, EVERYTHING], { stdio: 'ignore' });
  const barePort = await freePort();
  const bare = spawn(process.execPath, [join(ROOT, 'bench/bare-http-proxy.mjs'), String(barePort), process.execPath, EVERYTHING], { stdio: 'ignore' });
  const sgPort = await freePort();
  const supergateway = spawn(process.execPath, ['--import', LOOPBACK, join(PEERS, 'node_modules/supergateway/dist/index.js'), '--stdio', `${process.execPath} ${EVERYTHING}`, '--outputTransport', 'streamableHttp', '--stateful', '--port', String(sgPort), '--logLevel', 'none'], { stdio: 'ignore' });
  const targets: Target[] = [
    { name: 'toolgate serve', url: `http://127.0.0.1:${tgPort}/mcp/everything`, headers: { authorization: `Bearer ${grant.token}` }, proc: toolgate },
    { name: 'mcp-proxy', url: `http://127.0.0.1:${mpPort}/mcp`, headers: {}, proc: mcpProxy },
    { name: 'supergateway', url: `http://127.0.0.1:${sgPort}/mcp`, headers: {}, proc: supergateway },
    { name: 'bare forwarder', url: `http://127.0.0.1:${barePort}/mcp`, headers: {}, proc: bare },
  ];
  for (const t of targets) await until(t.url.replace(/\/mcp.*$/, '/')).catch((err: Error) => { throw new Error(`${t.name}: ${err.message}`); });
  return targets;
}

export async function benchGateway(rounds = Number(process.env.BENCH_ROUNDS ?? 3), seconds = 8): Promise<void> {
  if (!existsSync('/usr/bin/wrk')) {
    console.log('\ngateway benchmark skipped: wrk is not installed (apt-get install wrk)');
    return;
  }
  const targets = await startTargets();
  try {
    const sessions = new Map<string, Record<string, string>>();
    for (const t of targets) sessions.set(t.name, await openSession(t));
    const results: Record<string, { p50: number[]; p99: number[]; rps16: number[]; rps64: number[] }> = {};
    for (let r = 0; r < rounds; r++) {
      for (const t of targets) {
        const h = sessions.get(t.name)!;
        const one = await wrk(t, h, 1, seconds);
        const c16 = await wrk(t, h, 16, seconds);
        const c64 = await wrk(t, h, 64, seconds);
        const x = (results[t.name] ??= { p50: [], p99: [], rps16: [], rps64: [] });
        x.p50.push(one.p50); x.p99.push(one.p99); x.rps16.push(c16.rps); x.rps64.push(c64.rps);
      }
    }
    const row = (name: string) => ({ p50: median(results[name].p50), p99: median(results[name].p99), rps16: median(results[name].rps16), rps64: median(results[name].rps64) });
    console.log(`\ntools/call echo over Streamable HTTP, one session, server-everything over stdio behind each (wrk, median of ${rounds} rounds of ${seconds} s):`);
    console.log('  proxy            p50 (1 conn)  p99 (1 conn)  req/s (16 conn)  req/s (64 conn)');
    for (const t of targets) {
      const v = row(t.name);
      console.log(`  ${t.name.padEnd(16)} ${fmt(v.p50, 3).padStart(9)} ms  ${fmt(v.p99, 3).padStart(9)} ms  ${fmt(v.rps16).padStart(15)}  ${fmt(v.rps64).padStart(15)}`);
    }
    const ours = row('toolgate serve');
    const peers = ['mcp-proxy', 'supergateway'].map(row);
    const best = { p50: Math.min(...peers.map((p) => p.p50)), p99: Math.min(...peers.map((p) => p.p99)), rps16: Math.max(...peers.map((p) => p.rps16)), rps64: Math.max(...peers.map((p) => p.rps64)) };
    const floor = row('bare forwarder');
    console.log(`  the floor (bare forwarder: parse, forward, answer as JSON; nothing else) is at ${fmt(floor.p50 / best.p50, 2)}x the better peer's p50; toolgate adds ${fmt((ours.p50 - floor.p50) * 1000)} µs to it`);
    console.log(`  toolgate vs the better peer: p50 ${fmt(ours.p50 / best.p50, 2)}x (target <= 0.5x), p99 ${fmt(ours.p99 / best.p99, 2)}x, throughput ${fmt(ours.rps16 / best.rps16, 2)}x at 16 and ${fmt(ours.rps64 / best.rps64, 2)}x at 64 connections (target >= 2x); toolgate runs a 50-rule policy with SQLite counters, audit and grant auth, the peers no policy`);
  } finally {
    for (const t of targets) t.proc.kill();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) await benchGateway();
