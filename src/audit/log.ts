import { hostname } from 'node:os';
import type Database from 'better-sqlite3';
import { canonicalJson, sha256 } from '../policy/load.js';
import { closeDatabase, openDatabase } from '../state/sqlite.js';

export type AuditDecision = 'allow' | 'deny' | 'shadow_deny' | 'approved' | 'rejected' | 'timeout' | 'error';
export type AuditKind = 'call' | 'policy_reload' | 'kill_switch' | 'start';

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
  argKeys?: string[];
  argsSha256?: string;
  /** Argument values with secrets masked, only when the operator turned that on. */
  args?: string;
  policyHash?: string;
}

export interface AuditRef {
  id: number;
  hash: string;
}

export interface AuditRow {
  id: number;
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
  kind?: string;
  limit?: number;
}

export interface VerifyResult {
  ok: boolean;
  rows: number;
  problem?: string;
  badId?: number;
}

const GENESIS = '0'.repeat(64);
const HASHED_FIELDS = ['ts', 'instance', 'kind', 'server', 'grant_label', 'session', 'client', 'tool', 'decision', 'rule', 'message', 'arg_keys', 'args_sha256', 'args', 'policy_hash'] as const;

function rowHash(prev: string, row: Record<string, unknown>): string {
  const fields: Record<string, unknown> = {};
  for (const f of HASHED_FIELDS) fields[f] = row[f] ?? null;
  return sha256(prev + '\n' + canonicalJson(fields));
}

function outcomeHash(hash: string, outcome: string, latency: number | null): string {
  return sha256(`${hash}\n${outcome}\n${latency ?? ''}`);
}

/**
 * The audit log: one SQLite row per decision, hash-chained. Each append is its own committed WAL
 * transaction before the call is forwarded, so a forwarded call is in the log even after kill -9.
 * The upstream outcome is sealed later with its own hash, since it is only known after the answer.
 */
export class AuditLog {
  readonly instance = `${hostname()}:${process.pid}`;
  private readonly db: Database.Database;
  private readonly appendTx: (row: Record<string, unknown>) => AuditRef;
  private readonly finishStmt: Database.Statement;

  constructor(file: string) {
    this.db = openDatabase(file);
    this.db.exec(`
      CREATE TABLE IF NOT EXISTS audit (
        id INTEGER PRIMARY KEY, ts TEXT NOT NULL, instance TEXT NOT NULL, kind TEXT NOT NULL,
        server TEXT, grant_label TEXT, session TEXT, client TEXT, tool TEXT, decision TEXT, rule TEXT,
        message TEXT, arg_keys TEXT, args_sha256 TEXT, args TEXT, policy_hash TEXT,
        prev_hash TEXT NOT NULL, hash TEXT NOT NULL, outcome TEXT, latency_ms REAL, outcome_hash TEXT);
      CREATE INDEX IF NOT EXISTS audit_ts ON audit (ts);
      CREATE TABLE IF NOT EXISTS audit_head (one INTEGER PRIMARY KEY CHECK (one = 1), id INTEGER NOT NULL, hash TEXT NOT NULL);`);
    const last = this.db.prepare<[], { hash: string }>('SELECT hash FROM audit_head WHERE one = 1');
    const insert = this.db.prepare(`INSERT INTO audit (ts, instance, kind, server, grant_label, session, client, tool, decision, rule, message, arg_keys, args_sha256, args, policy_hash, prev_hash, hash)
      VALUES (@ts, @instance, @kind, @server, @grant_label, @session, @client, @tool, @decision, @rule, @message, @arg_keys, @args_sha256, @args, @policy_hash, @prev_hash, @hash)`);
    const head = this.db.prepare('INSERT INTO audit_head (one, id, hash) VALUES (1, ?, ?) ON CONFLICT (one) DO UPDATE SET id = excluded.id, hash = excluded.hash');
    this.appendTx = this.db.transaction((row: Record<string, unknown>) => {
      const prev = last.get()?.hash ?? GENESIS;
      const hash = rowHash(prev, row);
      const id = Number(insert.run({ ...row, prev_hash: prev, hash }).lastInsertRowid);
      head.run(id, hash);
      return { id, hash };
    }).immediate;
    this.finishStmt = this.db.prepare('UPDATE audit SET outcome = ?, latency_ms = ?, outcome_hash = ? WHERE id = ?');
  }

  append(e: AuditEvent): AuditRef {
    return this.appendTx({
      ts: new Date().toISOString(),
      instance: this.instance,
      kind: e.kind,
      server: e.server ?? null,
      grant_label: e.grant ?? null,
      session: e.session ?? null,
      client: e.client ?? null,
      tool: e.tool ?? null,
      decision: e.decision ?? null,
      rule: e.rule ?? null,
      message: e.message ?? null,
      arg_keys: e.argKeys ? JSON.stringify(e.argKeys) : null,
      args_sha256: e.argsSha256 ?? null,
      args: e.args ?? null,
      policy_hash: e.policyHash ?? null,
    });
  }

  /** Records the upstream outcome of a forwarded call: result, is_error, error, cancelled, unreachable. */
  finish(ref: AuditRef, outcome: string, latencyMs: number | null): void {
    const latency = latencyMs === null ? null : Math.round(latencyMs * 1000) / 1000;
    this.finishStmt.run(outcome, latency, outcomeHash(ref.hash, outcome, latency), ref.id);
  }

  query(q: AuditQuery = {}): AuditRow[] {
    const where: string[] = [];
    const params: unknown[] = [];
    if (q.sinceMs !== undefined) { where.push('ts >= ?'); params.push(new Date(Date.now() - q.sinceMs).toISOString()); }
    const eq: [keyof AuditQuery, string][] = [['decision', 'decision'], ['tool', 'tool'], ['server', 'server'], ['grant', 'grant_label'], ['session', 'session'], ['client', 'client'], ['kind', 'kind']];
    for (const [key, column] of eq) {
      if (q[key] !== undefined) { where.push(`${column} = ?`); params.push(q[key]); }
    }
    const sql = `SELECT * FROM audit ${where.length ? 'WHERE ' + where.join(' AND ') : ''} ORDER BY id DESC LIMIT ?`;
    return (this.db.prepare(sql).all(...params, q.limit ?? 1000) as AuditRow[]).reverse();
  }

  verify(): VerifyResult {
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
    closeDatabase(this.db);
  }
}
