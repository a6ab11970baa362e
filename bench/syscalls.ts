// System calls per tools/call made by the proxy process (all its threads, not the upstream
// server), toolgate against the bare proxies, over stdio and over HTTP. Where every kernel entry
// is expensive — this VM has page-table isolation without PCID, and its guest kernel is
// paravirtualised, so each entry goes through the host — the count explains most of the latency
// ratio that bench/latency.ts and bench/gateway.ts report.
// Needs strace (Debian). Usage: node --import tsx bench/syscalls.ts [CALLS] [SECONDS]
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openSession, startTargets, wrk } from './gateway.js';
import { start, stdioSetups } from './latency.js';

const [calls, seconds] = [Number(process.argv[2] ?? 2000), Number(process.argv[3] ?? 5)];
const dir = mkdtempSync(join(tmpdir(), 'tg-syscalls-'));

/** Counts per system call from `strace -c` output. */
function counts(file: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of readFileSync(file, 'utf8').split('\n')) {
    const m = /^\s*[\d.]+\s+[\d.]+\s+\d+\s+(\d+)\s+(?:\d+\s+)?(\w+)$/.exec(line);
    if (m && m[2] !== 'total') out.set(m[2], Number(m[1]));
  }
  return out;
}

/** Traces `proc` (and its threads) while `load` runs; prints the system calls per call. */
async function traced(name: string, proc: ChildProcess, load: () => Promise<number>): Promise<void> {
  const file = join(dir, `${name.replace(/\W+/g, '-')}.txt`);
  const strace = spawn('strace', ['-c', '-f', '-qq', '-o', file, '-p', String(proc.pid)], { stdio: 'ignore' });
  await new Promise((r) => setTimeout(r, 500));
  const n = await load();
  strace.kill('SIGINT');
  await new Promise((r) => strace.on('exit', r));
  const c = counts(file);
  const total = [...c.values()].reduce((a, b) => a + b, 0);
  const top = [...c].sort((a, b) => b[1] - a[1]).slice(0, 7).map(([k, v]) => `${k} ${(v / n).toFixed(1)}`).join(', ');
  console.log(`  ${name.padEnd(34)} ${(total / n).toFixed(1).padStart(5)} per call  (${top})`);
}

console.log(`system calls per tools/call echo by the proxy process (strace -c -f), ${calls} sequential calls over stdio:`);
const { env, setups } = stdioSetups(dir);
const stdio = Object.entries(setups).filter(([name]) => name !== 'direct');
for (const [name, command] of stdio) {
  const client = await start(command, env);
  await traced(name, client.child, async () => {
    for (let i = 1; i <= calls; i++) await client.call(i, 'tools/call', { name: 'echo', arguments: { message: `hello ${i}` } });
    return calls;
  });
  await client.close();
}

console.log(`over Streamable HTTP (wrk, ${seconds} s; toolgate serve with SQLite counters, grant auth and audit):`);
const targets = await startTargets(false);
try {
  for (const connections of [1, 16]) {
    for (const t of targets) {
      const headers = await openSession(t);
      await traced(`${t.name}, ${connections} conn`, t.proc, async () => (await wrk(t, headers, connections, seconds)).rps * seconds);
    }
  }
} finally {
  for (const t of targets) t.proc.kill('SIGINT');
  rmSync(dir, { recursive: true, force: true });
}
