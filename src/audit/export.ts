import type Database from 'better-sqlite3';
import { checkpoint, type Checkpoint } from './retention.js';
import type { AuditRow } from './log.js';

/**
 * Export for a SIEM: JSON lines, oldest first. Each row is printed as stored, with `prev_hash` and
 * `hash` (and `outcome_hash` when its outcome is sealed), so a receiver can recompute every hash
 * and check that each row follows the one before it. When the rows start at a checkpoint (older
 * rows were pruned), a line `{"checkpoint": {id, hash, pruned, at}}` comes first: the hash the
 * next row must follow.
 */
export interface ExportOptions {
  /** Rows with a greater id than this. */
  after: number;
  /** Writes text; resolves once it is written (stdout took it). */
  write: (text: string) => Promise<void>;
  /** Told after each page is written: the last row's id (a cursor advances here, never before). */
  written?: (lastId: number) => void;
  /** Rows per page (one write). */
  page?: number;
}

export interface ExportResult {
  rows: number;
  lastId: number;
  /** Set when rows after `after` had already been pruned: the export starts at this checkpoint. */
  gap?: Checkpoint;
}

export function checkpointLine(cp: Checkpoint): string {
  return JSON.stringify({ checkpoint: cp }) + '\n';
}

/** Writes every row after `after` now in the file; call again (with the returned lastId) to follow. */
export async function exportRows(db: Database.Database, opts: ExportOptions): Promise<ExportResult> {
  const page = opts.page ?? 1000;
  const select = db.prepare<[number, number], AuditRow>('SELECT * FROM audit WHERE id > ? ORDER BY id LIMIT ?');
  let lastId = opts.after;
  let rows = 0;
  let gap: Checkpoint | undefined;
  for (;;) {
    // Read in the same snapshot as the page: a prune (without a cursor) can pass this export
    // between two pages, and then the page starts at its checkpoint.
    const [cp, batch] = db.transaction(() => [checkpoint(db), select.all(lastId, page)] as const)();
    if (cp && lastId < cp.id) {
      if (lastId > opts.after || opts.after > 0) gap ??= cp;
      await opts.write(checkpointLine(cp));
      lastId = cp.id;
      opts.written?.(lastId);
      continue;
    }
    if (batch.length === 0) break;
    let text = '';
    for (const r of batch) text += JSON.stringify(r) + '\n';
    await opts.write(text);
    lastId = batch[batch.length - 1].id;
    rows += batch.length;
    opts.written?.(lastId);
  }
  return { rows, lastId, gap };
}
