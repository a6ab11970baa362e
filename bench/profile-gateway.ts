// Profiles toolgate serve (node --cpu-prof) under wrk, alone: N connections for S seconds, then
// prints the main thread's busy time per request by function, counting only the samples taken
// while wrk ran (start-up and shutdown left out): self time (top 25), then inclusive time of
// toolgate's own functions (top 25: where the request path spends it, callees included).
// Usage: node --import tsx bench/profile-gateway.ts [CONNECTIONS] [SECONDS]
import { mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { openSession, startTargets, wrk } from './gateway.js';

interface Frame { functionName: string; url: string; lineNumber: number }
interface Profile { nodes: { id: number; callFrame: Frame; children?: number[] }[]; startTime: number; samples: number[]; timeDeltas: number[] }

const [connections, seconds] = [Number(process.argv[2] ?? 16), Number(process.argv[3] ?? 10)];
const dir = mkdtempSync(join(tmpdir(), 'tg-prof-'));
process.env.BENCH_CPU_PROF = dir;
const [toolgate, bare] = await startTargets(false);
bare.proc.kill('SIGINT');
const headers = await openSession(toolgate);
// CPU time (user + system, in clock ticks) of the whole process and of its main thread: unlike the
// profile's samples, it does not count time the thread waited for a core on a loaded machine.
const ticks = (path: string) => readFileSync(path, 'utf8').replace(/^.*\) /s, '').split(' ').slice(11, 13).reduce((a, b) => a + Number(b), 0);
const cpu = () => [ticks(`/proc/${toolgate.proc.pid}/stat`), ticks(`/proc/${toolgate.proc.pid}/task/${toolgate.proc.pid}/stat`)];
// V8's profile clock and process.hrtime are both CLOCK_MONOTONIC (µs here).
const from = Number(process.hrtime.bigint() / 1000n);
const cpuFrom = cpu();
const r = await wrk(toolgate, headers, connections, seconds);
const cpuTo = cpu();
const to = Number(process.hrtime.bigint() / 1000n);
await new Promise((resolve) => { toolgate.proc.on('exit', resolve); toolgate.proc.kill('SIGINT'); });
const requests = r.rps * seconds;
// The main thread's profile is the largest (the audit writer thread has one of its own).
const file = readdirSync(dir).map((f) => join(dir, f)).sort((a, b) => readFileSync(b).length - readFileSync(a).length)[0];
const p = JSON.parse(readFileSync(file, 'utf8')) as Profile;
const frames = new Map(p.nodes.map((n) => [n.id, n.callFrame]));
const parent = new Map<number, number>();
for (const n of p.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
const name = (f: Frame) => `${f.functionName || '(anonymous)'} ${f.url.replace(/^.*node_modules\//, '').replace(/^.*\/(dist|src)\//, '$1/')}${f.url ? `:${f.lineNumber + 1}` : ''}`;
const self = new Map<string, number>();
const inclusive = new Map<string, number>();
let t = p.startTime;
p.samples.forEach((id, i) => {
  const dt = p.timeDeltas[i] ?? 0;
  t += dt;
  if (t < from || t > to) return;
  const f = frames.get(id)!;
  if (f.functionName === '(idle)') return;
  self.set(name(f), (self.get(name(f)) ?? 0) + dt);
  const seen = new Set<string>();
  for (let n: number | undefined = id; n !== undefined; n = parent.get(n)) {
    const g = frames.get(n)!;
    if (!/\/(dist|src)\//.test(g.url) || g.url.includes('node_modules')) continue;
    const k = name(g);
    if (seen.has(k)) continue;
    seen.add(k);
    inclusive.set(k, (inclusive.get(k) ?? 0) + dt);
  }
});
const busy = [...self.values()].reduce((a, b) => a + b, 0);
const top = (m: Map<string, number>) => [...m].sort((a, b) => b[1] - a[1]).slice(0, 25).map(([k, v]) => `  ${(v / requests).toFixed(1).padStart(6)} µs  ${k}`).join('\n');
const perRequest = (i: number) => (((cpuTo[i] - cpuFrom[i]) * 10_000) / requests).toFixed(0); // 100 ticks a second
console.log(`toolgate serve, ${connections} connections, ${seconds} s: ${Math.round(r.rps)} req/s, p50 ${r.p50} ms, load ${loadavg()[0].toFixed(2)}; CPU per request ${perRequest(0)} µs (all threads), ${perRequest(1)} µs (main thread); main thread busy in the profile ${(busy / requests).toFixed(0)} µs per request while wrk ran (${file})`);
console.log(`self time:\n${top(self)}\ninclusive time of toolgate's functions:\n${top(inclusive)}`);
