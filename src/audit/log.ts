import { randomUUID } from 'node:crypto';
import { accessSync, closeSync, constants, ftruncateSync, mkdirSync, openSync, readdirSync, readFileSync, statSync, unlinkSync, writeSync } from 'node:fs';
import { hostname } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import type Database from 'better-sqlite3';
import { canonicalJson, sha256 } from '../policy/load.js';
import { maskSecrets } from './mask.js';
import { closeDatabase, openDatabase } from '../state/sqlite.js';

export type AuditDecision = 'allow' | 'deny' | 'shadow_deny' | 'approved' | 'rejected' | 'timeout' | 'error';
export type AuditKind = 'call' | 'policy_reload' | 'kill_switch' | 'start' | 'auth' | 'grant';

export interface AuditEvent {
  kind: AuditKind;
  server?: string;
  grant?: string;
  session?: string;
  client?: string;
  tool?: string;
  decision?: AuditDecision;
  rule?: string;
  message?: string;
  /**
   * The call's arguments. The row stores their top-level keys and a SHA-256 of their canonical
   * JSON; the values themselves only with `storeArgValues` (secrets masked).
   */
  args?: Record<string, unknown>;
  storeArgValues?: boolean;
  policyHash?: string;
}

/** Names an appended event, to attach its upstream outcome later. */
export interface AuditRef {
  eventId: string;
}

export interface AuditRow {
  id: number;
  event_id: string;
  ts: string;
  instance: string;
  kind: AuditKind;
  server: string | null;
  grant_label: string | null;
  session: string | null;
  client: string | null;
  tool: string | null;
  decision: AuditDecision | null;
  rule: string | null;
  message: string | null;
  arg_keys: string | null;
  args_sha256: string | null;
  args: string | null;
  policy_hash: string | null;
  prev_hash: string;
  hash: string;
  outcome: string | null;
  latency_ms: number | null;
  outcome_hash: string | null;
}

export interface AuditQuery {
  sinceMs?: number;
  decision?: string;
  tool?: string;
  server?: string;
  grant?: string;
  session?: string;
  client?: string;
  instance?: string;
  kind?: string;
  limit?: number;
}

export interface AuditSummary {
  /** Processes that wrote to the log in the last 15 minutes. */
  instances: { instance: string; servers: string[]; lastSeen: string; calls: number }[];
  callsLastMinute: { server: string | null; calls: number; denied: number }[];
  topDenialsLastHour: { server: string | null; tool: string | null; rule: string | null; count: number }[];
}

export interface VerifyResult {
  ok: boolean;
  rows: number;
  problem?: string;
  badId?: number;
}

type Row = Record<string, string | number | null>;
interface Outcome { eventId: string; outcome: string; latency: number | null }
/** A row waiting for the next batch, with the arguments it still has to hash. */
interface PendingRow { entry: JournalEntry; args?: Record<string, unknown>; storeArgValues?: boolean }

/** One journal line: the row's fields in a fixed order (a short array is cheaper to write than an object). */
type JournalEntry = (string | null)[];
const JOURNAL_FIELDS = ['event_id', 'ts', 'instance', 'kind', 'server', 'grant_label', 'session', 'client', 'tool', 'decision', 'rule', 'message', 'arg_keys', 'policy_hash'] as const;

function rowOf(entry: JournalEntry): Row {
  const row: Row = { args_sha256: null, args: null };
  JOURNAL_FIELDS.forEach((f, i) => { row[f] = entry[i] ?? null; });
  return row;
}

const GENESIS = '0'.repeat(64);
const HASHED_FIELDS = ['ts', 'instance', 'kind', 'server', 'grant_label', 'session', 'client', 'tool', 'decision', 'rule', 'message', 'arg_keys', 'args_sha256', 'args', 'policy_hash'] as const;
const FLUSH_EVERY_MS = 50;
const FLUSH_AT = 256;

/** SHA-256 over the previous row's hash and this row's fields, in a fixed order. */
function rowHash(prev: string, row: Record<string, unknown>): string {
  return sha256(prev + '\n' + JSON.stringify(HASHED_FIELDS.map((f) => row[f] ?? null)));
}

function outcomeHash(hash: string, outcome: string, latency: number | null): string {
  return sha256(`${hash}\n${outcome}\n${latency ?? ''}`);
}

/**
 * Where journals live: a private folder in /dev/shm when there is one — memory, so an append is
 * cheap, and it outlives the process (kill -9), which is what the journal is for — then the
 * database's own folder. Both are searched on recovery.
 */
function journalDirs(file: string): string[] {
  const own = dirname(resolve(file));
  const shm = join('/dev/shm', `toolgate-${process.getuid?.() ?? 'user'}`);
  try {
    mkdirSync(shm, { recursive: true, mode: 0o700 });
    accessSync(shm, constants.W_OK);
    return [shm, own];
  } catch {
    return [own];
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * The audit log: one SQLite row per decision, hash-chained, so `verify` finds an edited or
 * deleted row.
 *
 * Durability without a database commit on the hot path: an event is first appended, with one
 * write, to this process's journal (in /dev/shm where there is one, else beside the database) —
 * that is done before the call is forwarded, and a write that returned survives kill -9 — then
 * rows are inserted in batches (one transaction every 50 ms). Opening the log replays the
 * journals of processes that died before their last batch. Like SQLite's own WAL in NORMAL mode,
 * this protects against the process dying, not against the machine losing power. The upstream outcome is sealed with its own hash, since it comes later.
 */
export class AuditLog {
  readonly instance = `${hostname()}:${process.pid}`;
  private readonly db: Database.Database;
  private readonly insertBatch: (rows: Row[], outcomes?: Outcome[]) => void;
  private readonly journalPath: string;
  private readonly journalPrefix: string;
  private journalFd: number | null = null;
  private pending: PendingRow[] = [];
  private readonly idPrefix = `${process.pid.toString(36)}-${randomUUID().slice(0, 8)}-`;
  private seq = 0;
  private outcomes: Outcome[] = [];
  /** Row hashes of events whose outcome has not arrived yet. */
  private readonly hashes = new Map<string, string>();
  private timer: NodeJS.Timeout | undefined;

  constructor(private readonly file: string) {
    this.db = openDatabase(file);
    this.db.exec(`
      CREATE TABLE IF NOT EXISTS audit (
        id INTEGER PRIMARY KEY, event_id TEXT NOT NULL UNIQUE, ts TEXT NOT NULL, instance TEXT NOT NULL, kind TEXT NOT NULL,
        server TEXT, grant_label TEXT, session TEXT, client TEXT, tool TEXT, decision TEXT, rule TEXT,
        message TEXT, arg_keys TEXT, args_sha256 TEXT, args TEXT, policy_hash TEXT,
        prev_hash TEXT NOT NULL, hash TEXT NOT NULL, outcome TEXT, latency_ms REAL, outcome_hash TEXT);
      CREATE INDEX IF NOT EXISTS audit_ts ON audit (ts);
      CREATE TABLE IF NOT EXISTS audit_head (one INTEGER PRIMARY KEY CHECK (one = 1), id INTEGER NOT NULL, hash TEXT NOT NULL);`);
    const last = this.db.prepare<[], { hash: string }>('SELECT hash FROM audit_head WHERE one = 1');
    const insert = this.db.prepare(`INSERT OR IGNORE INTO audit (event_id, ts, instance, kind, server, grant_label, session, client, tool, decision, rule, message, arg_keys, args_sha256, args, policy_hash, prev_hash, hash, outcome, latency_ms, outcome_hash)
      VALUES (@event_id, @ts, @instance, @kind, @server, @grant_label, @session, @client, @tool, @decision, @rule, @message, @arg_keys, @args_sha256, @args, @policy_hash, @prev_hash, @hash, @outcome, @latency_ms, @outcome_hash)`);
    const head = this.db.prepare('INSERT INTO audit_head (one, id, hash) VALUES (1, ?, ?) ON CONFLICT (one) DO UPDATE SET id = excluded.id, hash = excluded.hash');
    // IMMEDIATE: the chain's tail is read and extended under the write lock, so several
    // processes appending to one file still make one unbroken chain.
    const finish = this.db.prepare('UPDATE audit SET outcome = ?, latency_ms = ?, outcome_hash = ? WHERE event_id = ?');
    const hashOf = this.db.prepare<[string], { hash: string }>('SELECT hash FROM audit WHERE event_id = ?');
    // One transaction a batch: new rows (with their outcome when it is already known, which is
    // the usual case: most calls finish within one batch), then outcomes of older rows.
    this.insertBatch = this.db.transaction((rows: Row[], outcomes: Outcome[] = []) => {
      const known = new Map(outcomes.map((o) => [o.eventId, o]));
      let prev = last.get()?.hash ?? GENESIS;
      let lastId = 0;
      for (const row of rows) {
        const hash = rowHash(prev, row);
        const o = known.get(row.event_id as string);
        if (o) known.delete(o.eventId);
        const info = insert.run({ ...row, prev_hash: prev, hash, outcome: o?.outcome ?? null, latency_ms: o?.latency ?? null, outcome_hash: o ? outcomeHash(hash, o.outcome, o.latency) : null });
        if (info.changes === 0) continue; // replayed from a journal, already stored
        lastId = Number(info.lastInsertRowid);
        if (!o) this.hashes.set(row.event_id as string, hash);
        prev = hash;
      }
      if (lastId) head.run(lastId, prev);
      for (const o of known.values()) {
        const hash = this.hashes.get(o.eventId) ?? hashOf.get(o.eventId)?.hash;
        this.hashes.delete(o.eventId);
        if (hash) finish.run(o.outcome, o.latency, outcomeHash(hash, o.outcome, o.latency), o.eventId);
      }
    }).immediate;
    this.journalPrefix = `${sha256(resolve(file)).slice(0, 16)}.journal-`;
    const dirs = journalDirs(file);
    this.journalPath = join(dirs[0], `${this.journalPrefix}${process.pid}-${randomUUID().slice(0, 8)}`);
    this.recoverJournals(dirs);
  }

  /** Replays the journals of processes that died with events not yet in the database. */
  private recoverJournals(dirs: string[]): void {
    for (const dir of dirs) for (const name of readdirSync(dir)) {
      const m = /^[0-9a-f]{16}\.journal-(\d+)-/.exec(name) ?? /\.journal-(\d+)-/.exec(name);
      if (!m || alive(Number(m[1]))) continue;
      const path = join(dir, name);
      if (!name.startsWith(this.journalPrefix)) {
        // Another log's journal: only an empty one, left by a process that died, is cleared away.
        try { if (statSync(path).size === 0) unlinkSync(path); } catch { /* raced with its owner */ }
        continue;
      }
      const rows: Row[] = [];
      for (const line of readFileSync(path, 'utf8').split('\n')) {
        try { if (line) rows.push(rowOf(JSON.parse(line) as JournalEntry)); } catch { /* a write cut short by the crash */ }
      }
      if (rows.length) this.insertBatch(rows);
      unlinkSync(path);
    }
  }

  append(e: AuditEvent): AuditRef {
    const eventId = this.idPrefix + (this.seq++).toString(36);
    const entry: JournalEntry = [
      eventId, new Date().toISOString(), this.instance, e.kind, e.server ?? null, e.grant ?? null, e.session ?? null,
      e.client ?? null, e.tool ?? null, e.decision ?? null, e.rule ?? null, e.message ?? null,
      e.args ? JSON.stringify(Object.keys(e.args)) : null, e.policyHash ?? null,
    ];
    if (this.journalFd === null) this.journalFd = openSync(this.journalPath, 'a', 0o600);
    // The journal line is what survives kill -9: the call, its tool, decision and argument keys.
    // Hashing the arguments waits for the batch, off the path of the call.
    writeSync(this.journalFd, JSON.stringify(entry) + '\n');
    this.pending.push({ entry, args: e.args, storeArgValues: e.storeArgValues });
    this.schedule();
    return { eventId };
  }

  /** Records the upstream outcome of a forwarded call: result, is_error, error, cancelled, unreachable. */
  finish(ref: AuditRef, outcome: string, latencyMs: number | null): void {
    this.outcomes.push({ eventId: ref.eventId, outcome, latency: latencyMs === null ? null : Math.round(latencyMs * 1000) / 1000 });
    this.schedule();
  }

  private schedule(): void {
    if (this.timer) return;
    const soon = this.pending.length + this.outcomes.length >= FLUSH_AT;
    this.timer = setTimeout(() => this.flush(), soon ? 0 : FLUSH_EVERY_MS);
    this.timer.unref();
  }

  /** Writes pending rows and outcomes to the database, then empties the journal. */
  flush(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    if (this.pending.length === 0 && this.outcomes.length === 0) return;
    const rows = this.pending.map(({ entry, args, storeArgValues }) => {
      const row = rowOf(entry);
      if (args) {
        row.args_sha256 = sha256(canonicalJson(args));
        if (storeArgValues) row.args = JSON.stringify(maskSecrets(args));
      }
      return row;
    });
    const outcomes = this.outcomes;
    this.pending = [];
    this.outcomes = [];
    this.insertBatch(rows, outcomes);
    if (rows.length > 0 && this.journalFd !== null) ftruncateSync(this.journalFd, 0);
  }

  query(q: AuditQuery = {}): AuditRow[] {
    this.flush();
    const where: string[] = [];
    const params: unknown[] = [];
    if (q.sinceMs !== undefined) { where.push('ts >= ?'); params.push(new Date(Date.now() - q.sinceMs).toISOString()); }
    const eq: [keyof AuditQuery, string][] = [['decision', 'decision'], ['tool', 'tool'], ['server', 'server'], ['grant', 'grant_label'], ['session', 'session'], ['client', 'client'], ['instance', 'instance'], ['kind', 'kind']];
    for (const [key, column] of eq) {
      if (q[key] !== undefined) { where.push(`${column} = ?`); params.push(q[key]); }
    }
    const sql = `SELECT * FROM audit ${where.length ? 'WHERE ' + where.join(' AND ') : ''} ORDER BY id DESC LIMIT ?`;
    return (this.db.prepare(sql).all(...params, q.limit ?? 1000) as AuditRow[]).reverse();
  }

  /** For `toolgate status`: who is running, how busy, what gets denied. */
  summary(now = Date.now()): AuditSummary {
    this.flush();
    const iso = (ms: number) => new Date(now - ms).toISOString();
    const instances = this.db.prepare<[string], { instance: string; servers: string; last: string; calls: number }>(
      "SELECT instance, group_concat(DISTINCT server) AS servers, max(ts) AS last, sum(kind = 'call') AS calls FROM audit WHERE ts >= ? GROUP BY instance ORDER BY last DESC").all(iso(15 * 60_000));
    const perMinute = this.db.prepare<[string], { server: string | null; calls: number; denied: number }>(
      "SELECT server, count(*) AS calls, sum(decision = 'deny') AS denied FROM audit WHERE kind = 'call' AND ts >= ? GROUP BY server ORDER BY calls DESC").all(iso(60_000));
    const topDenials = this.db.prepare<[string], { server: string | null; tool: string | null; rule: string | null; count: number }>(
      "SELECT server, tool, rule, count(*) AS count FROM audit WHERE kind = 'call' AND decision = 'deny' AND ts >= ? GROUP BY server, tool, rule ORDER BY count DESC LIMIT 10").all(iso(3_600_000));
    return {
      instances: instances.map((r) => ({ instance: r.instance, servers: (r.servers ?? '').split(',').filter(Boolean), lastSeen: r.last, calls: r.calls })),
      callsLastMinute: perMinute,
      topDenialsLastHour: topDenials,
    };
  }

  verify(): VerifyResult {
    this.flush();
    let prev = GENESIS;
    let rows = 0;
    let lastId = 0;
    for (const row of this.db.prepare('SELECT * FROM audit ORDER BY id').iterate() as IterableIterator<AuditRow>) {
      rows++;
      if (row.prev_hash !== prev) return { ok: false, rows, badId: row.id, problem: `row ${row.id} does not follow the row before it (a row was deleted or inserted)` };
      if (rowHash(prev, row as unknown as Record<string, unknown>) !== row.hash) return { ok: false, rows, badId: row.id, problem: `row ${row.id} was edited` };
      if (row.outcome !== null && row.outcome_hash !== outcomeHash(row.hash, row.outcome, row.latency_ms)) {
        return { ok: false, rows, badId: row.id, problem: `the outcome of row ${row.id} was edited` };
      }
      prev = row.hash;
      lastId = row.id;
    }
    const head = this.db.prepare<[], { id: number; hash: string }>('SELECT id, hash FROM audit_head WHERE one = 1').get();
    if (head && (head.id !== lastId || head.hash !== prev)) return { ok: false, rows, badId: head.id, problem: `rows after ${lastId} were deleted (the log's head is row ${head.id})` };
    return { ok: true, rows };
  }

  close(): void {
    if (!this.db.open) return;
    this.flush();
    if (this.journalFd !== null) {
      closeSync(this.journalFd);
      this.journalFd = null;
      unlinkSync(this.journalPath);
    }
    closeDatabase(this.db);
  }
}
