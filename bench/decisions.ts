import { join } from 'node:path';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { CompiledPolicy, Engine, type CallContext } from '../src/engine/index.js';
import { validatePolicyObject } from '../src/policy/index.js';
import { openMemoryState } from '../src/state/memory.js';
import { openRedisState } from '../src/state/redis.js';
import { openSqliteState } from '../src/state/sqlite.js';
import type { StateStore } from '../src/state/types.js';
import { TestRedis } from '../test/helpers/redis.js';
import { fmt, median } from './stats.js';

/** A 1,000-tool policy: every entry has a require, a deny_if and a limit; all_tools adds one more limit. */
export function bigPolicy(tools = 1000): CompiledPolicy {
  const entries: Record<string, unknown> = {};
  for (let i = 0; i < tools; i++) {
    entries[`tool_${i}`] = {
      require: [{ conditions: [{ path: 'args.path', op: 'starts_with', value: '/srv/' }] }],
      deny_if: [{ conditions: [{ path: 'args.amount', op: 'gt', value: 10_000 }, { path: 'grant.tags', op: 'contains', value: 'intern' }] }],
      limits: [{ counter: `tool_${i}_rate`, window: 'minute', max: 1e12, scope: 'grant' }],
    };
  }
  entries['admin_*'] = { action: 'deny' };
  const r = validatePolicyObject({
    version: '1', default: 'deny', hide: ['delete_*'],
    all_tools: { limits: [{ counter: 'calls', window: 'minute', max: 1e12, scope: 'grant' }] },
    tools: entries,
  });
  if (!r.ok) throw new Error(JSON.stringify(r.issues[0]));
  return new CompiledPolicy(r.policy, r.hash);
}

function contexts(): CallContext[] {
  return Array.from({ length: 64 }, (_, i) => ({
    tool: `tool_${(i * 37) % 1000}`,
    args: { path: `/srv/data/${i}.txt`, amount: i * 10 },
    grant: { label: `agent-${i % 4}`, tags: ['prod'] },
    session: { id: `s${i % 8}`, client: 'bench' },
    server: { name: 'bench' },
    now: Date.now(),
  }));
}

async function rate(state: StateStore, policy: CompiledPolicy, n: number): Promise<number> {
  const engine = new Engine({ policy, counters: state.counters, flags: state.flags });
  const ctxs = contexts();
  const start = process.hrtime.bigint();
  for (let i = 0; i < n; i++) {
    // A new event-loop turn every 16 decisions, as a gateway under load sees: the SQLite store
    // reads the file's data_version (for the kill switch) once per turn.
    if ((i & 15) === 0) await new Promise((r) => setImmediate(r));
    const d = await engine.decide(ctxs[i & 63]);
    if (d.verdict !== 'allow') throw new Error(`unexpected ${d.rule}`);
  }
  return n / (Number(process.hrtime.bigint() - start) / 1e9);
}

/** Decisions/s with `callers` deciding concurrently, each waiting for its answer before the next (a remote store's round trips overlap). */
async function concurrentRate(state: StateStore, policy: CompiledPolicy, n: number, callers: number): Promise<number> {
  const engine = new Engine({ policy, counters: state.counters, flags: state.flags });
  const ctxs = contexts();
  let next = 0;
  const caller = async () => {
    while (next < n) {
      const d = await engine.decide(ctxs[next++ & 63]);
      if (d.verdict !== 'allow') throw new Error(`unexpected ${d.rule}: ${d.message}`);
    }
  };
  const start = process.hrtime.bigint();
  await Promise.all(Array.from({ length: callers }, caller));
  return n / (Number(process.hrtime.bigint() - start) / 1e9);
}

/** Microseconds of one decision alone (no other caller), median of `n`. */
async function oneDecisionUs(state: StateStore, policy: CompiledPolicy, n: number): Promise<number> {
  const engine = new Engine({ policy, counters: state.counters, flags: state.flags });
  const ctxs = contexts();
  const times: number[] = [];
  for (let i = 0; i < n; i++) {
    const t = process.hrtime.bigint();
    await engine.decide(ctxs[i & 63]);
    times.push(Number(process.hrtime.bigint() - t) / 1000);
  }
  return median(times);
}

export async function benchDecisions(runs = 5): Promise<{ memory: number; sqlite: number; redis: number; redisP50Us: number }> {
  const policy = bigPolicy();
  const memory: number[] = [];
  const sqlite: number[] = [];
  const redisRates: number[] = [];
  const redisP50: number[] = [];
  const redis = await TestRedis.start();
  for (let r = 0; r < runs; r++) {
    const mem = openMemoryState();
    memory.push(await rate(mem, policy, 300_000));
    const file = join(mkdtempSync(join(tmpdir(), 'tg-bench-')), 'state.db');
    const sq = openSqliteState(file);
    sqlite.push(await rate(sq, policy, 40_000));
    await sq.close();
    const rd = openRedisState(`${redis.url}/0?prefix=bench${r}`);
    await rd.link.ready();
    await oneDecisionUs(rd, policy, 500); // warm-up: connection, script load, kill-switch copy
    redisRates.push(await concurrentRate(rd, policy, 40_000, 8));
    redisP50.push(await oneDecisionUs(rd, policy, 2000));
    await rd.close();
  }
  await redis.stop();
  const result = { memory: median(memory), sqlite: median(sqlite), redis: median(redisRates), redisP50Us: median(redisP50) };
  console.log(`decisions/s, 1,000-tool policy (require + deny_if + 2 limits per call, kill switch checked, a new event-loop turn every 16), median of ${runs}:`);
  console.log(`  memory store : ${fmt(result.memory)}  (target >= 500,000)`);
  console.log(`  sqlite store : ${fmt(result.sqlite)}  (target >= 50,000)`);
  console.log(`  redis store  : ${fmt(result.redis)}  with 8 concurrent callers, local redis-server (target >= 20,000); one decision alone p50 ${fmt(result.redisP50Us)} µs`);
  return result;
}

if (import.meta.url === `file://${process.argv[1]}`) await benchDecisions();
