// `toolgate serve` in front of pools of the pool fixture server (test/fixtures/pool-server.mjs), for the
// pool e2e tests: one gateway, two grants per server, real SDK v2 clients, and what the server recorded.
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pino } from 'pino';
import type { Client } from '@modelcontextprotocol/client';
import { AuditLog } from '../../src/audit/index.js';
import { GatewayConfigSchema } from '../../src/config/gateway.js';
import { Gateway } from '../../src/gateway/server.js';
import { Grants } from '../../src/grants/grants.js';
import { openSqliteState } from '../../src/state/sqlite.js';
import { modernHttp } from './modern.js';
import { FIXTURES, tempDir, writePolicy } from './toolgate.js';

const SERVER = join(FIXTURES, 'pool-server.mjs');

/** One event the fixture server recorded (its pid, what it saw). */
export interface PoolEvent { pid: number; event: string; tool?: string; tag?: string | null; answer?: any; error?: any }

export interface PoolServe {
  gateway: Gateway;
  audit: AuditLog;
  /** Everything the named server's processes recorded, in order. */
  events(server: string): PoolEvent[];
  /** The call with this tag as it reached the server. */
  callOf(server: string, tag: string): PoolEvent | undefined;
  /** Lets the server answer the held call with this tag. */
  release(tag: string): void;
  /** A client pinned to 2026-07-28 with the named server's grant `one` or `two`. */
  modern(server: string, grant?: 'one' | 'two'): Promise<Client>;
  /** A metric's value for the labels given (0 when it has none yet). */
  metric(name: string, labels: Record<string, string>): Promise<number>;
  close(): Promise<void>;
}

/**
 * Starts the gateway with one server per pool config, each allowing everything unless `policies`
 * names another policy object for it.
 */
export async function startPoolServe(pools: Record<string, object>, policies: Record<string, object> = {}): Promise<PoolServe> {
  const dir = tempDir();
  const allowAll = writePolicy(dir, { version: '1', default: 'allow' });
  const servers = Object.fromEntries(Object.entries(pools).map(([name, pool]) => [name, {
    command: process.execPath, args: [SERVER], protocol: 'legacy', pool,
    policy: policies[name] ? writePolicy(dir, policies[name], `${name}.policy.json`) : allowAll,
    env: { RECORD_FILE: join(dir, `${name}.jsonl`), RELEASE_DIR: dir },
  }]));
  const config = GatewayConfigSchema.parse({ listen: '127.0.0.1:0', servers });
  const state = openSqliteState(join(dir, 'state.db'));
  const audit = new AuditLog(join(dir, 'audit.db'));
  const gateway = new Gateway({ config, state, audit, log: pino({ level: 'silent' }) });
  const base = `http://127.0.0.1:${(await gateway.start()).port}`;
  const grants = new Grants(state.grants);
  const tokens: Record<string, string> = {};
  for (const server of Object.keys(pools)) for (const label of ['one', 'two']) tokens[`${server}-${label}`] = (await grants.create({ server, label: `${server}-${label}` })).token;
  const clients: Client[] = [];

  const events = (server: string): PoolEvent[] => {
    const file = join(dir, `${server}.jsonl`);
    return existsSync(file) ? readFileSync(file, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l)) : [];
  };
  return {
    gateway,
    audit,
    events,
    callOf: (server, tag) => events(server).find((e) => e.event === 'call' && e.tag === tag),
    release: (tag) => writeFileSync(join(dir, tag), ''),
    async modern(server, grant = 'one') {
      const c = await modernHttp('pinned', `${base}/mcp/${server}`, tokens[`${server}-${grant}`]);
      clients.push(c);
      return c;
    },
    async metric(name, labels) {
      const m = await gateway.metrics.registry.getSingleMetric(name)!.get();
      return m.values.find((v) => Object.entries(labels).every(([k, x]) => v.labels[k] === x))?.value ?? 0;
    },
    async close() {
      for (const c of clients) await c.close().catch(() => undefined);
      await gateway.stop();
      audit.close();
      await state.close();
    },
  };
}
