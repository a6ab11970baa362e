import type Database from 'better-sqlite3';
import { GENESIS, outcomeHash, rowHash } from './chain.js';
import { checkpoint, parsePruneRule } from './retention.js';
import type { AuditRow } from './log.js';

export interface VerifyResult {
  ok: boolean;
  /** Rows checked (those still in the file). */
  rows: number;
  /** Rows removed by retention before the checkpoint that verification started from. */
  pruned?: number;
  problem?: string;
  badId?: number;
}

/**
 * Walks the hash chain from the checkpoint (or from the start): each row must follow the one
 * before it and hash to its own hash, a sealed outcome must match its seal, the last row must be
 * the log's head, and a checkpoint must be one a prune row still in the chain allowed (its `rule`
 * names the last row it may remove and that row's hash).
 */
export function verifyChain(db: Database.Database): VerifyResult {
  const cp = checkpoint(db);
  const extra = cp ? { pruned: cp.pruned } : {};
  let prev = cp?.hash ?? GENESIS;
  let rows = 0;
  let lastId = cp?.id ?? 0;
  let allowed = false;
  for (const row of db.prepare('SELECT * FROM audit ORDER BY id').iterate() as IterableIterator<AuditRow>) {
    rows++;
    const bad = (problem: string): VerifyResult => ({ ok: false, rows, ...extra, badId: row.id, problem });
    if (row.id <= lastId) return bad(`row ${row.id} is older than the checkpoint (row ${cp!.id}) yet still present`);
    if (row.prev_hash !== prev) {
      return bad(rows === 1 && cp ? `row ${row.id} does not follow the checkpoint (row ${cp.id}): a row after it was deleted or the checkpoint was changed`
        : rows === 1 && row.id !== 1 ? `row ${row.id} does not follow the start of the log (rows before it were deleted, or the checkpoint was)`
        : `row ${row.id} does not follow the row before it (a row was deleted or inserted)`);
    }
    if (rowHash(prev, row as unknown as Record<string, unknown>) !== row.hash) return bad(`row ${row.id} was edited`);
    if (row.outcome !== null && row.outcome_hash !== outcomeHash(row.hash, row.outcome, row.latency_ms)) return bad(`the outcome of row ${row.id} was edited`);
    if (cp && row.kind === 'prune') {
      const through = parsePruneRule(row.rule);
      if (through && (through.id > cp.id || (through.id === cp.id && through.hash === cp.hash))) allowed = true;
    }
    prev = row.hash;
    lastId = row.id;
  }
  if (cp && !allowed) return { ok: false, rows, ...extra, badId: cp.id, problem: `the checkpoint (row ${cp.id}) is not one a prune in the log allowed` };
  const head = db.prepare<[], { id: number; hash: string }>('SELECT id, hash FROM audit_head WHERE one = 1').get();
  if (head && (head.id !== lastId || head.hash !== prev)) return { ok: false, rows, ...extra, badId: head.id, problem: `rows after ${lastId} were deleted (the log's head is row ${head.id})` };
  return { ok: true, rows, ...extra };
}
