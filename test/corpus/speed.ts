// Classifier speed and decision fingerprint on corpus tools only (never a blind set): the corpus
// repeated to 10,000 definitions as one server, the way `npm run bench` builds them, timed over
// rounds (median, CPU and wall), and a SHA-256 over every corpus decision, rationale and
// recommended policy, so a speed change can be shown to change no decision.
// `node --import tsx test/corpus/speed.ts [rounds]`; `--profile` writes a CPU profile with node's --cpu-prof.
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { classifyTools, recommendPolicy, type ToolDefinition } from '../../src/risk/index.js';

const DIR = join(import.meta.dirname, 'servers');
type Server = { server: { name?: string; instructions?: string | null }; tools: (ToolDefinition & { _server?: { name?: string; instructions?: string } })[] };
const servers = readdirSync(DIR).sort().map((f) => JSON.parse(readFileSync(join(DIR, f), 'utf8')) as Server);

function fingerprint(): string {
  const h = createHash('sha256');
  for (const data of servers) {
    const ctx = { name: data.server.name, instructions: data.server.instructions ?? undefined };
    const got = data.tools.some((t) => t._server) ? data.tools.map((t) => classifyTools([t], t._server ?? {})[0]) : classifyTools(data.tools, ctx);
    h.update(JSON.stringify(got));
    h.update(JSON.stringify(recommendPolicy(got, data.tools, ctx.name)));
  }
  return h.digest('hex');
}

const real = servers.flatMap((s) => s.tools);
const tools = Array.from({ length: 10_000 }, (_, i) => ({ ...real[i % real.length], description: `${real[i % real.length].description ?? ''} (${i})` }));
const rounds = Number(process.argv[2] ?? 7);
const cpu: number[] = [];
const wall: number[] = [];
let out = '';
for (let r = 0; r < rounds; r++) {
  const c0 = process.cpuUsage();
  const w0 = performance.now();
  const got = classifyTools(tools, { name: 'bench' });
  wall.push(performance.now() - w0);
  const c = process.cpuUsage(c0);
  cpu.push((c.user + c.system) / 1000);
  if (r === 0) out = createHash('sha256').update(JSON.stringify(got)).digest('hex');
}
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
console.log(`10,000 corpus tools: median CPU ${median(cpu).toFixed(0)} ms, wall ${median(wall).toFixed(0)} ms over ${rounds} rounds (cpu ${cpu.map((x) => x.toFixed(0)).join(' ')})`);
console.log(`fingerprint corpus ${fingerprint()}  bench-10k ${out}`);
