import { pino } from 'pino';
import { CompiledPolicy, Engine } from '../src/engine/index.js';
import { validatePolicyObject } from '../src/policy/index.js';
import { PolicySession } from '../src/proxy/session.js';
import { shapeFromServer } from '../src/results/index.js';
import { FlowTracker } from '../src/flows/tracker.js';
import { MemoryCounterStore } from '../src/state/memory.js';
import { MemoryFlowStore } from '../src/state/flow-touches.js';
import { crafted, ordinary } from './secrets.js';
import { fmt, median } from './stats.js';

/**
 * The result policy's cost on the call path (issue 27 budgets), in process: a session decides a
 * tools/call and the upstream answers at once with a prepared line, which the session parses,
 * shapes and passes on (serialized again only when changed). Setups are measured in turns in the
 * same run, so their ratio holds even on a shared machine:
 * - `off`: a policy with no `results` (what the hook costs then is measured alone too);
 * - `on`: the same policy with `results: {redact: [secrets]}`;
 * - `flows`: redaction on, and the recommended flows rule with the tool given flow roles
 *   (`private` and `egress`, so each call reads what the agent touched and records a touch) in
 *   the memory state store.
 */

const MB = 1 << 20;

/**
 * What makes a backtracking regex explode: each rule's prefix followed by a run of the characters
 * its value is made of, far longer than any value, then a character that fails the match at the end
 * (`AKIA` + A…A!, `eyJ` + a…a, `password=` + a…a, `-----BEGIN PRIVATE KEY-----` + base64 lines, …).
 */
function backtracking(size: number): string {
  const heads = ['AKIA', 'eyJ', 'eyJa.eyJ', 'ghp_', 'sk-', 'xoxb-', 'password=', 'API_KEY=', 'Bearer ', 'postgres://u:', '-----BEGIN PRIVATE KEY-----\n', '"api_key": "', 'hf_', '12345678:AA'];
  const each = Math.floor(size / heads.length);
  return heads.map((h) => (h + (h.startsWith('-----') ? 'QUFB\n'.repeat(each / 5) : 'a'.repeat(each))).slice(0, each - 1) + '!').join('');
}

function sessionWith(policy: Record<string, unknown>, answerText: string, flows?: MemoryFlowStore) {
  const r = validatePolicyObject(policy);
  if (!r.ok) throw new Error(JSON.stringify(r.issues));
  const engine = new Engine({ policy: new CompiledPolicy(r.policy, r.hash), counters: new MemoryCounterStore() });
  const tail = JSON.stringify({ content: [{ type: 'text', text: answerText }] });
  let sent = '';
  const s: PolicySession = new PolicySession({
    engine, callTimeoutMs: 0,
    identity: { sessionId: 'b', serverName: 'srv', grant: { label: 'bench', tags: [] } },
    log: pino({ level: 'silent' }),
    ...(flows ? { flows: new FlowTracker(flows, pino({ level: 'silent' })) } : {}),
    toClient: (m, raw) => { sent = raw ?? JSON.stringify(m); },
    toServer: (m) => {
      const raw = `{"jsonrpc":"2.0","id":${JSON.stringify(m.id)},"result":${tail}}`;
      s.fromServer(JSON.parse(raw), raw);
    },
  });
  s.fromClient({ jsonrpc: '2.0', id: 'i', method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'bench', version: '1' } } });
  s.fromServer({ jsonrpc: '2.0', id: 'i', result: { protocolVersion: '2025-06-18', capabilities: {}, serverInfo: { name: 's', version: '1' } } });
  let id = 0;
  return {
    /** One call, answered; its wall time in µs. */
    call(): number {
      const start = performance.now();
      s.fromClient({ jsonrpc: '2.0', id: ++id, method: 'tools/call', params: { name: 'read', arguments: { path: '/tmp/x' } } });
      const us = (performance.now() - start) * 1000;
      if (sent.length === 0) throw new Error('no answer');
      return us;
    },
    /** One call, answered; the CPU time this process spent on it, in ms (on a shared machine the wall clock also counts others' turns). */
    cpuMs(): number {
      const start = process.cpuUsage();
      s.fromClient({ jsonrpc: '2.0', id: ++id, method: 'tools/call', params: { name: 'read', arguments: { path: '/tmp/x' } } });
      const used = process.cpuUsage(start);
      return (used.user + used.system) / 1000;
    },
  };
}

const POLICY = { version: '1', default: 'allow', tools: { read: {} } };
const REDACT = { ...POLICY, results: { redact: ['secrets'] } };
/** Redaction and the recommended flows rule on; the tool reads private data and can send it out, so every call reads and writes the agent's touches. */
const FLOWS = { ...REDACT, tools: { read: { flow: ['private', 'egress'] } }, flows: [{ after: ['private', 'untrusted'], then: { egress: 'approve' } }] };

/** p50 of `calls` calls per setup, setups in turns, for `rounds` rounds: the median p50 per setup. */
function interleaved(setups: Record<string, () => number>, calls: number, rounds: number): Record<string, number[]> {
  const p50s: Record<string, number[]> = Object.fromEntries(Object.keys(setups).map((k) => [k, []]));
  for (const f of Object.values(setups)) for (let i = 0; i < Math.min(calls, 200); i++) f();
  for (let r = 0; r < rounds; r++) {
    for (const [name, f] of Object.entries(setups)) {
      const xs: number[] = [];
      for (let i = 0; i < calls; i++) xs.push(f());
      p50s[name].push(median(xs));
    }
  }
  return p50s;
}

export async function benchResults(rounds = Number(process.env.BENCH_ROUNDS ?? 7)): Promise<void> {
  const typical = ordinary(2048);
  const off = sessionWith(POLICY, typical);
  const on = sessionWith(REDACT, typical);
  const touches = new MemoryFlowStore();
  const flowing = sessionWith(FLOWS, typical, touches);
  const small = interleaved({ off: () => off.call(), on: () => on.call(), flows: () => flowing.call() }, 2000, rounds);
  const offP50 = median(small.off);
  const onP50 = median(small.on);
  const flowsP50 = median(small.flows);
  const added = median(small.on.map((x, i) => x - small.off[i]));
  const addedFlows = median(small.flows.map((x, i) => x - small.off[i]));
  if (touches.touched('grant:bench', Date.now()).length !== 2) throw new Error('the flows case recorded no touches: it measured nothing');

  // With no results anywhere, what the hook costs per answer (a lookup that finds nothing to do).
  const loaded = validatePolicyObject(POLICY);
  if (!loaded.ok) throw new Error("invalid bench policy");
  const none = new CompiledPolicy(loaded.policy, loaded.hash);
  const answer = { jsonrpc: '2.0', id: 1, result: { content: [{ type: 'text', text: typical }] } };
  const ctx = () => { throw new Error('not asked'); };
  const hookNs: number[] = [];
  for (let r = 0; r < rounds; r++) {
    const start = performance.now();
    for (let k = 0; k < 100_000; k++) shapeFromServer(none, answer, { method: 'tools/call', tool: 'read' }, ctx);
    hookNs.push(((performance.now() - start) / 100_000) * 1e6);
  }

  const bigOrdinary = sessionWith(REDACT, ordinary(MB));
  const bigCrafted = sessionWith(REDACT, crafted(MB));
  const bigRuns = sessionWith(REDACT, backtracking(MB));
  const bigOff = sessionWith(POLICY, ordinary(MB));
  const big = interleaved({ off: () => bigOff.cpuMs(), ordinary: () => bigOrdinary.cpuMs(), crafted: () => bigCrafted.cpuMs(), runs: () => bigRuns.cpuMs() }, 5, rounds);
  const ordinaryMs = median(big.ordinary);
  const craftedMs = median(big.crafted);
  const runsMs = median(big.runs);
  const offMs = median(big.off);
  const ratio = median(big.crafted.map((c, i) => c / big.ordinary[i]));
  const runsRatio = median(big.runs.map((c, i) => c / big.ordinary[i]));

  console.log(`\nresult policy (a tools/call through an in-process session), medians over ${rounds} rounds:`);
  console.log(`  2 KB result, p50 of a call: off ${fmt(offP50, 1)} µs, redact on ${fmt(onP50, 1)} µs, added ${fmt(added, 1)} µs (budget 20 µs) ${added <= 20 ? 'ok' : 'OVER BUDGET'}`);
  console.log(`  2 KB result, redaction and the flows rule on (tool private+egress, memory store): ${fmt(flowsP50, 1)} µs, added ${fmt(addedFlows, 1)} µs over off (budget 20 µs) ${addedFlows <= 20 ? 'ok' : 'OVER BUDGET'}`);
  console.log(`  results off: the hook costs ${fmt(median(hookNs), 0)} ns per answer (one lookup; nothing else runs)`);
  console.log(`  1 MB result, one call (CPU time): off ${fmt(offMs, 1)} ms, redacted ${fmt(ordinaryMs, 1)} ms (added ${fmt(ordinaryMs - offMs, 1)} ms, budget 20 ms) ${ordinaryMs - offMs <= 20 ? 'ok' : 'OVER BUDGET'}`);
  console.log(`  1 MB of long runs built to make a backtracking matcher explode, redacted: ${fmt(runsMs, 1)} ms, ${fmt(runsRatio, 2)}× the ordinary one (budget: no slower) ${runsRatio <= 1.1 ? 'ok' : 'SLOWER'}`);
  console.log(`  1 MB with every rule's trigger packed to fail late (this detector's own worst case), redacted: ${fmt(craftedMs, 1)} ms, ${fmt(ratio, 2)}× the ordinary one`);
}

if (import.meta.url === `file://${process.argv[1]}`) await benchResults();
