import { randomBytes } from 'node:crypto';
import type Database from 'better-sqlite3';
import type { RequestStateStore } from './types.js';

/** How often spent nonces past their expiry are dropped (at most). */
const PURGE_EVERY_MS = 60_000;

/** A new signing key: 32 random bytes, base64url. */
export function newSigningKey(): string {
  return randomBytes(32).toString('base64url');
}

/** In this process only (memory state serves one process, so that is the whole fleet). */
export class MemoryRequestStateStore implements RequestStateStore {
  private readonly key = newSigningKey();
  private readonly spent = new Map<string, number>();
  private purgeAt = 0;

  signingKey(): string {
    return this.key;
  }

  spend(nonce: string, expiresAt: number, now: number): boolean {
    if (now >= this.purgeAt) {
      this.purgeAt = now + PURGE_EVERY_MS;
      for (const [n, e] of this.spent) if (e <= now) this.spent.delete(n);
    }
    if (this.spent.has(nonce)) return false;
    this.spent.set(nonce, expiresAt);
    return true;
  }
}

/**
 * In the state database: the key in `secrets` (INSERT OR IGNORE, so two processes starting at
 * once agree on the first one written), spent nonces in `spent_request_states` (the primary key
 * makes a second spend of one nonce change nothing, in any process on the file).
 */
export class SqliteRequestStateStore implements RequestStateStore {
  private key?: string;
  private purgeAt = 0;
  private readonly insert: Database.Statement<[string, number]>;
  private readonly purge: Database.Statement<[number]>;

  constructor(private readonly db: Database.Database) {
    db.exec(`CREATE TABLE IF NOT EXISTS secrets (name TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
      CREATE TABLE IF NOT EXISTS spent_request_states (nonce TEXT PRIMARY KEY, expires_at INTEGER NOT NULL) WITHOUT ROWID`);
    this.insert = db.prepare('INSERT OR IGNORE INTO spent_request_states (nonce, expires_at) VALUES (?, ?)');
    this.purge = db.prepare('DELETE FROM spent_request_states WHERE expires_at <= ?');
  }

  signingKey(): string {
    if (this.key) return this.key;
    this.db.prepare("INSERT OR IGNORE INTO secrets (name, value) VALUES ('request-state', ?)").run(newSigningKey());
    this.key = this.db.prepare<[], { value: string }>("SELECT value FROM secrets WHERE name = 'request-state'").get()!.value;
    return this.key;
  }

  spend(nonce: string, expiresAt: number, now: number): boolean {
    if (now >= this.purgeAt) {
      this.purgeAt = now + PURGE_EVERY_MS;
      this.purge.run(now);
    }
    return this.insert.run(nonce, expiresAt).changes === 1;
  }
}
