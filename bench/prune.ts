// Pruning a large audit log while toolgate serve keeps answering: a million rows (BENCH_PRUNE_ROWS)
// written straight into the audit file (the chain writer, not through the gateway), then the same
// call loop measured before, during and after `toolgate audit prune` from another process.
import { execFile, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { ChainWriter, type JournalEntry } from '../src/audit/chain.js';
import { createAuditDatabase } from '../src/audit/database.js';
import { closeDatabase, openDatabase } from '../src/state/sqlite.js';
import { openSession } from './gateway.js';
import { fmt, percentile } from './stats.js';

const exec = promisify(execFile);
const ROOT = resolve(import.meta.dirname, '..');
const BIN = join(ROOT, 'bin/toolgate.js');
const EVERYTHING = join(ROOT, 'node_modules/@modelcontextprotocol/server-everything/dist/index.js');

/** `rows` calls, a day apart from now by `ageDays`, in one chain, with their outcomes. */
function generate(file: string, rows: number, ageDays: number): void {
  createAuditDatabase(file);
  const db = openDatabase(file);
  const writer = new ChainWriter(db);
  const start = Date.now() - ageDays * 86_400_000;
  const BATCH = 10_000;
  for (let at = 0; at < rows; at += BATCH) {
    const entries: JournalEntry[] = [];
    const outcomes = [];
    for (let i = at; i < Math.min(rows, at + BATCH); i++) {
      const id = `bench-${i}`;
      entries.push([id, new Date(start + i).toISOString(), 'bench:1', 'call', 'everything', 'bench', `session-${i >> 8}`, 'bench-client', 'echo', 'allow', '(default)', null, '["message"]', 'a'.repeat(64)]);
      outcomes.push({ eventId: id, outcome: 'result', latency: 1.25 });
    }
    writer.write({ entries, args: [], storeArgValues: [], awaiting: [], outcomes });
  }
  closeDatabase(db);
}

/** Calls echo from `workers` loops until `done()`; each call's latency in ms. */
async function calls(url: string, headers: Record<string, string>, workers: number, done: () => boolean): Promise<number[]> {
  const times: number[] = [];
  let id = 100;
  await Promise.all(Array.from({ length: workers }, async () => {
    while (!done()) {
      const t = performance.now();
      const res = await fetch(url, { method: 'POST', headers, body: JSON.stringify({ jsonrpc: '2.0', id: id++, method: 'tools/call', params: { name: 'echo', arguments: { message: 'bench' } } }) });
      const text = await res.text();
      if (!text.includes('Echo: bench')) throw new Error(`echo failed: ${text.slice(0, 200)}`);
      times.push(performance.now() - t);
    }
  }));
  return times;
}

export async function benchPrune(rows = Number(process.env.BENCH_PRUNE_ROWS ?? 1_000_000)): Promise<void> {
  const home = mkdtempSync(join(tmpdir(), 'tg-prune-bench-'));
  mkdirSync(join(home, 'policy'));
  writeFileSync(join(home, 'policy/policy.json'), JSON.stringify({ version: '1', default: 'allow' }));
  const audit = join(home, 'audit.db');
  let t = performance.now();
  generate(audit, rows, 100);
  const made = (performance.now() - t) / 1000;
  const sizeBefore = statSync(audit).size;
  const env = { ...process.env, TOOLGATE_HOME: home, TOOLGATE_LOG_LEVEL: 'error' };
  const port = 20_000 + Math.floor(Math.random() * 20_000);
  writeFileSync(join(home, 'toolgate.yaml'), `listen: 127.0.0.1:${port}\nstate: sqlite:./state.db\naudit: ./audit.db\nservers:\n  everything:\n    command: ${JSON.stringify(process.execPath)}\n    args: [${JSON.stringify(EVERYTHING)}]\n    policy: ./policy/policy.json\n    auth: none\n`);
  const serve = spawn(process.execPath, [BIN, 'serve', '-c', join(home, 'toolgate.yaml')], { env, stdio: 'ignore' });
  try {
    const target = { name: 'toolgate serve', url: `http://127.0.0.1:${port}/mcp/everything`, headers: {}, proc: serve };
    let headers: Record<string, string> | undefined;
    for (let tries = 0; !headers; tries++) {
      try { headers = await openSession(target); } catch (err) { if (tries > 100) throw err; await new Promise((r) => setTimeout(r, 200)); }
    }
    const WORKERS = 4;
    const forMs = async (ms: number) => { const end = Date.now() + ms; return calls(target.url, headers!, WORKERS, () => Date.now() > end); };
    await forMs(2000); // warm-up, not counted
    const quiet = await forMs(5000);
    let pruning = true;
    t = performance.now();
    const prune = exec(process.execPath, [BIN, 'audit', 'prune', '--before', '90d', '--audit', audit, '--json'], { env, maxBuffer: 1 << 20 })
      .finally(() => { pruning = false; });
    const during = await calls(target.url, headers, WORKERS, () => !pruning);
    const result = JSON.parse((await prune).stdout) as { removed: number };
    const took = (performance.now() - t) / 1000;
    const afterwards = await forMs(5000);
    const verify = JSON.parse((await exec(process.execPath, [BIN, 'audit', 'verify', '--audit', audit, '--json'], { env }).catch((e: { stdout: string }) => e)).stdout) as { ok: boolean; rows: number };
    console.log(`\naudit prune: ${fmt(rows)} rows generated in ${fmt(made, 1)} s (${fmt(sizeBefore / 1e6)} MB); toolgate serve answering echo from ${WORKERS} loops meanwhile:`);
    console.log(`  prune removed ${fmt(result.removed)} rows in ${fmt(took, 1)} s (${fmt(result.removed / took)} rows/s); file ${fmt(sizeBefore / 1e6)} → ${fmt(statSync(audit).size / 1e6)} MB; verify ${verify.ok ? 'ok' : 'FAILED'} (${verify.rows} rows left)`);
    console.log('  calls            n       p50 ms   p99 ms');
    for (const [name, xs] of [['before prune', quiet], ['during prune', during], ['after prune', afterwards]] as const) {
      console.log(`  ${name.padEnd(14)} ${String(xs.length).padStart(6)} ${fmt(percentile(xs, 50), 2).padStart(10)} ${fmt(percentile(xs, 99), 2).padStart(8)}`);
    }
  } finally {
    serve.kill('SIGINT');
  }
}

if (import.meta.url === `file://${process.argv[1]}`) await benchPrune();
