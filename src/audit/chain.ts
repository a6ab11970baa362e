import { unlinkSync } from 'node:fs';
import type Database from 'better-sqlite3';
import { canonicalJson, sha256 } from '../policy/load.js';
import { maskSecrets } from './mask.js';
import { createRetentionTables } from './retention.js';

/**
 * One journal line: the row's fields in a fixed order (a short array is cheaper to write than an
 * object): event_id, ts, instance, kind, server, grant_label, session, client, tool, decision,
 * rule, message, arg_keys, policy_hash.
 */
export type JournalEntry = (string | null)[];

export interface Outcome { eventId: string; outcome: string; latency: number | null }

/** Rows and outcomes to write in one transaction; `journal` is the file that holds the rows until then. */
export interface Batch {
  entries: JournalEntry[];
  /** Per entry: the call's arguments, hashed here (off the call's path), and whether to store their values. */
  args: (Record<string, unknown> | undefined)[];
  storeArgValues: boolean[];
  /** Per entry: its outcome will follow (a forwarded call), so its hash is worth remembering. */
  awaiting: boolean[];
  outcomes: Outcome[];
  journal?: string;
}

/** Row hashes remembered for outcomes still to come; beyond this the oldest are looked up again in the database. */
const REMEMBERED_MAX = 4096;

export const GENESIS = '0'.repeat(64);
const HASHED_FIELDS = ['ts', 'instance', 'kind', 'server', 'grant_label', 'session', 'client', 'tool', 'decision', 'rule', 'message', 'arg_keys', 'args_sha256', 'args', 'policy_hash'] as const;

/** SHA-256 over the previous row's hash and this row's fields, in a fixed order. */
export function rowHash(prev: string, row: Record<string, unknown>): string {
  return sha256(prev + '\n' + JSON.stringify(HASHED_FIELDS.map((f) => row[f] ?? null)));
}

export function outcomeHash(hash: string, outcome: string, latency: number | null): string {
  return sha256(`${hash}\n${outcome}\n${latency ?? ''}`);
}

/** The hash of a row still in its journal form (`rowHash` of the row it becomes), without making the row. */
function entryHash(prev: string, e: JournalEntry, argsSha: string | null, args: string | null): string {
  return sha256(prev + '\n' + JSON.stringify([
    e[1] ?? null, e[2] ?? null, e[3] ?? null, e[4] ?? null, e[5] ?? null, e[6] ?? null, e[7] ?? null,
    e[8] ?? null, e[9] ?? null, e[10] ?? null, e[11] ?? null, e[12] ?? null, argsSha, args, e[13] ?? null,
  ]));
}

export function createAuditTables(db: Database.Database): void {
  db.exec(`
    CREATE TABLE IF NOT EXISTS audit (
      id INTEGER PRIMARY KEY, event_id TEXT NOT NULL UNIQUE, ts TEXT NOT NULL, instance TEXT NOT NULL, kind TEXT NOT NULL,
      server TEXT, grant_label TEXT, session TEXT, client TEXT, tool TEXT, decision TEXT, rule TEXT,
      message TEXT, arg_keys TEXT, args_sha256 TEXT, args TEXT, policy_hash TEXT,
      prev_hash TEXT NOT NULL, hash TEXT NOT NULL, outcome TEXT, latency_ms REAL, outcome_hash TEXT);
    CREATE INDEX IF NOT EXISTS audit_ts ON audit (ts);
    CREATE INDEX IF NOT EXISTS audit_lifecycle ON audit (instance, kind, ts) WHERE kind IN ('start', 'stop');
    CREATE TABLE IF NOT EXISTS audit_head (one INTEGER PRIMARY KEY CHECK (one = 1), id INTEGER NOT NULL, hash TEXT NOT NULL);`);
  createRetentionTables(db);
}

/**
 * Extends the hash chain by a batch: one IMMEDIATE transaction (the chain's tail is read and
 * extended under the write lock, so several processes appending to one file still make one
 * unbroken chain). New rows carry their outcome when it is already known, the usual case; outcomes
 * of rows from earlier batches are sealed onto them. The batch's journal goes once it is stored.
 */
export class ChainWriter {
  private readonly run: (batch: Batch, argsSha: (string | null)[], argValues: (string | null)[]) => void;
  /**
   * Row hashes of forwarded calls whose outcome has not arrived yet, oldest first, at most
   * REMEMBERED_MAX (a denial has no outcome to wait for, so it is never here).
   */
  private readonly hashes = new Map<string, string>();

  constructor(db: Database.Database) {
    createAuditTables(db);
    const last = db.prepare<[], { hash: string }>('SELECT hash FROM audit_head WHERE one = 1');
    // Positional parameters: a journal entry's fields, with the arguments' hash and values before policy_hash.
    const insert = db.prepare(`INSERT OR IGNORE INTO audit (event_id, ts, instance, kind, server, grant_label, session, client, tool, decision, rule, message, arg_keys, args_sha256, args, policy_hash, prev_hash, hash, outcome, latency_ms, outcome_hash)
      VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`);
    const head = db.prepare('INSERT INTO audit_head (one, id, hash) VALUES (1, ?, ?) ON CONFLICT (one) DO UPDATE SET id = excluded.id, hash = excluded.hash');
    const finish = db.prepare('UPDATE audit SET outcome = ?, latency_ms = ?, outcome_hash = ? WHERE event_id = ?');
    const hashOf = db.prepare<[string], { hash: string }>('SELECT hash FROM audit WHERE event_id = ?');
    this.run = db.transaction((batch: Batch, argsSha: (string | null)[], argValues: (string | null)[]) => {
      const known = new Map(batch.outcomes.map((o) => [o.eventId, o]));
      let prev = last.get()?.hash ?? GENESIS;
      let lastId = 0;
      for (let i = 0; i < batch.entries.length; i++) {
        const e = batch.entries[i];
        const eventId = e[0]!;
        const hash = entryHash(prev, e, argsSha[i], argValues[i]);
        const o = known.get(eventId);
        if (o) known.delete(eventId);
        const info = insert.run(
          eventId, e[1] ?? null, e[2] ?? null, e[3] ?? null, e[4] ?? null, e[5] ?? null, e[6] ?? null, e[7] ?? null, e[8] ?? null,
          e[9] ?? null, e[10] ?? null, e[11] ?? null, e[12] ?? null, argsSha[i], argValues[i], e[13] ?? null,
          prev, hash, o?.outcome ?? null, o?.latency ?? null, o ? outcomeHash(hash, o.outcome, o.latency) : null,
        );
        if (info.changes === 0) continue; // replayed from a journal, already stored
        lastId = Number(info.lastInsertRowid);
        if (!o && batch.awaiting[i]) this.remember(eventId, hash);
        prev = hash;
      }
      if (lastId) head.run(lastId, prev);
      for (const o of known.values()) {
        const hash = this.hashes.get(o.eventId) ?? hashOf.get(o.eventId)?.hash;
        this.hashes.delete(o.eventId);
        if (hash) finish.run(o.outcome, o.latency, outcomeHash(hash, o.outcome, o.latency), o.eventId);
      }
    }).immediate;
  }

  private remember(eventId: string, hash: string): void {
    if (this.hashes.size >= REMEMBERED_MAX) this.hashes.delete(this.hashes.keys().next().value!);
    this.hashes.set(eventId, hash);
  }

  /** How many outcomes this writer is waiting for (a test hook: it must stay bounded). */
  get awaitingOutcomes(): number {
    return this.hashes.size;
  }

  write(batch: Batch): void {
    const argsSha: (string | null)[] = new Array(batch.entries.length).fill(null);
    const argValues: (string | null)[] = new Array(batch.entries.length).fill(null);
    for (let i = 0; i < batch.entries.length; i++) {
      const args = batch.args[i];
      if (!args) continue;
      argsSha[i] = sha256(canonicalJson(args));
      if (batch.storeArgValues[i]) argValues[i] = JSON.stringify(maskSecrets(args));
    }
    this.run(batch, argsSha, argValues);
    if (batch.journal) {
      try { unlinkSync(batch.journal); } catch (err) { if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err; /* collected by another toolgate */ }
    }
  }
}
