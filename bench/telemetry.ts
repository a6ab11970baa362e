// What OpenTelemetry costs on the call path over stdio: toolgate run as it was before telemetry
// (the parent of the commit that added src/telemetry, built apart), toolgate run now with
// telemetry off (the default), and with traces and metrics on, exporting over OTLP/HTTP to a sink
// in this process. Calls interleaved as in bench/latency.ts; each setup's added p50 over direct
// per round, and the paired ratios off ÷ before and on ÷ off, median [min–max] over the rounds.
// Part of npm run bench; alone: node --import tsx bench/telemetry.ts [ROUNDS] [CALLS]
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { measureInterleaved, stdioSetups } from './latency.js';
import { fmt, median, percentile } from './stats.js';

const ROOT = resolve(import.meta.dirname, '..');

/** toolgate as of the commit before src/telemetry came, built in `dir`; undefined outside a git checkout. */
function buildBefore(dir: string): { bin: string; commit: string } | undefined {
  try {
    const added = execFileSync('git', ['log', '--diff-filter=A', '--format=%H', '--', 'src/telemetry/index.ts'], { cwd: ROOT, encoding: 'utf8' }).trim().split('\n').pop();
    return added ? buildAt(dir, `${added}^`) : undefined;
  } catch {
    return undefined;
  }
}

/** toolgate as of `rev`, built in `dir` (its own copy of src, on this checkout's node_modules); undefined outside a git checkout. */
export function buildAt(dir: string, rev: string): { bin: string; commit: string } | undefined {
  let commit: string;
  try {
    commit = execFileSync('git', ['rev-parse', rev], { cwd: ROOT, encoding: 'utf8' }).trim();
  } catch {
    return undefined;
  }
  const copy = join(dir, `at-${commit.slice(0, 7)}`);
  mkdirSync(copy);
  const archive = execFileSync('git', ['archive', '--format=tar', commit, 'src', 'bin', 'package.json', 'tsconfig.json', 'tsconfig.build.json'], { cwd: ROOT, maxBuffer: 256 * 1024 * 1024 });
  execFileSync('tar', ['-x', '-C', copy], { input: archive });
  symlinkSync(join(ROOT, 'node_modules'), join(copy, 'node_modules'));
  execFileSync(process.execPath, [join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', join(copy, 'tsconfig.build.json')], { stdio: 'inherit' });
  return { bin: join(copy, 'bin/toolgate.js'), commit: commit.slice(0, 7) };
}

export async function benchTelemetry(rounds = Number(process.env.BENCH_ROUNDS ?? 5), calls = 1500): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'tg-telemetry-'));
  // An OTLP/HTTP sink: takes every export and answers 200, as a collector would.
  let exports = 0;
  const sink = createServer((req, res) => { req.resume(); req.on('end', () => { exports++; res.writeHead(200, { 'content-type': 'application/x-protobuf' }).end(); }); });
  await new Promise<void>((r) => sink.listen(0, '127.0.0.1', r));
  try {
    const before = buildBefore(dir);
    mkdirSync(join(dir, 'run'));
    const { env, setups } = stdioSetups(join(dir, 'run'));
    const now = setups['toolgate (memory counters)'];
    const bin = join(ROOT, 'bin/toolgate.js');
    const withAudit = (cmd: string[], bin2: string, audit: string) => cmd.map((a) => (a === bin ? bin2 : a.endsWith('audit-m.db') ? a.replace('audit-m.db', audit) : a));
    const runs: Record<string, string[]> = { direct: setups.direct, 'bare proxy': setups['bare proxy'] };
    if (before) runs[`before telemetry (${before.commit})`] = withAudit(now, before.bin, 'audit-before.db');
    runs['telemetry off'] = withAudit(now, bin, 'audit-off.db');
    runs['telemetry on'] = withAudit(now, bin, 'audit-on.db');
    const on: NodeJS.ProcessEnv = {
      ...env, OTEL_TRACES_EXPORTER: 'otlp', OTEL_METRICS_EXPORTER: 'otlp',
      OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${(sink.address() as AddressInfo).port}`, OTEL_METRIC_EXPORT_INTERVAL: '5000',
    };
    // Off: no OTEL_* at all (a variable of the environment this bench runs in must not turn it on).
    const off = Object.fromEntries(Object.entries(env).filter(([k]) => !k.startsWith('OTEL_')));
    const added: Record<string, number[]> = {};
    const p99s: Record<string, number[]> = {};
    for (let r = 0; r < rounds; r++) {
      const times = await measureInterleaved(runs, calls, (setup) => (setup === 'telemetry on' ? on : off));
      const direct = percentile(times.direct, 50);
      for (const [n, t] of Object.entries(times)) {
        if (n === 'direct') continue;
        (added[n] ??= []).push((percentile(t, 50) - direct) * 1000);
        (p99s[n] ??= []).push(percentile(t, 99));
      }
    }
    const spread = (xs: number[], digits = 2) => `${fmt(median(xs), digits)} [${fmt(Math.min(...xs), digits)}–${fmt(Math.max(...xs), digits)}]`;
    console.log(`\ntelemetry: ${fmt(calls)} sequential tools/call echo over stdio per round, ${rounds} rounds, memory counters, the policy of bench/latency.ts (load ${loadavg().map((l) => l.toFixed(2)).join(' ')});`);
    console.log('added p50 over direct, µs, median [min–max] of the rounds, and the median p99:');
    for (const [n, xs] of Object.entries(added)) console.log(`  ${n.padEnd(27)} ${spread(xs, 0)} µs   p99 ${fmt(median(p99s[n]), 3)} ms`);
    const paired = (a: string, b: string) => added[a].map((x, i) => x / added[b][i]);
    const beforeName = Object.keys(added).find((n) => n.startsWith('before telemetry'));
    if (beforeName) console.log(`  telemetry off ÷ before, per round paired: ${spread(paired('telemetry off', beforeName))}`);
    console.log(`  telemetry on ÷ off, per round paired:     ${spread(paired('telemetry on', 'telemetry off'))}  (${exports} OTLP exports received)`);
    if (!before) console.log('  (not a git checkout: toolgate before telemetry was not built)');
  } finally {
    sink.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

if (import.meta.url === `file://${process.argv[1]}`) await benchTelemetry(Number(process.argv[2] ?? 5), Number(process.argv[3] ?? 1500));
