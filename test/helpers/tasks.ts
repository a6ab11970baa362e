import { pino } from 'pino';
import type { AuditEvent, AuditLog } from '../../src/audit/index.js';
import type { Approvals } from '../../src/approvals/index.js';
import { CompiledPolicy, Engine } from '../../src/engine/index.js';
import { validatePolicyObject } from '../../src/policy/index.js';
import type { Json } from '../../src/proxy/messages.js';
import { PolicySession } from '../../src/proxy/session.js';
import { MemoryCounterStore, MemoryOAuthStore } from '../../src/state/memory.js';
import type { Charge } from '../../src/state/types.js';
import type { TaskStore } from '../../src/tasks/records.js';

/** Counters that remember every reservation asked of them. */
export class CountingCounters extends MemoryCounterStore {
  reservations = 0;
  override reserve(charges: readonly Charge[], now: number): number {
    this.reservations++;
    return super.reserve(charges, now);
  }
}

/** The rows and outcomes a session records. */
export class Rows {
  rows: (AuditEvent & { eventId: string; outcomes: string[] })[] = [];
  readonly log: AuditLog;
  constructor(file = 'audit.db') {
    this.log = this.logAt(file);
  }
  private logAt(file: string): AuditLog {
    return {
      file,
      append: (e: AuditEvent) => {
        const eventId = `e${this.rows.length}`;
        this.rows.push({ ...e, eventId, outcomes: [] });
        return { eventId };
      },
      finish: (ref: { eventId: string }, outcome: string) => {
        this.rows.find((r) => r.eventId === ref.eventId)!.outcomes.push(outcome);
      },
    } as unknown as AuditLog;
  }
}

export const POLICY = {
  version: '1',
  tools: {
    research: { limits: [{ counter: 'research', window: 'day', max: 10, scope: 'grant' }], deny_if: [{ conditions: [{ path: 'args.depth', op: 'gt', value: 3 }], on_deny: 'Too deep.' }] },
  },
};

/** Sessions of several grants over one state store, each with its own upstream (a list of what reached it). */
export function world(policy: Json = POLICY, approvals?: Approvals) {
  const r = validatePolicyObject(policy);
  if (!r.ok) throw new Error(JSON.stringify(r.issues));
  const counters = new CountingCounters();
  const engine = new Engine({ policy: new CompiledPolicy(r.policy, r.hash), counters });
  const tasks = new MemoryOAuthStore();
  const rows = new Rows();
  const open = (grant: string, { era, audit = rows, store = tasks }: { era?: 'modern'; audit?: Rows; store?: TaskStore } = {}) => {
    const toClient: Json[] = [];
    const toServer: Json[] = [];
    const s = new PolicySession({
      engine, tasks: store, audit: audit.log, clientEra: era, approvals,
      identity: { sessionId: `s-${grant}`, serverName: 'everything', grant: { id: `id-${grant}`, label: grant, tags: [] } },
      log: pino({ level: 'silent' }),
      toClient: (m) => toClient.push(m),
      toServer: (m) => toServer.push(m),
    });
    s.fromClient({ jsonrpc: '2.0', id: 'init', method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'c', version: '1' } } });
    s.fromServer({ jsonrpc: '2.0', id: 'init', result: { protocolVersion: '2025-11-25', capabilities: { tasks: { list: {}, cancel: {}, requests: { tools: { call: {} } } } }, serverInfo: { name: 'u', version: '1' } } });
    toClient.length = 0;
    toServer.length = 0;
    /** The answer the client got to request `id`, once it came. */
    const answer = async (id: unknown) => {
      for (let i = 0; i < 50; i++) {
        const found = toClient.find((m) => m.id === id);
        if (found) return found;
        await new Promise((res) => setImmediate(res));
      }
      throw new Error(`no answer to ${String(id)}: ${JSON.stringify(toClient)}`);
    };
    return { s, toClient, toServer, answer };
  };
  return { open, counters, rows };
}

/** Lets the lookups under way (a memory store's, a few turns) finish. */
export async function ticks(n = 10): Promise<void> {
  for (let i = 0; i < n; i++) await new Promise((res) => setImmediate(res));
}

export const TASK = { taskId: 'task-1', status: 'working', ttl: 60_000, createdAt: '2026-12-02T00:00:00Z', lastUpdatedAt: '2026-12-02T00:00:00Z' };
