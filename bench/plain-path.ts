// The plain call path (an allowed tools/call over stdio, no result policy, telemetry off) now,
// against toolgate as of BENCH_BASE (default: 59d9011, the last landed commit before the 2026-07-28
// protocol, input_required rounds, tasks, result policy, poisoning and telemetry), built apart.
// Calls interleaved as in bench/latency.ts; added p50 over direct per round, and now ÷ base
// paired per round, median [min–max]. Part of npm run bench; alone: node --import tsx bench/plain-path.ts [ROUNDS] [CALLS]
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { measureInterleaved, stdioSetups } from './latency.js';
import { fmt, median, percentile } from './stats.js';
import { buildAt } from './telemetry.js';

const ROOT = resolve(import.meta.dirname, '..');

export async function benchPlainPath(rounds = Number(process.env.BENCH_ROUNDS ?? 5), calls = 1500): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'tg-plain-'));
  try {
    const base = buildAt(dir, process.env.BENCH_BASE ?? '59d9011');
    if (!base) {
      console.log('\nplain path: not a git checkout with the base commit; skipped');
      return;
    }
    mkdirSync(join(dir, 'run'));
    const { env, setups } = stdioSetups(join(dir, 'run'));
    const now = setups['toolgate (memory counters)'];
    const bin = join(ROOT, 'bin/toolgate.js');
    const at = (b: string, audit: string) => now.map((a) => (a === bin ? b : a.endsWith('audit-m.db') ? a.replace('audit-m.db', audit) : a));
    const runs: Record<string, string[]> = { direct: setups.direct, [`base ${base.commit}`]: at(base.bin, 'audit-base.db'), now: at(bin, 'audit-now.db') };
    const plain = Object.fromEntries(Object.entries(env).filter(([k]) => !k.startsWith('OTEL_')));
    const added: Record<string, number[]> = {};
    for (let r = 0; r < rounds; r++) {
      const times = await measureInterleaved(runs, calls, plain);
      const direct = percentile(times.direct, 50);
      for (const [n, t] of Object.entries(times)) if (n !== 'direct') (added[n] ??= []).push((percentile(t, 50) - direct) * 1000);
    }
    const spread = (xs: number[], digits = 2) => `${fmt(median(xs), digits)} [${fmt(Math.min(...xs), digits)}–${fmt(Math.max(...xs), digits)}]`;
    console.log(`\nplain path: ${fmt(calls)} sequential allowed tools/call echo over stdio per round, ${rounds} rounds, memory counters (load ${loadavg().map((l) => l.toFixed(2)).join(' ')});`);
    console.log('added p50 over direct, µs, median [min–max] of the rounds:');
    for (const [n, xs] of Object.entries(added)) console.log(`  ${n.padEnd(16)} ${spread(xs, 0)} µs`);
    const b = `base ${base.commit}`;
    console.log(`  now ÷ base, per round paired: ${spread(added.now.map((x, i) => x / added[b][i]))}`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

if (import.meta.url === `file://${process.argv[1]}`) await benchPlainPath(Number(process.argv[2] ?? 5), Number(process.argv[3] ?? 1500));
