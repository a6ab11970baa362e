import type Database from 'better-sqlite3';
import type { Approval, ApprovalDecision, ApprovalStatus, ApprovalStore } from './types.js';

interface Row {
  id: string; data: string; status: ApprovalStatus; decided_by: string | null; decided_at: number | null;
  decision_reason: string | null; valid_until: number | null; used_at: number | null; seq: number;
}

/** The fields that never change after create live in one JSON column; the rest are columns. */
function approvalOf(r: Row): Approval {
  const a = JSON.parse(r.data) as Approval;
  a.status = r.status;
  if (r.decided_by !== null) a.decidedBy = r.decided_by;
  if (r.decided_at !== null) a.decidedAt = r.decided_at;
  if (r.decision_reason !== null) a.decisionReason = r.decision_reason;
  if (r.valid_until !== null) a.validUntil = r.valid_until;
  if (r.used_at !== null) a.usedAt = r.used_at;
  return a;
}

const POLL_MS = 250;
/** Every change takes the next sequence number, so a watcher reads exactly what changed since it last looked. */
const NEXT_SEQ = '(SELECT coalesce(max(seq), 0) + 1 FROM approvals)';

/**
 * Approvals in the shared SQLite file. Each transition is one UPDATE guarded by the current
 * status, which SQLite runs under its write lock, so two processes cannot both win it. Watchers
 * poll for rows with a newer sequence number every 250 ms while anyone watches.
 */
export class SqliteApprovalStore implements ApprovalStore {
  private readonly listeners = new Set<(a: Approval) => void>();
  private timer?: NodeJS.Timeout;
  private seen = 0;

  constructor(private readonly db: Database.Database) {
    db.exec(`CREATE TABLE IF NOT EXISTS approvals (
      id TEXT PRIMARY KEY, binding TEXT NOT NULL, data TEXT NOT NULL, status TEXT NOT NULL,
      requested_at INTEGER NOT NULL, expires_at INTEGER NOT NULL, valid_for_ms INTEGER NOT NULL,
      decided_by TEXT, decided_at INTEGER, decision_reason TEXT, valid_until INTEGER, used_at INTEGER,
      seq INTEGER NOT NULL);
      CREATE INDEX IF NOT EXISTS approvals_binding ON approvals (binding, status);
      CREATE INDEX IF NOT EXISTS approvals_seq ON approvals (seq);
      CREATE INDEX IF NOT EXISTS approvals_status ON approvals (status, requested_at)`);
  }

  create(a: Approval): void {
    const { status: _s, decidedBy: _b, decidedAt: _t, decisionReason: _r, validUntil: _v, usedAt: _u, ...fixed } = a;
    this.db.prepare(`INSERT INTO approvals (id, binding, data, status, requested_at, expires_at, valid_for_ms, seq)
      VALUES (?, ?, ?, 'pending', ?, ?, ?, ${NEXT_SEQ})`).run(a.id, a.binding, JSON.stringify(fixed), a.requestedAt, a.expiresAt, a.validForMs);
    this.kick();
  }

  /** Synchronous: no other statement of this process runs between the count and the insert; other processes are kept out by the transaction. */
  createIfUnder(a: Approval, max: number, now: number): boolean {
    return this.db.transaction(() => {
      if (this.countPending(a.grantId ?? a.grant, now) >= max) return false;
      this.create(a);
      return true;
    }).immediate();
  }

  get(id: string): Approval | null {
    const row = this.db.prepare<[string], Row>('SELECT * FROM approvals WHERE id = ?').get(id);
    return row ? approvalOf(row) : null;
  }

  list(opts: { status?: ApprovalStatus; limit?: number } = {}): Approval[] {
    const limit = opts.limit ?? 100;
    const rows = opts.status
      ? this.db.prepare<[string, number], Row>('SELECT * FROM approvals WHERE status = ? ORDER BY requested_at DESC LIMIT ?').all(opts.status, limit)
      : this.db.prepare<[number], Row>('SELECT * FROM approvals ORDER BY requested_at DESC LIMIT ?').all(limit);
    return rows.map(approvalOf);
  }

  decide(id: string, d: ApprovalDecision): Approval | null {
    const row = this.db.prepare<unknown[], Row>(`UPDATE approvals SET status = ?, decided_by = ?, decided_at = ?, decision_reason = ?,
        valid_until = CASE WHEN ? = 'approved' THEN ? + valid_for_ms END, seq = ${NEXT_SEQ}
      WHERE id = ? AND status = 'pending' AND (? = 'timeout' OR ? < expires_at) RETURNING *`)
      .get(d.status, d.by, d.at, d.reason ?? null, d.status, d.at, id, d.status, d.at);
    if (!row) return null;
    this.kick();
    return approvalOf(row);
  }

  consume(id: string, at: number): boolean {
    const ok = this.db.prepare(`UPDATE approvals SET status = 'used', used_at = ?, seq = ${NEXT_SEQ}
      WHERE id = ? AND status = 'approved' AND ? < valid_until`).run(at, id, at).changes === 1;
    if (ok) this.kick();
    return ok;
  }

  findLive(binding: string, now: number): Approval | null {
    const row = this.db.prepare<[string, number, number], Row>(`SELECT * FROM approvals WHERE binding = ?
      AND ((status = 'pending' AND ? < expires_at) OR (status = 'approved' AND ? < valid_until))
      ORDER BY requested_at DESC LIMIT 1`).get(binding, now, now);
    return row ? approvalOf(row) : null;
  }

  expire(now: number): Approval[] {
    const rows = this.db.prepare<[number, number, number], Row>(`UPDATE approvals SET
        status = CASE status WHEN 'pending' THEN 'timeout' ELSE 'unused' END,
        decided_by = CASE status WHEN 'pending' THEN 'toolgate' ELSE decided_by END,
        decided_at = CASE status WHEN 'pending' THEN ? ELSE decided_at END, seq = ${NEXT_SEQ}
      WHERE (status = 'pending' AND expires_at <= ?) OR (status = 'approved' AND valid_until <= ?) RETURNING *`).all(now, now, now);
    if (rows.length > 0) this.kick();
    return rows.map(approvalOf);
  }

  countPending(grant: string, now: number): number {
    // json_extract over the grant's pending rows only: the status index narrows them first.
    return this.db.prepare<[number, string], { n: number }>(`SELECT count(*) AS n FROM approvals
      WHERE status = 'pending' AND expires_at > ? AND coalesce(json_extract(data, '$.grantId'), json_extract(data, '$.grant')) = ?`).get(now, grant)!.n;
  }

  /** The row with the highest sequence number stays: new changes number on from it, so watchers never miss one. */
  purge(before: number, limit: number): number {
    return this.db.prepare(`DELETE FROM approvals WHERE id IN (SELECT id FROM approvals
      WHERE status IN ('denied', 'timeout', 'used', 'unused')
      AND max(coalesce(decided_at, 0), coalesce(used_at, 0), coalesce(valid_until, 0)) < ?
      AND seq < (SELECT max(seq) FROM approvals) LIMIT ?)`).run(before, limit).changes;
  }

  watch(listener: (a: Approval) => void): () => void {
    if (this.listeners.size === 0) {
      this.seen = this.db.prepare<[], { s: number }>('SELECT coalesce(max(seq), 0) AS s FROM approvals').get()!.s;
      this.timer = setInterval(() => this.poll(), POLL_MS);
      this.timer.unref();
    }
    this.listeners.add(listener);
    return () => {
      this.listeners.delete(listener);
      if (this.listeners.size === 0) this.stop();
    };
  }

  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
    this.listeners.clear();
  }

  /** This process's own change: watchers hear of it on the next turn instead of the next poll. */
  private kick(): void {
    if (this.listeners.size > 0) setImmediate(() => this.poll());
  }

  private poll(): void {
    if (this.listeners.size === 0 || !this.db.open) return;
    const rows = this.db.prepare<[number], Row>('SELECT * FROM approvals WHERE seq > ? ORDER BY seq').all(this.seen);
    for (const row of rows) {
      this.seen = Math.max(this.seen, row.seq);
      const a = approvalOf(row);
      for (const l of [...this.listeners]) l(a);
    }
  }
}
