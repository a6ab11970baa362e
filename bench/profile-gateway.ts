// Profiles toolgate serve (node --cpu-prof) under wrk, alone: N connections for S seconds, then
// prints the main thread's busy time per request by function (self time, top 25).
// Usage: node --import tsx bench/profile-gateway.ts [CONNECTIONS] [SECONDS]
import { mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openSession, startTargets, wrk } from './gateway.js';

interface Profile { nodes: { id: number; callFrame: { functionName: string; url: string; lineNumber: number } }[]; samples: number[]; timeDeltas: number[] }

const [connections, seconds] = [Number(process.argv[2] ?? 16), Number(process.argv[3] ?? 10)];
const dir = mkdtempSync(join(tmpdir(), 'tg-prof-'));
process.env.BENCH_CPU_PROF = dir;
const [toolgate, bare] = await startTargets(false);
bare.proc.kill('SIGINT');
const r = await wrk(toolgate, await openSession(toolgate), connections, seconds);
await new Promise((resolve) => { toolgate.proc.on('exit', resolve); toolgate.proc.kill('SIGINT'); });
const requests = r.rps * seconds;
// The main thread's profile is the largest (the audit writer thread has one of its own).
const file = readdirSync(dir).map((f) => join(dir, f)).sort((a, b) => readFileSync(b).length - readFileSync(a).length)[0];
const p = JSON.parse(readFileSync(file, 'utf8')) as Profile;
const frames = new Map(p.nodes.map((n) => [n.id, n.callFrame]));
const self = new Map<string, number>();
p.samples.forEach((id, i) => {
  const f = frames.get(id)!;
  const key = `${f.functionName || '(anonymous)'} ${f.url.replace(/^.*node_modules\//, '').replace(/^.*\/(dist|src)\//, '$1/')}${f.url ? `:${f.lineNumber + 1}` : ''}`;
  self.set(key, (self.get(key) ?? 0) + (p.timeDeltas[i] ?? 0));
});
const busy = [...self].filter(([k]) => !k.startsWith('(idle)')).reduce((a, [, t]) => a + t, 0);
console.log(`toolgate serve, ${connections} connections, ${seconds} s: ${Math.round(r.rps)} req/s, p50 ${r.p50} ms; main thread busy ${(busy / requests).toFixed(0)} µs per request (${file})`);
for (const [k, t] of [...self].filter(([k]) => !k.startsWith('(idle)')).sort((a, b) => b[1] - a[1]).slice(0, 25)) {
  console.log(`  ${(t / requests).toFixed(1).padStart(6)} µs  ${k}`);
}
