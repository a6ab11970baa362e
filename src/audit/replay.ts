import { CompiledPolicy, Engine } from '../engine/index.js';
import type { Policy } from '../policy/schema.js';
import { MemoryCounterStore } from '../state/memory.js';
import type { AuditRow } from './log.js';

export interface ReplayChange {
  id: number;
  ts: string;
  server: string | null;
  grant: string | null;
  tool: string;
  before: { decision: string; rule: string | null };
  after: { decision: string; rule: string; message?: string };
  /** False when the row kept only argument keys: conditions on argument values saw nothing. */
  argsKnown: boolean;
}

/** The decision a past row records, as allow or deny (a shadow_deny is what the policy decided). */
function recorded(row: AuditRow): string {
  return row.decision === 'shadow_deny' ? 'deny' : row.decision ?? 'unknown';
}

/**
 * Decides past calls again under a new policy, in their original order and at their original
 * times (so limits count as they would have), and returns the ones decided differently.
 */
export async function replay(rows: readonly AuditRow[], policy: Policy, hash: string): Promise<ReplayChange[]> {
  const engine = new Engine({ policy: new CompiledPolicy(policy, hash), counters: new MemoryCounterStore() });
  const changes: ReplayChange[] = [];
  for (const row of rows) {
    if (row.kind !== 'call' || !row.tool || (row.decision !== 'allow' && row.decision !== 'deny' && row.decision !== 'shadow_deny')) continue;
    let args: Record<string, unknown> = {};
    const argsKnown = row.args !== null;
    if (argsKnown) {
      try { args = JSON.parse(row.args!) as Record<string, unknown>; } catch { args = {}; }
    }
    const d = await engine.decide({
      tool: row.tool, args, grant: { label: row.grant_label ?? 'anonymous', tags: [] },
      session: { id: row.session ?? 'replay', client: row.client ?? undefined }, server: { name: row.server ?? 'server' }, now: Date.parse(row.ts),
    });
    const after = d.verdict === 'allow' ? 'allow' : d.verdict === 'approve' ? 'approve' : 'deny';
    if (after !== recorded(row)) {
      changes.push({ id: row.id, ts: row.ts, server: row.server, grant: row.grant_label, tool: row.tool, before: { decision: recorded(row), rule: row.rule }, after: { decision: after, rule: d.rule, message: d.message }, argsKnown });
    }
  }
  return changes;
}
