// toolgate serve against a bare HTTP-to-stdio forwarder (the floor for any Node proxy) and, with
// BENCH_PEERS=1, the popular transport-only proxies (mcp-proxy, supergateway), each with the same
// stdio upstream (server-everything), driven by wrk (Debian) on one initialized session.
// Peers are installed into node_modules/.cache/toolgate-peers on first use. BENCH_CPU_PROF=DIR
// profiles toolgate serve (node --cpu-prof; the profile is written when it stops); BENCH_TOOLGATE_BIN
// runs another build's bin/toolgate.js as the gateway (to compare two builds).
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { cpus, loadavg, tmpdir } from 'node:os';
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

/** The same call from a 2026-07-28 client: no session, the _meta envelope in the body, the standard headers. */
const LUA_MODERN = LUA.replace(`"arguments":{"message":"bench"}}}`, `"arguments":{"message":"bench"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`);
const MODERN_HEADERS = { 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/call', 'mcp-name': 'echo' };

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

interface Target { name: string; url: string; headers: Record<string, string>; proc: ChildProcess; modern?: boolean }

export async function openSession(t: Target): Promise<Record<string, string>> {
  const headers = { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...t.headers };
  if (t.modern) {
    const all = { ...headers, ...MODERN_HEADERS };
    const _meta = { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {} };
    const text = await (await fetch(t.url, { method: 'POST', headers: all, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'echo', arguments: { message: 'warm' }, _meta } }) })).text();
    if (!text.includes('Echo: warm')) throw new Error(`${t.name}: echo failed: ${text.slice(0, 200)}`);
    return all;
  }
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

export async function wrk(t: Target, headers: Record<string, string>, connections: number, seconds: number): Promise<{ p50: number; p99: number; rps: number }> {
  const dir = mkdtempSync(join(tmpdir(), 'tg-wrk-'));
  const script = join(dir, 'call.lua');
  writeFileSync(script, t.modern ? LUA_MODERN : LUA);
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

export async function startTargets(withPeers: boolean): Promise<Target[]> {
  if (withPeers && !existsSync(join(PEERS, 'node_modules/.bin/supergateway'))) {
    mkdirSync(PEERS, { recursive: true });
    writeFileSync(join(PEERS, 'package.json'), JSON.stringify({ name: 'toolgate-bench-peers', private: true }));
    await exec('npm', ['install', '--no-audit', '--no-fund', '--prefix', PEERS, 'mcp-proxy@6', 'supergateway@4'], { timeout: 600_000 });
  }
  const home = mkdtempSync(join(tmpdir(), 'tg-gw-bench-'));
  // The databases sit outside the policy's folder, as they would in a deployment: a watcher on
  // the policy must not be woken by their WAL writes.
  const policyDir = join(home, 'policy');
  mkdirSync(policyDir);
  const env = { ...process.env, TOOLGATE_HOME: home, TOOLGATE_LOG_LEVEL: 'error' };
  // A 50-rule policy: 49 other tools with conditions and limits, and echo's own rules.
  const tools: Record<string, unknown> = {};
  for (let i = 0; i < 49; i++) tools[`tool_${i}`] = { deny_if: [{ conditions: [{ path: 'args.path', op: 'starts_with', value: '/etc' }] }], limits: [{ counter: `t${i}`, window: 'minute', max: 100 }] };
  tools.echo = { deny_if: [{ conditions: [{ path: 'args.message', op: 'regex', value: '(?i)password' }] }], limits: [{ counter: 'echo', window: 'second', max: 1e9 }] };
  writeFileSync(join(policyDir, 'policy.json'), JSON.stringify({ version: '1', default: 'deny', all_tools: { limits: [{ counter: 'calls', window: 'minute', max: 1e9 }] }, tools }));
  const tgPort = await freePort();
  writeFileSync(join(home, 'toolgate.yaml'), `listen: 127.0.0.1:${tgPort}\nstate: sqlite:./state.db\naudit: ./audit.db\nservers:\n  everything:\n    command: ${JSON.stringify(process.execPath)}\n    args: [${JSON.stringify(EVERYTHING)}]\n    policy: ./policy/policy.json\n`);
  const grant = JSON.parse((await exec(process.execPath, [join(ROOT, 'bin/toolgate.js'), 'grants', 'create', '--server', 'everything', '--label', 'bench', '--state', `sqlite:${join(home, 'state.db')}`, '--json'], { env })).stdout);
  const serveArgs = [...(process.env.BENCH_NODE_ARGS?.split(' ').filter(Boolean) ?? []), ...(process.env.BENCH_CPU_PROF ? [`--cpu-prof`, `--cpu-prof-dir=${process.env.BENCH_CPU_PROF}`] : [])];
  const toolgate = spawn(process.execPath, [...serveArgs, process.env.BENCH_TOOLGATE_BIN ?? join(ROOT, 'bin/toolgate.js'), 'serve', '-c', join(home, 'toolgate.yaml')], { env, stdio: 'ignore' });
  const barePort = await freePort();
  const bare = spawn(process.execPath, [join(ROOT, 'bench/bare-http-proxy.mjs'), String(barePort), process.execPath, EVERYTHING], { stdio: 'ignore' });
  const targets: Target[] = [
    { name: 'toolgate serve', url: `http://127.0.0.1:${tgPort}/mcp/everything`, headers: { authorization: `Bearer ${grant.token}` }, proc: toolgate },
    { name: 'bare forwarder', url: `http://127.0.0.1:${barePort}/mcp`, headers: {}, proc: bare },
    // The same gateway and URL, for a stateless (2026-07-28) client: its calls ride the grant's internal session.
    { name: 'toolgate modern', url: `http://127.0.0.1:${tgPort}/mcp/everything`, headers: { authorization: `Bearer ${grant.token}` }, proc: toolgate, modern: true },
  ];
  if (withPeers) {
    const mpPort = await freePort();
    const mcpProxy = spawn(process.execPath, [join(PEERS, 'node_modules/mcp-proxy/dist/bin/mcp-proxy.mjs'), '--host', '127.0.0.1', '--port', String(mpPort), '--server', 'stream', '--', process.execPath, EVERYTHING], { stdio: 'ignore' });
    const sgPort = await freePort();
    const supergateway = spawn(process.execPath, ['--import', LOOPBACK, join(PEERS, 'node_modules/supergateway/dist/index.js'), '--stdio', `${process.execPath} ${EVERYTHING}`, '--outputTransport', 'streamableHttp', '--stateful', '--port', String(sgPort), '--logLevel', 'none'], { stdio: 'ignore' });
    targets.push({ name: 'mcp-proxy', url: `http://127.0.0.1:${mpPort}/mcp`, headers: {}, proc: mcpProxy }, { name: 'supergateway', url: `http://127.0.0.1:${sgPort}/mcp`, headers: {}, proc: supergateway });
  }
  for (const t of targets) await until(t.url.replace(/\/mcp.*$/, '/')).catch((err: Error) => { throw new Error(`${t.name}: ${err.message}`); });
  return targets;
}

const CASES = [1, 16, 64].map((connections) => ({ name: `${connections} conn`, connections }));
const spread = (xs: number[]) => `${fmt(Math.min(...xs), 2)}–${fmt(Math.max(...xs), 2)}`;
const load = () => loadavg()[0].toFixed(2);

/**
 * toolgate serve (SQLite counters, grant auth, audit) against the bare forwarder, each round
 * measuring both back to back in each case (the order alternating per round), so that each ratio
 * is a pair taken under the same load. BENCH_PEERS=1 adds mcp-proxy and supergateway.
 */
export async function benchGateway(rounds = Number(process.env.BENCH_ROUNDS ?? 5), seconds = Number(process.env.BENCH_SECONDS ?? 5)): Promise<void> {
  if (!existsSync('/usr/bin/wrk')) {
    console.log('\ngateway benchmark skipped: wrk is not installed (apt-get install wrk)');
    return;
  }
  const withPeers = process.env.BENCH_PEERS === '1';
  const targets = await startTargets(withPeers);
  try {
    const sessions = new Map<string, Record<string, string>>();
    for (const t of targets) sessions.set(t.name, await openSession(t));
    const [ours, floor] = targets;
    const results = new Map(targets.map((t) => [t.name, new Map(CASES.map((c) => [c.name, [] as { p50: number; p99: number; rps: number }[]]))]));
    const loads: string[] = [];
    for (let r = 0; r < rounds; r++) {
      loads.push(load());
      for (const c of CASES) {
        const order = r % 2 === 0 ? targets : [...targets].reverse();
        for (const t of order) results.get(t.name)!.get(c.name)!.push(await wrk(t, sessions.get(t.name)!, c.connections, seconds));
      }
    }
    console.log(`\ntools/call echo over Streamable HTTP, one session, server-everything over stdio behind each (wrk, ${rounds} rounds of ${seconds} s; load average at each round's start: ${loads.join(', ')}; ${cpus().length} cores):`);
    console.log('  proxy            case           p50 ms   p99 ms      req/s   (medians)');
    for (const t of targets) {
      for (const c of CASES) {
        const xs = results.get(t.name)!.get(c.name)!;
        console.log(`  ${t.name.padEnd(16)} ${c.name.padEnd(12)} ${fmt(median(xs.map((x) => x.p50)), 3).padStart(8)} ${fmt(median(xs.map((x) => x.p99)), 3).padStart(8)} ${fmt(median(xs.map((x) => x.rps))).padStart(10)}`);
      }
    }
    console.log('  toolgate (SQLite counters, grant auth, audit) against the bare forwarder, paired per round (median [min–max over rounds]):');
    for (const c of CASES) {
      const a = results.get(ours.name)!.get(c.name)!;
      const b = results.get(floor.name)!.get(c.name)!;
      const rps = a.map((x, i) => x.rps / b[i].rps);
      const p50 = a.map((x, i) => x.p50 / b[i].p50);
      const rpsTarget = c.connections === 16 ? ' (target >= 0.50)' : '';
      const p50Target = c.connections === 1 ? ' (target <= 1.50)' : '';
      console.log(`    ${c.name.padEnd(12)} throughput ${fmt(median(rps), 2)}x [${spread(rps)}]${rpsTarget}, p50 ${fmt(median(p50), 2)}x [${spread(p50)}]${p50Target}`);
    }
    const modern = targets.find((t) => t.modern);
    if (modern) {
      console.log('  a 2026-07-28 client (stateless, same URL) against a 2025 session on the same toolgate, paired per round:');
      for (const c of CASES) {
        const a = results.get(modern.name)!.get(c.name)!;
        const b = results.get(ours.name)!.get(c.name)!;
        const rps = a.map((x, i) => x.rps / b[i].rps);
        const p50 = a.map((x, i) => x.p50 / b[i].p50);
        console.log(`    ${c.name.padEnd(12)} throughput ${fmt(median(rps), 2)}x [${spread(rps)}], p50 ${fmt(median(p50), 2)}x [${spread(p50)}] (modern ${fmt(median(a.map((x) => x.p50)), 3)} ms, legacy ${fmt(median(b.map((x) => x.p50)), 3)} ms)`);
      }
    }
  } finally {
    for (const t of new Set(targets.map((x) => x.proc))) t.kill('SIGINT');
  }
}

if (import.meta.url === `file://${process.argv[1]}`) await benchGateway();
