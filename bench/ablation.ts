// What each part of toolgate run costs over stdio: a copy of this tree with bench/ablation.patch
// applied (each part can be switched off by an environment variable, in the copy only) is run
// beside the bare proxy and the real toolgate, calls interleaved as in bench/latency.ts, and each
// setup's added p50 is divided by the bare proxy's in the same round. It shows how far the stdio
// targets of issue 15 are from what toolgate could reach while still deciding and auditing.
// Part of npm run bench; alone: node --import tsx bench/ablation.ts [ROUNDS] [CALLS]
import { execFileSync } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { measureInterleaved, stdioSetups } from './latency.js';
import { fmt, median, percentile } from './stats.js';

const ROOT = resolve(import.meta.dirname, '..');

/** The tree with the switches in, built apart: the real one stays untouched. */
function buildAblated(dir: string): string {
  const copy = join(dir, 'ablated');
  for (const f of ['src', 'bin', 'package.json', 'tsconfig.json', 'tsconfig.build.json']) cpSync(join(ROOT, f), join(copy, f), { recursive: true });
  symlinkSync(join(ROOT, 'node_modules'), join(copy, 'node_modules'));
  try {
    execFileSync('git', ['apply', '--unsafe-paths', `--directory=${copy}`, join(ROOT, 'bench/ablation.patch')], { cwd: copy, stdio: 'pipe' });
  } catch (err) {
    throw new Error(`bench/ablation.patch no longer applies to src/ (make it again from the switches it adds): ${(err as { stderr?: Buffer }).stderr?.toString().trim()}`);
  }
  execFileSync(process.execPath, [join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', join(copy, 'tsconfig.build.json')], { stdio: 'inherit' });
  return join(copy, 'bin/toolgate.js');
}

/** Each variant and the switches (ABLATE_*) it turns on in the copy. */
const VARIANTS: Record<string, string[]> = {
  'audit batches in a thread': ['AUDIT_THREAD'],
  'no journal writes': ['NO_JOURNAL'],
  'no audit': ['NO_AUDIT'],
  'no audit, no decision': ['NO_AUDIT', 'NO_DECISION'],
  'pass-through (no session)': ['PASS_THROUGH'],
};

export async function benchAblation(rounds = Number(process.env.BENCH_ROUNDS ?? 5), calls = 1500): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'tg-ablation-'));
  try {
    const ablated = buildAblated(dir);
    mkdirSync(join(dir, 'run'));
    const { env, setups } = stdioSetups(join(dir, 'run'));
    const toolgate = setups['toolgate (memory counters)'];
    const runs: Record<string, string[]> = { direct: setups.direct, 'bare proxy': setups['bare proxy'], toolgate };
    const envs: Record<string, NodeJS.ProcessEnv> = {};
    for (const [name, switches] of Object.entries(VARIANTS)) {
      envs[name] = { ...env, ...Object.fromEntries(switches.map((s) => [`ABLATE_${s}`, '1'])) };
      // Each variant its own audit database, so no two processes share one.
      runs[name] = toolgate.map((a) => (a === join(ROOT, 'bin/toolgate.js') ? ablated : a.endsWith('audit-m.db') ? a.replace('audit-m.db', `audit-${switches.join('-').toLowerCase()}.db`) : a));
    }
    const ratios: Record<string, number[]> = {};
    const p99s: Record<string, number[]> = {};
    for (let r = 0; r < rounds; r++) {
      const times = await measureInterleaved(runs, calls, (setup) => envs[setup] ?? env);
      const p50 = Object.fromEntries(Object.entries(times).map(([n, t]) => [n, percentile(t, 50)]));
      for (const n of Object.keys(runs)) {
        if (n === 'direct') continue;
        (ratios[n] ??= []).push((p50[n] - p50.direct) / (p50['bare proxy'] - p50.direct));
        (p99s[n] ??= []).push(percentile(times[n], 99));
      }
    }
    console.log(`\nablation: ${fmt(calls)} sequential tools/call echo over stdio per round, ${rounds} rounds, memory counters, the policy of bench/latency.ts (load ${loadavg().map((l) => l.toFixed(2)).join(' ')});`);
    console.log("added p50 over direct ÷ the bare proxy's, per round (median [min–max]), and the median p99:");
    for (const [n, rs] of Object.entries(ratios)) {
      console.log(`  ${n.padEnd(27)} ${fmt(median(rs), 2)} [${fmt(Math.min(...rs), 2)}–${fmt(Math.max(...rs), 2)}]   p99 ${fmt(median(p99s[n]), 3)} ms`);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

if (import.meta.url === `file://${process.argv[1]}`) await benchAblation(Number(process.argv[2] ?? 5), Number(process.argv[3] ?? 1500));
