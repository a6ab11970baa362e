import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import Database from 'better-sqlite3';
import type { Charge, CounterStore, FlagStore, KillScope, KillSwitchState, StateStore } from './types.js';

/**
 * Opens a SQLite database the way every toolgate file wants it: WAL (readers never block the
 * writer; a committed transaction survives kill -9), NORMAL sync (no fsync per commit, durable
 * against process crashes), and a busy timeout so that several processes share one file.
 */
export function openDatabase(file: string): Database.Database {
  if (file !== ':memory:') mkdirSync(dirname(file), { recursive: true });
  const db = new Database(file);
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
  db.pragma('busy_timeout = 5000');
  return db;
}

/** Counters in one SQLite file, shared by every process that opens it. */
export class SqliteCounterStore implements CounterStore {
  private readonly get: Database.Statement<[string], { value: number; expires_at: number }>;
  private readonly add: Database.Statement<[{ key: string; amount: number; expiresAt: number; now: number }]>;
  private readonly sub: Database.Statement<[number, string]>;
  private readonly sweepStmt: Database.Statement<[number]>;
  private readonly reserveTx: (charges: readonly Charge[], now: number) => number;
  private sweepAt = 0;

  constructor(private readonly db: Database.Database) {
    db.exec(`CREATE TABLE IF NOT EXISTS counters (
      key TEXT PRIMARY KEY, value REAL NOT NULL, expires_at INTEGER NOT NULL) WITHOUT ROWID`);
    this.get = db.prepare('SELECT value, expires_at FROM counters WHERE key = ?');
    this.add = db.prepare(`INSERT INTO counters (key, value, expires_at) VALUES (@key, @amount, @expiresAt)
      ON CONFLICT (key) DO UPDATE SET
        value = CASE WHEN counters.expires_at > @now THEN counters.value + excluded.value ELSE excluded.value END,
        expires_at = excluded.expires_at`);
    this.sub = db.prepare('UPDATE counters SET value = max(0, value - ?) WHERE key = ?');
    this.sweepStmt = db.prepare('DELETE FROM counters WHERE expires_at <= ?');
    // BEGIN IMMEDIATE takes the write lock before reading, so two processes cannot both read
    // the same count and both take the last unit.
    this.reserveTx = db.transaction((charges: readonly Charge[], now: number) => {
      for (let i = 0; i < charges.length; i++) {
        const c = charges[i];
        let pending = c.amount;
        for (let j = 0; j < i; j++) if (charges[j].key === c.key) pending += charges[j].amount;
        if (this.current(c.key, now) + pending > c.max) return i;
      }
      for (const c of charges) this.add.run({ key: c.key, amount: c.amount, expiresAt: c.expiresAt, now });
      return -1;
    }).immediate;
  }

  private current(key: string, now: number): number {
    const row = this.get.get(key);
    return row && row.expires_at > now ? row.value : 0;
  }

  reserveSync(charges: readonly Charge[], now: number): number {
    const result = this.reserveTx(charges, now);
    if (now >= this.sweepAt) {
      this.sweepAt = now + 60_000;
      this.sweepStmt.run(now);
    }
    return result;
  }

  async reserve(charges: readonly Charge[], now: number): Promise<number> {
    return this.reserveSync(charges, now);
  }

  async release(charges: readonly Charge[]): Promise<void> {
    this.db.transaction(() => { for (const c of charges) this.sub.run(c.amount, c.key); })();
  }

  async value(key: string, now: number): Promise<number> {
    return this.current(key, now);
  }
}

export class SqliteFlagStore implements FlagStore {
  constructor(private readonly db: Database.Database) {
    db.exec(`CREATE TABLE IF NOT EXISTS kill_switch (
      scope TEXT PRIMARY KEY, is_on INTEGER NOT NULL, reason TEXT, at TEXT NOT NULL)`);
  }

  async killedFor(server: string): Promise<KillScope | null> {
    const row = this.db
      .prepare<[string], { scope: string }>("SELECT scope FROM kill_switch WHERE is_on = 1 AND scope IN ('*', ?) ORDER BY scope = '*' DESC LIMIT 1")
      .get(server);
    return row ? row.scope : null;
  }

  async setKillSwitch(scope: KillScope, on: boolean, reason?: string): Promise<void> {
    this.db
      .prepare('INSERT INTO kill_switch (scope, is_on, reason, at) VALUES (?, ?, ?, ?) ON CONFLICT (scope) DO UPDATE SET is_on = excluded.is_on, reason = excluded.reason, at = excluded.at')
      .run(scope, on ? 1 : 0, reason ?? null, new Date().toISOString());
  }

  async listKillSwitches(): Promise<KillSwitchState[]> {
    return this.db
      .prepare<[], { scope: string; is_on: number; reason: string | null; at: string }>('SELECT scope, is_on, reason, at FROM kill_switch ORDER BY scope')
      .all()
      .map((r) => ({ scope: r.scope, on: r.is_on === 1, reason: r.reason ?? undefined, at: r.at }));
  }
}

export function openSqliteState(file: string): StateStore {
  const db = openDatabase(file);
  return {
    kind: 'sqlite',
    counters: new SqliteCounterStore(db),
    flags: new SqliteFlagStore(db),
    close: async () => { db.close(); },
  };
}
