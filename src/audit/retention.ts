import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import type Database from 'better-sqlite3';
import { ChainWriter, type JournalEntry } from './chain.js';

/**
 * Retention: the oldest rows of the audit log go, the rest stays provable.
 *
 * A prune first appends its own row to the chain (kind `prune`, rule `through:ID:HASH`: the last
 * row it may remove and that row's hash), then deletes the rows up to that one, oldest first, in
 * small transactions (a gateway writing the same file waits for one batch at most). Every batch
 * moves the checkpoint in the same transaction: the id and hash of the last row removed and how
 * many rows were removed in all, so the chain verifies from the checkpoint at every moment.
 * Verification also holds the checkpoint to a prune row still in the chain, so the checkpoint
 * cannot be moved past what a prune authorised without the edit showing.
 *
 * Export cursors (by name, in the same file) hold a prune back: no row a cursor has not passed
 * is removed.
 */

export interface Checkpoint { id: number; hash: string; pruned: number; at: string }
export interface Cursor { name: string; id: number; at: string }

export function createRetentionTables(db: Database.Database): void {
  db.exec(`
    CREATE TABLE IF NOT EXISTS audit_checkpoint (one INTEGER PRIMARY KEY CHECK (one = 1), id INTEGER NOT NULL, hash TEXT NOT NULL, pruned INTEGER NOT NULL, at TEXT NOT NULL);
    CREATE TABLE IF NOT EXISTS audit_cursor (name TEXT PRIMARY KEY, id INTEGER NOT NULL, at TEXT NOT NULL);`);
}

export function checkpoint(db: Database.Database): Checkpoint | undefined {
  return db.prepare<[], Checkpoint>('SELECT id, hash, pruned, at FROM audit_checkpoint WHERE one = 1').get();
}

export function cursors(db: Database.Database): Cursor[] {
  return db.prepare<[], Cursor>('SELECT name, id, at FROM audit_cursor ORDER BY name').all();
}

/** The cursor's position, registering it (at the checkpoint: nothing exported yet) when it is new. */
export function openCursor(db: Database.Database, name: string): number {
  db.prepare('INSERT INTO audit_cursor (name, id, at) VALUES (?, ?, ?) ON CONFLICT (name) DO NOTHING').run(name, checkpoint(db)?.id ?? 0, new Date().toISOString());
  return db.prepare<[string], { id: number }>('SELECT id FROM audit_cursor WHERE name = ?').get(name)!.id;
}

/** Moves a cursor forward (never back: two exporters on one name cannot undo each other's progress). */
export function advanceCursor(db: Database.Database, name: string, id: number): void {
  db.prepare('UPDATE audit_cursor SET id = max(id, ?), at = ? WHERE name = ?').run(id, new Date().toISOString(), name);
}

export function dropCursor(db: Database.Database, name: string): boolean {
  return db.prepare('DELETE FROM audit_cursor WHERE name = ?').run(name).changes === 1;
}

/** `rule` of a prune row: the last row it may remove, and that row's hash. */
export function pruneRule(id: number, hash: string): string {
  return `through:${id}:${hash}`;
}

export function parsePruneRule(rule: string | null): { id: number; hash: string } | undefined {
  const m = /^through:(\d+):([0-9a-f]{64})$/.exec(rule ?? '');
  return m ? { id: Number(m[1]), hash: m[2] } : undefined;
}

/** Whether the file gives freed pages back (auto_vacuum = INCREMENTAL). */
export function incremental(db: Database.Database): boolean {
  return db.pragma('auto_vacuum', { simple: true }) === 2;
}

/**
 * Makes an existing file give space back from now on: auto_vacuum can only change with a VACUUM,
 * which rewrites the whole file while every writer waits (a gateway's audit batches wait up to
 * their busy timeout), so this is done when the operator asks (`prune --vacuum`).
 */
export function convertToIncremental(db: Database.Database): void {
  if (incremental(db)) return;
  db.pragma('auto_vacuum = INCREMENTAL');
  db.exec('VACUUM');
}

export interface PruneOptions {
  /** Rows written before this time (ISO) go. */
  before: string;
  /** Rows per transaction. */
  batch?: number;
  /** Between two transactions, so that a gateway writing the same file gets its turn. */
  pause?: () => Promise<void>;
  /** Who prunes, for the prune's own row. */
  instance?: string;
  /** Why, for the prune's own row (e.g. "retain 90d" or "toolgate audit prune"). */
  by?: string;
  /** Asked between transactions: true ends the prune there (the checkpoint is where the last batch left it). */
  stopping?: () => boolean;
}

export interface PruneResult {
  /** Rows removed by this prune. */
  removed: number;
  /** The checkpoint after it (none when nothing was ever pruned). */
  checkpoint?: Checkpoint;
  /** The cursor that stopped the prune short of `before`, if one did. */
  heldBy?: Cursor;
  /** Pages given back to the file system (0 unless the file is INCREMENTAL). */
  freedPages: number;
  incremental: boolean;
}

const wait = () => new Promise<void>((resolve) => setTimeout(resolve, 5));

/** Removes rows older than `before` (not past any export cursor), batch by batch; see the top of this file. */
export async function pruneAudit(db: Database.Database, opts: PruneOptions): Promise<PruneResult> {
  const writer = new ChainWriter(db);
  createRetentionTables(db);
  const batch = opts.batch ?? 2000;
  const pause = opts.pause ?? wait;
  const isIncremental = incremental(db);
  // The cut: the rows before the first one as new as `before` (a prefix, so the rest is one chain),
  // and no further than the slowest cursor.
  const plan = db.transaction(() => {
    const cp = checkpoint(db);
    const firstNew = db.prepare<[string], { id: number | null }>('SELECT min(id) AS id FROM audit WHERE ts >= ?').get(opts.before)!.id;
    const last = db.prepare<[], { id: number | null }>('SELECT max(id) AS id FROM audit').get()!.id ?? 0;
    let through = firstNew === null ? last : firstNew - 1;
    let heldBy: Cursor | undefined;
    for (const c of cursors(db)) {
      if (c.id < through) { through = c.id; heldBy = c; }
    }
    const row = db.prepare<[number], { id: number; hash: string }>('SELECT id, hash FROM audit WHERE id <= ? ORDER BY id DESC LIMIT 1').get(through);
    if (!row || row.id <= (cp?.id ?? 0)) return { heldBy };
    const count = db.prepare<[number, number], { n: number }>('SELECT count(*) AS n FROM audit WHERE id > ? AND id <= ?').get(cp?.id ?? 0, row.id)!.n;
    const entry: JournalEntry = [
      `prune-${randomUUID()}`, new Date().toISOString(), opts.instance ?? `${hostname()}:${process.pid}`, 'prune', null, null, null, null, null, null,
      pruneRule(row.id, row.hash), `${opts.by ?? 'prune'}: removing ${count} rows written before ${opts.before} (through row ${row.id})`, null, null,
    ];
    writer.write({ entries: [entry], args: [], storeArgValues: [], awaiting: [], outcomes: [] });
    return { through: row.id, heldBy };
  }).immediate;
  const { through, heldBy } = plan();
  let removed = 0;
  let freedPages = 0;
  if (through !== undefined) {
    const nth = db.prepare<[number, number, number], { id: number; hash: string }>('SELECT id, hash FROM audit WHERE id > ? AND id <= ? ORDER BY id LIMIT 1 OFFSET ?');
    const lastOf = db.prepare<[number, number], { id: number; hash: string }>('SELECT id, hash FROM audit WHERE id > ? AND id <= ? ORDER BY id DESC LIMIT 1');
    const del = db.prepare('DELETE FROM audit WHERE id > ? AND id <= ?');
    const move = db.prepare('INSERT INTO audit_checkpoint (one, id, hash, pruned, at) VALUES (1, ?, ?, ?, ?) ON CONFLICT (one) DO UPDATE SET id = excluded.id, hash = excluded.hash, pruned = audit_checkpoint.pruned + excluded.pruned, at = excluded.at');
    const step = db.transaction(() => {
      const from = checkpoint(db)?.id ?? 0;
      const end = nth.get(from, through, batch - 1) ?? lastOf.get(from, through);
      if (!end) return 0;
      const n = del.run(from, end.id).changes;
      move.run(end.id, end.hash, n, new Date().toISOString());
      return n;
    }).immediate;
    for (;;) {
      const n = step();
      if (n === 0) break;
      removed += n;
      if (isIncremental) freedPages += vacuumSome(db, Math.ceil(n / 4));
      if (opts.stopping?.()) break;
      await pause();
    }
    if (isIncremental) {
      for (let freed = vacuumSome(db, 1000); freed > 0 && !opts.stopping?.(); freed = vacuumSome(db, 1000)) { freedPages += freed; await pause(); }
    }
    // The WAL holds the freed pages' last frames; a checkpoint lets the file itself shrink.
    try { db.pragma('wal_checkpoint(PASSIVE)'); } catch { /* a busy writer checkpoints later */ }
  }
  return { removed, checkpoint: checkpoint(db), heldBy, freedPages, incremental: isIncremental };
}

/** Gives up to `pages` free pages back to the file system; how many it gave. */
function vacuumSome(db: Database.Database, pages: number): number {
  const before = db.pragma('freelist_count', { simple: true }) as number;
  if (before === 0) return 0;
  db.pragma(`incremental_vacuum(${Math.max(1, pages)})`);
  return before - (db.pragma('freelist_count', { simple: true }) as number);
}
