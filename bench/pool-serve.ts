// One `toolgate serve` for the pool bench: server-everything over stdio (and, for the session cap,
// the conformance fixture over HTTP), a grant per server, and a stop that checks that the gateway
// and every process it started are gone.
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { alive, descendants } from './proc-tree.js';

const exec = promisify(execFile);
const ROOT = resolve(import.meta.dirname, '..');
export const EVERYTHING = join(ROOT, 'node_modules/@modelcontextprotocol/server-everything/dist/index.js');
const FIXTURE = join(ROOT, 'test/fixtures/conformance-server.mjs');

/** Every process the bench started or saw started, killed on exit whatever happens. */
const started = new Set<number>();
process.on('exit', () => { for (const pid of started) { try { process.kill(pid, 'SIGKILL'); } catch { /* gone */ } } });

async function freePort(): Promise<number> {
  return new Promise((r) => { const s = createServer().listen(0, '127.0.0.1', () => { const p = (s.address() as { port: number }).port; s.close(() => r(p)); }); });
}

/** TOOLGATE_BENCH_POOL: a JSON object added as `pool:` to server-everything (none by default: main has no pool block). */
export function poolBlock(): Record<string, unknown> | undefined {
  const raw = process.env.TOOLGATE_BENCH_POOL;
  if (!raw) return undefined;
  const pool = JSON.parse(raw) as unknown;
  if (typeof pool !== 'object' || pool === null || Array.isArray(pool)) throw new Error('TOOLGATE_BENCH_POOL must be a JSON object, e.g. {"max":8}');
  return pool as Record<string, unknown>;
}

export interface Serve {
  proc: ChildProcess;
  pid: number;
  base: string;
  /** A grant token per server name. */
  tokens: Record<string, string>;
  /** Stops the gateway (SIGTERM, then SIGKILL after 10 s) and returns how many of its processes outlived it (killed then). */
  stop(): Promise<number>;
}

export interface ServeOptions {
  /** Adds the conformance fixture over HTTP as server `fixture` (no upstream process per session). */
  fixture?: boolean;
}

export async function startServe(opts: ServeOptions = {}): Promise<Serve> {
  const home = mkdtempSync(join(tmpdir(), 'tg-pool-bench-'));
  mkdirSync(join(home, 'policy'));
  const env = { ...process.env, TOOLGATE_HOME: home, TOOLGATE_LOG_LEVEL: 'error' };
  // Allowed tools under a grant-wide limit that never binds: each call still reserves a counter.
  writeFileSync(join(home, 'policy/policy.json'), JSON.stringify({
    version: '1', default: 'deny',
    all_tools: { limits: [{ counter: 'calls', window: 'minute', max: 1e9, scope: 'grant' }] },
    tools: { echo: {}, 'trigger-long-running-operation': {}, test_elicitation: {} },
  }));
  let fixture: ChildProcess | undefined;
  let fixturePort = 0;
  if (opts.fixture) {
    fixture = spawn(process.execPath, [FIXTURE, '--http', '0'], { stdio: ['ignore', 'pipe', 'ignore'] });
    started.add(fixture.pid!);
    fixturePort = await new Promise<number>((r, j) => {
      fixture!.once('exit', () => j(new Error('the conformance fixture exited')));
      fixture!.stdout!.on('data', (d: Buffer) => { const m = /listening (\d+)/.exec(d.toString()); if (m) r(Number(m[1])); });
    });
  }
  const port = await freePort();
  const pool = poolBlock();
  // Caps raised so that the thing measured binds, not the loopback address's share: 1,000
  // clients on one address hold up to 1,000 connections, and the legacy cap is the server's
  // sessions.max (100), not one grant's max_per_grant (20).
  const yaml = [
    `listen: 127.0.0.1:${port}`,
    'state: sqlite:./state.db',
    'audit: ./audit.db',
    'connections: {max: 4096, max_per_address: 4096}',
    'sessions: {max_per_grant: 1000}',
    'shutdown: {grace: 1s}',
    'servers:',
    '  everything:',
    `    command: ${JSON.stringify(process.execPath)}`,
    `    args: [${JSON.stringify(EVERYTHING)}]`,
    '    policy: ./policy/policy.json',
    ...(pool ? [`    pool: ${JSON.stringify(pool)}`] : []),
    ...(opts.fixture ? ['  fixture:', `    url: http://127.0.0.1:${fixturePort}/mcp`, '    auth: none', '    policy: ./policy/policy.json'] : []),
  ].join('\n') + '\n';
  writeFileSync(join(home, 'toolgate.yaml'), yaml);
  const tokens: Record<string, string> = {};
  for (const server of opts.fixture ? ['everything', 'fixture'] : ['everything']) {
    const out = await exec(process.execPath, [join(ROOT, 'bin/toolgate.js'), 'grants', 'create', '--server', server, '--label', `bench-${server}`, '-c', join(home, 'toolgate.yaml'), '--json'], { env, cwd: home })
      .catch((err: { stderr?: string }) => { throw new Error(`toolgate grants create failed (is TOOLGATE_BENCH_POOL for a build with the pool?): ${err.stderr?.trim().slice(0, 500)}`); });
    tokens[server] = (JSON.parse(out.stdout) as { token: string }).token;
  }
  // BENCH_NODE_ARGS: Node flags for toolgate serve, as in bench/gateway.ts.
  const nodeArgs = process.env.BENCH_NODE_ARGS?.split(' ').filter(Boolean) ?? [];
  const proc = spawn(process.execPath, [...nodeArgs, join(ROOT, 'bin/toolgate.js'), 'serve', '-c', join(home, 'toolgate.yaml')], { env, cwd: home, stdio: ['ignore', 'ignore', 'pipe'] });
  started.add(proc.pid!);
  let stderr = '';
  proc.stderr!.on('data', (d: Buffer) => { stderr = (stderr + d.toString()).slice(-4000); });
  const base = `http://127.0.0.1:${port}`;
  const end = Date.now() + 30_000;
  for (;;) {
    if (proc.exitCode !== null) throw new Error(`toolgate serve exited (${proc.exitCode}): ${JSON.stringify(stderr.slice(-1000))}`);
    try { await fetch(`${base}/`, { signal: AbortSignal.timeout(1000) }); break; } catch { /* not yet */ }
    if (Date.now() > end) throw new Error('toolgate serve did not come up');
    await new Promise((r) => setTimeout(r, 200));
  }
  const seen = new Set<number>();
  const watch = setInterval(() => { for (const k of descendants(proc.pid!)) { seen.add(k); started.add(k); } }, 500);
  return {
    proc, pid: proc.pid!, base, tokens,
    async stop() {
      clearInterval(watch);
      for (const k of descendants(proc.pid!)) seen.add(k);
      const exited = new Promise((r) => proc.once('exit', r));
      if (proc.exitCode === null) proc.kill('SIGTERM');
      const killed = await Promise.race([exited.then(() => false), new Promise((r) => setTimeout(() => r(true), 10_000))]);
      if (killed) proc.kill('SIGKILL');
      fixture?.kill();
      // Upstream processes exit once their stdin closes; give them a moment, then count the stragglers.
      await new Promise((r) => setTimeout(r, 1000));
      let leaked = 0;
      for (const k of seen) if (alive(k)) { leaked++; try { process.kill(k, 'SIGKILL'); } catch { /* gone */ } }
      started.delete(proc.pid!);
      for (const k of seen) started.delete(k);
      if (fixture) started.delete(fixture.pid!);
      rmSync(home, { recursive: true, force: true });
      return leaked + (killed ? 1 : 0);
    },
  };
}
