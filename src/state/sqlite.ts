import { SqliteFlowStore } from './flow-touches.js';
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import Database from 'better-sqlite3';
import { databaseFileError } from './errors.js';
import { SqliteApprovalStore } from './sqlite-approvals.js';
import { SqliteRequestStateStore } from './request-states.js';
import { KILLED, type Charge, type CounterStore, type FlagStore, type Grant, type GrantStore, type KillScope, type KillSwitchState, type OAuthRecord, type OAuthStore, type PinStore, type StateStore } from './types.js';

/** How long opening a database keeps trying while another process holds a lock it needs. */
const OPEN_BUSY_MS = 15_000;

/**
 * Opens a SQLite database the way every toolgate file wants it: WAL (readers never block the
 * writer; a committed transaction survives kill -9), NORMAL sync (no fsync per commit, durable
 * against process crashes), and a busy timeout so that several processes share one file.
 *
 * Two processes opening a new file at once can get SQLITE_BUSY from the pragmas that set it up
 * (switching to WAL needs a lock that SQLite does not wait for with the busy handler): opening is
 * tried again for up to 15 s before it is reported.
 */
export function openDatabase(file: string): Database.Database {
  const deadline = Date.now() + OPEN_BUSY_MS;
  for (;;) {
    try {
      return openOnce(file);
    } catch (err) {
      const code = (err as { code?: string }).code ?? '';
      if (!code.startsWith('SQLITE_BUSY') || Date.now() >= deadline) throw databaseFileError(file, err);
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 25 + Math.floor(Math.random() * 50));
    }
  }
}

function openOnce(file: string): Database.Database {
  let db: Database.Database | undefined;
  try {
    if (file !== ':memory:') mkdirSync(dirname(file), { recursive: true });
    db = new Database(file, { timeout: 5000 });
    // Small pages: a counter update or an audit row rewrites one small WAL frame, not 4 KiB.
    db.pragma('page_size = 1024');
    if (db.pragma('journal_mode', { simple: true }) !== 'wal') db.pragma('journal_mode = WAL');
    db.pragma('synchronous = NORMAL');
    db.pragma('busy_timeout = 5000');
    return db;
  } catch (err) {
    db?.close();
    throw err;
  }
}

/** Closes a database with a last checkpoint, so the WAL does not outlive the process. */
export function closeDatabase(db: Database.Database): void {
  if (!db.open) return;
  try { db.pragma('wal_checkpoint(PASSIVE)'); } catch { /* another process holds the file; it will checkpoint */ }
  db.close();
}

const KILL_SWITCH_TABLE = 'CREATE TABLE IF NOT EXISTS kill_switch (scope TEXT PRIMARY KEY, is_on INTEGER NOT NULL, reason TEXT, at TEXT NOT NULL)';

/** A reservation waiting for the next group commit: the kill switch's server (null: not read), and its charges. */
interface Queued { server: string | null; charges: readonly Charge[]; now: number; resolve: (failed: number) => void; reject: (err: Error) => void }

/**
 * Counters in one SQLite file, shared by every process that opens it.
 *
 * Group commit: the first reservation of an event-loop turn is committed at once; those asked for
 * later in the same turn (a busy gateway: many requests read in one turn) wait for the end of the
 * turn and are committed together, in arrival order, in one transaction. While turns keep
 * bringing several, the first waits with them too: one transaction a turn under load. Each is
 * still all or nothing, and each caller hears its answer only after the commit, so a call is
 * never forwarded on a reservation that is not yet durable.
 */
export class SqliteCounterStore implements CounterStore {
  private readonly get: Database.Statement<[string], { value: number; expires_at: number }>;
  private readonly add: Database.Statement<[string, number, number, number], { value: number }>;
  private readonly sub: Database.Statement<[number, string]>;
  private readonly sweepStmt: Database.Statement<[number]>;
  private readonly killSwitches: Database.Statement<[], { scope: string }>;
  private readonly commit: (batch: readonly Omit<Queued, 'resolve' | 'reject'>[]) => number[];
  private sweepAt = 0;
  private queue: Queued[] = [];
  private turn: NodeJS.Immediate | undefined;
  /** The last turn that ended committed more than one reservation together. */
  private busy = false;

  constructor(private readonly db: Database.Database, readonly flags?: SqliteFlagStore) {
    db.exec(`CREATE TABLE IF NOT EXISTS counters (
      key TEXT PRIMARY KEY, value REAL NOT NULL, expires_at INTEGER NOT NULL) WITHOUT ROWID`);
    this.get = db.prepare('SELECT value, expires_at FROM counters WHERE key = ?');
    this.add = db.prepare(`INSERT INTO counters (key, value, expires_at) VALUES (?, ?, ?)
      ON CONFLICT (key) DO UPDATE SET
        value = CASE WHEN counters.expires_at > ? THEN counters.value + excluded.value ELSE excluded.value END,
        expires_at = excluded.expires_at
      RETURNING value`);
    this.sub = db.prepare('UPDATE counters SET value = max(0, value - ?) WHERE key = ?');
    this.sweepStmt = db.prepare('DELETE FROM counters WHERE expires_at <= ?');
    db.exec(KILL_SWITCH_TABLE);
    this.killSwitches = db.prepare('SELECT scope FROM kill_switch WHERE is_on = 1');
    // BEGIN IMMEDIATE takes the write lock before reading, so two processes cannot both read the
    // same count and both take the last unit; the kill switch is read under the same lock.
    this.commit = db.transaction((batch: readonly Omit<Queued, 'resolve' | 'reject'>[]) => {
      let on: string[] | undefined;
      const out: number[] = new Array(batch.length);
      for (let i = 0; i < batch.length; i++) {
        const { server, charges, now } = batch[i];
        if (server !== null) {
          on ??= this.killSwitches.all().map((r) => r.scope);
          if (on.length > 0 && (on.includes('*') || on.includes(server))) { out[i] = KILLED; continue; }
        }
        out[i] = this.take(charges, now);
      }
      return out;
    }).immediate;
  }

  /** Adds each charge and reads its new value back in one statement; one over its max is undone with those before it. */
  private take(charges: readonly Charge[], now: number): number {
    for (let i = 0; i < charges.length; i++) {
      const c = charges[i];
      if (this.add.get(c.key, c.amount, c.expiresAt, now)!.value > c.max) {
        for (let j = i; j >= 0; j--) this.sub.run(charges[j].amount, charges[j].key);
        return i;
      }
    }
    return -1;
  }

  private current(key: string, now: number): number {
    const row = this.get.get(key);
    return row && row.expires_at > now ? row.value : 0;
  }

  reserve(charges: readonly Charge[], now: number): number | Promise<number> {
    return this.enqueue(null, charges, now);
  }

  reserveUnlessKilled(server: string, charges: readonly Charge[], now: number): number | Promise<number> {
    return this.enqueue(server, charges, now);
  }

  private enqueue(server: string | null, charges: readonly Charge[], now: number): number | Promise<number> {
    if (!this.turn && !this.busy) {
      // The turn's first, on a quiet store: committed now, waiting for nothing.
      this.turn = setImmediate(this.endTurn);
      this.turn.unref();
      const [failed] = this.commit([{ server, charges, now }]);
      this.sweep(now);
      return failed;
    }
    this.turn ??= setImmediate(this.endTurn);
    this.turn.ref();
    return new Promise((resolve, reject) => { this.queue.push({ server, charges, now, resolve, reject }); });
  }

  private readonly endTurn = (): void => {
    this.turn = undefined;
    this.busy = this.queue.length > 1;
    if (this.queue.length === 0) return;
    const batch = this.queue;
    this.queue = [];
    let results: number[];
    try {
      results = this.commit(batch);
    } catch (err) {
      for (const q of batch) q.reject(err as Error);
      return;
    }
    for (let i = 0; i < batch.length; i++) batch[i].resolve(results[i]);
    this.sweep(batch[batch.length - 1].now);
  };

  private sweep(now: number): void {
    if (now < this.sweepAt) return;
    this.sweepAt = now + 60_000;
    this.sweepStmt.run(now);
  }

  async release(charges: readonly Charge[]): Promise<void> {
    this.db.transaction(() => { for (const c of charges) this.sub.run(c.amount, c.key); })();
  }

  async value(key: string, now: number): Promise<number> {
    return this.current(key, now);
  }
}

/**
 * `PRAGMA data_version` of one connection, read at most once per event-loop turn: it moves when
 * another connection commits, and another process's write can only reach this one through I/O,
 * which starts a new turn. The read takes the file's locks, so a gateway reading it for every
 * grant and kill-switch check of every request in a turn would pay that many times.
 */
class DataVersion {
  private readonly stmt: Database.Statement<[], { data_version: number }>;
  private value = -1;
  private fresh = false;

  constructor(db: Database.Database) {
    this.stmt = db.prepare('PRAGMA data_version');
  }

  read(): number {
    if (!this.fresh) {
      this.value = this.stmt.get()!.data_version;
      this.fresh = true;
      setImmediate(() => { this.fresh = false; }).unref();
    }
    return this.value;
  }
}

/**
 * Answers read on every call, cached until another connection changes the file; this
 * connection's own writes call `clear`. Bounded, so unknown keys (guessed tokens) cannot grow it.
 */
class UntilChanged<V> {
  private version = -1;
  private readonly answers = new Map<string, V>();

  constructor(private readonly dataVersion: DataVersion, private readonly max = 10_000) {}

  get(key: string, compute: () => V): V {
    const version = this.dataVersion.read();
    if (version !== this.version || this.answers.size >= this.max) {
      this.version = version;
      this.answers.clear();
    }
    if (this.answers.has(key)) return this.answers.get(key)!;
    const answer = compute();
    this.answers.set(key, answer);
    return answer;
  }

  clear(): void {
    this.version = -1;
  }
}

export class SqliteFlagStore implements FlagStore {
  private readonly killed: Database.Statement<[string], { scope: string }>;
  private readonly cache: UntilChanged<KillScope | null>;

  constructor(private readonly db: Database.Database, dataVersion: DataVersion) {
    db.exec(KILL_SWITCH_TABLE);
    this.killed = db.prepare("SELECT scope FROM kill_switch WHERE scope IN ('*', ?) AND is_on = 1");
    this.cache = new UntilChanged(dataVersion);
  }

  killedFor(server: string): KillScope | null {
    return this.cache.get(server, () => {
      const rows = this.killed.all(server);
      return rows.length === 0 ? null : rows.some((r) => r.scope === '*') ? '*' : server;
    });
  }

  async setKillSwitch(scope: KillScope, on: boolean, reason?: string): Promise<void> {
    this.db
      .prepare('INSERT INTO kill_switch (scope, is_on, reason, at) VALUES (?, ?, ?, ?) ON CONFLICT (scope) DO UPDATE SET is_on = excluded.is_on, reason = excluded.reason, at = excluded.at')
      .run(scope, on ? 1 : 0, reason ?? null, new Date().toISOString());
    this.cache.clear();
  }

  async listKillSwitches(): Promise<KillSwitchState[]> {
    return this.db
      .prepare<[], { scope: string; is_on: number; reason: string | null; at: string }>('SELECT scope, is_on, reason, at FROM kill_switch ORDER BY scope')
      .all()
      .map((r) => ({ scope: r.scope, on: r.is_on === 1, reason: r.reason ?? undefined, at: r.at }));
  }
}

export class SqlitePinStore implements PinStore {
  constructor(private readonly db: Database.Database) {
    db.exec('CREATE TABLE IF NOT EXISTS pins (server TEXT NOT NULL, tool TEXT NOT NULL, fingerprint TEXT NOT NULL, PRIMARY KEY (server, tool)) WITHOUT ROWID');
  }

  get(server: string): Record<string, string> | null {
    const rows = this.db.prepare<[string], { tool: string; fingerprint: string }>('SELECT tool, fingerprint FROM pins WHERE server = ?').all(server);
    return rows.length === 0 ? null : Object.fromEntries(rows.map((r) => [r.tool, r.fingerprint]));
  }

  set(server: string, pins: Record<string, string>): void {
    const insert = this.db.prepare('INSERT INTO pins (server, tool, fingerprint) VALUES (?, ?, ?)');
    this.db.transaction(() => {
      this.db.prepare('DELETE FROM pins WHERE server = ?').run(server);
      for (const [tool, fp] of Object.entries(pins)) insert.run(server, tool, fp);
    }).immediate();
  }
}

interface GrantRow { id: string; label: string; server: string; servers?: string | null; tags: string; policy: string | null; created_at: string; expires_at: string | null; revoked_at: string | null }

function grantOf(r: GrantRow): Grant {
  return {
    id: r.id, label: r.label, server: r.server, ...(r.servers ? { servers: JSON.parse(r.servers) as string[] } : {}), tags: JSON.parse(r.tags) as string[], createdAt: r.created_at,
    ...(r.policy ? { policy: r.policy } : {}), ...(r.expires_at ? { expiresAt: r.expires_at } : {}), ...(r.revoked_at ? { revokedAt: r.revoked_at } : {}),
  };
}

export class SqliteGrantStore implements GrantStore {
  private readonly byHash: Database.Statement<[string], GrantRow>;
  /** Looked up on every request; revocation by another process moves data_version, so it still acts on the next request. */
  private readonly cache: UntilChanged<Grant | null>;

  constructor(private readonly db: Database.Database, dataVersion: DataVersion) {
    db.exec(`CREATE TABLE IF NOT EXISTS grants (
      id TEXT PRIMARY KEY, label TEXT NOT NULL, server TEXT NOT NULL, token_hash TEXT NOT NULL UNIQUE, tags TEXT NOT NULL,
      policy TEXT, created_at TEXT NOT NULL, expires_at TEXT, revoked_at TEXT)`);
    // Multi-server grants (issue 27): every server as JSON, added to files made before them.
    if (!(db.prepare('PRAGMA table_info(grants)').all() as { name: string }[]).some((c) => c.name === 'servers')) db.exec('ALTER TABLE grants ADD COLUMN servers TEXT');
    this.byHash = db.prepare('SELECT * FROM grants WHERE token_hash = ?');
    this.cache = new UntilChanged(dataVersion);
  }

  create(g: Grant, tokenHash: string): void {
    this.db.prepare('INSERT INTO grants (id, label, server, servers, token_hash, tags, policy, created_at, expires_at, revoked_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, NULL)')
      .run(g.id, g.label, g.server, g.servers ? JSON.stringify(g.servers) : null, tokenHash, JSON.stringify(g.tags), g.policy ?? null, g.createdAt, g.expiresAt ?? null);
    this.cache.clear();
  }

  byTokenHash(tokenHash: string): Grant | null {
    return this.cache.get(tokenHash, () => {
      const row = this.byHash.get(tokenHash);
      return row ? grantOf(row) : null;
    });
  }

  list(): Grant[] {
    return this.db.prepare<[], GrantRow>('SELECT * FROM grants ORDER BY created_at, id').all().map(grantOf);
  }

  rotate(id: string, tokenHash: string, expiresAt?: string): boolean {
    this.cache.clear();
    return this.db.prepare('UPDATE grants SET token_hash = ?, expires_at = coalesce(?, expires_at) WHERE id = ? AND revoked_at IS NULL')
      .run(tokenHash, expiresAt ?? null, id).changes === 1;
  }

  revoke(id: string, at: string): boolean {
    this.cache.clear();
    return this.db.prepare('UPDATE grants SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL').run(at, id).changes === 1;
  }
}

export class SqliteOAuthStore implements OAuthStore {
  private readonly takeStmt: Database.Statement<[string, number], { value: string }>;

  constructor(private readonly db: Database.Database) {
    db.exec('CREATE TABLE IF NOT EXISTS oauth (key TEXT PRIMARY KEY, value TEXT NOT NULL, expires_at INTEGER NOT NULL) WITHOUT ROWID');
    this.takeStmt = db.prepare('DELETE FROM oauth WHERE key = ? AND expires_at > ? RETURNING value');
  }

  put(key: string, value: string, expiresAt: number): void {
    this.db.prepare('INSERT OR REPLACE INTO oauth (key, value, expires_at) VALUES (?, ?, ?)').run(key, value, expiresAt);
  }

  get(key: string, now: number): string | null {
    return this.db.prepare<[string, number], { value: string }>('SELECT value FROM oauth WHERE key = ? AND expires_at > ?').get(key, now)?.value ?? null;
  }

  take(key: string, now: number): string | null {
    return this.takeStmt.get(key, now)?.value ?? null;
  }

  delete(key: string): void {
    this.db.prepare('DELETE FROM oauth WHERE key = ?').run(key);
  }

  count(prefix: string, now: number): number {
    this.db.prepare('DELETE FROM oauth WHERE expires_at <= ?').run(now);
    // Keys are ours (no LIKE wildcards in them), but a range scan needs no escaping at all.
    return this.db.prepare<[string, string], { n: number }>('SELECT count(*) AS n FROM oauth WHERE key >= ? AND key < ?').get(prefix, `${prefix}\uffff`)!.n;
  }

  /** In one IMMEDIATE transaction: other processes on the same file wait for it. */
  putIfUnder(records: readonly OAuthRecord[], caps: readonly { prefix: string; max: number }[], now: number): number {
    return this.db.transaction(() => {
      const full = caps.findIndex((c) => this.count(c.prefix, now) >= c.max);
      if (full < 0) for (const r of records) this.put(r.key, r.value, r.expiresAt);
      return full;
    }).immediate();
  }
}

export function openSqliteState(file: string): StateStore {
  const db = openDatabase(file);
  try {
    const dataVersion = new DataVersion(db);
    const approvals = new SqliteApprovalStore(db);
    const flags = new SqliteFlagStore(db, dataVersion);
    return {
      kind: 'sqlite',
      counters: new SqliteCounterStore(db, flags),
      flags,
      pins: new SqlitePinStore(db),
      grants: new SqliteGrantStore(db, dataVersion),
      approvals,
      oauth: new SqliteOAuthStore(db),
      requestStates: new SqliteRequestStateStore(db),
      flows: new SqliteFlowStore(db),
      close: async () => { approvals.stop(); closeDatabase(db); },
    };
  } catch (err) {
    db.close();
    throw databaseFileError(file, err);
  }
}
